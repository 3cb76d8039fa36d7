//! Tenants at scale (issue #41): the relay delivering to tenants' endpoints
//! when there are many of them, and fairly between tenants, each figure
//! beside a baseline measured in the same run on the same cluster:
//!
//! (a) delivery rate and claim latency with many endpoints of many tenants,
//!     rows pending on every one, against 10 endpoints with as many rows;
//! (b) healthy tenants' delivery rate while one tenant's 100 endpoints hang
//!     every request (a loopback receiver that never answers), against the
//!     same healthy work with nothing failing;
//! (c) the p99 delay of a quiet tenant's new events while another tenant
//!     has a large backlog, against the quiet tenant alone;
//! (d) statements per publish to a tenant with 3 endpoints, through both
//!     adapters.
//!
//! Endpoints are seeded with set-based SQL (`generate_series`), as rows of
//! `hookbox_tenants`, `outbox_destinations` and `hookbox_endpoints`. The
//! relay resolves them as the production directory does (from the
//! documents each claim returns with its batch, those past the claim's
//! budget with its statement, `tenants::directory::ENDPOINTS`) but signs
//! with one bench secret: sealing 10,000 secrets one by one would take
//! longer than the measurement.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookbox::clock::{Clock, SystemClock};
use hookbox::outbox::{self, ClaimRequest};
use hookbox::relay::TokioPause;
use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::tenants::{TenantEvent, publish_to};

use crate::counting::CountingDb;
use crate::pg::Bench;
use crate::relay;
use crate::report::{Figure, Goal, count};
use crate::stats::p50_p99_max;
use crate::tenant_setup::{
    Sink, empty_config, exec, known_endpoints_relay, seed_endpoints, seed_rows, tenant_relay,
    tenant_relay_without_http,
};

pub const SECTION: &str = "Tenants at scale";

/// How much each scenario does.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// (a): endpoints and tenants of the large side, rows on each side.
    pub endpoints: u64,
    pub tenants: u64,
    pub rows: u64,
    /// (b): rows of the healthy tenants.
    pub healthy_rows: u64,
    /// (c): the backlog, and the quiet tenant's events (one every 100 ms).
    pub backlog: u64,
    pub quiet_events: u64,
    /// Rounds of (a)'s and (b)'s sides, one after the other (each figure
    /// is the median of its rounds: one round's rate moves by ±10% here).
    pub rounds: usize,
}

pub const QUICK: Sizes = Sizes {
    endpoints: 1_000,
    tenants: 500,
    rows: 2_000,
    healthy_rows: 2_000,
    backlog: 5_000,
    quiet_events: 10,
    rounds: 1,
};

pub const FULL: Sizes = Sizes {
    endpoints: 10_000,
    tenants: 5_000,
    rows: 20_000,
    healthy_rows: 20_000,
    backlog: 100_000,
    quiet_events: 100,
    rounds: 5,
};

/// How (a)'s relay reaches its endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// As the directory resolves them, HTTP to the receiver.
    Directory,
    /// Every endpoint built from its name alone, not from the claims'
    /// documents (diagnostic).
    Known,
    /// As the directory resolves them, each request answered 200 without HTTP
    /// (diagnostic: the relay and the database alone).
    NoHttp,
}

/// (a), one side: claim latency (p50, p99 ms of up to 20 claims of 100 rows,
/// released after) and deliveries/s of a drain.
#[allow(clippy::too_many_arguments)]
async fn many_endpoints(
    bench: &Bench,
    name: &str,
    tenants: u64,
    endpoints: u64,
    rows: u64,
    side: Side,
    data_api: Option<&str>,
) -> anyhow::Result<((f64, f64), f64)> {
    let (_, seeding) = bench.database(name, 16).await?;
    let (url, sink) = Sink::start().await?;
    seed_endpoints(
        seeding.as_ref(),
        1,
        tenants,
        endpoints,
        &format!("{url}/in"),
    )
    .await?;
    seed_rows(seeding.as_ref(), 1, endpoints, rows).await?;
    exec(seeding.as_ref(), "CHECKPOINT".into()).await?;
    let direct = seeding.clone();
    let db = through(seeding, name, data_api);
    let mut claims = Vec::new();
    // at most half the rows, so every claim finds a full batch
    let samples = (rows / relay::BATCH.unsigned_abs() / 2).clamp(2, 21);
    for i in 0..samples {
        let now = SystemClock.now();
        let token = format!("claim-bench/{i}");
        let t = Instant::now();
        let claimed = outbox::claim_batch(
            db.as_ref(),
            ClaimRequest {
                worker: &token,
                now,
                lease_until: now + chrono::Duration::seconds(60),
                limit: relay::BATCH,
                ordered_destinations: &[],
                destination_caps: &[],
            },
            outbox::repo::CLAIM_BUDGET_BYTES,
        )
        .await?;
        if i > 0 {
            claims.push(t.elapsed());
        }
        anyhow::ensure!(!claimed.is_empty(), "a claim found nothing due");
    }
    exec(
        db.as_ref(),
        "UPDATE outbox SET locked_until = NULL, locked_by = NULL WHERE locked_by LIKE 'claim-bench/%'"
            .into(),
    )
    .await?;
    let claim = p50_p99_max(&mut claims);
    let t = Instant::now();
    let relay = match side {
        Side::Known => known_endpoints_relay(db.clone(), name, &format!("{url}/in")),
        Side::Directory => tenant_relay(db.clone(), name),
        Side::NoHttp => tenant_relay_without_http(db.clone(), name),
    };
    let statements = crate::statements::StatementReport::start(direct.as_ref()).await?;
    let cpu_before = crate::stats::cpu_seconds();
    let run = relay.drain(&empty_config()?).await;
    let elapsed = t.elapsed().as_secs_f64();
    statements.print(direct.as_ref(), name, rows).await?;
    // where the time goes (stderr: a diagnostic, not a figure)
    let (own_us, pg_us) = crate::stats::cpu_us_per(cpu_before, crate::stats::cpu_seconds(), rows);
    eprintln!(
        "   (a) {name}: {:.0} deliveries/s; CPU per delivery: {own_us:.0} µs this process \
         (relay, receiver), {pg_us:.0} µs PostgreSQL",
        rows as f64 / elapsed
    );
    anyhow::ensure!(run.errors.is_empty(), "relay errors: {:?}", run.errors);
    anyhow::ensure!(
        run.deliveries.delivered == rows && (side == Side::NoHttp || sink.hits() >= rows),
        "delivered {} of {rows} ({} received)",
        run.deliveries.delivered,
        sink.hits()
    );
    Ok(((claim.0, claim.1), rows as f64 / elapsed))
}

/// The database `name` the relay and the claims use: `direct` itself, or
/// through the local Data API at `data_api` (the production path).
fn through(direct: Arc<dyn Database>, name: &str, data_api: Option<&str>) -> Arc<dyn Database> {
    match data_api {
        None => direct,
        Some(endpoint) => Arc::new(data_api_db(endpoint, name)),
    }
}

/// Database `name` of the bench cluster through the local Data API at
/// `endpoint`.
fn data_api_db(endpoint: &str, name: &str) -> DataApiDatabase {
    DataApiDatabase::local(
        endpoint,
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-bench".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-bench".into(),
            database: name.into(),
        },
    )
}

/// Healthy rows the relay delivers first in (b), while it finds the
/// hanging endpoints slow (their delay is reported beside the rate).
const WARM_ROWS: u64 = 2_000;

/// (b), one side: deliveries/s of `rows` rows over 50 healthy tenants' 100
/// endpoints, while (with `hanging`) a tenant's 100 endpoints, with 20 due
/// rows each, hang every request; and the seconds until the first
/// [`WARM_ROWS`] healthy rows, due beside the hanging ones from the start,
/// had arrived. The `rows` are published once those have: the rate is
/// from the first of them to arrive to the last, while the hanging
/// requests are still unanswered (they time out after 10 s). Also the most
/// hanging requests that were open at once.
async fn healthy_beside_hanging(
    bench: &Bench,
    name: &str,
    rows: u64,
    hanging: bool,
    data_api: Option<&str>,
) -> anyhow::Result<(f64, f64, usize)> {
    let (_, db) = bench.database(name, 16).await?;
    let (url, sink) = Sink::start().await?;
    seed_endpoints(db.as_ref(), 1, 50, 100, &format!("{url}/in")).await?;
    let tarpit = hookbox_testkit::receivers::Tarpit::start().await;
    if hanging {
        seed_endpoints(db.as_ref(), 2, 1, 100, &tarpit.url("/hang")).await?;
        seed_rows(db.as_ref(), 2, 100, 2_000).await?;
    }
    seed_rows(db.as_ref(), 1, 100, WARM_ROWS).await?;
    exec(db.as_ref(), "CHECKPOINT".into()).await?;
    let relay = tenant_relay(through(db.clone(), name, data_api), name);
    let store = empty_config()?;
    let deadline = SystemClock.now() + chrono::Duration::seconds(300);
    let measure = async {
        let t = Instant::now();
        sink.wait_for(WARM_ROWS, Duration::from_secs(120)).await?;
        let warm = t.elapsed().as_secs_f64();
        seed_rows(db.as_ref(), 1, 100, rows).await?;
        sink.wait_for(WARM_ROWS + 1, Duration::from_secs(120))
            .await?;
        let t = Instant::now();
        sink.wait_for(WARM_ROWS + rows, Duration::from_secs(240))
            .await?;
        anyhow::Ok((
            (rows - 1) as f64 / t.elapsed().as_secs_f64(),
            warm,
            tarpit.most_open(),
        ))
    };
    tokio::select! {
        _ = relay.run(&store, deadline, &TokioPause) => anyhow::bail!("the run ended first"),
        done = measure => done,
    }
}

/// (c), one side: the quiet tenant's events (one every 100 ms) from publish
/// to arrival, p50, p99 and max ms, with (or without) another tenant's
/// `backlog` due on 10 endpoints.
async fn quiet_beside_backlog(
    bench: &Bench,
    name: &str,
    backlog: u64,
    events: u64,
) -> anyhow::Result<(f64, f64, f64)> {
    let (_, db) = bench.database(name, 16).await?;
    let (url, sink) = Sink::start().await?;
    seed_endpoints(db.as_ref(), 1, 1, 10, &format!("{url}/in")).await?;
    seed_endpoints(db.as_ref(), 2, 1, 1, &format!("{url}/quiet")).await?;
    if backlog > 0 {
        seed_rows(db.as_ref(), 1, 10, backlog).await?;
    }
    exec(db.as_ref(), "CHECKPOINT".into()).await?;
    let quiet_tenant = "t2-1";
    let relay = tenant_relay(db.clone(), name);
    let store = empty_config()?;
    let deadline = SystemClock.now() + chrono::Duration::seconds(300);
    let publisher = async {
        // the relay's first claims are under way
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut published = HashMap::new();
        for n in 0..events {
            let tx = db.begin().await?;
            let event = TenantEvent {
                event_type: "order.paid".into(),
                payload: serde_json::json!({ "n": n }),
                aggregate: None,
                channels: None,
            };
            publish_to(tx.as_ref(), quiet_tenant, &event, SystemClock.now()).await?;
            tx.commit().await?;
            published.insert(n, Instant::now());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let arrived = sink.quiet.lock().unwrap_or_else(|p| p.into_inner()).len();
            if arrived as u64 >= events {
                break;
            }
            anyhow::ensure!(
                Instant::now() < until,
                "{arrived} of the quiet tenant's {events} events arrived"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        anyhow::Ok(published)
    };
    let published = tokio::select! {
        _ = relay.run(&store, deadline, &TokioPause) => anyhow::bail!("the run ended first"),
        published = publisher => published?,
    };
    let arrived = sink.quiet.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut delays: Vec<Duration> = published
        .iter()
        .filter_map(|(n, at)| arrived.get(n).map(|got| got.saturating_duration_since(*at)))
        .collect();
    Ok(p50_p99_max(&mut delays))
}

/// (d): calls per publish to a tenant with 3 endpoints (BEGIN and COMMIT
/// excluded), through `db`; `calls` counts what reached the adapter.
async fn calls_per_publish(
    db: &dyn Database,
    calls: &dyn Fn() -> u64,
    tenant: &str,
) -> anyhow::Result<f64> {
    const PUBLISHES: u64 = 20;
    let mut statements = 0;
    for n in 0..PUBLISHES {
        let tx = db.begin().await?;
        let before = calls();
        let event = TenantEvent {
            event_type: "order.paid".into(),
            payload: serde_json::json!({ "n": n }),
            aggregate: None,
            channels: None,
        };
        let rows = publish_to(tx.as_ref(), tenant, &event, SystemClock.now()).await?;
        statements += calls() - before;
        tx.commit().await?;
        anyhow::ensure!(
            rows.len() == 3,
            "a publish wrote {} rows, not 3",
            rows.len()
        );
    }
    Ok(statements as f64 / PUBLISHES as f64)
}

async fn publish_calls(bench: &Bench) -> anyhow::Result<(f64, f64)> {
    let (_, db) = bench.database("bench_tenants_d", 4).await?;
    seed_endpoints(db.as_ref(), 1, 1, 3, "http://127.0.0.1:9/in").await?;
    let counting = CountingDb::new(db.clone());
    let counts = counting.counts.clone();
    let direct = calls_per_publish(&counting, &|| counts.total(), "t1-1").await?;
    let server = local_data_api::spawn_background(local_data_api::Config::new(bench.admin_url()))
        .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
    let data_api = Arc::new(data_api_db(&server.endpoint_url(), "bench_tenants_d"));
    let sdk = data_api.clone();
    let via_data_api =
        calls_per_publish(data_api.as_ref(), &|| sdk.calls().total(), "t1-1").await?;
    drop(server);
    Ok((direct, via_data_api))
}

/// The median of `values` (the upper one of an even count; 0 for none).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// One round of one side of (a): claim latency (p50, p99 ms) and rate.
type Round = ((f64, f64), f64);

/// The median rate of `rounds`.
fn rate_of(rounds: &[Round]) -> f64 {
    median(&mut rounds.iter().map(|r| r.1).collect::<Vec<_>>())
}

/// The median claim latencies (p50, p99) of `rounds`.
fn claim_of(rounds: &[Round]) -> (f64, f64) {
    (
        median(&mut rounds.iter().map(|r| r.0.0).collect::<Vec<_>>()),
        median(&mut rounds.iter().map(|r| r.0.1).collect::<Vec<_>>()),
    )
}

/// (a)'s two sides, `rounds` times (10 endpoints as `small`, then the large
/// side as `large`): each round's claim latency and rate, per side.
async fn rounds_of(
    bench: &Bench,
    sizes: Sizes,
    small: &str,
    large: &str,
    side: Side,
    data_api: Option<&str>,
) -> anyhow::Result<(Vec<Round>, Vec<Round>)> {
    let (mut smalls, mut larges) = (Vec::new(), Vec::new());
    for round in 0..sizes.rounds.max(1) {
        // the local Data API keeps its connections to a database it served:
        // a database of its own each round (one it served cannot be made
        // again while they are open)
        let (small, large) = match data_api {
            Some(_) => (format!("{small}_{round}"), format!("{large}_{round}")),
            None => (small.to_string(), large.to_string()),
        };
        smalls.push(many_endpoints(bench, &small, 5, 10, sizes.rows, side, data_api).await?);
        larges.push(
            many_endpoints(
                bench,
                &large,
                sizes.tenants,
                sizes.endpoints,
                sizes.rows,
                side,
                data_api,
            )
            .await?,
        );
    }
    Ok((smalls, larges))
}

/// Every figure of the section.
pub async fn run(bench: &Bench, sizes: Sizes) -> anyhow::Result<(Vec<Figure>, String)> {
    let mut figures = Vec::new();
    // (a): the small side first, then the large one, `rounds` times
    let (small, large) = rounds_of(
        bench,
        sizes,
        "bench_tenants_a10",
        "bench_tenants_a",
        Side::Directory,
        None,
    )
    .await?;
    let (small_rate, large_rate) = (rate_of(&small), rate_of(&large));
    let (small_claim, large_claim) = (claim_of(&small), claim_of(&large));
    // diagnostic: 100 endpoints, as many rows (where the cost of more
    // endpoints begins)
    let (_, mid_rate) = many_endpoints(
        bench,
        "bench_tenants_a100",
        50,
        100,
        sizes.rows,
        Side::Directory,
        None,
    )
    .await?;
    // diagnostic: the same large side with every endpoint known in advance
    let (_, known_rate) = many_endpoints(
        bench,
        "bench_tenants_a_known",
        sizes.tenants,
        sizes.endpoints,
        sizes.rows,
        Side::Known,
        None,
    )
    .await?;
    // diagnostic: both sides again without HTTP (what the relay and the
    // database cost apart from the requests)
    let (small, large) = rounds_of(
        bench,
        sizes,
        "bench_tenants_n10",
        "bench_tenants_n",
        Side::NoHttp,
        None,
    )
    .await?;
    let (small_bare, large_bare) = (rate_of(&small), rate_of(&large));
    let many = format!(
        "{} endpoints of {} tenants",
        count(sizes.endpoints as f64),
        count(sizes.tenants as f64)
    );
    figures.push(
        Figure::ratio(
            SECTION,
            format!("delivery rate, {many}, rows pending on each"),
            "deliveries/s",
            large_rate,
            ("10 endpoints, as many rows", small_rate),
            Goal::RatioAtLeast(0.9),
        )
        .when_missed(
            "What is left is the claims' reading of each endpoint's document and the relay's \
             first use of each endpoint (against the endpoints-known row) and the requests' \
             CPU (the no-HTTP row): see the figure note.",
        ),
    );
    figures.push(Figure::ratio(
        SECTION,
        "delivery rate, 100 endpoints of 50 tenants, as many rows",
        "deliveries/s",
        mid_rate,
        ("10 endpoints, as many rows", small_rate),
        Goal::None,
    ));
    figures.push(Figure::ratio(
        SECTION,
        format!("delivery rate, {many}, endpoints known (not built from their documents)"),
        "deliveries/s",
        known_rate,
        ("10 endpoints, as many rows", small_rate),
        Goal::None,
    ));
    figures.push(Figure::ratio(
        SECTION,
        format!("delivery rate, {many}, no HTTP (each request answered at once in process)"),
        "deliveries/s",
        large_bare,
        ("10 endpoints, as many rows, no HTTP", small_bare),
        Goal::None,
    ));
    figures.push(Figure::ratio(
        SECTION,
        format!("claim p50, 100 rows, {many}"),
        "ms",
        large_claim.0,
        ("10 endpoints", small_claim.0),
        Goal::None,
    ));
    // (b)
    let (mut calms, mut storms, mut calm_warms, mut stormy_warms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut most_hanging = 0;
    for _ in 0..sizes.rounds.max(1) {
        let (rate, warm, _) =
            healthy_beside_hanging(bench, "bench_tenants_b0", sizes.healthy_rows, false, None)
                .await?;
        calms.push(rate);
        calm_warms.push(warm);
        let (rate, warm, most) =
            healthy_beside_hanging(bench, "bench_tenants_b", sizes.healthy_rows, true, None)
                .await?;
        storms.push(rate);
        stormy_warms.push(warm);
        most_hanging = most_hanging.max(most);
    }
    let (calm, stormy) = (median(&mut calms), median(&mut storms));
    let (calm_warm, stormy_warm) = (median(&mut calm_warms), median(&mut stormy_warms));
    figures.push(
        Figure::ratio(
            SECTION,
            "healthy tenants' delivery rate while 100 endpoints of one tenant hang",
            "deliveries/s",
            stormy,
            ("nothing failing", calm),
            Goal::RatioAtLeast(0.9),
        )
        .when_missed(
            "Hanging requests hold the relay's lanes or its claims: see docs/relay.md, \
             fairness.",
        ),
    );
    figures.push(Figure::ratio(
        SECTION,
        format!(
            "time to the first {} healthy rows, due beside the hanging ones (the relay finds \
             them slow)",
            count(WARM_ROWS as f64)
        ),
        "s",
        stormy_warm,
        ("nothing failing", calm_warm),
        Goal::None,
    ));
    // (a) and (b) again, the relay reaching the database through the local
    // Data API (the production path)
    let server = local_data_api::spawn_background(local_data_api::Config::new(bench.admin_url()))
        .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
    let api = server.endpoint_url();
    let api = Some(api.as_str());
    let (small, large) = rounds_of(
        bench,
        sizes,
        "bench_tenants_da10",
        "bench_tenants_da",
        Side::Directory,
        api,
    )
    .await?;
    let (small_api, large_api) = (rate_of(&small), rate_of(&large));
    let large_claim_api = claim_of(&large);
    figures.push(Figure::ratio(
        SECTION,
        format!("delivery rate, {many}, rows pending on each, Data API"),
        "deliveries/s",
        large_api,
        ("10 endpoints, as many rows, Data API", small_api),
        Goal::RatioAtLeast(0.9),
    ));
    let (mut calms_api, mut storms_api) = (Vec::new(), Vec::new());
    for round in 0..sizes.rounds.max(1) {
        let (calm, stormy) = (
            format!("bench_tenants_db0_{round}"),
            format!("bench_tenants_db_{round}"),
        );
        let (rate, _, _) =
            healthy_beside_hanging(bench, &calm, sizes.healthy_rows, false, api).await?;
        calms_api.push(rate);
        let (rate, _, most) =
            healthy_beside_hanging(bench, &stormy, sizes.healthy_rows, true, api).await?;
        storms_api.push(rate);
        most_hanging = most_hanging.max(most);
    }
    let (calm_api, stormy_api) = (median(&mut calms_api), median(&mut storms_api));
    figures.push(Figure::ratio(
        SECTION,
        "healthy tenants' delivery rate while 100 endpoints of one tenant hang, Data API",
        "deliveries/s",
        stormy_api,
        ("nothing failing, Data API", calm_api),
        Goal::RatioAtLeast(0.9),
    ));
    drop(server);
    // (c)
    let alone = quiet_beside_backlog(bench, "bench_tenants_c0", 0, sizes.quiet_events).await?;
    let beside =
        quiet_beside_backlog(bench, "bench_tenants_c", sizes.backlog, sizes.quiet_events).await?;
    figures.push(
        Figure::ratio(
            SECTION,
            format!(
                "quiet tenant's p99 delay, another tenant's backlog of {}",
                count(sizes.backlog as f64)
            ),
            "ms",
            beside.1,
            ("the quiet tenant alone", alone.1),
            Goal::AtMost(2_000.0),
        )
        .when_missed("The claim takes the oldest due rows first, whoever they are for."),
    );
    // (d)
    let (direct, via_data_api) = publish_calls(bench).await?;
    figures.push(Figure::value(
        SECTION,
        "statements per publish to a tenant with 3 endpoints, direct PostgreSQL",
        "statements",
        direct,
        Goal::AtMost(1.0),
    ));
    figures.push(Figure::value(
        SECTION,
        "statements per publish to a tenant with 3 endpoints, Data API",
        "ExecuteStatement calls",
        via_data_api,
        Goal::AtMost(1.0),
    ));
    let note = format!(
        "Direct PostgreSQL, the durable bench cluster, an instant receiver on 127.0.0.1; the \
         goal figures of (a) and (b), through either database path, are medians of {rounds} \
         rounds (each side one after the other in each round: one round's rate moves by about \
         ±10% on this machine); the \
         relay of the Relay section (4 lanes, batches of {}), tenants' endpoints resolved as \
         the directory does, from the documents each claim returns with its batch. (a): {rows} due rows spread evenly over {many}, against \
         the same rows over 10 endpoints of 5 tenants; claim latency from up to 20 claims of {} \
         rows before the drain, each reading its endpoints' documents (p99 {:.2} ms against \
         {:.2} ms); the diagnostic side builds every endpoint from its name alone, not from \
         the claims' documents, to show what building them costs; the no-HTTP \
         sides ({rounds} rounds) answer every request 200 in process, to show what the relay \
         and the database cost apart from the requests (every side's endpoints share one \
         receiver, so the relay sends it at most {per_host} requests at once, \
         `HOOKBOX_RELAY_REQUESTS_PER_HOST`: with 10 endpoints their 10 request slots each come \
         to the same; with {many} each row of a batch has its own endpoint, and 4 lanes of \
         {batch} rows would make 400). (b): {warm} rows over 100 \
         endpoints of 50 tenants, due beside 2,000 rows of one tenant's 100 endpoints whose \
         receiver reads every request and never answers (timeout 10 s), then, once they have \
         arrived, {healthy} more: their rate from the first to arrive to the last (the \
         hanging requests still unanswered); the time to the first {warm} is what finding \
         the hanging endpoints slow costs (a lane's idle second); at most {most_hanging} \
         hanging requests were open at once (slow endpoints together hold at most {slow_bound}: \
         `hookbox::relay::MAX_SLOW_ENDPOINT_REQUESTS`). (a) and (b), Data API: \
         the same, the relay and its claims reaching the database through the local Data API \
         (HTTP and JSON on this machine: each statement costs more, so the rates are lower \
         and the database's share of them smaller; claim p50 {:.2} ms with {many}). (c): one event to the quiet tenant every 100 ms, {events} events, \
         from its publish's commit to its arrival (p50 {:.0} ms, max {:.0} ms; alone p50 \
         {:.0} ms), while another tenant has {backlog} due rows on 10 endpoints. (d): 20 \
         publishes (`hookbox::tenants::publish_to`, `hookbox_publish_to`), each writing 3 \
         rows, statements counted at the port (BEGIN and COMMIT excluded).\n",
        relay::BATCH,
        relay::BATCH,
        large_claim.1,
        small_claim.1,
        large_claim_api.0,
        beside.0,
        beside.2,
        alone.0,
        rounds = sizes.rounds.max(1),
        batch = relay::BATCH,
        per_host = hookbox::relay::DEFAULT_REQUESTS_PER_HOST,
        slow_bound = hookbox::relay::MAX_SLOW_ENDPOINT_REQUESTS,
        rows = count(sizes.rows as f64),
        healthy = count(sizes.healthy_rows as f64),
        warm = count(WARM_ROWS as f64),
        events = sizes.quiet_events,
        backlog = count(sizes.backlog as f64),
    );
    Ok((figures, note))
}
