//! Inbox statements. Every function runs ONE statement through the database
//! port (the same SQL text on every adapter) and takes the time from its
//! caller, so tests control the clock.
//!
//! This file: storing (insert-if-new, the unreadable kept quarantined),
//! reading (`get`, the row decoding) and the operator's replay. The lease
//! lifecycle (claim, status changes) is in [`super::lease`], the sweeper,
//! counts and retention in [`super::upkeep`]; their items are re-exported
//! here, so `inbox::repo::X` names every inbox statement.

pub use super::lease::*;
pub use super::upkeep::*;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::body::Body;
use super::lease::bounded;
use super::{InboxRow, InboxStatus};
use crate::blob::{BlobKey, BlobRef};
use crate::params;
use crate::store::{DbError, Executor, Params, Row, Statement, Value, fetch_one, fetch_optional};

/// A verified webhook, ready to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInboxEvent {
    /// Partner name.
    pub partner: String,
    /// The partner's event id (dedupe key together with the partner).
    pub event_id: String,
    /// True when `event_id` is sha256 of the body (the partner sent none).
    pub event_id_derived: bool,
    /// Event type, if known.
    pub event_type: Option<String>,
    /// Ordering key, if known.
    pub ordering_key: Option<String>,
    /// The raw body, verbatim: inline, or a reference to the blob store
    /// (put there before the insert: see [`super::body::store`]).
    pub body: Body,
    /// Selected headers (a JSON object).
    pub headers: serde_json::Value,
    /// Whether the signature was verified.
    pub signature_verified: bool,
}

/// The body's columns as parameters: `body` (inline bytes) or `body_key`,
/// `body_size` and `body_sha256` (a reference).
pub(super) fn with_body(params: Params, body: &Body) -> Params {
    let (bytes, key, size, sha256): (Value, Value, Value, Value) = match body {
        Body::Inline(b) => (b.as_slice().into(), Value::Null, Value::Null, Value::Null),
        Body::Blob(r) => (
            Value::Null,
            r.key.as_str().into(),
            // sizes are far below i64::MAX (a Lambda payload is 6 MB)
            i64::try_from(r.size).unwrap_or(i64::MAX).into(),
            r.sha256.as_slice().into(),
        ),
        // never written: only a statement's result has it
        Body::InlineUnread { .. } => (Value::Null, Value::Null, Value::Null, Value::Null),
    };
    params
        .with("body", bytes)
        .with("body_key", key)
        .with("body_size", size)
        .with("body_sha256", sha256)
}

/// Result of [`insert_if_new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// A new row with this id.
    New(Uuid),
    /// The (partner, event_id) was already stored under this id.
    Duplicate(Uuid),
}

impl Inserted {
    /// The row id, new or existing.
    pub fn id(self) -> Uuid {
        match self {
            Inserted::New(id) | Inserted::Duplicate(id) => id,
        }
    }

    /// True for a new row.
    pub fn is_new(self) -> bool {
        matches!(self, Inserted::New(_))
    }
}

pub const INSERT_IF_NEW: Statement = Statement::new(
    "inbox.insert_if_new",
    "WITH ins AS (
        INSERT INTO inbox (id, partner, event_id, event_id_derived, event_type, ordering_key,
                           body, body_key, body_size, body_sha256, dedupe_digest,
                           headers, signature_verified, status, next_attempt_at,
                           received_at, enqueued_at)
        VALUES (:id, :partner, :event_id, :event_id_derived, :event_type, :ordering_key,
                CAST(:body AS bytea), :body_key, CAST(:body_size AS bigint),
                CAST(:body_sha256 AS bytea), CAST(:dedupe_digest AS bytea),
                CAST(:headers AS jsonb), :signature_verified, 'pending',
                CAST(:now AS timestamptz), CAST(:now AS timestamptz), CAST(:now AS timestamptz))
        -- any unique key: (partner, event_id), or (partner, dedupe_digest)
        ON CONFLICT DO NOTHING
        RETURNING id
    )
    SELECT id, true AS inserted FROM ins
    UNION ALL
    -- the stored duplicate, looked up only when nothing was inserted (a
    -- new webhook reads no index beyond the insert's own), by each unique
    -- key apart: an OR of the two would be planned, in the generic plan a
    -- pooled connection keeps, as a BitmapOr over both indexes
    (SELECT id, false AS inserted FROM inbox
      WHERE NOT EXISTS (SELECT 1 FROM ins)
        AND partner = :partner AND event_id = :event_id
     UNION ALL
     SELECT id, false AS inserted FROM inbox
      WHERE NOT EXISTS (SELECT 1 FROM ins)
        AND partner = :partner AND dedupe_digest = CAST(:dedupe_digest AS bytea)
        AND event_id <> :event_id)",
);

pub const FIND_BY_KEY: Statement = Statement::new(
    "inbox.find_by_key",
    // each unique key apart, not an OR (see INSERT_IF_NEW)
    "(SELECT id FROM inbox WHERE partner = :partner AND event_id = :event_id
      UNION ALL
      SELECT id FROM inbox
       WHERE partner = :partner AND dedupe_digest = CAST(:dedupe_digest AS bytea))
      LIMIT 1",
);

/// Stores `event` unless (partner, event_id) is already stored: one INSERT …
/// ON CONFLICT DO NOTHING. `received_at`, `next_attempt_at` and `enqueued_at`
/// are `now` (the caller enqueues right after; the sweeper covers a failed send).
///
/// A concurrent insert of the same key that commits while this statement
/// runs is invisible to the statement's snapshot; in that rare case one more
/// read fetches the winner's id.
pub async fn insert_if_new(
    db: &dyn Executor,
    event: &NewInboxEvent,
    now: DateTime<Utc>,
) -> Result<Inserted, DbError> {
    insert_if_new_deduped(db, event, now, None).await
}

/// [`insert_if_new`], where the same `dedupe_digest` (the body's sha256,
/// for partners deduplicated on the body) from the same partner is a
/// duplicate too, whatever the event id.
pub async fn insert_if_new_deduped(
    db: &dyn Executor,
    event: &NewInboxEvent,
    now: DateTime<Utc>,
    dedupe_digest: Option<[u8; 32]>,
) -> Result<Inserted, DbError> {
    let digest: Value = dedupe_digest.map(|d| d.to_vec()).into();
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
    };
    let params = with_body(params, &event.body).with("dedupe_digest", digest.clone());
    if let Some(row) = fetch_optional(db, &INSERT_IF_NEW, &params).await? {
        let id = row.uuid("id")?;
        return Ok(if row.bool("inserted")? {
            Inserted::New(id)
        } else {
            Inserted::Duplicate(id)
        });
    }
    Ok(Inserted::Duplicate(stored_id(db, event, digest).await?))
}

/// The id of the row already stored under `event`'s keys: for an insert
/// that inserted nothing and saw no row, because a concurrent insert of the
/// same key committed while it ran (invisible to its snapshot).
pub(super) async fn stored_id(
    db: &dyn Executor,
    event: &NewInboxEvent,
    dedupe_digest: Value,
) -> Result<Uuid, DbError> {
    let row = fetch_one(
        db,
        &FIND_BY_KEY,
        &params! {
            "partner" => event.partner.as_str(), "event_id" => event.event_id.as_str(),
            "dedupe_digest" => dedupe_digest,
        },
    )
    .await?;
    row.uuid("id")
}

pub const INSERT_QUARANTINED: Statement = Statement::new(
    "inbox.insert_quarantined",
    "WITH ins AS (
        INSERT INTO inbox (id, partner, event_id, event_id_derived, event_type, ordering_key,
                           body, body_key, body_size, body_sha256,
                           headers, signature_verified, status, attempts, last_error,
                           received_at, enqueued_at, processed_at)
        VALUES (:id, :partner, :event_id, :event_id_derived, :event_type, :ordering_key,
                CAST(:body AS bytea), :body_key, CAST(:body_size AS bigint),
                CAST(:body_sha256 AS bytea),
                CAST(:headers AS jsonb), :signature_verified, 'quarantined', 1, :reason,
                CAST(:now AS timestamptz), CAST(:now AS timestamptz), CAST(:now AS timestamptz))
        ON CONFLICT (partner, event_id) DO NOTHING
        RETURNING id
    )
    SELECT id, true AS inserted FROM ins
    UNION ALL
    SELECT id, false AS inserted FROM inbox WHERE partner = :partner AND event_id = :event_id",
);

/// Stores `event` directly as `quarantined` with `reason` (one attempt),
/// unless (partner, event_id) is already stored, in ONE statement. For input
/// the processor cannot even turn into an inbox row (an unreadable queue
/// message): it is kept for an operator instead of being dropped.
pub async fn insert_quarantined(
    db: &dyn Executor,
    event: &NewInboxEvent,
    now: DateTime<Utc>,
    reason: &str,
) -> Result<Inserted, DbError> {
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
        "reason" => bounded(reason),
    };
    let params = with_body(params, &event.body);
    if let Some(row) = fetch_optional(db, &INSERT_QUARANTINED, &params).await? {
        let id = row.uuid("id")?;
        return Ok(if row.bool("inserted")? {
            Inserted::New(id)
        } else {
            Inserted::Duplicate(id)
        });
    }
    let row = fetch_one(
        db,
        &FIND_BY_KEY,
        &params! {
            "partner" => event.partner.as_str(), "event_id" => event.event_id.as_str(),
            "dedupe_digest" => Value::Null,
        },
    )
    .await?;
    Ok(Inserted::Duplicate(row.uuid("id")?))
}

/// Outcome of [`replay`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// The row is `pending` again: send it to the queue
    /// (`InboxMessage::stored(id, partner, event_id)`).
    Replayed {
        /// The row.
        id: Uuid,
        /// Its partner.
        partner: String,
        /// Its event id.
        event_id: String,
        /// Its status before the replay (quarantined or dead).
        previous: InboxStatus,
    },
    /// The row is not quarantined or dead (already replayed, processed, or
    /// still on its way): nothing changed.
    NotReplayable {
        /// The row.
        id: Uuid,
        /// Its status when the statement started.
        status: InboxStatus,
    },
    /// No such row.
    Missing {
        /// The requested id.
        id: Uuid,
    },
}

pub const REPLAY: Statement = Statement::new(
    "inbox.replay",
    "WITH wanted AS (
        SELECT CAST(:id AS uuid) AS wanted_id
    ), replayed AS (
        UPDATE inbox AS i
           SET status = 'pending',
               next_attempt_at = CAST(:now AS timestamptz),
               enqueued_at = CAST(:now AS timestamptz),
               locked_until = NULL, deferred_since = NULL, processed_at = NULL
          FROM wanted AS w
         WHERE i.id = w.wanted_id AND i.status IN ('quarantined', 'dead')
        RETURNING i.id, i.partner, i.event_id
    )
    SELECT w.wanted_id, cur.status AS current_status, r.id AS replayed_id, r.partner, r.event_id
      FROM wanted AS w
      LEFT JOIN inbox AS cur ON cur.id = w.wanted_id
      LEFT JOIN replayed AS r ON r.id = w.wanted_id",
);

/// Puts a `quarantined` or `dead` row back to `pending` (due and enqueued at
/// `now`) in ONE statement, for the operator's replay after fixing the cause.
/// The caller then sends the row's queue message; if that send fails, the
/// sweeper enqueues the row later. `attempts` keeps counting (claim tokens
/// rely on it never going back) and `last_error` stays until the row is
/// processed. Of two concurrent replays of one row, one replays it and the
/// other gets [`Replay::NotReplayable`].
pub async fn replay(db: &dyn Executor, id: Uuid, now: DateTime<Utc>) -> Result<Replay, DbError> {
    let row = fetch_one(db, &REPLAY, &params! { "id" => id, "now" => now }).await?;
    if let Some(replayed) = row.opt_uuid("replayed_id")? {
        let previous = row.text("current_status")?;
        return Ok(Replay::Replayed {
            id: replayed,
            partner: row.text("partner")?,
            event_id: row.text("event_id")?,
            previous: parse_status(&row, "current_status", &previous)?,
        });
    }
    Ok(match row.opt_text("current_status")? {
        None => Replay::Missing { id },
        Some(status) => Replay::NotReplayable {
            id,
            status: parse_status(&row, "current_status", &status)?,
        },
    })
}

pub const GET: Statement = Statement::new(
    "inbox.get",
    concat!("SELECT ", inbox_columns!(""), " FROM inbox WHERE id = :id"),
);

/// One row by id.
pub async fn get(db: &dyn Executor, id: Uuid) -> Result<Option<InboxRow>, DbError> {
    fetch_optional(db, &GET, &params! { "id" => id })
        .await?
        .as_ref()
        .map(inbox_row)
        .transpose()
}

pub(super) fn parse_status(r: &Row, column: &str, s: &str) -> Result<InboxStatus, DbError> {
    s.parse()
        .map_err(|e: super::UnknownStatus| DbError::Decode {
            statement: r.statement(),
            column: column.into(),
            detail: e.to_string(),
        })
}

/// The body columns of a row read with [`inbox_columns`].
fn row_body(r: &Row) -> Result<Body, DbError> {
    if let Some(key) = r.opt_text("body_key")? {
        let key = BlobKey::parse(&key).map_err(|e| DbError::Decode {
            statement: r.statement(),
            column: "body_key".into(),
            detail: e.to_string(),
        })?;
        let sha256: [u8; 32] =
            r.bytes("body_sha256")?
                .try_into()
                .map_err(|b: Vec<u8>| DbError::Decode {
                    statement: r.statement(),
                    column: "body_sha256".into(),
                    detail: format!("{} bytes, a sha256 has 32", b.len()),
                })?;
        let size = u64::try_from(r.i64("body_size")?).map_err(|_| DbError::Decode {
            statement: r.statement(),
            column: "body_size".into(),
            detail: "negative".into(),
        })?;
        return Ok(Body::Blob(BlobRef { key, size, sha256 }));
    }
    match r.opt_bytes("body")? {
        Some(bytes) => Ok(Body::Inline(bytes)),
        None => {
            let size = r.i64("inline_body_size")?;
            Ok(Body::InlineUnread {
                size: u64::try_from(size).unwrap_or(0),
            })
        }
    }
}

/// Reads an inbox row from a result of [`inbox_columns`].
pub(super) fn inbox_row(r: &Row) -> Result<InboxRow, DbError> {
    let status = r.text("status")?;
    Ok(InboxRow {
        id: r.uuid("id")?,
        partner: r.text("partner")?,
        event_id: r.text("event_id")?,
        event_id_derived: r.bool("event_id_derived")?,
        event_type: r.opt_text("event_type")?,
        ordering_key: r.opt_text("ordering_key")?,
        body: row_body(r)?,
        headers: r.json("headers")?,
        signature_verified: r.bool("signature_verified")?,
        status: parse_status(r, "status", &status)?,
        attempts: r.i64("attempts")?,
        next_attempt_at: r.opt_timestamp("next_attempt_at")?,
        locked_until: r.opt_timestamp("locked_until")?,
        last_error: r.opt_text("last_error")?,
        received_at: r.timestamp("received_at")?,
        enqueued_at: r.opt_timestamp("enqueued_at")?,
        deferred_since: r.opt_timestamp("deferred_since")?,
        processed_at: r.opt_timestamp("processed_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_return_inline_bodies_only_up_to_the_chunk_size() {
        let bound = format!(
            "octet_length((f.claimed).body) <= {} THEN",
            super::super::body::READ_CHUNK_BYTES
        );
        assert!(CLAIM.sql.contains(&bound), "{}", CLAIM.sql);
        assert!(
            GET.sql.contains(&bound.replace("(f.claimed).", "")),
            "{}",
            GET.sql
        );
    }
}
