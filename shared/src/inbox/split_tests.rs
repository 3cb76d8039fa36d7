use super::*;
use crate::config::batch::{DEFAULT_MAX_BATCH_EVENTS, of_preset};

fn declared(events: EventsAt) -> Batch {
    Batch {
        events,
        item: None,
        event_id: Some(FieldSource::JsonPointer("/id".into())),
        event_type: Some(FieldSource::JsonPointer("/type".into())),
        ordering_key: Some("/key".into()),
        max_events: DEFAULT_MAX_BATCH_EVENTS,
        allow_empty: false,
    }
}

fn root() -> Batch {
    declared(EventsAt::Json(String::new()))
}

fn refusal(batch: &Batch, body: &str) -> BatchRefused {
    split(batch, body.as_bytes()).expect_err(body)
}

#[test]
fn each_event_keeps_its_exact_bytes_id_type_and_key() {
    let body = r#"[ {"id": "a", "type": "t.1", "key": "k"} ,{"id":7,"type":"t.2","n":1.50}]"#;
    let events = split(&root(), body.as_bytes()).expect("split");
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0].bytes,
        br#"{"id": "a", "type": "t.1", "key": "k"}"#
    );
    assert_eq!(events[0].event_id, "a");
    assert_eq!(events[0].event_type.as_deref(), Some("t.1"));
    assert_eq!(events[0].ordering_key.as_deref(), Some("k"));
    // the number as written, never re-serialized
    assert_eq!(events[1].bytes, br#"{"id":7,"type":"t.2","n":1.50}"#);
    assert_eq!(events[1].event_id, "7");
    assert_eq!(events[1].ordering_key, None);
    assert_eq!((events[0].index, events[1].index), (0, 1));
}

#[test]
fn events_under_a_pointer_an_item_and_a_wildcard_member() {
    let adyen = of_preset("adyen-standard").expect("declared");
    let body = r#"{"live":"false","notificationItems":[
        {"NotificationRequestItem":{"pspReference":"p1","eventCode":"AUTHORISATION","success":"true"}},
        {"NotificationRequestItem":{"pspReference":"p1","eventCode":"CAPTURE","success":"true"}}]}"#;
    let events = split(&adyen, body.as_bytes()).expect("split");
    assert_eq!(events[0].event_id, "p1:AUTHORISATION:true");
    assert_eq!(events[1].event_id, "p1:CAPTURE:true");
    assert_eq!(events[1].event_type.as_deref(), Some("CAPTURE"));
    assert!(events[0].bytes.starts_with(br#"{"pspReference":"p1""#));

    let sparkpost = of_preset("sparkpost").expect("declared");
    let body = r#"[{"msys":{"message_event":{"event_id":"e1","type":"delivery"}}},
                   {"msys":{"track_event":{"event_id":"e2","type":"click"}}}]"#;
    let events = split(&sparkpost, body.as_bytes()).expect("split");
    assert_eq!(events[0].event_id, "e1");
    assert_eq!(events[1].event_type.as_deref(), Some("click"));
    // `*` is an object's ONLY member: two members are ambiguous
    let two = r#"[{"msys":{"a_event":{"event_id":"e1"},"b_event":{"event_id":"e2"}}}]"#;
    let e = refusal(&sparkpost, two);
    assert_eq!((e.status, e.code), (400, "batch_item_missing"));
    assert!(e.detail.contains("event 0 (of 1)"), "{}", e.detail);
}

#[test]
fn without_a_declared_id_an_event_is_keyed_by_its_bytes() {
    let meta = of_preset("meta").expect("declared");
    let body = r#"{"object":"page","entry":[{"id":"1","time":1,"changes":[{"field":"feed"}]},
                                           {"id":"1","time":2,"changes":[{"field":"feed"}]}]}"#;
    let events = split(&meta, body.as_bytes()).expect("split");
    assert!(events.iter().all(|e| e.event_id_derived));
    assert_eq!(
        events[0].event_id,
        hex::encode(Sha256::digest(&events[0].bytes))
    );
    assert_ne!(events[0].event_id, events[1].event_id);
    assert_eq!(events[0].event_type.as_deref(), Some("feed"));
    assert_eq!(events[0].ordering_key.as_deref(), Some("1"));
}

#[test]
fn a_form_field_holds_the_events() {
    let mandrill = of_preset("mandrill").expect("declared");
    let json = r#"[{"event":"send","_id":"m1","ts":1},{"event":"open","_id":"m1","ts":2}]"#;
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("mandrill_events", json)
        .finish();
    let events = split(&mandrill, body.as_bytes()).expect("split");
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].bytes, br#"{"event":"open","_id":"m1","ts":2}"#);
    assert_eq!(events[1].event_type.as_deref(), Some("open"));
    // Mandrill's test POST when a webhook is added: answered, nothing stored
    let empty = "mandrill_events=%5B%5D";
    assert_eq!(
        split(&mandrill, empty.as_bytes()).expect("empty"),
        Vec::new()
    );
    let e = refusal(&mandrill, "other=1");
    assert_eq!((e.status, e.code), (400, "batch_not_array"));
    assert!(
        e.detail.contains("form field mandrill_events"),
        "{}",
        e.detail
    );
    let twice = "mandrill_events=%5B%5D&mandrill_events=%5B1%5D";
    assert_eq!(refusal(&mandrill, twice).code, "ambiguous_batch");
    assert_eq!(
        refusal(&mandrill, "mandrill_events=%5B").code,
        "body_not_json"
    );
}

#[test]
fn what_is_not_the_declared_batch_is_a_4xx_naming_the_event() {
    let batch = root();
    for (body, status, code, names) in [
        ("", 400, "body_not_json", "not JSON"),
        ("{\"id\":1}", 400, "batch_not_array", "not a JSON array"),
        ("[]", 400, "batch_empty", "holds no event"),
        (
            r#"[{"id":"a"},{"type":"x"}]"#,
            400,
            "missing_event_id",
            "event 1 (of 2)",
        ),
        (
            r#"[{"id":""}]"#,
            400,
            "missing_event_id",
            "at /id in the body",
        ),
        (
            r#"[{"id":{"nested":1}}]"#,
            400,
            "missing_event_id",
            "event 0",
        ),
    ] {
        let e = refusal(&batch, body);
        assert_eq!((e.status, e.code), (status, code), "{body}: {}", e.detail);
        assert!(e.detail.contains(names), "{body}: {}", e.detail);
    }
    let long = format!(
        r#"[{{"id":"a"}},{{"id":"{}"}}]"#,
        "x".repeat(MAX_EVENT_ID_BYTES + 1)
    );
    let e = refusal(&batch, &long);
    assert_eq!(e.code, "event_id_too_long");
    assert!(e.detail.contains("event 1 (of 2)"), "{}", e.detail);
    let long_type = format!(
        r#"[{{"id":"a","type":"{}"}}]"#,
        "t".repeat(MAX_EVENT_TYPE_BYTES + 1)
    );
    assert_eq!(refusal(&batch, &long_type).code, "event_type_too_long");
    let nested = declared(EventsAt::Json("/entry".into()));
    let e = refusal(&nested, r#"{"object":"page"}"#);
    assert_eq!(e.code, "batch_not_array");
    assert!(e.detail.contains("/entry in the body"), "{}", e.detail);
}

#[test]
fn more_events_than_the_limit_are_refused_whole() {
    let batch = Batch {
        max_events: 3,
        ..root()
    };
    let body = r#"[{"id":1},{"id":2},{"id":3},{"id":4}]"#;
    let e = refusal(&batch, body);
    assert_eq!((e.status, e.code), (413, "batch_too_large"));
    assert!(
        e.detail.contains("4 events") && e.detail.contains("limit of 3"),
        "{}",
        e.detail
    );
    assert_eq!(
        split(&batch, br#"[{"id":1},{"id":2},{"id":3}]"#)
            .expect("3")
            .len(),
        3
    );
}

#[test]
fn ids_are_made_storable_and_composites_need_every_part() {
    let batch = Batch {
        event_id: Some(FieldSource::Composite(vec![
            FieldSource::JsonPointer("/a".into()),
            FieldSource::JsonPointer("/b".into()),
        ])),
        ..root()
    };
    let events = split(&batch, br#"[{"a":"x\u0000","b":2}]"#).expect("split");
    assert_eq!(events[0].event_id, r"esc:x\0:2");
    assert_eq!(refusal(&batch, r#"[{"a":"x"}]"#).code, "missing_event_id");
}
