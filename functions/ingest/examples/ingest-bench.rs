//! Ingest throughput vs PostgreSQL's own ceiling for the same statement.
//!
//! `cargo run --release -p hookbox-ingest --example ingest-bench [-- REQUESTS SECONDS [BODY_BYTES]]`
//!
//! With BODY_BYTES (e.g. 1048576) every event's body is padded to that size:
//! above the inline threshold (32 KiB) each body goes to the blob store (a
//! filesystem directory here) before its row is inserted, and the run prints
//! only the ingest figures (pgbench's statement has no such step to compare
//! with). Run it with and without BODY_BYTES to see large bodies next to
//! small ones.
//!
//! One durable throwaway cluster (fsync on), one database, in the same run:
//! 1. the ingest use case in-process (signature verification, event id
//!    extraction, insert-if-new through the direct PostgreSQL adapter, an
//!    in-memory queue) at concurrency 32 over REQUESTS distinct signed
//!    events: rate, p50/p99 latency, database statements per accepted event;
//! 2. pgbench running the identical INSERT … ON CONFLICT statement at 32
//!    clients for SECONDS seconds.
//!
//! Prints both rates and their ratio (goal ≥ 0.8).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox_testkit::PrivateCluster;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";
const CONCURRENCY: usize = 32;

/// Counts the statements that reach the database.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn Database>,
    statements: AtomicU64,
}

#[async_trait]
impl Executor for Counting {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.inner.execute(statement, params).await
    }
}

#[async_trait]
impl Database for Counting {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.statements.fetch_add(1, Ordering::Relaxed);
        self.inner.begin().await
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let requests: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let seconds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10);
    let body_bytes: Option<usize> = args.get(3).and_then(|a| a.parse().ok());
    let blob_dir = tempfile::tempdir()?;

    let cluster = PrivateCluster::start_durable();
    let url = cluster.url().to_string();
    let pg: Arc<dyn Database> = Arc::new(PgDatabase::connect(
        &url,
        &PgOptions {
            max_connections: CONCURRENCY,
            ..PgOptions::default()
        },
    )?);
    hookbox::migrate::migrate(pg.as_ref()).await?;
    let db = Arc::new(Counting {
        inner: pg,
        statements: AtomicU64::new(0),
    });

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let config = HookboxConfig::parse(
        &serde_json::json!({"partners": {"demo": {
            "signature": {"scheme": "standard-webhooks"},
            "secrets": [SECRET],
            "event_id": {"header": "webhook-id"},
            "event_type": "/type",
            "ordering_key": "/order_id"
        }}})
        .to_string(),
        "bench",
    )?;
    let queue = Arc::new(MemoryQueue::new(
        MemoryQueueConfig::default(),
        clock.clone(),
    ));
    let ingest = Arc::new(Ingest::new(
        Arc::new(ConfigStore::fixed(config, clock.clone())),
        db.clone(),
        queue.clone(),
        Arc::new(hookbox::blob::fs::FsBlobStore::new(
            blob_dir.path().to_path_buf(),
        )),
        clock.clone(),
    ));

    // Sign everything before timing.
    let now = clock.now();
    let secret = [Secret::new(SECRET)];
    let mut signed = Vec::with_capacity(requests);
    for i in 0..requests {
        let mut body = format!(
            r#"{{"type":"payment.received","order_id":"ord_{i}","amount":{}.5,"note":"benchmark event payload"}}"#,
            i % 1000
        );
        if let Some(size) = body_bytes {
            let pad = size.saturating_sub(body.len() + 10);
            body = format!(
                r#"{},"pad":"{}"}}"#,
                &body[..body.len() - 1],
                "p".repeat(pad)
            );
        }
        let h = sign_standard_webhooks(&format!("msg_{i}"), now, body.as_bytes(), &secret)?;
        signed.push((
            vec![
                ("webhook-id".to_string(), h.id),
                ("webhook-timestamp".to_string(), h.timestamp),
                ("webhook-signature".to_string(), h.signature),
                ("content-type".to_string(), "application/json".to_string()),
            ],
            body.into_bytes(),
        ));
    }
    let signed = Arc::new(signed);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (ingest, signed, next) = (ingest.clone(), signed.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut accepted = 0u64;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some((headers, body)) = signed.get(i) else {
                        return (latencies, accepted);
                    };
                    let request = IngestRequest {
                        partner: "demo",
                        headers: Headers::from_pairs(
                            headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                        ),
                        body,
                        url: None,
                    };
                    let t = Instant::now();
                    let mut metrics = Metrics::new();
                    let response = ingest.handle(&request, &mut metrics).await;
                    latencies.push(t.elapsed());
                    if matches!(response.outcome, Outcome::Accepted { .. }) {
                        accepted += 1;
                    }
                }
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(requests);
    let mut accepted = 0;
    for w in workers {
        let (l, a) = w.await?;
        latencies.extend(l);
        accepted += a;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let ingest_rate = requests as f64 / elapsed.as_secs_f64();
    let statements = db.statements.load(Ordering::Relaxed);
    anyhow::ensure!(
        accepted as usize == requests,
        "only {accepted} of {requests} accepted"
    );

    if let Some(size) = body_bytes {
        println!(
            "ingest bench: fsync on, concurrency {CONCURRENCY}, {requests} distinct signed events \
             of {size} bytes (blob store: a directory)"
        );
        println!(
            "  ingest handler : {ingest_rate:>9.0} events/s  ({:.2} s, {:.0} MiB/s of bodies)",
            elapsed.as_secs_f64(),
            ingest_rate * size as f64 / (1024.0 * 1024.0)
        );
        println!(
            "  latency        : p50 {:.2} ms, p99 {:.2} ms",
            percentile(&latencies, 0.50).as_secs_f64() * 1000.0,
            percentile(&latencies, 0.99).as_secs_f64() * 1000.0
        );
        println!(
            "  statements     : {:.2} per accepted event ({statements} for {accepted})",
            statements as f64 / accepted as f64
        );
        return Ok(());
    }

    // pgbench: the identical statement (inbox.insert_if_new), one new event per call.
    let script = std::env::temp_dir().join(format!("hookbox-bench-{}.sql", std::process::id()));
    let sql = hookbox::inbox::repo::INSERT_IF_NEW
        .sql
        .replace(":id", "gen_random_uuid()")
        .replace(":partner", "'demo'")
        .replace(":event_id_derived", "false")
        .replace(":event_id", "'pgb-' || :client_id || '-' || :n")
        .replace(":event_type", "'payment.received'")
        .replace(":ordering_key", "'ord_' || :n")
        // the reference columns first: ":body" is a prefix of their names
        .replace(":body_key", "NULL")
        .replace(":body_size", "NULL")
        .replace(":body_sha256", "NULL")
        .replace(":body", "convert_to('{\"type\":\"payment.received\",\"order_id\":\"ord_1\",\"amount\":1.5,\"note\":\"benchmark event payload\"}', 'UTF8')")
        .replace(":headers", "'{\"content-type\":\"application/json\"}'")
        .replace(":signature_verified", "true")
        .replace(":now", "now()");
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    std::fs::write(
        &script,
        format!("\\set n random(1, 2000000000)\n{one_line};\n"),
    )?;
    let bindir = hookbox_testkit::find_bindir()?;
    let out = std::process::Command::new(bindir.join("pgbench"))
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &CONCURRENCY.to_string(),
            "-j",
            "2",
            "-T",
            &seconds.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(&url)
        .output()?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "pgbench failed: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let pgbench_rate: f64 = text
        .lines()
        .find(|l| l.starts_with("tps ="))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no tps in pgbench output: {text}"))?;

    println!(
        "ingest bench: fsync on, concurrency {CONCURRENCY}, {requests} distinct signed events"
    );
    println!(
        "  ingest handler : {ingest_rate:>9.0} events/s  ({:.2} s)",
        elapsed.as_secs_f64()
    );
    println!(
        "  pgbench        : {pgbench_rate:>9.0} tps       (same INSERT … ON CONFLICT, {seconds} s)"
    );
    println!(
        "  ratio          : {:>9.2}  (goal ≥ 0.80)",
        ingest_rate / pgbench_rate
    );
    println!(
        "  latency        : p50 {:.2} ms, p99 {:.2} ms",
        percentile(&latencies, 0.50).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0
    );
    println!(
        "  statements     : {:.2} per accepted event ({statements} for {accepted})",
        statements as f64 / accepted as f64
    );
    println!("  queued         : {} messages", queue.len());
    Ok(())
}
