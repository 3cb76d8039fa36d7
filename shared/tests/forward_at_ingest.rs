//! Forwarding at ingest (`hookbox::inbox::routed`), through both database
//! adapters and the real ingest use case: a webhook of a partner with
//! routes is stored and forwarded in one statement (its deliveries, or its
//! unrouted policy), nothing enqueued; a duplicate forwards nothing; what
//! ingest cannot forward (not JSON, a large payload, an earlier event of its
//! key still waiting) is stored pending and enqueued, and the processor
//! forwards it in received order.

mod common;
#[path = "forward_at_ingest/faithful.rs"]
mod faithful;

use std::sync::Arc;
use std::time::Duration;

use common::{Adapter, count, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::body::Body;
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::inbox::routed::{FORWARD_AT_INGEST_VAR, forward_at_ingest_from_env};
use hookbox::inbox::{self, InboxMessage, InboxStatus, NewInboxEvent};
use hookbox::metrics::Metrics;
use hookbox::params;
use hookbox::processing::{Processor, ProcessorConfig, RoutingHandler};
use hookbox::queue::Queue;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::Database;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn config(unrouted: &str) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({
            "partners": {"shop": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/customer",
                "routes": [
                    {"to": "billing", "event_types": ["invoice.*"]},
                    {"to": "all", "event_types": ["invoice.*", "charge.*"]},
                ],
                "unrouted": unrouted,
            }},
            "destinations": {
                "billing": {"url": "https://billing.example.com/hooks", "secrets": [SECRET]},
                "all": {"url": "https://all.example.com/hooks", "secrets": [SECRET]},
            }
        })
        .to_string(),
        "test",
    )
    .expect("config")
}

struct Rig {
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    queue: MemoryQueue,
    blobs: Arc<MemoryBlobStore>,
    ingest: Ingest,
    handler: RoutingHandler,
}

impl Rig {
    /// A rig whose destinations (and the partners routed to each) are
    /// synced to the database, as the relay's run and the local stack do.
    async fn new(db: Arc<dyn Database>, unrouted: &str, forward: bool) -> Self {
        let clock = Arc::new(ManualClock::new(common::t0()));
        let queue = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: Duration::from_secs(30),
                max_receive_count: 5,
            },
            clock.clone(),
        );
        let cfg = config(unrouted);
        hookbox::outbox::destinations::sync(db.as_ref(), &cfg, clock.now())
            .await
            .expect("sync the destinations");
        let store = Arc::new(ConfigStore::fixed(cfg, clock.clone()));
        let blobs = Arc::new(MemoryBlobStore::new());
        let ingest = Ingest::new(
            store.clone(),
            db.clone(),
            Arc::new(queue.clone()),
            blobs.clone(),
            clock.clone(),
        )
        .with_forwarding_at_ingest(forward);
        Self {
            db,
            clock,
            queue,
            blobs,
            ingest,
            handler: RoutingHandler::new(store),
        }
    }

    /// A signed webhook of partner `shop`, through the ingest use case.
    async fn post(&self, id: &str, body: &[u8]) -> (IngestResponse, Metrics) {
        let h = sign_standard_webhooks(id, self.clock.now(), body, &[Secret::new(SECRET)])
            .expect("sign");
        let headers = [
            ("webhook-id", h.id.as_str()),
            ("webhook-timestamp", h.timestamp.as_str()),
            ("webhook-signature", h.signature.as_str()),
        ];
        let request = IngestRequest {
            partner: "shop",
            headers: Headers::from_pairs(headers),
            body,
            url: None,
        };
        let mut metrics = Metrics::new();
        let response = self.ingest.handle(&request, &mut metrics).await;
        (response, metrics)
    }

    async fn event(&self, id: &str, event_type: &str, customer: &str) -> IngestResponse {
        self.post(id, &body(id, event_type, customer)).await.0
    }

    /// One processor invocation over every visible message.
    async fn process(&self) -> Vec<&'static str> {
        let config = ProcessorConfig::default();
        let processor = Processor {
            db: self.db.as_ref(),
            queue: &self.queue,
            blobs: self.blobs.as_ref(),
            clock: self.clock.as_ref(),
            handler: &self.handler,
            config: &config,
        };
        common::process_visible(&processor, &self.queue).await
    }

    async fn row(&self, id: Uuid) -> inbox::InboxRow {
        inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }

    /// The outbox: (destination, aggregate id, event type, payload's id),
    /// in insertion order.
    async fn deliveries(&self) -> Vec<(String, String, String, String)> {
        self.db
            .execute(
                &sql(
                    "SELECT destination, aggregate_type, aggregate_id, event_type,
                             payload->>'id' AS event FROM outbox ORDER BY seq",
                ),
                &params! {},
            )
            .await
            .expect("outbox")
            .rows
            .iter()
            .map(|r| {
                assert_eq!(r.text("aggregate_type").expect("type"), "partner:shop");
                (
                    r.text("destination").expect("destination"),
                    r.text("aggregate_id").expect("id"),
                    r.text("event_type").expect("event type"),
                    r.text("event").expect("event"),
                )
            })
            .collect()
    }

    async fn queued(&self) -> usize {
        self.queue.len()
    }
}

fn body(id: &str, event_type: &str, customer: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": id, "type": event_type, "customer": customer, "amount": 1250,
    }))
    .expect("json")
}

fn accepted_id(r: &IngestResponse) -> Uuid {
    assert_eq!(r.status, 200, "{r:?}");
    r.body["id"].as_str().expect("id").parse().expect("uuid")
}

fn d(
    destination: &str,
    key: &str,
    event_type: &str,
    event: &str,
) -> (String, String, String, String) {
    (
        destination.into(),
        key.into(),
        event_type.into(),
        event.into(),
    )
}

async fn a_routed_webhook_is_stored_and_forwarded_in_one_statement(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", true).await;
    hookbox::log_format::begin_invocation(
        "req-ingest",
        Some("Root=1-6759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
    );
    let (r, metrics) = rig
        .post("evt_1", &body("evt_1", "invoice.paid", "cus_A"))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Forwarded {
            deliveries: 2,
            status: InboxStatus::Processed
        }
    );
    assert_eq!(r.body["status"], "accepted");
    let id = accepted_id(&r);
    assert_eq!(metrics.values("forwarded_at_ingest"), Some(&[1.0][..]));
    assert_eq!(metrics.values("deliveries"), Some(&[2.0][..]));
    let row = rig.row(id).await;
    assert_eq!(row.status, InboxStatus::Processed);
    assert!(row.processed_at.is_some() && row.next_attempt_at.is_none());
    // the trail: each delivery names the row, its event and ingest's trace
    let listed = hookbox::outbox::deliveries_of(db.as_ref(), id)
        .await
        .expect("deliveries");
    assert_eq!(
        listed
            .iter()
            .map(|d| d.destination.as_str())
            .collect::<Vec<_>>(),
        ["billing", "all"]
    );
    for d in &listed {
        let origin = hookbox::outbox::get(db.as_ref(), d.id)
            .await
            .expect("get")
            .expect("row")
            .origin
            .expect("an origin");
        assert_eq!(origin.inbox_id, id);
        assert_eq!(origin.partner.as_deref(), Some("shop"));
        assert_eq!(origin.event_id.as_deref(), Some("evt_1"));
        assert_eq!(origin.received_at, Some(row.received_at));
        assert_eq!(
            origin.trace_id.as_deref(),
            Some("1-6759e988-bd862e3fe1be46a994272793")
        );
    }
    let charge = rig.event("evt_2", "charge.refunded", "cus_B").await;
    assert_eq!(
        charge.outcome,
        Outcome::Forwarded {
            deliveries: 1,
            status: InboxStatus::Processed
        }
    );
    assert_eq!(
        rig.deliveries().await,
        [
            d("billing", "cus_A", "invoice.paid", "evt_1"),
            d("all", "cus_A", "invoice.paid", "evt_1"),
            d("all", "cus_B", "charge.refunded", "evt_2"),
        ]
    );
    // nothing for the processor: no message, no pending row
    assert_eq!(rig.queued().await, 0);
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status <> 'processed'"
        )
        .await,
        0
    );
    // the payload is the partner's event; every delivery due now
    let payload = db
        .execute(
            &sql(
                "SELECT payload::text AS p FROM outbox WHERE status = 'pending' \
                  AND next_attempt_at = created_at ORDER BY seq LIMIT 1",
            ),
            &params! {},
        )
        .await
        .expect("payload");
    let payload: serde_json::Value =
        serde_json::from_str(&payload.rows[0].text("p").expect("p")).expect("json");
    assert_eq!(
        payload,
        serde_json::from_slice::<serde_json::Value>(&body("evt_1", "invoice.paid", "cus_A"))
            .expect("json")
    );

    // the partner's retry, and a concurrent burst of copies: one row, no
    // second delivery
    let again = rig.event("evt_1", "invoice.paid", "cus_A").await;
    assert_eq!(again.outcome, Outcome::Duplicate);
    assert_eq!(accepted_id(&again), id);
    let copies =
        futures::future::join_all((0..8).map(|_| rig.event("evt_3", "invoice.created", "cus_C")))
            .await;
    let forwarded = copies
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Forwarded { .. }))
        .count();
    assert_eq!(forwarded, 1, "{copies:?}");
    assert!(copies.iter().all(|r| r.status == 200));
    assert_eq!(rig.deliveries().await.len(), 5);
    assert_eq!(rig.queued().await, 0);
}

async fn an_unrouted_webhook_follows_the_partners_policy_at_ingest(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", true).await;
    let (r, metrics) = rig
        .post("evt_1", &body("evt_1", "customer.created", "cus_A"))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Forwarded {
            deliveries: 0,
            status: InboxStatus::Quarantined
        }
    );
    assert_eq!(metrics.values("unrouted_quarantined"), Some(&[1.0][..]));
    let row = rig.row(accepted_id(&r)).await;
    assert_eq!(row.status, InboxStatus::Quarantined);
    let reason = row.last_error.expect("reason");
    assert!(
        reason.contains("no route of partner \"shop\" matches event type \"customer.created\""),
        "{reason}"
    );
    drop(rig);

    let rig = Rig::new(db.clone(), "drop", true).await;
    let (r, metrics) = rig
        .post("evt_2", &body("evt_2", "customer.created", "cus_A"))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::Forwarded {
            deliveries: 0,
            status: InboxStatus::Processed
        }
    );
    assert_eq!(metrics.values("unrouted_dropped"), Some(&[1.0][..]));
    assert_eq!(
        rig.row(accepted_id(&r)).await.status,
        InboxStatus::Processed
    );
    assert!(rig.deliveries().await.is_empty());
    assert_eq!(rig.queued().await, 0);
}

async fn what_ingest_cannot_forward_goes_to_the_processor(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", true).await;
    // not JSON: stored and enqueued; the processor quarantines it, naming why
    let (r, _) = rig.post("evt_text", b"not json at all").await;
    assert_eq!(
        r.outcome,
        Outcome::Accepted {
            enqueue_failed: false
        }
    );
    let text = accepted_id(&r);
    // JSON that jsonb cannot hold (U+0000 in a string): quarantined too,
    // never a 500 the partner would retry forever
    let (r, _) = rig
        .post(
            "evt_nul",
            br#"{"id":"evt_nul","type":"invoice.paid","customer":"cus_N","note":"a\u0000b"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    let nul = accepted_id(&r);
    // a payload over the outbox's 32 KiB inline threshold: the processor
    // puts it in the blob store
    let big = serde_json::to_vec(&serde_json::json!({
        "id": "evt_big", "type": "invoice.paid", "customer": "cus_Z",
        "lines": "x".repeat(40 * 1024),
    }))
    .expect("json");
    let (r, _) = rig.post("evt_big", &big).await;
    assert_eq!(
        r.outcome,
        Outcome::Accepted {
            enqueue_failed: false
        }
    );
    let big = accepted_id(&r);
    assert_eq!(rig.row(big).await.status, InboxStatus::Pending);
    assert_eq!(rig.queued().await, 3);
    assert!(rig.deliveries().await.is_empty());
    let mut outcomes = rig.process().await;
    outcomes.sort_unstable();
    let nul = rig.row(nul).await;
    assert_eq!(nul.status, InboxStatus::Quarantined);
    assert!(nul.last_error.expect("why").contains("U+0000"));
    assert_eq!(
        outcomes,
        ["processed", "quarantined", "quarantined"],
        "{:?}",
        rig.row(big).await
    );
    let text = rig.row(text).await;
    assert_eq!(text.status, InboxStatus::Quarantined);
    assert!(text.last_error.expect("why").contains("is not JSON"));
    assert_eq!(rig.row(big).await.status, InboxStatus::Processed);
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE payload_key IS NOT NULL AND payload IS NULL"
        )
        .await,
        2,
        "both deliveries of the large payload refer to the blob store"
    );
}

async fn a_key_is_forwarded_in_received_order_behind_a_waiting_event(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", true).await;
    // evt_1 of cus_A waits for the processor (as a spooled event or a large
    // body would): stored pending, its message sent later
    let first = NewInboxEvent {
        partner: "shop".into(),
        event_id: "evt_1".into(),
        event_id_derived: false,
        event_type: Some("invoice.created".into()),
        ordering_key: Some("cus_A".into()),
        body: Body::Inline(body("evt_1", "invoice.created", "cus_A")),
        headers: serde_json::json!({}),
        signature_verified: true,
    };
    let first = inbox::insert_if_new(db.as_ref(), &first, rig.clock.now())
        .await
        .expect("insert")
        .id();
    rig.clock.advance(chrono::Duration::seconds(1));
    // evt_2 of cus_A must not overtake it: pending and enqueued, no delivery
    let second = rig.event("evt_2", "invoice.paid", "cus_A").await;
    assert_eq!(
        second.outcome,
        Outcome::Accepted {
            enqueue_failed: false
        }
    );
    let second = accepted_id(&second);
    assert_eq!(rig.row(second).await.status, InboxStatus::Pending);
    // another customer's event is not held up
    let other = rig.event("evt_3", "invoice.paid", "cus_B").await;
    assert!(matches!(
        other.outcome,
        Outcome::Forwarded { deliveries: 2, .. }
    ));
    // the processor sees evt_2 first: it waits behind evt_1
    assert_eq!(rig.process().await, ["deferred"]);
    let reason = rig.row(second).await.last_error.expect("why");
    assert!(reason.contains(&first.to_string()), "{reason}");
    rig.queue
        .send(
            &InboxMessage::stored(first, "shop", "evt_1")
                .to_body()
                .expect("body"),
        )
        .await
        .expect("send");
    assert_eq!(rig.process().await, ["processed"]);
    rig.clock.advance(chrono::Duration::seconds(300));
    assert_eq!(rig.process().await, ["processed"]);
    assert_eq!(
        rig.deliveries().await,
        [
            d("billing", "cus_B", "invoice.paid", "evt_3"),
            d("all", "cus_B", "invoice.paid", "evt_3"),
            d("billing", "cus_A", "invoice.created", "evt_1"),
            d("all", "cus_A", "invoice.created", "evt_1"),
            d("billing", "cus_A", "invoice.paid", "evt_2"),
            d("all", "cus_A", "invoice.paid", "evt_2"),
        ]
    );
    // once nothing of cus_A waits, its next event is forwarded at ingest
    let next = rig.event("evt_4", "invoice.paid", "cus_A").await;
    assert!(matches!(
        next.outcome,
        Outcome::Forwarded { deliveries: 2, .. }
    ));
}

async fn forwarding_at_ingest_is_off_unless_asked(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), "quarantine", false).await;
    let r = rig.event("evt_1", "invoice.paid", "cus_A").await;
    assert_eq!(
        r.outcome,
        Outcome::Accepted {
            enqueue_failed: false
        }
    );
    assert!(rig.deliveries().await.is_empty());
    assert_eq!(rig.queued().await, 1);
    assert_eq!(rig.process().await, ["processed"]);
    assert_eq!(rig.deliveries().await.len(), 2);
}

for_each_adapter!(
    a_routed_webhook_is_stored_and_forwarded_in_one_statement,
    an_unrouted_webhook_follows_the_partners_policy_at_ingest,
    what_ingest_cannot_forward_goes_to_the_processor,
    a_key_is_forwarded_in_received_order_behind_a_waiting_event,
    forwarding_at_ingest_is_off_unless_asked,
);

#[test]
fn the_switch_is_true_or_false_and_off_by_default() {
    let set = |v: &'static str| move |k: &str| (k == FORWARD_AT_INGEST_VAR).then(|| v.to_string());
    assert_eq!(forward_at_ingest_from_env(|_| None), Ok(false));
    assert_eq!(forward_at_ingest_from_env(set("")), Ok(false));
    assert_eq!(forward_at_ingest_from_env(set("true")), Ok(true));
    assert_eq!(forward_at_ingest_from_env(set("false")), Ok(false));
    let e = forward_at_ingest_from_env(set("yes")).expect_err("refused");
    assert!(
        e.to_string().contains("HOOKBOX_FORWARD_AT_INGEST=\"yes\""),
        "{e}"
    );
}
