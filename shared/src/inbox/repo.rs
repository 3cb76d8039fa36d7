//! Inbox statements. Every function runs ONE statement through the database
//! port (the same SQL text on every adapter) and takes the time from its
//! caller, so tests control the clock.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::body::Body;
use super::{InboxRow, InboxStatus};
use crate::blob::{BlobKey, BlobRef};
use crate::params;
use crate::store::{
    DbError, Executor, Params, Retention, Row, Statement, Value, fetch_one, fetch_optional,
};

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
fn with_body(params: Params, body: &Body) -> Params {
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

/// Every inbox column a reader needs, with the body bounded: an inline body
/// over [`super::body::READ_CHUNK_BYTES`] (a row from before bodies went to the blob
/// store) comes back as NULL with its size, so no row of any statement
/// passes the Data API's 64 KB (`inline_body_size` tells [`inbox_row`] to
/// read it in pieces).
macro_rules! inbox_columns {
    ($t:literal) => {
        concat!(
            $t,
            "id, ",
            $t,
            "partner, ",
            $t,
            "event_id, ",
            $t,
            "event_id_derived, ",
            $t,
            "event_type, ",
            $t,
            "ordering_key, ",
            "CASE WHEN octet_length(",
            $t,
            "body) <= 40960 THEN ",
            $t,
            "body END AS body, ",
            "octet_length(",
            $t,
            "body) AS inline_body_size, ",
            $t,
            "body_key, ",
            $t,
            "body_size, ",
            $t,
            "body_sha256, ",
            $t,
            "headers, ",
            $t,
            "signature_verified, ",
            $t,
            "status, ",
            $t,
            "attempts, ",
            $t,
            "next_attempt_at, ",
            $t,
            "locked_until, ",
            $t,
            "last_error, ",
            $t,
            "received_at, ",
            $t,
            "enqueued_at, ",
            $t,
            "deferred_since, ",
            $t,
            "processed_at"
        )
    };
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
    SELECT id, false AS inserted FROM inbox
     WHERE partner = :partner
       AND (event_id = :event_id OR dedupe_digest = CAST(:dedupe_digest AS bytea))",
);

pub const FIND_BY_KEY: Statement = Statement::new(
    "inbox.find_by_key",
    "SELECT id FROM inbox
      WHERE partner = :partner
        AND (event_id = :event_id OR dedupe_digest = CAST(:dedupe_digest AS bytea))
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
    let row = fetch_one(
        db,
        &FIND_BY_KEY,
        &params! {
            "partner" => event.partner.as_str(), "event_id" => event.event_id.as_str(),
            "dedupe_digest" => digest,
        },
    )
    .await?;
    Ok(Inserted::Duplicate(row.uuid("id")?))
}

/// Proof that a processor holds a row: its id and the attempt number its
/// claim gave it. Status changes succeed only while the row is still
/// `processing` under that same attempt, so a worker whose lease expired and
/// whose row was claimed again cannot overwrite the newer outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimToken {
    /// The row.
    pub id: Uuid,
    /// The `attempts` value set by the claim.
    pub attempt: i64,
}

/// Outcome of a claim for one requested id.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Leased to us: process it.
    Claimed {
        /// The row as it is now (status processing).
        row: Box<InboxRow>,
        /// What proves the lease in later status changes.
        token: ClaimToken,
    },
    /// Finished already (processed, quarantined or dead): acknowledge.
    Finished {
        /// The row.
        id: Uuid,
        /// Its status.
        status: InboxStatus,
    },
    /// Another worker holds an unexpired lease: retry later.
    Busy {
        /// The row.
        id: Uuid,
    },
    /// No such row (e.g. deleted by retention).
    Missing {
        /// The requested id.
        id: Uuid,
    },
    /// The row was leased (when `token` is set) but cannot be read: the
    /// caller deals with it alone (retry, then quarantine) while the other
    /// rows of the claim proceed.
    Unreadable {
        /// The row.
        id: Uuid,
        /// The lease, when the claim took one.
        token: Option<ClaimToken>,
        /// What could not be read.
        error: String,
    },
}

impl Claim {
    /// The row the claim is about.
    pub fn id(&self) -> Uuid {
        match self {
            Claim::Claimed { token, .. } => token.id,
            Claim::Finished { id, .. }
            | Claim::Busy { id }
            | Claim::Missing { id }
            | Claim::Unreadable { id, .. } => *id,
        }
    }
}

/// Most ids per [`claim`]: every returned row is under 64 KB by
/// construction (at most about 59 KB), so 10 of them (an SQS batch) stay
/// well under the Data API's 1 MiB response.
pub const MAX_CLAIM_IDS: usize = 10;

pub const CLAIM: Statement = Statement::new(
    "inbox.claim",
    concat!(
        "WITH wanted AS (
        SELECT DISTINCT CAST(value AS uuid) AS wanted_id
        FROM jsonb_array_elements_text(CAST(:ids AS jsonb))
    ), free AS (
        -- a row another transaction holds locked (a processor committing
        -- it, a replay, the sweeper) is skipped, not waited for: it comes
        -- back as busy and the other rows proceed
        SELECT f.id FROM inbox AS f
         WHERE f.id = ANY (ARRAY(SELECT wanted_id FROM wanted))
           FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE inbox AS i
           SET status = 'processing',
               attempts = i.attempts + 1,
               locked_until = CAST(:lease_until AS timestamptz),
               locked_by = CAST(:claimer AS uuid),
               next_attempt_at = CAST(:lease_until AS timestamptz)
         WHERE i.id = ANY (ARRAY(SELECT id FROM free))
           -- a CASE, not OR/IN: the planner must not trade the key lookup
           -- for a scan of every active row (the partial indexes)
           AND CASE WHEN i.status IN ('pending', 'deferred') THEN true
                    -- an expired lease, or one this claimer took (a retried
                    -- claim whose first try committed its leases but could
                    -- not return them)
                    WHEN i.status = 'processing'
                        THEN i.locked_until <= CAST(:now AS timestamptz)
                          OR i.locked_by = CAST(:claimer AS uuid)
                    ELSE false END
        RETURNING i.*
    )
    SELECT w.wanted_id,
           (SELECT cur.status FROM inbox AS cur WHERE cur.id = w.wanted_id) AS current_status,
           ",
        inbox_columns!("c."),
        "
      FROM wanted AS w
      LEFT JOIN claimed AS c ON c.id = w.wanted_id"
    ),
);

/// Leases the rows with these ids in ONE statement: pending and deferred
/// rows, and processing rows whose lease expired, become `processing` until
/// `lease_until` with `attempts + 1`. A row another transaction holds locked
/// is not waited for: it is [`Claim::Busy`] (or finished, by its status).
/// Returns one [`Claim`] per distinct id;
/// a row that cannot be decoded is [`Claim::Unreadable`], not an error of
/// the whole claim. Callers keep a claim to [`MAX_CLAIM_IDS`] ids, so its
/// response stays under the Data API's 1 MiB.
pub async fn claim(
    db: &dyn Executor,
    ids: &[Uuid],
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<Claim>, DbError> {
    claim_as(db, Uuid::new_v4(), ids, now, lease_until).await
}

/// [`claim`] under the caller's `claimer` token: rows this claimer already
/// holds are claimed again (with `attempts + 1`). That is how a caller
/// recovers from a claim that committed its leases but could not return its
/// rows: it claims the same ids again with the same token (and
/// [`release_lease`] gives back the leases of rows it cannot read).
pub async fn claim_as(
    db: &dyn Executor,
    claimer: Uuid,
    ids: &[Uuid],
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Vec<Claim>, DbError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids_json = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>());
    let rows = db
        .execute(
            &CLAIM,
            &params! {
                "ids" => ids_json, "now" => now, "lease_until" => lease_until,
                "claimer" => claimer,
            },
        )
        .await?
        .rows;
    rows.iter()
        .map(|r| {
            let id = r.uuid("wanted_id")?;
            if r.opt_uuid("id")?.is_some() {
                let row = match inbox_row(r) {
                    Ok(row) => Box::new(row),
                    Err(e) => {
                        let token = r
                            .i64("attempts")
                            .ok()
                            .map(|attempt| ClaimToken { id, attempt });
                        return Ok(Claim::Unreadable {
                            id,
                            token,
                            error: e.to_string(),
                        });
                    }
                };
                let token = ClaimToken {
                    id,
                    attempt: row.attempts,
                };
                return Ok(Claim::Claimed { row, token });
            }
            let Some(status) = r.opt_text("current_status")? else {
                return Ok(Claim::Missing { id });
            };
            let status = parse_status(r, "current_status", &status)?;
            Ok(if status.is_active() {
                Claim::Busy { id }
            } else {
                Claim::Finished { id, status }
            })
        })
        .collect()
}

pub const MARK_PROCESSED: Statement = Statement::new(
    "inbox.mark_processed",
    "UPDATE inbox
        SET status = 'processed', processed_at = CAST(:now AS timestamptz),
            next_attempt_at = NULL, locked_until = NULL, deferred_since = NULL, last_error = NULL
      WHERE id = :id AND status = 'processing' AND attempts = :attempt",
);

pub const MARK_DEFERRED: Statement = Statement::new(
    "inbox.mark_deferred",
    "UPDATE inbox
        SET status = 'deferred', next_attempt_at = CAST(:next_attempt_at AS timestamptz),
            locked_until = NULL, last_error = :reason,
            deferred_since = coalesce(deferred_since, CAST(:now AS timestamptz))
      WHERE id = :id AND status = 'processing' AND attempts = :attempt",
);

pub const MARK_RETRY: Statement = Statement::new(
    "inbox.mark_retry",
    "UPDATE inbox
        SET status = 'pending', next_attempt_at = CAST(:next_attempt_at AS timestamptz),
            locked_until = NULL, last_error = :error
      WHERE id = :id AND status = 'processing' AND attempts = :attempt",
);

pub const MARK_QUARANTINED: Statement = Statement::new(
    "inbox.mark_quarantined",
    "UPDATE inbox
        SET status = 'quarantined', next_attempt_at = NULL, locked_until = NULL,
            last_error = :reason, processed_at = CAST(:now AS timestamptz)
      WHERE id = :id AND status = 'processing' AND attempts = :attempt",
);

pub const MARK_DEAD: Statement = Statement::new(
    "inbox.mark_dead",
    "UPDATE inbox
        SET status = 'dead', next_attempt_at = NULL, locked_until = NULL,
            last_error = :error, processed_at = CAST(:now AS timestamptz)
      WHERE id = :id AND status = 'processing' AND attempts = :attempt",
);

/// Longest `last_error` written (bytes; the row budget): longer texts are
/// cut at a character boundary and end with `…`.
pub const MAX_LAST_ERROR_BYTES: usize = 8 * 1024;

/// `text` within [`MAX_LAST_ERROR_BYTES`].
fn bounded(text: &str) -> String {
    crate::store::cut_to(text, MAX_LAST_ERROR_BYTES)
}

async fn changed(
    db: &dyn Executor,
    statement: &Statement,
    params: Params,
) -> Result<bool, DbError> {
    Ok(db.execute(statement, &params).await?.affected == 1)
}

/// `processing` → `processed`. False when the lease was lost (the caller
/// must roll back its transaction).
pub async fn mark_processed(
    db: &dyn Executor,
    token: ClaimToken,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    changed(
        db,
        &MARK_PROCESSED,
        params! { "id" => token.id, "attempt" => token.attempt, "now" => now },
    )
    .await
}

/// `processing` → `deferred` until `next_attempt_at`, keeping the start of
/// the current run of deferrals. False when the lease was lost.
pub async fn mark_deferred(
    db: &dyn Executor,
    token: ClaimToken,
    now: DateTime<Utc>,
    next_attempt_at: DateTime<Utc>,
    reason: &str,
) -> Result<bool, DbError> {
    changed(
        db,
        &MARK_DEFERRED,
        params! {
            "id" => token.id, "attempt" => token.attempt, "now" => now,
            "next_attempt_at" => next_attempt_at, "reason" => bounded(reason),
        },
    )
    .await
}

/// `processing` → `pending` again after a retryable failure, due at
/// `next_attempt_at`. False when the lease was lost.
pub async fn mark_retry(
    db: &dyn Executor,
    token: ClaimToken,
    next_attempt_at: DateTime<Utc>,
    error: &str,
) -> Result<bool, DbError> {
    changed(
        db,
        &MARK_RETRY,
        params! {
            "id" => token.id, "attempt" => token.attempt,
            "next_attempt_at" => next_attempt_at, "error" => bounded(error),
        },
    )
    .await
}

/// `processing` → `quarantined` (poison pill). False when the lease was lost.
pub async fn mark_quarantined(
    db: &dyn Executor,
    token: ClaimToken,
    now: DateTime<Utc>,
    reason: &str,
) -> Result<bool, DbError> {
    changed(
        db,
        &MARK_QUARANTINED,
        params! { "id" => token.id, "attempt" => token.attempt, "now" => now, "reason" => bounded(reason) },
    )
    .await
}

/// `processing` → `dead` (the queue is about to give up on the message).
/// False when the lease was lost.
pub async fn mark_dead(
    db: &dyn Executor,
    token: ClaimToken,
    now: DateTime<Utc>,
    error: &str,
) -> Result<bool, DbError> {
    changed(
        db,
        &MARK_DEAD,
        params! { "id" => token.id, "attempt" => token.attempt, "now" => now, "error" => bounded(error) },
    )
    .await
}

pub const RELEASE_LEASE: Statement = Statement::new(
    "inbox.release_lease",
    "UPDATE inbox
        SET status = 'pending', locked_until = NULL, locked_by = NULL,
            next_attempt_at = CAST(:next_attempt_at AS timestamptz)
      WHERE id = :id AND status = 'processing' AND locked_by = CAST(:claimer AS uuid)",
);

/// Gives back the lease `claimer` took on row `id`, if it took one: for a
/// claim that failed after committing (its rows could not be returned), so
/// the row is not held until the lease expires. The row is `pending` again,
/// due at `next_attempt_at`. True when a lease was given back.
pub async fn release_lease(
    db: &dyn Executor,
    claimer: Uuid,
    id: Uuid,
    next_attempt_at: DateTime<Utc>,
) -> Result<bool, DbError> {
    changed(
        db,
        &RELEASE_LEASE,
        params! { "id" => id, "claimer" => claimer, "next_attempt_at" => next_attempt_at },
    )
    .await
}

pub const QUARANTINE_UNREADABLE: Statement = Statement::new(
    "inbox.quarantine_unreadable",
    "UPDATE inbox
        SET status = 'quarantined', next_attempt_at = NULL, locked_until = NULL,
            attempts = attempts + 1, last_error = :reason,
            processed_at = CAST(:now AS timestamptz)
      WHERE id = :id AND status IN ('pending', 'processing', 'deferred')",
);

/// Quarantines an active row that no claim can return (its claim fails on
/// its own, every time), without reading it. True when it was active.
pub async fn quarantine_unreadable(
    db: &dyn Executor,
    id: Uuid,
    now: DateTime<Utc>,
    reason: &str,
) -> Result<bool, DbError> {
    changed(
        db,
        &QUARANTINE_UNREADABLE,
        params! { "id" => id, "now" => now, "reason" => bounded(reason) },
    )
    .await
}

/// A row the sweeper must enqueue again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrandedRow {
    /// The row.
    pub id: Uuid,
    /// Its partner.
    pub partner: String,
    /// Its event id.
    pub event_id: String,
}

pub const SWEEP_STRANDED: Statement = Statement::new(
    "inbox.sweep_stranded",
    "WITH stranded AS (
        SELECT id FROM inbox
         WHERE status IN ('pending', 'processing', 'deferred')
           AND next_attempt_at <= CAST(:cutoff AS timestamptz)
           -- not re-sent every grace period while its message merely waits
           -- behind a backlog: the pause since the last send must also be
           -- as long as the row had waited before it (doubling: 5, 10, 20,
           -- 40 min...), at most an hour
           AND (enqueued_at IS NULL
                OR (enqueued_at <= CAST(:cutoff AS timestamptz)
                    AND CAST(:now AS timestamptz) - enqueued_at
                        >= LEAST(enqueued_at - received_at, INTERVAL '1 hour')))
         ORDER BY next_attempt_at
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    )
    UPDATE inbox AS i SET enqueued_at = CAST(:now AS timestamptz)
      FROM stranded AS s
     WHERE i.id = s.id
    RETURNING i.id, i.partner, i.event_id, i.next_attempt_at",
);

/// Finds active rows overdue by more than `grace` (pending rows the queue
/// never delivered, deferred rows whose retry never came, processing rows
/// whose lease expired long ago) and not enqueued within `grace`, nor within
/// the time the row had waited before its last send (at most an hour: a row
/// whose message is merely queued behind a slow processor is sent again at
/// 5, 10, 20, 40, 80 minutes, then hourly, not every 5 minutes), marks them
/// enqueued at `now` and returns them, oldest due first, at most `limit`.
/// One statement; concurrent sweepers skip each other's rows.
pub async fn sweep_stranded(
    db: &dyn Executor,
    now: DateTime<Utc>,
    grace: chrono::Duration,
    limit: i64,
) -> Result<Vec<StrandedRow>, DbError> {
    let rows = db
        .execute(
            &SWEEP_STRANDED,
            &params! { "now" => now, "cutoff" => now - grace, "limit" => limit },
        )
        .await?
        .rows;
    let mut out: Vec<(DateTime<Utc>, StrandedRow)> = rows
        .iter()
        .map(|r| {
            Ok((
                r.timestamp("next_attempt_at")?,
                StrandedRow {
                    id: r.uuid("id")?,
                    partner: r.text("partner")?,
                    event_id: r.text("event_id")?,
                },
            ))
        })
        .collect::<Result<_, DbError>>()?;
    out.sort_by_key(|(due, row)| (*due, row.id));
    Ok(out.into_iter().map(|(_, row)| row).collect())
}

pub const COUNTS: Statement = Statement::new(
    "inbox.counts_by_status",
    "SELECT status, count(*) AS n FROM inbox GROUP BY status",
);

/// Rows per status; every status is present (zero when none).
pub async fn counts_by_status(db: &dyn Executor) -> Result<HashMap<InboxStatus, i64>, DbError> {
    let rows = db.execute(&COUNTS, &params! {}).await?.rows;
    let mut out: HashMap<InboxStatus, i64> = InboxStatus::ALL.iter().map(|s| (*s, 0)).collect();
    for r in &rows {
        let status = parse_status(r, "status", &r.text("status")?)?;
        out.insert(status, r.i64("n")?);
    }
    Ok(out)
}

pub const OLDEST_ACTIVE: Statement = Statement::new(
    "inbox.oldest_active",
    "SELECT min(received_at) AS oldest FROM inbox
      WHERE status IN ('pending', 'processing', 'deferred')",
);

/// `received_at` of the oldest row not yet finished (pending, processing or
/// deferred), if any. Its age is the inbox lag.
pub async fn oldest_active_received_at(
    db: &dyn Executor,
) -> Result<Option<DateTime<Utc>>, DbError> {
    fetch_one(db, &OLDEST_ACTIVE, &params! {})
        .await?
        .opt_timestamp("oldest")
}

pub const PURGE_DELETE: Statement = Statement::new(
    "inbox.purge_delete",
    "WITH old AS (
        SELECT id FROM inbox
         WHERE status = 'processed' AND received_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM inbox AS i USING old WHERE i.id = old.id RETURNING i.body_key
    ), queued AS (
        INSERT INTO blob_deletions (key)
        SELECT DISTINCT body_key FROM deleted WHERE body_key IS NOT NULL
        ON CONFLICT (key) DO NOTHING
    )
    SELECT count(*) AS purged FROM deleted",
);

pub const PURGE_ARCHIVE: Statement = Statement::new(
    "inbox.purge_archive",
    "WITH old AS (
        SELECT id FROM inbox
         WHERE status = 'processed' AND received_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), moved AS (
        DELETE FROM inbox AS i USING old WHERE i.id = old.id RETURNING i.*
    )
    INSERT INTO inbox_archive SELECT * FROM moved",
);

/// Deletes (or archives) at most `limit` processed rows received before
/// `cutoff`; returns how many. Call repeatedly until it returns less than
/// `limit`. Quarantined and dead rows are kept: they wait for an operator.
/// One statement. Deleting queues the blob keys of the deleted rows in
/// `blob_deletions` (the relay's retention deletes the objects no row
/// refers to any more); archived rows keep their references, and so their
/// objects.
pub async fn purge_finished(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    limit: i64,
    mode: Retention,
) -> Result<u64, DbError> {
    let params = params! { "cutoff" => cutoff, "limit" => limit };
    match mode {
        Retention::Delete => {
            let purged = fetch_one(db, &PURGE_DELETE, &params).await?.i64("purged")?;
            Ok(u64::try_from(purged).unwrap_or(0))
        }
        Retention::Archive => Ok(db.execute(&PURGE_ARCHIVE, &params).await?.affected),
    }
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

fn parse_status(r: &Row, column: &str, s: &str) -> Result<InboxStatus, DbError> {
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
fn inbox_row(r: &Row) -> Result<InboxRow, DbError> {
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
    fn last_errors_are_bounded_on_a_char_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_LAST_ERROR_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_LAST_ERROR_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.len() > MAX_LAST_ERROR_BYTES - 8);
    }

    #[test]
    fn readers_return_inline_bodies_only_up_to_the_chunk_size() {
        let bound = format!(
            "octet_length(c.body) <= {} THEN",
            super::super::body::READ_CHUNK_BYTES
        );
        assert!(CLAIM.sql.contains(&bound), "{}", CLAIM.sql);
        assert!(GET.sql.contains(&bound.replace("c.", "")), "{}", GET.sql);
    }
}
