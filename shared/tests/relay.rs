//! The outbox relay against real PostgreSQL and a local HTTP sink on
//! 127.0.0.1. Time is a manual clock; only loopback is ever contacted.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use common::{Adapter, at, migrated_db};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, NewOutboxEvent, OutboxStatus};
use hookbox::relay::{
    FixedJitter, HttpSender, OutboundRequest, Pause, Relay, RelaySettings, SendOutcome,
    WebhookSender,
};
use hookbox::signature::{Headers, SchemeConfig, Secret, SignedRequest, Verifier};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox_testkit::http_sink::{HttpSink, Recorded};
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";
const NEXT_SECRET: &str = "whsec_bmV4dC1zZWNyZXQtZm9yLXJvdGF0aW9uLXRlc3Q=";

/// Destination `crm` at `url`, loopback allowed, plus `extra` fields.
fn config(url: &str, extra: serde_json::Value) -> HookboxConfig {
    let mut crm = serde_json::json!({
        "url": url,
        "secrets": [SECRET],
        "allowed_networks": ["127.0.0.0/8", "::1/128"],
    });
    if let (Some(crm), Some(extra)) = (crm.as_object_mut(), extra.as_object()) {
        crm.extend(extra.clone());
    }
    let text = serde_json::json!({ "destinations": { "crm": crm } }).to_string();
    HookboxConfig::parse(&text, "test").expect("valid config")
}

async fn enqueue(db: &dyn Database, aggregate_id: &str, n: u32, now: DateTime<Utc>) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::new();
    for i in 0..n {
        let event = NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: aggregate_id.into(),
            event_type: "order.status_changed".into(),
            destination: "crm".into(),
            payload: serde_json::json!({ "order_id": aggregate_id, "n": i }),
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

fn relay(db: Arc<dyn Database>, clock: Arc<ManualClock>, worker: &str) -> Relay {
    relay_with(db, clock, RelaySettings::new(worker))
}

/// A relay whose run has a single lane (its steps in a known order).
fn one_lane(db: Arc<dyn Database>, clock: Arc<ManualClock>, worker: &str) -> Relay {
    let mut settings = RelaySettings::new(worker);
    settings.lanes = 1;
    relay_with(db, clock, settings)
}

fn relay_with(db: Arc<dyn Database>, clock: Arc<ManualClock>, settings: RelaySettings) -> Relay {
    Relay::new(
        db,
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock,
        settings,
    )
    .with_jitter(Arc::new(FixedJitter(0.0)))
}

async fn batch(
    relay: &Relay,
    config: &HookboxConfig,
    clock: &ManualClock,
) -> hookbox::relay::BatchReport {
    relay
        .deliver_batch(config, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect("batch")
}

async fn row(db: &dyn Executor, id: Uuid) -> outbox::OutboxRow {
    outbox::get(db, id).await.expect("get").expect("row exists")
}

fn webhook_ids(requests: &[Recorded]) -> Vec<String> {
    requests
        .iter()
        .map(|r| r.header("webhook-id").expect("webhook-id").to_string())
        .collect()
}

async fn a_receiver_down_then_up_gets_every_row_under_one_webhook_id(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let port = HttpSink::free_port();
    let cfg = config(
        &format!("http://127.0.0.1:{port}/hooks"),
        serde_json::json!({}),
    );
    let ids = enqueue(db.as_ref(), "o-1", 3, at(0)).await;
    let relay = relay(db.clone(), clock.clone(), "relay-a");

    // down: connection refused, each row scheduled 5 s later (first step)
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!((report.claimed, report.retried, report.recorded), (3, 3, 3));
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!((r.status, r.attempts), (OutboxStatus::Pending, 1));
        assert_eq!(r.next_attempt_at, at(5), "5 s after attempt 1");
        assert!(
            r.last_error
                .as_deref()
                .unwrap_or("")
                .contains("cannot connect"),
            "{r:?}"
        );
        assert_eq!(r.locked_by, None);
    }
    // not due yet
    assert_eq!(batch(&relay, &cfg, &clock).await.claimed, 0);

    // up, but failing: same ids again
    let sink = HttpSink::start_on(port).await;
    sink.respond_with(500);
    clock.advance(chrono::Duration::seconds(5));
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!(report.retried, 3);
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!((r.attempts, r.last_status_code), (2, Some(500)));
        assert_eq!(r.next_attempt_at, at(5 + 300), "300 s after attempt 2");
    }

    // healthy
    sink.respond_with(200);
    clock.advance(chrono::Duration::seconds(300));
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!(report.delivered, 3);
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!(r.status, OutboxStatus::Delivered);
        assert_eq!(
            (r.attempts, r.last_status_code, r.last_error),
            (3, Some(200), None)
        );
        assert_eq!(r.processed_at, Some(at(305)));
    }
    let requests = sink.requests();
    assert_eq!(
        requests.len(),
        6,
        "two attempts reached the receiver per row"
    );
    let mut seen: HashMap<String, usize> = HashMap::new();
    for id in webhook_ids(&requests) {
        *seen.entry(id).or_default() += 1;
    }
    let expected: HashMap<String, usize> = ids.iter().map(|id| (id.to_string(), 2)).collect();
    assert_eq!(
        seen, expected,
        "webhook-id is the outbox id on every attempt"
    );
    assert_eq!(batch(&relay, &cfg, &clock).await.claimed, 0, "nothing left");
}

async fn deliveries_are_signed_posts_that_the_shared_verifier_accepts() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(1_000)));
    let sink = HttpSink::start().await;
    // a rotation: both secrets sign
    let mut cfg_json = serde_json::json!({});
    cfg_json["secrets"] = serde_json::json!([SECRET, NEXT_SECRET]);
    let cfg = config(&sink.url("/in?token=abc"), cfg_json);
    let ids = enqueue(db.as_ref(), "o-9", 1, at(1_000)).await;
    let relay = relay(db.clone(), clock.clone(), "relay-a");
    assert_eq!(batch(&relay, &cfg, &clock).await.delivered, 1);

    let request = sink.wait_for(1).await.remove(0);
    assert_eq!(request.method, "POST");
    assert_eq!(request.target, "/in?token=abc");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert!(
        request
            .header("user-agent")
            .unwrap_or("")
            .starts_with("hookbox-relay/"),
        "{:?}",
        request.header("user-agent")
    );
    assert_eq!(
        request.header("webhook-id"),
        Some(ids[0].to_string().as_str())
    );
    assert_eq!(
        request.header("webhook-timestamp").map(str::to_string),
        Some(at(1_000).timestamp().to_string())
    );
    assert_eq!(
        request.json(),
        serde_json::json!({ "order_id": "o-9", "n": 0 })
    );
    let stored = row(db.as_ref(), ids[0]).await;
    assert_eq!(
        request.body,
        stored.payload.as_bytes(),
        "the stored bytes are what was signed"
    );

    let verifier = Verifier::new(SchemeConfig::StandardWebhooks {
        tolerance_secs: 300,
    })
    .expect("verifier");
    let headers = Headers::from_pairs(
        request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    );
    for secret in [SECRET, NEXT_SECRET] {
        verifier
            .verify_at(
                &SignedRequest::new(&request.body, headers.clone()),
                &[Secret::new(secret)],
                at(1_000),
            )
            .unwrap_or_else(|e| panic!("signature with {secret:.10}… does not verify: {e}"));
    }
    let mut tampered = request.body.clone();
    tampered.push(b' ');
    assert!(
        verifier
            .verify_at(
                &SignedRequest::new(&tampered, headers),
                &[Secret::new(SECRET)],
                at(1_000)
            )
            .is_err()
    );
}

async fn gone_is_dead_at_once_and_reported(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    sink.respond_with(410);
    let cfg = config(&sink.url("/gone"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-2", 1, at(0)).await;
    let relay = relay(db.clone(), clock.clone(), "relay-a");
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!((report.dead, report.gone, report.retried), (1, 1, 0));
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!(
        (r.status, r.attempts, r.last_status_code),
        (OutboxStatus::Dead, 1, Some(410))
    );
    assert!(
        r.last_error.as_deref().unwrap_or("").contains("410 Gone"),
        "{r:?}"
    );
    clock.advance(chrono::Duration::days(2));
    assert_eq!(
        batch(&relay, &cfg, &clock).await.claimed,
        0,
        "dead rows are never retried"
    );
    let metrics = hookbox::relay::RunReport {
        deliveries: report,
        ..Default::default()
    }
    .metrics();
    assert_eq!(metrics.values("Gone"), Some(&[1.0][..]));
}

async fn retry_after_is_honoured_within_one_to_two_times_the_schedule() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/busy"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-3", 4, at(0)).await;
    // attempt 1 of each: schedule 5 s
    let answers = [
        (429, "1"),    // sooner than the schedule → 5 s
        (503, "8"),    // within → 8 s
        (429, "3600"), // far later → 2 × 5 s = 10 s
        (500, "8"),    // Retry-After only counts on 429/503 → schedule
    ];
    for (id, (status, after)) in ids.iter().zip(answers) {
        sink.respond_to(
            "webhook-id",
            &id.to_string(),
            status,
            &[("retry-after", after)],
        );
    }
    let relay = relay(db.clone(), clock.clone(), "relay-a");
    assert_eq!(batch(&relay, &cfg, &clock).await.retried, 4);
    let mut due = Vec::new();
    for id in &ids {
        due.push(row(db.as_ref(), *id).await.next_attempt_at);
    }
    assert_eq!(due, vec![at(5), at(8), at(10), at(5)]);

    // an HTTP date works too: attempt 2 (schedule 300 s), asked 450 s
    sink.clear_rules();
    let when = (at(5) + chrono::Duration::seconds(450))
        .to_rfc2822()
        .replace("+0000", "GMT");
    sink.respond_to(
        "webhook-id",
        &ids[0].to_string(),
        503,
        &[("retry-after", &when)],
    );
    clock.set(at(5));
    sink.respond_with(200);
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!((report.retried, report.delivered), (1, 1));
    assert_eq!(row(db.as_ref(), ids[0]).await.next_attempt_at, at(455));
}

async fn backoff_follows_the_schedule_with_jitter_and_ends_dead_with_the_last_error() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    sink.respond_with(502);
    let cfg = config(&sink.url("/down"), serde_json::json!({ "max_attempts": 8 }));
    let ids = enqueue(db.as_ref(), "o-4", 1, at(0)).await;
    let upper = relay(db.clone(), clock.clone(), "relay-a").with_jitter(Arc::new(FixedJitter(1.0)));
    let lower =
        relay(db.clone(), clock.clone(), "relay-a").with_jitter(Arc::new(FixedJitter(-1.0)));
    let schedule = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
    for (attempt, secs) in schedule.iter().enumerate() {
        let relay = if attempt % 2 == 0 { &upper } else { &lower };
        let factor = if attempt % 2 == 0 { 1.2 } else { 0.8 };
        let start = clock.now();
        assert_eq!(
            batch(relay, &cfg, &clock).await.retried,
            1,
            "attempt {}",
            attempt + 1
        );
        let r = row(db.as_ref(), ids[0]).await;
        assert_eq!(r.attempts, attempt as i64 + 1);
        let expected =
            start + chrono::Duration::milliseconds((*secs as f64 * factor * 1000.0) as i64);
        assert_eq!(r.next_attempt_at, expected, "attempt {}", attempt + 1);
        clock.set(r.next_attempt_at);
    }
    let report = batch(&upper, &cfg, &clock).await;
    assert_eq!((report.dead, report.gone), (1, 0));
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!(
        (r.status, r.attempts, r.last_status_code),
        (OutboxStatus::Dead, 8, Some(502))
    );
    assert_eq!(
        r.last_error.as_deref(),
        Some("gave up after 8 attempts: HTTP 502")
    );
    assert_eq!(sink.requests().len(), 8);
}

/// Fails the statements that record results: a lane's record-and-claim
/// once it carries results, and, unless `alone_works`, recording alone too
/// (the relay "dies" after its POSTs).
#[derive(Debug)]
struct FailsRecording {
    db: Arc<dyn Database>,
    alone_works: bool,
    reason: &'static str,
}

impl FailsRecording {
    /// Every way of recording fails.
    fn always(db: Arc<dyn Database>) -> Self {
        Self {
            db,
            alone_works: false,
            reason: "simulated crash before recording",
        }
    }

    /// Only the lane's step carrying results fails (its claim half, say).
    fn in_steps(db: Arc<dyn Database>) -> Self {
        Self {
            db,
            alone_works: true,
            reason: "simulated failure of the step",
        }
    }
}

#[async_trait]
impl Executor for FailsRecording {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        let carries_results = !matches!(
            params.get("results"),
            Some(hookbox::store::Value::Json(serde_json::Value::Array(results)))
                if results.is_empty()
        );
        let fails = (statement.name == outbox::repo::RECORD_AND_CLAIM.name && carries_results)
            || (statement.name == outbox::repo::RECORD_RESULTS.name && !self.alone_works);
        if fails {
            return Err(DbError::Unavailable {
                statement: statement.name,
                reason: self.reason.into(),
            });
        }
        self.db.execute(statement, params).await
    }
}

#[async_trait]
impl Database for FailsRecording {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.db.begin().await
    }
}

async fn a_crash_after_the_post_delivers_again_with_the_same_webhook_id(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-5", 2, at(0)).await;
    let dying = relay(
        Arc::new(FailsRecording::always(db.clone())),
        clock.clone(),
        "relay-dies",
    );
    let err = dying
        .deliver_batch(&cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect_err("the result is lost");
    assert!(matches!(err, DbError::Unavailable { .. }), "{err:?}");
    assert_eq!(sink.requests().len(), 2, "the POSTs happened");
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!(r.status, OutboxStatus::Pending);
    let token = r.locked_by.expect("leased");
    assert!(
        token.starts_with("relay-dies/"),
        "the lease names the batch: {token}"
    );

    redelivered_after_the_lease(&db, &clock, &cfg, &sink, &ids).await;
}

/// After a relay died with `ids` POSTed once but unrecorded: they stay
/// invisible to another relay until the lease (batch + slack) ends, then are
/// delivered again, each under its own id both times.
async fn redelivered_after_the_lease(
    db: &Arc<dyn Database>,
    clock: &Arc<ManualClock>,
    cfg: &HookboxConfig,
    sink: &HttpSink,
    ids: &[Uuid],
) {
    let other = relay(db.clone(), clock.clone(), "relay-b");
    clock.advance(chrono::Duration::seconds(34));
    assert_eq!(batch(&other, cfg, clock).await.claimed, 0, "still leased");
    clock.advance(chrono::Duration::seconds(1));
    assert_eq!(batch(&other, cfg, clock).await.delivered, 2);
    let mut got = webhook_ids(&sink.requests());
    got.sort();
    let mut expected: Vec<String> = ids.iter().chain(ids).map(Uuid::to_string).collect();
    expected.sort();
    assert_eq!(got, expected, "each row twice, under its own id both times");
    for id in ids {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
}

/// The same through a relay lane, which records a batch with its next
/// claim: the lane stops, reports the error, and the rows come back when the
/// lease ends, under the same webhook-ids.
async fn a_lane_that_dies_before_recording_delivers_again_with_the_same_webhook_id(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-6", 2, at(0)).await;
    let dying = one_lane(
        Arc::new(FailsRecording::always(db.clone())),
        clock.clone(),
        "relay-dies",
    );
    let run = dying
        .drain(&ConfigStore::fixed(cfg.clone(), clock.clone()))
        .await;
    // the step carrying the results failed, then recording them alone
    assert_eq!(run.errors.len(), 2, "{:?}", run.errors);
    assert!(
        run.errors.iter().all(|e| e.contains("simulated crash")),
        "{:?}",
        run.errors
    );
    assert_eq!(run.deliveries.delivered, 0, "nothing was recorded");
    assert_eq!(sink.requests().len(), 2, "the POSTs happened");
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!(r.status, OutboxStatus::Pending);
        assert!(r.locked_by.expect("leased").starts_with("relay-dies/"));
    }

    redelivered_after_the_lease(&db, &clock, &cfg, &sink, &ids).await;
}

/// When the statement recording a batch with the next claim fails, the lane
/// records the batch on its own before stopping: no redelivery.
async fn a_failed_step_still_records_the_batch_it_carried(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-8", 2, at(0)).await;
    let relay = one_lane(
        Arc::new(FailsRecording::in_steps(db.clone())),
        clock.clone(),
        "relay-step-fails",
    );
    let run = relay.drain(&ConfigStore::fixed(cfg, clock.clone())).await;
    assert_eq!(run.errors.len(), 1, "{:?}", run.errors);
    assert!(run.errors[0].contains("simulated failure of the step"));
    assert_eq!((run.deliveries.delivered, run.deliveries.recorded), (2, 2));
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!((r.status, r.locked_by), (OutboxStatus::Delivered, None));
    }
    assert_eq!(sink.requests().len(), 2);
}

/// A configuration source that takes 40 s to answer a refresh (the first
/// read, the cold start, is instant): longer than a batch's lease. Meanwhile
/// another relay claims whatever is due, rows whose lease ran out included.
#[derive(Debug)]
struct SlowSecret {
    text: String,
    clock: Arc<ManualClock>,
    db: Arc<dyn Database>,
    reads: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl hookbox::config::SecretStore for SlowSecret {
    async fn secret_string(&self, _arn: &str) -> Result<String, String> {
        let read = self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if read > 0 {
            self.clock.advance(chrono::Duration::seconds(40));
        }
        if read > 1 {
            // (from the second refresh on: the first comes before any claim)
            let now = self.clock.now();
            outbox::claim_due(
                self.db.as_ref(),
                outbox::ClaimRequest {
                    worker: "relay-other/1",
                    now,
                    lease_until: now + chrono::Duration::seconds(35),
                    limit: 10,
                    ordered_destinations: &[],
                    destination_caps: &[],
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        }
        Ok(self.text.clone())
    }
}

/// A lane records a batch with its next claim; when the configuration must
/// be refreshed first (and the source is slow), the batch is recorded before
/// the refresh, so its lease cannot run out and its results are kept.
async fn a_slow_configuration_refresh_never_costs_a_batch_its_results(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let text = serde_json::json!({ "destinations": { "crm": {
        "url": sink.url("/in"),
        "secrets": [SECRET],
        "allowed_networks": ["127.0.0.0/8", "::1/128"],
    }}})
    .to_string();
    let secrets = Arc::new(SlowSecret {
        text,
        clock: clock.clone(),
        db: db.clone(),
        reads: Default::default(),
    });
    let store = ConfigStore::load(
        hookbox::config::ConfigSource::Secret {
            arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox".into(),
            ttl: Duration::ZERO,
        },
        Some(secrets),
        clock.clone(),
    )
    .await
    .expect("config");
    let ids = enqueue(db.as_ref(), "o-7", 3, at(0)).await;
    let relay = one_lane(db.clone(), clock.clone(), "relay-slow-config");
    let run = relay.drain(&store).await;
    assert_eq!(run.errors, Vec::<String>::new());
    assert_eq!(
        (run.deliveries.delivered, run.deliveries.recorded),
        (3, 3),
        "every result recorded: {run:?}"
    );
    assert_eq!(sink.requests().len(), 3, "each row once");
    for id in &ids {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
}

async fn two_relays_at_once_never_deliver_the_same_row_twice() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = Arc::new(config(
        &sink.url("/in"),
        serde_json::json!({ "max_in_flight": 8 }),
    ));
    let mut ids = HashSet::new();
    for a in 0..20 {
        ids.extend(enqueue(db.as_ref(), &format!("o-{a}"), 10, at(0)).await);
    }
    let mut tasks = Vec::new();
    for worker in ["relay-a", "relay-b"] {
        let relay = relay(db.clone(), clock.clone(), worker);
        let (cfg, clock) = (cfg.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            let mut delivered = 0;
            loop {
                let b = batch(&relay, &cfg, &clock).await;
                if b.claimed == 0 {
                    return delivered;
                }
                delivered += b.delivered;
            }
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("relay task");
    }
    assert_eq!(total, 200);
    let got = webhook_ids(&sink.requests());
    assert_eq!(got.len(), 200, "one POST per row, none twice");
    let got: HashSet<Uuid> = got.iter().map(|s| s.parse().expect("uuid")).collect();
    assert_eq!(got, ids);
}

async fn an_ordered_destination_keeps_each_aggregate_in_order_while_others_proceed() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({ "ordered": true }));
    let a = enqueue(db.as_ref(), "order-a", 3, at(0)).await;
    let b = enqueue(db.as_ref(), "order-b", 2, at(0)).await;
    sink.respond_to("webhook-id", &a[0].to_string(), 500, &[]);
    let relay = relay(db.clone(), clock.clone(), "relay-a");

    // a's head fails; b proceeds one row per batch; a's later rows wait
    let first = batch(&relay, &cfg, &clock).await;
    assert_eq!((first.claimed, first.retried, first.delivered), (2, 1, 1));
    assert_eq!(
        batch(&relay, &cfg, &clock).await.delivered,
        1,
        "b's second row"
    );
    assert_eq!(
        batch(&relay, &cfg, &clock).await.claimed,
        0,
        "a[1..] wait for a[0]"
    );
    for id in &a[1..] {
        assert_eq!(row(db.as_ref(), *id).await.attempts, 0, "never attempted");
    }

    sink.clear_rules();
    clock.advance(chrono::Duration::seconds(5));
    for _ in 0..3 {
        assert_eq!(batch(&relay, &cfg, &clock).await.delivered, 1);
    }
    let order: Vec<String> = webhook_ids(&sink.requests());
    let a_order: Vec<&String> = order
        .iter()
        .filter(|id| a.iter().any(|x| x.to_string() == **id))
        .collect();
    let expected: Vec<String> = [a[0], a[0], a[1], a[2]]
        .iter()
        .map(Uuid::to_string)
        .collect();
    assert_eq!(a_order, expected.iter().collect::<Vec<_>>());
    let b_order: Vec<&String> = order
        .iter()
        .filter(|id| b.iter().any(|x| x.to_string() == **id))
        .collect();
    assert_eq!(
        b_order,
        b.iter()
            .map(Uuid::to_string)
            .collect::<Vec<_>>()
            .iter()
            .collect::<Vec<_>>()
    );

    // a dead head blocks its aggregate until an operator acts
    let c = enqueue(db.as_ref(), "order-c", 2, clock.now()).await;
    sink.respond_to("webhook-id", &c[0].to_string(), 410, &[]);
    assert_eq!(batch(&relay, &cfg, &clock).await.dead, 1);
    assert_eq!(
        batch(&relay, &cfg, &clock).await.claimed,
        0,
        "c[1] waits behind dead c[0]"
    );
}

async fn the_ssrf_guard_refuses_a_loopback_name_unless_allowed() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    // `localhost` resolves to loopback, which this destination does not allow
    let port = sink.url("").rsplit(':').next().expect("port").to_string();
    let text = serde_json::json!({ "destinations": { "crm": {
        "url": format!("http://localhost:{port}/in"),
        "secrets": [SECRET],
    }}})
    .to_string();
    let strict = HookboxConfig::parse(&text, "test").expect("config");
    let ids = enqueue(db.as_ref(), "o-6", 1, at(0)).await;
    let relay = relay(db.clone(), clock.clone(), "relay-a");
    let report = batch(&relay, &strict, &clock).await;
    assert_eq!((report.retried, report.refused), (1, 1));
    let r = row(db.as_ref(), ids[0]).await;
    let error = r.last_error.unwrap_or_default();
    assert!(
        error.contains("refused by the SSRF guard") && error.contains("loopback"),
        "{error}"
    );
    assert!(sink.requests().is_empty(), "nothing was sent");

    // the same destination with loopback allowed is delivered
    let allowed = config(
        &format!("http://localhost:{port}/in"),
        serde_json::json!({}),
    );
    clock.advance(chrono::Duration::seconds(5));
    assert_eq!(batch(&relay, &allowed, &clock).await.delivered, 1);
    assert_eq!(sink.requests().len(), 1);
}

/// One connection pool serves at most its bound of receivers; past it the
/// adapter starts a fresh pool and the old one's idle connections close
/// (each is a file descriptor, and a Lambda function has 1,024: thousands
/// of tenants' endpoints, each its own host, must not keep one each open).
#[tokio::test]
async fn idle_connections_are_kept_open_for_a_bounded_number_of_receivers() {
    let receivers =
        futures::future::join_all((0..12).map(|_| hookbox_testkit::receivers::KeepAlive::start()))
            .await;
    let sender =
        HttpSender::with_max_receivers(Arc::new(hookbox::delivery::guard::SystemLookup), 4);
    let send = |url: String| {
        let sender = &sender;
        async move {
            let config = config(&url, serde_json::json!({}));
            let destination = config.destination("crm").expect("crm");
            let headers = hookbox::signature::sign_standard_webhooks(
                "msg_1",
                at(0),
                b"{}",
                &destination.http().expect("http").secrets,
            )
            .expect("signed");
            sender
                .send(OutboundRequest {
                    destination,
                    headers,
                    body: "{}",
                    timeout: Duration::from_secs(10),
                })
                .await
        }
    };
    for receiver in &receivers {
        let outcome = send(receiver.url("/in")).await;
        assert!(
            matches!(outcome, SendOutcome::Response { status: 200, .. }),
            "{outcome:?}"
        );
    }
    // the pools before the last let their idle connections go
    let open = || receivers.iter().map(|r| r.open()).collect::<Vec<_>>();
    let settled = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let changes = futures::future::join_all(receivers.iter().map(|r| r.changed()));
            if open().iter().sum::<usize>() <= 4 {
                return;
            }
            changes.await;
        }
    })
    .await;
    assert!(settled.is_ok(), "still open: {:?}", open());
    // within a pool a receiver's connection is reused
    let last = receivers.last().expect("receivers");
    assert_eq!(last.open(), 1);
    send(last.url("/in")).await;
    assert_eq!((last.accepted(), last.open()), (1, 1));
}

/// Records each request's timeout and answers 200, advancing the clock by
/// `cost` per request (a slow receiver, in manual time).
#[derive(Debug)]
struct SlowFake {
    clock: Arc<ManualClock>,
    cost: chrono::Duration,
    timeouts: std::sync::Mutex<Vec<Duration>>,
}

#[async_trait]
impl WebhookSender for SlowFake {
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome {
        self.timeouts.lock().expect("lock").push(request.timeout);
        self.clock.advance(self.cost);
        SendOutcome::Response {
            status: 204,
            retry_after: None,
            body_excerpt: String::new(),
        }
    }
}

async fn no_request_outlives_its_batch_and_late_rows_are_released_unattempted() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let fake = Arc::new(SlowFake {
        clock: clock.clone(),
        cost: chrono::Duration::seconds(4),
        timeouts: Default::default(),
    });
    let cfg = config(
        "http://127.0.0.1:9/unused",
        serde_json::json!({ "max_in_flight": 5, "timeout_secs": 10 }),
    );
    let ids = enqueue(db.as_ref(), "o-7", 5, at(0)).await;
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        fake.clone(),
        None,
        clock.clone(),
        RelaySettings::new("relay-a"),
    )
    .with_jitter(Arc::new(FixedJitter(0.0)));
    // a 10 s batch, the fake's requests taking 4 s each in turn: 3 fit (the
    // third with 2 s left), the other 2 are released untouched
    let report = relay.deliver_batch(&cfg, at(10)).await.expect("batch");
    assert_eq!((report.delivered, report.not_attempted), (3, 2));
    assert_eq!(
        *fake.timeouts.lock().expect("lock"),
        vec![
            Duration::from_secs(10),
            Duration::from_secs(6),
            Duration::from_secs(2)
        ],
        "each timeout is the destination's, cut to what is left of the batch"
    );
    let mut released = 0;
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        if r.status == OutboxStatus::Pending {
            released += 1;
            assert_eq!(
                (r.attempts, r.locked_by.as_deref()),
                (0, None),
                "not counted as an attempt"
            );
            assert_eq!(r.next_attempt_at, at(12), "due again at once");
        }
    }
    assert_eq!(released, 2);
}

async fn rows_for_an_unknown_destination_are_kept_and_retried() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let ids = enqueue(db.as_ref(), "o-8", 1, at(0)).await;
    let empty = HookboxConfig::parse("{}", "test").expect("config");
    let relay = relay(db.clone(), clock.clone(), "relay-a");
    assert_eq!(batch(&relay, &empty, &clock).await.retried, 1);
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!(
        (r.status, r.attempts, r.next_attempt_at),
        (OutboxStatus::Pending, 1, at(5))
    );
    assert!(
        r.last_error
            .unwrap_or_default()
            .contains("\"crm\" is not configured")
    );
}

/// Advances the manual clock instead of sleeping; adds a row on its first call.
#[derive(Debug)]
struct ClockPause {
    clock: Arc<ManualClock>,
    db: Arc<dyn Database>,
    calls: std::sync::Mutex<u32>,
}

#[async_trait]
impl Pause for ClockPause {
    async fn pause(&self, duration: Duration) {
        let first = {
            let mut calls = self.calls.lock().expect("lock");
            *calls += 1;
            *calls == 1
        };
        if first {
            enqueue(self.db.as_ref(), "late", 1, self.clock.now()).await;
        }
        self.clock
            .advance(chrono::Duration::from_std(duration).expect("duration"));
    }
}

async fn a_run_loops_until_its_deadline_and_delivers_rows_written_meanwhile() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    enqueue(db.as_ref(), "early", 2, at(0)).await;
    // an inbox row received at -30 and not processed yet: the inbox lag
    hookbox::inbox::insert_if_new(
        db.as_ref(),
        &hookbox::inbox::NewInboxEvent {
            partner: "acme".into(),
            event_id: "waiting".into(),
            event_id_derived: false,
            event_type: None,
            ordering_key: None,
            body: hookbox::inbox::Body::Inline(b"{}".to_vec()),
            headers: serde_json::json!({}),
            signature_verified: true,
        },
        at(-30),
    )
    .await
    .expect("inbox row");
    let mut settings = RelaySettings::new("relay-a");
    settings.lanes = 1; // one lane: one pause per idle second
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        settings,
    );
    let pause = ClockPause {
        clock: clock.clone(),
        db: db.clone(),
        calls: Default::default(),
    };
    let store = ConfigStore::fixed(cfg, clock.clone());
    let report = relay.run(&store, at(60), &pause).await;
    assert_eq!(report.errors, Vec::<String>::new());
    assert_eq!(
        report.deliveries.delivered, 3,
        "the row written during the run too"
    );
    // 1 s pauses from t=0 until the stop margin (5 s before the deadline)
    assert_eq!(*pause.calls.lock().expect("lock"), 55);
    assert_eq!(clock.now(), at(55));
    assert_eq!((report.pending, report.lag_seconds), (Some(0), Some(0.0)));
    let late = sink
        .requests()
        .iter()
        .filter(|r| r.json()["order_id"] == "late")
        .count();
    assert_eq!(late, 1);
    let m = report.metrics();
    assert_eq!(m.values("Delivered"), Some(&[3.0][..]));
    assert_eq!(m.values("OutboxPending"), Some(&[0.0][..]));
    assert_eq!(
        m.values("InboxLagSeconds"),
        Some(&[85.0][..]),
        "received at -30, the run ends at 55"
    );
    // per destination (issue 43): the configured destination's own set
    assert_eq!(report.destinations.keys().collect::<Vec<_>>(), ["crm"]);
    let crm = &report.destinations["crm"];
    assert_eq!((crm.delivered, crm.failed, crm.dead), (3, 0, 0));
    assert_eq!(crm.latencies_ms.len(), 3, "one latency per delivery");
    let per_destination = report.destination_metrics();
    assert_eq!(per_destination.len(), 1);
    let doc = per_destination[0].to_emf(0);
    assert_eq!(
        (doc["Destination"].as_str(), doc["Delivered"].as_f64()),
        (Some("crm"), Some(3.0))
    );
}

async fn retention_purges_old_finished_rows_in_bounded_batches(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    let old = enqueue(db.as_ref(), "old", 5, at(0)).await;
    let relay_ = relay(db.clone(), clock.clone(), "relay-a");
    assert_eq!(batch(&relay_, &cfg, &clock).await.delivered, 5);
    clock.set(at(0) + chrono::Duration::days(31));
    let fresh = enqueue(db.as_ref(), "new", 1, clock.now()).await;
    let mut settings = RelaySettings::new("relay-a");
    settings.purge_batch = 2;
    settings.purge_max_batches = 2;
    let purging = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        settings,
    );
    assert_eq!(
        purging.purge().await.expect("purge").outbox,
        4,
        "two batches of two"
    );
    assert_eq!(purging.purge().await.expect("purge").outbox, 1);
    assert_eq!(purging.purge().await.expect("purge").outbox, 0);
    for id in &old {
        assert!(outbox::get(db.as_ref(), *id).await.expect("get").is_none());
    }
    assert!(
        outbox::get(db.as_ref(), fresh[0])
            .await
            .expect("get")
            .is_some(),
        "pending rows stay"
    );
}

/// Destination `stuck` never answers: its requests end by their timeout
/// (as reqwest's would). Anything else is answered 200 at once.
/// One row due at 0 for each of `destinations` (a name twice: two rows),
/// each its own aggregate.
async fn enqueue_to(db: &dyn Database, destinations: impl IntoIterator<Item = String>) {
    let tx = db.begin().await.expect("begin");
    for (i, destination) in destinations.into_iter().enumerate() {
        let event = NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: format!("{destination}-{i}"),
            event_type: "order.status_changed".into(),
            destination,
            payload: serde_json::json!({ "n": i }),
        };
        outbox::enqueue(tx.as_ref(), &event, at(0))
            .await
            .expect("enqueue");
    }
    tx.commit().await.expect("commit");
}

/// One batch of `cfg`'s due rows, sent through `sender`.
async fn batch_through(
    db: Arc<dyn Database>,
    clock: &Arc<ManualClock>,
    settings: RelaySettings,
    sender: Arc<dyn WebhookSender>,
    cfg: &HookboxConfig,
) -> hookbox::relay::BatchReport {
    let relay = Relay::new(
        db,
        Arc::new(MemoryBlobStore::new()),
        sender,
        None,
        clock.clone(),
        settings,
    );
    relay
        .deliver_batch(cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect("batch")
}

async fn a_destination_with_hanging_requests_does_not_hold_the_batch() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let text = serde_json::json!({ "destinations": {
        "stuck": { "url": "http://127.0.0.1:9/stuck", "secrets": [SECRET],
                   "max_in_flight": 1, "timeout_secs": 2 },
        "crm": { "url": "http://127.0.0.1:9/crm", "secrets": [SECRET] },
    }})
    .to_string();
    let cfg = HookboxConfig::parse(&text, "test").expect("config");
    enqueue_to(
        db.as_ref(),
        ["stuck", "stuck", "stuck", "crm", "crm"].map(String::from),
    )
    .await;
    let fake = Arc::new(common::StuckPaths::default());
    let mut settings = RelaySettings::new("relay-a");
    // far shorter than the stuck request (2 s), so the other stuck rows
    // give up their wait for its only slot long before it ends
    settings.slot_wait = Duration::from_millis(100);
    let report = batch_through(db.clone(), &clock, settings, fake.clone(), &cfg).await;
    assert_eq!(report.delivered, 2, "crm is not held back");
    assert_eq!(report.retried, 1, "the one stuck request, timed out");
    assert_eq!(report.not_attempted, 2, "the other stuck rows, released");
    assert_eq!(
        fake.stuck_started.load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    let released: i64 = hookbox::store::fetch_one(
        db.as_ref(),
        &common::sql(
            "SELECT count(*) AS n FROM outbox WHERE destination = 'stuck' AND attempts = 0
                AND status = 'pending' AND locked_by IS NULL",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("count")
    .i64("n")
    .expect("n");
    assert_eq!(
        released, 2,
        "rows left unclaimed are not charged an attempt"
    );
}

/// Twelve destinations on one host (scheme, host and port), each allowed
/// 10 requests at once, get 4 at once together with `requests_per_host`
/// 4: the other rows give up their wait for the host's slots and are
/// released unattempted; a destination on another host is not held back.
async fn requests_to_one_host_are_bounded_whatever_the_destinations(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let mut destinations = serde_json::Map::new();
    for i in 0..12 {
        destinations.insert(
            format!("stuck{i}"),
            serde_json::json!({ "url": format!("http://127.0.0.1:9/stuck/{i}"),
                                "secrets": [SECRET], "max_in_flight": 10, "timeout_secs": 2 }),
        );
    }
    destinations.insert(
        "crm".into(),
        serde_json::json!({ "url": "http://127.0.0.2:9/crm", "secrets": [SECRET] }),
    );
    let text = serde_json::json!({ "destinations": destinations }).to_string();
    let cfg = HookboxConfig::parse(&text, "test").expect("config");
    let names = (0..12)
        .map(|i| format!("stuck{i}"))
        .chain(["crm".to_string(), "crm".to_string()]);
    enqueue_to(db.as_ref(), names).await;
    let fake = Arc::new(common::StuckPaths::default());
    let mut settings = RelaySettings::new("relay-a");
    assert_eq!(
        settings.requests_per_host,
        hookbox::relay::DEFAULT_REQUESTS_PER_HOST
    );
    settings.requests_per_host = 4;
    // far shorter than the stuck requests (2 s)
    settings.slot_wait = Duration::from_millis(100);
    let report = batch_through(db.clone(), &clock, settings, fake.clone(), &cfg).await;
    assert_eq!(
        fake.stuck_started.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "requests at once to 127.0.0.1:9"
    );
    assert_eq!(
        report.delivered, 2,
        "crm, on another host, is not held back"
    );
    assert_eq!(report.retried, 4, "the four stuck requests, timed out");
    assert_eq!(report.not_attempted, 8, "the other stuck rows, released");
}

async fn a_late_lane_records_nothing_over_a_newer_claim_of_the_same_relay() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), serde_json::json!({}));
    let ids = enqueue(db.as_ref(), "o-10", 1, at(0)).await;
    // lane 1 of relay-a claims and delivers, but its result is late...
    let lane1 = relay(
        Arc::new(FailsRecording::always(db.clone())),
        clock.clone(),
        "relay-a",
    );
    lane1
        .deliver_batch(&cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect_err("result not recorded yet");
    let late_token = row(db.as_ref(), ids[0]).await.locked_by.expect("leased");
    // ... its lease runs out and lane 2 of the same relay claims the row
    clock.advance(chrono::Duration::seconds(36));
    let lane2 = outbox::claim_due(
        db.as_ref(),
        outbox::ClaimRequest {
            worker: "relay-a/lane-2",
            now: clock.now(),
            lease_until: clock.now() + chrono::Duration::seconds(35),
            limit: 10,
            ordered_destinations: &[],
            destination_caps: &[],
        },
    )
    .await
    .expect("claim");
    assert_eq!(lane2.len(), 1);
    // lane 1's result finally arrives: it must not touch lane 2's lease
    let late = outbox::record_results(
        db.as_ref(),
        &late_token,
        clock.now(),
        &[outbox::DeliveryResult {
            id: ids[0],
            outcome: outbox::DeliveryOutcome::Dead,
            status_code: Some(500),
            error: Some("late".into()),
            attempt: None,
        }],
    )
    .await
    .expect("record");
    assert_eq!(late, 0, "a stale lane records nothing");
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!(
        (r.status, r.locked_by.as_deref()),
        (OutboxStatus::Pending, Some("relay-a/lane-2"))
    );
}

/// Answers 200, tracking how many requests are in flight at once; each
/// request is held until `gate` requests have been in flight together (so
/// overlapping lanes are observed whatever the scheduling).
#[derive(Debug, Default)]
struct ConcurrencyProbe {
    gate: usize,
    now: std::sync::atomic::AtomicUsize,
    max: std::sync::atomic::AtomicUsize,
    changed: tokio::sync::Notify,
}

#[async_trait]
impl WebhookSender for ConcurrencyProbe {
    async fn send(&self, _request: OutboundRequest<'_>) -> SendOutcome {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.now.fetch_add(1, SeqCst) + 1;
        self.max.fetch_max(now, SeqCst);
        self.changed.notify_waiters();
        loop {
            let notified = self.changed.notified();
            if self.max.load(SeqCst) >= self.gate {
                break;
            }
            notified.await;
        }
        // hold the slot a while: another lane that could send would do so now
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        self.now.fetch_sub(1, SeqCst);
        SendOutcome::Response {
            status: 200,
            retry_after: None,
            body_excerpt: String::new(),
        }
    }
}

async fn lanes_deliver_concurrently_but_share_each_destinations_in_flight_limit() {
    let (_t, db) = migrated_db(Adapter::Postgres).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    for a in 0..12 {
        enqueue(db.as_ref(), &format!("o-{a}"), 1, at(0)).await;
    }
    let deliver = |max_in_flight: usize, gate: usize| {
        let (db, clock) = (db.clone(), clock.clone());
        async move {
            let probe = Arc::new(ConcurrencyProbe {
                gate,
                ..ConcurrencyProbe::default()
            });
            let mut settings = RelaySettings::new("relay-a");
            settings.lanes = 3;
            settings.batch_size = 2;
            let relay = Relay::new(
                db,
                Arc::new(MemoryBlobStore::new()),
                probe.clone(),
                None,
                clock.clone(),
                settings,
            );
            let cfg = config(
                "http://127.0.0.1:9/unused",
                serde_json::json!({ "max_in_flight": max_in_flight }),
            );
            // a deadline only to fail instead of hanging if lanes never overlap
            let report = tokio::time::timeout(
                Duration::from_secs(60),
                relay.drain(&ConfigStore::fixed(cfg, clock)),
            )
            .await
            .expect("requests of several lanes were in flight together");
            (report, probe)
        }
    };
    let (report, probe) = deliver(1, 1).await;
    assert_eq!(report.deliveries.delivered, 12);
    assert!(
        report.batches >= 6 + 3,
        "batches of 2 plus one empty claim per lane"
    );
    assert_eq!(
        probe.max.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one request at a time across lanes"
    );

    for a in 0..12 {
        enqueue(db.as_ref(), &format!("p-{a}"), 1, at(0)).await;
    }
    // batches of 2: more than 2 requests at once means lanes overlapped
    let (report, probe) = deliver(10, 3).await;
    assert_eq!(report.deliveries.delivered, 12);
    assert!(probe.max.load(std::sync::atomic::Ordering::SeqCst) >= 3);
}

/// Panics on the payload of aggregate `o-bomb` (a bug in a sender, a
/// signer, a guard), answers 200 to the others.
#[derive(Debug)]
struct Bomb;

#[async_trait]
impl WebhookSender for Bomb {
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome {
        if request.body.contains("o-bomb") {
            panic!("sender bug on {}", request.headers.id);
        }
        SendOutcome::Response {
            status: 200,
            retry_after: None,
            body_excerpt: String::new(),
        }
    }
}

async fn a_delivery_that_panics_fails_only_its_own_row_then_is_dead_with_the_message(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let clock = Arc::new(ManualClock::new(at(0)));
    let cfg = config(
        "http://127.0.0.1:9/unused",
        serde_json::json!({ "max_attempts": 2, "backoff_secs": [5] }),
    );
    let bomb = enqueue(db.as_ref(), "o-bomb", 1, at(0)).await[0];
    let fine = enqueue(db.as_ref(), "o-fine", 2, at(0)).await;
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(Bomb),
        None,
        clock.clone(),
        RelaySettings::new("relay-a"),
    )
    .with_jitter(Arc::new(FixedJitter(0.0)));
    // before: the panic unwound through the batch and no row was recorded
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!((report.delivered, report.retried), (2, 1), "{report:?}");
    for id in &fine {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
    let r = row(db.as_ref(), bomb).await;
    assert_eq!((r.status, r.attempts), (OutboxStatus::Pending, 1));
    assert!(
        r.last_error
            .unwrap_or_default()
            .contains("the delivery panicked: sender bug on"),
        "the panic's message"
    );
    // the second attempt panics too: dead, with the message
    clock.advance(chrono::Duration::seconds(5));
    let report = batch(&relay, &cfg, &clock).await;
    assert_eq!(report.dead, 1, "{report:?}");
    let r = row(db.as_ref(), bomb).await;
    assert_eq!(r.status, OutboxStatus::Dead);
    assert!(
        r.last_error
            .unwrap_or_default()
            .starts_with("gave up after 2 attempts: the delivery panicked"),
    );
}

for_each_adapter!(
    a_delivery_that_panics_fails_only_its_own_row_then_is_dead_with_the_message,
    a_receiver_down_then_up_gets_every_row_under_one_webhook_id,
    gone_is_dead_at_once_and_reported,
    a_crash_after_the_post_delivers_again_with_the_same_webhook_id,
    a_lane_that_dies_before_recording_delivers_again_with_the_same_webhook_id,
    a_slow_configuration_refresh_never_costs_a_batch_its_results,
    a_failed_step_still_records_the_batch_it_carried,
    retention_purges_old_finished_rows_in_bounded_batches,
    requests_to_one_host_are_bounded_whatever_the_destinations,
);

macro_rules! postgres_only {
    ($($name:ident),* $(,)?) => {
        mod postgres_only {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name().await
                }
            )*
        }
    };
}

postgres_only!(
    deliveries_are_signed_posts_that_the_shared_verifier_accepts,
    retry_after_is_honoured_within_one_to_two_times_the_schedule,
    backoff_follows_the_schedule_with_jitter_and_ends_dead_with_the_last_error,
    two_relays_at_once_never_deliver_the_same_row_twice,
    an_ordered_destination_keeps_each_aggregate_in_order_while_others_proceed,
    the_ssrf_guard_refuses_a_loopback_name_unless_allowed,
    no_request_outlives_its_batch_and_late_rows_are_released_unattempted,
    rows_for_an_unknown_destination_are_kept_and_retried,
    a_run_loops_until_its_deadline_and_delivers_rows_written_meanwhile,
    lanes_deliver_concurrently_but_share_each_destinations_in_flight_limit,
    a_late_lane_records_nothing_over_a_newer_claim_of_the_same_relay,
    a_destination_with_hanging_requests_does_not_hold_the_batch,
);
