//! Relay to AWS destinations: deliveries/s from the outbox to moto's SQS
//! and EventBridge through the relay (its transports behind `Coalescing`,
//! ten entries a call) against a bare SDK client sending the same
//! envelopes in batches of ten at the same concurrency, in the same run;
//! and the service calls per ten deliveries. moto (on 127.0.0.1) is the
//! service on both sides, so its cost falls on both alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use aws_config::SdkConfig;
use futures::StreamExt as _;
use hookbox::clock::SystemClock;
use hookbox::config::{ConfigStore, HookboxConfig, TransportKind};
use hookbox::delivery::{
    Coalescing, DeliveryRequest, Entry, EntryOutcome, EventBridgeTransport, MAX_BATCH,
    SqsTransport, Transport, envelope,
};
use hookbox::relay::HttpSender;
use uuid::Uuid;

use crate::pg::Bench;
use crate::relay::{BATCH, LANES, payload};
use crate::report::{Figure, Goal};

pub const SECTION: &str = "Relay to AWS destinations";

/// Goal: the relay at least this fraction of the bare client's rate.
pub const GOAL: f64 = 0.8;

/// Most rows per side and round for SQS (see `run`).
const SQS_ROWS: usize = 400;

/// Calls in flight per destination, on both sides (the destination's
/// `max_in_flight` is ten entries per call).
const CALLS_IN_FLIGHT: usize = 4;

fn aws(endpoint: &str) -> SdkConfig {
    hookbox::delivery::local_aws_config(endpoint)
}

/// Counts the calls the coalesced deliveries make.
#[derive(Debug)]
struct Counted<T>(T, Arc<AtomicU64>);

#[async_trait::async_trait]
impl<T: Transport> Transport for Counted<T> {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.0.deliver(request).await
    }
}

/// The envelopes the relay sends for `rows` rows (fresh delivery ids).
fn envelopes(rows: usize) -> anyhow::Result<Vec<(Uuid, String, String)>> {
    (0..rows)
        .map(|i| {
            let id = Uuid::new_v4();
            let payload = payload(i).to_string();
            let aggregate = format!("o-{i}");
            let entry = Entry {
                id,
                event_type: "order.status_changed",
                aggregate_type: "order",
                aggregate_id: &aggregate,
                payload: &payload,
                blob: None,
            };
            let text = envelope::build(&entry, None, 256 * 1024)?.text;
            Ok((id, aggregate, text))
        })
        .collect()
}

/// The bare client: the same envelopes, ten per call, `CALLS_IN_FLIGHT`
/// calls at a time.
async fn bare(
    kind: TransportKind,
    shared: &SdkConfig,
    target: &str,
    envelopes: &[(Uuid, String, String)],
) -> anyhow::Result<()> {
    let sqs = SqsTransport::client(shared);
    let events = EventBridgeTransport::client(shared);
    let calls = envelopes.chunks(MAX_BATCH).map(|chunk| {
        let (sqs, events) = (&sqs, &events);
        async move {
            match kind {
                TransportKind::Sqs => {
                    let entries = chunk
                        .iter()
                        .enumerate()
                        .map(|(n, (_, _, body))| {
                            aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                                .id(n.to_string())
                                .message_body(body)
                                .build()
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let out = sqs
                        .send_message_batch()
                        .queue_url(target)
                        .set_entries(Some(entries))
                        .send()
                        .await?;
                    anyhow::ensure!(out.failed().is_empty(), "SQS refused entries");
                }
                _ => {
                    let entries = chunk
                        .iter()
                        .map(|(_, _, detail)| {
                            aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
                                .event_bus_name(target)
                                .source("hookbox")
                                .detail_type("order.status_changed")
                                .detail(detail)
                                .build()
                        })
                        .collect::<Vec<_>>();
                    let out = events
                        .put_events()
                        .set_entries(Some(entries))
                        .send()
                        .await?;
                    anyhow::ensure!(out.failed_entry_count() == 0, "EventBridge refused entries");
                }
            }
            anyhow::Ok(())
        }
    });
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(calls)
        .buffer_unordered(CALLS_IN_FLIGHT)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Every figure of the section: `rows` deliveries per side and round.
pub async fn run(
    bench: &Bench,
    rows: usize,
    rounds: usize,
) -> anyhow::Result<(Vec<Figure>, String)> {
    let moto = tokio::task::spawn_blocking(hookbox_testkit::moto::Moto::start).await?;
    let shared = aws(moto.endpoint());
    let sqs = SqsTransport::client(&shared);
    let queue = sqs
        .create_queue()
        .queue_name("bench-relay-aws")
        .send()
        .await?
        .queue_url()
        .unwrap_or_default()
        .to_string();
    EventBridgeTransport::client(&shared)
        .create_event_bus()
        .name("bench")
        .send()
        .await?;
    let (_url, db) = bench.database("bench_relay_aws", 16).await?;
    let mut figures = Vec::new();
    let mut note = format!(
        "Each round, on the same durable database and moto: the bare SDK client sends {rows} \
         envelopes ({} to SQS, whose moto slows down as a queue fills), ten per call, {CALLS_IN_FLIGHT} calls at a time; the relay drains as many \
         outbox rows (`Relay::drain`, {LANES} lanes, batches of {BATCH}, `max_in_flight` \
         {}), its transport behind `Coalescing`. Best round of each. moto serves both sides \
         and is most of the time: the ratio is the relay's overhead on top of the service.\n\n\
         | destination | bare client | relay | relay's calls per 10 deliveries |\n\
         | --- | ---: | ---: | ---: |\n",
        rows.min(SQS_ROWS),
        CALLS_IN_FLIGHT * MAX_BATCH
    );
    let mut worker = 0;
    for kind in [TransportKind::Sqs, TransportKind::EventBridge] {
        let (destination, target) = match kind {
            TransportKind::Sqs => (
                serde_json::json!({ "type": "sqs", "queue_url": queue }),
                queue.as_str(),
            ),
            _ => (
                serde_json::json!({ "type": "eventbridge", "bus": "bench" }),
                "bench",
            ),
        };
        let mut destination = destination;
        destination["max_in_flight"] = serde_json::json!(CALLS_IN_FLIGHT * MAX_BATCH);
        let config = HookboxConfig::parse(
            &serde_json::json!({ "destinations": { "aws": destination } }).to_string(),
            "bench",
        )?;
        let store = ConfigStore::fixed(config, Arc::new(SystemClock));
        // moto's SQS slows down as a queue fills (to ~40 sends/s at 2,000
        // messages): fewer rows there, purged after each side
        let rows = match kind {
            TransportKind::Sqs => rows.min(SQS_ROWS),
            _ => rows,
        };
        let (mut bare_best, mut relay_best, mut calls_per_10) = (0.0f64, 0.0f64, f64::NAN);
        for _ in 0..rounds {
            let sent = envelopes(rows)?;
            let started = Instant::now();
            bare(kind, &shared, target, &sent).await?;
            bare_best = bare_best.max(rows as f64 / started.elapsed().as_secs_f64());
            if kind == TransportKind::Sqs {
                sqs.purge_queue().queue_url(&queue).send().await?;
            }

            crate::relay::fill_for(db.as_ref(), rows, "aws").await?;
            worker += 1;
            let calls = Arc::new(AtomicU64::new(0));
            let transport: Arc<dyn Transport> = match kind {
                TransportKind::Sqs => Arc::new(Coalescing::new(
                    Counted(SqsTransport::new(sqs.clone(), None), calls.clone()),
                    MAX_BATCH,
                )),
                _ => Arc::new(Coalescing::new(
                    Counted(
                        EventBridgeTransport::new(EventBridgeTransport::client(&shared), None),
                        calls.clone(),
                    ),
                    MAX_BATCH,
                )),
            };
            let relay = crate::relay::relay(
                db.clone(),
                Arc::new(HttpSender::default()),
                &format!("bench-aws-{worker}"),
            )
            .with_transport(kind, transport);
            let started = Instant::now();
            let run = relay.drain(&store).await;
            let elapsed = started.elapsed();
            anyhow::ensure!(run.errors.is_empty(), "relay errors: {:?}", run.errors);
            anyhow::ensure!(
                run.deliveries.delivered == rows as u64,
                "relay delivered {} of {rows} to {kind}: {:?}",
                run.deliveries.delivered,
                run.deliveries
            );
            let rate = rows as f64 / elapsed.as_secs_f64();
            if rate > relay_best {
                relay_best = rate;
                calls_per_10 = calls.load(Ordering::Relaxed) as f64 * 10.0 / rows as f64;
            }
            if kind == TransportKind::Sqs {
                sqs.purge_queue().queue_url(&queue).send().await?;
            }
        }
        let name = match kind {
            TransportKind::Sqs => "SQS",
            _ => "EventBridge",
        };
        note.push_str(&format!(
            "| {name} | {bare_best:.0}/s | {relay_best:.0}/s | {calls_per_10:.2} |\n"
        ));
        figures.push(
            Figure::ratio(
                SECTION,
                format!("relay vs bare SDK client, {name} (moto)"),
                "deliveries/s",
                relay_best,
                ("bare SDK client, batches of 10", bare_best),
                Goal::RatioAtLeast(GOAL),
            )
            .when_missed(
                "the relay's claim, envelope and record cost more than the service's calls \
                 (see the calls per 10 deliveries: more than 1 means batches were not full)",
            ),
        );
        figures.push(Figure::value(
            SECTION,
            format!("{name} calls per 10 deliveries (relay)"),
            "calls",
            calls_per_10,
            Goal::None,
        ));
    }
    Ok((figures, note))
}
