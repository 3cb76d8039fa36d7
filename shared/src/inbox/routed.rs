//! Forwarding at ingest: the inbox insert and the event's deliveries in ONE
//! statement, so forwarding a webhook costs its ingest one database call
//! and no queue message or processor run (docs/forwarding.md, "Where an
//! event is routed").
//!
//! The statement is one call of `hookbox_ingest_store` (migration 19), the
//! only way ingest's role may write the outbox: it inserts the row already
//! finished (`processed` with its deliveries, `quarantined` or `processed`
//! by the partner's unrouted policy) and, only when it inserted, writes one
//! outbox row per destination, every field derived from the row it stored
//! (the payload is its body). A duplicate writes nothing: its deliveries
//! were written with the first copy.
//!
//! Ingest never fails a verified webhook for what its body holds: what an
//! outbox row cannot hold (the database's one definition,
//! `hookbox_publish_refusal`) is stored `pending` instead, and the caller
//! enqueues it for the processor ([`Stored::Waiting`] with the refusal).
//!
//! Received order per ordering key: when an earlier event of the same
//! partner and key is still active in the inbox (too large to forward here,
//! refused, retried, being processed), the new row is stored `pending`
//! too, with no delivery, and the processor forwards it behind the earlier
//! ones ([`EARLIER_ACTIVE`]). An event spooled to the queue while the
//! database was down is not in the inbox yet, so it holds nothing up: it
//! is stored when the processor reads it (docs/forwarding.md, "Order").

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::InboxStatus;
use super::lease::bounded;
use super::repo::{NewInboxEvent, stored_id};
use crate::config::Partner;
use crate::config::route::{self, Deliveries, Plan, Unrouted};
use crate::params;
use crate::store::{DbError, Executor, Statement, Value, fetch_optional};

/// Turns forwarding at ingest on (`true`) or off (`false`, the default):
/// see [`super::ingest::Ingest::with_forwarding_at_ingest`].
pub const FORWARD_AT_INGEST_VAR: &str = "HOOKBOX_FORWARD_AT_INGEST";

/// [`FORWARD_AT_INGEST_VAR`] holds something other than `true` or `false`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HOOKBOX_FORWARD_AT_INGEST={0:?} is neither true nor false")]
pub struct ForwardAtIngestError(pub String);

/// Whether ingest forwards, from [`FORWARD_AT_INGEST_VAR`] (unset or empty:
/// no).
pub fn forward_at_ingest_from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<bool, ForwardAtIngestError> {
    match env(FORWARD_AT_INGEST_VAR).as_deref().map(str::trim) {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ForwardAtIngestError(other.to_owned())),
    }
}

/// What ingest does with an event of a partner with routes, when it can
/// finish it itself ([`at_ingest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtIngest {
    /// `processed`, with one outbox row per destination. The rows' fields
    /// are derived from the stored row by the database
    /// (`hookbox_ingest_store`, migration 19): the payload is the body, the
    /// event type, aggregate type and id are those of [`Deliveries`].
    Deliver(Deliveries),
    /// No route matched and the partner drops such events: `processed`,
    /// no delivery.
    Drop,
    /// No route matched and the partner quarantines such events: why.
    Quarantine(String),
}

/// What ingest does with `event` of `partner`, or `None` to leave it to the
/// processor (stored `pending` and enqueued as without routes): a partner
/// without routes, a body in the blob store, a body that is not JSON (the
/// processor quarantines it, naming why).
///
/// What an outbox row can hold (sizes, fields, what jsonb refuses) is not
/// checked here: the database checks it in the statement that stores the
/// event, with the same definition every publish uses
/// (`hookbox_publish_refusal`), and stores an event it refuses `pending`
/// for the processor instead ([`Stored::Waiting`]).
pub fn at_ingest(partner: &Partner, event: &NewInboxEvent) -> Option<AtIngest> {
    if partner.routes.is_empty() {
        return None;
    }
    let body = event.body.inline()?;
    let payload: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(
        match route::plan(
            partner,
            &event.event_id,
            event.event_type.as_deref(),
            event.ordering_key.as_deref(),
            &payload,
        ) {
            Plan::Unrouted(reason) => match partner.unrouted {
                Unrouted::Quarantine => AtIngest::Quarantine(reason),
                Unrouted::Drop => AtIngest::Drop,
            },
            Plan::Deliver(deliveries) => AtIngest::Deliver(deliveries),
        },
    )
}

/// Result of [`insert_forwarded`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// A new row, finished here: its status, and the deliveries written.
    Finished {
        /// The row id.
        id: Uuid,
        /// `processed` or `quarantined`.
        status: InboxStatus,
        /// Outbox rows written (0 unless [`AtIngest::Deliver`]).
        deliveries: u64,
    },
    /// A new row left `pending` for the processor: behind an earlier active
    /// event of its ordering key (no reason), or because the database
    /// refused its deliveries (why: the processor forwards it through the
    /// blob store, or quarantines it naming the field). The caller enqueues
    /// it.
    Waiting {
        /// The row id.
        id: Uuid,
        /// Why the deliveries were not written here, if refused.
        refusal: Option<String>,
    },
    /// The (partner, event_id) was already stored under this id.
    Duplicate(Uuid),
}

/// Ingest's one statement for an event it finishes itself: the function
/// that stores the row and writes its deliveries (migration 19), the only
/// way ingest's role may write the outbox. Every argument typed and the
/// function schema-qualified: no overload can stand in for it.
pub const INSERT_FORWARDED: Statement = Statement::new(
    "inbox.insert_forwarded",
    "SELECT s.stored_id AS id, s.inserted, s.stored_status AS status, s.deliveries, s.refusal
       FROM public.hookbox_ingest_store(
            CAST(:id AS uuid), CAST(:partner AS text), CAST(:event_id AS text),
            CAST(:event_id_derived AS boolean), CAST(:event_type AS text),
            CAST(:ordering_key AS text), CAST(:body AS bytea), CAST(:dedupe_digest AS bytea),
            CAST(:headers AS jsonb), CAST(:signature_verified AS boolean),
            CAST(:now AS timestamptz), CAST(:status AS text), CAST(:last_error AS text),
            ARRAY(SELECT pg_catalog.jsonb_array_elements_text(CAST(:destinations AS jsonb))),
            CAST(:trace_id AS text))
            AS s",
);

/// Stores `event` unless (partner, event_id) (or, with `dedupe_digest`,
/// its body) is already stored, finished as `finish` says ([`at_ingest`]),
/// in ONE statement: see the module's documentation. Only for an inline
/// body ([`at_ingest`] never finishes another).
pub async fn insert_forwarded(
    db: &dyn Executor,
    event: &NewInboxEvent,
    now: DateTime<Utc>,
    dedupe_digest: Option<[u8; 32]>,
    finish: &AtIngest,
) -> Result<Stored, DbError> {
    let digest: Value = dedupe_digest.map(|d| d.to_vec()).into();
    let (status, last_error, destinations) = match finish {
        AtIngest::Deliver(deliveries) => (
            InboxStatus::Processed,
            Value::Null,
            deliveries.destinations.as_slice(),
        ),
        AtIngest::Drop => (InboxStatus::Processed, Value::Null, &[][..]),
        AtIngest::Quarantine(reason) => (
            InboxStatus::Quarantined,
            Value::from(bounded(reason)),
            &[][..],
        ),
    };
    let params = params! {
        "id" => Uuid::now_v7(),
        "partner" => event.partner.as_str(),
        "event_id" => event.event_id.as_str(),
        "event_id_derived" => event.event_id_derived,
        "event_type" => event.event_type.clone(),
        "ordering_key" => event.ordering_key.clone(),
        "body" => event.body.inline().unwrap_or_default(),
        "headers" => event.headers.clone(),
        "signature_verified" => event.signature_verified,
        "now" => now,
        "status" => status.as_str(),
        "last_error" => last_error,
        "destinations" => serde_json::Value::from(destinations.to_vec()).to_string(),
        "dedupe_digest" => digest.clone(),
        "trace_id" => invocation_trace_id(),
    };
    if let Some(row) = fetch_optional(db, &INSERT_FORWARDED, &params).await? {
        let id = row.uuid("id")?;
        if !row.bool("inserted")? {
            return Ok(Stored::Duplicate(id));
        }
        let status = row.text("status")?;
        let status: InboxStatus = status.parse().map_err(|_| DbError::Decode {
            statement: INSERT_FORWARDED.name,
            column: "status".into(),
            detail: format!("unknown inbox status {status:?}"),
        })?;
        if status == InboxStatus::Pending {
            return Ok(Stored::Waiting {
                id,
                refusal: row.opt_text("refusal")?,
            });
        }
        let deliveries = row.i64("deliveries")?;
        return Ok(Stored::Finished {
            id,
            status,
            deliveries: u64::try_from(deliveries).unwrap_or(0),
        });
    }
    // a concurrent insert of the same key committed while the statement ran
    Ok(Stored::Duplicate(stored_id(db, event, digest).await?))
}

/// The X-Ray trace id of the invocation under way, which the deliveries
/// ingest writes name (their origin's `trace_id`), when tracing is active.
pub(crate) fn invocation_trace_id() -> Option<String> {
    crate::log_format::trace_header().map(|h| crate::log_format::trace_root(&h))
}

pub const EARLIER_ACTIVE: Statement = Statement::new(
    "inbox.earlier_active",
    "SELECT id FROM inbox
      WHERE partner = :partner AND ordering_key = :ordering_key
        AND status IN ('pending', 'processing', 'deferred') AND ordering_key IS NOT NULL
        AND (received_at, id) < (CAST(:received_at AS timestamptz), CAST(:id AS uuid))
      ORDER BY received_at, id
      LIMIT 1",
);

/// The earliest event of the same partner and ordering key as row `id`
/// (received at `received_at`) that was received before it and is still
/// active, if any: the processor's path forwards a key's events in the
/// order they were received, so this one waits behind that one.
pub async fn earlier_active(
    db: &dyn Executor,
    id: Uuid,
    partner: &str,
    ordering_key: &str,
    received_at: DateTime<Utc>,
) -> Result<Option<Uuid>, DbError> {
    let row = fetch_optional(
        db,
        &EARLIER_ACTIVE,
        &params! {
            "id" => id, "partner" => partner, "ordering_key" => ordering_key,
            "received_at" => received_at,
        },
    )
    .await?;
    row.map(|r| r.uuid("id")).transpose()
}
