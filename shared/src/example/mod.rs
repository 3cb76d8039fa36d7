//! EXAMPLE DOMAIN — the part users replace.
//!
//! An orders service driven by partner webhooks, written against the
//! processor's [`BusinessHandler`] port to show the contract end to end:
//! a state machine decides ordering ([`orders::decide`]), the business
//! writes and the outbox event commit in the processor's transaction, and
//! out-of-order events are deferred until their prerequisite arrives.
//!
//! Partner payload (JSON; `type` is used when ingest stored no event type):
//! ```json
//! {"type": "payment.received", "order_id": "o-1", "amount_cents": 1250, "currency": "EUR"}
//! ```
//! (`"amount": 12.5` is accepted instead of `amount_cents`.)
//! Event types: `order.created`, `payment.received`, `order.shipped`,
//! `order.delivered`, `order.cancelled`. Every transition writes one row to
//! `example_order_transitions` and enqueues one outbox event
//! `order.status_changed` for the configured destination
//! (`HOOKBOX_ORDERS_DESTINATION`, default `orders`).
//!
//! To build your own domain: add your tables in a new migration, implement
//! [`BusinessHandler`] (use only the transaction you are given), and hand
//! your handler to the processor instead of [`OrdersHandler`].

pub mod orders;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::outbox::{self, NewOutboxEvent};
use crate::params;
use crate::processing::{BusinessHandler, HandlerError, InboxEvent, Outcome};
use crate::store::{DbError, Executor, Row, Statement, Transaction, fetch_optional};
pub use orders::{Decision, OrderEvent, OrderStatus, decide};

/// Destination of `order.status_changed` events when none is configured.
pub const DEFAULT_DESTINATION: &str = "orders";

/// The outbox event type of every transition.
pub const STATUS_CHANGED: &str = "order.status_changed";

/// The payload partners send.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OrderPayload {
    /// Event type (used when the inbox row has none).
    #[serde(rename = "type", default)]
    pub event_type: Option<String>,
    /// The order.
    pub order_id: String,
    /// Amount in cents, for payments.
    #[serde(default)]
    pub amount_cents: Option<i64>,
    /// Amount in currency units (`12.5`), for payments: the local demo
    /// partner's spelling; used when `amount_cents` is absent.
    #[serde(default)]
    pub amount: Option<serde_json::Number>,
    /// Currency, for payments.
    #[serde(default)]
    pub currency: Option<String>,
}

/// The example business handler.
#[derive(Debug, Clone)]
pub struct OrdersHandler {
    destination: String,
}

impl OrdersHandler {
    /// Status changes go to `destination`.
    pub fn new(destination: impl Into<String>) -> Self {
        Self {
            destination: destination.into(),
        }
    }

    /// Destination from `HOOKBOX_ORDERS_DESTINATION`, else [`DEFAULT_DESTINATION`].
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        Self::new(
            env("HOOKBOX_ORDERS_DESTINATION")
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| DEFAULT_DESTINATION.to_string()),
        )
    }

    /// The destination of status changes.
    pub fn destination(&self) -> &str {
        &self.destination
    }
}

#[async_trait]
impl BusinessHandler for OrdersHandler {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let row = event.row;
        let payload: OrderPayload = event.json()?;
        let Some(event_type) = event.event_type().or(payload.event_type.as_deref()) else {
            return Ok(Outcome::Quarantine(format!(
                "event {}/{} has no event type",
                row.partner, row.event_id
            )));
        };
        let Some(order_event) = OrderEvent::from_type(event_type) else {
            return Ok(Outcome::Quarantine(format!(
                "unknown event type {event_type:?} for partner {:?}",
                row.partner
            )));
        };
        if payload.order_id.is_empty() {
            return Ok(Outcome::Quarantine(format!(
                "event {}/{} has an empty order_id",
                row.partner, row.event_id
            )));
        }
        // PostgreSQL's text refuses U+0000: every attempt would fail the
        // same way, so it is a poison pill now, not a row dead after the
        // last of its retries
        if payload.order_id.contains('\0') {
            return Ok(Outcome::Quarantine(format!(
                "event {}/{} has U+0000 in its order_id, which the orders table cannot hold",
                row.partner, row.event_id
            )));
        }
        let current = lock_order(tx, &payload.order_id).await?;
        match decide(order_event, current) {
            Decision::Transition { from, to } => {
                let change = Change {
                    order_id: &payload.order_id,
                    from,
                    to,
                    inbox_id: row.id,
                    event_type,
                    amount_cents: payload.amount_cents.or_else(|| {
                        payload
                            .amount
                            .as_ref()
                            .and_then(serde_json::Number::as_f64)
                            .map(|a| (a * 100.0).round() as i64)
                    }),
                    currency: payload.currency.as_deref(),
                    now: event.now,
                };
                if !apply(tx, &change).await? {
                    // Someone created or changed the order between our read
                    // and our write (only possible for a creation, which no
                    // lock covers): the next attempt sees the new state.
                    return Ok(Outcome::Retry(format!(
                        "order {} changed concurrently",
                        payload.order_id
                    )));
                }
                let out = NewOutboxEvent {
                    aggregate_type: "order".into(),
                    aggregate_id: payload.order_id.clone(),
                    event_type: STATUS_CHANGED.into(),
                    destination: self.destination.clone(),
                    payload: serde_json::json!({
                        "type": STATUS_CHANGED,
                        "order_id": payload.order_id,
                        "from": from.map(OrderStatus::as_str),
                        "to": to.as_str(),
                        "cause": {
                            "partner": row.partner,
                            "event_id": row.event_id,
                            "event_type": event_type,
                        },
                        "at": event.now.to_rfc3339(),
                    }),
                };
                // with the blob store: a payload of any size can be enqueued
                outbox::enqueue_with_blobs(tx, event.blobs, &out, event.now).await?;
                Ok(Outcome::Processed)
            }
            Decision::Ignore(why) => {
                tracing::info!(order_id = %payload.order_id, why = %why, "event ignored");
                Ok(Outcome::Processed)
            }
            Decision::Defer(why) => Ok(Outcome::Defer(format!(
                "{event_type} for order {}: {why}",
                payload.order_id
            ))),
            Decision::Conflict(why) => Ok(Outcome::Quarantine(format!(
                "{event_type} for order {}: {why}",
                payload.order_id
            ))),
        }
    }
}

/// One transition to write.
#[derive(Debug, Clone)]
struct Change<'a> {
    order_id: &'a str,
    from: Option<OrderStatus>,
    to: OrderStatus,
    inbox_id: Uuid,
    event_type: &'a str,
    amount_cents: Option<i64>,
    currency: Option<&'a str>,
    now: DateTime<Utc>,
}

pub const LOCK_ORDER: Statement = Statement::new(
    "example.lock_order",
    "SELECT status FROM example_orders WHERE order_id = :order_id FOR UPDATE",
);

pub const CREATE_ORDER: Statement = Statement::new(
    "example.create_order",
    "WITH o AS (
        INSERT INTO example_orders (order_id, status, amount_cents, currency, created_at, updated_at)
        VALUES (:order_id, :to_status, :amount_cents, :currency,
                CAST(:now AS timestamptz), CAST(:now AS timestamptz))
        ON CONFLICT (order_id) DO NOTHING
        RETURNING order_id
    )
    INSERT INTO example_order_transitions (order_id, from_status, to_status, inbox_id, event_type, at)
    SELECT o.order_id, CAST(NULL AS text), CAST(:to_status AS text), CAST(:inbox_id AS uuid),
           CAST(:event_type AS text), CAST(:now AS timestamptz)
      FROM o",
);

pub const ADVANCE_ORDER: Statement = Statement::new(
    "example.advance_order",
    "WITH o AS (
        UPDATE example_orders
           SET status = :to_status,
               amount_cents = coalesce(CAST(:amount_cents AS bigint), amount_cents),
               currency = coalesce(CAST(:currency AS text), currency),
               updated_at = CAST(:now AS timestamptz)
         WHERE order_id = :order_id AND status = :from_status
        RETURNING order_id
    )
    INSERT INTO example_order_transitions (order_id, from_status, to_status, inbox_id, event_type, at)
    SELECT o.order_id, CAST(:from_status AS text), CAST(:to_status AS text),
           CAST(:inbox_id AS uuid), CAST(:event_type AS text), CAST(:now AS timestamptz)
      FROM o",
);

/// The order's status, locked until the transaction ends (`None`: no such order).
async fn lock_order(tx: &dyn Executor, order_id: &str) -> Result<Option<OrderStatus>, DbError> {
    let Some(row) = fetch_optional(tx, &LOCK_ORDER, &params! { "order_id" => order_id }).await?
    else {
        return Ok(None);
    };
    parse_status(&row, "status").map(Some)
}

/// Writes the transition and its history row in one statement; false when
/// the order was not in the expected state (a concurrent change).
async fn apply(tx: &dyn Executor, change: &Change<'_>) -> Result<bool, DbError> {
    let common = params! {
        "order_id" => change.order_id,
        "to_status" => change.to.as_str(),
        "inbox_id" => change.inbox_id,
        "event_type" => change.event_type,
        "amount_cents" => change.amount_cents,
        "currency" => change.currency,
        "now" => change.now,
    };
    let done = match change.from {
        None => tx.execute(&CREATE_ORDER, &common).await?,
        Some(from) => {
            tx.execute(&ADVANCE_ORDER, &common.with("from_status", from.as_str()))
                .await?
        }
    };
    Ok(done.affected == 1)
}

fn parse_status(row: &Row, column: &str) -> Result<OrderStatus, DbError> {
    row.text(column)?
        .parse()
        .map_err(|e: orders::UnknownOrderStatus| DbError::Decode {
            statement: row.statement(),
            column: column.into(),
            detail: e.to_string(),
        })
}

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// Its id.
    pub order_id: String,
    /// Its state.
    pub status: OrderStatus,
    /// Amount, once paid.
    pub amount_cents: Option<i64>,
    /// Currency, once paid.
    pub currency: Option<String>,
}

/// One recorded state change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// State before (`None`: the event created the order).
    pub from: Option<OrderStatus>,
    /// State after.
    pub to: OrderStatus,
    /// The inbox event that caused it.
    pub inbox_id: Uuid,
    /// Its event type.
    pub event_type: String,
}

pub const GET_ORDER: Statement = Statement::new(
    "example.get_order",
    "SELECT order_id, status, amount_cents, currency FROM example_orders WHERE order_id = :order_id",
);

/// An order by id.
pub async fn get_order(db: &dyn Executor, order_id: &str) -> Result<Option<Order>, DbError> {
    let Some(row) = fetch_optional(db, &GET_ORDER, &params! { "order_id" => order_id }).await?
    else {
        return Ok(None);
    };
    Ok(Some(Order {
        order_id: row.text("order_id")?,
        status: parse_status(&row, "status")?,
        amount_cents: row.opt_i64("amount_cents")?,
        currency: row.opt_text("currency")?,
    }))
}

pub const TRANSITIONS: Statement = Statement::new(
    "example.transitions",
    "SELECT from_status, to_status, inbox_id, event_type FROM example_order_transitions
      WHERE order_id = :order_id ORDER BY id",
);

/// The order's history, oldest first.
pub async fn transitions(db: &dyn Executor, order_id: &str) -> Result<Vec<Transition>, DbError> {
    db.execute(&TRANSITIONS, &params! { "order_id" => order_id })
        .await?
        .rows
        .iter()
        .map(|r| {
            Ok(Transition {
                from: match r.opt_text("from_status")? {
                    None => None,
                    Some(_) => Some(parse_status(r, "from_status")?),
                },
                to: parse_status(r, "to_status")?,
                inbox_id: r.uuid("inbox_id")?,
                event_type: r.text("event_type")?,
            })
        })
        .collect()
}
