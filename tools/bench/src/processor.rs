//! Processor: messages/s through the Lambda handler with a no-op business
//! handler (the processor's own cost) against pgbench issuing the same
//! statements it issues per batch of 10 (the claim, then BEGIN,
//! mark_processed, COMMIT per message), at the same concurrency for the
//! same seconds on the same database.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use hookbox::clock::SystemClock;
use hookbox::inbox::InboxMessage;
use hookbox::inbox::lease::{CLAIM, MARK_PROCESSED};
use hookbox::processing::{
    BusinessHandler, HandlerError, InboxEvent, MessageOutcome, Outcome, ProcessorConfig,
};
use hookbox::queue::{Queue, QueueError};
use hookbox::store::{Database, Statement, Transaction};
use hookbox_processor::ProcessorFunction;
use lambda_runtime::{Context, LambdaEvent};
use uuid::Uuid;

use crate::pg::{Bench, one_line};
use crate::report::{Figure, Goal, server_cost_reason};
use crate::stats::{cpu_seconds, cpu_us_per};

pub const SECTION: &str = "Processor";
pub const BATCH: usize = 10;
/// Concurrent invocations (and pgbench clients).
pub const CONCURRENCY: usize = 4;
pub const PARTNER: &str = "shop";

/// A queue that is never needed (every message is processed).
#[derive(Debug)]
pub struct NullQueue;

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
pub struct NoOp;

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

/// The inbox id of row number `n` (the bulk insert's ids).
pub fn id_of(n: u64) -> Uuid {
    Uuid::from_u128(u128::from(n))
}

/// The SQL expression of [`id_of`] for an integer expression.
fn id_sql(n: &str) -> String {
    format!("CAST(lpad(to_hex({n}), 32, '0') AS uuid)")
}

/// Inserts pending inbox rows `from..to` (ids [`id_of`]) in one statement.
pub async fn insert_pending(db: &dyn Database, from: u64, to: u64) -> anyhow::Result<()> {
    let sql = format!(
        "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                            received_at, next_attempt_at)
         SELECT {}, '{PARTNER}', 'bench-' || g, convert_to('{{}}', 'UTF8'), true, 'pending',
                now(), now()
           FROM generate_series(CAST({from} AS bigint), CAST({to} AS bigint) - 1) AS g",
        id_sql("g")
    );
    let sql: &'static str = Box::leak(sql.into_boxed_str());
    db.execute(
        &Statement::new("bench.insert_pending", sql),
        &hookbox::params! {},
    )
    .await?;
    Ok(())
}

/// The SQS events Lambda would deliver for rows `from..to`, in batches of 10.
pub fn events(from: u64, to: u64) -> anyhow::Result<Vec<SqsEvent>> {
    let mut records = Vec::new();
    for n in from..to {
        let mut record = SqsMessage::default();
        record.message_id = Some(format!("m-{n}"));
        record.receipt_handle = Some(format!("r-{n}"));
        record.body =
            Some(InboxMessage::stored(id_of(n), PARTNER, &format!("bench-{n}")).to_body()?);
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), "1".into());
        records.push(record);
    }
    Ok(records
        .chunks(BATCH)
        .map(|chunk| {
            let mut event = SqsEvent::default();
            event.records = chunk.to_vec();
            event
        })
        .collect())
}

/// The processor function over `db` with `handler`.
pub fn function(db: Arc<dyn Database>, handler: Arc<dyn BusinessHandler>) -> ProcessorFunction {
    ProcessorFunction::new(
        db,
        Arc::new(NullQueue),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        Arc::new(SystemClock),
        handler,
        ProcessorConfig::default(),
    )
}

/// Runs `batches` through `function` from `CONCURRENCY` tasks until used up
/// or `limit` passed; returns (messages processed, elapsed, CPU µs per
/// message (own, PostgreSQL)).
pub async fn drive(
    function: Arc<ProcessorFunction>,
    batches: Arc<Vec<SqsEvent>>,
    limit: Duration,
) -> anyhow::Result<(usize, Duration, (f64, f64))> {
    let next = Arc::new(AtomicUsize::new(0));
    let before = cpu_seconds();
    let started = Instant::now();
    let deadline = started + limit;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (function, batches, next) = (function.clone(), batches.clone(), next.clone());
            tokio::spawn(async move {
                let mut processed = 0;
                while Instant::now() < deadline {
                    let Some(event) = batches.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let (response, report) = function
                        .handle_with_report(LambdaEvent::new(event.clone(), Context::default()))
                        .await;
                    anyhow::ensure!(response.batch_item_failures.is_empty(), "{report:?}");
                    processed += report.count(|o| *o == MessageOutcome::Processed);
                }
                anyhow::Ok(processed)
            })
        })
        .collect();
    let mut processed = 0;
    for t in tasks {
        processed += t.await??;
    }
    let elapsed = started.elapsed();
    Ok((
        processed,
        elapsed,
        cpu_us_per(before, cpu_seconds(), processed as u64),
    ))
}

/// pgbench's script: one transaction of pgbench = one batch of 10 rows
/// `base + 10 b ..`, b from a sequence: the claim, then per message BEGIN,
/// mark_processed, COMMIT.
pub fn pgbench_script(base: u64) -> String {
    let ids = format!(
        "(SELECT jsonb_agg(CAST({} AS text)) FROM generate_series(0, {}) AS g)",
        id_sql(&format!("{base} + CAST(:b AS bigint) * {BATCH} + g")),
        BATCH - 1
    );
    let claim = CLAIM
        .sql
        .replace(":ids", &ids)
        .replace(":now", "now()")
        .replace(":lease_until", "(now() + interval '5 minutes')")
        .replace(":claimer", "CAST(gen_random_uuid() AS text)");
    let mut script = format!(
        "SELECT nextval('bench_batch') - 1 AS b \\gset\n{};\n",
        one_line(&claim)
    );
    for k in 0..BATCH {
        let mark = MARK_PROCESSED
            .sql
            .replace(":now", "now()")
            .replace(
                ":id",
                &id_sql(&format!("{base} + CAST(:b AS bigint) * {BATCH} + {k}")),
            )
            .replace(":attempt", "1");
        script.push_str(&format!("BEGIN;\n{};\nCOMMIT;\n", one_line(&mark)));
    }
    script
}

/// What the processor figures give the cost model.
#[derive(Debug, Clone, Default)]
pub struct ProcessorCost {
    /// PostgreSQL CPU per message, µs.
    pub pg_cpu_us: f64,
    /// The function's own CPU per message, µs.
    pub own_cpu_us: f64,
}

/// The processor figure.
pub async fn run(
    bench: &Bench,
    slices: u64,
    slice_seconds: u64,
) -> anyhow::Result<(Vec<Figure>, String, ProcessorCost)> {
    let (url, db) = bench.database("bench_processor", 16).await?;
    db.execute(
        &Statement::new("bench.sequence", "CREATE SEQUENCE bench_batch"),
        &hookbox::params! {},
    )
    .await?;
    let function = Arc::new(function(db.clone(), Arc::new(NoOp)));
    // warm up and estimate the rate
    insert_pending(db.as_ref(), 0, 2_000).await?;
    let (warm, warm_elapsed, _) = drive(
        function.clone(),
        Arc::new(events(0, 2_000)?),
        Duration::from_millis(500),
    )
    .await?;
    let estimate = warm as f64 / warm_elapsed.as_secs_f64();
    // alternating one-second slices of each side
    let per_run = ((estimate * slice_seconds as f64 * 2.0) as u64)
        .max(2_000)
        .div_ceil(BATCH as u64)
        * BATCH as u64;
    let mut next_row = 10_000u64;
    let (mut processed, mut elapsed, mut own_cpu, mut pg_cpu) = (0usize, Duration::ZERO, 0.0, 0.0);
    let (mut pg_messages, mut pg_seconds, mut pgbench_cpu) = (0u64, 0.0, 0.0);
    for _ in 0..slices {
        let (from, to) = (next_row, next_row + per_run);
        insert_pending(db.as_ref(), from, to).await?;
        let (n, took, cpu) = drive(
            function.clone(),
            Arc::new(events(from, to)?),
            Duration::from_secs(slice_seconds),
        )
        .await?;
        anyhow::ensure!(
            n < per_run as usize,
            "the processor ran out of rows: add more"
        );
        processed += n;
        elapsed += took;
        own_cpu += cpu.0 * n as f64;
        pg_cpu += cpu.1 * n as f64;
        // pgbench on its own rows, with as many again as a margin. The
        // margin follows hookbox's rate, and pgbench's C client can go far
        // faster (the --quick run's hookbox is a debug build): a slice that
        // used up its rows measured empty claims, so it is run again on
        // fresh rows, four times as many, rather than counted.
        let (mut base, mut rows) = (to, 2 * per_run);
        let mut tries = 0;
        let pgb = loop {
            insert_pending(db.as_ref(), base, base + rows).await?;
            db.execute(
                &Statement::new(
                    "bench.sequence_reset",
                    "ALTER SEQUENCE bench_batch RESTART WITH 1",
                ),
                &hookbox::params! {},
            )
            .await?;
            let pgb = bench.pgbench(&url, &pgbench_script(base), CONCURRENCY, slice_seconds)?;
            if pgb.transactions * (BATCH as u64) < rows {
                break pgb;
            }
            tries += 1;
            anyhow::ensure!(
                tries < 4,
                "pgbench ran out of rows {tries} times (last: {rows} rows in {slice_seconds} s)"
            );
            eprintln!(
                "   processor slice: pgbench used all {rows} rows; again with {}",
                4 * rows
            );
            base += rows;
            rows *= 4;
        };
        eprintln!(
            "   processor slice: hookbox {:.0}/s (PostgreSQL {:.0} µs each), pgbench {:.0}/s ({:.0} µs)",
            n as f64 / took.as_secs_f64(),
            cpu.1,
            pgb.tps * BATCH as f64,
            pgb.pg_cpu_us / BATCH as f64
        );
        pg_messages += pgb.transactions * BATCH as u64;
        pg_seconds += pgb.transactions as f64 / pgb.tps.max(1e-9);
        pgbench_cpu += pgb.pg_cpu_us * pgb.transactions as f64;
        next_row = base + rows;
    }
    let best_rate = processed as f64 / elapsed.as_secs_f64().max(1e-9);
    let best_pg = pg_messages as f64 / pg_seconds.max(1e-9);
    let best_cpu = (
        own_cpu / processed.max(1) as f64,
        pg_cpu / processed.max(1) as f64,
    );
    let pgbench_cpu_us = pgbench_cpu / pg_messages.max(1) as f64;
    let figures = vec![
        Figure::ratio(
            SECTION,
            format!("no-op handler, batches of {BATCH}, {CONCURRENCY} concurrent invocations"),
            "messages/s",
            best_rate,
            ("pgbench, same statements", best_pg),
            Goal::RatioAtLeast(0.8),
        )
        .when_missed(
            server_cost_reason(best_cpu.1, pgbench_cpu_us).unwrap_or_else(|| {
                "The processor decodes each SQS record and claimed row and builds the port's \
             parameters; on two shared cores that CPU competes with PostgreSQL's."
                    .to_string()
            }),
        ),
    ];
    let note = format!(
        "pgbench runs, per transaction, the processor's statements for one batch: \
         `inbox.claim` of 10 ids, then BEGIN, `inbox.mark_processed`, COMMIT per message \
         (31 calls; the calls table below counts the processor's own), in alternating \
         slices of {slice_seconds} s of each side. CPU per message: processor {:.0} µs, PostgreSQL {:.0} \
         µs; PostgreSQL per message under pgbench: {pgbench_cpu_us:.0} µs.\n",
        best_cpu.0, best_cpu.1
    );
    let cost = ProcessorCost {
        pg_cpu_us: best_cpu.1,
        own_cpu_us: best_cpu.0,
    };
    Ok((figures, note, cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ids_match_their_sql_expression() {
        assert_eq!(id_of(255).simple().to_string(), format!("{:0>32}", "ff"));
    }

    #[test]
    fn the_pgbench_script_issues_a_claim_and_three_calls_per_message() {
        let script = pgbench_script(1000);
        assert_eq!(script.matches("inbox_claim(").count(), 1, "one claim");
        assert_eq!(
            script.matches("UPDATE inbox").count(),
            BATCH,
            "one mark per message"
        );
        assert_eq!(script.matches("BEGIN;").count(), BATCH);
        assert_eq!(script.matches("COMMIT;").count(), BATCH);
        for param in [
            ":ids",
            ":now",
            ":lease_until",
            ":claimer",
            ":id ",
            ":attempt",
        ] {
            assert!(!script.contains(param), "{param} left in {script}");
        }
    }
}
