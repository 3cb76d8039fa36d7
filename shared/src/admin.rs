//! Operator statements (the `hookbox` CLI): list inbox and outbox rows by
//! status with keyset paging, put dead outbox rows back to pending, and
//! replay a destination's rows of a time range (`replay`).
//!
//! Like the repositories, every function runs ONE statement through the
//! database port (the same SQL text on every adapter) and takes the time from
//! its caller. Each listing goes through an index that exists for its status
//! class (see `migrations/0001_inbox_outbox.sql`), so a page costs O(page)
//! however much history the tables hold:
//!
//! | rows | index | order |
//! | --- | --- | --- |
//! | inbox quarantined / dead | `inbox_attention` | `received_at, id` |
//! | inbox pending / processing / deferred | `inbox_active_received` | `received_at, id` |
//! | inbox processed | `inbox_pkey` (ids are UUIDv7: time ordered) | `id` |
//! | outbox dead | `outbox_dead` | `created_at, seq` |
//! | outbox pending | `outbox_pending_created` | `created_at, seq` |
//! | outbox delivered, or any status | `outbox_seq_key` | `seq` |
//! | outbox of one destination, a time range (replay) | `outbox_created_brin` for its span, then `outbox_seq_key` | `seq` |
//!
//! Each partial-index statement repeats the index's own predicate
//! (`status IN (…) AND status = :status`), so PostgreSQL can prove the index
//! applies even for a generic plan of the prepared statement.

mod replay;

pub use replay::{
    MAX_REPLAY_PAGE, OUTBOX_DESTINATION_HAS_ROWS, OUTBOX_REPLAY_PAGE, OUTBOX_REPLAY_PLAN,
    ReplayPage, ReplayPlan, ReplayRange, ReplayWalk, count_replayable, destination_has_rows,
    plan_replay, replay_page,
};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::inbox::InboxStatus;
use crate::outbox::OutboxStatus;
use crate::params;
use crate::store::{DbError, Executor, Params, Row, Statement};

/// Largest page any listing returns (bigger requests are clamped). A listed
/// row is at most about 3 KB (event id 512 B, event type 256 B, partner 64 B,
/// `last_error` cut to 500 characters; outbox text columns cut in the
/// statement), so a page stays under the Data API's 1 MiB response.
pub const MAX_PAGE: i64 = 250;

/// `last_error` is cut to this many characters in listings (`inbox::get`
/// and `outbox::get` return it whole); the statements say `left(last_error, 500)`.
pub const LISTED_ERROR_CHARS: usize = 500;

fn page_limit(limit: i64) -> i64 {
    limit.clamp(1, MAX_PAGE)
}

/// Where an inbox listing continues: after this row (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxCursor {
    /// `received_at` of the last row of the previous page.
    pub received_at: DateTime<Utc>,
    /// `id` of the last row of the previous page.
    pub id: Uuid,
}

impl InboxCursor {
    /// Before every row (the first page).
    pub fn start() -> Self {
        Self {
            received_at: DateTime::<Utc>::UNIX_EPOCH,
            id: Uuid::nil(),
        }
    }
}

/// Which inbox rows to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxFilter {
    /// Only rows with this status.
    pub status: InboxStatus,
    /// Only rows of this partner, when set.
    pub partner: Option<String>,
}

/// One line of an inbox listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxSummary {
    /// The row.
    pub id: Uuid,
    /// Partner name.
    pub partner: String,
    /// The partner's event id.
    pub event_id: String,
    /// Event type, if known.
    pub event_type: Option<String>,
    /// Status.
    pub status: InboxStatus,
    /// Processing attempts so far.
    pub attempts: i64,
    /// When ingest stored it.
    pub received_at: DateTime<Utc>,
    /// The last error, cut to [`LISTED_ERROR_CHARS`] characters.
    pub last_error: Option<String>,
}

impl InboxSummary {
    /// The cursor that continues after this row.
    pub fn cursor(&self) -> InboxCursor {
        InboxCursor {
            received_at: self.received_at,
            id: self.id,
        }
    }
}

pub const INBOX_LIST_ATTENTION: Statement = Statement::new(
    "admin.inbox_list_attention",
    "SELECT id, partner, event_id, event_type, status, attempts, received_at,
            left(last_error, 500) AS last_error
       FROM inbox
      WHERE status IN ('quarantined', 'dead') AND status = :status
        AND (CAST(:partner AS text) IS NULL OR partner = :partner)
        AND received_at >= CAST(:after_at AS timestamptz)
        AND (received_at > CAST(:after_at AS timestamptz) OR id > CAST(:after_id AS uuid))
      ORDER BY received_at, id
      LIMIT :limit",
);

pub const INBOX_LIST_ACTIVE: Statement = Statement::new(
    "admin.inbox_list_active",
    "SELECT id, partner, event_id, event_type, status, attempts, received_at,
            left(last_error, 500) AS last_error
       FROM inbox
      WHERE status IN ('pending', 'processing', 'deferred') AND status = :status
        AND (CAST(:partner AS text) IS NULL OR partner = :partner)
        AND received_at >= CAST(:after_at AS timestamptz)
        AND (received_at > CAST(:after_at AS timestamptz) OR id > CAST(:after_id AS uuid))
      ORDER BY received_at, id
      LIMIT :limit",
);

pub const INBOX_LIST_PROCESSED: Statement = Statement::new(
    "admin.inbox_list_processed",
    "SELECT id, partner, event_id, event_type, status, attempts, received_at,
            left(last_error, 500) AS last_error
       FROM inbox
      WHERE status = 'processed'
        AND (CAST(:partner AS text) IS NULL OR partner = :partner)
        AND id > CAST(:after_id AS uuid)
      ORDER BY id
      LIMIT :limit",
);

/// Up to `limit` (at most [`MAX_PAGE`]) inbox rows matching `filter`, after
/// `after` (use [`InboxCursor::start`] for the first page; continue with the
/// last row's [`InboxSummary::cursor`]). Oldest first: by `received_at`
/// (processed rows by their time-ordered id).
pub async fn list_inbox(
    db: &dyn Executor,
    filter: &InboxFilter,
    after: InboxCursor,
    limit: i64,
) -> Result<Vec<InboxSummary>, DbError> {
    let limit = page_limit(limit);
    let partner = filter.partner.clone();
    let (statement, params): (&Statement, Params) = match filter.status {
        InboxStatus::Processed => (
            &INBOX_LIST_PROCESSED,
            params! { "partner" => partner, "after_id" => after.id, "limit" => limit },
        ),
        status => (
            if status.is_active() {
                &INBOX_LIST_ACTIVE
            } else {
                &INBOX_LIST_ATTENTION
            },
            params! {
                "status" => status.as_str(), "partner" => partner,
                "after_at" => after.received_at, "after_id" => after.id, "limit" => limit,
            },
        ),
    };
    db.execute(statement, &params)
        .await?
        .rows
        .iter()
        .map(inbox_summary)
        .collect()
}

pub const INBOX_ATTENTION_IDS: Statement = Statement::new(
    "admin.inbox_attention_ids",
    "SELECT id, received_at
       FROM inbox
      WHERE status IN ('quarantined', 'dead') AND status = :status
        AND (CAST(:partner AS text) IS NULL OR partner = :partner)
        AND received_at >= CAST(:after_at AS timestamptz)
        AND (received_at > CAST(:after_at AS timestamptz) OR id > CAST(:after_id AS uuid))
      ORDER BY received_at, id
      LIMIT :limit",
);

/// The statuses that wait for an operator (what a bulk replay walks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionStatus {
    /// Poison pills.
    Quarantined,
    /// Rows the queue gave up on.
    Dead,
}

impl AttentionStatus {
    /// The inbox status.
    pub fn status(self) -> InboxStatus {
        match self {
            AttentionStatus::Quarantined => InboxStatus::Quarantined,
            AttentionStatus::Dead => InboxStatus::Dead,
        }
    }
}

/// The next page of `status` rows (optionally of one partner) after
/// `after`, at most `limit` (capped at [`MAX_PAGE`]): what a bulk replay
/// walks, one bounded batch at a time. Each entry is the cursor of its row
/// (`cursor.id` is the row id).
pub async fn inbox_attention_ids(
    db: &dyn Executor,
    status: AttentionStatus,
    partner: Option<&str>,
    after: InboxCursor,
    limit: i64,
) -> Result<Vec<InboxCursor>, DbError> {
    let rows = db
        .execute(
            &INBOX_ATTENTION_IDS,
            &params! {
                "status" => status.status().as_str(), "partner" => partner.map(str::to_owned),
                "after_at" => after.received_at, "after_id" => after.id,
                "limit" => page_limit(limit),
            },
        )
        .await?
        .rows;
    rows.iter()
        .map(|r| {
            Ok(InboxCursor {
                received_at: r.timestamp("received_at")?,
                id: r.uuid("id")?,
            })
        })
        .collect()
}

/// Where an outbox listing continues: after this row (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxCursor {
    /// `created_at` of the last row of the previous page.
    pub created_at: DateTime<Utc>,
    /// `seq` of the last row of the previous page.
    pub seq: i64,
}

impl OutboxCursor {
    /// Before every row (the first page).
    pub fn start() -> Self {
        Self {
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            seq: 0,
        }
    }
}

/// Which outbox rows to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutboxFilter {
    /// Only rows with this status, when set.
    pub status: Option<OutboxStatus>,
    /// Only rows for this destination, when set.
    pub destination: Option<String>,
}

/// One line of an outbox listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxSummary {
    /// The row (its `webhook-id`).
    pub id: Uuid,
    /// Insertion order.
    pub seq: i64,
    /// Destination name.
    pub destination: String,
    /// Event type.
    pub event_type: String,
    /// What kind of thing changed.
    pub aggregate_type: String,
    /// Which one.
    pub aggregate_id: String,
    /// Status.
    pub status: OutboxStatus,
    /// Delivery attempts so far.
    pub attempts: i64,
    /// Due time (pending rows).
    pub next_attempt_at: DateTime<Utc>,
    /// Last HTTP status received.
    pub last_status_code: Option<i64>,
    /// The last error, cut to [`LISTED_ERROR_CHARS`] characters.
    pub last_error: Option<String>,
    /// When the business transaction wrote it.
    pub created_at: DateTime<Utc>,
}

impl OutboxSummary {
    /// The cursor that continues after this row.
    pub fn cursor(&self) -> OutboxCursor {
        OutboxCursor {
            created_at: self.created_at,
            seq: self.seq,
        }
    }
}

macro_rules! outbox_summary_select {
    () => {
        "SELECT id, seq, destination, left(event_type, 256) AS event_type,
                left(aggregate_type, 256) AS aggregate_type,
                left(aggregate_id, 512) AS aggregate_id, status, attempts,
                next_attempt_at, last_status_code, left(last_error, 500) AS last_error, created_at
           FROM outbox "
    };
}

pub const OUTBOX_LIST_DEAD: Statement = Statement::new(
    "admin.outbox_list_dead",
    concat!(
        outbox_summary_select!(),
        "WHERE status = 'dead'
            AND (CAST(:destination AS text) IS NULL OR destination = :destination)
            AND created_at >= CAST(:after_at AS timestamptz)
            AND (created_at > CAST(:after_at AS timestamptz) OR seq > :after_seq)
          ORDER BY created_at, seq
          LIMIT :limit"
    ),
);

pub const OUTBOX_LIST_PENDING: Statement = Statement::new(
    "admin.outbox_list_pending",
    concat!(
        outbox_summary_select!(),
        "WHERE status = 'pending'
            AND (CAST(:destination AS text) IS NULL OR destination = :destination)
            AND created_at >= CAST(:after_at AS timestamptz)
            AND (created_at > CAST(:after_at AS timestamptz) OR seq > :after_seq)
          ORDER BY created_at, seq
          LIMIT :limit"
    ),
);

pub const OUTBOX_LIST_BY_SEQ: Statement = Statement::new(
    "admin.outbox_list_by_seq",
    concat!(
        outbox_summary_select!(),
        "WHERE (CAST(:status AS text) IS NULL OR status = :status)
            AND (CAST(:destination AS text) IS NULL OR destination = :destination)
            AND seq > :after_seq
          ORDER BY seq
          LIMIT :limit"
    ),
);

/// Up to `limit` (at most [`MAX_PAGE`]) outbox rows matching `filter`,
/// after `after` ([`OutboxCursor::start`] for the first page). Oldest first:
/// dead and pending rows by `created_at` through their partial indexes,
/// delivered rows and unfiltered listings by `seq`.
pub async fn list_outbox(
    db: &dyn Executor,
    filter: &OutboxFilter,
    after: OutboxCursor,
    limit: i64,
) -> Result<Vec<OutboxSummary>, DbError> {
    let limit = page_limit(limit);
    let destination = filter.destination.clone();
    let (statement, params): (&Statement, Params) = match filter.status {
        Some(status @ (OutboxStatus::Dead | OutboxStatus::Pending)) => (
            if status == OutboxStatus::Dead {
                &OUTBOX_LIST_DEAD
            } else {
                &OUTBOX_LIST_PENDING
            },
            params! {
                "destination" => destination, "after_at" => after.created_at,
                "after_seq" => after.seq, "limit" => limit,
            },
        ),
        status => (
            &OUTBOX_LIST_BY_SEQ,
            params! {
                "status" => status.map(OutboxStatus::as_str), "destination" => destination,
                "after_seq" => after.seq, "limit" => limit,
            },
        ),
    };
    db.execute(statement, &params)
        .await?
        .rows
        .iter()
        .map(outbox_summary)
        .collect()
}

/// Outcome of [`retry_dead_outbox`] for one requested id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboxRetry {
    /// Was dead, is pending again: due at once, attempts back to 0.
    Retried {
        /// The row.
        id: Uuid,
    },
    /// Not dead (pending or delivered): nothing changed.
    NotRetryable {
        /// The row.
        id: Uuid,
        /// Its status.
        status: OutboxStatus,
    },
    /// No such row.
    Missing {
        /// The requested id.
        id: Uuid,
    },
}

pub const OUTBOX_RETRY_DEAD: Statement = Statement::new(
    "admin.outbox_retry_dead",
    "WITH wanted AS (
        SELECT DISTINCT CAST(value AS uuid) AS wanted_id
          FROM jsonb_array_elements_text(CAST(:ids AS jsonb))
    ), retried AS (
        UPDATE outbox AS o
           SET status = 'pending',
               attempts = 0,
               next_attempt_at = CAST(:now AS timestamptz),
               locked_until = NULL, locked_by = NULL, processed_at = NULL
         WHERE o.id = ANY (ARRAY(SELECT wanted_id FROM wanted))
           -- a CASE, not a plain condition: the planner must not trade the
           -- key lookup for a scan of every dead row (the outbox_dead index)
           AND CASE WHEN o.status = 'dead' THEN true ELSE false END
        RETURNING o.id
    )
    SELECT w.wanted_id,
           (SELECT cur.status FROM outbox AS cur WHERE cur.id = w.wanted_id) AS current_status,
           r.id AS retried_id
      FROM wanted AS w
      LEFT JOIN retried AS r ON r.id = w.wanted_id",
);

/// Puts the `dead` rows among `ids` back to `pending`, due at `now`, with
/// `attempts` reset to 0, in ONE statement; the relay delivers them on its
/// next run with a fresh delivery schedule. `last_error` and
/// `last_status_code` stay until the next attempt records its own. Rows that
/// are not dead do not change. One outcome per distinct id, in `ids` order.
pub async fn retry_dead_outbox(
    db: &dyn Executor,
    ids: &[Uuid],
    now: DateTime<Utc>,
) -> Result<Vec<OutboxRetry>, DbError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids_json = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>());
    let rows = db
        .execute(
            &OUTBOX_RETRY_DEAD,
            &params! { "ids" => ids_json, "now" => now },
        )
        .await?
        .rows;
    let mut by_id = std::collections::HashMap::with_capacity(rows.len());
    for r in &rows {
        let id = r.uuid("wanted_id")?;
        let outcome = if r.opt_uuid("retried_id")?.is_some() {
            OutboxRetry::Retried { id }
        } else {
            match r.opt_text("current_status")? {
                None => OutboxRetry::Missing { id },
                Some(status) => OutboxRetry::NotRetryable {
                    id,
                    status: parse_outbox_status(r, "current_status", &status)?,
                },
            }
        };
        by_id.insert(id, outcome);
    }
    let mut out = Vec::with_capacity(by_id.len());
    for id in ids {
        if let Some(outcome) = by_id.remove(id) {
            out.push(outcome);
        }
    }
    Ok(out)
}

pub const OUTBOX_DEAD_IDS: Statement = Statement::new(
    "admin.outbox_dead_ids",
    "SELECT id, created_at, seq
       FROM outbox
      WHERE status = 'dead'
        AND (CAST(:destination AS text) IS NULL OR destination = :destination)
        AND created_at >= CAST(:after_at AS timestamptz)
        AND (created_at > CAST(:after_at AS timestamptz) OR seq > :after_seq)
      ORDER BY created_at, seq
      LIMIT :limit",
);

/// The next page of dead outbox rows (optionally for one destination) after
/// `after`, at most `limit` (capped at [`MAX_PAGE`]): what a bulk retry
/// walks. Each entry is the row id and its cursor.
pub async fn outbox_dead_ids(
    db: &dyn Executor,
    destination: Option<&str>,
    after: OutboxCursor,
    limit: i64,
) -> Result<Vec<(Uuid, OutboxCursor)>, DbError> {
    let rows = db
        .execute(
            &OUTBOX_DEAD_IDS,
            &params! {
                "destination" => destination.map(str::to_owned),
                "after_at" => after.created_at, "after_seq" => after.seq,
                "limit" => page_limit(limit),
            },
        )
        .await?
        .rows;
    rows.iter()
        .map(|r| {
            Ok((
                r.uuid("id")?,
                OutboxCursor {
                    created_at: r.timestamp("created_at")?,
                    seq: r.i64("seq")?,
                },
            ))
        })
        .collect()
}

fn parse_inbox_status(r: &Row, column: &str, s: &str) -> Result<InboxStatus, DbError> {
    s.parse()
        .map_err(|e: crate::inbox::UnknownStatus| DbError::Decode {
            statement: r.statement(),
            column: column.into(),
            detail: e.to_string(),
        })
}

fn parse_outbox_status(r: &Row, column: &str, s: &str) -> Result<OutboxStatus, DbError> {
    s.parse()
        .map_err(|e: crate::outbox::UnknownStatus| DbError::Decode {
            statement: r.statement(),
            column: column.into(),
            detail: e.to_string(),
        })
}

fn inbox_summary(r: &Row) -> Result<InboxSummary, DbError> {
    let status = r.text("status")?;
    Ok(InboxSummary {
        id: r.uuid("id")?,
        partner: r.text("partner")?,
        event_id: r.text("event_id")?,
        event_type: r.opt_text("event_type")?,
        status: parse_inbox_status(r, "status", &status)?,
        attempts: r.i64("attempts")?,
        received_at: r.timestamp("received_at")?,
        last_error: r.opt_text("last_error")?,
    })
}

fn outbox_summary(r: &Row) -> Result<OutboxSummary, DbError> {
    let status = r.text("status")?;
    Ok(OutboxSummary {
        id: r.uuid("id")?,
        seq: r.i64("seq")?,
        destination: r.text("destination")?,
        event_type: r.text("event_type")?,
        aggregate_type: r.text("aggregate_type")?,
        aggregate_id: r.text("aggregate_id")?,
        status: parse_outbox_status(r, "status", &status)?,
        attempts: r.i64("attempts")?,
        next_attempt_at: r.timestamp("next_attempt_at")?,
        last_status_code: r.opt_i64("last_status_code")?,
        last_error: r.opt_text("last_error")?,
        created_at: r.timestamp("created_at")?,
    })
}
