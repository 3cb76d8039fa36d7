//! Shared setup of the repository tests: a fresh, migrated database per test,
//! reached through either adapter of the database port.
//!
//! The tests talk to `dyn Database` only; `for_each_adapter!` runs each of
//! them twice, through direct PostgreSQL and through the RDS Data API
//! adapter → `tools/local-data-api` → the same PostgreSQL, with the same
//! assertions.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_testkit::TestDb;

/// Which adapter of the port a test runs through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    /// tokio-postgres, pooled.
    Postgres,
    /// aws-sdk-rdsdata against the local Data API server.
    DataApi,
}

/// The Data API adapter for one test database.
pub fn data_api(test_db: &TestDb) -> DataApiDatabase {
    DataApiDatabase::local(
        &hookbox_testkit::data_api_endpoint(),
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-test".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-test".into(),
            database: test_db.name().into(),
        },
    )
}

/// A fresh database (not migrated) reached through `adapter`, the pool (for
/// direct PostgreSQL) allowing `max_connections`.
pub async fn empty_db_with(
    adapter: Adapter,
    max_connections: usize,
) -> (TestDb, Arc<dyn Database>) {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> = match adapter {
        Adapter::Postgres => Arc::new(
            PgDatabase::connect(
                test_db.url(),
                &PgOptions {
                    max_connections,
                    ..PgOptions::default()
                },
            )
            .expect("pool"),
        ),
        Adapter::DataApi => Arc::new(data_api(&test_db)),
    };
    (test_db, db)
}

/// A fresh, empty database.
pub async fn empty_db(adapter: Adapter) -> (TestDb, Arc<dyn Database>) {
    empty_db_with(adapter, PgOptions::default().max_connections).await
}

/// A fresh database with hookbox's schema.
pub async fn migrated_db_with(
    adapter: Adapter,
    max_connections: usize,
) -> (TestDb, Arc<dyn Database>) {
    let (test_db, db) = empty_db_with(adapter, max_connections).await;
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    (test_db, db)
}

/// A fresh database with hookbox's schema.
pub async fn migrated_db(adapter: Adapter) -> (TestDb, Arc<dyn Database>) {
    migrated_db_with(adapter, PgOptions::default().max_connections).await
}

/// A fixed instant, so tests never depend on the wall clock.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
        .single()
        .expect("valid instant")
}

/// `t0` plus seconds.
pub fn at(seconds: i64) -> DateTime<Utc> {
    t0() + chrono::Duration::seconds(seconds)
}

/// A statement built at run time (test-only SQL).
pub fn sql(text: &str) -> Statement {
    Statement::new("test.sql", Box::leak(text.to_string().into_boxed_str()))
}

/// The `n` column of `query`'s one row (`SELECT count(*) AS n …`).
pub async fn count(db: &dyn hookbox::store::Executor, query: &str) -> i64 {
    hookbox::store::fetch_one(db, &sql(query), &hookbox::params! {})
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .i64("n")
        .expect("n")
}

/// `statement`'s plan for `params` (`EXPLAIN`, one line per row of text).
pub async fn plan(
    db: &dyn hookbox::store::Executor,
    statement: &Statement,
    params: &hookbox::store::Params,
) -> String {
    let explain = sql(&format!("EXPLAIN {}", statement.sql));
    db.execute(&explain, params)
        .await
        .unwrap_or_else(|e| panic!("EXPLAIN {}: {e}", statement.name))
        .rows
        .iter()
        .map(|r| r.text("QUERY PLAN").expect("plan line"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The settings a SQL function carries (`SET …` in its definition,
/// `name=value`, sorted): the planner settings that pin its plan.
pub async fn function_settings(db: &dyn hookbox::store::Executor, function: &str) -> Vec<String> {
    db.execute(
        &sql("SELECT unnest(proconfig) AS setting FROM pg_proc
              WHERE proname = :function ORDER BY 1"),
        &hookbox::params! { "function" => function },
    )
    .await
    .expect("proconfig")
    .rows
    .iter()
    .map(|r| r.text("setting").expect("setting"))
    .collect()
}

/// `plan` goes through `index` and never scans all of `table`.
pub fn assert_uses(plan: &str, index: &str, table: &str) {
    assert!(plan.contains(index), "expected {index} in:\n{plan}");
    assert!(
        !plan.contains(&format!("Seq Scan on {table} ")),
        "unexpected sequential scan of {table}:\n{plan}"
    );
}

/// Runs each named `async fn(Adapter)` as two tests: `postgres::name` and
/// `data_api::name`.
#[macro_export]
macro_rules! for_each_adapter {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::common::Adapter::Postgres).await
                }
            )*
        }
        mod data_api {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::common::Adapter::DataApi).await
                }
            )*
        }
    };
}

/// A claim of due outbox rows with no ordered destination.
pub fn claim(
    worker: &str,
    now: chrono::DateTime<chrono::Utc>,
    lease_until: chrono::DateTime<chrono::Utc>,
    limit: i64,
) -> hookbox::outbox::ClaimRequest<'_> {
    hookbox::outbox::ClaimRequest {
        worker,
        now,
        lease_until,
        limit,
        ordered_destinations: &[],
        destination_caps: &[],
    }
}

/// History for plan tests, analyzed: 20,000 finished inbox rows (1% quarantined,
/// ~1% dead) and 20,000 finished outbox rows (1% dead), 10 pending of each.
pub async fn load_history(db: &dyn hookbox::store::Executor) {
    for statement in [
        "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                            received_at, processed_at, attempts)
         SELECT gen_random_uuid(), 'acme', 'old-' || g, convert_to('{}', 'UTF8'), true,
                CASE WHEN g % 100 = 0 THEN 'quarantined' WHEN g % 101 = 0 THEN 'dead'
                     ELSE 'processed' END,
                timestamptz '2026-01-01' + g * interval '1 second',
                timestamptz '2026-01-01' + g * interval '1 second', 1
           FROM generate_series(1, 20000) AS g",
        "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                            received_at, next_attempt_at)
         SELECT gen_random_uuid(), 'acme', 'new-' || g, convert_to('{}', 'UTF8'), true, 'pending',
                timestamptz '2026-06-01' + g * interval '1 second',
                timestamptz '2026-06-01' + g * interval '1 second'
           FROM generate_series(1, 10) AS g",
        "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination, payload,
                             status, next_attempt_at, created_at, processed_at, attempts)
         SELECT gen_random_uuid(), 'order', 'o-' || g, 'order.paid', 'erp', '{}',
                CASE WHEN g % 100 = 0 THEN 'dead' ELSE 'delivered' END,
                timestamptz '2026-01-01' + g * interval '1 second',
                timestamptz '2026-01-01' + g * interval '1 second',
                timestamptz '2026-01-01' + g * interval '1 second', 1
           FROM generate_series(1, 20000) AS g",
        "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination, payload,
                             status, next_attempt_at, created_at)
         SELECT gen_random_uuid(), 'order', 'n-' || g, 'order.paid', 'erp', '{}', 'pending',
                timestamptz '2026-06-01' + g * interval '1 second',
                timestamptz '2026-06-01' + g * interval '1 second'
           FROM generate_series(1, 10) AS g",
        "ANALYZE inbox",
        "ANALYZE outbox",
    ] {
        db.execute(&sql(statement), &hookbox::params! {})
            .await
            .expect("load");
    }
}

/// A migrated database on a private cluster a test may kill and restart,
/// through one adapter.
pub struct KillableDb {
    /// The cluster (kill, restart).
    pub cluster: hookbox_testkit::PrivateCluster,
    /// The database, through the adapter.
    pub db: Arc<dyn Database>,
    /// The local Data API server in front of it (Data API adapter).
    _data_api: Option<Box<dyn std::any::Any + Send>>,
}

pub async fn killable_db(adapter: Adapter) -> KillableDb {
    // durable commits: the drill kills PostgreSQL as a crash would, and a
    // commit that was acknowledged must survive that (without fsync and
    // synchronous_commit the throwaway cluster loses the last ones)
    let cluster = hookbox_testkit::PrivateCluster::start_durable();
    let (db, data_api): (Arc<dyn Database>, _) = match adapter {
        Adapter::Postgres => (
            Arc::new(
                PgDatabase::connect(
                    cluster.url(),
                    &PgOptions {
                        acquire_timeout: Duration::from_secs(2),
                        ..PgOptions::default()
                    },
                )
                .expect("pool"),
            ),
            None,
        ),
        Adapter::DataApi => {
            let server = hookbox_testkit::start_data_api(cluster.url());
            let db = DataApiDatabase::local(
                &server.endpoint_url(),
                DataApiTarget {
                    resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:drill".into(),
                    secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:drill".into(),
                    database: "postgres".into(),
                },
            );
            (
                Arc::new(db),
                Some(Box::new(server) as Box<dyn std::any::Any + Send>),
            )
        }
    };
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    KillableDb {
        cluster,
        db,
        _data_api: data_api,
    }
}

/// A relay over `db` posting with the real HTTP adapter, an in-memory blob
/// store, no queue, on `clock` (the system's, for tests that wait on real
/// receivers).
pub fn live_relay(
    db: Arc<dyn Database>,
    clock: Arc<dyn hookbox::clock::Clock>,
    settings: hookbox::relay::RelaySettings,
) -> hookbox::relay::Relay {
    hookbox::relay::Relay::new(
        db,
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        Arc::new(hookbox::relay::HttpSender::default()),
        None,
        clock,
        settings,
    )
}

/// [`live_relay`] on a manual clock, no jitter.
pub fn http_relay(
    db: Arc<dyn Database>,
    clock: Arc<hookbox::clock::ManualClock>,
    settings: hookbox::relay::RelaySettings,
) -> hookbox::relay::Relay {
    live_relay(db, clock, settings).with_jitter(Arc::new(hookbox::relay::FixedJitter(0.0)))
}

/// Scans of the inbox so far in the current transaction of `tx` (PostgreSQL's
/// counters, which count the statements inside functions too): sequential
/// scans of the table, and index scans of its active-row indexes.
pub async fn inbox_scans(tx: &dyn hookbox::store::Executor) -> (i64, i64) {
    let row = tx
        .execute(
            &sql("SELECT (SELECT seq_scan FROM pg_stat_xact_user_tables
                           WHERE relname = 'inbox') AS seq_scans,
                         (SELECT CAST(coalesce(sum(pg_stat_get_xact_numscans(oid)), 0)
                                      AS bigint)
                            FROM pg_class
                           WHERE relkind = 'i' AND relname LIKE 'inbox_active%')
                           AS active_index_scans"),
            &hookbox::params! {},
        )
        .await
        .expect("scan counters")
        .rows
        .into_iter()
        .next()
        .expect("one row");
    (
        row.i64("seq_scans").expect("seq_scans"),
        row.i64("active_index_scans").expect("active_index_scans"),
    )
}

/// One processor invocation over every visible message of `queue` (the
/// processor's own queue), as the event source mapping runs it: the
/// messages not to retry are deleted; each message's outcome kind.
pub async fn process_visible(
    processor: &hookbox::processing::Processor<'_>,
    queue: &hookbox::queue::memory::MemoryQueue,
) -> Vec<&'static str> {
    use hookbox::queue::QueueConsumer as _;
    let got = queue.receive(10).await.expect("receive");
    let report = processor.process_batch(&got, None).await;
    let retry = report.retry_message_ids();
    for m in &got {
        if !retry.contains(&m.message_id) {
            queue.delete(&m.receipt_handle).await.expect("delete");
        }
    }
    report.results.iter().map(|r| r.outcome.kind()).collect()
}

/// `body` with `headers`, signed as `preset` signs with `secret` at `now`,
/// handed to `ingest` for `partner` (as the ingest function would).
pub async fn ingest_signed_by_preset(
    ingest: &hookbox::inbox::ingest::Ingest,
    partner: &str,
    preset: &hookbox::signature::presets::Preset,
    secret: &str,
    headers: &[(&str, &str)],
    body: &str,
    now: DateTime<Utc>,
) -> hookbox::inbox::ingest::IngestResponse {
    use hookbox::signature::presets::{Outgoing, SigningKey};
    use hookbox::signature::{Headers, Secret};
    let signed = preset
        .sign(
            &Outgoing {
                body: body.as_bytes(),
                headers,
                url: None,
                method: "POST",
                timestamp: now,
            },
            SigningKey::Secret(&Secret::new(secret)),
        )
        .expect("sign");
    let all: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .chain(signed.into_iter().map(|(n, v)| (n.to_owned(), v)))
        .collect();
    let request = hookbox::inbox::ingest::IngestRequest {
        partner,
        headers: Headers::from_pairs(all.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        body: body.as_bytes(),
        url: None,
    };
    ingest
        .handle(&request, &mut hookbox::metrics::Metrics::new())
        .await
}

/// The requests `sink` received, counted per second of their signed
/// `webhook-timestamp` (the relay's clock).
pub fn requests_per_second(
    sink: &hookbox_testkit::http_sink::HttpSink,
) -> std::collections::BTreeMap<i64, usize> {
    let mut per_second = std::collections::BTreeMap::new();
    for request in sink.requests() {
        let second: i64 = request
            .header("webhook-timestamp")
            .expect("signed")
            .parse()
            .expect("seconds");
        *per_second.entry(second).or_default() += 1;
    }
    per_second
}

/// 7 requests under a limit of 2 a second (a second's tokens to start):
/// all 7 sent, no second with more than twice the rate (a second's tokens
/// and the burst claimed just before it), at least 2.5 s from first to last.
pub fn assert_seven_at_two_a_second(per_second: &std::collections::BTreeMap<i64, usize>) {
    assert_eq!(per_second.values().sum::<usize>(), 7, "{per_second:?}");
    assert!(
        per_second.values().all(|n| *n <= 4),
        "at most twice the rate in any second: {per_second:?}"
    );
    let first = per_second.keys().min().copied().unwrap_or_default();
    let last = per_second.keys().max().copied().unwrap_or_default();
    assert!(
        last - first >= 2,
        "7 requests at 2 a second, 2 at once, take 2.5 s: {per_second:?}"
    );
}

/// A database that is down: every call and BEGIN answer `Unavailable`.
#[derive(Debug)]
pub struct DownDb;

#[async_trait::async_trait]
impl hookbox::store::Executor for DownDb {
    async fn execute(
        &self,
        statement: &Statement,
        _: &hookbox::store::Params,
    ) -> Result<hookbox::store::Rows, hookbox::store::DbError> {
        Err(hookbox::store::DbError::Unavailable {
            statement: statement.name,
            reason: "connection refused".into(),
        })
    }
}

#[async_trait::async_trait]
impl Database for DownDb {
    async fn begin(&self) -> Result<Box<dyn hookbox::store::Transaction>, hookbox::store::DbError> {
        Err(hookbox::store::DbError::Unavailable {
            statement: "begin",
            reason: "connection refused".into(),
        })
    }
}

/// A sender that hangs every request to a path under `/stuck` until its
/// timeout and answers 200 to the others at once, without a socket (the
/// destinations' URLs decide their host, nothing is contacted). Counts the
/// hanging requests started and those answered.
#[derive(Debug, Default)]
pub struct StuckPaths {
    pub stuck_started: std::sync::atomic::AtomicUsize,
    pub answered: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl hookbox::relay::WebhookSender for StuckPaths {
    async fn send(
        &self,
        request: hookbox::relay::OutboundRequest<'_>,
    ) -> hookbox::relay::SendOutcome {
        use std::sync::atomic::Ordering::SeqCst;
        let stuck = match &request.destination.target {
            hookbox::config::Target::Http(http) => http.url.path().starts_with("/stuck"),
            _ => false,
        };
        if stuck {
            self.stuck_started.fetch_add(1, SeqCst);
            tokio::time::sleep(request.timeout).await;
            return hookbox::relay::SendOutcome::Failed {
                error: "no response (timed out)".into(),
            };
        }
        self.answered.fetch_add(1, SeqCst);
        hookbox::relay::SendOutcome::Response {
            status: 200,
            retry_after: None,
            body_excerpt: String::new(),
        }
    }
}
