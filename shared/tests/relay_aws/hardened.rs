//! The relay's AWS destinations, hardened (issue #47), against moto and
//! through both database adapters where rows are involved: a payload
//! hookbox kept in its row whose envelope is over a destination's
//! `max_entry_bytes` moves to the blob store and goes by reference (the row
//! refers to the object, so retention deletes it only with the row); a FIFO
//! queue keeps each aggregate's order without `"ordered": true`, one group
//! per aggregate type and id; EventBridge's integer range is enforced
//! before the call (moto takes any number).

use super::{aws_support, common};
use crate::for_each_adapter;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_support::{aws, create_queue, drain, json, observed_bus, with_aws};
use chrono::{DateTime, Utc};
use common::{Adapter, at, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::blob::{BlobKey, BlobRef};
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigStore, HookboxConfig, TransportKind};
use hookbox::delivery::{
    Coalescing, DeliveryRequest, Entry, EventBridgeTransport, MAX_BATCH, SqsTransport, Transport,
    Verdict,
};
use hookbox::outbox::{self, NewEvent, NewOutboxEvent, OutboxStatus};
use hookbox::params;
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::Database;
use hookbox_testkit::moto;
use uuid::Uuid;

fn config(destinations: serde_json::Value) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({ "destinations": destinations }).to_string(),
        "test",
    )
    .expect("valid")
}

/// A payload whose JSON text is `bytes` bytes.
fn payload_of(tag: &str, bytes: usize) -> serde_json::Value {
    let probe = serde_json::json!({ "tag": tag, "pad": "" })
        .to_string()
        .len();
    serde_json::json!({ "tag": tag, "pad": "p".repeat(bytes - probe) })
}

const BUCKET: &str = "hookbox-blobs";

/// A relay over `db` and `blobs` whose SQS and EventBridge transports (each
/// behind `Coalescing`, as the relay function wires them) refer to `BUCKET`.
fn relay_with_blobs(
    db: Arc<dyn Database>,
    blobs: Arc<MemoryBlobStore>,
    clock: Arc<ManualClock>,
    endpoint: &str,
) -> Relay {
    let shared = aws(endpoint);
    Relay::new(
        db,
        blobs,
        Arc::new(hookbox::relay::HttpSender::default()),
        None,
        clock,
        RelaySettings::new("relay-hardened"),
    )
    .with_jitter(Arc::new(hookbox::relay::FixedJitter(0.0)))
    .with_transport(
        TransportKind::Sqs,
        Arc::new(Coalescing::new(
            SqsTransport::new(SqsTransport::client(&shared), Some(BUCKET.into())),
            MAX_BATCH,
        )),
    )
    .with_transport(
        TransportKind::EventBridge,
        Arc::new(Coalescing::new(
            EventBridgeTransport::new(EventBridgeTransport::client(&shared), Some(BUCKET.into())),
            MAX_BATCH,
        )),
    )
}

/// The envelopes on each queue (a bus's through its rule's queue), by
/// delivery id.
async fn envelopes(
    sqs: &aws_sdk_sqs::Client,
    queues: &[(&str, bool)],
) -> HashMap<String, serde_json::Value> {
    let mut got = HashMap::new();
    for (url, is_bus) in queues {
        for (body, _) in drain(sqs, url).await {
            let value = json(&body);
            let envelope = if *is_bus {
                value["detail"].clone()
            } else {
                value
            };
            got.insert(envelope["id"].as_str().expect("id").to_string(), envelope);
        }
    }
    got
}

async fn a_published_payload_over_max_entry_bytes_goes_by_reference_and_its_row_refers_to_it(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (small, _) = create_queue(&sqs, &moto::unique_name("small")).await;
    let (default, _) = create_queue(&sqs, &moto::unique_name("default")).await;
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let subscribe = serde_json::json!({ "event_types": ["report.*"] });
    let cfg = config(serde_json::json!({
        "small": { "type": "sqs", "queue_url": small, "max_entry_bytes": 65536,
                   "subscribe": subscribe },
        "default": { "type": "sqs", "queue_url": default, "subscribe": subscribe },
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders",
                 "max_entry_bytes": 65536, "subscribe": subscribe },
    }));
    outbox::destinations::sync(db.as_ref(), &cfg, at(0))
        .await
        .expect("sync");
    // what hookbox_publish keeps in its rows: 100 KiB, and just under its
    // 256 KiB limit (over the default max_entry_bytes once in an envelope)
    let sizes = [100 * 1024, 256 * 1024 - 16];
    let mut published: HashMap<Uuid, (String, usize)> = HashMap::new();
    let tx = db.begin().await.expect("begin");
    for size in sizes {
        let event = NewEvent {
            event_type: "report.ready".into(),
            payload: payload_of(&format!("r-{size}"), size),
            aggregate_type: "report".into(),
            aggregate_id: format!("r-{size}"),
        };
        let ids = outbox::publish(tx.as_ref(), &event, at(0))
            .await
            .expect("publish");
        assert_eq!(ids.len(), 3, "one row per destination");
        for id in ids {
            let row = outbox::get(tx.as_ref(), id)
                .await
                .expect("get")
                .expect("row");
            assert_eq!(row.payload_storage.location(), "inline", "kept in the row");
            published.insert(id, (row.destination, size));
        }
    }
    tx.commit().await.expect("commit");

    let clock = Arc::new(ManualClock::new(at(1)));
    let blobs = Arc::new(MemoryBlobStore::new());
    let relay = relay_with_blobs(db.clone(), blobs.clone(), clock.clone(), &endpoint);
    let store = ConfigStore::fixed(cfg, clock.clone());
    let run = relay.drain(&store).await;
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let d = &run.deliveries;
    assert_eq!((d.delivered, d.retried, d.dead), (6, 0, 0), "{d:?}");

    let got = envelopes(
        &sqs,
        &[(&small, false), (&default, false), (&bus_queue, true)],
    )
    .await;
    assert_eq!(got.len(), 6, "{:?}", got.keys());
    let mut keys = Vec::new();
    for (id, (destination, size)) in &published {
        let envelope = &got[&id.to_string()];
        let payload = payload_of(&format!("r-{size}"), *size);
        if destination == "default" && *size == 100 * 1024 {
            assert_eq!(envelope["payload"], payload, "fits: whole");
            continue;
        }
        assert!(envelope.get("payload").is_none(), "{destination} {size}");
        let reference = &envelope["payload_ref"];
        assert_eq!(reference["bucket"], BUCKET);
        let blob = BlobRef {
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
        // the object reads back, its size and sha256 check, it is the payload
        let bytes = hookbox::blob::get_verified(blobs.as_ref(), &blob)
            .await
            .expect("the object is there and checks");
        let read: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(read, payload, "{destination} {size}: the payload itself");
        // under the key an enqueue by reference would use
        let key = BlobKey::content("outbox", destination, &blob.sha256).expect("key");
        assert_eq!(blob.key, key, "{destination} {size}");
        // the row refers to the object now, as a row enqueued by reference
        let row = outbox::get(db.as_ref(), *id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(row.status, OutboxStatus::Delivered);
        assert_eq!(
            row.payload_storage.blob(),
            Some(&blob),
            "{destination} {size}"
        );
        keys.push(key);
    }
    assert_eq!(keys.len(), 5);

    // retention deletes each object with the last row referring to it
    clock.advance(chrono::Duration::days(31));
    let purged = relay.purge().await.expect("purge");
    assert_eq!(purged.outbox, 6, "{purged:?}");
    for key in &keys {
        assert!(!blobs.contains(key), "{key}: deleted with its row");
    }
}

async fn a_moved_payload_stays_while_another_row_refers_to_it(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (queue, _) = create_queue(&sqs, &moto::unique_name("shared")).await;
    let cfg = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": queue, "max_entry_bytes": 65536 },
    }));
    // the same 100 KiB twice to one destination: one object, two rows
    let payload = payload_of("same", 100 * 1024);
    let mut ids = Vec::new();
    for t in [0, 1] {
        let tx = db.begin().await.expect("begin");
        let event = NewEvent {
            event_type: "report.ready".into(),
            payload: payload.clone(),
            aggregate_type: "report".into(),
            aggregate_id: format!("r-{t}"),
        };
        ids.push(publish_to(tx.as_ref(), &event, "q", at(t)).await);
        tx.commit().await.expect("commit");
    }
    let clock = Arc::new(ManualClock::new(at(2)));
    let blobs = Arc::new(MemoryBlobStore::new());
    let relay = relay_with_blobs(db.clone(), blobs.clone(), clock.clone(), &endpoint);
    let run = relay.drain(&ConfigStore::fixed(cfg, clock.clone())).await;
    assert_eq!(run.deliveries.delivered, 2, "{:?}", run.deliveries);
    assert_eq!(blobs.len(), 1, "one object for both rows");
    let key = blobs.keys().remove(0);
    for id in &ids {
        let row = outbox::get(db.as_ref(), *id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(row.payload_storage.blob().map(|b| &b.key), Some(&key));
    }
    // the first row is old enough to purge, the second is kept
    db.execute(
        &sql(
            "UPDATE outbox SET created_at = CAST(:at AS timestamptz) WHERE id = CAST(:id AS uuid)",
        ),
        &params! { "at" => at(2) + chrono::Duration::days(20), "id" => ids[1] },
    )
    .await
    .expect("keep the second");
    clock.advance(chrono::Duration::days(31));
    let purged = relay.purge().await.expect("purge");
    assert_eq!(purged.outbox, 1, "{purged:?}");
    assert!(blobs.contains(&key), "the second row still refers to it");
    clock.advance(chrono::Duration::days(20));
    relay.purge().await.expect("purge");
    assert!(!blobs.contains(&key), "deleted with the last row");
    drain(&sqs, &queue).await;
}

/// `event` to `destination` only (what `hookbox_publish` does with a
/// destination named), its payload kept in the row.
async fn publish_to(
    tx: &dyn hookbox::store::Transaction,
    event: &NewEvent,
    destination: &str,
    now: DateTime<Utc>,
) -> Uuid {
    let rows = tx
        .execute(
            &outbox::publish::PUBLISH,
            &params! {
                "event_type" => event.event_type.as_str(),
                "payload" => event.payload.to_string(),
                "aggregate_type" => event.aggregate_type.as_str(),
                "aggregate_id" => event.aggregate_id.as_str(),
                "destination" => destination,
                "now" => now,
                "payload_key" => hookbox::store::Value::Null,
                "payload_size" => hookbox::store::Value::Null,
                "payload_sha256" => hookbox::store::Value::Null,
                "origin" => hookbox::store::Value::Null,
            },
        )
        .await
        .expect("publish");
    rows.rows[0].uuid("id").expect("id")
}

/// Events per aggregate in the FIFO test.
const EVENTS: u64 = 30;

async fn a_fifo_queue_keeps_each_aggregates_order_without_ordered_and_apart_by_type(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (fifo, _) = create_queue(&sqs, &format!("{}.fifo", moto::unique_name("order"))).await;
    // nothing says "ordered"
    let cfg = config(serde_json::json!({ "fifo": { "type": "sqs", "queue_url": fifo } }));
    assert!(cfg.destination("fifo").expect("fifo").ordered, "implied");
    // two partners' customer cus_1: one id, two aggregate types
    let tx = db.begin().await.expect("begin");
    for n in 0..EVENTS {
        for aggregate_type in ["partner:stripe", "partner:paddle"] {
            let event = NewOutboxEvent {
                aggregate_type: aggregate_type.into(),
                aggregate_id: "cus_1".into(),
                event_type: "customer.updated".into(),
                destination: "fifo".into(),
                payload: serde_json::json!({ "from": aggregate_type, "n": n }),
            };
            outbox::enqueue(tx.as_ref(), &event, at(0))
                .await
                .expect("enqueue");
        }
    }
    tx.commit().await.expect("commit");
    let clock = Arc::new(ManualClock::new(at(1)));
    let relay = with_aws(
        common::http_relay(db.clone(), clock.clone(), RelaySettings::new("relay-fifo")),
        &endpoint,
    );
    let run = relay.drain(&ConfigStore::fixed(cfg, clock.clone())).await;
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.deliveries.delivered, 2 * EVENTS, "{:?}", run.deliveries);
    let mut by_group: HashMap<String, Vec<(String, u64)>> = HashMap::new();
    for (body, group) in drain(&sqs, &fifo).await {
        let envelope = json(&body);
        by_group.entry(group.expect("a group")).or_default().push((
            envelope["payload"]["from"]
                .as_str()
                .expect("from")
                .to_string(),
            envelope["payload"]["n"].as_u64().expect("n"),
        ));
    }
    let mut groups: Vec<&String> = by_group.keys().collect();
    groups.sort();
    assert_eq!(
        groups,
        ["partner:paddle/cus_1", "partner:stripe/cus_1"],
        "one group per aggregate type and id"
    );
    for (group, got) in &by_group {
        let from = group.trim_end_matches("/cus_1");
        let expected: Vec<(String, u64)> = (0..EVENTS).map(|n| (from.to_string(), n)).collect();
        assert_eq!(got, &expected, "{group}: in order, and only its own");
    }
}

/// Sends `rows` (payloads) to `destination` through `transport`, one call.
async fn deliver(
    transport: &dyn Transport,
    config: &HookboxConfig,
    destination: &str,
    payloads: &[&str],
) -> Vec<Verdict> {
    let destination = config.destination(destination).expect("configured");
    let entries: Vec<Entry<'_>> = payloads
        .iter()
        .enumerate()
        .map(|(n, payload)| Entry {
            id: Uuid::from_u128(n as u128 + 1),
            event_type: "order.paid",
            aggregate_type: "order",
            aggregate_id: "o-1",
            payload,
            blob: None,
        })
        .collect();
    transport
        .deliver(DeliveryRequest {
            destination,
            entries: &entries,
            started_at: DateTime::<Utc>::UNIX_EPOCH,
            timeout: Duration::from_secs(10),
        })
        .await
        .into_iter()
        .map(|o| o.verdict)
        .collect()
}

#[tokio::test]
async fn eventbridge_gets_no_integer_it_refuses_and_the_dead_reason_names_its_pointer() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let cfg = config(serde_json::json!({
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders" }
    }));
    let transport = EventBridgeTransport::new(EventBridgeTransport::client(&aws(&endpoint)), None);
    // what jsonb makes of 1e20 and 1e300, beside numbers EventBridge takes
    let huge = format!(r#"{{"total": {{"minor": 1{}}}}}"#, "0".repeat(300));
    let payloads = [
        r#"{"amount": 9223372036854775807, "rate": 1.5e300, "small": -9223372036854775808}"#,
        r#"{"lines": [{"qty": 1}, {"qty": 100000000000000000000}]}"#,
        huge.as_str(),
    ];
    let verdicts = deliver(&transport, &cfg, "bus", &payloads).await;
    assert_eq!(verdicts[0], Verdict::Delivered);
    for (n, pointer) in [(1, "/lines/1/qty"), (2, "/total/minor")] {
        let Verdict::Dead { reason } = &verdicts[n] else {
            panic!("entry {n}: dead before the call, {:?}", verdicts[n]);
        };
        assert!(
            reason.starts_with(&format!(
                "the payload's integer at JSON pointer \"{pointer}\""
            )),
            "{reason}"
        );
        assert!(
            reason.contains("outside the range EventBridge's PutEvents accepts"),
            "{reason}"
        );
    }
    let got = drain(&sqs, &bus_queue).await;
    assert_eq!(got.len(), 1, "only the first reached the bus: {got:?}");
    assert_eq!(
        json(&got[0].0)["detail"]["id"],
        Uuid::from_u128(1).to_string()
    );
}

#[tokio::test]
async fn an_envelope_over_the_limit_without_a_blob_store_is_dead_saying_so() {
    let endpoint = moto::endpoint();
    let sqs = moto::client(&endpoint);
    let (queue, _) = create_queue(&sqs, &moto::unique_name("no-blobs")).await;
    let (bus, bus_queue) = observed_bus(&endpoint).await;
    let cfg = config(serde_json::json!({
        "q": { "type": "sqs", "queue_url": queue, "max_entry_bytes": 65536 },
        "bus": { "type": "eventbridge", "bus": bus, "source": "shop.orders",
                 "max_entry_bytes": 65536 },
    }));
    let big = payload_of("big", 100 * 1024).to_string();
    let transports: [(&str, Box<dyn Transport>); 2] = [
        (
            "q",
            Box::new(SqsTransport::new(
                SqsTransport::client(&aws(&endpoint)),
                None,
            )),
        ),
        (
            "bus",
            Box::new(EventBridgeTransport::new(
                EventBridgeTransport::client(&aws(&endpoint)),
                None,
            )),
        ),
    ];
    for (destination, transport) in transports {
        let verdicts = deliver(transport.as_ref(), &cfg, destination, &[&big, "{}"]).await;
        let Verdict::Dead { reason } = &verdicts[0] else {
            panic!("{destination}: {verdicts:?}");
        };
        assert!(
            reason.contains(
                "and no blob store is configured (HOOKBOX_BLOB_BUCKET or HOOKBOX_BLOB_DIR)"
            ),
            "{destination}: {reason}"
        );
        assert_eq!(verdicts[1], Verdict::Delivered, "{destination}");
    }
    assert_eq!(drain(&sqs, &queue).await.len(), 1);
    assert_eq!(drain(&sqs, &bus_queue).await.len(), 1);
}

for_each_adapter!(
    a_published_payload_over_max_entry_bytes_goes_by_reference_and_its_row_refers_to_it,
    a_moved_payload_stays_while_another_row_refers_to_it,
    a_fifo_queue_keeps_each_aggregates_order_without_ordered_and_apart_by_type,
);
