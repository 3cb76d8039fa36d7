//! The relay Lambda against real PostgreSQL, the moto SQS emulator and a
//! local HTTP sink (127.0.0.1), with the processor Lambda consuming what the
//! sweeper enqueues, as the event source mapping would. Time is a manual
//! clock: the run's pauses advance it instead of sleeping.

#[path = "../../../shared/tests/processing_support/mod.rs"]
mod processing_support;

use std::sync::Arc;

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::example::OrdersHandler;
use hookbox::inbox::{self, InboxMessage, InboxStatus};
use hookbox::processing::ProcessorConfig;
use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{Queue, QueueConsumer, Received};
use hookbox::relay::{HttpSender, ManualPause, Relay, RelaySettings};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement, fetch_one};
use hookbox_processor::{ProcessorFunction, sqs_event};
use hookbox_relay::RelayFunction;
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::{TestDb, moto};
use lambda_runtime::{Context, LambdaEvent};
use processing_support::{DESTINATION, new_event, order_body, t0};
use uuid::Uuid;

const SCHEDULE: &str = include_str!("../../../events/eventbridge-schedule.json");

struct Env {
    _test_db: TestDb,
    db: Arc<dyn Database>,
    sqs: SqsQueue,
    clock: Arc<ManualClock>,
    sink: HttpSink,
    relay: RelayFunction,
    processor: ProcessorFunction,
}

async fn env() -> Env {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let endpoint = moto::endpoint();
    let names = moto::create_queue(&endpoint, &moto::unique_name("relay"), 0, 4).await;
    let sqs = SqsQueue::new(SqsQueue::local_client(&endpoint), names.url.clone());
    let clock = Arc::new(ManualClock::new(t0()));
    let sink = HttpSink::start().await;
    let config = HookboxConfig::parse(
        &serde_json::json!({ "destinations": { DESTINATION: {
            "url": sink.url("/erp"),
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="],
            "allowed_networks": ["127.0.0.0/8"],
        }}})
        .to_string(),
        "test",
    )
    .expect("config");
    // one lane: the pauses move the shared manual clock, and with several
    // lanes pausing at once it would outrun a lane whose (real) HTTP request
    // is still in flight, expiring its lease in manual time
    let mut settings = RelaySettings::new("relay-test");
    settings.lanes = 1;
    let relay = Relay::new(
        db.clone(),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        Some(Arc::new(sqs.clone()) as Arc<dyn Queue>),
        clock.clone(),
        settings,
    );
    let relay = RelayFunction::new(
        relay,
        Arc::new(ConfigStore::fixed(config, clock.clone())),
        clock.clone(),
        Arc::new(ManualPause(clock.clone())),
    );
    let processor = ProcessorFunction::new(
        db.clone(),
        Arc::new(sqs.clone()),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        clock.clone(),
        Arc::new(OrdersHandler::new(DESTINATION)),
        ProcessorConfig::default(),
    );
    Env {
        _test_db: test_db,
        db,
        sqs,
        clock,
        sink,
        relay,
        processor,
    }
}

impl Env {
    /// One scheduled invocation with a minute to run.
    async fn relay_run(&self) -> serde_json::Value {
        let event: CloudWatchEvent = serde_json::from_str(SCHEDULE).expect("schedule event");
        let mut context = Context::default();
        context.deadline = (self.clock.now() + chrono::Duration::seconds(60))
            .timestamp_millis()
            .try_into()
            .expect("positive");
        self.relay.handle(LambdaEvent::new(event, context)).await
    }

    /// The event source mapping: receive, handle, delete the successes.
    /// Returns how many messages were received.
    async fn process_queue(&self) -> usize {
        let got = self.sqs.receive(10).await.expect("receive");
        if got.is_empty() {
            return 0;
        }
        let response = self
            .processor
            .handle(LambdaEvent::new(sqs_event(&got), Context::default()))
            .await;
        for m in &got {
            if !response
                .batch_item_failures
                .iter()
                .any(|f| f.item_identifier == m.message_id)
            {
                self.sqs.delete(&m.receipt_handle).await.expect("delete");
            }
        }
        got.len()
    }

    async fn count(&self, sql: &'static str) -> i64 {
        fetch_one(
            self.db.as_ref(),
            &Statement::new("test.count", sql),
            &hookbox::params! {},
        )
        .await
        .expect("count")
        .i64("n")
        .expect("n")
    }

    async fn status(&self, id: Uuid) -> InboxStatus {
        inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
            .status
    }

    async fn order_status(&self, order_id: &str) -> String {
        let sql: &'static str = Box::leak(
            format!("SELECT status FROM example_orders WHERE order_id = '{order_id}'")
                .into_boxed_str(),
        );
        fetch_one(
            self.db.as_ref(),
            &Statement::new("test.order", sql),
            &hookbox::params! {},
        )
        .await
        .expect("order")
        .text("status")
        .expect("status")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_row_whose_message_was_lost_is_swept_to_sqs_and_processed_once() {
    let e = env().await;
    // stored by ingest, but its message never reached the queue
    let id = inbox::insert_if_new(
        e.db.as_ref(),
        &new_event(
            "evt-1",
            "payment.received",
            order_body("payment.received", "o-1"),
        ),
        e.clock.now(),
    )
    .await
    .expect("insert")
    .id();

    // not overdue yet: nothing swept
    let summary = e.relay_run().await;
    assert_eq!(summary["swept"], 0, "{summary}");
    assert_eq!(e.process_queue().await, 0);

    // overdue by more than 5 minutes: swept once, processed once
    e.clock.set(t0() + chrono::Duration::seconds(301));
    let summary = e.relay_run().await;
    assert_eq!(summary["swept"], 1, "{summary}");
    assert_eq!(summary["errors"], serde_json::json!([]));
    let row = inbox::get(e.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert!(row.enqueued_at.is_some(), "the sweep is recorded");
    assert_eq!(e.process_queue().await, 1);
    assert_eq!(e.status(id).await, InboxStatus::Processed);
    assert_eq!(e.order_status("o-1").await, "paid");
    assert_eq!(
        e.count("SELECT count(*) AS n FROM example_order_transitions")
            .await,
        1,
        "one business effect"
    );

    // the next run delivers the transition's outbox row, and sweeps nothing
    e.clock.advance(chrono::Duration::seconds(600));
    let summary = e.relay_run().await;
    assert_eq!(
        (summary["swept"].as_u64(), summary["delivered"].as_u64()),
        (Some(0), Some(1)),
        "{summary}"
    );
    assert_eq!(summary["pending"], 0);
    let delivered = e.sink.wait_for(1).await;
    assert_eq!(delivered[0].json()["order_id"], "o-1");
    assert_eq!(e.process_queue().await, 0, "nothing enqueued twice");
    assert_eq!(
        e.count("SELECT count(*) AS n FROM example_order_transitions")
            .await,
        1
    );
}

/// The processor acknowledges a deferral on the queue's last receive (so it
/// does not die in the DLQ while its prerequisite is on its way); the
/// sweeper brings it back once overdue and the order converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferral_acknowledged_on_the_last_receive_is_swept_back_and_converges() {
    let e = env().await;
    let shipped = inbox::insert_if_new(
        e.db.as_ref(),
        &new_event(
            "evt-ship",
            "order.shipped",
            order_body("order.shipped", "o-2"),
        ),
        e.clock.now(),
    )
    .await
    .expect("insert")
    .id();
    // its 4th receive (= maxReceiveCount), the order is not paid yet
    let last = Received {
        message_id: "m-last".into(),
        receipt_handle: String::new(),
        body: InboxMessage::stored(shipped, processing_support::PARTNER, "evt-ship")
            .to_body()
            .expect("body"),
        receive_count: 4,
        sent_at: e.clock.now(),
        trace_header: None,
    };
    let response = e
        .processor
        .handle(LambdaEvent::new(sqs_event(&[last]), Context::default()))
        .await;
    assert!(
        response.batch_item_failures.is_empty(),
        "acknowledged: {response:?}"
    );
    assert_eq!(e.status(shipped).await, InboxStatus::Deferred);

    // the payment arrives and is processed
    let paid = inbox::insert_if_new(
        e.db.as_ref(),
        &new_event(
            "evt-pay",
            "payment.received",
            order_body("payment.received", "o-2"),
        ),
        e.clock.now(),
    )
    .await
    .expect("insert")
    .id();
    e.sqs
        .send(
            &InboxMessage::stored(paid, processing_support::PARTNER, "evt-pay")
                .to_body()
                .expect("body"),
        )
        .await
        .expect("send");
    assert_eq!(e.process_queue().await, 1);
    assert_eq!(e.order_status("o-2").await, "paid");

    // much later the sweeper finds the deferred row overdue and enqueues it
    e.clock.advance(chrono::Duration::hours(1));
    let summary = e.relay_run().await;
    assert_eq!(summary["swept"], 1, "{summary}");
    assert_eq!(e.process_queue().await, 1);
    assert_eq!(e.status(shipped).await, InboxStatus::Processed);
    assert_eq!(e.order_status("o-2").await, "shipped");
    assert_eq!(
        e.count("SELECT count(*) AS n FROM outbox").await,
        2,
        "one outbox row per transition"
    );
}
