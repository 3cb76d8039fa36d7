//! Messages (migration 22, `hookbox::tenants::messages`): recorded with
//! their deliveries, an `event_id` publishing once, listed in pages. The
//! setup (the relay delivering to endpoints, on a clock the test moves)
//! serves attempts.rs too.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox;
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::Database;
use hookbox::tenants::messages::{self, MessageFilter};
use hookbox::tenants::{EndpointDirectory, ManageError, SecretKeeper, manage};
use hookbox::tenants::{TenantEvent, publish_to};
use hookbox::vault::local::LocalVault;
use hookbox_testkit::http_sink::HttpSink;
use serde_json::json;
use uuid::Uuid;

use super::common::{self, Adapter, migrated_db, sql};
use crate::for_each_adapter;

for_each_adapter!(
    a_message_is_recorded_with_its_deliveries_and_an_event_id_publishes_once,
    messages_are_listed_in_pages_in_id_order_with_filters,
);

pub(crate) struct Setup {
    _t: hookbox_testkit::TestDb,
    pub db: Arc<dyn Database>,
    pub clock: Arc<ManualClock>,
    pub relay: Relay,
    pub store: ConfigStore,
    pub sink: HttpSink,
}

/// The relay with endpoints on a clock at the database's time, one tenant
/// (`acme`) and the receiver.
pub(crate) async fn setup(adapter: Adapter) -> Setup {
    let (t, db) = migrated_db(adapter).await;
    let now: DateTime<Utc> = hookbox::store::fetch_one(
        db.as_ref(),
        &sql("SELECT CAST(extract(epoch FROM now()) AS bigint) AS s"),
        &hookbox::params! {},
    )
    .await
    .expect("now")
    .i64("s")
    .map(|s| Utc.timestamp_opt(s, 0).single().expect("instant"))
    .expect("s");
    let clock = Arc::new(ManualClock::new(now));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory = EndpointDirectory::new(keeper, vec!["127.0.0.0/8".parse().expect("net")])
        .with_ttl(Duration::from_secs(10));
    let relay = common::http_relay(db.clone(), clock.clone(), RelaySettings::new("msg-test"))
        .with_endpoints(Arc::new(directory));
    let config = HookboxConfig::parse("{}", "test").expect("config");
    let store = ConfigStore::fixed(config, clock.clone());
    manage::create_tenant(db.as_ref(), &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    Setup {
        _t: t,
        db,
        clock,
        relay,
        store,
        sink: HttpSink::start().await,
    }
}

impl Setup {
    pub(crate) async fn endpoint(&self, spec: serde_json::Value) -> String {
        manage::create_endpoint(self.db.as_ref(), "acme", &spec, None)
            .await
            .expect("endpoint")
            .id
    }

    pub(crate) async fn create(&self, spec: serde_json::Value) -> messages::CreatedMessage {
        messages::create_message(self.db.as_ref(), "acme", &spec, None)
            .await
            .unwrap_or_else(|e| panic!("create {spec}: {e}"))
    }

    /// Publishes through `publish_to` at `at`: the deliveries' ids.
    pub(crate) async fn publish_at(&self, n: i64, at: DateTime<Utc>) -> Vec<Uuid> {
        let tx = self.db.begin().await.expect("begin");
        let out = publish_to(
            tx.as_ref(),
            "acme",
            &TenantEvent {
                event_type: "order.paid".into(),
                payload: json!({"n": n}),
                aggregate: None,
                channels: None,
            },
            at,
        )
        .await
        .expect("publish");
        tx.commit().await.expect("commit");
        out.into_iter().map(|d| d.id).collect()
    }

    pub(crate) async fn row(&self, id: Uuid) -> outbox::OutboxRow {
        outbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }

    pub(crate) async fn count(&self, query: &str) -> i64 {
        common::count(self.db.as_ref(), query).await
    }
}

async fn a_message_is_recorded_with_its_deliveries_and_an_event_id_publishes_once(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let orders = s
        .endpoint(json!({"url": s.sink.url("/o"), "filter_types": ["order.*"]}))
        .await;
    s.endpoint(json!({"url": s.sink.url("/u"), "filter_types": ["user.*"]}))
        .await;

    let first = s
        .create(
            json!({"event_type": "order.paid", "payload": {"n": 1}, "event_id": "evt-1",
                       "channels": ["eu"]}),
        )
        .await;
    let m = &first.message;
    assert!(m.id.starts_with("msg_") && m.id.len() == 36, "{m:?}");
    assert_eq!(
        (first.duplicate, first.written, m.deliveries),
        (false, 1, 1)
    );
    assert_eq!(m.event_id.as_deref(), Some("evt-1"));
    assert_eq!(m.payload, json!({"n": 1}));
    assert_eq!(m.channels, Some(vec!["eu".to_string()]));
    let rows = format!(
        "SELECT count(*) AS n FROM outbox WHERE message_id = '{}' AND destination = '{orders}'",
        m.id
    );
    assert_eq!(s.count(&rows).await, 1);

    // the same event_id again: the first message, nothing published twice
    let again = s
        .create(json!({"event_type": "order.paid", "payload": {"n": 2}, "event_id": "evt-1"}))
        .await;
    assert_eq!((again.duplicate, again.written), (true, 0));
    assert_eq!(again.message.id, m.id);
    assert_eq!(again.message.payload, json!({"n": 1}));
    assert_eq!(s.count("SELECT count(*) AS n FROM outbox").await, 1);

    // no matching endpoint: the message is recorded, no delivery
    let lonely = s
        .create(json!({"event_type": "invoice.sent", "payload": {"i": 1}}))
        .await;
    assert_eq!((lonely.written, lonely.message.deliveries), (0, 0));
    assert_eq!(s.count("SELECT count(*) AS n FROM outbox").await, 1);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM hookbox_messages").await,
        2
    );

    // read by id or by event_id
    let got = messages::get_message(db, "acme", &m.id).await.expect("get");
    assert_eq!(got.id, m.id);
    let by_event = messages::get_message(db, "acme", "evt-1")
        .await
        .expect("get");
    assert_eq!(by_event.id, m.id);

    // publish_to records its message too, named by its deliveries
    let ids = s.publish_at(3, s.clock.now()).await;
    assert_eq!(ids.len(), 1);
    let message_id = s.row(ids[0]).await;
    let named = hookbox::store::fetch_one(
        db,
        &sql("SELECT message_id FROM outbox WHERE id = :id"),
        &hookbox::params! { "id" => message_id.id },
    )
    .await
    .expect("row")
    .text("message_id")
    .expect("message_id");
    let published = messages::get_message(db, "acme", &named)
        .await
        .expect("get");
    assert_eq!(
        (published.payload, published.deliveries),
        (json!({"n": 3}), 1)
    );

    // a payload too large for one row of the Data API is read in pieces
    let big = "é".repeat(60_000);
    let large = s
        .create(json!({"event_type": "order.big", "payload": {"text": big}}))
        .await;
    assert!(large.message.payload_omitted && large.message.payload.is_null());
    let read = messages::get_message(db, "acme", &large.message.id)
        .await
        .expect("get");
    assert_eq!(read.payload, json!({"text": big}));
    assert!(!read.payload_omitted);

    // refusals name the function and the field
    for (spec, expected) in [
        (
            json!({"payload": {}}),
            "hookbox_message_create: event_type is required",
        ),
        (
            json!({"event_type": "a"}),
            "hookbox_message_create: payload is required",
        ),
        (
            json!({"event_type": "a", "payload": 1, "tags": []}),
            "unknown field 'tags'",
        ),
        (
            json!({"event_type": "a", "payload": 1, "event_id": "a b"}),
            "event_id 'a b' must be",
        ),
        (
            json!({"event_type": "a", "payload": 1, "channels": []}),
            "channels holds 0",
        ),
    ] {
        match messages::create_message(db, "acme", &spec, None).await {
            Err(ManageError::Invalid(m)) => assert!(m.contains(expected), "{m}"),
            other => panic!("{spec}: {other:?}"),
        }
    }
    match messages::create_message(
        db,
        "nobody",
        &json!({"event_type": "a", "payload": 1}),
        None,
    )
    .await
    {
        Err(ManageError::NotFound(m)) => assert!(m.contains("no tenant 'nobody'"), "{m}"),
        other => panic!("{other:?}"),
    }
    match messages::get_message(db, "acme", "msg_00000000000000000000000000000000").await {
        Err(ManageError::NotFound(m)) => assert!(m.contains("has no message"), "{m}"),
        other => panic!("{other:?}"),
    }
}

async fn messages_are_listed_in_pages_in_id_order_with_filters(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let mut ids = Vec::new();
    for (n, kind) in [
        "order.paid",
        "user.new",
        "order.paid",
        "order.sent",
        "user.new",
    ]
    .iter()
    .enumerate()
    {
        let channels = if n % 2 == 0 {
            json!(["eu"])
        } else {
            json!(["us"])
        };
        let m = s
            .create(json!({"event_type": kind, "payload": {"n": n}, "channels": channels}))
            .await;
        ids.push(m.message.id);
    }
    let all = MessageFilter::default();
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = messages::list_messages(db, "acme", &all, after.as_deref(), 2)
            .await
            .expect("page");
        assert!(page.data.len() <= 2);
        seen.extend(page.data.iter().map(|m| m.id.clone()));
        if page.done {
            break;
        }
        after = page.iterator;
    }
    // (ids are time-ordered to the millisecond: messages created in the
    // same one are in id order, not necessarily in creation order)
    let mut in_id_order = ids.clone();
    in_id_order.sort();
    assert_eq!(seen, in_id_order, "every message once, in id order");

    let orders = MessageFilter {
        event_types: Some(vec!["order.paid".into(), "order.sent".into()]),
        ..MessageFilter::default()
    };
    let page = messages::list_messages(db, "acme", &orders, None, 50)
        .await
        .expect("page");
    let got: Vec<&str> = page.data.iter().map(|m| m.id.as_str()).collect();
    let mut orders_in_id_order = [ids[0].as_str(), ids[2].as_str(), ids[3].as_str()];
    orders_in_id_order.sort_unstable();
    assert_eq!(got, orders_in_id_order);
    assert!(page.done);
    let eu = MessageFilter {
        channel: Some("eu".into()),
        ..MessageFilter::default()
    };
    let page = messages::list_messages(db, "acme", &eu, None, 50)
        .await
        .expect("page");
    assert_eq!(page.data.len(), 3);

    // created in a range: none before, all within, none after
    let now = messages::get_message(db, "acme", &ids[4])
        .await
        .expect("m")
        .created_at;
    for (since, until, expected) in [
        (now + chrono::Duration::seconds(1), None, 0),
        (
            now - chrono::Duration::hours(1),
            Some(now + chrono::Duration::seconds(1)),
            5,
        ),
        (
            now - chrono::Duration::hours(2),
            Some(now - chrono::Duration::hours(1)),
            0,
        ),
    ] {
        let range = MessageFilter {
            since: Some(since),
            until,
            ..MessageFilter::default()
        };
        let page = messages::list_messages(db, "acme", &range, None, 50)
            .await
            .expect("page");
        assert_eq!(page.data.len(), expected, "{since} {until:?}");
    }

    // large payloads are left out of lists, and pages stay one Data API row
    for n in 0..10 {
        s.create(json!({"event_type": "order.big", "payload": {"n": n, "pad": "x".repeat(7_000)}}))
            .await;
    }
    s.create(json!({"event_type": "order.huge", "payload": {"pad": "x".repeat(9_000)}}))
        .await;
    let big = MessageFilter {
        event_types: Some(vec!["order.big".into(), "order.huge".into()]),
        ..MessageFilter::default()
    };
    let first = messages::list_messages(db, "acme", &big, None, 250)
        .await
        .expect("page");
    assert!(
        (1..10).contains(&first.data.len()) && !first.done,
        "{} on the first page",
        first.data.len()
    );
    let rest = messages::list_messages(db, "acme", &big, first.iterator.as_deref(), 250)
        .await
        .expect("page");
    // (created last, but in the same millisecond as the one before it may
    // sort before it: found by its type)
    let huge = rest
        .data
        .iter()
        .find(|m| m.event_type == "order.huge")
        .expect("the huge one");
    assert_eq!(first.data.len() + rest.data.len(), 11);
    assert!(rest.done);
    assert!(huge.payload_omitted && huge.payload.is_null() && huge.payload_size > 9_000);

    match messages::list_messages(db, "acme", &all, None, 0).await {
        Err(ManageError::Invalid(m)) => assert!(m.contains("limit must be 1 to 250"), "{m}"),
        other => panic!("{other:?}"),
    }
}
