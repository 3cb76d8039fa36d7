//! Bulk replay: one destination's delivered or dead rows created in a time
//! range, put back to pending (due at once, attempts reset to 0), a bounded
//! page per statement. The relay delivers them again under the same
//! `webhook-id` (receivers that kept it ignore the copy); an ordered
//! destination gets each aggregate's replayed rows in their order, before
//! its newer ones. Pending rows are left alone (they are on their way).
//!
//! Pages walk `outbox_destination_created` (migration 15) in
//! `(created_at, seq)` order, so each costs O(page) whatever the range holds.

use chrono::{DateTime, Utc};

use super::{OutboxCursor, page_limit};
use crate::outbox::OutboxStatus;
use crate::params;
use crate::store::{DbError, Executor, Params, Statement, fetch_one};

/// Which rows a replay takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRange {
    /// The destination.
    pub destination: String,
    /// Rows created at or after this.
    pub since: DateTime<Utc>,
    /// Rows created before this (`None`: up to now).
    pub until: Option<DateTime<Utc>>,
    /// Statuses replayed (`delivered`, `dead`; `pending` never changes).
    pub statuses: Vec<OutboxStatus>,
}

impl ReplayRange {
    fn params(&self) -> Params {
        let statuses: Vec<&str> = self
            .statuses
            .iter()
            .filter(|s| **s != OutboxStatus::Pending)
            .map(|s| s.as_str())
            .collect();
        params! {
            "destination" => self.destination.clone(),
            "since" => self.since,
            "until" => self.until,
            "statuses" => serde_json::Value::from(statuses),
        }
    }
}

/// One page of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayPage {
    /// Rows of the range the page looked at (any status).
    pub seen: u64,
    /// Of those, put back to pending.
    pub replayed: u64,
    /// Where the next page starts (`None`: the range is done).
    pub next: Option<OutboxCursor>,
}

macro_rules! in_range {
    () => {
        "o.destination = :destination
         AND o.created_at >= CAST(:since AS timestamptz)
         AND (CAST(:until AS timestamptz) IS NULL OR o.created_at < CAST(:until AS timestamptz))"
    };
}

pub const OUTBOX_REPLAY_COUNT: Statement = Statement::new(
    "admin.outbox_replay_count",
    concat!(
        "SELECT count(*) AS n FROM outbox AS o WHERE ",
        in_range!(),
        " AND o.status IN (SELECT jsonb_array_elements_text(CAST(:statuses AS jsonb)))"
    ),
);

/// Rows a replay of `range` would put back to pending now (for progress).
pub async fn count_replayable(db: &dyn Executor, range: &ReplayRange) -> Result<u64, DbError> {
    let n = fetch_one(db, &OUTBOX_REPLAY_COUNT, &range.params())
        .await?
        .i64("n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub const OUTBOX_DESTINATION_HAS_ROWS: Statement = Statement::new(
    "admin.outbox_destination_has_rows",
    "SELECT EXISTS (SELECT 1 FROM outbox WHERE destination = :destination) AS known",
);

/// Whether any outbox row (of any status and time) is for `destination`.
pub async fn destination_has_rows(db: &dyn Executor, destination: &str) -> Result<bool, DbError> {
    fetch_one(
        db,
        &OUTBOX_DESTINATION_HAS_ROWS,
        &params! { "destination" => destination },
    )
    .await?
    .bool("known")
}

pub const OUTBOX_REPLAY_PAGE: Statement = Statement::new(
    "admin.outbox_replay_page",
    concat!(
        "WITH page AS (
            SELECT o.id, o.created_at, o.seq, o.status
              FROM outbox AS o
             WHERE ",
        in_range!(),
        "      AND o.created_at >= CAST(:after_at AS timestamptz)
               AND (o.created_at > CAST(:after_at AS timestamptz) OR o.seq > :after_seq)
             ORDER BY o.created_at, o.seq
             LIMIT :limit
        ), replayed AS (
            UPDATE outbox AS o
               SET status = 'pending',
                   attempts = 0,
                   next_attempt_at = CAST(:now AS timestamptz),
                   locked_until = NULL, locked_by = NULL, processed_at = NULL
              FROM page AS p
             WHERE o.id = p.id
               AND p.status IN (SELECT jsonb_array_elements_text(CAST(:statuses AS jsonb)))
            RETURNING o.id
        ), last AS (
            SELECT p.created_at, p.seq FROM page AS p
             ORDER BY p.created_at DESC, p.seq DESC LIMIT 1
        )
        SELECT (SELECT count(*) FROM page) AS seen,
               (SELECT count(*) FROM replayed) AS replayed,
               (SELECT created_at FROM last) AS last_at,
               (SELECT seq FROM last) AS last_seq"
    ),
);

/// Replays the next page of `range` after `after` (at most `limit` rows,
/// capped at [`super::MAX_PAGE`]), in ONE statement: its delivered or dead
/// rows (those of `range.statuses`) are pending again, due at `now`,
/// attempts 0. Walk from [`OutboxCursor::start`] until `next` is `None`.
pub async fn replay_page(
    db: &dyn Executor,
    range: &ReplayRange,
    after: OutboxCursor,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<ReplayPage, DbError> {
    let limit = page_limit(limit);
    let params = range
        .params()
        .with("after_at", after.created_at)
        .with("after_seq", after.seq)
        .with("limit", limit)
        .with("now", now);
    let row = fetch_one(db, &OUTBOX_REPLAY_PAGE, &params).await?;
    let seen = u64::try_from(row.i64("seen")?).unwrap_or(0);
    let next = match (row.opt_timestamp("last_at")?, row.opt_i64("last_seq")?) {
        (Some(created_at), Some(seq)) if seen as i64 == limit => {
            Some(OutboxCursor { created_at, seq })
        }
        _ => None,
    };
    Ok(ReplayPage {
        seen,
        replayed: u64::try_from(row.i64("replayed")?).unwrap_or(0),
        next,
    })
}
