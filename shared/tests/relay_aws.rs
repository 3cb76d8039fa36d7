//! The relay's AWS transports against moto: SQS (standard and FIFO) and
//! EventBridge (observed through a rule whose target is an SQS queue).
//! Entries go ten to a call; each message is the envelope with the
//! delivery id; FIFO keeps one aggregate's order and drops a resend of the
//! same delivery; the limits moto does not enforce are enforced by the
//! adapters before any call; a service that is down retries every entry.
//! Through both database adapters, a relay delivers 1,002 outbox rows (334
//! events fanned out) to an HTTP sink, a bus and a FIFO queue: each row
//! once, under its id, each FIFO group in order, one statement per batch.

mod aws_support;
mod common;
#[path = "relay_aws/hardened.rs"]
mod hardened;
#[path = "relay_aws/notices.rs"]
mod notices;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_support::{aws, consume, create_queue, drain, json, observed_bus, with_aws};
use chrono::{DateTime, Utc};
use common::{Adapter, at, migrated_db};
use hookbox::blob::{BlobKey, BlobRef};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::HookboxConfig;
use hookbox::config::{ConfigStore, TransportKind};
use hookbox::delivery::{
    Coalescing, DeliveryRequest, Entry, EntryOutcome, EventBridgeTransport, MAX_BATCH,
    SqsTransport, Transport, Verdict,
};
use hookbox::outbox::{self, NewOutboxEvent, OutboxStatus};
use hookbox::relay::RelaySettings;
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::moto;
use uuid::Uuid;

/// An owned entry, `Entry` borrows from it.
struct Row {
    id: Uuid,
    event_type: String,
    aggregate_id: String,
    payload: String,
    blob: Option<BlobRef>,
}

impl Row {
    fn new(n: u128, aggregate: &str, payload: String) -> Self {
        Self {
            id: Uuid::from_u128(n),
            event_type: "order.paid".into(),
            aggregate_id: aggregate.into(),
            payload,
            blob: None,
        }
    }

    fn entry(&self) -> Entry<'_> {
        Entry {
            id: self.id,
            event_type: &self.event_type,
            aggregate_type: "order",
            aggregate_id: &self.aggregate_id,
            payload: &self.payload,
            blob: self.blob.as_ref(),
        }
    }
}

/// Delivers each row on its own, all at once (as the relay starts a claim's
/// attempts), through `transport` to `destination` of `config`.
async fn deliver_each(
    transport: &dyn Transport,
    config: &HookboxConfig,
    destination: &str,
    rows: &[Row],
) -> Vec<EntryOutcome> {
    let destination = config.destination(destination).expect("configured");
    let deliveries = rows.iter().map(|row| async move {
        let entries = [row.entry()];
        let mut outcomes = transport
            .deliver(DeliveryRequest {
                destination,
                entries: &entries,
                started_at: DateTime::<Utc>::UNIX_EPOCH,
                timeout: Duration::from_secs(10),
            })
            .await;
        assert_eq!(outcomes.len(), 1, "one outcome per entry");
        outcomes.remove(0)
    });
    futures::future::join_all(deliveries).await
}

fn config(destinations: serde_json::Value) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({ "destinations": destinations }).to_string(),
        "test",
    )
    .expect("valid")
}

/// Counts the calls made through it.
#[derive(Debug)]
struct Counted<T>(T, std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl<T: Transport> Transport for Counted<T> {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.deliver(request).await
    }
}

#[tokio::test]
async fn sqs_gets_one_envelope_per_delivery_ten_to_a_call() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (url, _) = create_queue(&sqs, &moto::unique_name("relay-sqs")).await;
    let config = config(serde_json::json!({ "q": { "type": "sqs", "queue_url": url } }));
    let transport = Coalescing::new(
        Counted(
            SqsTransport::new(SqsTransport::client(&aws(&endpoint)), None),
            Default::default(),
        ),
        MAX_BATCH,
    );
    let rows: Vec<Row> = (0..25u128)
        .map(|n| Row::new(n, &format!("o-{}", n % 3), format!(r#"{{"n": {n}}}"#)))
        .collect();
    let outcomes = deliver_each(&transport, &config, "q", &rows).await;
    assert!(
        outcomes.iter().all(|o| *o == EntryOutcome::delivered()),
        "{outcomes:?}"
    );
    assert_eq!(
        transport
            .inner()
            .1
            .load(std::sync::atomic::Ordering::Relaxed),
        3,
        "25 entries in 3 calls"
    );
    let got = drain(&sqs, &url).await;
    let mut ids: Vec<String> = got
        .iter()
        .map(|(body, _)| {
            let envelope = json(body);
            assert_eq!(envelope["version"], 1);
            assert_eq!(envelope["type"], "order.paid");
            let id: Uuid = envelope["id"].as_str().expect("id").parse().expect("uuid");
            assert_eq!(envelope["payload"]["n"], id.as_u128() as u64, "{body}");
            id.to_string()
        })
        .collect();
    ids.sort();
    let mut sent: Vec<String> = rows.iter().map(|r| r.id.to_string()).collect();
    sent.sort();
    assert_eq!(ids, sent, "every delivery once");
}

#[tokio::test]
async fn a_fifo_queue_keeps_each_aggregates_order_and_drops_a_resent_delivery() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (url, _) = create_queue(&sqs, &format!("{}.fifo", moto::unique_name("relay"))).await;
    let config = config(serde_json::json!({ "f": { "type": "sqs", "queue_url": url } }));
    let transport = SqsTransport::new(SqsTransport::client(&aws(&endpoint)), None);
    let destination = config.destination("f").expect("f");
    // one aggregate's rows in order (as an ordered destination sends them),
    // one aggregate id SQS would refuse as a group id
    let rows: Vec<Row> = (0..6u128)
        .map(|n| {
            let aggregate = if n % 2 == 0 { "o-1" } else { "kunde ü 2" };
            Row::new(n, aggregate, format!(r#"{{"n": {n}}}"#))
        })
        .collect();
    for chunk in rows.chunks(3) {
        let entries: Vec<Entry<'_>> = chunk.iter().map(Row::entry).collect();
        let outcomes = transport
            .deliver(DeliveryRequest {
                destination,
                entries: &entries,
                started_at: DateTime::<Utc>::UNIX_EPOCH,
                timeout: Duration::from_secs(10),
            })
            .await;
        assert!(
            outcomes.iter().all(|o| *o == EntryOutcome::delivered()),
            "{outcomes:?}"
        );
    }
    // a retry of delivery 2 (its answer was lost): the same deduplication id
    let again = [rows[2].entry()];
    let outcomes = transport
        .deliver(DeliveryRequest {
            destination,
            entries: &again,
            started_at: DateTime::<Utc>::UNIX_EPOCH,
            timeout: Duration::from_secs(10),
        })
        .await;
    assert_eq!(outcomes, vec![EntryOutcome::delivered()]);
    let got = drain(&sqs, &url).await;
    let mut by_group: HashMap<String, Vec<u64>> = HashMap::new();
    for (body, group) in &got {
        let n = json(body)["payload"]["n"].as_u64().expect("n");
        by_group
            .entry(group.clone().expect("a group"))
            .or_default()
            .push(n);
    }
    assert_eq!(by_group.get("order/o-1"), Some(&vec![0, 2, 4]), "{got:?}");
    let hashed = hookbox::delivery::sqs::group_id("order", "kunde ü 2");
    assert!(hashed.starts_with("sha256:"));
    assert_eq!(by_group.get(&hashed), Some(&vec![1, 3, 5]), "{got:?}");
    assert_eq!(got.len(), 6, "the resent delivery is not a second message");
}

#[tokio::test]
async fn eventbridge_puts_the_envelope_as_detail_and_a_rule_delivers_it() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (bus, url) = observed_bus(&endpoint).await;
    let config = config(serde_json::json!({
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders" }
    }));
    let transport = Coalescing::new(
        Counted(
            EventBridgeTransport::new(EventBridgeTransport::client(&aws(&endpoint)), None),
            Default::default(),
        ),
        MAX_BATCH,
    );
    let rows: Vec<Row> = (0..12u128)
        .map(|n| Row::new(n, "o-1", format!(r#"{{"n": {n}}}"#)))
        .collect();
    let outcomes = deliver_each(&transport, &config, "bus", &rows).await;
    assert!(
        outcomes.iter().all(|o| *o == EntryOutcome::delivered()),
        "{outcomes:?}"
    );
    assert_eq!(
        transport
            .inner()
            .1
            .load(std::sync::atomic::Ordering::Relaxed),
        2,
        "12 entries in 2 calls"
    );
    let got = drain(&sqs, &url).await;
    assert_eq!(got.len(), 12, "{got:?}");
    let mut ns = Vec::new();
    for (body, _) in &got {
        let event = json(body);
        assert_eq!(event["source"], "shop.orders");
        assert_eq!(event["detail-type"], "order.paid");
        let detail = &event["detail"];
        assert_eq!(detail["version"], 1);
        let id: Uuid = detail["id"].as_str().expect("id").parse().expect("uuid");
        assert_eq!(detail["payload"]["n"], id.as_u128() as u64);
        ns.push(id.as_u128());
    }
    ns.sort_unstable();
    assert_eq!(ns, (0..12).collect::<Vec<_>>());
}

#[tokio::test]
async fn limits_moto_would_let_through_are_enforced_before_any_call() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (url, _) = create_queue(&sqs, &moto::unique_name("relay-limits")).await;
    let config = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": url, "max_entry_bytes": 65536 },
        "bus": { "type": "eventbridge", "bus": "default", "max_entry_bytes": 65536 },
    }));
    let big = format!(r#"{{"s": "{}"}}"#, "x".repeat(70_000));
    // in the blob store: sent by reference
    let mut by_ref = Row::new(2, "o-1", big.clone());
    by_ref.blob = Some(BlobRef {
        key: BlobKey::content("outbox", "q", &hookbox::blob::sha256(big.as_bytes())).expect("key"),
        size: big.len() as u64,
        sha256: hookbox::blob::sha256(big.as_bytes()),
    });
    let rows = vec![
        Row::new(1, "o-1", big.clone()),
        by_ref,
        Row::new(3, "o-1", "{}".into()),
    ];
    let sqs_transport =
        SqsTransport::new(SqsTransport::client(&aws(&endpoint)), Some("blobs".into()));
    let outcomes = deliver_each(&sqs_transport, &config, "q", &rows).await;
    let Verdict::Dead { reason } = &outcomes[0].verdict else {
        panic!(
            "over the limit, not in the blob store: dead, {:?}",
            outcomes[0]
        );
    };
    assert!(
        reason.contains("over the 65536 bytes its destination takes (max_entry_bytes)"),
        "{reason}"
    );
    assert_eq!(outcomes[1], EntryOutcome::delivered());
    assert_eq!(outcomes[2], EntryOutcome::delivered());
    let got = drain(&sqs, &url).await;
    assert_eq!(got.len(), 2, "the refused entry was never sent");
    let referred = got
        .iter()
        .map(|(body, _)| json(body))
        .find(|e| e["id"] == Uuid::from_u128(2).to_string())
        .expect("the large one");
    assert_eq!(referred["payload_ref"]["bucket"], "blobs");
    assert_eq!(referred["payload_ref"]["size"], big.len());
    assert_eq!(
        referred["payload_ref"]["sha256"],
        hex::encode(hookbox::blob::sha256(big.as_bytes()))
    );
    // an event type EventBridge refuses as a DetailType
    let events = EventBridgeTransport::new(EventBridgeTransport::client(&aws(&endpoint)), None);
    let mut long = Row::new(4, "o-1", "{}".into());
    long.event_type = "t".repeat(129);
    let outcomes = deliver_each(&events, &config, "bus", &[long]).await;
    assert!(
        matches!(&outcomes[0].verdict, Verdict::Dead { reason } if reason.contains("DetailType")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_service_that_is_down_retries_every_entry_naming_the_failure() {
    let private = moto::Moto::start();
    let endpoint = private.endpoint().to_string();
    let sqs = moto::client(&endpoint);
    let (url, _) = create_queue(&sqs, "down").await;
    let config = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": url },
        "bus": { "type": "eventbridge", "bus": "default" },
    }));
    private.kill();
    let rows: Vec<Row> = (0..3u128)
        .map(|n| Row::new(n, "o-1", "{}".into()))
        .collect();
    let transports: [(&str, Arc<dyn Transport>); 2] = [
        (
            "q",
            Arc::new(SqsTransport::new(
                SqsTransport::client(&aws(&endpoint)),
                None,
            )),
        ),
        (
            "bus",
            Arc::new(EventBridgeTransport::new(
                EventBridgeTransport::client(&aws(&endpoint)),
                None,
            )),
        ),
    ];
    for (destination, transport) in transports {
        let outcomes = deliver_each(transport.as_ref(), &config, destination, &rows).await;
        for outcome in outcomes {
            let Verdict::Retry { reason, .. } = &outcome.verdict else {
                panic!("{destination}: a failed call is retried: {outcome:?}");
            };
            assert!(
                reason.contains("SendMessageBatch failed") || reason.contains("PutEvents failed"),
                "{destination}: {reason}"
            );
        }
    }
}

/// A database that counts the statements and transaction calls reaching
/// it (each one a call on the Data API).
#[derive(Debug)]
struct Counting {
    db: Arc<dyn Database>,
    calls: Arc<std::sync::atomic::AtomicU64>,
}

impl Counting {
    fn count(&self) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl Executor for Counting {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.count();
        self.db.execute(statement, params).await
    }
}

#[async_trait::async_trait]
impl Database for Counting {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.count();
        self.db.begin().await
    }
}

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// Events, each fanned out to the three destinations: 1,002 outbox rows.
const EVENTS: u64 = 334;

/// Aggregates (FIFO groups) the events belong to.
const AGGREGATES: u64 = 20;

async fn a_thousand_rows_reach_an_http_sink_a_bus_and_a_fifo_queue_each_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    // a moto of its own: the two adapters' runs use both cores
    let moto = moto::Moto::start();
    let endpoint = moto.endpoint().to_owned();
    let sqs = moto::client(&endpoint);
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let (fifo, _) = create_queue(&sqs, &format!("{}.fifo", moto::unique_name("fan"))).await;
    let sink = HttpSink::start().await;
    let cfg = config(serde_json::json!({
        "crm": {
            "url": sink.url("/in"),
            "secrets": [SECRET],
            "allowed_networks": ["127.0.0.0/8", "::1/128"],
        },
        // moto answers one call at a time: a few calls in flight keep it
        // busy without timing any out (a timed-out call moto carried out
        // is sent again: at least once)
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders",
                 "max_in_flight": 4, "timeout_secs": 50 },
        "fifo": { "type": "sqs", "queue_url": fifo, "ordered": true,
                  "max_in_flight": 4, "timeout_secs": 50 },
    }));
    // each event to the three destinations: one row each
    let mut rows: HashMap<&str, Vec<Uuid>> = HashMap::new();
    for first in (0..EVENTS).step_by(100) {
        let tx = db.begin().await.expect("begin");
        for n in first..(first + 100).min(EVENTS) {
            for destination in ["crm", "bus", "fifo"] {
                let event = NewOutboxEvent {
                    aggregate_type: "order".into(),
                    aggregate_id: format!("o-{}", n % AGGREGATES),
                    event_type: "order.status_changed".into(),
                    destination: destination.into(),
                    payload: serde_json::json!({ "order_id": format!("o-{}", n % AGGREGATES), "n": n }),
                };
                let id = outbox::enqueue(tx.as_ref(), &event, at(0))
                    .await
                    .expect("enqueue");
                rows.entry(destination).or_default().push(id);
            }
        }
        tx.commit().await.expect("commit");
    }
    let clock = Arc::new(ManualClock::new(at(1)));
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counting: Arc<dyn Database> = Arc::new(Counting {
        db: db.clone(),
        calls: calls.clone(),
    });
    let mut settings = RelaySettings::new("relay-aws");
    settings.batch_size = 100;
    let lanes = settings.lanes.max(1) as u64;
    let slot_wait = chrono::Duration::from_std(settings.slot_wait).expect("slot_wait");
    let relay = with_aws(
        common::http_relay(counting, clock.clone(), settings),
        &endpoint,
    );
    let on_bus = tokio::spawn(consume(sqs.clone(), bus_queue, EVENTS as usize));
    let on_fifo = tokio::spawn(consume(sqs.clone(), fifo, EVENTS as usize));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let run = relay.drain(&store).await;
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let (mut d, mut batches, mut drains) = (run.deliveries, run.batches, 1);
    // rows that waited longer than `slot_wait` for a slot (moto answers one
    // call at a time, slower on a loaded machine) were released unattempted,
    // due again after it: the relay's clock moves on and it drains again
    // (while the last drain released some: each drain delivers some of them)
    let mut released = d.not_attempted;
    while d.delivered < 3 * EVENTS && released > 0 && drains < 500 {
        clock.advance(slot_wait + chrono::Duration::seconds(1));
        let run = relay.drain(&store).await;
        assert!(run.errors.is_empty(), "{:?}", run.errors);
        released = run.deliveries.not_attempted;
        d.delivered += run.deliveries.delivered;
        d.retried += run.deliveries.retried;
        d.dead += run.deliveries.dead;
        batches += run.batches;
        drains += 1;
    }
    assert_eq!(
        (d.delivered, d.retried, d.dead),
        (3 * EVENTS, 0, 0),
        "{d:?} in {drains} drains"
    );
    // one statement per batch (each lane ends each drain with one empty
    // claim)
    let statements = calls.load(std::sync::atomic::Ordering::Relaxed) - lanes * drains;
    assert!(
        statements <= batches,
        "{statements} statements, {batches} batches"
    );
    let pending = common::count(
        db.as_ref(),
        "SELECT count(*) AS n FROM outbox WHERE status <> 'delivered'",
    )
    .await;
    assert_eq!(pending, 0);

    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let expected =
        |destination: &str| sorted(rows[destination].iter().map(Uuid::to_string).collect());
    // the HTTP sink: each row once, its id the webhook-id
    let posted: Vec<String> = sink
        .requests()
        .iter()
        .map(|r| r.header("webhook-id").expect("webhook-id").to_string())
        .collect();
    assert_eq!(sorted(posted), expected("crm"));
    // the bus, seen through its rule's queue: each row once, its id in the detail
    let events = on_bus.await.expect("bus consumer");
    let on_bus: Vec<String> = events
        .iter()
        .map(|(body, _)| json(body)["detail"]["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(sorted(on_bus), expected("bus"));
    // the FIFO queue: each row once, each aggregate's events in order
    let messages = on_fifo.await.expect("FIFO consumer");
    let mut by_group: HashMap<String, Vec<u64>> = HashMap::new();
    let mut fifo_ids = Vec::new();
    for (body, group) in &messages {
        let envelope = json(body);
        fifo_ids.push(envelope["id"].as_str().expect("id").to_string());
        by_group
            .entry(group.clone().expect("group"))
            .or_default()
            .push(envelope["payload"]["n"].as_u64().expect("n"));
    }
    assert_eq!(sorted(fifo_ids), expected("fifo"));
    assert_eq!(by_group.len() as u64, AGGREGATES);
    for (group, ns) in &by_group {
        assert!(ns.is_sorted(), "{group}: {ns:?}");
    }
}

/// A relay over `db` delivering sqs and eventbridge destinations through
/// the services at `endpoint`.
fn aws_relay(
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    endpoint: &str,
) -> hookbox::relay::Relay {
    with_aws(
        common::http_relay(db, clock, RelaySettings::new("relay-aws")),
        endpoint,
    )
}

async fn refused_entries_are_retried_or_dead_with_the_services_code(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let proxy = hookbox_testkit::fault_proxy::FaultProxy::start(&endpoint).await;
    let sqs = moto::client(&endpoint);
    let (queue, _) = create_queue(&sqs, &moto::unique_name("faults")).await;
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let cfg = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": queue },
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders" },
    }));
    let mut ids: HashMap<&str, Vec<Uuid>> = HashMap::new();
    let tx = db.begin().await.expect("begin");
    for n in 0..10 {
        for destination in ["q", "bus"] {
            let event = NewOutboxEvent {
                aggregate_type: "order".into(),
                aggregate_id: format!("o-{n}"),
                event_type: "order.paid".into(),
                destination: destination.into(),
                payload: serde_json::json!({ "n": n }),
            };
            let id = outbox::enqueue(tx.as_ref(), &event, at(0))
                .await
                .expect("enqueue");
            ids.entry(destination).or_default().push(id);
        }
    }
    tx.commit().await.expect("commit");
    // per destination: the first row throttled-or-internal once, the second
    // throttled once, the third refused for good
    let permanent = [("q", "InvalidParameterValue"), ("bus", "MalformedDetail")];
    for (destination, code) in permanent {
        let rows = &ids[destination];
        proxy.fail(&rows[0].to_string(), "InternalFailure", false, 1);
        proxy.fail(&rows[1].to_string(), "ThrottlingException", true, 1);
        proxy.fail(&rows[2].to_string(), code, true, usize::MAX);
    }
    let clock = Arc::new(ManualClock::new(at(1)));
    let relay = aws_relay(db.clone(), clock.clone(), proxy.endpoint());
    let store = ConfigStore::fixed(cfg, clock.clone());
    let first = relay.drain(&store).await;
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    let d = &first.deliveries;
    assert_eq!((d.delivered, d.retried, d.dead), (14, 4, 2), "{d:?}");
    // the retries, once due
    clock.advance(chrono::Duration::hours(1));
    let second = relay.drain(&store).await;
    let d = &second.deliveries;
    assert_eq!((d.delivered, d.retried, d.dead), (4, 0, 0), "{d:?}");

    for (destination, code) in permanent {
        let rows = &ids[destination];
        for (n, id) in rows.iter().enumerate() {
            let row = outbox::get(db.as_ref(), *id)
                .await
                .expect("get")
                .expect("row");
            let expected = match n {
                0 | 1 => (OutboxStatus::Delivered, 2),
                2 => (OutboxStatus::Dead, 1),
                _ => (OutboxStatus::Delivered, 1),
            };
            assert_eq!(
                (row.status, row.attempts),
                expected,
                "{destination} row {n}"
            );
        }
        // the dead one: the service's code in the row and in its attempt log
        // (what `hookbox outbox attempts` and the admin page show)
        let dead = outbox::get(db.as_ref(), rows[2])
            .await
            .expect("get")
            .expect("row");
        let error = dead.last_error.expect("an error");
        assert!(error.contains(code), "{destination}: {error}");
        let log = outbox::attempts::of(db.as_ref(), rows[2])
            .await
            .expect("attempts");
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(
            log[0].error.as_deref().is_some_and(|e| e.contains(code)),
            "{log:?}"
        );
        assert!(
            log[0]
                .response_excerpt
                .as_deref()
                .is_some_and(|e| e.starts_with(code)),
            "{log:?}"
        );
        let retried = outbox::attempts::of(db.as_ref(), rows[1])
            .await
            .expect("attempts");
        assert!(
            retried[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("ThrottlingException")),
            "{retried:?}"
        );
    }
    // each delivered row reached its service once; the dead one never
    let envelope_ids = |messages: Vec<(String, Option<String>)>, detail: bool| {
        let mut got: Vec<String> = messages
            .iter()
            .map(|(body, _)| {
                let value = json(body);
                let envelope = if detail { &value["detail"] } else { &value };
                envelope["id"].as_str().expect("id").to_string()
            })
            .collect();
        got.sort();
        got
    };
    for (destination, url, detail) in [("q", &queue, false), ("bus", &bus_queue, true)] {
        let mut expected: Vec<String> = ids[destination]
            .iter()
            .enumerate()
            .filter(|(n, _)| *n != 2)
            .map(|(_, id)| id.to_string())
            .collect();
        expected.sort();
        assert_eq!(
            envelope_ids(drain(&sqs, url).await, detail),
            expected,
            "{destination}"
        );
    }
}

/// A payload of about `bytes` bytes of JSON text.
fn payload_of(bytes: usize) -> serde_json::Value {
    serde_json::json!({ "filler": "x".repeat(bytes), "n": bytes })
}

async fn large_payloads_go_whole_or_by_reference_to_their_blob(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (queue, _) = create_queue(&sqs, &moto::unique_name("payloads")).await;
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let cfg = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": queue },
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders" },
    }));
    let blobs = Arc::new(hookbox::blob::memory::MemoryBlobStore::new());
    // 200 KiB fits the default 256 KiB entry; 2 MiB goes by reference
    let sizes = [200 * 1024, 2 * 1024 * 1024];
    let tx = db.begin().await.expect("begin");
    let mut written = Vec::new();
    for destination in ["q", "bus"] {
        for size in sizes {
            let event = NewOutboxEvent {
                aggregate_type: "report".into(),
                aggregate_id: format!("r-{size}"),
                event_type: "report.ready".into(),
                destination: destination.into(),
                payload: payload_of(size),
            };
            let id = outbox::enqueue_with_blobs(tx.as_ref(), blobs.as_ref(), &event, at(0))
                .await
                .expect("enqueue");
            written.push((destination, size, id));
        }
    }
    tx.commit().await.expect("commit");
    let clock = Arc::new(ManualClock::new(at(1)));
    let shared = aws(&endpoint);
    let bucket = Some("hookbox-blobs".to_string());
    let relay = hookbox::relay::Relay::new(
        db.clone(),
        blobs.clone(),
        Arc::new(hookbox::relay::HttpSender::default()),
        None,
        clock.clone(),
        RelaySettings::new("relay-payloads"),
    )
    .with_transport(
        TransportKind::Sqs,
        Arc::new(SqsTransport::new(
            SqsTransport::client(&shared),
            bucket.clone(),
        )),
    )
    .with_transport(
        TransportKind::EventBridge,
        Arc::new(EventBridgeTransport::new(
            EventBridgeTransport::client(&shared),
            bucket,
        )),
    );
    let run = relay.drain(&ConfigStore::fixed(cfg, clock.clone())).await;
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.deliveries.delivered, 4, "{:?}", run.deliveries);

    let mut envelopes: HashMap<String, serde_json::Value> = HashMap::new();
    for (body, _) in drain(&sqs, &queue).await {
        let envelope = json(&body);
        envelopes.insert(envelope["id"].as_str().expect("id").into(), envelope);
    }
    for (body, _) in drain(&sqs, &bus_queue).await {
        let envelope = json(&body)["detail"].clone();
        envelopes.insert(envelope["id"].as_str().expect("id").into(), envelope);
    }
    for (destination, size, id) in written {
        let envelope = &envelopes[&id.to_string()];
        assert!(
            envelope.to_string().len() <= 256 * 1024,
            "{destination}: within the entry limit"
        );
        assert_eq!(envelope["content_type"], "application/json");
        if size < 256 * 1024 {
            assert_eq!(
                envelope["payload"],
                payload_of(size),
                "{destination}: whole"
            );
            continue;
        }
        // by reference: the object reads back, and its sha256 checks
        assert!(envelope.get("payload").is_none(), "{destination}");
        let reference = &envelope["payload_ref"];
        assert_eq!(reference["bucket"], "hookbox-blobs");
        let blob = hookbox::blob::BlobRef {
            key: reference["key"]
                .as_str()
                .expect("key")
                .parse()
                .expect("a key"),
            size: reference["size"].as_u64().expect("size"),
            sha256: hex::decode(reference["sha256"].as_str().expect("sha256"))
                .expect("hex")
                .try_into()
                .expect("32 bytes"),
        };
        let bytes = hookbox::blob::get_verified(blobs.as_ref(), &blob)
            .await
            .expect("the object is there and checks");
        let read: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(read, payload_of(size), "{destination}: the payload itself");
    }
}

async fn a_service_that_is_down_trips_its_breaker_and_never_delays_an_http_destination(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let proxy = hookbox_testkit::fault_proxy::FaultProxy::start(&endpoint).await;
    let sqs = moto::client(&endpoint);
    let (queue, _) = create_queue(&sqs, &moto::unique_name("breaker")).await;
    let sink = HttpSink::start().await;
    let cfg = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": queue, "trip_after": 3, "cool_down_secs": 60 },
        "crm": {
            "url": sink.url("/in"),
            "secrets": [SECRET],
            "allowed_networks": ["127.0.0.0/8", "::1/128"],
        },
    }));
    outbox::destinations::sync(db.as_ref(), &cfg, at(0))
        .await
        .expect("sync");
    let enqueue = |destination: &'static str, first: u32| {
        let db = db.clone();
        async move {
            let tx = db.begin().await.expect("begin");
            let mut ids = Vec::new();
            for n in first..first + 5 {
                let event = NewOutboxEvent {
                    aggregate_type: "order".into(),
                    aggregate_id: format!("o-{n}"),
                    event_type: "order.paid".into(),
                    destination: destination.into(),
                    payload: serde_json::json!({ "n": n }),
                };
                ids.push(
                    outbox::enqueue(tx.as_ref(), &event, at(0))
                        .await
                        .expect("enqueue"),
                );
            }
            tx.commit().await.expect("commit");
            ids
        }
    };
    let queued = enqueue("q", 0).await;
    enqueue("crm", 0).await;
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let relay = aws_relay(db.clone(), clock.clone(), proxy.endpoint());
    let state = |db: Arc<dyn Database>, clock: Arc<ManualClock>| async move {
        let all = outbox::destinations::health(db.as_ref())
            .await
            .expect("health");
        all.iter()
            .find(|h| h.name == "q")
            .map(|h| h.state(clock.now()).to_string())
            .expect("q is synced")
    };

    // SQS is down: the queue's rows fail, the HTTP rows are delivered
    proxy.set_down(true);
    let run = relay.drain(&store).await;
    assert_eq!(
        (run.deliveries.delivered, run.deliveries.retried),
        (5, 5),
        "{:?}",
        run.deliveries
    );
    assert_eq!(
        state(db.clone(), clock.clone()).await,
        "open",
        "5 failures ≥ trip_after 3"
    );
    assert_eq!(sink.requests().len(), 5);

    // during the cool-down nothing is sent to SQS; HTTP rows keep flowing
    let calls = proxy.calls();
    for round in 1..=5u32 {
        enqueue("crm", 10 * round).await;
        clock.advance(chrono::Duration::seconds(10));
        let run = relay.drain(&store).await;
        assert_eq!(
            run.deliveries.delivered, 5,
            "round {round}: {:?}",
            run.deliveries
        );
    }
    assert_eq!(proxy.calls(), calls, "no call to SQS during the cool-down");
    assert_eq!(
        sink.requests().len(),
        30,
        "the HTTP destination was never held up"
    );
    for id in &queued {
        let row = outbox::get(db.as_ref(), *id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!((row.status, row.attempts), (OutboxStatus::Pending, 1));
        assert!(
            row.last_error
                .as_deref()
                .is_some_and(|e| e.contains("ServiceUnavailable")),
            "{:?}",
            row.last_error
        );
    }

    // back up: the probe succeeds and the backlog follows, each row once
    proxy.set_down(false);
    clock.advance(chrono::Duration::seconds(61));
    relay.drain(&store).await;
    assert_eq!(state(db.clone(), clock.clone()).await, "healthy");
    let mut got: Vec<String> = drain(&sqs, &queue)
        .await
        .iter()
        .map(|(body, _)| json(body)["id"].as_str().expect("id").to_string())
        .collect();
    got.sort();
    let mut expected: Vec<String> = queued.iter().map(Uuid::to_string).collect();
    expected.sort();
    assert_eq!(got, expected);
}

for_each_adapter!(
    a_thousand_rows_reach_an_http_sink_a_bus_and_a_fifo_queue_each_once,
    refused_entries_are_retried_or_dead_with_the_services_code,
    large_payloads_go_whole_or_by_reference_to_their_blob,
    a_service_that_is_down_trips_its_breaker_and_never_delays_an_http_destination,
);
