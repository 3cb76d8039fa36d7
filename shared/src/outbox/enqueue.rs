//! Writing outbound events: business code, inside its own transaction.
//!
//! A payload whose JSON text is up to the inline threshold
//! ([`DEFAULT_INLINE_MAX_BYTES`], 32 KiB) is one INSERT, as jsonb. A larger
//! one needs a blob store ([`enqueue_with_blobs`]; a business handler has
//! [`InboxEvent::blobs`](crate::processing::InboxEvent::blobs)): its JSON
//! text (serde_json's compact form, exactly the bytes every delivery POSTs
//! and signs) is put under `outbox/{destination}/{sha256}` BEFORE the row
//! is written, and the row keeps the reference. The put is not part of the
//! transaction: if it rolls back, the object stays with no row referring to
//! it (an orphan; see docs/blobs.md for how orphans go). Retention never
//! deletes an object a row of an uncommitted transaction is about to refer
//! to: the enqueue takes the key's lock first ([`super::blob_refs`]).

use bytes::Bytes;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::blob_refs;
use super::payload::{DEFAULT_INLINE_MAX_BYTES, jsonb_text_bound};
use super::publish::{PUBLISH, check_fields};
use crate::blob::{self, BlobError, BlobKey, BlobStore, OUTBOX_PREFIX};
use crate::params;
use crate::processing::HandlerError;
use crate::store::{DbError, Transaction, Value};

/// An outbound event, written by business code inside its transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOutboxEvent {
    /// What kind of thing changed (e.g. `order`).
    pub aggregate_type: String,
    /// Which one (e.g. the order id).
    pub aggregate_id: String,
    /// Event type (e.g. `order.paid`).
    pub event_type: String,
    /// Destination name from configuration (also a segment of the blob key
    /// of a large payload: `[A-Za-z0-9._-]`, as configuration names are).
    pub destination: String,
    /// The payload.
    pub payload: serde_json::Value,
}

/// Longest `aggregate_type` an outbox row takes (bytes; the row budget:
/// every outbox row stays under the Data API's 64 KB per row).
pub const MAX_AGGREGATE_TYPE_BYTES: usize = 128;
/// Longest `aggregate_id` (it often comes from partner input, e.g. an order id).
pub const MAX_AGGREGATE_ID_BYTES: usize = 512;
/// Longest `event_type`.
pub const MAX_OUTBOX_EVENT_TYPE_BYTES: usize = crate::subscription::MAX_EVENT_TYPE_BYTES;

/// Why an event could not be enqueued.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    /// A text field is over its bound (the row budget): a poison pill for
    /// the inbox event that wrote it, never retried.
    #[error(
        "the outbox event's {field} is {size} bytes, over the {limit}-byte limit (every outbox \
         row must stay under the Data API's 64 KB)"
    )]
    TooLong {
        /// `aggregate_type`, `aggregate_id` or `event_type`.
        field: &'static str,
        /// Its size, bytes.
        size: usize,
        /// The bound.
        limit: usize,
    },
    /// A published payload (no destination named, so no blob store) is over
    /// what a row keeps ([`super::publish::MAX_PUBLISHED_PAYLOAD_BYTES`]): a
    /// poison pill for the inbox event that wrote it.
    #[error(
        "the published payload is {size} bytes of JSON, over the {limit}-byte limit of a payload          kept in its rows: publish it to one destination with outbox::enqueue_with_blobs"
    )]
    PayloadTooLarge {
        /// The payload's JSON text, bytes.
        size: usize,
        /// The limit, bytes.
        limit: usize,
    },
    /// The payload is over the inline threshold and the caller gave no blob
    /// store (plain [`enqueue`]).
    #[error(
        "the outbox payload for destination {destination:?} is up to {size} bytes of JSON as its \
         row would keep it (jsonb writes numbers out in full), over the {limit}-byte inline \
         limit, and no blob store was given: enqueue it with outbox::enqueue_with_blobs (a \
         business handler has InboxEvent::blobs)"
    )]
    NeedsBlobStore {
        /// The destination.
        destination: String,
        /// The payload's JSON text as its row would keep it, bytes (at
        /// most: [`super::payload::jsonb_text_bound`]).
        size: usize,
        /// The inline threshold, bytes.
        limit: usize,
    },
    /// Putting a large payload in the blob store failed (or the destination
    /// name cannot be a key segment).
    #[error(
        "storing the {size}-byte outbox payload for destination {destination:?} in the blob \
         store failed: {source}"
    )]
    Blob {
        /// The destination.
        destination: String,
        /// The payload's JSON text, bytes.
        size: usize,
        /// What the blob store said.
        source: BlobError,
    },
    /// The database failed (see [`DbError`]).
    #[error(transparent)]
    Db(#[from] DbError),
}

impl EnqueueError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            EnqueueError::TooLong { .. }
            | EnqueueError::PayloadTooLarge { .. }
            | EnqueueError::NeedsBlobStore { .. } => false,
            EnqueueError::Blob { source, .. } => source.is_retryable(),
            EnqueueError::Db(e) => e.is_retryable(),
        }
    }
}

impl From<EnqueueError> for HandlerError {
    /// Retried, like every database error (`?` in a handler): an outage may
    /// pass; a payload that needs a blob store ends `dead` after the last
    /// attempt, to be replayed once the handler passes one. A field over its
    /// bound is a poison pill (quarantined at once, with the reason).
    fn from(e: EnqueueError) -> Self {
        match e {
            // the same input will be too long on every attempt
            EnqueueError::TooLong { .. } | EnqueueError::PayloadTooLarge { .. } => {
                HandlerError::Poison(e.to_string())
            }
            e => HandlerError::Retryable(e.to_string()),
        }
    }
}

/// An outbound event whose payload is JSON text written as given: a
/// partner's body forwarded by routes, every number exactly the partner's
/// (no round trip through `serde_json::Value`, whose numbers are `f64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonOutboxEvent<'a> {
    /// What kind of thing changed (e.g. `partner:stripe`).
    pub aggregate_type: &'a str,
    /// Which one.
    pub aggregate_id: &'a str,
    /// Event type.
    pub event_type: &'a str,
    /// Destination name (see [`NewOutboxEvent::destination`]).
    pub destination: &'a str,
    /// The payload: valid JSON text (the caller parsed it). Kept in the row
    /// as jsonb (exact numbers, in jsonb's canonical text) or, when larger
    /// than the inline threshold, put in the blob store byte for byte.
    pub payload_json: &'a str,
}

/// Writes an outbound event inside the caller's transaction (so it exists
/// if and only if the business change commits). Due at once. Returns its
/// id, which every delivery will carry as `webhook-id`. One statement: the
/// SQL function every publisher calls ([`super::publish`]), with the
/// destination named (subscribed or not).
///
/// For payloads up to the inline threshold only: a larger one is
/// [`EnqueueError::NeedsBlobStore`] (use [`enqueue_with_blobs`]).
pub async fn enqueue(
    tx: &dyn Transaction,
    event: &NewOutboxEvent,
    now: DateTime<Utc>,
) -> Result<Uuid, EnqueueError> {
    let text = event.payload.to_string();
    write(tx, None, &as_json(event, &text), now).await
}

/// [`enqueue`] for payloads of any size: one over the inline threshold is
/// put in `blobs` (its JSON text, the bytes every delivery POSTs) and the row
/// keeps the reference; two statements (the key's lock, the insert) and the
/// put. A payload up to the threshold is written inline, as by [`enqueue`].
pub async fn enqueue_with_blobs(
    tx: &dyn Transaction,
    blobs: &dyn BlobStore,
    event: &NewOutboxEvent,
    now: DateTime<Utc>,
) -> Result<Uuid, EnqueueError> {
    let text = event.payload.to_string();
    write(tx, Some(blobs), &as_json(event, &text), now).await
}

/// [`enqueue_with_blobs`] for a payload given as JSON text, kept as given
/// (see [`JsonOutboxEvent`]).
pub async fn enqueue_json_with_blobs(
    tx: &dyn Transaction,
    blobs: &dyn BlobStore,
    event: &JsonOutboxEvent<'_>,
    now: DateTime<Utc>,
) -> Result<Uuid, EnqueueError> {
    write(tx, Some(blobs), event, now).await
}

fn as_json<'a>(event: &'a NewOutboxEvent, text: &'a str) -> JsonOutboxEvent<'a> {
    JsonOutboxEvent {
        aggregate_type: &event.aggregate_type,
        aggregate_id: &event.aggregate_id,
        event_type: &event.event_type,
        destination: &event.destination,
        payload_json: text,
    }
}

async fn write(
    tx: &dyn Transaction,
    blobs: Option<&dyn BlobStore>,
    event: &JsonOutboxEvent<'_>,
    now: DateTime<Utc>,
) -> Result<Uuid, EnqueueError> {
    check_fields(event.aggregate_type, event.aggregate_id, event.event_type)?;
    let text = event.payload_json;
    let size = text.len();
    // what the row would keep: jsonb writes numbers out in full, so a short
    // text can be a long row; such a payload goes to the blob store as is
    let row_size = jsonb_text_bound(text);
    let params = params! {
        "aggregate_type" => event.aggregate_type,
        "aggregate_id" => event.aggregate_id,
        "event_type" => event.event_type,
        "destination" => event.destination,
        "now" => now,
        "origin" => tx.origin().map(str::to_owned),
    };
    let params = if row_size <= DEFAULT_INLINE_MAX_BYTES {
        params
            .with("payload", text)
            .with("payload_key", Value::Null)
            .with("payload_size", Value::Null)
            .with("payload_sha256", Value::Null)
    } else {
        let Some(blobs) = blobs else {
            return Err(EnqueueError::NeedsBlobStore {
                destination: event.destination.to_owned(),
                size: row_size,
                limit: DEFAULT_INLINE_MAX_BYTES,
            });
        };
        let failed = |source: BlobError| EnqueueError::Blob {
            destination: event.destination.to_owned(),
            size,
            source,
        };
        let sha256 = blob::sha256(text.as_bytes());
        let key = BlobKey::content(OUTBOX_PREFIX, event.destination, &sha256)
            .map_err(|e| failed(e.into()))?;
        // before the put: from now until this transaction ends, retention
        // leaves the object alone
        blob_refs::lock_shared(tx, &key).await?;
        blobs
            .put(&key, Bytes::copy_from_slice(text.as_bytes()))
            .await
            .map_err(failed)?;
        params
            .with("payload", Value::Null)
            .with("payload_key", key.as_str())
            // a payload is far below i64::MAX bytes
            .with("payload_size", i64::try_from(size).unwrap_or(i64::MAX))
            .with("payload_sha256", sha256.as_slice())
    };
    let rows = tx.execute(&PUBLISH, &params).await?;
    match rows.rows.as_slice() {
        [row] => Ok(row.uuid("id")?),
        other => Err(EnqueueError::Db(DbError::Decode {
            statement: PUBLISH.name,
            column: "id".into(),
            detail: format!(
                "publishing to destination {:?} wrote {} rows, not 1",
                event.destination,
                other.len()
            ),
        })),
    }
}
