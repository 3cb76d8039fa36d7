//! Database calls per operation through both adapters of the port: direct
//! PostgreSQL (counted at the port by [`CountingDb`]) and the RDS Data API
//! (the adapter's own count of its HTTPS requests, against
//! tools/local-data-api over the same cluster). On the Data API each call
//! is a round trip, so these set latency and cost.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use hookbox::config::ConfigStore;
use hookbox::inbox::ingest::{IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::signature::Headers;
use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use lambda_runtime::{Context, LambdaEvent};

use crate::counting::CountingDb;
use crate::pg::Bench;
use crate::report::{Figure, Goal};
use crate::{ingest, processor, relay};

pub const SECTION: &str = "Database calls per operation";

/// Calls per operation, one adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerOperation {
    /// Per new webhook accepted by ingest.
    pub ingest: f64,
    /// Per duplicate webhook.
    pub ingest_duplicate: f64,
    /// Per message processed (no-op handler).
    pub processor: f64,
    /// Per relay batch.
    pub relay_batch: f64,
    /// Rows per relay batch in that run.
    pub relay_rows_per_batch: f64,
}

/// Something that can say how many calls went through it.
trait Calls: Send + Sync {
    fn total(&self) -> u64;
}

struct Port(Arc<crate::counting::Counts>);
impl Calls for Port {
    fn total(&self) -> u64 {
        self.0.total()
    }
}

struct Sdk(Arc<DataApiDatabase>);
impl Calls for Sdk {
    fn total(&self) -> u64 {
        self.0.calls().total()
    }
}

async fn measure(
    db: Arc<dyn Database>,
    calls: &dyn Calls,
    tag: &str,
) -> anyhow::Result<PerOperation> {
    // ingest: 20 new webhooks, then the same 20 again (duplicates)
    let use_case = ingest::use_case(db.clone())?;
    let events = ingest::sign(&format!("calls-{tag}"), 20)?;
    let mut per = PerOperation::default();
    for duplicate in [false, true] {
        let before = calls.total();
        for (headers, body) in &events {
            let request = IngestRequest {
                partner: "demo",
                headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
                body,
                url: None,
            };
            let response = use_case.handle(&request, &mut Metrics::new()).await;
            let want_new = !duplicate;
            anyhow::ensure!(
                matches!(response.outcome, Outcome::Accepted { .. }) == want_new,
                "ingest answered {:?}",
                response.outcome
            );
        }
        let n = (calls.total() - before) as f64 / events.len() as f64;
        if duplicate {
            per.ingest_duplicate = n;
        } else {
            per.ingest = n;
        }
    }

    // processor: 5 batches of 10, no-op handler
    processor::insert_pending(db.as_ref(), 0, 50).await?;
    let function = processor::function(db.clone(), Arc::new(processor::NoOp));
    let before = calls.total();
    for event in processor::events(0, 50)? {
        let (response, report) = function
            .handle_with_report(LambdaEvent::new(event, Context::default()))
            .await;
        anyhow::ensure!(response.batch_item_failures.is_empty(), "{report:?}");
    }
    per.processor = (calls.total() - before) as f64 / 50.0;

    // relay: 400 rows, batches of 100 in 4 lanes, an instant sender
    relay::fill(db.as_ref(), 400).await?;
    let store: ConfigStore = relay::config("http://127.0.0.1:9/in")?;
    let before = calls.total();
    let run = relay::relay(
        db.clone(),
        Arc::new(relay::NullSender(Arc::new(AtomicU64::new(0)))),
        &format!("calls-{tag}"),
    )
    .drain(&store)
    .await;
    anyhow::ensure!(run.errors.is_empty(), "relay errors: {:?}", run.errors);
    anyhow::ensure!(
        run.deliveries.delivered == 400,
        "relay delivered {}",
        run.deliveries.delivered
    );
    // each lane ends with one empty claim, outside any batch
    let lanes = relay::LANES as u64;
    let batches = run.batches.saturating_sub(lanes).max(1);
    per.relay_batch = (calls.total() - before).saturating_sub(lanes) as f64 / batches as f64;
    per.relay_rows_per_batch = 400.0 / batches as f64;
    Ok(per)
}

/// Calls per operation through direct PostgreSQL and the Data API.
pub async fn run(bench: &Bench) -> anyhow::Result<(Vec<Figure>, String, PerOperation)> {
    let (_, pg) = bench.database("bench_calls_pg", 8).await?;
    let counting = CountingDb::new(pg);
    let pg_calls = measure(
        Arc::new(counting.clone()),
        &Port(counting.counts.clone()),
        "pg",
    )
    .await?;

    let (_, _migrated) = bench.database("bench_calls_data_api", 2).await?;
    let server = local_data_api::spawn_background(local_data_api::Config::new(bench.admin_url()))
        .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
    let data_api = Arc::new(DataApiDatabase::local(
        &server.endpoint_url(),
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-bench".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-bench".into(),
            database: "bench_calls_data_api".into(),
        },
    ));
    let dapi_calls = measure(data_api.clone(), &Sdk(data_api.clone()), "data-api").await?;
    drop(server);

    let mut figures = Vec::new();
    for (adapter, per) in [("PostgreSQL", pg_calls), ("Data API", dapi_calls)] {
        figures.push(
            Figure::value(
                SECTION,
                format!("ingest, per new webhook ({adapter})"),
                "calls",
                per.ingest,
                Goal::AtMost(1.0),
            )
            .when_missed("Ingest should be one INSERT … ON CONFLICT per webhook (DESIGN.md)."),
        );
        figures.push(Figure::value(
            SECTION,
            format!("ingest, per duplicate webhook ({adapter})"),
            "calls",
            per.ingest_duplicate,
            Goal::None,
        ));
        figures.push(
            Figure::value(
                SECTION,
                format!("processor, per message, no-op handler ({adapter})"),
                "calls",
                per.processor,
                Goal::AtMost(3.1),
            )
            .when_missed("The processor should cost claim/10 + BEGIN + mark_processed + COMMIT."),
        );
        figures.push(
            Figure::value(
                SECTION,
                format!("relay, per batch of ≤ {} ({adapter})", relay::BATCH),
                "calls",
                per.relay_batch,
                Goal::AtMost(2.0),
            )
            .when_missed("Each relay batch should be one record-and-claim statement."),
        );
    }
    let note = format!(
        "PostgreSQL: calls counted at the port (statements, BEGIN, COMMIT, ROLLBACK). Data API: \
         the adapter's own count of ExecuteStatement, BeginTransaction, CommitTransaction and \
         RollbackTransaction requests, against tools/local-data-api. Ingest: 20 new webhooks, \
         then the same 20 again; processor: 5 batches of 10; relay: 400 rows, {:.0} rows per \
         batch on average. The business handler adds its own statements inside the \
         processor's transaction (the example orders domain: 3).\n",
        dapi_calls.relay_rows_per_batch
    );
    Ok((figures, note, dapi_calls))
}
