//! Messages (migration 22, `hookbox::tenants::messages`): recorded with
//! their deliveries, an `event_id` publishing once, listed in pages; the
//! attempts of a receiver that fails then succeeds; recover sending again
//! exactly an endpoint's failed and dead deliveries of a time range; and
//! messages deleted with their tenant and by the outbox's retention.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::admin::{ReplayRange, plan_replay, replay_page};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, OutboxStatus, Retention};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::Database;
use hookbox::tenants::messages::{
    self, AttemptFilter, AttemptStatus, DeliveryStatus, MessageFilter,
};
use hookbox::tenants::{Actor, EndpointDirectory, Face, ManageError, SecretKeeper, manage};
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
    attempts_show_a_receiver_that_fails_then_succeeds,
    recover_sends_again_exactly_the_failed_and_dead_deliveries_of_its_range,
    messages_go_with_their_tenant_and_with_their_last_delivery_at_retention,
);

struct Setup {
    _t: hookbox_testkit::TestDb,
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    relay: Relay,
    store: ConfigStore,
    sink: HttpSink,
}

/// The relay with endpoints on a clock at the database's time, one tenant
/// (`acme`) and the receiver.
async fn setup(adapter: Adapter) -> Setup {
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
    async fn endpoint(&self, spec: serde_json::Value) -> String {
        manage::create_endpoint(self.db.as_ref(), "acme", &spec, None)
            .await
            .expect("endpoint")
            .id
    }

    async fn create(&self, spec: serde_json::Value) -> messages::CreatedMessage {
        messages::create_message(self.db.as_ref(), "acme", &spec, None)
            .await
            .unwrap_or_else(|e| panic!("create {spec}: {e}"))
    }

    /// Publishes through `publish_to` at `at`: the deliveries' ids.
    async fn publish_at(&self, n: i64, at: DateTime<Utc>) -> Vec<Uuid> {
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

    async fn row(&self, id: Uuid) -> outbox::OutboxRow {
        outbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }

    async fn count(&self, query: &str) -> i64 {
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
    assert_eq!(seen, ids, "every message once, in id order");

    let orders = MessageFilter {
        event_types: Some(vec!["order.paid".into(), "order.sent".into()]),
        ..MessageFilter::default()
    };
    let page = messages::list_messages(db, "acme", &orders, None, 50)
        .await
        .expect("page");
    let got: Vec<&str> = page.data.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(got, [&ids[0], &ids[2], &ids[3]]);
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
    let last = rest.data.last().expect("the huge one");
    assert_eq!(first.data.len() + rest.data.len(), 11);
    assert!(rest.done);
    assert!(last.payload_omitted && last.payload.is_null() && last.payload_size > 9_000);

    match messages::list_messages(db, "acme", &all, None, 0).await {
        Err(ManageError::Invalid(m)) => assert!(m.contains("limit must be 1 to 250"), "{m}"),
        other => panic!("{other:?}"),
    }
}

async fn attempts_show_a_receiver_that_fails_then_succeeds(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let ep = s
        .endpoint(json!({"url": s.sink.url("/a"), "uid": "main"}))
        .await;
    s.sink.respond_with_body(500, "down for maintenance");
    let m = s
        .create(json!({"event_type": "order.paid", "payload": {"n": 1}, "event_id": "e-1"}))
        .await
        .message;
    // the message is due at the database's time; the relay's clock follows
    s.clock.advance(chrono::Duration::seconds(2));
    s.relay.drain(&s.store).await;
    assert_eq!(s.sink.requests().len(), 1);
    s.sink.respond_with_body(200, "thanks");
    s.clock.advance(chrono::Duration::seconds(6));
    s.relay.drain(&s.store).await;
    assert_eq!(s.sink.requests().len(), 2);

    let page = messages::list_attempts_by_message(
        db,
        "acme",
        "e-1",
        None,
        &AttemptFilter::default(),
        None,
        50,
    )
    .await
    .expect("attempts");
    assert!(page.done);
    let [failed, ok] = &page.data[..] else {
        panic!("two attempts: {:?}", page.data)
    };
    assert_eq!(
        (failed.attempt, failed.status, failed.status_code),
        (1, AttemptStatus::Failed, Some(500))
    );
    assert_eq!(failed.response.as_deref(), Some("down for maintenance"));
    assert_eq!(
        (ok.attempt, ok.status, ok.status_code),
        (2, AttemptStatus::Success, Some(200))
    );
    assert_eq!(ok.response.as_deref(), Some("thanks"));
    for a in [failed, ok] {
        assert_eq!(a.message_id.as_deref(), Some(m.id.as_str()));
        assert_eq!(a.endpoint_id, ep);
        assert_eq!(a.url.as_deref(), Some(s.sink.url("/a").as_str()));
        assert_eq!(a.delivery_status, DeliveryStatus::Delivered);
        assert!(a.id.starts_with("atmpt_") && a.id.len() == 54, "{}", a.id);
        assert_eq!(
            s.sink.requests()[0].header("webhook-id"),
            Some(a.delivery_id.to_string().as_str())
        );
    }
    assert!(failed.id < ok.id && failed.timestamp < ok.timestamp);
    assert_eq!(
        (
            AttemptStatus::Success.svix_code(),
            failed.status.svix_code()
        ),
        (0, 2)
    );

    // the endpoint's list: the same attempts, in pages, filtered by status
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = messages::list_attempts_by_endpoint(
            db,
            "acme",
            "main",
            &AttemptFilter::default(),
            after.as_deref(),
            1,
        )
        .await
        .expect("page");
        seen.extend(page.data.iter().map(|a| a.id.clone()));
        if page.done {
            break;
        }
        after = page.iterator;
    }
    assert_eq!(seen, [failed.id.clone(), ok.id.clone()]);
    let successes = AttemptFilter {
        status: Some(AttemptStatus::Success),
        ..AttemptFilter::default()
    };
    let page = messages::list_attempts_by_endpoint(db, "acme", &ep, &successes, None, 50)
        .await
        .expect("page");
    assert_eq!(page.data.len(), 1);
    assert_eq!(page.data[0].id, ok.id);
    let after_first = messages::list_attempts_by_message(
        db,
        "acme",
        &m.id,
        Some(&ep),
        &AttemptFilter::default(),
        Some(&failed.id),
        50,
    )
    .await
    .expect("page");
    assert_eq!(after_first.data.len(), 1);
    assert_eq!(after_first.data[0].id, ok.id);

    // an operator's replay moves the delivering attempt into the attempt
    // log: the attempts keep their ids, the delivery is pending again
    let range = ReplayRange {
        destination: ep.clone(),
        since: s.clock.now() - chrono::Duration::hours(1),
        until: None,
        statuses: vec![OutboxStatus::Delivered],
    };
    let walk = plan_replay(db, &range)
        .await
        .expect("plan")
        .walk
        .expect("rows");
    let replayed = replay_page(
        db,
        &range,
        walk,
        100,
        s.clock.now() + chrono::Duration::hours(1),
    )
    .await
    .expect("replay");
    assert_eq!(replayed.replayed, 1);
    let page =
        messages::list_attempts_by_endpoint(db, "acme", &ep, &AttemptFilter::default(), None, 50)
            .await
            .expect("page");
    let ids: Vec<&str> = page.data.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, [failed.id.as_str(), ok.id.as_str()]);
    assert!(
        page.data
            .iter()
            .all(|a| a.delivery_status == DeliveryStatus::Pending)
    );
    assert_eq!(page.data[1].status, AttemptStatus::Success);

    match messages::list_attempts_by_endpoint(
        db,
        "acme",
        "nope",
        &AttemptFilter::default(),
        None,
        5,
    )
    .await
    {
        Err(ManageError::NotFound(m)) => assert!(m.contains("has no endpoint 'nope'"), "{m}"),
        other => panic!("{other:?}"),
    }
    let bad = messages::list_attempts_by_endpoint(
        db,
        "acme",
        &ep,
        &AttemptFilter::default(),
        Some("garbage"),
        5,
    )
    .await;
    assert!(
        matches!(bad, Err(ManageError::Invalid(ref m)) if m.contains("not an iterator")),
        "{bad:?}"
    );
}

async fn recover_sends_again_exactly_the_failed_and_dead_deliveries_of_its_range(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let ep = s.endpoint(json!({"url": s.sink.url("/r")})).await;
    let now = s.clock.now();
    let old = s.publish_at(0, now - chrono::Duration::hours(1)).await[0];
    let dead = s.publish_at(1, now).await[0];
    let failing = s.publish_at(2, now).await[0];
    let delivered = s.publish_at(3, now).await[0];
    for (id, status) in [(old, 410), (dead, 410), (failing, 503), (delivered, 200)] {
        s.sink
            .respond_to("webhook-id", &id.to_string(), status, &[]);
    }
    s.relay.drain(&s.store).await;
    // published after the run, due later: never attempted
    let waiting = s.publish_at(4, now + chrono::Duration::hours(1)).await[0];
    let before: Vec<(OutboxStatus, i64)> = {
        let mut out = Vec::new();
        for id in [old, dead, failing, delivered, waiting] {
            let r = s.row(id).await;
            out.push((r.status, r.attempts));
        }
        out
    };
    assert_eq!(
        before,
        [
            (OutboxStatus::Dead, 1),
            (OutboxStatus::Dead, 1),
            (OutboxStatus::Pending, 1),
            (OutboxStatus::Delivered, 1),
            (OutboxStatus::Pending, 0),
        ]
    );
    let waiting_due = s.row(waiting).await.next_attempt_at;

    let cli = Actor::new(Face::Cli, "ann");
    let since = now - chrono::Duration::minutes(10);
    let done = messages::recover_endpoint(db, "acme", &ep, since, None, Some(&cli))
        .await
        .expect("recover");
    assert_eq!((done.recovered, done.dead, done.failed), (2, 1, 1));
    for id in [dead, failing] {
        let r = s.row(id).await;
        assert_eq!((r.status, r.attempts), (OutboxStatus::Pending, 0), "{id}");
    }
    assert_eq!(
        s.row(old).await.status,
        OutboxStatus::Dead,
        "older than since"
    );
    assert_eq!(s.row(delivered).await.status, OutboxStatus::Delivered);
    let w = s.row(waiting).await;
    assert_eq!(
        (w.attempts, w.next_attempt_at),
        (0, waiting_due),
        "never attempted"
    );

    // until bounds the range: the older one alone
    let older = messages::recover_endpoint(
        db,
        "acme",
        &ep,
        now - chrono::Duration::hours(2),
        Some(since),
        None,
    )
    .await
    .expect("recover");
    assert_eq!((older.recovered, older.dead, older.failed), (1, 1, 0));

    // the receiver is back: each goes out again under its own webhook-id
    s.sink.clear_rules();
    s.clock.advance(chrono::Duration::seconds(5));
    let sent_before = s.sink.requests().len();
    s.relay.drain(&s.store).await;
    let mut again: Vec<String> = s.sink.requests()[sent_before..]
        .iter()
        .filter_map(|r| r.header("webhook-id").map(str::to_owned))
        .collect();
    again.sort();
    let mut expected: Vec<String> = [old, dead, failing].iter().map(Uuid::to_string).collect();
    expected.sort();
    assert_eq!(again, expected);
    for id in [old, dead, failing] {
        assert_eq!(s.row(id).await.status, OutboxStatus::Delivered);
    }

    let trail = manage::audit(db, "acme", None, 100).await.expect("audit");
    let recovered: Vec<_> = trail
        .data
        .iter()
        .filter(|a| a.action == "endpoint.recovered")
        .collect();
    assert_eq!(recovered.len(), 2);
    assert_eq!(recovered[0].endpoint_id.as_deref(), Some(ep.as_str()));
    assert_eq!(recovered[0].changes["recovered"], 2);

    for (since, until, expected) in [
        (now, Some(now), "must be after since"),
        (
            now,
            Some(now - chrono::Duration::seconds(1)),
            "must be after since",
        ),
    ] {
        match messages::recover_endpoint(db, "acme", &ep, since, until, None).await {
            Err(ManageError::Invalid(m)) => assert!(m.contains(expected), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    match messages::recover_endpoint(db, "acme", "ep_nope", now, None, None).await {
        Err(ManageError::NotFound(m)) => assert!(m.contains("'ep_nope'"), "{m}"),
        other => panic!("{other:?}"),
    }
}

async fn messages_go_with_their_tenant_and_with_their_last_delivery_at_retention(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    s.endpoint(json!({"url": s.sink.url("/a"), "filter_types": ["order.*"]}))
        .await;
    s.endpoint(json!({"url": s.sink.url("/b"), "filter_types": ["order.paid"]}))
        .await;
    let now = s.clock.now();
    // an hour ago: one message with no delivery, one delivered to both, one
    // delivered to one endpoint and dead at the other
    let lonely = s
        .create(json!({"event_type": "invoice.sent", "payload": {}}))
        .await
        .message
        .id;
    s.db.execute(
        &sql("UPDATE hookbox_messages SET created_at = CAST(:at AS timestamptz) WHERE id = :id"),
        &hookbox::params! { "at" => now - chrono::Duration::hours(1), "id" => lonely.as_str() },
    )
    .await
    .expect("age it");
    let both = s.publish_at(1, now - chrono::Duration::minutes(30)).await;
    let split = s.publish_at(2, now - chrono::Duration::minutes(30)).await;
    s.sink
        .respond_to("webhook-id", &split[1].to_string(), 410, &[]);
    s.relay.drain(&s.store).await;
    assert_eq!(s.row(split[1]).await.status, OutboxStatus::Dead);
    let message_of = |id: Uuid| {
        let db = s.db.clone();
        async move {
            hookbox::store::fetch_one(
                db.as_ref(),
                &sql("SELECT message_id FROM outbox WHERE id = :id"),
                &hookbox::params! { "id" => id },
            )
            .await
            .expect("row")
            .text("message_id")
            .expect("message_id")
        }
    };
    let (both_m, split_m) = (message_of(both[0]).await, message_of(split[0]).await);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM hookbox_messages").await,
        3
    );

    // retention deletes the delivered rows older than its cutoff: a message
    // goes with its last delivery, and the older childless one with it; the
    // one with a dead delivery left stays
    let purged = outbox::purge_finished(db, now, None, 100, Retention::Delete)
        .await
        .expect("purge");
    assert_eq!(purged, 3);
    let left = |id: String| format!("SELECT count(*) AS n FROM hookbox_messages WHERE id = '{id}'");
    assert_eq!(s.count(&left(both_m)).await, 0);
    assert_eq!(s.count(&left(lonely)).await, 0);
    assert_eq!(s.count(&left(split_m.clone())).await, 1);

    // another tenant's messages stay when acme goes with its own
    manage::create_tenant(db, &json!({"uid": "beta", "name": "Beta"}), None)
        .await
        .expect("beta");
    messages::create_message(db, "beta", &json!({"event_type": "x", "payload": 1}), None)
        .await
        .expect("beta's");
    s.create(json!({"event_type": "order.paid", "payload": 3}))
        .await;
    let deleted = manage::delete_tenant(db, "acme", None)
        .await
        .expect("delete");
    assert_eq!(deleted.messages, Some(2));
    assert_eq!(deleted.undelivered, 2);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM hookbox_messages").await,
        1
    );
    assert_eq!(
        messages::list_messages(db, "beta", &MessageFilter::default(), None, 10)
            .await
            .expect("beta's")
            .data
            .len(),
        1
    );
}
