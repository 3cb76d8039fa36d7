//! Processor throughput: messages/s for batches of 10 through the Lambda
//! handler with the direct PostgreSQL adapter, and database statements per
//! message, against a baseline measured in the same run (a bare statement
//! round trip on the same pool).
//!
//! ```sh
//! cargo run --release -p hookbox-processor --example bench            # 2000 messages
//! cargo run --release -p hookbox-processor --example bench -- 5000    # more
//! ```
//! Starts its own throwaway PostgreSQL (as the tests do, or uses
//! `DATABASE_URL`); the queue is a no-op (every message is processed, so
//! no visibility change is made). Two business handlers: a no-op one (the
//! processor's own cost) and the example orders domain (`payment.received`
//! creating an order: 3 business statements).

#[path = "../../../shared/tests/processing_support/mod.rs"]
mod processing_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use hookbox::clock::SystemClock;
use hookbox::example::OrdersHandler;
use hookbox::inbox::{self, InboxMessage};
use hookbox::processing::{
    BusinessHandler, HandlerError, InboxEvent, MessageOutcome, Outcome, ProcessorConfig,
};
use hookbox::queue::{Queue, QueueError};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement, Transaction};
use hookbox_processor::ProcessorFunction;
use hookbox_testkit::TestDb;
use lambda_runtime::{Context, LambdaEvent};
use processing_support::{CountingDb, PARTNER, new_event, order_body};

const BATCH: usize = 10;

#[derive(Debug)]
struct NullQueue;

#[async_trait]
impl Queue for NullQueue {
    async fn send(&self, _: &str) -> Result<String, QueueError> {
        Ok("null".into())
    }
    async fn send_delayed(&self, _: &str, _: Duration) -> Result<String, QueueError> {
        Ok("null".into())
    }
    async fn change_visibility(&self, _: &str, _: Duration) -> Result<(), QueueError> {
        Ok(())
    }
}

/// Business code that does nothing: the processor's own cost.
#[derive(Debug)]
struct NoOp;

#[async_trait]
impl BusinessHandler for NoOp {
    async fn handle(
        &self,
        _: &InboxEvent<'_>,
        _: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        Ok(Outcome::Processed)
    }
}

struct Figures {
    name: &'static str,
    messages: usize,
    elapsed: Duration,
    processor_statements: u64,
    business_statements: u64,
    breakdown: Vec<(&'static str, u64, Duration)>,
}

async fn fresh_db() -> (TestDb, Arc<dyn Database>) {
    let t = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(t.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    (t, db)
}

/// Stores `n` payment events (as ingest would) and returns the SQS events
/// Lambda would deliver for them, in batches of 10.
async fn ingest(db: &dyn Database, n: usize, tag: &str) -> Vec<SqsEvent> {
    let mut records = Vec::with_capacity(n);
    for i in 0..n {
        let event_id = format!("{tag}-evt-{i}");
        let event = new_event(
            &event_id,
            "payment.received",
            order_body("payment.received", &format!("{tag}-o-{i}")),
        );
        let id = inbox::insert_if_new(db, &event, chrono::Utc::now())
            .await
            .expect("insert")
            .id();
        let mut record = SqsMessage::default();
        record.message_id = Some(format!("m-{tag}-{i}"));
        record.receipt_handle = Some(format!("r-{tag}-{i}"));
        record.body = Some(
            InboxMessage::stored(id, PARTNER, &event_id)
                .to_body()
                .expect("body"),
        );
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), "1".into());
        records.push(record);
    }
    records
        .chunks(BATCH)
        .map(|chunk| {
            let mut event = SqsEvent::default();
            event.records = chunk.to_vec();
            event
        })
        .collect()
}

async fn run(
    name: &'static str,
    db: Arc<dyn Database>,
    handler: Arc<dyn BusinessHandler>,
    messages: usize,
) -> Figures {
    let counting = CountingDb::new(db.clone());
    let function = ProcessorFunction::new(
        Arc::new(counting.clone()),
        Arc::new(NullQueue),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        Arc::new(SystemClock),
        handler,
        ProcessorConfig::default(),
    );
    // warm the pool and the prepared-statement caches
    for event in ingest(db.as_ref(), 3 * BATCH, &format!("{name}-warm")).await {
        function
            .handle_with_report(LambdaEvent::new(event, Context::default()))
            .await;
    }
    let batches = ingest(db.as_ref(), messages, name).await;
    counting.counts.reset();
    let started = Instant::now();
    let mut processed = 0;
    for event in batches {
        let (response, report) = function
            .handle_with_report(LambdaEvent::new(event, Context::default()))
            .await;
        assert!(response.batch_item_failures.is_empty(), "{report:?}");
        processed += report.count(|o| *o == MessageOutcome::Processed);
    }
    let elapsed = started.elapsed();
    assert_eq!(processed, messages, "every message processed");
    let c = &counting.counts;
    let business = c.named("example.") + c.named("outbox.");
    Figures {
        name,
        messages,
        elapsed,
        processor_statements: c.total() - business,
        business_statements: business,
        breakdown: c.breakdown(),
    }
}

/// Sequential bare round trips on the same pool: the unit everything else
/// is measured in.
async fn baseline(db: &dyn Database, n: usize) -> Duration {
    const PING: Statement = Statement::new("bench.ping", "SELECT 1 AS one");
    for _ in 0..200 {
        db.execute(&PING, &hookbox::params! {}).await.expect("ping");
    }
    let started = Instant::now();
    for _ in 0..n {
        db.execute(&PING, &hookbox::params! {}).await.expect("ping");
    }
    started.elapsed() / u32::try_from(n).expect("n fits")
}

#[tokio::main]
async fn main() {
    let messages: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("number of messages"))
        .unwrap_or(2000);
    let messages = messages.div_ceil(BATCH) * BATCH;

    let (_t, db) = fresh_db().await;
    let round_trip = baseline(db.as_ref(), 5000).await;
    let noop = run("noop", db.clone(), Arc::new(NoOp), messages).await;
    let orders = run(
        "orders",
        db.clone(),
        Arc::new(OrdersHandler::new("erp")),
        messages,
    )
    .await;

    println!(
        "processor bench: {messages} messages per handler, batches of {BATCH}, direct PostgreSQL"
    );
    println!(
        "baseline: one bare statement round trip = {:.1} µs ({:.0} statements/s)",
        round_trip.as_secs_f64() * 1e6,
        1.0 / round_trip.as_secs_f64()
    );
    println!(
        "{:<8} {:>10} {:>12} {:>16} {:>15} {:>13} {:>18}",
        "handler",
        "msgs/s",
        "µs/msg",
        "stmts/msg total",
        "processor",
        "business",
        "µs/msg ÷ baseline"
    );
    for f in [&noop, &orders] {
        let n = f.messages as f64;
        let per_msg = f.elapsed.as_secs_f64() / n;
        println!(
            "{:<8} {:>10.0} {:>12.1} {:>16.2} {:>15.2} {:>13.2} {:>18.1}",
            f.name,
            n / f.elapsed.as_secs_f64(),
            per_msg * 1e6,
            (f.processor_statements + f.business_statements) as f64 / n,
            f.processor_statements as f64 / n,
            f.business_statements as f64 / n,
            per_msg / round_trip.as_secs_f64(),
        );
    }
    println!(
        "(statements count BEGIN and COMMIT; processor = claim/10 + BEGIN + mark_processed + COMMIT)"
    );
    for f in [&noop, &orders] {
        println!("where the time goes ({}), per message:", f.name);
        let n = f.messages as f64;
        for (name, count, time) in &f.breakdown {
            println!(
                "  {name:<24} {:>5.2} × {:>7.1} µs = {:>6.1} µs",
                *count as f64 / n,
                time.as_secs_f64() * 1e6 / (*count).max(1) as f64,
                time.as_secs_f64() * 1e6 / n
            );
        }
        let in_db: f64 = f.breakdown.iter().map(|(_, _, t)| t.as_secs_f64()).sum();
        println!(
            "  outside the database: {:.1} µs",
            (f.elapsed.as_secs_f64() - in_db) * 1e6 / n
        );
    }
}
