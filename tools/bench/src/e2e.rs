//! End-to-end latency through the local stack (tools/local: the API
//! Gateway front with the real authorizer and ingest, the in-memory queue
//! feeding the real processor, the relay), open-loop: webhooks are sent on
//! schedule at 50, 200 and 1,000 per second whatever the answers do, and
//! every latency counts from the scheduled send (so a late sender cannot
//! hide queueing). For each: the POST's answer, POST → processed (the inbox
//! row's `processed_at`) and POST → its outbound webhook received (the
//! `demo-downstream` inbox row of the outbox row the orders domain wrote).
//! Then the same rates for a partner forwarded by routes (ingest forwards,
//! the relay delivers): POST → its destination received.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hookbox::params;
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_local::{DEMO_PARTNER, DEMO_SECRET, LocalStack, Options};

use crate::pg::Bench;
use crate::report::{Figure, Goal, count};
use crate::stats::{p50_p99_max, schedule_len, scheduled};

pub const SECTION: &str = "End-to-end latency (local stack, open loop)";

// The measurement reads the inbox alone: the demo-downstream row of a
// webhook carries its order id (= the webhook's id) as its ordering key. A
// join through the outbox, unindexed for this, was planned as a nested loop
// of outbox scans on the stack's unanalyzed tables: at 1,000/s one count took
// a core for tens of seconds while the stack was draining.
const DONE: Statement = Statement::new(
    "bench.e2e_done",
    "SELECT count(*) FILTER (WHERE partner = :partner AND status = 'processed') AS processed,
            count(DISTINCT ordering_key) FILTER (WHERE partner = 'demo-downstream')
                AS delivered
       FROM inbox
      WHERE partner IN (:partner, 'demo-downstream') AND ordering_key LIKE :prefix",
);

const PROCESSED_TIMES: Statement = Statement::new(
    "bench.e2e_processed_times",
    "SELECT event_id,
            CAST(extract(epoch FROM processed_at) * 1000000 AS bigint) AS at_us
       FROM inbox
      WHERE partner = :partner AND event_id LIKE :prefix",
);

const DELIVERED_TIMES: Statement = Statement::new(
    "bench.e2e_delivered_times",
    "SELECT ordering_key AS event_id,
            CAST(extract(epoch FROM min(received_at)) * 1000000 AS bigint) AS at_us
       FROM inbox
      WHERE partner = 'demo-downstream' AND ordering_key LIKE :prefix
      GROUP BY ordering_key",
);

/// One rate's measurements.
#[derive(Debug, Default)]
pub struct RateRun {
    pub rate: f64,
    pub sent: u64,
    pub post: Vec<Duration>,
    pub processed: Vec<Duration>,
    pub delivered: Vec<Duration>,
    /// Webhooks sent but not processed when the last was sent.
    pub backlog_at_end: u64,
    /// Not processed / delivered when the wait ended.
    pub unfinished: (u64, u64),
}

async fn done(db: &dyn Database, partner: &str, prefix: &str) -> anyhow::Result<(u64, u64)> {
    let rows = db
        .execute(&DONE, &params! {"partner" => partner, "prefix" => prefix})
        .await?;
    let r = rows
        .rows
        .first()
        .ok_or_else(|| anyhow::anyhow!("no count"))?;
    Ok((r.i64("processed")? as u64, r.i64("delivered")? as u64))
}

async fn one_rate(
    stack: &LocalStack,
    partner: &'static str,
    rate: f64,
    seconds: f64,
    drain: Duration,
    tag: &str,
) -> anyhow::Result<RateRun> {
    // the measurement's own connections: the stack's pool is busy at 1,000/s
    let db: Arc<dyn Database> = Arc::new(PgDatabase::connect(
        stack.database_url(),
        &PgOptions {
            max_connections: 2,
            ..PgOptions::default()
        },
    )?);
    let n = schedule_len(rate, seconds);
    let url = format!("{}/webhooks/{partner}", stack.url());
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()?;
    let secrets = Arc::new([Secret::new(DEMO_SECRET)]);
    let start = Instant::now() + Duration::from_millis(100);
    let start_wall: DateTime<Utc> = Utc::now() + chrono::Duration::milliseconds(100);
    let mut tasks = Vec::with_capacity(n as usize);
    for i in 0..n {
        let due = start + scheduled(i, rate);
        let (client, url, secrets) = (client.clone(), url.clone(), secrets.clone());
        let id = format!("{tag}-{i}");
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(due.into()).await;
            let body = format!(r#"{{"type":"payment.received","order_id":"{id}","amount":12.5}}"#);
            let h = sign_standard_webhooks(&id, Utc::now(), body.as_bytes(), &secrets[..])?;
            let response = client
                .post(&url)
                .header("content-type", "application/json")
                .header("webhook-id", h.id)
                .header("webhook-timestamp", h.timestamp)
                .header("webhook-signature", h.signature)
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let _ = response.bytes().await?;
            anyhow::ensure!(status.is_success(), "the stack answered {status}");
            anyhow::Ok(due.elapsed())
        }));
    }
    // the backlog when the last webhook is due
    tokio::time::sleep_until((start + scheduled(n, rate)).into()).await;
    let prefix = format!("{tag}-%");
    let (processed_then, _) = done(db.as_ref(), partner, &prefix).await?;
    let mut post = Vec::with_capacity(n as usize);
    for t in tasks {
        post.push(t.await??);
    }
    let waited = Instant::now();
    let mut finished = (0, 0);
    while waited.elapsed() < drain {
        // a count that times out while the stack is saturated is tried again
        finished = done(db.as_ref(), partner, &prefix)
            .await
            .unwrap_or(finished);
        if finished == (n, n) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (mut processed, mut delivered) = (Vec::new(), Vec::new());
    let since = |us: i64, id: &str| -> Option<Duration> {
        let i: u64 = id.rsplit('-').next()?.parse().ok()?;
        let due = start_wall + chrono::Duration::from_std(scheduled(i, rate)).ok()?;
        let at = DateTime::<Utc>::from_timestamp_micros(us)?;
        (at - due).to_std().ok().or(Some(Duration::ZERO))
    };
    for (statement, params, into) in [
        (
            &PROCESSED_TIMES,
            params! {"partner" => partner, "prefix" => prefix.as_str()},
            &mut processed,
        ),
        (
            &DELIVERED_TIMES,
            params! {"prefix" => prefix.as_str()},
            &mut delivered,
        ),
    ] {
        let rows = db.execute(statement, &params).await?;
        for r in &rows.rows {
            let id = r.text("event_id")?;
            if let Some(d) = r.opt_i64("at_us")?.and_then(|us| since(us, &id)) {
                into.push(d);
            }
        }
    }
    Ok(RateRun {
        rate,
        sent: n,
        post,
        processed,
        delivered,
        backlog_at_end: n.saturating_sub(processed_then),
        unfinished: (n.saturating_sub(finished.0), n.saturating_sub(finished.1)),
    })
}

/// The partner of the forwarding runs.
const FORWARDED: &str = "forwarded";

/// The rates again on a stack whose partner [`FORWARDED`] is routed to the
/// stack's own `demo-downstream`: POST → destination received.
async fn forwarding(rates: &[f64], seconds: f64, drain: Duration) -> anyhow::Result<Vec<RateRun>> {
    let port = hookbox_testkit::http_sink::HttpSink::free_port();
    let mut config: serde_json::Value = serde_json::from_str(&hookbox_local::demo_config(port))?;
    config["partners"][FORWARDED] = serde_json::json!({
        "signature": {"scheme": "standard-webhooks"},
        "secrets": [DEMO_SECRET],
        "event_id": {"header": "webhook-id"},
        "event_type": "/type",
        "ordering_key": "/order_id",
        "routes": [{"to": hookbox_local::DOWNSTREAM, "event_types": ["*"]}],
    });
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("forwarding.json");
    std::fs::write(&path, config.to_string())?;
    let stack = LocalStack::start(Options {
        port,
        config: Some(path),
        ..Options::default()
    })
    .await?;
    let mut runs = Vec::new();
    for (k, rate) in rates.iter().enumerate() {
        runs.push(
            one_rate(
                &stack,
                FORWARDED,
                *rate,
                seconds,
                drain,
                &format!("fwd{k}-{}", *rate as u64),
            )
            .await?,
        );
    }
    stack.stop().await;
    Ok(runs)
}

/// Every end-to-end figure; writes the histogram PNG to `png_path`.
pub async fn run(
    bench: &Bench,
    rates: &[f64],
    seconds: f64,
    drain: Duration,
    png_path: &std::path::Path,
) -> anyhow::Result<(Vec<Figure>, String)> {
    // the stack as `cargo run -p hookbox-local` runs it: its own throwaway
    // cluster (fsync off), the in-memory queue
    let _ = bench;
    let stack = LocalStack::start(Options {
        port: 0,
        ..Options::default()
    })
    .await?;
    let mut runs = Vec::new();
    for (k, rate) in rates.iter().enumerate() {
        runs.push(
            one_rate(
                &stack,
                DEMO_PARTNER,
                *rate,
                seconds,
                drain,
                // (no thousands separator: a comma in `webhook-id` reads
                // as two lines, docs/ingress.md "the comma rule")
                &format!("e2e{k}-{}", *rate as u64),
            )
            .await?,
        );
    }
    stack.stop().await;
    let forwarded = forwarding(rates, seconds, drain).await?;

    let mut figures = Vec::new();
    let mut note = format!(
        "Each rate sends for {seconds} s, then waits up to {} s for the rest. Latencies count \
         from the scheduled send. The local stack runs {} processor loops (Lambda's \
         concurrency), each waiting on its in-memory queue when idle and woken by a send, and \
         the relay with 2 lanes and a 250 ms idle pause (tools/local), on its own throwaway \
         cluster (fsync off), as `cargo run -p hookbox-local` runs. Histogram: `e2e-latency.png` beside this \
         file, one panel per rate (labelled), x from 1 ms to 10 s, logarithmic, a grid \
         line per decade; blue bars: POST → processed, dark marks: POST → outbound webhook \
         received; heights are shares of the rate's webhooks.\n\n\
         | offered | sent | POST answered p50 / p99 / max (ms) | → processed p50 / p99 / max (ms) | → outbound received p50 / p99 / max (ms) | backlog when sending ended | not processed / not delivered at the end |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        drain.as_secs(),
        hookbox_local::event_source::DEFAULT_CONCURRENCY,
    );
    for r in &mut runs {
        let (a50, a99, amax) = p50_p99_max(&mut r.post);
        let (p50, p99, pmax) = p50_p99_max(&mut r.processed);
        let (d50, d99, dmax) = p50_p99_max(&mut r.delivered);
        note.push_str(&format!(
            "| {}/s | {} | {a50:.1} / {a99:.1} / {amax:.0} | {p50:.1} / {p99:.1} / {pmax:.0} | {d50:.1} / {d99:.1} / {dmax:.0} | {} | {} / {} |\n",
            count(r.rate), r.sent, r.backlog_at_end, r.unfinished.0, r.unfinished.1
        ));
        anyhow::ensure!(
            !r.processed.is_empty(),
            "nothing was processed at {}/s",
            r.rate
        );
        let rate = count(r.rate);
        figures.push(Figure::value(
            SECTION,
            format!("POST answered p99 at {rate}/s"),
            "ms",
            a99,
            Goal::None,
        ));
        let goal = if (r.rate - 200.0).abs() < 1e-9 {
            Goal::AtMost(50.0)
        } else {
            Goal::None
        };
        figures.push(
            Figure::value(
                SECTION,
                format!("POST → processed p99 at {rate}/s"),
                "ms",
                p99,
                goal,
            )
            .when_missed(
                "The processor loops wake on a send and run concurrently, so a webhook waits \
                 only when every loop is busy: the machine is out of CPU (two shared cores run \
                 the sender, the stack and PostgreSQL; compare the load average in the machine \
                 table) or a statement got slower (compare the processor section's PostgreSQL \
                 CPU per message with pgbench's).",
            ),
        );
        figures.push(Figure::value(
            SECTION,
            format!("POST → outbound received p99 at {rate}/s"),
            "ms",
            d99,
            Goal::None,
        ));
        if (r.rate - 1000.0).abs() < 1e-9 {
            figures.push(
                Figure::value(
                    SECTION,
                    format!("backlog when sending ended at {rate}/s (goal: under 0.5 s of load)"),
                    "webhooks",
                    r.backlog_at_end as f64,
                    Goal::AtMost(r.rate * 0.5),
                )
                .when_missed(
                    "CPU-bound on two shared cores: every webhook is ingested, processed (the \
                     orders domain: 6 statements), relayed over HTTP, ingested again as the \
                     demo-downstream webhook and processed again, with the sender in the same \
                     process and PostgreSQL on the same cores (and the neighbour's builds: see \
                     the load average). More processor loops do not help here (8 measured as 4, \
                     2026-12-01); in production ingest, processor, relay and Aurora each have \
                     their own CPUs.",
                ),
            );
        }
    }
    note.push_str(&format!(
        "\nForwarding by routes, on a second stack whose configuration adds the partner \
         `{FORWARDED}`, routed to the stack's own `demo-downstream` (HTTP): ingest stores and \
         forwards each webhook in one statement before it answers (no queue, no processor), \
         the relay delivers it, and its arrival is the `demo-downstream` inbox row.\n\n\
         | offered | sent | POST answered p50 / p99 / max (ms) | → destination received p50 / p99 / max (ms) | not delivered at the end |\n\
         | ---: | ---: | ---: | ---: | ---: |\n"
    ));
    for mut r in forwarded {
        let (a50, a99, amax) = p50_p99_max(&mut r.post);
        let (d50, d99, dmax) = p50_p99_max(&mut r.delivered);
        note.push_str(&format!(
            "| {}/s | {} | {a50:.1} / {a99:.1} / {amax:.0} | {d50:.1} / {d99:.1} / {dmax:.0} | {} |\n",
            count(r.rate),
            r.sent,
            r.unfinished.1
        ));
        anyhow::ensure!(
            !r.delivered.is_empty(),
            "nothing forwarded was delivered at {}/s",
            r.rate
        );
        let rate = count(r.rate);
        figures.push(Figure::value(
            SECTION,
            format!("forwarded: POST → destination received p50 at {rate}/s"),
            "ms",
            d50,
            Goal::None,
        ));
        figures.push(Figure::value(
            SECTION,
            format!("forwarded: POST → destination received p99 at {rate}/s"),
            "ms",
            d99,
            Goal::None,
        ));
    }
    let panels: Vec<crate::histogram::Panel<'_>> = runs
        .iter()
        .map(|r| (r.processed.as_slice(), r.delivered.as_slice()))
        .collect();
    let labels: Vec<String> = runs
        .iter()
        .map(|r| format!("{}/s", count(r.rate)))
        .collect();
    std::fs::write(png_path, crate::histogram::png(&panels, &labels)?)?;
    Ok((figures, note))
}
