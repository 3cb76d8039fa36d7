//! The processor Lambda against real PostgreSQL (direct adapter) and the
//! moto SQS emulator with a real RedrivePolicy. Each test plays the event
//! source mapping as Lambda does: receive up to 10 messages → handler →
//! delete the messages not named in `batchItemFailures`.
//!
//! The test queues have a visibility timeout of 0: a received message is
//! visible again at once unless the processor changes its visibility, so an
//! empty receive right after the handler proves the backoff reached SQS.
//! "Time passing" is played by `change_visibility(0)` and by moving the
//! manual clock (the database's notion of time); nothing sleeps.

#[path = "../../../shared/tests/processing_support/mod.rs"]
mod processing_support;

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use hookbox::clock::{Clock, ManualClock};
use hookbox::example::{self, OrderStatus, STATUS_CHANGED};
use hookbox::inbox::{self, InboxMessage, InboxStatus};
use hookbox::processing::{
    self, BatchReport, BusinessHandler, MessageOutcome, ProcessorConfig, ReplayOutcome,
};
use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{Queue, QueueConsumer, Received};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement, fetch_one};
use hookbox_processor::{ProcessorFunction, sqs_event};
use hookbox_testkit::{TestDb, moto};
use lambda_runtime::{Context, LambdaEvent};
use processing_support::{
    PARTNER, RecordingQueue, Script, ScriptedHandler, new_event, order_body, t0,
};
use uuid::Uuid;

struct Env {
    _test_db: TestDb,
    db: Arc<dyn Database>,
    sqs: SqsQueue,
    dlq: SqsQueue,
    queue: Arc<RecordingQueue<SqsQueue>>,
    handler: Arc<ScriptedHandler>,
    clock: Arc<ManualClock>,
    function: ProcessorFunction,
}

/// A migrated database, a moto queue (visibility 0, maxReceiveCount 4,
/// with its DLQ) and the function over them.
async fn env() -> Env {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let endpoint = moto::endpoint();
    let names = moto::create_queue(&endpoint, &moto::unique_name("processor"), 0, 4).await;
    let sqs = SqsQueue::new(SqsQueue::local_client(&endpoint), names.url.clone());
    let dlq = SqsQueue::new(SqsQueue::local_client(&endpoint), names.dlq_url.clone());
    let queue = Arc::new(RecordingQueue::new(sqs.clone()));
    let handler = Arc::new(ScriptedHandler::default());
    let clock = Arc::new(ManualClock::new(t0()));
    let function = ProcessorFunction::new(
        db.clone(),
        queue.clone(),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        clock.clone(),
        handler.clone() as Arc<dyn BusinessHandler>,
        ProcessorConfig::default(),
    );
    Env {
        _test_db: test_db,
        db,
        sqs,
        dlq,
        queue,
        handler,
        clock,
        function,
    }
}

fn failed_ids(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

struct Invocation {
    got: Vec<Received>,
    response: SqsBatchResponse,
    report: BatchReport,
}

impl Invocation {
    fn outcomes(&self) -> Vec<&'static str> {
        self.report
            .results
            .iter()
            .map(|r| r.outcome.kind())
            .collect()
    }
}

impl Env {
    /// What ingest does: store the event, send its message.
    async fn ingest(&self, event_id: &str, event_type: &str, body: Vec<u8>) -> Uuid {
        let id = inbox::insert_if_new(
            self.db.as_ref(),
            &new_event(event_id, event_type, body),
            self.clock.now(),
        )
        .await
        .expect("insert")
        .id();
        self.send(&InboxMessage::stored(id, PARTNER, event_id))
            .await;
        id
    }

    async fn ingest_order(&self, event_id: &str, event_type: &str, order_id: &str) -> Uuid {
        self.ingest(event_id, event_type, order_body(event_type, order_id))
            .await
    }

    async fn send(&self, message: &InboxMessage) {
        self.sqs
            .send(&message.to_body().expect("body"))
            .await
            .expect("send");
    }

    /// Receives what is visible (one receive, up to 10) and invokes the handler.
    async fn receive_and_handle(&self) -> Invocation {
        let got = self.sqs.receive(10).await.expect("receive");
        let (response, report) = self
            .function
            .handle_with_report(LambdaEvent::new(sqs_event(&got), Context::default()))
            .await;
        Invocation {
            got,
            response,
            report,
        }
    }

    /// The event source mapping: receive, handle, delete the successes.
    async fn invoke(&self) -> Invocation {
        let invocation = self.receive_and_handle().await;
        let failed = failed_ids(&invocation.response);
        for m in &invocation.got {
            if !failed.contains(&m.message_id) {
                self.sqs.delete(&m.receipt_handle).await.expect("delete");
            }
        }
        invocation
    }

    /// Lets time pass for a message left invisible by the processor.
    async fn make_visible(&self, message: &Received, seconds: i64) {
        self.sqs
            .change_visibility(&message.receipt_handle, Duration::ZERO)
            .await
            .expect("make visible");
        self.clock.advance(chrono::Duration::seconds(seconds));
    }

    async fn count(&self, table: &str) -> i64 {
        let sql: &'static str =
            Box::leak(format!("SELECT count(*) AS n FROM {table}").into_boxed_str());
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

    async fn row(&self, id: Uuid) -> inbox::InboxRow {
        inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }

    async fn assert_queue_empty(&self) {
        assert!(
            self.sqs.receive(10).await.expect("receive").is_empty(),
            "every message was deleted"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_before_paid_converges_to_shipped_with_exactly_one_outbox_row_per_transition() {
    let e = env().await;
    let shipped = e.ingest_order("evt-ship", "order.shipped", "o-1").await;
    let first = e.invoke().await;
    assert_eq!(first.outcomes(), ["deferred"]);
    assert_eq!(
        failed_ids(&first.response),
        [first.got[0].message_id.clone()]
    );
    assert_eq!(e.queue.delays(), [60]);
    assert_eq!(e.row(shipped).await.status, InboxStatus::Deferred);
    assert_eq!(e.count("outbox").await, 0);

    // the prerequisite arrives while the deferred message is invisible
    e.clock.advance(chrono::Duration::seconds(5));
    let paid = e.ingest_order("evt-pay", "payment.received", "o-1").await;
    let second = e.invoke().await;
    assert_eq!(
        second.got.len(),
        1,
        "the deferred message is invisible in SQS"
    );
    assert_eq!(second.outcomes(), ["processed"]);
    assert!(second.response.batch_item_failures.is_empty());

    // its backoff over, the deferred event is retried and converges
    e.make_visible(&first.got[0], 55).await;
    let third = e.invoke().await;
    assert_eq!(third.got.len(), 1);
    assert_eq!(third.got[0].receive_count, 2);
    assert_eq!(third.outcomes(), ["processed"]);
    e.assert_queue_empty().await;

    let order = example::get_order(e.db.as_ref(), "o-1")
        .await
        .expect("get")
        .expect("order");
    assert_eq!(order.status, OrderStatus::Shipped);
    let history = example::transitions(e.db.as_ref(), "o-1")
        .await
        .expect("history");
    assert_eq!(
        history
            .iter()
            .map(|t| (t.from, t.to, t.inbox_id))
            .collect::<Vec<_>>(),
        [
            (None, OrderStatus::Paid, paid),
            (Some(OrderStatus::Paid), OrderStatus::Shipped, shipped)
        ]
    );
    assert_eq!(
        e.count("outbox").await,
        2,
        "exactly one outbox row per transition"
    );
    assert_eq!(
        e.count(&format!(
            "outbox WHERE event_type = '{STATUS_CHANGED}' AND aggregate_id = 'o-1'"
        ))
        .await,
        2
    );

    // partner retries reach the queue again: nothing changes
    e.send(&InboxMessage::stored(paid, PARTNER, "evt-pay"))
        .await;
    e.send(&InboxMessage::stored(shipped, PARTNER, "evt-ship"))
        .await;
    let again = e.invoke().await;
    assert_eq!(again.outcomes(), ["already_finished", "already_finished"]);
    assert_eq!(e.count("outbox").await, 2);
    assert_eq!(e.count("example_order_transitions").await, 2);
    e.assert_queue_empty().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_pill_is_quarantined_after_one_attempt_and_the_other_nine_of_its_batch_are_processed()
 {
    let e = env().await;
    let mut good = Vec::new();
    for i in 0..9 {
        if i == 4 {
            // in the middle of the batch
            e.ingest(
                "evt-poison",
                "payment.received",
                b"<xml>not json</xml>".to_vec(),
            )
            .await;
        }
        good.push(
            e.ingest_order(&format!("evt-{i}"), "payment.received", &format!("o-{i}"))
                .await,
        );
    }
    let batch = e.invoke().await;
    assert_eq!(batch.got.len(), 10, "one batch of ten");
    assert!(
        batch.response.batch_item_failures.is_empty(),
        "{:?}",
        batch.response
    );
    assert_eq!(
        batch.outcomes(),
        [
            "processed",
            "processed",
            "processed",
            "processed",
            "quarantined",
            "processed",
            "processed",
            "processed",
            "processed",
            "processed"
        ]
    );
    e.assert_queue_empty().await;
    let poison = e.row(batch.report.results[4].inbox_id.expect("row")).await;
    assert_eq!(poison.status, InboxStatus::Quarantined);
    assert_eq!(poison.attempts, 1, "quarantined after one attempt");
    assert!(
        poison
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("shop/evt-poison is not the expected JSON")),
        "{:?}",
        poison.last_error
    );
    for id in good {
        assert_eq!(e.row(id).await.status, InboxStatus::Processed);
    }
    assert_eq!(e.count("outbox").await, 9);
    assert!(e.queue.changes().is_empty(), "no backoff in this batch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visibility_follows_the_schedule_and_a_message_that_always_fails_ends_in_the_dlq_with_its_row_dead()
 {
    let e = env().await;
    let id = e.ingest_order("evt-1", "payment.received", "o-1").await;
    e.handler
        .script("evt-1", Script::Retry("ERP answered 503".into()));
    let mut message_id = String::new();
    for (attempt, delay) in [(1_u32, 60_u64), (2, 300), (3, 900)] {
        let inv = e.invoke().await;
        assert_eq!(inv.got.len(), 1, "attempt {attempt}");
        assert_eq!(inv.got[0].receive_count, attempt);
        message_id.clone_from(&inv.got[0].message_id);
        assert_eq!(failed_ids(&inv.response), [message_id.clone()]);
        assert_eq!(
            inv.report.results[0].outcome,
            MessageOutcome::Retried {
                error: "ERP answered 503".into(),
                delay: Duration::from_secs(delay),
            }
        );
        assert_eq!(
            e.queue.changes().last(),
            Some(&(
                inv.got[0].receipt_handle.clone(),
                Duration::from_secs(delay)
            ))
        );
        // SQS honoured it: the message is not visible now
        assert!(e.sqs.receive(10).await.expect("receive").is_empty());
        let row = e.row(id).await;
        assert_eq!(row.status, InboxStatus::Pending);
        assert_eq!(
            row.next_attempt_at,
            Some(e.clock.now() + chrono::Duration::seconds(delay as i64))
        );
        e.make_visible(&inv.got[0], delay as i64).await;
    }
    assert_eq!(e.queue.delays(), [60, 300, 900]);

    // receive 4 = maxReceiveCount: the row is dead with its last error, the
    // message is reported failed and SQS dead-letters it on the next receive
    let last = e.invoke().await;
    assert_eq!(last.got[0].receive_count, 4);
    assert_eq!(failed_ids(&last.response), [message_id.clone()]);
    assert_eq!(
        last.report.results[0].outcome,
        MessageOutcome::Dead {
            error: "ERP answered 503".into()
        }
    );
    let dead = e.row(id).await;
    assert_eq!(dead.status, InboxStatus::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("ERP answered 503"));
    assert_eq!(dead.attempts, 4);

    assert!(
        e.sqs.receive(10).await.expect("receive").is_empty(),
        "moved to the DLQ on this receive"
    );
    let dead_letters = e.dlq.receive(10).await.expect("dlq");
    assert_eq!(dead_letters.len(), 1);
    assert_eq!(
        InboxMessage::from_body(&dead_letters[0].body).expect("body"),
        InboxMessage::stored(id, PARTNER, "evt-1")
    );
    assert_eq!(e.count("outbox").await, 0);
    assert_eq!(e.handler.calls("evt-1"), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_after_a_crash_past_the_commit_acknowledges_without_a_second_effect() {
    let e = env().await;
    for i in 0..3 {
        e.ingest_order(&format!("evt-{i}"), "payment.received", &format!("o-{i}"))
            .await;
    }
    // the invocation commits, then "dies" before returning: nothing deleted
    let crashed = e.receive_and_handle().await;
    assert_eq!(crashed.outcomes(), ["processed", "processed", "processed"]);
    assert_eq!(e.count("example_order_transitions").await, 3);

    // the visibility timeout (0 here) expires: SQS delivers them again
    e.clock.advance(chrono::Duration::seconds(30));
    let redelivery = e.invoke().await;
    assert_eq!(redelivery.got.len(), 3);
    assert!(redelivery.got.iter().all(|m| m.receive_count == 2));
    assert_eq!(
        redelivery.outcomes(),
        ["already_finished", "already_finished", "already_finished"]
    );
    assert!(redelivery.response.batch_item_failures.is_empty());
    e.assert_queue_empty().await;
    for i in 0..3 {
        assert_eq!(
            e.handler.calls(&format!("evt-{i}")),
            1,
            "business code ran once"
        );
    }
    assert_eq!(
        e.count("example_order_transitions").await,
        3,
        "no second effect"
    );
    assert_eq!(e.count("example_orders").await, 3);
    assert_eq!(e.count("outbox").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_leased_by_a_crashed_worker_is_not_processed_twice_and_is_processed_after_its_lease()
{
    let e = env().await;
    let id = e.ingest_order("evt-1", "payment.received", "o-1").await;
    // another invocation claimed the row (lease 120 s) and died before committing
    inbox::claim(
        e.db.as_ref(),
        &[id],
        e.clock.now(),
        e.clock.now() + chrono::Duration::seconds(120),
    )
    .await
    .expect("claim");
    let busy = e.invoke().await;
    assert_eq!(busy.outcomes(), ["busy"]);
    assert_eq!(failed_ids(&busy.response), [busy.got[0].message_id.clone()]);
    assert!(
        e.queue.changes().is_empty(),
        "the queue's own timeout applies"
    );
    assert_eq!(e.handler.calls("evt-1"), 0);

    e.make_visible(&busy.got[0], 121).await;
    let after_lease = e.invoke().await;
    assert_eq!(after_lease.outcomes(), ["processed"]);
    assert_eq!(e.row(id).await.attempts, 2);
    assert_eq!(e.count("example_order_transitions").await, 1);
    e.assert_queue_empty().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_fails_only_its_own_message() {
    let e = env().await;
    let ids = [
        e.ingest_order("evt-a", "payment.received", "o-a").await,
        e.ingest_order("evt-b", "payment.received", "o-b").await,
        e.ingest_order("evt-c", "payment.received", "o-c").await,
    ];
    e.handler.script("evt-b", Script::Panic);
    let inv = e.invoke().await;
    assert_eq!(failed_ids(&inv.response), [inv.got[1].message_id.clone()]);
    assert_eq!(inv.outcomes(), ["processed", "retried", "processed"]);
    assert_eq!(e.row(ids[0]).await.status, InboxStatus::Processed);
    assert_eq!(e.row(ids[2]).await.status, InboxStatus::Processed);
    let panicked = e.row(ids[1]).await;
    assert_eq!(panicked.status, InboxStatus::Pending);
    assert_eq!(
        panicked.last_error.as_deref(),
        Some("business handler panicked: business code bug for evt-b")
    );
    assert_eq!(e.queue.delays(), [60]);

    e.handler.unscript("evt-b");
    e.make_visible(&inv.got[1], 60).await;
    let retry = e.invoke().await;
    assert_eq!(retry.outcomes(), ["processed"]);
    e.assert_queue_empty().await;
    assert_eq!(e.count("example_order_transitions").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_quarantined_row_is_processed_exactly_once() {
    let e = env().await;
    let id = e.ingest_order("evt-1", "payment.received", "o-1").await;
    e.handler
        .script("evt-1", Script::Quarantine("amount does not match".into()));
    let inv = e.invoke().await;
    assert_eq!(inv.outcomes(), ["quarantined"]);
    assert!(inv.response.batch_item_failures.is_empty());
    e.assert_queue_empty().await;

    e.handler.unscript("evt-1");
    let replayed = processing::replay(e.db.as_ref(), &e.sqs, e.clock.as_ref(), id)
        .await
        .expect("replay");
    assert!(
        matches!(replayed, ReplayOutcome::Enqueued { .. }),
        "{replayed:?}"
    );
    let twice = processing::replay(e.db.as_ref(), &e.sqs, e.clock.as_ref(), id)
        .await
        .expect("replay");
    assert!(
        matches!(twice, ReplayOutcome::NotReplayable { .. }),
        "{twice:?}"
    );
    let inv = e.invoke().await;
    assert_eq!(inv.outcomes(), ["processed"]);
    e.assert_queue_empty().await;
    // a stale copy of the replay message changes nothing
    e.send(&InboxMessage::stored(id, PARTNER, "evt-1")).await;
    assert_eq!(e.invoke().await.outcomes(), ["already_finished"]);

    assert_eq!(
        e.handler.calls("evt-1"),
        2,
        "quarantined once, processed once"
    );
    assert_eq!(e.count("example_order_transitions").await, 1);
    assert_eq!(e.count("outbox").await, 1);
    assert_eq!(e.row(id).await.status, InboxStatus::Processed);
}

// ------------------------------------------------------------ sample events

fn sample_event(name: &str) -> SqsEvent {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_batch_stores_the_spooled_event_quarantines_the_unreadable_one_and_reports_no_failure()
 {
    let e = env().await;
    let mut event = sample_event("sqs-batch.json");
    // point the stored message at a real row
    let stored = inbox::insert_if_new(
        e.db.as_ref(),
        &new_event(
            "evt_stored_1",
            "order.created",
            order_body("order.created", "o-1001"),
        ),
        e.clock.now(),
    )
    .await
    .expect("insert")
    .id();
    event.records[0].body = Some(
        InboxMessage::stored(stored, PARTNER, "evt_stored_1")
            .to_body()
            .expect("body"),
    );
    let (response, report) = e
        .function
        .handle_with_report(LambdaEvent::new(event, Context::default()))
        .await;
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        serde_json::json!({ "batchItemFailures": [] })
    );
    assert_eq!(
        report
            .results
            .iter()
            .map(|r| r.outcome.kind())
            .collect::<Vec<_>>(),
        ["processed", "processed", "quarantined"]
    );
    // created by the stored event, then paid by the spooled one
    let order = example::get_order(e.db.as_ref(), "o-1001")
        .await
        .expect("get")
        .expect("order");
    assert_eq!(order.status, OrderStatus::Paid);
    assert_eq!(order.amount_cents, Some(1250));
    assert_eq!(order.currency.as_deref(), Some("EUR"));
    assert_eq!(e.count("inbox").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_last_receive_marks_the_row_dead_and_names_exactly_that_message() {
    let e = env().await;
    let mut event = sample_event("sqs-last-receive.json");
    let id = e
        .ingest_order("evt_stored_1", "payment.received", "o-1")
        .await;
    e.handler
        .script("evt_stored_1", Script::Retry("still failing".into()));
    event.records[0].body = Some(
        InboxMessage::stored(id, PARTNER, "evt_stored_1")
            .to_body()
            .expect("body"),
    );
    let response = e
        .function
        .handle(LambdaEvent::new(event, Context::default()))
        .await;
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        serde_json::json!({
            "batchItemFailures": [{ "itemIdentifier": "5f6c1d7e-0000-4000-8000-000000000001" }]
        })
    );
    let row = e.row(id).await;
    assert_eq!(row.status, InboxStatus::Dead);
    assert_eq!(row.last_error.as_deref(), Some("still failing"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_without_ids_or_attributes_are_processed_and_never_named_with_an_empty_id() {
    let e = env().await;
    let id = e.ingest_order("evt-1", "payment.received", "o-1").await;
    e.handler.script("evt-1", Script::Retry("later".into()));
    let mut record = SqsMessage::default();
    record.body = Some(
        InboxMessage::stored(id, PARTNER, "evt-1")
            .to_body()
            .expect("body"),
    );
    let mut event = SqsEvent::default();
    event.records = vec![record];
    let (response, report) = e
        .function
        .handle_with_report(LambdaEvent::new(event, Context::default()))
        .await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    // the row itself says when it is due: the sweeper enqueues it again
    assert!(matches!(
        report.results[0].outcome,
        MessageOutcome::Retried { .. }
    ));
    let row = e.row(id).await;
    assert_eq!(row.status, InboxStatus::Pending);
    assert_eq!(
        row.next_attempt_at,
        Some(e.clock.now() + chrono::Duration::seconds(60))
    );
    // no receipt handle: no visibility change attempted
    assert!(e.queue.changes().is_empty());
}

/// Issue 43: the message ingest sends in a traced invocation carries its
/// X-Ray trace header (SQS's `AWSTraceHeader`, through moto), and the
/// processor's lines about that message name the sender's trace, beside
/// the processor's own request id; its processing latency (received at
/// ingest to processed) is measured on the injected clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_in_a_traced_invocation_is_processed_in_its_trace() {
    use hookbox::log_format;
    let captured = hookbox_testkit::logs::CapturedLogs::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .fmt_fields(log_format::fields())
        .event_format(log_format::formatter())
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let e = env().await;
    let sender = "Root=1-6759e988-0d862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    hookbox::startup::begin_invocation("ingest-request", Some(sender));
    let id = e
        .ingest_order("evt-traced", "payment.received", "o-traced")
        .await;
    // the processor's own invocation, in a trace of its own
    hookbox::startup::begin_invocation(
        "processor-request",
        Some("Root=1-6759e989-aaaaaaaaaaaaaaaaaaaaaaaa;Sampled=1"),
    );
    // processed 2.5 s after ingest received it
    e.clock.advance(chrono::Duration::milliseconds(2500));
    let invocation = e.invoke().await;
    assert_eq!(invocation.outcomes(), ["processed"]);
    assert_eq!(invocation.got[0].trace_header.as_deref(), Some(sender));
    assert_eq!(
        invocation.report.processing_latencies,
        [Duration::from_millis(2500)]
    );

    let logs = captured.text();
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|l: &serde_json::Value| l["inbox_id"] == id.to_string())
        .collect();
    let processed = lines
        .iter()
        .find(|l| l["message"] == "processed")
        .unwrap_or_else(|| panic!("{logs}"));
    assert_eq!(processed["processing_latency_ms"], 2500);
    for line in &lines {
        assert_eq!(
            line["xray_trace_id"], "1-6759e988-0d862e3fe1be46a994272793",
            "{line}"
        );
        assert_eq!(line["function_request_id"], "processor-request", "{line}");
    }
}
