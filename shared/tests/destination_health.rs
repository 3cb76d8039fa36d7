//! Endpoint health (migration 13) through both adapters: a failing
//! destination's breaker opens (nothing sent during the cool-down, asserted
//! at the sink), probes with one request, recovers; continuous failure
//! disables it until an operator enables it, without losing a row or using
//! up attempts meanwhile; the health list names the configured destinations
//! and the endpoints that are not healthy, never every endpoint.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Adapter, at, count, migrated_db};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{
    self, AttemptDetail, DeliveryOutcome, DeliveryResult, NewOutboxEvent, OutboxStatus,
};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::{Database, Executor};
use hookbox_testkit::http_sink::HttpSink;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

async fn enqueue(
    db: &dyn Database,
    destination: &str,
    n: usize,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            outbox::enqueue(
                tx.as_ref(),
                &NewOutboxEvent {
                    aggregate_type: "order".into(),
                    aggregate_id: format!("{destination}-{i}"),
                    event_type: "order.paid".into(),
                    destination: destination.into(),
                    payload: serde_json::json!({"n": i}),
                },
                now,
            )
            .await
            .expect("enqueue"),
        );
    }
    tx.commit().await.expect("commit");
    ids
}

fn flaky_config(sink: &HttpSink, disable_after_hours: f64) -> HookboxConfig {
    let text = serde_json::json!({"destinations": {"flaky": {
        "url": sink.url("/flaky"), "secrets": [SECRET], "allowed_networks": ["127.0.0.0/8"],
        "backoff_secs": [5], "max_attempts": 50,
        "trip_after": 3, "cool_down_secs": 60, "disable_after_hours": disable_after_hours,
    }}})
    .to_string();
    HookboxConfig::parse(&text, "test").expect("config")
}

fn relay(db: Arc<dyn Database>, clock: Arc<ManualClock>) -> Relay {
    common::http_relay(db, clock, RelaySettings::new("breaker"))
}

async fn state(db: &dyn Executor, clock: &ManualClock) -> String {
    let all = outbox::destinations::health(db).await.expect("health");
    all.iter()
        .find(|h| h.name == "flaky")
        .map(|h| h.state(clock.now()).to_string())
        .expect("flaky is synced")
}

async fn a_failing_destination_trips_waits_out_its_cool_down_and_recovers_on_a_probe(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let cfg = flaky_config(&sink, 0.0);
    outbox::destinations::sync(db.as_ref(), &cfg, at(0))
        .await
        .expect("sync");
    let ids = enqueue(db.as_ref(), "flaky", 5, at(0)).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let relay = relay(db.clone(), clock.clone());

    sink.respond_with(500);
    relay.drain(&store).await;
    assert_eq!(sink.requests().len(), 5, "one batch: every row tried once");
    assert_eq!(
        state(db.as_ref(), &clock).await,
        "open",
        "5 failures ≥ trip_after 3"
    );
    assert_eq!(
        outbox::destinations::state_counts(db.as_ref())
            .await
            .expect("counts"),
        (1, 0),
        "the relay's DestinationsTripped / DestinationsDisabled"
    );

    // due again after 5 s, but the breaker is open for 60 s: nothing is sent
    for _ in 0..5 {
        clock.advance(chrono::Duration::seconds(10));
        relay.drain(&store).await;
    }
    assert_eq!(sink.requests().len(), 5, "no request during the cool-down");
    for id in &ids {
        let row = outbox::get(db.as_ref(), *id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(
            (row.status, row.attempts),
            (OutboxStatus::Pending, 1),
            "waiting costs no attempt"
        );
    }

    // the cool-down is over: one probe, which fails: open again
    clock.advance(chrono::Duration::seconds(11));
    assert_eq!(state(db.as_ref(), &clock).await, "probing");
    relay.drain(&store).await;
    assert_eq!(sink.requests().len(), 6, "exactly one probe");
    assert_eq!(state(db.as_ref(), &clock).await, "open");

    // the receiver is back: the next probe succeeds and everything follows
    sink.respond_with(200);
    clock.advance(chrono::Duration::seconds(61));
    relay.drain(&store).await;
    assert_eq!(state(db.as_ref(), &clock).await, "healthy");
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status = 'delivered'"
        )
        .await,
        5
    );
    assert_eq!(
        sink.requests().len(),
        11,
        "5 failures, 1 failed probe, 5 deliveries"
    );
}

async fn continuous_failure_disables_a_destination_until_an_operator_enables_it(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    // disabled after 30 minutes of failing continuously
    let cfg = flaky_config(&sink, 0.5);
    outbox::destinations::sync(db.as_ref(), &cfg, at(0))
        .await
        .expect("sync");
    enqueue(db.as_ref(), "flaky", 4, at(0)).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let relay = relay(db.clone(), clock.clone());
    sink.respond_with(503);
    // fail, then probe and fail every cool-down, for more than 30 minutes
    for _ in 0..40 {
        relay.drain(&store).await;
        clock.advance(chrono::Duration::seconds(61));
    }
    assert_eq!(state(db.as_ref(), &clock).await, "disabled");
    let health = outbox::destinations::health(db.as_ref())
        .await
        .expect("health");
    let reason = health[0].disabled_reason.clone().unwrap_or_default();
    assert!(reason.starts_with("failing continuously since"), "{reason}");
    assert_eq!(health[0].pending, 4, "nothing lost");
    assert_eq!(
        outbox::destinations::state_counts(db.as_ref())
            .await
            .expect("counts"),
        (0, 1)
    );

    // disabled: nothing is sent, however long it waits
    let sent = sink.requests().len();
    for _ in 0..5 {
        clock.advance(chrono::Duration::hours(1));
        relay.drain(&store).await;
    }
    assert_eq!(sink.requests().len(), sent);

    // the operator fixes the receiver and enables it: every row delivered
    sink.respond_with(200);
    assert!(
        outbox::destinations::enable(db.as_ref(), "flaky")
            .await
            .expect("enable")
    );
    assert!(
        !outbox::destinations::enable(db.as_ref(), "nope")
            .await
            .expect("enable")
    );
    relay.drain(&store).await;
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status = 'delivered'"
        )
        .await,
        4
    );
    assert_eq!(state(db.as_ref(), &clock).await, "healthy");
}

/// With tenants' endpoints, the list is the configured destinations and
/// the endpoints that are failing or held; the healthy ones are counted,
/// and each can be read on its own.
async fn the_health_list_names_only_endpoints_that_are_not_healthy(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let sink = HttpSink::start().await;
    outbox::destinations::sync(d, &flaky_config(&sink, 0.0), at(0))
        .await
        .expect("sync");
    let ids = hookbox::store::fetch_one(
        d,
        &common::sql(
            "SELECT hookbox_tenant_create(jsonb_build_object('uid', 'acme', 'name', 'Acme')) AS t,
                    hookbox_endpoint_create('acme', jsonb_build_object('uid', 'ok',
                        'url', 'https://ok.example/')) ->> 'id' AS ok,
                    hookbox_endpoint_create('acme', jsonb_build_object('uid', 'failing',
                        'url', 'https://failing.example/')) ->> 'id' AS failing,
                    hookbox_endpoint_create('acme', jsonb_build_object('uid', 'off',
                        'url', 'https://off.example/', 'disabled', true)) ->> 'id' AS off",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("endpoints");
    let id = |c: &str| ids.text(c).expect("id");
    d.execute(
        &common::sql("UPDATE outbox_destinations SET consecutive_failures = 2 WHERE name = :n"),
        &hookbox::params! { "n" => id("failing") },
    )
    .await
    .expect("a failing endpoint");
    let listed: Vec<String> = outbox::destinations::health(d)
        .await
        .expect("health")
        .into_iter()
        .map(|h| h.name)
        .collect();
    let mut expected = vec!["flaky".to_string(), id("failing"), id("off")];
    expected.sort();
    assert_eq!(listed, expected, "the healthy endpoint is left out");
    assert_eq!(
        outbox::destinations::healthy_endpoints(d)
            .await
            .expect("count"),
        1
    );
    let ok = outbox::destinations::health_of(d, &id("ok"))
        .await
        .expect("health of")
        .expect("synced");
    assert_eq!(
        (ok.name.as_str(), ok.state(at(0))),
        (id("ok").as_str(), "healthy")
    );
    assert_eq!(
        outbox::destinations::health_of(d, "nope")
            .await
            .expect("health of"),
        None
    );
}

/// `outbox_destinations`' primary-key descents so far in this transaction.
async fn health_row_reads(tx: &dyn Executor) -> i64 {
    count(
        tx,
        "SELECT pg_stat_get_xact_numscans(CAST('outbox_destinations_pkey' AS regclass)) AS n",
    )
    .await
}

/// Migration 32: recording a batch reads the health rows of only the
/// destinations that failed in it or were not healthy before it (an index of
/// the unhealthy ones answers which). A batch of 100 successes to 100
/// healthy destinations, one success to a destination with failures counted
/// and one failure: at most 4 descents (version 31's statement made 104:
/// one at least per destination); the recovering destination is healthy
/// again, the failing one counts its failure, the others are unchanged.
async fn recording_reads_the_health_of_only_failing_or_unhealthy_destinations(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    for statement in [
        "INSERT INTO outbox_destinations (name, synced_at)
         SELECT 'ok-' || lpad(CAST(g AS text), 3, '0'), now() FROM generate_series(0, 99) AS g
         UNION ALL VALUES ('recovering', now()), ('failing', now())"
            .to_string(),
        format!(
            "UPDATE outbox_destinations SET consecutive_failures = 2,
                    failing_since = CAST('{}' AS timestamptz) WHERE name = 'recovering'",
            at(-60).to_rfc3339()
        ),
        format!(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             SELECT gen_random_uuid(), 'order', name, 'order.paid', name, '{{}}', 'pending',
                    CAST('{at}' AS timestamptz), CAST('{at}' AS timestamptz)
               FROM outbox_destinations",
            at = at(0).to_rfc3339()
        ),
    ] {
        d.execute(&common::sql(&statement), &hookbox::params! {})
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let claimed = outbox::claim_due(d, common::claim("w", at(1), at(31), 200))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 102);
    let results: Vec<DeliveryResult> = claimed
        .iter()
        .map(|row| {
            let failed = row.destination == "failing";
            DeliveryResult {
                id: row.id,
                outcome: if failed {
                    DeliveryOutcome::Retry {
                        next_attempt_at: at(60),
                    }
                } else {
                    DeliveryOutcome::Delivered
                },
                status_code: Some(if failed { 503 } else { 200 }),
                error: failed.then(|| "503 Service Unavailable".to_string()),
                attempt: Some(AttemptDetail {
                    started_at: at(2),
                    latency: Duration::from_millis(3),
                    response_excerpt: None,
                }),
            }
        })
        .collect();
    let tx = db.begin().await.expect("begin");
    let before = health_row_reads(tx.as_ref()).await;
    let recorded = outbox::record_results(tx.as_ref(), "w", at(3), &results)
        .await
        .expect("record");
    let reads = health_row_reads(tx.as_ref()).await - before;
    tx.commit().await.expect("commit");
    assert_eq!(recorded, 102);
    assert!(
        reads <= 4,
        "recording read {reads} health rows by primary key (the failing and the recovering \
         destination's: 4)"
    );
    let health = |name: &str| {
        format!("SELECT consecutive_failures AS n FROM outbox_destinations WHERE name = '{name}'")
    };
    assert_eq!(count(d, &health("recovering")).await, 0);
    assert_eq!(
        count(
            d,
            "SELECT count(*) AS n FROM outbox_destinations
              WHERE name = 'recovering' AND failing_since IS NULL AND open_until IS NULL"
        )
        .await,
        1
    );
    assert_eq!(count(d, &health("failing")).await, 1);
    assert_eq!(
        count(
            d,
            "SELECT count(*) AS n FROM outbox_destinations
              WHERE name LIKE 'ok-%' AND consecutive_failures = 0 AND failing_since IS NULL"
        )
        .await,
        100
    );
}

for_each_adapter!(
    a_failing_destination_trips_waits_out_its_cool_down_and_recovers_on_a_probe,
    continuous_failure_disables_a_destination_until_an_operator_enables_it,
    the_health_list_names_only_endpoints_that_are_not_healthy,
    recording_reads_the_health_of_only_failing_or_unhealthy_destinations,
);
