//! Forwarding a partner's webhooks by routes, end to end, counted through
//! the Data API adapter's own call counter (tools/local-data-api over the
//! same cluster): ingest, the processor when it runs, and the relay's
//! delivery of every row. Two paths over the same webhooks: forwarding at
//! ingest (the template's configuration: one statement stores the webhook
//! and writes its deliveries) and forwarding by the processor (ingest
//! stores and enqueues, the processor's `RoutingHandler` writes the
//! deliveries in its transaction), the latter being the baseline.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::processing::{Processor, ProcessorConfig, RoutingHandler};
use hookbox::queue::QueueConsumer;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::Headers;
use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};

use crate::pg::Bench;
use crate::report::{Figure, Goal};
use crate::{ingest, relay};

pub const SECTION: &str = "Forwarding by routes";

/// Webhooks per measurement: about what one relay run (one a minute)
/// finds at 7 webhooks/s.
const WEBHOOKS: u64 = 400;
/// The processor's SQS batch (the template's BatchSize).
const SQS_BATCH: usize = 10;

/// What forwarding `WEBHOOKS` webhooks cost, per webhook.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerWebhook {
    /// Data API calls: ingest + processor + relay.
    pub calls: f64,
    /// Of which ingest's.
    pub ingest_calls: f64,
    /// SQS requests: ingest's sends, the processor's receives and deletes
    /// (the event source mapping's, one each per batch).
    pub sqs: f64,
    /// Lambda invocations: ingest's, the processor's (one per batch); the
    /// relay's scheduled run is shared by every webhook of its minute.
    pub invocations: f64,
}

fn config(routes: usize) -> anyhow::Result<HookboxConfig> {
    let destinations: serde_json::Map<String, serde_json::Value> = (1..=3)
        .map(|i| {
            (
                format!("d{i}"),
                serde_json::json!({
                    "url": "http://127.0.0.1:9/in",
                    "secrets": [relay::SECRET],
                    "max_in_flight": relay::IN_FLIGHT,
                    "allowed_networks": ["127.0.0.0/8"],
                }),
            )
        })
        .collect();
    let routes: Vec<serde_json::Value> = (1..=routes)
        .map(|i| serde_json::json!({"to": format!("d{i}"), "event_types": ["payment.*"]}))
        .collect();
    Ok(HookboxConfig::parse(
        &serde_json::json!({
            "partners": {"demo": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [ingest::SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/order_id",
                "routes": routes,
            }},
            "destinations": destinations,
        })
        .to_string(),
        "bench",
    )?)
}

async fn measure(
    db: Arc<DataApiDatabase>,
    routes: usize,
    at_ingest: bool,
) -> anyhow::Result<PerWebhook> {
    let calls = || db.calls().total();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cfg = config(routes)?;
    let as_db: Arc<dyn Database> = db.clone();
    // the routes in the database, as the relay's run syncs them (ingest's
    // role forwards only to those); before the calls are counted
    hookbox::outbox::destinations::sync(as_db.as_ref(), &cfg, clock.now()).await?;
    let store = Arc::new(ConfigStore::fixed(cfg, clock.clone()));
    let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
    let blobs = Arc::new(MemoryBlobStore::new());
    let use_case = Ingest::new(
        store.clone(),
        as_db.clone(),
        Arc::new(queue.clone()),
        blobs.clone(),
        clock.clone(),
    )
    .with_forwarding_at_ingest(at_ingest);
    let tag = format!("fwd-{routes}-{at_ingest}");
    let before = calls();
    for (headers, body) in ingest::sign(&tag, WEBHOOKS)? {
        let request = IngestRequest {
            partner: "demo",
            headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
            body: &body,
            url: None,
        };
        let response = use_case.handle(&request, &mut Metrics::new()).await;
        let expected = if at_ingest {
            matches!(response.outcome, Outcome::Forwarded { deliveries, .. } if deliveries == routes as u64)
        } else {
            matches!(
                response.outcome,
                Outcome::Accepted {
                    enqueue_failed: false
                }
            )
        };
        anyhow::ensure!(expected, "ingest answered {:?}", response.outcome);
    }
    let ingest_calls = calls() - before;
    let sends = queue.len();

    // the processor, over what ingest enqueued, in SQS-sized batches
    let handler = RoutingHandler::new(store.clone());
    let processor_config = ProcessorConfig::default();
    let mut batches = 0_usize;
    loop {
        let got = queue.receive(SQS_BATCH).await?;
        if got.is_empty() {
            break;
        }
        batches += 1;
        let processor = Processor {
            db: as_db.as_ref(),
            queue: &queue,
            blobs: blobs.as_ref(),
            clock: clock.as_ref(),
            handler: &handler,
            config: &processor_config,
        };
        let report = processor.process_batch(&got, None).await;
        anyhow::ensure!(
            report.retry_message_ids().is_empty(),
            "the processor failed: {report:?}"
        );
        for m in &got {
            queue.delete(&m.receipt_handle).await?;
        }
    }

    // the relay delivers every row, as its scheduled run would
    let run = relay::relay(
        as_db.clone(),
        Arc::new(relay::NullSender(Arc::new(AtomicU64::new(0)))),
        &tag,
    )
    .drain(&store)
    .await;
    anyhow::ensure!(run.errors.is_empty(), "relay errors: {:?}", run.errors);
    let want = WEBHOOKS * routes as u64;
    anyhow::ensure!(
        run.deliveries.delivered == want,
        "relay delivered {} of {want}",
        run.deliveries.delivered
    );
    let n = WEBHOOKS as f64;
    Ok(PerWebhook {
        calls: (calls() - before) as f64 / n,
        ingest_calls: ingest_calls as f64 / n,
        sqs: (sends + 2 * batches) as f64 / n,
        invocations: (WEBHOOKS as usize + batches) as f64 / n,
    })
}

/// Both paths with 1, 2 and 3 routes; the figures and the note, and the
/// one-route figures of forwarding at ingest (the cost model's column).
pub async fn run(bench: &Bench) -> anyhow::Result<(Vec<Figure>, String, PerWebhook)> {
    let (_, _migrated) = bench.database("bench_forwarding", 2).await?;
    let server = local_data_api::spawn_background(local_data_api::Config::new(bench.admin_url()))
        .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
    let db = Arc::new(DataApiDatabase::local(
        &server.endpoint_url(),
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-bench".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-bench".into(),
            database: "bench_forwarding".into(),
        },
    ));
    let mut figures = Vec::new();
    let mut one_route = PerWebhook::default();
    for routes in 1..=3 {
        let at_ingest = measure(db.clone(), routes, true).await?;
        let by_processor = measure(db.clone(), routes, false).await?;
        if routes == 1 {
            one_route = at_ingest;
        }
        let what = |w: &str| {
            format!(
                "{w} per forwarded webhook, {routes} route{}",
                if routes == 1 { "" } else { "s" }
            )
        };
        let goal = if routes == 1 {
            Goal::AtMost(1.2)
        } else {
            Goal::None
        };
        let baseline = |v: f64| ("by the processor", v);
        figures.push(
            Figure::ratio(
                SECTION,
                what("Data API calls"),
                "calls",
                at_ingest.calls,
                baseline(by_processor.calls),
                goal,
            )
            .when_missed(
                "Forwarding at ingest should be ingest's one statement plus the relay's batches.",
            ),
        );
        if routes == 1 {
            figures.push(Figure::ratio(
                SECTION,
                what("SQS requests"),
                "requests",
                at_ingest.sqs,
                baseline(by_processor.sqs),
                Goal::None,
            ));
            figures.push(Figure::ratio(
                SECTION,
                what("Lambda invocations"),
                "invocations",
                at_ingest.invocations,
                baseline(by_processor.invocations),
                Goal::None,
            ));
        }
    }
    drop(server);
    let note = format!(
        "Data API calls counted by the adapter (ExecuteStatement, BeginTransaction, \
         CommitTransaction, RollbackTransaction) against tools/local-data-api: {WEBHOOKS} \
         signed webhooks of one partner whose routes go to 1, 2 or 3 HTTP destinations, each \
         ingested, then the processor over what was enqueued (batches of {SQS_BATCH}), then \
         one relay run delivering every row ({} lanes, batches of up to {}, a sender that \
         answers 200 at once). hookbox: forwarding at ingest (the template's \
         HOOKBOX_FORWARD_AT_INGEST=true; ingest {:.2} calls per webhook); baseline: the same \
         webhooks forwarded by the processor's RoutingHandler (ingest stores and enqueues). \
         SQS requests: ingest's sends plus one ReceiveMessage and one DeleteMessageBatch per \
         processor batch (the event source mapping's); Lambda invocations: ingest's plus one \
         per processor batch (the relay's scheduled run serves every webhook of its minute).\n",
        relay::LANES,
        relay::BATCH,
        one_route.ingest_calls,
    );
    Ok((figures, note, one_route))
}
