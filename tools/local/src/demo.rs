//! The local stack's business: partners with routes are forwarded, as the
//! template deploys them; the `demo` partner drives the example orders
//! domain, and `demo-downstream` (the stack's own outbound webhooks coming
//! back in) is recorded once per `webhook-id`.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use hookbox::config::ConfigStore;
use hookbox::example::OrdersHandler;
use hookbox::params;
use hookbox::processing::{BusinessHandler, HandlerError, InboxEvent, Outcome, RoutingHandler};
use hookbox::store::{Executor, Statement, Transaction};

/// The demo partner (a stable contract: see the README).
pub const DEMO_PARTNER: &str = "demo";

/// The partner (and destination) the stack's outbound webhooks go to: the
/// stack's own `/webhooks/demo-downstream`.
pub const DOWNSTREAM: &str = "demo-downstream";

/// A partner forwarded by routes, as a deployed stack forwards partners
/// (no Rust): every event goes to [`DOWNSTREAM`], the stack's own receiver.
/// Signed with [`DEMO_SECRET`].
pub const FORWARDED_PARTNER: &str = "demo-forwarded";

/// The demo partner's Standard Webhooks secret (a stable contract).
pub const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// The secret the relay signs `demo-downstream` deliveries with (and the
/// `demo-downstream` partner verifies).
pub const DOWNSTREAM_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kb3duc3RyZWFtLXNlY3JldA==";

/// The built-in configuration for a stack listening on `port`.
pub fn demo_config(port: u16) -> String {
    serde_json::json!({
        "partners": {
            DEMO_PARTNER: {
                "signature": { "scheme": "standard-webhooks" },
                "secrets": [DEMO_SECRET],
                "event_id": { "header": "webhook-id" },
                "event_type": "/type",
                "ordering_key": "/order_id"
            },
            FORWARDED_PARTNER: {
                "signature": { "scheme": "standard-webhooks" },
                "secrets": [DEMO_SECRET],
                "event_id": { "header": "webhook-id" },
                "event_type": "/type",
                "ordering_key": "/order_id",
                "routes": [{ "to": DOWNSTREAM, "event_types": ["*"] }]
            },
            DOWNSTREAM: {
                "signature": { "scheme": "standard-webhooks" },
                "secrets": [DOWNSTREAM_SECRET],
                "event_id": { "header": "webhook-id" },
                "event_type": "/type",
                "ordering_key": "/order_id"
            }
        },
        "destinations": {
            DOWNSTREAM: {
                "url": format!("http://127.0.0.1:{port}/webhooks/{DOWNSTREAM}"),
                "secrets": [DOWNSTREAM_SECRET],
                "allowed_networks": ["127.0.0.0/8", "::1/128"],
                "ordered": true
            }
        }
    })
    .to_string()
}

/// Event types the demo partner routes to the orders domain; any other type
/// is a poison pill (quarantined).
pub const DEMO_TYPES: [&str; 3] = ["payment.received", "order.shipped", "order.delivered"];

/// Where `demo-downstream` deliveries are recorded (created at start).
pub const CREATE_RECEIVED: Statement = Statement::new(
    "local.create_received",
    "CREATE TABLE IF NOT EXISTS local_downstream_received (
        webhook_id  text        PRIMARY KEY,
        inbox_id    uuid        NOT NULL,
        event_type  text,
        payload     jsonb       NOT NULL,
        received_at timestamptz NOT NULL
    )",
);

const RECORD_RECEIVED: Statement = Statement::new(
    "local.record_received",
    "INSERT INTO local_downstream_received (webhook_id, inbox_id, event_type, payload, received_at)
     VALUES (:webhook_id, :inbox_id, :event_type, CAST(:payload AS jsonb),
             CAST(:now AS timestamptz))
     ON CONFLICT (webhook_id) DO NOTHING",
);

/// Routes each inbox event by partner.
#[derive(Debug, Clone)]
pub struct LocalHandler {
    orders: OrdersHandler,
    demo_types: HashSet<String>,
}

impl LocalHandler {
    /// Orders for `demo` (only `demo_types`), records for `demo-downstream`,
    /// orders for any other configured partner.
    pub fn new(demo_types: impl IntoIterator<Item = String>) -> Self {
        Self {
            orders: OrdersHandler::new(DOWNSTREAM),
            demo_types: demo_types.into_iter().collect(),
        }
    }
}

#[async_trait]
impl BusinessHandler for LocalHandler {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let row = event.row;
        match row.partner.as_str() {
            DOWNSTREAM => {
                let payload: serde_json::Value = event.json()?;
                let event_type = payload
                    .get("type")
                    .and_then(|t| t.as_str())
                    .map(str::to_string);
                tx.execute(
                    &RECORD_RECEIVED,
                    &params! {
                        "webhook_id" => row.event_id.as_str(),
                        "inbox_id" => row.id,
                        "event_type" => event_type,
                        "payload" => payload,
                        "now" => event.now,
                    },
                )
                .await
                .map_err(|e| HandlerError::Retryable(e.to_string()))?;
                Ok(Outcome::Processed)
            }
            DEMO_PARTNER => {
                let body = event.json::<serde_json::Value>();
                let event_type = match event.event_type() {
                    Some(t) => Some(t.to_string()),
                    None => body
                        .as_ref()
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string)),
                };
                let known = || {
                    let mut known: Vec<&str> = self.demo_types.iter().map(String::as_str).collect();
                    known.sort_unstable();
                    known.join(", ")
                };
                match (event_type, body) {
                    (Some(t), _) if self.demo_types.contains(&t) => {
                        self.orders.handle(event, tx).await
                    }
                    (Some(t), _) => Ok(Outcome::Quarantine(format!(
                        "unknown event type {t:?} for partner \"demo\" (known: {})",
                        known()
                    ))),
                    (None, Err(e)) => Ok(Outcome::Quarantine(format!(
                        "the body is not JSON ({e}): partner \"demo\" reads the event type \
                         at /type (known: {})",
                        known()
                    ))),
                    (None, Ok(_)) => Ok(Outcome::Quarantine(format!(
                        "the body has no string at /type, the event type of partner \"demo\" \
                         (known: {})",
                        known()
                    ))),
                }
            }
            _ => self.orders.handle(event, tx).await,
        }
    }
}

/// The local processor's business, as the template deploys it for partners
/// with routes: they are forwarded (`RoutingHandler`, routes only); every
/// other partner drives the demo ([`LocalHandler`]). Ingest forwards most
/// events of partners with routes itself; this forwards the rest (spooled,
/// large, replayed, waiting behind an earlier event of their key).
#[derive(Debug, Clone)]
pub struct LocalProcessor {
    config: Arc<ConfigStore>,
    routing: RoutingHandler,
    local: LocalHandler,
}

impl LocalProcessor {
    /// Routes by `config`, the demo otherwise.
    pub fn new(config: Arc<ConfigStore>, local: LocalHandler) -> Self {
        Self {
            routing: RoutingHandler::new(config.clone()),
            config,
            local,
        }
    }
}

#[async_trait]
impl BusinessHandler for LocalProcessor {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let routed = self
            .config
            .current()
            .await
            .partner(&event.row.partner)
            .is_some_and(|p| !p.routes.is_empty());
        if routed {
            self.routing.handle(event, tx).await
        } else {
            self.local.handle(event, tx).await
        }
    }
}

/// How many `demo-downstream` webhooks were recorded (one per webhook-id).
pub async fn received_count(db: &dyn Executor) -> Result<i64, hookbox::store::DbError> {
    const COUNT: Statement = Statement::new(
        "local.received_count",
        "SELECT count(*) AS n FROM local_downstream_received",
    );
    hookbox::store::fetch_one(db, &COUNT, &params! {})
        .await?
        .i64("n")
}
