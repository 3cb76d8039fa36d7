//! The relay's notices to the alarm topic (issue 43, item 5), through moto
//! SNS (a queue subscribed to the topic reads what was published) and both
//! database adapters: a destination that answers 410 and one whose
//! delivery dies each produce one message naming the destination and the
//! delivery; a ten-minute outage of one destination, the relay running
//! every minute, produces a handful; a disablement is noticed once.

use super::{aws_support, common};
use crate::for_each_adapter;

use std::sync::Arc;

use aws_support::{aws, create_queue, drain, json};
use chrono::{DateTime, Utc};
use common::{Adapter, at, migrated_db};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::notify::sns::SnsNotifier;
use hookbox::outbox::{self, NewOutboxEvent};
use hookbox::relay::{HttpSender, ManualPause, Relay, RelaySettings};
use hookbox::store::Database;
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::moto;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn destination(url: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut d = serde_json::json!({
        "url": url,
        "secrets": [SECRET],
        "allowed_networks": ["127.0.0.0/8", "::1/128"],
    });
    if let (Some(d), Some(extra)) = (d.as_object_mut(), extra.as_object()) {
        d.extend(extra.clone());
    }
    d
}

fn config(destinations: serde_json::Value) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({ "destinations": destinations }).to_string(),
        "test",
    )
    .expect("valid")
}

async fn enqueue(db: &dyn Database, destination: &str, n: u32, now: DateTime<Utc>) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::new();
    for i in 0..n {
        let event = NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: format!("o-{i}"),
            event_type: "order.paid".into(),
            destination: destination.into(),
            payload: serde_json::json!({ "n": i }),
        };
        ids.push(
            outbox::enqueue(tx.as_ref(), &event, now)
                .await
                .expect("enqueue"),
        );
    }
    tx.commit().await.expect("commit");
    ids
}

/// A topic whose messages land on a new queue: (topic ARN, queue URL).
async fn observed_topic(endpoint: &str) -> (String, String) {
    let config = aws(endpoint);
    let sns = aws_sdk_sns::Client::new(&config);
    let sqs = moto::client(endpoint);
    let topic = sns
        .create_topic()
        .name(moto::unique_name("alarms"))
        .send()
        .await
        .expect("topic")
        .topic_arn()
        .expect("arn")
        .to_string();
    let (url, arn) = create_queue(&sqs, &moto::unique_name("alarm-inbox")).await;
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(arn)
        .send()
        .await
        .expect("subscribe");
    (topic, url)
}

/// The (subject, notice) of every message published so far.
async fn published(endpoint: &str, url: &str) -> Vec<(String, serde_json::Value)> {
    drain(&moto::client(endpoint), url)
        .await
        .into_iter()
        .map(|(body, _)| {
            let envelope = json(&body);
            (
                envelope["Subject"].as_str().unwrap_or_default().to_owned(),
                json(envelope["Message"].as_str().unwrap_or("null")),
            )
        })
        .collect()
}

fn relay(db: &Arc<dyn Database>, clock: &Arc<ManualClock>, topic: &str, endpoint: &str) -> Relay {
    let mut settings = RelaySettings::new("relay-notices");
    settings.lanes = 1;
    Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        settings,
    )
    .with_notifier(Arc::new(SnsNotifier::from_sdk_config(
        &aws(endpoint),
        topic,
    )))
}

/// One relay run of about a second of the clock, from now.
async fn run_once(relay: &Relay, store: &ConfigStore, clock: &Arc<ManualClock>) {
    let deadline = clock.now() + chrono::Duration::seconds(6);
    let report = relay
        .run(store, deadline, &ManualPause(clock.clone()))
        .await;
    assert_eq!(report.errors, Vec::<String>::new());
    assert_eq!(report.notices.failed, 0);
}

async fn a_gone_destination_and_a_dead_delivery_each_send_one_notice(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let (topic, url) = observed_topic(&endpoint).await;
    let gone = HttpSink::start().await;
    gone.respond_with(410);
    let failing = HttpSink::start().await;
    failing.respond_with(500);
    let clock = Arc::new(ManualClock::new(at(0)));
    let store = ConfigStore::fixed(
        config(serde_json::json!({
            "gone": destination(&gone.url("/in"), serde_json::json!({})),
            "dies": destination(
                &failing.url("/in?token=do-not-leak"),
                serde_json::json!({"max_attempts": 1}),
            ),
        })),
        clock.clone(),
    );
    let gone_ids = enqueue(db.as_ref(), "gone", 3, at(0)).await;
    let dies_ids = enqueue(db.as_ref(), "dies", 3, at(0)).await;
    let relay = relay(&db, &clock, &topic, &endpoint);
    run_once(&relay, &store, &clock).await;
    // the next run: nothing new, nothing sent again
    clock.advance(chrono::Duration::seconds(60));
    run_once(&relay, &store, &clock).await;

    let notices = published(&endpoint, &url).await;
    let naming = |name: &str| {
        notices
            .iter()
            .filter(|(_, n)| n["destination"] == name)
            .cloned()
            .collect::<Vec<_>>()
    };
    for (name, ids, status) in [("gone", &gone_ids, 410), ("dies", &dies_ids, 500)] {
        let mine = naming(name);
        assert_eq!(mine.len(), 1, "one notice for {name}: {notices:?}");
        let (subject, notice) = &mine[0];
        assert_eq!(
            subject,
            &format!("hookbox: destination {name} has dead deliveries")
        );
        assert_eq!(notice["type"], "alert.delivery.dead");
        assert_eq!(notice["dead_this_run"], 3);
        let delivery: Uuid = notice["delivery"]["delivery_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("a delivery id");
        assert!(ids.contains(&delivery), "{delivery} is one of {name}'s");
        assert_eq!(notice["delivery"]["status_code"], status);
        assert!(notice["delivery"]["error"].is_string(), "{notice}");
    }
    let text = format!("{notices:?}");
    assert!(!text.contains("do-not-leak"), "no URL in a notice: {text}");
    assert!(!text.contains(SECRET), "no secret in a notice");
}

async fn a_ten_minute_outage_sends_a_handful_of_notices(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let (topic, url) = observed_topic(&endpoint).await;
    let down = HttpSink::start().await;
    down.respond_with(503);
    let clock = Arc::new(ManualClock::new(at(0)));
    let store = ConfigStore::fixed(
        config(serde_json::json!({
            "down": destination(&down.url("/in"), serde_json::json!({
                "max_attempts": 2, "backoff_secs": [1], "trip_after": 2, "cool_down_secs": 30,
            })),
        })),
        clock.clone(),
    );
    let relay = relay(&db, &clock, &topic, &endpoint);
    // a run every minute for ten minutes, new rows each minute
    for _ in 0..10 {
        enqueue(db.as_ref(), "down", 5, clock.now()).await;
        run_once(&relay, &store, &clock).await;
        clock.advance(chrono::Duration::seconds(60));
    }
    assert!(
        down.requests().len() >= 10,
        "the destination was tried: {}",
        down.requests().len()
    );
    let notices = published(&endpoint, &url).await;
    let kinds: Vec<&str> = notices
        .iter()
        .map(|(_, n)| n["type"].as_str().unwrap_or_default())
        .collect();
    assert!(
        (1..=4).contains(&notices.len()),
        "a handful, not one a minute: {kinds:?}"
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "alert.destination.tripped")
            .count(),
        1,
        "one trip notice for the episode: {kinds:?}"
    );
    assert!(notices.iter().all(|(_, n)| n["destination"] == "down"));
}

/// A disabled destination is noticed once, with its reason, and again only
/// when it is disabled anew.
async fn a_disabled_destination_is_noticed_once_with_its_reason(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let (topic, url) = observed_topic(&endpoint).await;
    let sink = HttpSink::start().await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let store = ConfigStore::fixed(
        config(serde_json::json!({
            "billing": destination(&sink.url("/in"), serde_json::json!({})),
        })),
        clock.clone(),
    );
    let relay = relay(&db, &clock, &topic, &endpoint);
    run_once(&relay, &store, &clock).await; // syncs the destination
    assert!(
        outbox::destinations::disable(db.as_ref(), "billing", "maintenance window", clock.now())
            .await
            .expect("disable")
    );
    for _ in 0..3 {
        clock.advance(chrono::Duration::seconds(60));
        run_once(&relay, &store, &clock).await;
    }
    let notices = published(&endpoint, &url).await;
    assert_eq!(notices.len(), 1, "{notices:?}");
    let (subject, notice) = &notices[0];
    assert_eq!(subject, "hookbox: destination billing disabled");
    assert_eq!(notice["type"], "alert.destination.disabled");
    assert_eq!(notice["reason"], "maintenance window");
    assert_eq!(notice["enable_with"], "hookbox destination enable billing");
    // enabled, then disabled again: a new episode, a new notice
    assert!(
        outbox::destinations::enable(db.as_ref(), "billing")
            .await
            .expect("enable")
    );
    clock.advance(chrono::Duration::seconds(60));
    outbox::destinations::disable(db.as_ref(), "billing", "second window", clock.now())
        .await
        .expect("disable");
    clock.advance(chrono::Duration::seconds(1));
    run_once(&relay, &store, &clock).await;
    let again = published(&endpoint, &url).await;
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].1["reason"], "second window");
}

for_each_adapter!(
    a_gone_destination_and_a_dead_delivery_each_send_one_notice,
    a_ten_minute_outage_sends_a_handful_of_notices,
    a_disabled_destination_is_noticed_once_with_its_reason,
);
