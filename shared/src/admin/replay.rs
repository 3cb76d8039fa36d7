//! Bulk replay: one destination's delivered or dead rows created in a time
//! range, put back to pending (due at once, attempts reset to 0), a bounded
//! page per statement. The relay delivers them again under the same
//! `webhook-id` (receivers that kept it ignore the copy); an ordered
//! destination gets each aggregate's replayed rows in their order, before
//! its newer ones. Pending rows are left alone (they are on their way).
//!
//! Delivered rows have no index by destination: one would cost every
//! delivery an index entry (a delivery is not a HOT update), for a
//! statement an operator runs now and then (migration 16 dropped version
//! 15's). So a replay first finds, in one statement, the `seq` span of the
//! destination's rows in the range (the BRIN index on `created_at`), then
//! walks that span through `outbox_seq_key`, a bounded number of rows (of
//! any destination) per statement, replaying the destination's: each page
//! is O(page), the walk O(rows written over the range's span). Exact
//! whatever the order rows were written in: every row of the range has its
//! `seq` inside the span.

use chrono::{DateTime, Utc};

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

/// Most rows a replay page looks at: it returns only counts (nothing of
/// the rows crosses the Data API), so pages may be larger than listings'.
pub const MAX_REPLAY_PAGE: i64 = 10_000;

/// Where a replay's walk stands: rows after `after_seq`, up to `last_seq`
/// (the last row of the range), are still to be looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWalk {
    /// Rows up to this `seq` were looked at.
    pub after_seq: i64,
    /// The range's last row.
    pub last_seq: i64,
}

/// What a replay of a range will do, from [`plan_replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayPlan {
    /// Rows it would put back to pending now (for progress).
    pub replayable: u64,
    /// Its walk (`None`: the destination has no row in the range).
    pub walk: Option<ReplayWalk>,
}

/// One page of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayPage {
    /// Rows the page looked at (of every destination: the page's cost).
    pub scanned: u64,
    /// Of those, rows of the range (any status).
    pub seen: u64,
    /// Of those, put back to pending.
    pub replayed: u64,
    /// Where the next page starts (`None`: the range is done).
    pub next: Option<ReplayWalk>,
}

macro_rules! in_range {
    ($t:literal) => {
        concat!(
            $t,
            ".destination = :destination AND ",
            $t,
            ".created_at >= CAST(:since AS timestamptz) AND (CAST(:until AS timestamptz) IS NULL OR ",
            $t,
            ".created_at < CAST(:until AS timestamptz))"
        )
    };
}

macro_rules! replayed_status {
    ($t:literal) => {
        concat!(
            $t,
            ".status IN (SELECT jsonb_array_elements_text(CAST(:statuses AS jsonb)))"
        )
    };
}

pub const OUTBOX_REPLAY_PLAN: Statement = Statement::new(
    "admin.outbox_replay_plan",
    concat!(
        "SELECT count(*) FILTER (WHERE ",
        replayed_status!("o"),
        ") AS n, min(o.seq) AS first_seq, max(o.seq) AS last_seq
           FROM outbox AS o WHERE ",
        in_range!("o")
    ),
);

/// How many rows a replay of `range` would put back to pending now, and
/// the span of rows its walk looks at: ONE statement, O(rows of the range)
/// (the BRIN index on `created_at`).
pub async fn plan_replay(db: &dyn Executor, range: &ReplayRange) -> Result<ReplayPlan, DbError> {
    let row = fetch_one(db, &OUTBOX_REPLAY_PLAN, &range.params()).await?;
    let walk = match (row.opt_i64("first_seq")?, row.opt_i64("last_seq")?) {
        (Some(first), Some(last)) => Some(ReplayWalk {
            after_seq: first - 1,
            last_seq: last,
        }),
        _ => None,
    };
    Ok(ReplayPlan {
        replayable: u64::try_from(row.i64("n")?).unwrap_or(0),
        walk,
    })
}

/// Rows a replay of `range` would put back to pending now (for progress).
pub async fn count_replayable(db: &dyn Executor, range: &ReplayRange) -> Result<u64, DbError> {
    Ok(plan_replay(db, range).await?.replayable)
}

pub const OUTBOX_DESTINATION_HAS_ROWS: Statement = Statement::new(
    "admin.outbox_destination_has_rows",
    "SELECT EXISTS (SELECT 1 FROM outbox
                     WHERE destination = :destination AND status IN ('pending', 'dead'))
            AS known",
);

/// Whether any pending or dead outbox row is for `destination` (the index
/// of undelivered rows; delivered rows have none by destination).
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
        "WITH scanned AS (
            SELECT o.id, o.seq, o.destination, o.created_at, o.status, o.attempts,
                   o.last_attempted_at, o.last_status_code, o.last_latency_ms, o.last_error,
                   o.last_response
              FROM outbox AS o
             WHERE o.seq > :after_seq AND o.seq <= :last_seq
             ORDER BY o.seq
             LIMIT :limit
        ), page AS (
            SELECT s.id FROM scanned AS s WHERE ",
        in_range!("s"),
        "
        ), replayed AS (
            UPDATE outbox AS o
               SET status = 'pending',
                   attempts = 0,
                   next_attempt_at = CAST(:now AS timestamptz),
                   locked_until = NULL, locked_by = NULL, processed_at = NULL
              FROM page AS p
             WHERE o.id = p.id AND ",
        replayed_status!("o"),
        "
            RETURNING o.id
        ), kept AS (
            -- a delivered row's delivering attempt is on the row (migration
            -- 17): into the attempt log with it before the row's next attempt
            INSERT INTO outbox_attempts (outbox_id, attempt, attempted_at, destination,
                                         status_code, latency_ms, error, response_excerpt)
            SELECT s.id, s.attempts, s.last_attempted_at, s.destination, s.last_status_code,
                   s.last_latency_ms, s.last_error, s.last_response
              FROM scanned AS s JOIN replayed AS r ON r.id = s.id
             WHERE s.status = 'delivered' AND s.last_attempted_at IS NOT NULL
        )
        SELECT (SELECT count(*) FROM scanned) AS scanned,
               (SELECT max(seq) FROM scanned) AS last_scanned,
               (SELECT count(*) FROM page) AS seen,
               (SELECT count(*) FROM replayed) AS replayed"
    ),
);

/// Replays the next page of `range`'s walk (at most `limit` rows looked
/// at, of any destination, capped at [`MAX_REPLAY_PAGE`]), in ONE
/// statement: the destination's delivered or dead rows (those of
/// `range.statuses`) among them are pending again, due at `now`, attempts
/// 0. Walk from [`plan_replay`]'s walk until `next` is `None`.
pub async fn replay_page(
    db: &dyn Executor,
    range: &ReplayRange,
    walk: ReplayWalk,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<ReplayPage, DbError> {
    let limit = limit.clamp(1, MAX_REPLAY_PAGE);
    let params = range
        .params()
        .with("after_seq", walk.after_seq)
        .with("last_seq", walk.last_seq)
        .with("limit", limit)
        .with("now", now);
    let row = fetch_one(db, &OUTBOX_REPLAY_PAGE, &params).await?;
    let count =
        |name: &str| -> Result<u64, DbError> { Ok(u64::try_from(row.i64(name)?).unwrap_or(0)) };
    let scanned = count("scanned")?;
    let next = match row.opt_i64("last_scanned")? {
        Some(last) if last < walk.last_seq && i64::try_from(scanned) == Ok(limit) => {
            Some(ReplayWalk {
                after_seq: last,
                last_seq: walk.last_seq,
            })
        }
        _ => None,
    };
    Ok(ReplayPage {
        scanned,
        seen: count("seen")?,
        replayed: count("replayed")?,
        next,
    })
}
