//! Batched webhooks: one POST carrying 100 events against 100 single
//! webhooks of the same events, through the ingest use case and both
//! database adapters (docs/batches.md): database calls and time per event,
//! side by side, each round's two sides one after the other (in turn
//! first), the median of the rounds.

use std::sync::Arc;
use std::time::Instant;

use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};

use crate::counting::CountingDb;
use crate::ingest::{SECRET, body};
use crate::pg::Bench;
use crate::report::{Figure, Goal};

pub const SECTION: &str = "Batched webhooks";

/// Events per POST.
const EVENTS: u64 = 100;

fn config() -> anyhow::Result<HookboxConfig> {
    Ok(HookboxConfig::parse(
        &serde_json::json!({"partners": {
            "single": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/order_id"
            },
            "batched": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SECRET],
                "batch": {"events": "", "event_id": "/id", "event_type": "/type",
                          "ordering_key": "/order_id"}
            }
        }})
        .to_string(),
        "bench",
    )?)
}

fn use_case(db: Arc<dyn Database>) -> anyhow::Result<Ingest> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Ok(Ingest::new(
        Arc::new(ConfigStore::fixed(config()?, clock.clone())),
        db,
        Arc::new(MemoryQueue::new(
            MemoryQueueConfig::default(),
            clock.clone(),
        )),
        Arc::new(MemoryBlobStore::new()),
        clock,
    ))
}

/// Event `i` with its id in the body (the batched partner reads it there;
/// the single one reads the header, which carries the same id).
fn event(id: &str, i: u64) -> String {
    let plain = body(i);
    format!(r#"{{"id":"{id}",{}"#, &plain[1..])
}

type Signed = (Vec<(String, String)>, Vec<u8>);

fn signed(id: &str, body: String) -> anyhow::Result<Signed> {
    let h = sign_standard_webhooks(
        id,
        SystemClock.now(),
        body.as_bytes(),
        &[Secret::new(SECRET)],
    )?;
    Ok((
        vec![
            ("webhook-id".to_owned(), h.id),
            ("webhook-timestamp".to_owned(), h.timestamp),
            ("webhook-signature".to_owned(), h.signature),
            ("content-type".to_owned(), "application/json".to_owned()),
        ],
        body.into_bytes(),
    ))
}

/// Calls and time per event of one side of one round.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    calls: f64,
    us: f64,
}

/// One adapter's figures: (single, batched), medians over the rounds.
async fn measure(
    db: Arc<dyn Database>,
    calls: &(dyn Fn() -> u64 + Send + Sync),
    tag: &str,
    rounds: usize,
) -> anyhow::Result<(Side, Side)> {
    let ingest = use_case(db)?;
    let mut singles = Vec::new();
    let mut batches = Vec::new();
    for round in 0..rounds {
        let one: Vec<Signed> = (0..EVENTS)
            .map(|i| {
                let id = format!("s-{tag}-{round}-{i}");
                signed(&id, event(&id, i))
            })
            .collect::<anyhow::Result<_>>()?;
        let events: Vec<String> = (0..EVENTS)
            .map(|i| event(&format!("b-{tag}-{round}-{i}"), i))
            .collect();
        let post = signed(
            &format!("post-{tag}-{round}"),
            format!("[{}]", events.join(",")),
        )?;
        for single_first in [round % 2 == 0, round % 2 != 0] {
            let before = calls();
            let started = Instant::now();
            if single_first {
                for (headers, body) in &one {
                    let response = ingest
                        .handle(&request("single", headers, body), &mut Metrics::new())
                        .await;
                    anyhow::ensure!(
                        matches!(response.outcome, Outcome::Accepted { .. }),
                        "a single webhook was answered {:?}",
                        response.outcome
                    );
                }
            } else {
                let (headers, body) = &post;
                let response = ingest
                    .handle(&request("batched", headers, body), &mut Metrics::new())
                    .await;
                anyhow::ensure!(
                    matches!(response.outcome, Outcome::Batch(c) if u64::from(c.stored) == EVENTS),
                    "the batch was answered {:?}",
                    response.body
                );
            }
            let side = Side {
                calls: (calls() - before) as f64 / EVENTS as f64,
                us: started.elapsed().as_secs_f64() * 1e6 / EVENTS as f64,
            };
            if single_first {
                singles.push(side);
            } else {
                batches.push(side);
            }
        }
    }
    Ok((median(&singles), median(&batches)))
}

fn request<'a>(
    partner: &'a str,
    headers: &'a [(String, String)],
    body: &'a [u8],
) -> IngestRequest<'a> {
    IngestRequest {
        partner,
        headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        body,
        url: None,
    }
}

fn median(sides: &[Side]) -> Side {
    let pick = |f: fn(&Side) -> f64| {
        let mut v: Vec<f64> = sides.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    Side {
        calls: pick(|s| s.calls),
        us: pick(|s| s.us),
    }
}

/// The section: both adapters, `rounds` rounds each.
pub async fn run(bench: &Bench, rounds: usize) -> anyhow::Result<(Vec<Figure>, String)> {
    let (_, pg) = bench.database("bench_batches_pg", 4).await?;
    let counting = CountingDb::new(pg);
    let counts = counting.counts.clone();
    let pg_sides = measure(Arc::new(counting), &move || counts.total(), "pg", rounds).await?;

    let (_, _migrated) = bench.database("bench_batches_data_api", 2).await?;
    let server = local_data_api::spawn_background(local_data_api::Config::new(bench.admin_url()))
        .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
    let data_api = Arc::new(DataApiDatabase::local(
        &server.endpoint_url(),
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-bench".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-bench".into(),
            database: "bench_batches_data_api".into(),
        },
    ));
    let counter = data_api.clone();
    let dapi_sides = measure(
        data_api,
        &move || counter.calls().total(),
        "data-api",
        rounds,
    )
    .await?;
    drop(server);

    let mut figures = Vec::new();
    for (adapter, (single, batched)) in [("PostgreSQL", pg_sides), ("Data API", dapi_sides)] {
        figures.push(
            Figure::ratio(
                SECTION,
                format!("database calls per event, one POST of {EVENTS} events ({adapter})"),
                "calls",
                batched.calls,
                (format!("{EVENTS} single webhooks"), single.calls),
                Goal::RatioAtMost(1.0 / EVENTS as f64),
            )
            .when_missed("A batch's events should be stored in one statement (docs/batches.md)."),
        );
        figures.push(Figure::ratio(
            SECTION,
            format!("ingest time per event, one POST of {EVENTS} events ({adapter})"),
            "µs",
            batched.us,
            (format!("{EVENTS} single webhooks"), single.us),
            Goal::None,
        ));
    }
    let note = format!(
        "The ingest use case in-process, one caller, an in-memory queue: {rounds} rounds, each \
         {EVENTS} single Standard Webhooks requests and one POST of {EVENTS} events (the same \
         bodies, ids in the body; a batch declaration on the root array), one after the other \
         (in turn first); medians of the rounds. Every event is new. Calls: PostgreSQL counted \
         at the port, the Data API's own count of its requests against tools/local-data-api. \
         Time includes verifying (one signature per POST against one per event), splitting, the \
         statement(s) and the queue messages (one per new event; 10 per SendMessageBatch call \
         for a batch against SQS).\n"
    );
    Ok((figures, note))
}
