//! Issue #27, acceptance 2: through both database adapters, moto and an
//! HTTP sink, 2,000 signed webhooks of three partners (Stripe, GitHub and
//! Standard Webhooks signatures), 30 % of them sent again, one sent as a
//! burst of 100 concurrent copies, each key's events sent out of their own
//! order, routes fanning out to 1 to 3 destinations (an ordered HTTP
//! service, an EventBridge bus, an ordered FIFO queue). Ingest forwards at
//! ingest, as the template does; one relay run delivers. Then: every
//! accepted webhook reached each matched destination once under its
//! delivery id; each ordered destination and FIFO group saw each key in the
//! order hookbox received its events; duplicates never made a second
//! delivery id.

mod aws_support;
mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use aws_support::{consume, create_queue, json, observed_bus, with_aws};
use common::{Adapter, migrated_db};
use futures::StreamExt as _;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, Outcome};
use hookbox::metrics::Metrics;
use hookbox::params;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::relay::RelaySettings;
use hookbox::signature::presets::{self, Outgoing, SigningKey};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::moto;

const WEBHOOKS: usize = 2_000;
/// Keys (ordering keys) per partner.
const KEYS: usize = 40;
const STRIPE_SECRET: &str = "whsec_forwarding_load_stripe";
const GITHUB_SECRET: &str = "forwarding-load-github";
const SHOP_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// The partners: (name, its event types in their own order).
const PARTNERS: [(&str, &[&str]); 3] = [
    (
        "stripe",
        &["invoice.created", "invoice.paid", "charge.succeeded"],
    ),
    ("github", &["opened", "closed"]),
    ("shop", &["orders/create", "orders/paid"]),
];

/// The destinations each partner's event type is routed to (the routes
/// below, spelled out).
fn routed(partner: &str, event_type: &str) -> Vec<&'static str> {
    match (partner, event_type) {
        ("stripe", "invoice.paid") => vec!["http", "bus", "fifo"],
        ("stripe", "invoice.created") => vec!["http", "bus"],
        ("stripe", _) => vec!["bus"],
        ("github", "closed") => vec!["fifo", "http"],
        ("github", _) => vec!["fifo"],
        (_, "orders/paid") => vec!["http", "bus"],
        _ => vec!["http"],
    }
}

fn config(sink: &str, bus: &str, fifo: &str) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({
            "partners": {
                "stripe": {
                    "signature": {"scheme": "stripe"},
                    "secrets": [STRIPE_SECRET],
                    "event_id": {"json_pointer": "/id"},
                    "event_type": "/type",
                    "ordering_key": "/key",
                    "routes": [
                        {"to": "http", "event_types": ["invoice.*"]},
                        {"to": "bus", "event_types": ["*"]},
                        {"to": "fifo", "event_types": ["invoice.paid"]},
                    ],
                },
                "github": {
                    "signature": {"scheme": "github"},
                    "secrets": [GITHUB_SECRET],
                    "event_id": {"header": "x-github-delivery"},
                    "event_type": "/type",
                    "ordering_key": "/key",
                    "routes": [
                        {"to": "fifo", "event_types": ["*"]},
                        {"to": "http", "event_types": ["closed"]},
                    ],
                },
                "shop": {
                    "signature": {"scheme": "standard-webhooks"},
                    "secrets": [SHOP_SECRET],
                    "event_id": {"header": "webhook-id"},
                    "event_type": "/type",
                    "ordering_key": "/key",
                    "routes": [
                        {"to": "http", "event_types": ["*"]},
                        {"to": "bus", "event_types": ["orders/paid"]},
                    ],
                },
            },
            "destinations": {
                "http": {"url": sink, "secrets": [SHOP_SECRET], "ordered": true,
                         "allowed_networks": ["127.0.0.0/8", "::1/128"]},
                // moto answers one call at a time: a few calls in flight
                // keep it busy without timing any out
                "bus": {"type": "eventbridge", "bus": bus, "source": "shop.orders",
                        "max_in_flight": 4, "timeout_secs": 50},
                "fifo": {"type": "sqs", "queue_url": fifo, "ordered": true,
                         "max_in_flight": 4, "timeout_secs": 50},
            }
        })
        .to_string(),
        "test",
    )
    .expect("valid")
}

/// One webhook: its partner, id, type, key and body.
#[derive(Debug, Clone)]
struct Hook {
    partner: &'static str,
    id: String,
    event_type: &'static str,
    key: String,
    body: Vec<u8>,
}

/// The webhooks, grouped by key (partner, key), each key's events in the
/// order they are sent: their own order shuffled.
fn webhooks(rng: &mut fastrand::Rng) -> Vec<Vec<Hook>> {
    let mut by_key: BTreeMap<(usize, usize), Vec<Hook>> = BTreeMap::new();
    for n in 0..WEBHOOKS {
        let p = n % PARTNERS.len();
        let (partner, types) = PARTNERS[p];
        let k = (n / PARTNERS.len()) % KEYS;
        let key = format!("{partner}-key-{k}");
        let event_type = types[(n / (PARTNERS.len() * KEYS)) % types.len()];
        let id = format!("evt-{n}");
        let body = serde_json::to_vec(&serde_json::json!({
            "id": id, "type": event_type, "key": key, "n": n,
        }))
        .expect("json");
        by_key.entry((p, k)).or_default().push(Hook {
            partner,
            id,
            event_type,
            key,
            body,
        });
    }
    by_key
        .into_values()
        .map(|mut hooks| {
            rng.shuffle(&mut hooks);
            hooks
        })
        .collect()
}

fn signed(hook: &Hook, now: chrono::DateTime<chrono::Utc>) -> Vec<(String, String)> {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    let preset = |name: &str, secret: &str| {
        presets::get(name)
            .expect("preset")
            .sign(
                &Outgoing {
                    body: &hook.body,
                    headers: &[],
                    url: None,
                    method: "POST",
                    timestamp: now,
                },
                SigningKey::Secret(&Secret::new(secret)),
            )
            .expect("sign")
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect::<Vec<_>>()
    };
    match hook.partner {
        "stripe" => headers.extend(preset("stripe", STRIPE_SECRET)),
        "github" => {
            headers.push(("x-github-delivery".into(), hook.id.clone()));
            headers.extend(preset("github", GITHUB_SECRET));
        }
        _ => {
            let h = sign_standard_webhooks(&hook.id, now, &hook.body, &[Secret::new(SHOP_SECRET)])
                .expect("sign");
            headers.extend([
                ("webhook-id".into(), h.id),
                ("webhook-timestamp".into(), h.timestamp),
                ("webhook-signature".into(), h.signature),
            ]);
        }
    }
    headers
}

async fn post(ingest: &Ingest, hook: &Hook, now: chrono::DateTime<chrono::Utc>) -> Outcome {
    let headers = signed(hook, now);
    let request = IngestRequest {
        partner: hook.partner,
        headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        body: &hook.body,
        url: None,
    };
    let response = ingest.handle(&request, &mut Metrics::new()).await;
    assert_eq!(response.status, 200, "{}: {response:?}", hook.id);
    response.outcome
}

async fn two_thousand_webhooks_of_three_partners_reach_every_route_once_in_order(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    // a moto of its own: the two adapters' runs use both cores
    let moto = moto::Moto::start();
    let endpoint = moto.endpoint().to_owned();
    let sqs = moto::client(&endpoint);
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let (fifo, _) = create_queue(&sqs, &format!("{}.fifo", moto::unique_name("fwd"))).await;
    let sink = HttpSink::start().await;
    let cfg = config(&sink.url("/in"), &bus, &fifo);
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    // the partners' routes in the database, as the relay's run syncs them:
    // ingest's role forwards only to those
    hookbox::outbox::destinations::sync(db.as_ref(), &cfg, clock.now())
        .await
        .expect("sync the destinations");
    let store = Arc::new(ConfigStore::fixed(cfg.clone(), clock.clone()));
    let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
    let ingest = Ingest::new(
        store.clone(),
        db.clone(),
        Arc::new(queue.clone()),
        Arc::new(MemoryBlobStore::new()),
        clock.clone(),
    )
    .with_forwarding_at_ingest(true);

    // each key's events one after the other (so "received" has an order),
    // the keys at once; 30 % sent again after their key's run, one as a
    // burst of 100 concurrent copies
    let mut rng = fastrand::Rng::with_seed(27);
    let keys = webhooks(&mut rng);
    let burst = keys[7][1].id.clone();
    let again: HashSet<String> = keys
        .iter()
        .flatten()
        .filter(|_| rng.u8(0..100) < 30)
        .map(|h| h.id.clone())
        .collect();
    let now = clock.now();
    let outcomes: Vec<Vec<(String, Outcome)>> = futures::stream::iter(keys.iter())
        .map(|hooks| {
            let (ingest, burst, again) = (&ingest, &burst, &again);
            async move {
                let mut out = Vec::new();
                for hook in hooks {
                    let copies = if hook.id == *burst { 100 } else { 1 };
                    let answers =
                        futures::future::join_all((0..copies).map(|_| post(ingest, hook, now)))
                            .await;
                    out.extend(answers.into_iter().map(|o| (hook.id.clone(), o)));
                }
                for hook in hooks.iter().filter(|h| again.contains(&h.id)) {
                    out.push((hook.id.clone(), post(ingest, hook, now).await));
                }
                out
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut forwarded: HashMap<String, u64> = HashMap::new();
    for (id, outcome) in outcomes.into_iter().flatten() {
        match outcome {
            Outcome::Forwarded { deliveries, .. } => {
                assert!(
                    forwarded.insert(id.clone(), deliveries).is_none(),
                    "{id} forwarded twice"
                );
            }
            Outcome::Duplicate => {}
            other => panic!("{id}: {other:?}"),
        }
    }
    assert_eq!(forwarded.len(), WEBHOOKS, "every webhook forwarded once");
    assert!(queue.is_empty(), "nothing for the processor");

    // the deliveries written: one per matched route, none twice
    let rows = db
        .execute(
            &common::sql(
                "SELECT id, destination, payload->>'id' AS event FROM outbox ORDER BY seq",
            ),
            &params! {},
        )
        .await
        .expect("outbox")
        .rows;
    let mut ids: HashMap<&str, HashMap<String, String>> = HashMap::new();
    for r in &rows {
        let destination = r.text("destination").expect("destination");
        let event = r.text("event").expect("event");
        let id = r.uuid("id").expect("id").to_string();
        let previous = ids
            .entry(match destination.as_str() {
                "http" => "http",
                "bus" => "bus",
                _ => "fifo",
            })
            .or_default()
            .insert(event.clone(), id);
        assert!(
            previous.is_none(),
            "{event}: two deliveries to {destination}"
        );
    }
    let mut routes_total = 0;
    for hook in keys.iter().flatten() {
        let to = routed(hook.partner, hook.event_type);
        routes_total += to.len();
        assert_eq!(forwarded[&hook.id], to.len() as u64, "{}", hook.id);
        for destination in to {
            assert!(
                ids.get(destination)
                    .is_some_and(|d| d.contains_key(&hook.id)),
                "{} not forwarded to {destination}",
                hook.id
            );
        }
    }
    assert_eq!(rows.len(), routes_total);

    // one relay run delivers everything
    let mut settings = RelaySettings::new("forwarding-load");
    settings.batch_size = 100;
    let relay = with_aws(
        common::http_relay(db.clone(), clock.clone(), settings),
        &endpoint,
    );
    let count = |d: &str| ids.get(d).map_or(0, HashMap::len);
    let on_bus = tokio::spawn(consume(sqs.clone(), bus_queue, count("bus")));
    let on_fifo = tokio::spawn(consume(sqs.clone(), fifo, count("fifo")));
    // an ordered destination takes a key's next row once the previous is
    // delivered: runs until nothing is left
    for _ in 0..50 {
        let run = relay.drain(&store).await;
        assert!(run.errors.is_empty(), "{:?}", run.errors);
        // a retried row is due later, a released lease expires later
        clock.advance(chrono::Duration::minutes(10));
        if common::count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status <> 'delivered'",
        )
        .await
            == 0
        {
            break;
        }
    }
    let left = db
        .execute(
            &common::sql(
                "SELECT destination, status, last_error, count(*) AS n FROM outbox
                  WHERE status <> 'delivered' GROUP BY 1, 2, 3",
            ),
            &params! {},
        )
        .await
        .expect("left")
        .rows;
    assert!(left.is_empty(), "undelivered: {left:?}");

    // what each destination saw: (delivery id, event, key), in arrival order
    let http: Vec<(String, serde_json::Value)> = sink
        .requests()
        .iter()
        .map(|r| (r.header("webhook-id").expect("id").to_owned(), r.json()))
        .collect();
    let bus_seen: Vec<(String, serde_json::Value)> = on_bus
        .await
        .expect("bus")
        .iter()
        .map(|(body, _)| {
            let e = json(body);
            (
                e["detail"]["id"].as_str().expect("id").to_owned(),
                e["detail"]["payload"].clone(),
            )
        })
        .collect();
    let fifo_seen: Vec<(String, serde_json::Value)> = on_fifo
        .await
        .expect("fifo")
        .iter()
        .map(|(body, _)| {
            let e = json(body);
            (
                e["id"].as_str().expect("id").to_owned(),
                e["payload"].clone(),
            )
        })
        .collect();
    // the deliveries with a failed attempt
    let unanswered: HashSet<String> = db
        .execute(
            &common::sql("SELECT DISTINCT outbox_id FROM outbox_attempts WHERE error IS NOT NULL"),
            &params! {},
        )
        .await
        .expect("attempts")
        .rows
        .iter()
        .map(|r| r.uuid("outbox_id").expect("id").to_string())
        .collect();
    for (destination, seen, ordered) in [
        ("http", &http, true),
        ("bus", &bus_seen, false),
        ("fifo", &fifo_seen, true),
    ] {
        // each delivery once, under the delivery id of its row; a second
        // arrival only where an attempt failed (say a call timed out that
        // the service did carry out: at least once, under the same id)
        let mut by_event: HashMap<String, String> = HashMap::new();
        for (delivery, payload) in seen {
            let event = payload["id"].as_str().expect("event").to_owned();
            if let Some(first) = by_event.insert(event.clone(), delivery.clone()) {
                assert_eq!(&first, delivery, "{destination}: {event} under two ids");
                assert!(
                    unanswered.contains(delivery),
                    "{destination}: {event} arrived twice, no attempt of {delivery} failed"
                );
            }
        }
        assert_eq!(&by_event, &ids[destination], "{destination}");
        if !ordered {
            continue;
        }
        // each key in the order its events were received
        let mut arrived: HashMap<String, Vec<String>> = HashMap::new();
        for (_, payload) in seen {
            arrived
                .entry(payload["key"].as_str().expect("key").to_owned())
                .or_default()
                .push(payload["id"].as_str().expect("id").to_owned());
        }
        for hooks in &keys {
            let sent: Vec<String> = hooks
                .iter()
                .filter(|h| routed(h.partner, h.event_type).contains(&destination))
                .map(|h| h.id.clone())
                .collect();
            let key = &hooks[0].key;
            let got = arrived.remove(key).unwrap_or_default();
            assert_eq!(got, sent, "{destination}: key {key}");
        }
    }
}

for_each_adapter!(two_thousand_webhooks_of_three_partners_reach_every_route_once_in_order);
