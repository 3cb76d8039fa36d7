//! Publishing from Rust, inside the caller's transaction, through the same
//! SQL function every other publisher calls (`hookbox_publish`, migration
//! 11; docs/publishing.md): one outbox row per destination that subscribes
//! to the event ([`super::subscription`]), each its own delivery with its
//! own `webhook-id`. [`super::enqueue`] is the same function with the
//! destination named.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::enqueue::{
    EnqueueError, MAX_AGGREGATE_ID_BYTES, MAX_AGGREGATE_TYPE_BYTES, MAX_OUTBOX_EVENT_TYPE_BYTES,
};
use crate::params;
use crate::store::{Statement, Transaction, Value};

/// Largest payload a published event carries in its rows, bytes of JSON
/// text (the function's limit; [`super::enqueue_with_blobs`] takes larger
/// ones to one destination).
pub const MAX_PUBLISHED_PAYLOAD_BYTES: usize = 256 * 1024;

/// An event to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Event type (e.g. `order.paid`): what subscriptions match.
    pub event_type: String,
    /// The payload (what filters look into, and what is POSTed).
    pub payload: serde_json::Value,
    /// What kind of thing changed (e.g. `order`).
    pub aggregate_type: String,
    /// Which one (e.g. the order id): ordered destinations get one
    /// aggregate's events in publish order.
    pub aggregate_id: String,
}

/// Writes the event for every subscribed destination, or for `destination`
/// only, each row recording the transaction's origin
/// ([`crate::store::Transaction::origin`]). One statement (the function).
pub const PUBLISH: Statement = Statement::new(
    "outbox.publish",
    "SELECT p.id FROM hookbox_publish_at(
         CAST(:event_type AS text), CAST(:payload AS jsonb), CAST(:aggregate_type AS text),
         CAST(:aggregate_id AS text), CAST(:destination AS text), CAST(:now AS timestamptz),
         CAST(:payload_key AS text), CAST(:payload_size AS bigint),
         CAST(:payload_sha256 AS bytea), CAST(:origin AS jsonb)) AS p(id)",
);

/// Checks the text fields against the row budget (as the function does,
/// but before any call: a poison pill, never retried).
pub(crate) fn check_fields(
    aggregate_type: &str,
    aggregate_id: &str,
    event_type: &str,
) -> Result<(), EnqueueError> {
    for (field, value, limit) in [
        ("aggregate_type", aggregate_type, MAX_AGGREGATE_TYPE_BYTES),
        ("aggregate_id", aggregate_id, MAX_AGGREGATE_ID_BYTES),
        ("event_type", event_type, MAX_OUTBOX_EVENT_TYPE_BYTES),
    ] {
        if value.len() > limit {
            return Err(EnqueueError::TooLong {
                field,
                size: value.len(),
                limit,
            });
        }
    }
    Ok(())
}

/// Publishes `event` inside `tx`, due at `now`: one row per destination
/// whose subscription matches (as last synced from the configuration, see
/// [`super::destinations`]); returns their ids (each the `webhook-id` of its
/// deliveries), none when no destination subscribes. The rows exist if and
/// only if `tx` commits.
pub async fn publish(
    tx: &dyn Transaction,
    event: &NewEvent,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, EnqueueError> {
    check_fields(
        &event.aggregate_type,
        &event.aggregate_id,
        &event.event_type,
    )?;
    let text = event.payload.to_string();
    if text.len() > MAX_PUBLISHED_PAYLOAD_BYTES {
        return Err(EnqueueError::PayloadTooLarge {
            size: text.len(),
            limit: MAX_PUBLISHED_PAYLOAD_BYTES,
        });
    }
    let rows = tx
        .execute(
            &PUBLISH,
            &params! {
                "event_type" => event.event_type.as_str(),
                "payload" => text,
                "aggregate_type" => event.aggregate_type.as_str(),
                "aggregate_id" => event.aggregate_id.as_str(),
                "destination" => Value::Null,
                "now" => now,
                "payload_key" => Value::Null,
                "payload_size" => Value::Null,
                "payload_sha256" => Value::Null,
                "origin" => tx.origin().map(str::to_owned),
            },
        )
        .await?;
    rows.rows
        .iter()
        .map(|r| r.uuid("id").map_err(EnqueueError::from))
        .collect()
}
