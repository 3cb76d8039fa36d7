//! Scale: ingest latency, processor claim latency and the relay's rate with
//! many rows already in the inbox (almost all processed) and 1 M delivered
//! outbox rows, against the same on the empty database, in the same run.
//! Long (minutes per 10 M rows on two cores): behind `--scale`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use hookbox::clock::{Clock, SystemClock};
use hookbox::inbox::ingest::{IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::signature::Headers;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};

use crate::pg::Bench;
use crate::report::{Figure, Goal, count};
use crate::stats::p50_p99_max;
use crate::{ingest, processor, relay};

pub const SECTION: &str = "Scale";
const SAMPLES: u64 = 1_000;
const FILL_CHUNK: u64 = 1_000_000;
const OUTBOX_ROWS: u64 = 1_000_000;

/// Latencies at one size: ingest p50/p99, claim p50/p99 (ms), relay rows/s.
#[derive(Debug, Clone, Copy)]
struct Point {
    rows: u64,
    ingest: (f64, f64),
    claim: (f64, f64),
    relay_rate: f64,
}

async fn exec(db: &dyn Database, sql: String) -> anyhow::Result<()> {
    let sql: &'static str = Box::leak(sql.into_boxed_str());
    db.execute(&Statement::new("bench.scale", sql), &hookbox::params! {})
        .await?;
    Ok(())
}

/// History rows `from..to` of the inbox: 99% processed, 0.5% quarantined,
/// 0.5% dead, received over the last 30 days.
async fn fill_inbox(db: &dyn Database, from: u64, to: u64) -> anyhow::Result<()> {
    let mut at = from;
    while at < to {
        let end = (at + FILL_CHUNK).min(to);
        exec(
            db,
            format!(
                "INSERT INTO inbox (id, partner, event_id, event_type, ordering_key, body,
                                    signature_verified, status, received_at, processed_at, attempts)
                 SELECT gen_random_uuid(), 'demo', 'old-' || g, 'payment.received', 'ord_' || (g % 100000),
                        convert_to('{{\"type\":\"payment.received\",\"order_id\":\"ord_' || g || '\",\"amount\":1.5}}', 'UTF8'),
                        true,
                        CASE WHEN g % 200 = 0 THEN 'quarantined' WHEN g % 201 = 0 THEN 'dead'
                             ELSE 'processed' END,
                        now() - (g % 2592000) * interval '1 second',
                        now() - (g % 2592000) * interval '1 second', 1
                   FROM generate_series(CAST({at} AS bigint), CAST({end} AS bigint) - 1) AS g"
            ),
        )
        .await?;
        at = end;
    }
    Ok(())
}

async fn fill_outbox(db: &dyn Database, rows: u64) -> anyhow::Result<()> {
    exec(
        db,
        format!(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination, payload,
                                 status, next_attempt_at, created_at, processed_at, attempts)
             SELECT gen_random_uuid(), 'order', 'old-' || g, 'order.status_changed', 'sink',
                    '{{\"status\":\"paid\"}}', 'delivered',
                    now() - (g % 2592000) * interval '1 second',
                    now() - (g % 2592000) * interval '1 second',
                    now() - (g % 2592000) * interval '1 second', 1
               FROM generate_series(1, {rows}) AS g"
        ),
    )
    .await
}

/// Measures at `rows`; `pass` keeps each pass's new rows apart.
async fn measure(db: Arc<dyn Database>, rows: u64, pass: u64) -> anyhow::Result<Point> {
    let tag = format!("{rows}-{pass}");
    exec(db.as_ref(), "VACUUM ANALYZE inbox".into()).await?;
    exec(db.as_ref(), "VACUUM ANALYZE outbox".into()).await?;
    // the fill's WAL flushed now, not during the measurement
    exec(db.as_ref(), "CHECKPOINT".into()).await?;
    // ingest: one client, one webhook after the other
    let use_case = ingest::use_case(db.clone())?;
    let events = ingest::sign(&format!("scale-{tag}"), SAMPLES)?;
    let mut latencies = Vec::with_capacity(events.len());
    for (headers, body) in &events {
        let request = IngestRequest {
            partner: "demo",
            headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
            body,
            url: None,
        };
        let t = Instant::now();
        let response = use_case.handle(&request, &mut Metrics::new()).await;
        latencies.push(t.elapsed());
        anyhow::ensure!(
            matches!(response.outcome, Outcome::Accepted { .. }),
            "{:?}",
            response.outcome
        );
    }
    let (i50, i99, _) = p50_p99_max(&mut latencies);
    // the processor's claim: 10 pending rows by id, after the other
    let base = (1u64 << 40) + (pass << 20);
    processor::insert_pending(db.as_ref(), base, base + SAMPLES).await?;
    let mut claims = Vec::new();
    for b in 0..SAMPLES / 10 {
        let ids: Vec<uuid::Uuid> = (0..10)
            .map(|k| processor::id_of(base + b * 10 + k))
            .collect();
        let now = SystemClock.now();
        let t = Instant::now();
        let claimed = hookbox::inbox::lease::claim(
            db.as_ref(),
            &ids,
            now,
            now + chrono::Duration::minutes(5),
        )
        .await?;
        claims.push(t.elapsed());
        let got = claimed
            .iter()
            .filter(|c| matches!(c, hookbox::inbox::lease::Claim::Claimed { .. }))
            .count();
        anyhow::ensure!(got == 10, "claimed {got} of 10: {claimed:?}");
    }
    let (c50, c99, _) = p50_p99_max(&mut claims);
    // the relay: 1,000 new rows among the delivered ones, an instant sender
    relay::fill(db.as_ref(), 1_000).await?;
    let store = relay::config("http://127.0.0.1:9/in")?;
    let t = Instant::now();
    let run = relay::relay(
        db.clone(),
        Arc::new(relay::NullSender(Arc::new(AtomicU64::new(0)))),
        &format!("scale-{tag}"),
    )
    .drain(&store)
    .await;
    let elapsed = t.elapsed().max(Duration::from_micros(1));
    anyhow::ensure!(
        run.deliveries.delivered == 1_000,
        "relay delivered {}",
        run.deliveries.delivered
    );
    Ok(Point {
        rows,
        ingest: (i50, i99),
        claim: (c50, c99),
        relay_rate: 1_000.0 / elapsed.as_secs_f64(),
    })
}

/// Every scale figure: the empty database, then each size in `sizes`.
pub async fn run(bench: &Bench, sizes: &[u64]) -> anyhow::Result<(Vec<Figure>, String)> {
    let (url, setup) = bench.database("bench_scale", 1).await?;
    // commits do not wait for the WAL flush here: this disk's fsync time
    // (2-4 ms, and noisy on a shared machine) would hide what the table's
    // size does to the statements themselves
    exec(
        setup.as_ref(),
        "ALTER DATABASE bench_scale SET synchronous_commit = off".into(),
    )
    .await?;
    drop(setup);
    let db: Arc<dyn Database> = Arc::new(PgDatabase::connect(
        &url,
        &PgOptions {
            max_connections: 4,
            ..PgOptions::default()
        },
    )?);
    let off = db
        .execute(
            &Statement::new(
                "bench.show",
                "SELECT current_setting('synchronous_commit') AS v",
            ),
            &hookbox::params! {},
        )
        .await?;
    anyhow::ensure!(
        off.rows.first().and_then(|r| r.text("v").ok()).as_deref() == Some("off"),
        "synchronous_commit is not off for the scale database"
    );
    // a first pass warms the pool, the caches and the plans
    measure(db.clone(), 0, 0).await?;
    let mut points = vec![measure(db.clone(), 0, 1).await?];
    let mut have = 0u64;
    let mut outbox = false;
    let started = Instant::now();
    for &size in sizes {
        eprintln!("   scale: filling the inbox to {} rows", count(size as f64));
        fill_inbox(db.as_ref(), have, size).await?;
        have = have.max(size);
        if !outbox {
            fill_outbox(db.as_ref(), OUTBOX_ROWS).await?;
            outbox = true;
        }
        points.push(measure(db.clone(), size, points.len() as u64 + 1).await?);
    }
    let empty = points[0];
    let largest = points.last().map_or(0, |p| p.rows);
    let mut figures = Vec::new();
    let mut note = format!(
        "The same database grows: the inbox is filled with processed rows (0.5% quarantined, \
         0.5% dead) received over 30 days, and {} delivered outbox rows join it at the first \
         size; VACUUM ANALYZE and CHECKPOINT after each fill. Commits do not wait for \
         the WAL flush (`synchronous_commit = off`), so the latencies are the statements' own, \
         not this disk's fsync; a first pass on the empty database warms up. At each size: {SAMPLES} webhooks ingested one \
         after the other, {} claims of 10 pending rows, a relay drain of 1,000 new outbox rows \
         (an instant sender). Filling and measuring took {:.0} s.\n\n\
         | inbox rows | ingest p50 / p99 (ms) | claim p50 / p99 (ms) | relay, rows/s |\n\
         | ---: | ---: | ---: | ---: |\n",
        count(OUTBOX_ROWS as f64),
        SAMPLES / 10,
        started.elapsed().as_secs_f64()
    );
    for p in &points {
        note.push_str(&format!(
            "| {} | {:.2} / {:.2} | {:.2} / {:.2} | {} |\n",
            count(p.rows as f64),
            p.ingest.0,
            p.ingest.1,
            p.claim.0,
            p.claim.1,
            count(p.relay_rate)
        ));
    }
    for p in points.iter().skip(1) {
        let goal = if p.rows == largest {
            Goal::RatioAtMost(1.2)
        } else {
            Goal::None
        };
        let size = count(p.rows as f64);
        let why = "An index that grows with history (the partial indexes should not) or a \
                   plan that scans; EXPLAIN the statement at that size.";
        figures.push(
            Figure::ratio(
                SECTION,
                format!("ingest p50 with {size} inbox rows"),
                "ms",
                p.ingest.0,
                ("empty inbox", empty.ingest.0),
                goal,
            )
            .when_missed(why),
        );
        figures.push(
            Figure::ratio(
                SECTION,
                format!("processor claim p50 with {size} inbox rows"),
                "ms",
                p.claim.0,
                ("empty inbox", empty.claim.0),
                goal,
            )
            .when_missed(why),
        );
        figures.push(
            Figure::ratio(
                SECTION,
                format!("relay time per row with {size} inbox + 1 M delivered outbox rows"),
                "ms",
                1e3 / p.relay_rate,
                ("empty outbox", 1e3 / empty.relay_rate),
                goal,
            )
            .when_missed(why),
        );
    }
    Ok((figures, note))
}
