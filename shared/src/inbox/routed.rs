//! Forwarding at ingest: the inbox insert and the event's deliveries in ONE
//! statement, so forwarding a webhook costs its ingest one database call
//! and no queue message or processor run (docs/forwarding.md, "Where an
//! event is routed").
//!
//! The statement inserts the row already finished (`processed` with its
//! deliveries, `quarantined` or `processed` by the partner's unrouted
//! policy) and, only when it inserted, writes one outbox row per destination
//! through `hookbox_publish_at` (migration 18 lets ingest's role run it and
//! nothing more of the outbox). A duplicate writes nothing: its deliveries
//! were written with the first copy.
//!
//! Received order per ordering key: when an earlier event of the same
//! partner and key is still active (waiting for the processor: spooled,
//! too large to forward here, retried), the new row is stored `pending`
//! instead, with no delivery, and the caller enqueues it like any other:
//! the processor forwards it behind the earlier ones ([`EARLIER_ACTIVE`]).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::InboxStatus;
use super::lease::bounded;
use super::repo::{NewInboxEvent, stored_id, with_body};
use crate::config::Partner;
use crate::config::route::Unrouted;
use crate::outbox;
use crate::params;
use crate::processing::routing::{self, Deliveries, Plan};
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
    /// `processed`, with one outbox row per destination; `payload` is the
    /// body's JSON text as the processor's path writes it (serde_json's
    /// compact form).
    Deliver {
        /// The destinations and the rows' fields.
        deliveries: Deliveries,
        /// The payload's JSON text.
        payload: String,
    },
    /// No route matched and the partner drops such events: `processed`,
    /// no delivery.
    Drop,
    /// No route matched and the partner quarantines such events: why.
    Quarantine(String),
}

/// What ingest does with `event` of `partner`, or `None` to leave it to the
/// processor (stored `pending` and enqueued as without routes): a partner
/// without routes, a body in the blob store, a body that is not JSON or
/// holds U+0000 in a string (the processor quarantines it, naming why), a payload over the outbox's
/// inline threshold (the processor puts it in the blob store), a field over
/// the outbox's bounds.
pub fn at_ingest(partner: &Partner, event: &NewInboxEvent) -> Option<AtIngest> {
    if partner.routes.is_empty() {
        return None;
    }
    let body = event.body.inline()?;
    let payload: serde_json::Value = serde_json::from_slice(body).ok()?;
    if routing::holds_nul(&payload) {
        // jsonb cannot hold it: the processor quarantines it, naming why
        return None;
    }
    match routing::plan(
        partner,
        &event.event_id,
        event.event_type.as_deref(),
        event.ordering_key.as_deref(),
        &payload,
    ) {
        Plan::Unrouted(reason) => Some(match partner.unrouted {
            Unrouted::Quarantine => AtIngest::Quarantine(reason),
            Unrouted::Drop => AtIngest::Drop,
        }),
        Plan::Deliver(deliveries) => {
            let payload = payload.to_string();
            let fits = payload.len() <= outbox::payload::DEFAULT_INLINE_MAX_BYTES
                && outbox::publish::check_fields(
                    &deliveries.aggregate_type,
                    &deliveries.aggregate_id,
                    &deliveries.event_type,
                )
                .is_ok();
            fits.then_some(AtIngest::Deliver {
                deliveries,
                payload,
            })
        }
    }
}

/// Result of [`insert_forwarded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// A new row, finished here: its status, and the deliveries written.
    Finished {
        /// The row id.
        id: Uuid,
        /// `processed` or `quarantined`.
        status: InboxStatus,
        /// Outbox rows written (0 unless [`Finish::Deliver`]).
        deliveries: u64,
    },
    /// A new row left `pending` behind an earlier active event of its
    /// ordering key: the caller enqueues it, the processor forwards it.
    Waiting(Uuid),
    /// The (partner, event_id) was already stored under this id.
    Duplicate(Uuid),
}

pub const INSERT_FORWARDED: Statement = Statement::new(
    "inbox.insert_forwarded",
    "WITH earlier AS (
        SELECT EXISTS (
            SELECT 1 FROM inbox
             WHERE partner = :partner AND ordering_key = :ordering_key
               AND status IN ('pending', 'processing', 'deferred')
               AND ordering_key IS NOT NULL) AS waits
    ),
    ins AS (
        INSERT INTO inbox (id, partner, event_id, event_id_derived, event_type, ordering_key,
                           body, body_key, body_size, body_sha256, dedupe_digest,
                           headers, signature_verified, status, next_attempt_at,
                           received_at, enqueued_at, last_error, processed_at)
        SELECT :id, :partner, :event_id, :event_id_derived, :event_type, :ordering_key,
               CAST(:body AS bytea), :body_key, CAST(:body_size AS bigint),
               CAST(:body_sha256 AS bytea), CAST(:dedupe_digest AS bytea),
               CAST(:headers AS jsonb), :signature_verified,
               CASE WHEN e.waits THEN 'pending' ELSE :status END,
               CASE WHEN e.waits THEN CAST(:now AS timestamptz) END,
               CAST(:now AS timestamptz),
               CASE WHEN e.waits THEN CAST(:now AS timestamptz) END,
               CASE WHEN e.waits THEN NULL ELSE :last_error END,
               CASE WHEN e.waits THEN NULL ELSE CAST(:now AS timestamptz) END
          FROM earlier AS e
        -- any unique key: (partner, event_id), or (partner, dedupe_digest)
        ON CONFLICT DO NOTHING
        RETURNING id, status
    ),
    fwd AS (
        SELECT p.id
          FROM ins
         CROSS JOIN jsonb_array_elements_text(CAST(:destinations AS jsonb)) AS d(name)
         CROSS JOIN LATERAL hookbox_publish_at(
               CAST(:out_event_type AS text), CAST(:payload AS jsonb),
               CAST(:aggregate_type AS text), CAST(:aggregate_id AS text), d.name,
               CAST(:now AS timestamptz), NULL, NULL, NULL) AS p(id)
         WHERE ins.status = 'processed'
    )
    SELECT id, true AS inserted, status, (SELECT count(*) FROM fwd) AS deliveries FROM ins
    UNION ALL
    -- the stored duplicate, as in inbox.insert_if_new
    (SELECT id, false AS inserted, status, 0 AS deliveries FROM inbox
      WHERE NOT EXISTS (SELECT 1 FROM ins)
        AND partner = :partner AND event_id = :event_id
     UNION ALL
     SELECT id, false AS inserted, status, 0 AS deliveries FROM inbox
      WHERE NOT EXISTS (SELECT 1 FROM ins)
        AND partner = :partner AND dedupe_digest = CAST(:dedupe_digest AS bytea)
        AND event_id <> :event_id)",
);

/// Stores `event` unless (partner, event_id) (or, with `dedupe_digest`,
/// its body) is already stored, finished as `finish` says ([`at_ingest`]),
/// in ONE statement: see the module's documentation.
pub async fn insert_forwarded(
    db: &dyn Executor,
    event: &NewInboxEvent,
    now: DateTime<Utc>,
    dedupe_digest: Option<[u8; 32]>,
    finish: &AtIngest,
) -> Result<Stored, DbError> {
    let digest: Value = dedupe_digest.map(|d| d.to_vec()).into();
    let (status, last_error, destinations, out_type, payload, agg_type, agg_id) = match finish {
        AtIngest::Deliver {
            deliveries,
            payload,
        } => (
            InboxStatus::Processed,
            Value::Null,
            serde_json::Value::from(deliveries.destinations.clone()).to_string(),
            Value::from(deliveries.event_type.as_str()),
            Value::from(payload.as_str()),
            Value::from(deliveries.aggregate_type.as_str()),
            Value::from(deliveries.aggregate_id.as_str()),
        ),
        AtIngest::Drop | AtIngest::Quarantine(_) => (
            if matches!(finish, AtIngest::Drop) {
                InboxStatus::Processed
            } else {
                InboxStatus::Quarantined
            },
            match finish {
                AtIngest::Quarantine(reason) => Value::from(bounded(reason)),
                _ => Value::Null,
            },
            "[]".to_owned(),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ),
    };
    let params = params! {
        "id" => Uuid::now_v7(),
        "partner" => event.partner.as_str(),
        "event_id" => event.event_id.as_str(),
        "event_id_derived" => event.event_id_derived,
        "event_type" => event.event_type.clone(),
        "ordering_key" => event.ordering_key.clone(),
        "headers" => event.headers.clone(),
        "signature_verified" => event.signature_verified,
        "now" => now,
        "status" => status.as_str(),
        "last_error" => last_error,
        "destinations" => destinations,
        "out_event_type" => out_type,
        "payload" => payload,
        "aggregate_type" => agg_type,
        "aggregate_id" => agg_id,
    };
    let params = with_body(params, &event.body).with("dedupe_digest", digest.clone());
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
            return Ok(Stored::Waiting(id));
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
