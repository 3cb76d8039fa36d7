//! Issue 47, findings 1 and 2, through both database adapters: a verified
//! webhook is never answered 5xx for what its body holds (an empty ordering
//! key, numbers jsonb writes out beyond the row's limit or cannot hold at
//! all), and every forwarded payload is the partner's JSON value exactly:
//! no number rounded through an `f64`, at ingest or in the processor.

use hookbox::blob::{BlobKey, BlobStore};
use hookbox::inbox::InboxStatus;
use hookbox::inbox::ingest::Outcome;
use hookbox::params;

use super::common::{self, Adapter, migrated_db, sql};
use super::{Rig, accepted_id};
use crate::for_each_adapter;

/// What each delivery of inbox event `event` carries: its payload's text
/// (jsonb's rendering when in the row, the blob's bytes when by reference)
/// and whether it is by reference.
async fn payloads(rig: &Rig, event: &str) -> Vec<(String, bool)> {
    let rows = rig
        .db
        .execute(
            &sql("SELECT payload::text AS payload, payload_key FROM outbox
                  WHERE payload->>'id' = :event OR payload_key IS NOT NULL ORDER BY seq"),
            &params! { "event" => event },
        )
        .await
        .expect("outbox")
        .rows;
    let mut out = Vec::new();
    for row in rows {
        match row.opt_text("payload_key").expect("key") {
            Some(key) => {
                let key = BlobKey::parse(&key).expect("key");
                let bytes = rig.blobs.get(&key).await.expect("blob");
                let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
                if text.contains(&format!("\"{event}\"")) {
                    out.push((text, true));
                }
            }
            None => out.push((row.text("payload").expect("payload").to_owned(), false)),
        }
    }
    out
}

/// True when PostgreSQL's jsonb, whose numbers are exact, holds `a` and
/// `b` as the same JSON value.
async fn same_json(rig: &Rig, a: &str, b: &[u8]) -> bool {
    let b = std::str::from_utf8(b).expect("utf-8");
    rig.db
        .execute(
            &sql("SELECT CAST(:a AS jsonb) = CAST(:b AS jsonb) AS same"),
            &params! { "a" => a, "b" => b },
        )
        .await
        .expect("compare")
        .rows[0]
        .bool("same")
        .expect("same")
}

fn event(id: &str, customer: serde_json::Value, extra: &str) -> Vec<u8> {
    format!(
        r#"{{"id":"{id}","type":"invoice.paid","customer":{customer}{extra}}}"#,
        customer = customer
    )
    .into_bytes()
}

/// Finding 1: each of these was answered 500 on every retry (2831fa5).
async fn a_verified_webhook_is_never_a_5xx_for_what_its_body_holds(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", true).await;

    // the partner's customer field empty: no ordering key, the event's own
    // id is its aggregate; forwarded at ingest
    let empty_key = event("evt_empty_key", serde_json::json!(""), "");
    let (r, _) = rig.post("evt_empty_key", &empty_key).await;
    assert_eq!(
        r.outcome,
        Outcome::Forwarded {
            deliveries: 2,
            status: InboxStatus::Processed
        },
        "{r:?}"
    );
    let row = rig.row(accepted_id(&r)).await;
    assert_eq!(row.ordering_key, None, "an empty key is no key");
    let keys = rig.deliveries().await;
    assert!(
        keys.iter().all(|d| d.1 == "evt_empty_key"),
        "the aggregate is the event id: {keys:?}"
    );

    // 6 KB of 1e300: under the inline threshold as sent, over 256 KiB as
    // jsonb writes it; stored pending, the processor forwards it through
    // the blob store, byte for byte
    let numbers = vec!["1e300"; 1000].join(",");
    let wide = event(
        "evt_wide",
        serde_json::json!("cus_W"),
        &format!(r#","values":[{numbers}]"#),
    );
    assert!(wide.len() < 8 * 1024);
    let (r, _) = rig.post("evt_wide", &wide).await;
    assert_eq!(
        r.outcome,
        Outcome::Accepted {
            enqueue_failed: false
        },
        "{r:?}"
    );
    let wide_id = accepted_id(&r);
    // a number jsonb cannot hold at all (numeric: 16,383 digits after the
    // point)
    let tiny = event(
        "evt_tiny",
        serde_json::json!("cus_T"),
        r#","rate":1e-20000"#,
    );
    let (r, _) = rig.post("evt_tiny", &tiny).await;
    assert_eq!(r.status, 200, "{r:?}");
    let tiny_id = accepted_id(&r);
    assert_eq!(rig.row(wide_id).await.status, InboxStatus::Pending);
    assert_eq!(rig.row(tiny_id).await.status, InboxStatus::Pending);

    assert_eq!(rig.process().await, ["processed", "processed"]);
    for (id, body) in [("evt_wide", &wide), ("evt_tiny", &tiny)] {
        let sent = payloads(&rig, id).await;
        assert_eq!(sent.len(), 2, "{id}: one per route");
        for (text, by_reference) in sent {
            assert!(by_reference, "{id}: through the blob store");
            assert_eq!(
                text.as_bytes(),
                body.as_slice(),
                "{id}: the partner's bytes"
            );
        }
    }
}

/// Finding 2: the partner's numbers, exactly, on both paths.
async fn forwarded_numbers_are_the_partners_exactly(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    for at_ingest in [true, false] {
        let rig = Rig::new(db.clone(), "quarantine", at_ingest).await;
        let id = format!("evt_exact_{at_ingest}");
        let body = event(
            &id,
            serde_json::json!("cus_X"),
            r#","big":123456789012345678901234567890,"price":0.123456789012345678,"e":1e20,"neg":-5.000"#,
        );
        let (r, _) = rig.post(&id, &body).await;
        assert_eq!(r.status, 200, "{r:?}");
        if !at_ingest {
            assert_eq!(rig.process().await, ["processed"]);
        }
        let sent = payloads(&rig, &id).await;
        assert_eq!(sent.len(), 2, "{id}");
        for (text, by_reference) in sent {
            assert!(!by_reference, "{id}: small enough for the row");
            assert!(same_json(&rig, &text, &body).await, "{id}: {text}");
            assert!(text.contains("123456789012345678901234567890"), "{text}");
            assert!(text.contains("0.123456789012345678"), "{text}");
            assert!(text.contains("-5.000"), "{text}");
        }
    }
}

for_each_adapter!(
    a_verified_webhook_is_never_a_5xx_for_what_its_body_holds,
    forwarded_numbers_are_the_partners_exactly,
);
