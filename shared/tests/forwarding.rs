//! Forwarding by routes (`hookbox::processing::routing`), through both
//! database adapters: each processed partner event becomes one outbox row
//! per matching route, in the processor's transaction, with the ordering
//! key as the aggregate; an unrouted event follows its partner's policy; a
//! body that is not JSON, a partner without routes, a handler that does
//! not finish: nothing forwarded. And the configuration's checks of routes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{Adapter, count, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigError, ConfigStore, HookboxConfig};
use hookbox::inbox::body::Body;
use hookbox::inbox::{self, InboxMessage, InboxStatus, NewInboxEvent};
use hookbox::outbox::{self, NewOutboxEvent};
use hookbox::params;
use hookbox::processing::{
    BusinessHandler, HandlerError, InboxEvent, Outcome, Processor, ProcessorConfig, RoutingHandler,
};
use hookbox::queue::Queue;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::store::{Database, Transaction};
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn config(partners: serde_json::Value) -> Result<HookboxConfig, ConfigError> {
    HookboxConfig::parse(
        &serde_json::json!({
            "partners": partners,
            "destinations": {
                "billing": {"url": "https://billing.example.com/hooks", "secrets": [SECRET]},
                "audit": {"url": "https://audit.example.com/hooks", "secrets": [SECRET]},
                "all": {"url": "https://all.example.com/hooks", "secrets": [SECRET]},
            }
        })
        .to_string(),
        "test",
    )
}

fn stripe(routes: serde_json::Value, unrouted: Option<&str>) -> serde_json::Value {
    let mut partner = serde_json::json!({
        "signature": {"scheme": "stripe"},
        "secrets": ["whsec_test"],
        "event_id": {"json_pointer": "/id"},
        "event_type": "/type",
        "ordering_key": "/data/object/customer",
    });
    if !routes.is_null() {
        partner["routes"] = routes;
    }
    if let Some(policy) = unrouted {
        partner["unrouted"] = policy.into();
    }
    partner
}

/// The routes most tests use: invoices to billing (live ones only), every
/// event to `all`, and `all` named twice (one delivery).
fn routes() -> serde_json::Value {
    serde_json::json!([
        {"to": "billing", "event_types": ["invoice.*"],
         "filters": [{"pointer": "/livemode", "equals": true}]},
        {"to": "all", "event_types": ["*"]},
        {"to": "all", "event_types": ["invoice.paid"]},
        {"to": "audit", "event_types": ["charge.refunded"]},
    ])
}

fn body(id: &str, event_type: &str, customer: &str, live: bool) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": id, "type": event_type, "livemode": live,
        "data": {"object": {"customer": customer, "amount": 1250}},
    }))
    .expect("json")
}

/// A handler that records its calls and answers as told.
#[derive(Debug, Default)]
struct Recording {
    calls: std::sync::Mutex<Vec<String>>,
    answer: std::sync::Mutex<Option<Outcome>>,
}

#[async_trait]
impl BusinessHandler for Recording {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        _tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        self.calls
            .lock()
            .expect("calls")
            .push(event.row.event_id.clone());
        Ok(self
            .answer
            .lock()
            .expect("answer")
            .clone()
            .unwrap_or(Outcome::Processed))
    }
}

struct Harness {
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    memory: MemoryQueue,
    blobs: MemoryBlobStore,
    handler: RoutingHandler,
    config: ProcessorConfig,
}

impl Harness {
    fn new(db: Arc<dyn Database>, config: HookboxConfig, rust: Option<Arc<Recording>>) -> Self {
        let clock = Arc::new(ManualClock::new(common::t0()));
        let memory = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: Duration::from_secs(30),
                max_receive_count: 4,
            },
            clock.clone(),
        );
        let store = Arc::new(ConfigStore::fixed(config, clock.clone()));
        let mut handler = RoutingHandler::new(store);
        if let Some(rust) = rust {
            handler = handler.with_handler(rust);
        }
        Self {
            db,
            clock,
            memory,
            blobs: MemoryBlobStore::new(),
            handler,
            config: ProcessorConfig::default(),
        }
    }

    /// What ingest does: store the event (partner `stripe`, its type and
    /// ordering key read as ingest reads them), send its message.
    async fn ingest(&self, partner: &str, event_id: &str, bytes: Vec<u8>) -> Uuid {
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let event = NewInboxEvent {
            partner: partner.into(),
            event_id: event_id.into(),
            event_id_derived: false,
            event_type: json["type"].as_str().map(str::to_owned),
            ordering_key: json
                .pointer("/data/object/customer")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            body: Body::Inline(bytes),
            headers: serde_json::json!({}),
            signature_verified: true,
        };
        let id = inbox::insert_if_new(self.db.as_ref(), &event, self.clock.now())
            .await
            .expect("insert")
            .id();
        let message = InboxMessage::stored(id, partner, event_id);
        self.memory
            .send(&message.to_body().expect("body"))
            .await
            .expect("send");
        id
    }

    /// A Stripe-shaped event of `partner` (id, type, customer, livemode),
    /// ingested.
    async fn event(
        &self,
        partner: &str,
        id: &str,
        event_type: &str,
        customer: &str,
        live: bool,
    ) -> Uuid {
        self.ingest(partner, id, body(id, event_type, customer, live))
            .await
    }

    /// One processor invocation over everything visible.
    async fn process(&self) -> Vec<&'static str> {
        let processor = Processor {
            db: self.db.as_ref(),
            queue: &self.memory,
            blobs: &self.blobs,
            clock: self.clock.as_ref(),
            handler: &self.handler,
            config: &self.config,
        };
        common::process_visible(&processor, &self.memory).await
    }

    async fn row(&self, id: Uuid) -> inbox::InboxRow {
        inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }

    /// The outbox: (destination, aggregate type, aggregate id, event type,
    /// payload's id), in insertion order.
    async fn deliveries(&self) -> Vec<(String, String, String, String, String)> {
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
                (
                    r.text("destination").expect("destination"),
                    r.text("aggregate_type").expect("type"),
                    r.text("aggregate_id").expect("id"),
                    r.text("event_type").expect("event type"),
                    r.text("event").expect("event"),
                )
            })
            .collect()
    }
}

fn delivery(
    destination: &str,
    customer: &str,
    event_type: &str,
    event: &str,
) -> (String, String, String, String, String) {
    (
        destination.into(),
        "partner:stripe".into(),
        customer.into(),
        event_type.into(),
        event.into(),
    )
}

async fn each_matching_route_gets_one_delivery_in_the_processing_transaction(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({"stripe": stripe(routes(), None)})).expect("valid"),
        None,
    );
    let paid = h
        .event("stripe", "evt_1", "invoice.paid", "cus_A", true)
        .await;
    let test = h
        .event("stripe", "evt_2", "invoice.paid", "cus_B", false)
        .await;
    let refund = h
        .event("stripe", "evt_3", "charge.refunded", "cus_A", true)
        .await;
    assert_eq!(h.process().await, ["processed", "processed", "processed"]);
    assert_eq!(
        h.deliveries().await,
        [
            // live invoice: billing, and `all` once though two routes name it
            delivery("billing", "cus_A", "invoice.paid", "evt_1"),
            delivery("all", "cus_A", "invoice.paid", "evt_1"),
            // test-mode invoice: the filter keeps it from billing
            delivery("all", "cus_B", "invoice.paid", "evt_2"),
            delivery("all", "cus_A", "charge.refunded", "evt_3"),
            delivery("audit", "cus_A", "charge.refunded", "evt_3"),
        ]
    );
    for id in [paid, test, refund] {
        assert_eq!(h.row(id).await.status, InboxStatus::Processed);
    }
    // the payload is the partner's event as it came
    let payload: serde_json::Value = serde_json::from_str(
        &db.execute(
            &sql("SELECT payload::text AS p FROM outbox ORDER BY seq LIMIT 1"),
            &params! {},
        )
        .await
        .expect("payload")
        .rows[0]
            .text("p")
            .expect("text"),
    )
    .expect("json");
    assert_eq!(
        payload,
        serde_json::from_slice::<serde_json::Value>(&body("evt_1", "invoice.paid", "cus_A", true))
            .expect("json")
    );

    // a redelivered message forwards nothing again
    h.memory
        .send(
            &InboxMessage::stored(paid, "stripe", "evt_1")
                .to_body()
                .expect("body"),
        )
        .await
        .expect("send");
    assert_eq!(h.process().await, ["already_finished"]);
    assert_eq!(h.deliveries().await.len(), 5);
}

async fn an_unrouted_event_is_quarantined_by_default_or_dropped_when_the_partner_says_so(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let only_invoices = serde_json::json!([{"to": "billing", "event_types": ["invoice.*"]}]);
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({
            "stripe": stripe(only_invoices.clone(), None),
            "quiet": stripe(only_invoices, Some("drop")),
        }))
        .expect("valid"),
        None,
    );
    let kept = h
        .event("stripe", "evt_1", "customer.created", "cus_A", true)
        .await;
    let dropped = h
        .event("quiet", "evt_1", "customer.created", "cus_A", true)
        .await;
    assert_eq!(h.process().await, ["quarantined", "processed"]);
    let row = h.row(kept).await;
    assert_eq!(row.status, InboxStatus::Quarantined);
    let reason = row.last_error.expect("a reason");
    assert!(
        reason.contains("no route of partner \"stripe\" matches event type \"customer.created\""),
        "{reason}"
    );
    assert_eq!(h.row(dropped).await.status, InboxStatus::Processed);
    assert!(h.deliveries().await.is_empty());
}

async fn a_body_that_is_not_json_and_a_partner_without_routes_are_quarantined_naming_why(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({
            "stripe": stripe(routes(), None),
            "plain": stripe(serde_json::Value::Null, None),
        }))
        .expect("valid"),
        None,
    );
    let form = h.ingest("stripe", "evt_form", b"a=1&b=2".to_vec()).await;
    let plain = h
        .event("plain", "evt_1", "invoice.paid", "cus_A", true)
        .await;
    assert_eq!(h.process().await, ["quarantined", "quarantined"]);
    let why = h.row(form).await.last_error.expect("reason");
    assert!(why.contains("stripe/evt_form is not JSON"), "{why}");
    let why = h.row(plain).await.last_error.expect("reason");
    assert!(why.contains("partner \"plain\" has no routes"), "{why}");
    assert!(h.deliveries().await.is_empty());
}

async fn routes_and_a_rust_handler_share_one_transaction(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rust = Arc::new(Recording::default());
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({
            "stripe": stripe(routes(), None),
            "plain": stripe(serde_json::Value::Null, None),
        }))
        .expect("valid"),
        Some(rust.clone()),
    );
    // the handler defers: the deliveries roll back with it
    *rust.answer.lock().expect("answer") = Some(Outcome::Defer("not yet".into()));
    let paid = h
        .event("stripe", "evt_1", "invoice.paid", "cus_A", true)
        .await;
    assert_eq!(h.process().await, ["deferred"]);
    assert!(
        h.deliveries().await.is_empty(),
        "a deferral forwards nothing"
    );
    // it finishes: routed, then handled, committed together
    *rust.answer.lock().expect("answer") = None;
    h.clock.advance(chrono::Duration::seconds(120));
    assert_eq!(h.process().await, ["processed"]);
    assert_eq!(h.deliveries().await.len(), 2);
    assert_eq!(h.row(paid).await.status, InboxStatus::Processed);
    // a partner without routes goes to the handler alone
    h.event("plain", "evt_9", "invoice.paid", "cus_A", true)
        .await;
    assert_eq!(h.process().await, ["processed"]);
    assert_eq!(h.deliveries().await.len(), 2);
    assert_eq!(
        *rust.calls.lock().expect("calls"),
        ["evt_1", "evt_1", "evt_9"]
    );
}

async fn an_event_without_an_ordering_key_is_its_own_aggregate(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({"stripe": stripe(routes(), None)})).expect("valid"),
        None,
    );
    let bytes = serde_json::to_vec(
        &serde_json::json!({"id": "evt_7", "type": "charge.refunded", "livemode": true}),
    )
    .expect("json");
    h.ingest("stripe", "evt_7", bytes).await;
    assert_eq!(h.process().await, ["processed"]);
    let aggregates: Vec<String> = h.deliveries().await.into_iter().map(|d| d.2).collect();
    assert_eq!(aggregates, ["evt_7", "evt_7"]);
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status = 'pending'"
        )
        .await,
        2
    );
}

/// Ingest spooled the event (the database was down): the processor stores
/// it and routes it in the same invocation, once, however often the spooled
/// message comes.
async fn a_spooled_event_is_routed_when_the_processor_stores_it(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({"stripe": stripe(routes(), None)})).expect("valid"),
        None,
    );
    let bytes = body("evt_s", "invoice.paid", "cus_S", true);
    let event = NewInboxEvent {
        partner: "stripe".into(),
        event_id: "evt_s".into(),
        event_id_derived: false,
        event_type: Some("invoice.paid".into()),
        ordering_key: Some("cus_S".into()),
        body: Body::Inline(bytes),
        headers: serde_json::json!({}),
        signature_verified: true,
    };
    let spooled = InboxMessage::spooled(&event, h.clock.now())
        .to_body()
        .expect("body");
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0,
        "nothing stored before the processor runs"
    );
    h.memory.send(&spooled).await.expect("send");
    assert_eq!(h.process().await, ["processed"]);
    let forwarded = [
        delivery("billing", "cus_S", "invoice.paid", "evt_s"),
        delivery("all", "cus_S", "invoice.paid", "evt_s"),
    ];
    assert_eq!(h.deliveries().await, forwarded);
    let ids = || async {
        db.execute(
            &sql("SELECT id::text AS id FROM outbox ORDER BY seq"),
            &params! {},
        )
        .await
        .expect("ids")
        .rows
        .iter()
        .map(|r| r.text("id").expect("id"))
        .collect::<Vec<_>>()
    };
    let first = ids().await;
    // the same spooled message again (SQS redelivery, or ingest's retry)
    h.memory.send(&spooled).await.expect("send");
    assert_eq!(h.process().await, ["already_finished"]);
    assert_eq!(h.deliveries().await, forwarded);
    assert_eq!(ids().await, first, "the same delivery ids, none added");
}

/// A Rust handler that writes one outbox row for each event (no routes).
#[derive(Debug)]
struct Enqueuing;

#[async_trait]
impl BusinessHandler for Enqueuing {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let out = NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "o-1".into(),
            event_type: "order.paid".into(),
            destination: "erp".into(),
            payload: serde_json::json!({"order": "o-1"}),
        };
        outbox::enqueue(tx, &out, event.now).await?;
        Ok(Outcome::Processed)
    }
}

/// The trail: every outbox row written while an inbox row is processed
/// (by routes, by a Rust handler) names that row, its partner, event id,
/// received time and the trace its queue message carried; a row a plain
/// business transaction writes names none.
async fn every_delivery_names_the_webhook_it_was_written_for(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(
        db.clone(),
        config(serde_json::json!({
            "stripe": stripe(routes(), None),
            "plain": stripe(serde_json::Value::Null, None),
        }))
        .expect("valid"),
        None,
    );
    let h = Harness {
        handler: h.handler.clone().with_handler(Arc::new(Enqueuing)),
        ..h
    };
    let paid = h
        .event("stripe", "evt_1", "invoice.paid", "cus_A", true)
        .await;
    let plain = h
        .event("plain", "evt_9", "invoice.paid", "cus_A", true)
        .await;
    hookbox::log_format::begin_invocation(
        "req-1",
        Some("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
    );
    assert_eq!(h.process().await, ["processed", "processed"]);

    // routes and the handler: three rows for evt_1 (billing, all, erp), one
    // for evt_9 (erp)
    let listed = outbox::deliveries_of(db.as_ref(), paid)
        .await
        .expect("deliveries");
    let mut destinations: Vec<_> = listed.iter().map(|d| d.destination.as_str()).collect();
    destinations.sort_unstable();
    assert_eq!(destinations, ["all", "billing", "erp"]);
    let listed_plain = outbox::deliveries_of(db.as_ref(), plain)
        .await
        .expect("deliveries");
    assert_eq!(listed_plain.len(), 1);
    assert_eq!(listed_plain[0].destination, "erp");
    for d in &listed {
        assert_eq!(d.status, outbox::OutboxStatus::Pending);
        let row = outbox::get(db.as_ref(), d.id)
            .await
            .expect("get")
            .expect("row");
        let origin = row.origin.expect("an origin");
        assert_eq!(origin.inbox_id, paid);
        assert_eq!(origin.partner.as_deref(), Some("stripe"));
        assert_eq!(origin.event_id.as_deref(), Some("evt_1"));
        assert_eq!(origin.received_at, Some(common::t0()));
        // the memory queue carried no trace: the processing's own
        assert_eq!(
            origin.trace_id.as_deref(),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
    }

    // a business transaction of its own: no origin
    let tx = db.begin().await.expect("begin");
    let own = outbox::enqueue(
        tx.as_ref(),
        &NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "o-2".into(),
            event_type: "order.paid".into(),
            destination: "erp".into(),
            payload: serde_json::json!({}),
        },
        common::t0(),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    let row = outbox::get(db.as_ref(), own)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.origin, None);
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE inbox_id IS NULL"
        )
        .await,
        1
    );
}

for_each_adapter!(
    every_delivery_names_the_webhook_it_was_written_for,
    each_matching_route_gets_one_delivery_in_the_processing_transaction,
    an_unrouted_event_is_quarantined_by_default_or_dropped_when_the_partner_says_so,
    a_body_that_is_not_json_and_a_partner_without_routes_are_quarantined_naming_why,
    routes_and_a_rust_handler_share_one_transaction,
    an_event_without_an_ordering_key_is_its_own_aggregate,
    a_spooled_event_is_routed_when_the_processor_stores_it,
);

// ------------------------------------------------------------ configuration

fn refused(partner: serde_json::Value) -> String {
    match config(serde_json::json!({"stripe": partner})) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn routes_are_checked_at_start_naming_the_partner_and_field() {
    let e = refused(stripe(
        serde_json::json!([{"to": "nowhere", "event_types": ["*"]}]),
        None,
    ));
    assert!(e.contains("stripe") && e.contains("routes[0].to"), "{e}");
    assert!(
        e.contains(
            "\"nowhere\" is not a configured destination (destinations: all, audit, billing)"
        ),
        "{e}"
    );

    let e = refused(stripe(
        serde_json::json!([{"to": "all", "event_types": ["*"]}, {"to": "all", "event_types": []}]),
        None,
    ));
    assert!(
        e.contains("routes[1].event_types") && e.contains("\"*\" is every event type"),
        "{e}"
    );

    let e = refused(stripe(
        serde_json::json!([{"to": "all", "event_types": ["*"], "filters": [{"pointer": "livemode", "equals": true}]}]),
        None,
    ));
    assert!(e.contains("routes[0].filters[0].pointer"), "{e}");

    let e = refused(stripe(
        serde_json::json!([{"to": "all", "types": ["*"]}]),
        None,
    ));
    assert!(e.contains("types"), "an unknown field is named: {e}");

    let e = refused(stripe(serde_json::Value::Null, Some("drop")));
    assert!(
        e.contains("unrouted") && e.contains("only means something with routes"),
        "{e}"
    );

    let e = refused(stripe(
        serde_json::json!([{"to": "all", "event_types": ["*"]}]),
        Some("ignore"),
    ));
    assert!(e.contains("ignore"), "{e}");

    let many: Vec<serde_json::Value> = (0..33)
        .map(|_| serde_json::json!({"to": "all", "event_types": ["*"]}))
        .collect();
    let e = refused(stripe(serde_json::Value::Array(many), None));
    assert!(e.contains("33 routes, over the limit of 32"), "{e}");

    // what a valid configuration holds
    let cfg = config(serde_json::json!({"stripe": stripe(routes(), Some("drop"))})).expect("valid");
    let partner = cfg.partner("stripe").expect("partner");
    assert_eq!(partner.routes.len(), 4);
    assert_eq!(partner.routes[0].to, "billing");
    assert_eq!(partner.unrouted, hookbox::config::route::Unrouted::Drop);
}
