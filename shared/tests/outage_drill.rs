//! Outage drills (hostile-input issue, acceptance 2), against real
//! PostgreSQL (a private cluster the drill kills and restarts) and moto SQS
//! on the drill's clock ([`ClockedMoto`]: delays, visibility timeouts and
//! redrives follow the same injected clock as ingest and the processor),
//! through both database adapters:
//!
//! - the database down for two hours while signed webhooks keep arriving:
//!   every 202 ends processed exactly once after it returns, no message
//!   reaches the DLQ, and the outage uses none of a stored event's retries;
//! - the queue down: each webhook gets 200 (stored; the sweeper enqueues it
//!   later) or, with the database down too, 503 (the partner retries);
//!   nothing accepted is lost.

mod common;
mod processing_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use common::{Adapter, KillableDb, killable_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest};
use hookbox::metrics::Metrics;
use hookbox::params;
use hookbox::processing::{Processor, ProcessorConfig};
use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{Queue, QueueConsumer};
use hookbox::relay::{HttpSender, Relay, RelaySettings};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::{Database, fetch_one};
use hookbox_testkit::moto::{self, ClockedMoto, TestQueue};
use processing_support::{ScriptedHandler, order_body, t0};

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";
const PARTNER: &str = "shop";
/// The template's `MaxReceiveCount`.
const MAX_RECEIVE_COUNT: u32 = 4;
/// The queue's visibility timeout (seconds).
const VISIBILITY_S: u32 = 30;

/// Ingest, the processor and the sweeper on one clock, one database and one
/// moto queue, as the functions are wired in AWS.
struct Drill {
    db: KillableDb,
    moto: ClockedMoto,
    queue_urls: TestQueue,
    queue: Arc<SqsQueue>,
    ingest: Ingest,
    clock: Arc<ManualClock>,
    blobs: Arc<MemoryBlobStore>,
    handler: ScriptedHandler,
    config: ProcessorConfig,
    /// Event id → the status ingest answered.
    answers: BTreeMap<String, u16>,
}

fn ingest_for(
    db: &Arc<dyn Database>,
    queue: &Arc<SqsQueue>,
    blobs: &Arc<MemoryBlobStore>,
    clock: &Arc<ManualClock>,
) -> Ingest {
    let config = serde_json::json!({"partners": {
        PARTNER: {
            "signature": {"scheme": "standard-webhooks"},
            "secrets": [SECRET],
            "event_id": {"header": "webhook-id"},
            "event_type": "/type"
        }
    }});
    let config = HookboxConfig::parse(&config.to_string(), "drill").expect("config");
    Ingest::new(
        Arc::new(ConfigStore::fixed(config, clock.clone())),
        db.clone(),
        queue.clone(),
        blobs.clone(),
        clock.clone(),
    )
    .with_db_deadline(Duration::from_secs(2))
}

impl Drill {
    async fn new(adapter: Adapter) -> Drill {
        let db = killable_db(adapter).await;
        let moto = ClockedMoto::start();
        let (queue_urls, queue) = Self::queue_on(&moto).await;
        let clock = Arc::new(ManualClock::new(t0()));
        let blobs = Arc::new(MemoryBlobStore::new());
        let ingest = ingest_for(&db.db, &queue, &blobs, &clock);
        Drill {
            db,
            moto,
            queue_urls,
            queue,
            ingest,
            clock,
            blobs,
            handler: ScriptedHandler::default(),
            config: ProcessorConfig {
                max_receive_count: MAX_RECEIVE_COUNT,
                ..ProcessorConfig::default()
            },
            answers: BTreeMap::new(),
        }
    }

    async fn queue_on(moto: &ClockedMoto) -> (TestQueue, Arc<SqsQueue>) {
        let urls = moto::create_queue(
            moto.endpoint(),
            &moto::unique_name("drill"),
            VISIBILITY_S,
            MAX_RECEIVE_COUNT,
        )
        .await;
        let queue = SqsQueue::new(SqsQueue::local_client(moto.endpoint()), urls.url.clone());
        (urls, Arc::new(queue))
    }

    /// Moves the drill's clock and moto's together.
    fn advance(&self, seconds: i64) {
        self.clock.advance(TimeDelta::seconds(seconds));
        self.moto.advance(Duration::from_secs(
            u64::try_from(seconds).expect("forward"),
        ));
    }

    /// A partner sends (or resends) webhook `event_id`, signed now; returns
    /// the status ingest answers and keeps the last one.
    async fn webhook(&mut self, event_id: &str) -> u16 {
        let body = order_body("payment.received", &format!("order-{event_id}"));
        let signed =
            sign_standard_webhooks(event_id, self.clock.now(), &body, &[Secret::new(SECRET)])
                .expect("sign");
        let pairs = [
            ("webhook-id", signed.id.as_str()),
            ("webhook-timestamp", signed.timestamp.as_str()),
            ("webhook-signature", signed.signature.as_str()),
            ("content-type", "application/json"),
        ];
        let request = IngestRequest {
            partner: PARTNER,
            headers: Headers::from_pairs(pairs),
            body: &body,
            url: None,
        };
        let response = self.ingest.handle(&request, &mut Metrics::new()).await;
        assert!(
            matches!(response.status, 200 | 202 | 503),
            "{event_id}: {response:?}"
        );
        self.answers.insert(event_id.to_owned(), response.status);
        response.status
    }

    /// What the Lambda event source does while messages are visible:
    /// receive up to 10, run the processor, delete those not reported
    /// failed. Returns how many messages it received.
    async fn poll(&self) -> usize {
        let processor = Processor {
            db: self.db.db.as_ref(),
            queue: self.queue.as_ref(),
            blobs: self.blobs.as_ref(),
            clock: self.clock.as_ref(),
            handler: &self.handler,
            config: &self.config,
        };
        let mut received = 0;
        // bounded: a message handled here is deleted, requeued with a delay
        // or made invisible, so the queue empties within a few batches
        for _ in 0..100 {
            let got = self.queue.receive(10).await.expect("receive");
            if got.is_empty() {
                return received;
            }
            received += got.len();
            let report = processor.process_batch(&got, None).await;
            let retry = report.retry_message_ids();
            for m in &got {
                if !retry.contains(&m.message_id) {
                    self.queue.delete(&m.receipt_handle).await.expect("delete");
                }
            }
        }
        panic!("the queue never emptied: a message is redelivered at once");
    }

    /// Rows per event id, and their statuses.
    async fn rows(&self) -> BTreeMap<String, Vec<String>> {
        let rows = self
            .db
            .db
            .execute(
                &sql("SELECT event_id, status FROM inbox ORDER BY event_id"),
                &params! {},
            )
            .await
            .expect("rows");
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in &rows.rows {
            out.entry(r.text("event_id").expect("event_id"))
                .or_default()
                .push(r.text("status").expect("status"));
        }
        out
    }

    /// Every accepted (2xx) webhook: one row, processed, its business effect
    /// applied once. Nothing in the DLQ.
    async fn assert_nothing_lost_nothing_twice(&self) {
        let rows = self.rows().await;
        let accepted: Vec<&String> = self
            .answers
            .iter()
            .filter(|(_, s)| matches!(**s, 200 | 202))
            .map(|(id, _)| id)
            .collect();
        assert!(!accepted.is_empty());
        for id in &accepted {
            assert_eq!(
                rows.get(*id).map(Vec::as_slice),
                Some(&["processed".to_owned()][..]),
                "{id}: one row, processed"
            );
            assert_eq!(self.handler.calls(id), 1, "{id}: applied once");
        }
        assert_eq!(
            rows.len(),
            accepted.len(),
            "no row but for an accepted webhook"
        );
        let transitions = fetch_one(
            self.db.db.as_ref(),
            &sql("SELECT count(*) AS n FROM example_order_transitions"),
            &params! {},
        )
        .await
        .expect("count")
        .i64("n")
        .expect("n");
        assert_eq!(transitions, accepted.len() as i64, "each effect once");
        self.assert_dlq_empty().await;
    }

    async fn assert_dlq_empty(&self) {
        let dlq = SqsQueue::new(
            SqsQueue::local_client(self.moto.endpoint()),
            self.queue_urls.dlq_url.clone(),
        );
        let dead = dlq.receive(10).await.expect("receive the DLQ");
        let bodies: Vec<String> = dead
            .iter()
            .map(|m| m.body.chars().take(100).collect())
            .collect();
        assert!(bodies.is_empty(), "in the DLQ: {bodies:#?}");
    }
}

/// The database down for two hours while webhooks keep arriving, one every
/// four minutes (all spooled: 202), the event source polling every two.
async fn a_two_hour_database_outage_loses_nothing_and_applies_nothing_twice(adapter: Adapter) {
    let mut d = Drill::new(adapter).await;
    assert_eq!(
        d.webhook("evt-before").await,
        200,
        "stored before the outage"
    );

    d.db.cluster.kill().expect("kill PostgreSQL");
    let mut spooled = 0;
    for step in 0..60 {
        if step % 2 == 0 {
            assert_eq!(d.webhook(&format!("evt-{step:03}")).await, 202, "spooled");
            spooled += 1;
        }
        d.poll().await;
        d.advance(120);
    }
    assert_eq!(spooled, 30);
    // two hours in: everything still circulates, nothing went to the DLQ
    d.assert_dlq_empty().await;

    d.db.cluster.restart().expect("restart PostgreSQL");
    // the requeued messages are due within 15 minutes
    for _ in 0..10 {
        d.poll().await;
        d.advance(120);
    }
    d.assert_nothing_lost_nothing_twice().await;
    let attempts = fetch_one(
        d.db.db.as_ref(),
        &sql("SELECT attempts FROM inbox WHERE event_id = 'evt-before'"),
        &params! {},
    )
    .await
    .expect("row")
    .i64("attempts")
    .expect("attempts");
    assert_eq!(attempts, 1, "the outage used none of its retries");
}

/// The queue down: 200 while the database takes the row (the sweeper
/// enqueues it once a queue answers), 503 when the database is down too
/// (the partner resends later). The queue comes back empty: even messages
/// it lost are recovered from the rows.
async fn a_queue_outage_answers_503_or_stores_and_loses_nothing(adapter: Adapter) {
    let mut d = Drill::new(adapter).await;
    assert_eq!(d.webhook("evt-queued").await, 200, "stored and enqueued");

    d.moto.kill();
    assert_eq!(
        d.webhook("evt-stored").await,
        200,
        "stored; the send failed"
    );
    d.db.cluster.kill().expect("kill PostgreSQL");
    assert_eq!(d.webhook("evt-refused").await, 503, "nowhere to put it");

    // both back; the new queue has none of the old messages
    d.db.cluster.restart().expect("restart PostgreSQL");
    d.moto = ClockedMoto::start();
    let (urls, queue) = Drill::queue_on(&d.moto).await;
    d.queue_urls = urls;
    d.queue = queue;
    d.ingest = ingest_for(&d.db.db, &d.queue, &d.blobs, &d.clock);
    assert_eq!(d.webhook("evt-refused").await, 200, "the partner's resend");

    let relay = Relay::new(
        d.db.db.clone(),
        d.blobs.clone(),
        Arc::new(HttpSender::default()),
        Some(d.queue.clone() as Arc<dyn Queue>),
        d.clock.clone(),
        RelaySettings::new("drill-relay"),
    );
    d.advance(301);
    let swept = relay.sweep().await.expect("sweep");
    assert!(
        swept.swept >= 1,
        "the rows whose message never left: {swept:?}"
    );
    for _ in 0..3 {
        d.poll().await;
        d.advance(120);
    }
    d.assert_nothing_lost_nothing_twice().await;
}

for_each_adapter!(
    a_two_hour_database_outage_loses_nothing_and_applies_nothing_twice,
    a_queue_outage_answers_503_or_stores_and_loses_nothing,
);
