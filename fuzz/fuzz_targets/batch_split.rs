//! Splitting a batch POST into its events (`hookbox::inbox::split`), as
//! each batching preset and a generic declaration read it, on arbitrary
//! bodies: no panic; an accepted batch has 1 to `max_events` events (none
//! only where an empty batch is allowed), each a JSON value whose bytes are
//! the body's own (a slice, never re-serialized) with a non-empty id of at
//! most 512 bytes; a refusal is a 400 or 413 with a reason code.
#![no_main]

use std::sync::OnceLock;

use hookbox::config::FieldSource;
use hookbox::config::batch::{Batch, EventsAt, of_preset};
use hookbox::inbox::split::split;
use libfuzzer_sys::fuzz_target;

fn declarations() -> &'static [Batch] {
    static ALL: OnceLock<Vec<Batch>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<Batch> = ["hubspot", "sendgrid", "meta", "adyen-standard", "mandrill", "sparkpost"]
            .into_iter()
            .filter_map(of_preset)
            .collect();
        all.push(Batch {
            events: EventsAt::Json("/a/0".into()),
            item: Some("/*/x".into()),
            event_id: Some(FieldSource::Composite(vec![
                FieldSource::JsonPointer("/id".into()),
                FieldSource::JsonPointer("/n".into()),
            ])),
            event_type: Some(FieldSource::JsonPointer("/t".into())),
            ordering_key: Some("/k".into()),
            max_events: 5,
            allow_empty: false,
        });
        all
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    for batch in declarations() {
        match split(batch, data) {
            Ok(events) => {
                assert!(events.len() <= batch.max_events);
                assert!(!events.is_empty() || batch.allow_empty);
                for (i, event) in events.iter().enumerate() {
                    assert_eq!(event.index, i);
                    assert!(!event.event_id.is_empty() && event.event_id.len() <= 512);
                    serde_json::from_slice::<serde_json::Value>(&event.bytes)
                        .expect("an event is JSON");
                    if matches!(batch.events, EventsAt::Json(_)) {
                        assert!(contains(data, &event.bytes), "an event's bytes are the body's");
                    }
                }
            }
            Err(refused) => {
                assert!(matches!(refused.status, 400 | 413), "{refused:?}");
                assert!(!refused.code.is_empty() && !refused.detail.is_empty());
            }
        }
    }
});
