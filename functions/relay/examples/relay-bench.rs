//! Relay throughput: deliveries/s from the outbox to a local sink
//! (127.0.0.1) against a bare reqwest client posting the same payloads at
//! the same concurrency, in the same run; and database statements per batch.
//!
//! ```sh
//! cargo run --release -p hookbox-relay --example relay-bench [-- --rows 5000 --in-flight 32 --batch 100 --lanes 4 --sink-latency-ms 0 --rounds 3 --check]
//! ```
//! `--database-url URL` uses that (empty, or already migrated) database
//! instead of a throwaway cluster; `--fillfactor N` sets the outbox's
//! fillfactor first (migration 0004 chose 50; try 80 to see why).
//! One durable throwaway cluster (fsync on). Each round: the bare client
//! posts N payloads with `in-flight` requests at once; then N outbox rows
//! are delivered by the relay (`Relay::drain`: `lanes` batch loops, each
//! record the previous batch + claim (one statement) → signed POSTs, ≤
//! in-flight requests at once across lanes) until none is due. Best round of each is compared
//! (the machine is shared; the best round is the least disturbed). `--check`
//! exits 1 when the relay is below half the bare rate or a batch costs more
//! than 2 statements. `--null-sender` replaces HTTP by an instant 200 (the
//! relay's own cost: database + signing). Each round also prints the CPU
//! time per delivery: this process (client or relay, and the sink) and
//! every PostgreSQL process (Linux `/proc`).

#[path = "../../../shared/tests/processing_support/mod.rs"]
mod processing_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, NewOutboxEvent};
use hookbox::params;
use hookbox::relay::{
    HttpSender, OutboundRequest, Relay, RelaySettings, SendOutcome, WebhookSender,
};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_testkit::PrivateCluster;
use processing_support::CountingDb;

struct Args {
    rows: usize,
    in_flight: usize,
    batch: i64,
    lanes: usize,
    latency_ms: u64,
    null_sender: bool,
    rounds: usize,
    check: bool,
    fillfactor: Option<usize>,
    database_url: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        rows: 5_000,
        in_flight: 32,
        batch: 100,
        lanes: 4,
        latency_ms: 0,
        null_sender: false,
        rounds: 3,
        check: false,
        fillfactor: None,
        database_url: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("{flag} needs a number"))
        };
        if flag == "--database-url" {
            a.database_url = it.next();
            continue;
        }
        match flag.as_str() {
            "--rows" => a.rows = value(),
            "--in-flight" => a.in_flight = value(),
            "--batch" => a.batch = value() as i64,
            "--rounds" => a.rounds = value(),
            "--lanes" => a.lanes = value(),
            "--sink-latency-ms" => a.latency_ms = value() as u64,
            "--check" => a.check = true,
            "--null-sender" => a.null_sender = true,
            "--fillfactor" => a.fillfactor = Some(value()),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// A minimal receiver: 200 for every POST (after `latency`, a receiver's
/// own work), counting them.
async fn sink(latency: Duration) -> (String, Arc<AtomicU64>) {
    hookbox_testkit::receivers::counting_sink(latency)
        .await
        .expect("bind sink")
}

/// `--null-sender`: answers 200 without any HTTP (the relay's database
/// cost alone), counting like the sink.
#[derive(Debug)]
struct NullSender(Arc<AtomicU64>);

#[async_trait::async_trait]
impl WebhookSender for NullSender {
    async fn send(&self, _request: OutboundRequest<'_>) -> SendOutcome {
        self.0.fetch_add(1, Ordering::Relaxed);
        SendOutcome::Response {
            status: 200,
            retry_after: None,
            body_excerpt: String::new(),
        }
    }
}

/// CPU seconds (user + system) used so far by this process and by every
/// `postgres` process on the machine (Linux /proc; zeros elsewhere).
fn cpu_seconds() -> (f64, f64) {
    fn of(stat: &str) -> f64 {
        // fields after the ")" that ends the command name: utime is the 12th, stime the 13th
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) + ticks(12)) / 100.0
    }
    let own = std::fs::read_to_string("/proc/self/stat").map_or(0.0, |s| of(&s));
    let mut pg = 0.0;
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let path = entry.path();
            if std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim() == "postgres") {
                pg += std::fs::read_to_string(path.join("stat")).map_or(0.0, |s| of(&s));
            }
        }
    }
    (own, pg)
}

fn payload(i: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "order.status_changed",
        "order_id": format!("o-{i}"),
        "status": "paid",
        "note": "x".repeat(800),
    })
}

async fn fill(db: &dyn Database, rows: usize) {
    let now = SystemClock.now();
    for chunk in (0..rows).collect::<Vec<_>>().chunks(500) {
        let tx = db.begin().await.expect("begin");
        for i in chunk {
            let event = NewOutboxEvent {
                aggregate_type: "order".into(),
                aggregate_id: format!("o-{i}"),
                event_type: "order.status_changed".into(),
                destination: "sink".into(),
                payload: payload(*i),
            };
            outbox::enqueue(tx.as_ref(), &event, now)
                .await
                .expect("enqueue");
        }
        tx.commit().await.expect("commit");
    }
}

#[tokio::main]
async fn main() {
    let a = args();
    let cluster = a.database_url.is_none().then(PrivateCluster::start_durable);
    let url = a
        .database_url
        .clone()
        .or_else(|| cluster.as_ref().map(|c| c.url().to_owned()))
        .expect("a database");
    let pg: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(&url, &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(pg.as_ref())
        .await
        .expect("migrate");
    if let Some(ff) = a.fillfactor {
        let sql: &'static str =
            Box::leak(format!("ALTER TABLE outbox SET (fillfactor = {ff})").into_boxed_str());
        pg.execute(&Statement::new("bench.fillfactor", sql), &params! {})
            .await
            .expect("fillfactor");
    }
    let (url, hits) = sink(Duration::from_millis(a.latency_ms)).await;
    let config = HookboxConfig::parse(
        &serde_json::json!({ "destinations": { "sink": {
            "url": url,
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="],
            "max_in_flight": a.in_flight,
            "allowed_networks": ["127.0.0.0/8"],
        }}})
        .to_string(),
        "bench",
    )
    .expect("config");
    let store = ConfigStore::fixed(config, Arc::new(SystemClock));
    let bodies: Vec<String> = (0..a.rows).map(|i| payload(i).to_string()).collect();
    let bare = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let (mut best_bare, mut best_relay) = (0.0_f64, 0.0_f64);
    let mut per_batch = Vec::new();
    for round in 1..=a.rounds {
        // bare client
        let before = hits.load(Ordering::Relaxed);
        let cpu_before = cpu_seconds();
        let start = Instant::now();
        futures::stream::iter(bodies.iter())
            .map(|body| {
                let (bare, url) = (bare.clone(), url.clone());
                async move {
                    let r = bare
                        .post(url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("bare post");
                    assert!(r.status().is_success());
                }
            })
            .buffer_unordered(a.in_flight)
            .for_each(|_| async {})
            .await;
        let bare_rate = a.rows as f64 / start.elapsed().as_secs_f64();
        let cpu_after = cpu_seconds();
        let bare_cpu_us = (cpu_after.0 - cpu_before.0) * 1e6 / a.rows as f64;
        assert_eq!(hits.load(Ordering::Relaxed) - before, a.rows as u64);

        // relay
        fill(pg.as_ref(), a.rows).await;
        let counting = Arc::new(CountingDb::new(pg.clone()));
        let mut settings = RelaySettings::new(format!("bench-{round}"));
        settings.batch_size = a.batch;
        settings.lanes = a.lanes;
        let sender: Arc<dyn WebhookSender> = if a.null_sender {
            Arc::new(NullSender(hits.clone()))
        } else {
            Arc::new(HttpSender::default())
        };
        let relay = Relay::new(
            counting.clone(),
            Arc::new(MemoryBlobStore::new()),
            sender,
            None,
            Arc::new(SystemClock),
            settings,
        );
        let before = hits.load(Ordering::Relaxed);
        let cpu_before = cpu_seconds();
        let start = Instant::now();
        let run = relay.drain(&store).await;
        let cpu_after = cpu_seconds();
        let relay_cpu_us = (cpu_after.0 - cpu_before.0) * 1e6 / a.rows as f64;
        let pg_cpu_us = (cpu_after.1 - cpu_before.1) * 1e6 / a.rows as f64;
        let (batches, delivered) = (run.batches - a.lanes as u64, run.deliveries.delivered);
        assert_eq!(run.errors, Vec::<String>::new());
        let elapsed = start.elapsed();
        assert_eq!(delivered, a.rows as u64, "every row delivered");
        assert_eq!(hits.load(Ordering::Relaxed) - before, a.rows as u64);
        let relay_rate = a.rows as f64 / elapsed.as_secs_f64();
        // each lane ends with one empty claim, outside any batch
        let statements = counting.counts.total() - a.lanes as u64;
        let statements_per_batch = statements as f64 / batches as f64;
        per_batch.push(statements_per_batch);
        println!(
            "round {round}: bare {bare_rate:>8.0}/s   relay {relay_rate:>8.0}/s   ratio {:.2}   \
             {batches} batches of ≤{} in {} lanes, {statements_per_batch:.2} statements/batch",
            relay_rate / bare_rate,
            a.batch,
            a.lanes
        );
        println!(
            "         CPU per delivery: bare {bare_cpu_us:.0} µs (client + sink); relay {relay_cpu_us:.0} µs \
             (relay + sink) + PostgreSQL {pg_cpu_us:.0} µs"
        );
        let db_time: Duration = counting.counts.breakdown().iter().map(|(_, _, t)| *t).sum();
        println!(
            "         time in the database {:.0} ms of {:.0} ms: {}",
            db_time.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e3,
            counting
                .counts
                .breakdown()
                .iter()
                .map(|(name, n, t)| format!("{name} ×{n} {:.0} ms", t.as_secs_f64() * 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        );
        best_bare = best_bare.max(bare_rate);
        best_relay = best_relay.max(relay_rate);
        tokio::time::sleep(Duration::from_millis(200)).await; // let the sink's connections settle
    }
    let ratio = best_relay / best_bare;
    let worst_statements = per_batch.iter().cloned().fold(0.0, f64::max);
    println!(
        "best: bare {best_bare:.0} deliveries/s, relay {best_relay:.0} deliveries/s, ratio {ratio:.2} \
         (goal ≥ 0.5); statements per batch ≤ {worst_statements:.2} (goal ≤ 2)"
    );
    println!(
        "({} rows of ~1 KiB per round, {} in flight, batch {}, {} lanes, sink answering after {} ms \
         on 127.0.0.1, durable PostgreSQL)",
        a.rows, a.in_flight, a.batch, a.lanes, a.latency_ms
    );
    if a.check && (ratio < 0.5 || worst_statements > 2.0) {
        std::process::exit(1);
    }
}
