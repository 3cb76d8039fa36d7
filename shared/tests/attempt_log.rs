//! The attempt log through both adapters: the relay logs every attempt
//! (time, destination, status, latency, error, the start of the response)
//! in the statement that records its batch, and retention keeps the log
//! for its own period.

mod common;

use std::sync::Arc;

use common::{Adapter, at, migrated_db};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, NewOutboxEvent, OutboxStatus};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::Database;
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

fn relay(db: Arc<dyn Database>, clock: Arc<ManualClock>, settings: RelaySettings) -> Relay {
    common::http_relay(db, clock, settings)
}

async fn every_attempt_of_a_delivery_is_logged(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let id = enqueue(db.as_ref()).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(config(&sink), clock.clone());
    let relay = relay(db.clone(), clock.clone(), RelaySettings::new("log-test"));
    let long = format!("busy {}", "x".repeat(3_000));
    let mut times = Vec::new();
    for (status, body) in [(503, long.as_str()), (500, "boom"), (200, "thanks")] {
        sink.respond_with_body(status, body);
        times.push(clock.now());
        relay.drain(&store).await;
        clock.advance(chrono::Duration::seconds(10));
    }
    let row = outbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!((row.status, row.attempts), (OutboxStatus::Delivered, 3));

    let log = outbox::attempts::of(db.as_ref(), id).await.expect("log");
    assert_eq!(log.len(), 3, "{log:?}");
    for (i, a) in log.iter().enumerate() {
        assert_eq!(a.outbox_id, id);
        assert_eq!(a.attempt, i as i64 + 1);
        assert_eq!(a.destination, "crm");
        assert_eq!(
            a.attempted_at, times[i],
            "the request's start, on the relay's clock"
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
}

async fn the_log_has_its_own_retention(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let id = enqueue(db.as_ref()).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(config(&sink), clock.clone());
    let mut settings = RelaySettings::new("log-retention");
    settings.retention = None;
    settings.attempt_retention = Some(std::time::Duration::from_secs(7 * 86_400));
    let relay = relay(db.clone(), clock.clone(), settings);
    sink.respond_with(500);
    relay.drain(&store).await;
    clock.advance(chrono::Duration::days(6));
    sink.respond_with(200);
    relay.drain(&store).await;
    assert_eq!(
        outbox::attempts::of(db.as_ref(), id)
            .await
            .expect("log")
            .len(),
        2
    );

    clock.advance(chrono::Duration::days(2)); // the first is 8 days old
    let report = relay.purge().await.expect("purge");
    assert_eq!(report.attempts_deleted, 1);
    let left = outbox::attempts::of(db.as_ref(), id).await.expect("log");
    assert_eq!(left.iter().map(|a| a.attempt).collect::<Vec<_>>(), [2]);
    assert!(
        outbox::get(db.as_ref(), id).await.expect("get").is_some(),
        "the row itself follows the outbox's retention (off here)"
    );
}

for_each_adapter!(
    every_attempt_of_a_delivery_is_logged,
    the_log_has_its_own_retention,
);
