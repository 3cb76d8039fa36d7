//! Forwarding by routes: the business handler a team deploys without
//! writing Rust. Each verified, deduplicated partner event goes to the
//! destinations its partner's routes name (`config::route`, which also
//! makes the plan: what a partner's routes make of one event), as one outbox
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
//!   received: an event waits (deferred) behind an earlier event of its key
//!   that is still active. Ingest forwards most events itself, in the
//!   statement that stores them (`inbox::routed`); the processor forwards
//!   the others (spooled, a body in the blob store, replayed).
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
use crate::config::route::{Plan, Unrouted, plan as route_plan};
use crate::config::{ConfigStore, Partner};
use crate::inbox;
use crate::outbox::{self, JsonOutboxEvent};
use crate::store::Transaction;

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
        // received order per ordering key: behind an earlier event of the
        // key that is still active (ingest forwards none past it either)
        if let Some(key) = row.ordering_key.as_deref() {
            let earlier =
                inbox::routed::earlier_active(tx, row.id, &row.partner, key, row.received_at)
                    .await
                    .map_err(|e| HandlerError::Retryable(e.to_string()))?;
            if let Some(earlier) = earlier {
                return Ok(Outcome::Defer(format!(
                    "forwarded in received order: waits behind {earlier}, an earlier event of \
                     ordering key {key:?} that is not finished"
                )));
            }
        }
        match forward(partner, event, tx).await? {
            Forwarded::Routed(deliveries) => {
                // the trail: the delivery ids, by destination (committed
                // with the processed status, or rolled back with it)
                let ids: Vec<String> = deliveries
                    .iter()
                    .map(|(destination, id)| format!("{destination}={id}"))
                    .collect();
                tracing::info!(
                    deliveries = deliveries.len(),
                    delivery_ids = %ids.join(","),
                    "routed"
                );
            }
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

/// True when a string (or key) of `payload` holds U+0000: PostgreSQL's
/// jsonb refuses it, so such a payload cannot be an outbox row.
pub fn holds_nul(payload: &serde_json::Value) -> bool {
    match payload {
        serde_json::Value::String(s) => s.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(holds_nul),
        serde_json::Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

/// Writes one outbox row per route of `partner` that matches `event`,
/// through `tx`, each with the body's JSON text as its payload, kept as the
/// partner wrote it (never through `serde_json::Value`'s `f64` numbers: a
/// payload over the inline threshold goes to the blob store byte for byte,
/// a smaller one into the row as jsonb, whose numbers are exact). A body
/// that is not JSON cannot be forwarded yet (the outbox keeps JSON
/// payloads): a poison pill naming the event.
pub async fn forward(
    partner: &Partner,
    event: &InboxEvent<'_>,
    tx: &dyn Transaction,
) -> Result<Forwarded, HandlerError> {
    let row = event.row;
    let not_json = |e: &serde_json::Error| {
        HandlerError::Poison(format!(
            "payload of {}/{} is not JSON ({}): only JSON bodies are forwarded by routes",
            row.partner,
            row.event_id,
            super::json_error(e)
        ))
    };
    let payload: serde_json::Value =
        serde_json::from_slice(event.body).map_err(|e| not_json(&e))?;
    // valid JSON is valid UTF-8
    let text = std::str::from_utf8(event.body).map_err(|_| {
        HandlerError::Poison(format!(
            "payload of {}/{} is not UTF-8: only JSON bodies are forwarded by routes",
            row.partner, row.event_id
        ))
    })?;
    if holds_nul(&payload) {
        return Err(HandlerError::Poison(format!(
            "payload of {}/{} holds U+0000 in a string, which PostgreSQL's jsonb cannot store: \
             not forwarded by routes (the raw body is kept in the inbox)",
            row.partner, row.event_id
        )));
    }
    let plan = route_plan(
        partner,
        &row.event_id,
        row.event_type.as_deref(),
        row.ordering_key.as_deref(),
        &payload,
    );
    let deliveries = match plan {
        Plan::Deliver(deliveries) => deliveries,
        Plan::Unrouted(reason) => return Ok(Forwarded::Unrouted(reason)),
    };
    let mut ids = Vec::with_capacity(deliveries.destinations.len());
    for destination in deliveries.destinations {
        let out = JsonOutboxEvent {
            aggregate_type: &deliveries.aggregate_type,
            aggregate_id: &deliveries.aggregate_id,
            event_type: &deliveries.event_type,
            destination: &destination,
            payload_json: text,
        };
        let id = outbox::enqueue_json_with_blobs(tx, event.blobs, &out, event.now).await?;
        ids.push((destination, id));
    }
    Ok(Forwarded::Routed(ids))
}
