//! The lease lifecycle of an inbox row: the processor's claim (one
//! statement for a batch, under a claimer token), and the status changes
//! that end it, each guarded by the claim's token. Also how a claim that
//! committed but could not return its rows is recovered (`claim_as`,
//! `release_lease`) and a row no claim can return is quarantined.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::repo::{inbox_row, parse_status};
use super::{InboxRow, InboxStatus};
use crate::params;
use crate::store::{DbError, Executor, Params, Statement};

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
    // the claim itself is the function `inbox_claim` (migration 0014): its
    // planner settings keep the primary-key lookups whatever the inbox's
    // size when a connection planned it; here only the columns returned
    concat!(
        "SELECT f.wanted_id, f.current_status, ",
        inbox_columns!("(f.claimed)."),
        "
      FROM inbox_claim(CAST(:ids AS jsonb), CAST(:now AS timestamptz),
                       CAST(:lease_until AS timestamptz), CAST(:claimer AS uuid)) AS f"
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
pub(super) fn bounded(text: &str) -> String {
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
}
