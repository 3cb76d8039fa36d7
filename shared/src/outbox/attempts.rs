//! The attempt log (`outbox_attempt_log`, migrations 12 and 17): every
//! delivery attempt, written by the statement that records its batch's
//! results ([`super::repo::RECORD_AND_CLAIM`], [`super::repo::RECORD_RESULTS`]):
//! attempts that did not deliver as rows of `outbox_attempts`, the attempt
//! that delivered a row on that row (`last_attempted_at`, `last_status_code`,
//! `last_latency_ms`, `last_error`, `last_response`), so a healthy
//! destination's deliveries add no row. Replay and retention move a
//! delivered row's attempt into `outbox_attempts` before they change or
//! remove the row. Read by `hookbox outbox attempts <id>` and the admin
//! page; `outbox_attempts` is purged by its own retention
//! (`HOOKBOX_ATTEMPT_RETENTION_DAYS`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::params;
use crate::store::{DbError, Executor, Statement};

/// One logged attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The delivery (outbox row, its `webhook-id`).
    pub outbox_id: Uuid,
    /// Its attempt number (1 for the first).
    pub attempt: i64,
    /// When the request started (or, for an attempt that sent nothing, when
    /// it was recorded).
    pub attempted_at: DateTime<Utc>,
    /// The destination.
    pub destination: String,
    /// The HTTP status (`None`: no answer).
    pub status_code: Option<i64>,
    /// Time to the answer or the failure, milliseconds.
    pub latency_ms: Option<i64>,
    /// What failed.
    pub error: Option<String>,
    /// The start of the response body (1 KiB).
    pub response_excerpt: Option<String>,
}

/// Most attempts [`of`] returns.
pub const MAX_LISTED: i64 = 1_000;

pub const OF: Statement = Statement::new(
    "outbox.attempts_of",
    "SELECT outbox_id, attempt, attempted_at, destination, status_code, latency_ms, error,
            response_excerpt
       FROM outbox_attempt_log WHERE outbox_id = CAST(:id AS uuid)
      ORDER BY attempted_at, attempt LIMIT :limit",
);

/// Every logged attempt of delivery `id`, oldest first (at most
/// [`MAX_LISTED`]).
pub async fn of(db: &dyn Executor, id: Uuid) -> Result<Vec<Attempt>, DbError> {
    db.execute(&OF, &params! { "id" => id, "limit" => MAX_LISTED })
        .await?
        .rows
        .iter()
        .map(|r| {
            Ok(Attempt {
                outbox_id: r.uuid("outbox_id")?,
                attempt: r.i64("attempt")?,
                attempted_at: r.timestamp("attempted_at")?,
                destination: r.text("destination")?,
                status_code: r.opt_i64("status_code")?,
                latency_ms: r.opt_i64("latency_ms")?,
                error: r.opt_text("error")?,
                response_excerpt: r.opt_text("response_excerpt")?,
            })
        })
        .collect()
}

pub const PURGE: Statement = Statement::new(
    "outbox.attempts_purge",
    "DELETE FROM outbox_attempts
      WHERE ctid = ANY(ARRAY(SELECT ctid FROM outbox_attempts
                              WHERE attempted_at < CAST(:before AS timestamptz)
                              LIMIT :limit))",
);

/// Deletes up to `limit` attempts older than `before` (found through the
/// BRIN index on `attempted_at`; attempt rows are never updated, so their
/// row addresses hold for the statement); how many.
pub async fn purge(db: &dyn Executor, before: DateTime<Utc>, limit: i64) -> Result<u64, DbError> {
    Ok(db
        .execute(&PURGE, &params! { "before" => before, "limit" => limit })
        .await?
        .affected)
}
