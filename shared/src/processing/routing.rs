//! Forwarding by routes: the business handler a team deploys without
//! writing Rust. Each verified, deduplicated partner event goes to the
//! destinations its partner's routes name (`config::route`), as one outbox
//! row per matching route, written in the processor's transaction: the
//! inbox row's `processed` status and its deliveries commit together, so a
//! crash never forwards without recording or records without forwarding.
//!
//! - Delivery: the relay delivers each row to its destination (HTTP,
//!   EventBridge, SQS) under the row's id, the delivery id, which stays the
//!   same on every retry (`docs/relay.md`, the envelope).
//! - Order: the aggregate of every delivery is the partner's ordering key
//!   when it has one (else the event id), so an `ordered` destination and a
//!   FIFO queue's group receive one key's events in the order they were
//!   processed, which is the order they were received unless the Rust
//!   handler defers some.
//! - No route matches: the partner's `unrouted` policy (quarantine by
//!   default, or drop).
//! - A partner without routes goes to the Rust handler given with
//!   [`RoutingHandler::with_handler`], if any; one with routes is routed
//!   first, then handed to that handler in the same transaction (its
//!   outcome decides: anything but `Processed` rolls the deliveries back
//!   too).

use std::sync::Arc;

use async_trait::async_trait;

use super::handler::{BusinessHandler, HandlerError, InboxEvent, Outcome};
use crate::config::route::{self, Unrouted};
use crate::config::{ConfigStore, Partner};
use crate::outbox::{self, NewOutboxEvent};
use crate::store::Transaction;

/// The aggregate type of forwarded events: their aggregate is
/// `partner:<name>` with the ordering key (or event id) as its id.
pub fn aggregate_type(partner: &str) -> String {
    format!("partner:{partner}")
}

/// The event type of a forwarded event whose partner names none (or that
/// carried none): matched by the route pattern `*` only.
pub const UNTYPED: &str = "untyped";

/// Routes each event of a partner with routes; hands the others to an
/// optional Rust handler.
#[derive(Debug, Clone)]
pub struct RoutingHandler {
    config: Arc<ConfigStore>,
    handler: Option<Arc<dyn BusinessHandler>>,
}

impl RoutingHandler {
    /// Routes only: an event of a partner without routes is quarantined,
    /// naming the partner.
    pub fn new(config: Arc<ConfigStore>) -> Self {
        Self {
            config,
            handler: None,
        }
    }

    /// Routes, then `handler` (for partners without routes, it alone).
    pub fn with_handler(mut self, handler: Arc<dyn BusinessHandler>) -> Self {
        self.handler = Some(handler);
        self
    }
}

#[async_trait]
impl BusinessHandler for RoutingHandler {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let config = self.config.current().await;
        let row = event.row;
        let Some(partner) = config.partner(&row.partner) else {
            return Ok(Outcome::Quarantine(format!(
                "partner {:?} is not configured any more: no route, no handler",
                row.partner
            )));
        };
        if partner.routes.is_empty() {
            return match &self.handler {
                Some(handler) => handler.handle(event, tx).await,
                None => Ok(Outcome::Quarantine(format!(
                    "partner {:?} has no routes (and this processor runs no Rust handler): add \
                     \"routes\" to its configuration, then replay the event",
                    partner.name
                ))),
            };
        }
        match forward(partner, event, tx).await? {
            Forwarded::Routed(_) => {}
            Forwarded::Unrouted(reason) => match partner.unrouted {
                Unrouted::Quarantine => return Ok(Outcome::Quarantine(reason)),
                Unrouted::Drop => {
                    tracing::info!(
                        partner = %partner.name,
                        event_id = %row.event_id,
                        reason = %reason,
                        metric = "unrouted_dropped",
                        "unrouted event dropped (the partner's policy)"
                    );
                }
            },
        }
        match &self.handler {
            Some(handler) => handler.handle(event, tx).await,
            None => Ok(Outcome::Processed),
        }
    }
}

/// What routing did with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forwarded {
    /// One delivery (outbox row) per destination, in route order: their ids.
    Routed(Vec<(String, uuid::Uuid)>),
    /// No route matched: why (names the event type).
    Unrouted(String),
}

/// Writes one outbox row per route of `partner` that matches `event`,
/// through `tx`. A body that is not JSON cannot be forwarded yet (the
/// outbox keeps JSON payloads): a poison pill naming the event.
pub async fn forward(
    partner: &Partner,
    event: &InboxEvent<'_>,
    tx: &dyn Transaction,
) -> Result<Forwarded, HandlerError> {
    let row = event.row;
    let payload: serde_json::Value = serde_json::from_slice(event.body).map_err(|e| {
        HandlerError::Poison(format!(
            "payload of {}/{} is not JSON ({}): only JSON bodies are forwarded by routes",
            row.partner,
            row.event_id,
            super::json_error(&e)
        ))
    })?;
    let event_type = row.event_type.as_deref().unwrap_or(UNTYPED);
    let routes = route::matching(&partner.routes, event_type, &payload);
    if routes.is_empty() {
        return Ok(Forwarded::Unrouted(format!(
            "no route of partner {:?} matches event type {event_type:?} (and its filters)",
            partner.name
        )));
    }
    let aggregate_id = row.ordering_key.as_deref().unwrap_or(&row.event_id);
    let mut ids = Vec::with_capacity(routes.len());
    // (every route names a destination of the same configuration: checked
    // when it was parsed)
    for route in routes {
        let out = NewOutboxEvent {
            aggregate_type: aggregate_type(&partner.name),
            aggregate_id: aggregate_id.to_owned(),
            event_type: event_type.to_owned(),
            destination: route.to.clone(),
            payload: payload.clone(),
        };
        let id = outbox::enqueue_with_blobs(tx, event.blobs, &out, event.now).await?;
        ids.push((route.to.clone(), id));
    }
    Ok(Forwarded::Routed(ids))
}
