//! The attempt log through both adapters: the relay logs every attempt
//! (time, destination, status, latency, error, the start of the response)
//! in the statement that records its batch, and retention keeps the log
//! for its own period. The attempt that delivers a row stays on the row
//! (no attempt-log row for a healthy delivery); replay and retention move
//! it into `outbox_attempts` before they change or remove the row.

mod common;

use std::sync::Arc;

use common::{Adapter, at, migrated_db};
use hookbox::admin::{self, ReplayRange};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, NewOutboxEvent, OutboxStatus};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::{Database, Executor, Retention};
use hookbox_testkit::TestDb;
use hookbox_testkit::http_sink::HttpSink;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn config(sink: &HttpSink) -> HookboxConfig {
    let text = serde_json::json!({"destinations": {"crm": {
        "url": sink.url("/crm"), "secrets": [SECRET],
        "allowed_networks": ["127.0.0.0/8"], "backoff_secs": [5], "max_attempts": 5,
    }}})
    .to_string();
    HookboxConfig::parse(&text, "test").expect("valid config")
}

async fn enqueue(db: &dyn Database) -> Uuid {
    let tx = db.begin().await.expect("begin");
    let id = outbox::enqueue(
        tx.as_ref(),
        &NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "o-1".into(),
            event_type: "order.paid".into(),
            destination: "crm".into(),
            payload: serde_json::json!({"order_id": "o-1"}),
        },
        at(0),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    id
}

/// A migrated database with one row enqueued for `crm` (a sink) at 0, and
/// the relay's clock at 1 s.
struct Fixture {
    _t: TestDb,
    db: Arc<dyn Database>,
    sink: HttpSink,
    id: Uuid,
    clock: Arc<ManualClock>,
    store: ConfigStore,
}

async fn fixture(adapter: Adapter) -> Fixture {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let id = enqueue(db.as_ref()).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(config(&sink), clock.clone());
    Fixture {
        _t,
        db,
        sink,
        id,
        clock,
        store,
    }
}

/// Rows of `outbox_attempts` (the log's table, without the delivering
/// attempts that stay on their rows) for delivery `id`.
async fn logged_rows(db: &dyn Executor, id: Uuid) -> i64 {
    let query = format!("SELECT count(*) AS n FROM outbox_attempts WHERE outbox_id = '{id}'");
    common::count(db, &query).await
}

impl Fixture {
    fn relay(&self, settings: RelaySettings) -> Relay {
        common::http_relay(self.db.clone(), self.clock.clone(), settings)
    }
}

async fn every_attempt_of_a_delivery_is_logged(adapter: Adapter) {
    let f = fixture(adapter).await;
    let relay = f.relay(RelaySettings::new("log-test"));
    let long = format!("busy {}", "x".repeat(3_000));
    let mut times = Vec::new();
    for (status, body) in [(503, long.as_str()), (500, "boom"), (200, "thanks")] {
        f.sink.respond_with_body(status, body);
        times.push(f.clock.now());
        relay.drain(&f.store).await;
        f.clock.advance(chrono::Duration::seconds(10));
    }
    let row = outbox::get(f.db.as_ref(), f.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!((row.status, row.attempts), (OutboxStatus::Delivered, 3));

    let log = outbox::attempts::of(f.db.as_ref(), f.id)
        .await
        .expect("log");
    assert_eq!(log.len(), 3, "{log:?}");
    for (i, a) in log.iter().enumerate() {
        assert_eq!(a.outbox_id, f.id);
        assert_eq!(a.attempt, i as i64 + 1);
        assert_eq!(a.destination, "crm");
        assert_eq!(
            a.attempted_at, times[i],
            "the request's start, on the relay's f.clock"
        );
        assert!(a.latency_ms.is_some_and(|ms| ms >= 0), "{a:?}");
    }
    assert_eq!(
        log.iter().map(|a| a.status_code).collect::<Vec<_>>(),
        [Some(503), Some(500), Some(200)]
    );
    let first = log[0].response_excerpt.as_deref().expect("a response");
    assert!(first.starts_with("busy xxx"), "{first}");
    assert_eq!(
        first.chars().count(),
        1_025,
        "the first 1 KiB, marked as cut"
    );
    assert!(
        log[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("HTTP 503"))
    );
    assert_eq!(log[1].response_excerpt.as_deref(), Some("boom"));
    assert_eq!(log[2].response_excerpt.as_deref(), Some("thanks"));
    assert_eq!(log[2].error, None);
    assert_eq!(
        logged_rows(f.db.as_ref(), f.id).await,
        2,
        "the two failures are rows; the delivering attempt is on the outbox row"
    );
}

async fn a_replayed_delivery_keeps_its_delivering_attempt(adapter: Adapter) {
    let f = fixture(adapter).await;
    let relay = f.relay(RelaySettings::new("log-replay"));
    f.sink.respond_with_body(200, "first");
    relay.drain(&f.store).await;
    assert_eq!(
        logged_rows(f.db.as_ref(), f.id).await,
        0,
        "a healthy delivery adds no row"
    );

    let range = ReplayRange {
        destination: "crm".into(),
        since: at(0),
        until: None,
        statuses: vec![OutboxStatus::Delivered],
    };
    let walk = admin::plan_replay(f.db.as_ref(), &range)
        .await
        .expect("plan")
        .walk
        .expect("a row to replay");
    let page = admin::replay_page(f.db.as_ref(), &range, walk, 100, at(20))
        .await
        .expect("replay");
    assert_eq!(page.replayed, 1);
    assert_eq!(
        logged_rows(f.db.as_ref(), f.id).await,
        1,
        "the delivering attempt moved into the log with the replay"
    );

    f.clock.set(at(30));
    f.sink.respond_with_body(200, "second");
    relay.drain(&f.store).await;
    let log = outbox::attempts::of(f.db.as_ref(), f.id)
        .await
        .expect("log");
    assert_eq!(
        log.iter()
            .map(|a| (a.attempt, a.attempted_at, a.response_excerpt.as_deref()))
            .collect::<Vec<_>>(),
        [(1, at(1), Some("first")), (1, at(30), Some("second"))],
        "both deliveries, each once (a replay starts the count again)"
    );
}

/// Outbox retention (17 days) shorter than the attempt log's (`keep`):
/// what the log has of a delivery delivered at once, after the row is gone.
async fn delivered_then_purged(adapter: Adapter, mode: Retention, keep_days: u64) -> usize {
    let f = fixture(adapter).await;
    let mut settings = RelaySettings::new("log-outlives-row");
    settings.retention = Some(std::time::Duration::from_secs(17 * 86_400));
    settings.retention_mode = mode;
    settings.attempt_retention = Some(std::time::Duration::from_secs(keep_days * 86_400));
    let relay = f.relay(settings);
    f.sink.respond_with(200);
    relay.drain(&f.store).await;
    f.clock.advance(chrono::Duration::days(18));
    let report = relay.purge().await.expect("purge");
    assert_eq!(report.outbox, 1, "the row is past the outbox's retention");
    assert!(
        outbox::get(f.db.as_ref(), f.id)
            .await
            .expect("get")
            .is_none()
    );
    outbox::attempts::of(f.db.as_ref(), f.id)
        .await
        .expect("log")
        .len()
}

async fn the_log_outlives_a_purged_row_for_its_own_period(adapter: Adapter) {
    for mode in [Retention::Delete, Retention::Archive] {
        assert_eq!(
            delivered_then_purged(adapter, mode, 30).await,
            1,
            "{mode:?}: 18 days old, within the log's 30: moved into the log"
        );
        assert_eq!(
            delivered_then_purged(adapter, mode, 7).await,
            0,
            "{mode:?}: past the log's 7 days: not moved"
        );
    }
}

async fn the_log_has_its_own_retention(adapter: Adapter) {
    let f = fixture(adapter).await;
    let mut settings = RelaySettings::new("log-retention");
    settings.retention = None;
    settings.attempt_retention = Some(std::time::Duration::from_secs(7 * 86_400));
    let relay = f.relay(settings);
    f.sink.respond_with(500);
    relay.drain(&f.store).await;
    f.clock.advance(chrono::Duration::days(6));
    f.sink.respond_with(200);
    relay.drain(&f.store).await;
    assert_eq!(
        outbox::attempts::of(f.db.as_ref(), f.id)
            .await
            .expect("log")
            .len(),
        2
    );

    f.clock.advance(chrono::Duration::days(2)); // the first is 8 days old
    let report = relay.purge().await.expect("purge");
    assert_eq!(report.attempts_deleted, 1);
    let left = outbox::attempts::of(f.db.as_ref(), f.id)
        .await
        .expect("log");
    assert_eq!(left.iter().map(|a| a.attempt).collect::<Vec<_>>(), [2]);
    assert!(
        outbox::get(f.db.as_ref(), f.id)
            .await
            .expect("get")
            .is_some(),
        "the row itself follows the outbox's retention (off here)"
    );
}

for_each_adapter!(
    every_attempt_of_a_delivery_is_logged,
    the_log_has_its_own_retention,
    a_replayed_delivery_keeps_its_delivering_attempt,
    the_log_outlives_a_purged_row_for_its_own_period,
);
