//! Outbox statements: one statement per function, the same SQL text on every
//! adapter, time from the caller.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use super::{OutboxRow, OutboxStatus};
use crate::params;
use crate::store::{
    DbError, Executor, Retention, Row, Statement, Transaction, fetch_one, fetch_optional,
};

/// An outbound event, written by business code inside its transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NewOutboxEvent {
    /// What kind of thing changed (e.g. `order`).
    pub aggregate_type: String,
    /// Which one (e.g. the order id).
    pub aggregate_id: String,
    /// Event type (e.g. `order.paid`).
    pub event_type: String,
    /// Destination name from configuration.
    pub destination: String,
    /// The payload.
    pub payload: serde_json::Value,
}

pub const ENQUEUE: Statement = Statement::new(
    "outbox.enqueue",
    "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination, payload,
                         status, next_attempt_at, created_at)
     VALUES (:id, :aggregate_type, :aggregate_id, :event_type, :destination,
             CAST(:payload AS jsonb), 'pending', CAST(:now AS timestamptz),
             CAST(:now AS timestamptz))",
);

/// Writes an outbound event inside the caller's transaction (so it exists
/// if and only if the business change commits). Due at once. Returns its id,
/// which every delivery will carry as `webhook-id`.
pub async fn enqueue(
    tx: &dyn Transaction,
    event: &NewOutboxEvent,
    now: DateTime<Utc>,
) -> Result<Uuid, DbError> {
    let id = Uuid::now_v7();
    tx.execute(
        &ENQUEUE,
        &params! {
            "id" => id,
            "aggregate_type" => event.aggregate_type.as_str(),
            "aggregate_id" => event.aggregate_id.as_str(),
            "event_type" => event.event_type.as_str(),
            "destination" => event.destination.as_str(),
            "payload" => event.payload.clone(),
            "now" => now,
        },
    )
    .await?;
    Ok(id)
}

/// Columns every outbox read returns, the payload as text (jsonb's canonical
/// form, identical on every adapter and on every attempt).
macro_rules! outbox_columns {
    ($p:literal) => {
        concat!(
            $p,
            "id, ",
            $p,
            "seq, ",
            $p,
            "aggregate_type, ",
            $p,
            "aggregate_id, ",
            $p,
            "event_type, ",
            $p,
            "destination, CAST(",
            $p,
            "payload AS text) AS payload, ",
            $p,
            "status, ",
            $p,
            "attempts, ",
            $p,
            "next_attempt_at, ",
            $p,
            "locked_until, ",
            $p,
            "locked_by, ",
            $p,
            "last_error, ",
            $p,
            "last_status_code, ",
            $p,
            "created_at, ",
            $p,
            "processed_at"
        )
    };
}

pub const CLAIM_DUE: Statement = Statement::new(
    "outbox.claim_due",
    concat!(
        "SELECT ",
        outbox_columns!("o."),
        " FROM outbox_claim_due(CAST(:now AS timestamptz), CAST(:lease_until AS timestamptz),
                                :worker, CAST(:limit AS bigint), CAST(:ordered AS jsonb)) AS o"
    ),
);

/// What [`claim_due`] claims.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The relay taking the lease (recorded in `locked_by`).
    pub worker: &'a str,
    /// Rows due at or before this time are claimable.
    pub now: DateTime<Utc>,
    /// Lease expiry: must outlast every request of the batch.
    pub lease_until: DateTime<Utc>,
    /// Most rows.
    pub limit: i64,
    /// Destinations with ordered delivery: their rows are claimable only
    /// when no older row of the same aggregate is pending or dead.
    pub ordered_destinations: &'a [String],
}

/// Leases up to `limit` due rows until `lease_until`, in ONE statement
/// (`FOR UPDATE SKIP LOCKED`: concurrent relays get disjoint rows). The
/// lease only sets `locked_until`/`locked_by`, columns no index covers, so
/// PostgreSQL updates the row in place (HOT) without touching any index. For
/// ordered destinations only the oldest undelivered row of each aggregate is
/// claimable. Returned in insertion order. The SQL is the function
/// `outbox_claim_due` (migration 0005), which pins the plan to a walk of the
/// due index whatever the table's statistics say.
pub async fn claim_due(
    db: &dyn Executor,
    request: ClaimRequest<'_>,
) -> Result<Vec<OutboxRow>, DbError> {
    let ordered = serde_json::Value::from(request.ordered_destinations.to_vec());
    let rows = db
        .execute(
            &CLAIM_DUE,
            &params! {
                "now" => request.now,
                "lease_until" => request.lease_until,
                "worker" => request.worker,
                "limit" => request.limit,
                "ordered" => ordered,
            },
        )
        .await?
        .rows;
    let mut out = rows.iter().map(outbox_row).collect::<Result<Vec<_>, _>>()?;
    out.sort_by_key(|r| r.seq);
    Ok(out)
}

/// What happened to one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// 2xx: done.
    Delivered,
    /// Failed; try again at this time.
    Retry {
        /// Next attempt.
        next_attempt_at: DateTime<Utc>,
    },
    /// Give up (max attempts reached, or 410 Gone).
    Dead,
    /// Not attempted (the batch ran out of time before this row's turn):
    /// the lease is released and the attempt is not counted.
    NotAttempted {
        /// When it is due again.
        next_attempt_at: DateTime<Utc>,
    },
}

/// The result of delivering one claimed row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryResult {
    /// The row.
    pub id: Uuid,
    /// What to record.
    pub outcome: DeliveryOutcome,
    /// HTTP status received, if any.
    pub status_code: Option<u16>,
    /// Error text for failures (already free of secrets).
    pub error: Option<String>,
}

/// The UPDATE recording a batch's results (`:results`, a JSON array built by
/// [`results_json`]) for rows still leased to `:recorded_by`.
macro_rules! record_update {
    () => {
        "UPDATE outbox AS o
        SET status = r.status,
            attempts = o.attempts + CASE WHEN r.attempted THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN r.status = 'pending' THEN r.next_attempt_at
                                   ELSE o.next_attempt_at END,
            locked_until = NULL,
            locked_by = NULL,
            last_error = CASE WHEN r.attempted THEN r.error ELSE o.last_error END,
            last_status_code = CASE WHEN r.attempted THEN r.status_code
                                    ELSE o.last_status_code END,
            processed_at = CASE WHEN r.status = 'pending' THEN NULL
                                ELSE CAST(:now AS timestamptz) END
       FROM jsonb_to_recordset(CAST(:results AS jsonb))
            AS r(id uuid, status text, attempted boolean, next_attempt_at timestamptz,
                 status_code integer, error text)
      WHERE o.id = ANY(ARRAY(SELECT CAST(e ->> 'id' AS uuid)
                               FROM jsonb_array_elements(CAST(:results AS jsonb)) AS e))
        AND o.id = r.id AND o.locked_by = :recorded_by"
    };
}

pub const RECORD_RESULTS: Statement = Statement::new("outbox.record_results", record_update!());
// Only pending rows are ever leased (constraint outbox_lease_only_pending,
// migration 0004), so the batch's token alone says "still pending and ours". A
// `status = 'pending'` condition here would match the partial indexes'
// predicate and, when statistics undercount the pending rows, tempt the
// planner into ANDing the primary key with a scan of every pending row
// (O(backlog) per batch; tests/query_plans.rs checks it does not).

/// Records the results of a whole batch in ONE statement (an attempt is
/// counted for every outcome but [`DeliveryOutcome::NotAttempted`]). Only rows still
/// leased to `worker` change (a relay whose lease ran out and whose rows were
/// claimed again records nothing for them: the newer claim decides).
/// Returns how many rows changed.
pub async fn record_results(
    db: &dyn Executor,
    worker: &str,
    now: DateTime<Utc>,
    results: &[DeliveryResult],
) -> Result<u64, DbError> {
    if results.is_empty() {
        return Ok(0);
    }
    Ok(db
        .execute(
            &RECORD_RESULTS,
            &params! { "results" => results_json(results), "recorded_by" => worker, "now" => now },
        )
        .await?
        .affected)
}

/// `:results` of [`RECORD_RESULTS`] and [`RECORD_AND_CLAIM`].
fn results_json(results: &[DeliveryResult]) -> serde_json::Value {
    results
        .iter()
        .map(|r| {
            let at = |t: &DateTime<Utc>| Some(t.to_rfc3339_opts(SecondsFormat::Micros, true));
            let (status, next, attempted) = match &r.outcome {
                DeliveryOutcome::Delivered => (OutboxStatus::Delivered, None, true),
                DeliveryOutcome::Retry { next_attempt_at } => {
                    (OutboxStatus::Pending, at(next_attempt_at), true)
                }
                DeliveryOutcome::Dead => (OutboxStatus::Dead, None, true),
                DeliveryOutcome::NotAttempted { next_attempt_at } => {
                    (OutboxStatus::Pending, at(next_attempt_at), false)
                }
            };
            serde_json::json!({
                "id": r.id,
                "status": status.as_str(),
                "attempted": attempted,
                "next_attempt_at": next,
                "status_code": r.status_code,
                "error": r.error,
            })
        })
        .collect::<Vec<_>>()
        .into()
}

// The order is the plan's, and the plan has no choice: a join `ON true` can
// only be a nested loop, whose outer side (the count over the recording CTE,
// an aggregate that reads the whole CTE before it yields its row) runs before
// the first call of the claim function; the function is volatile, so its
// statements take a new snapshot and see the recorded rows. A row the
// recording releases due at once may be claimed again by the same statement
// (a second update of it, by a later command: allowed). tests/outbox_repo.rs
// checks both.
pub const RECORD_AND_CLAIM: Statement = Statement::new(
    "outbox.record_and_claim",
    concat!(
        "WITH recorded AS (",
        record_update!(),
        " RETURNING 1)
        SELECT r.n AS recorded, ",
        outbox_columns!("c."),
        " FROM (SELECT count(*) AS n FROM recorded) AS r
          LEFT JOIN LATERAL outbox_claim_due(
                CAST(:now AS timestamptz), CAST(:lease_until AS timestamptz), :worker,
                CAST(:limit AS bigint), CAST(:ordered AS jsonb)) AS c ON true"
    ),
);

/// What the previous batch of a relay lane leaves to record.
#[derive(Debug, Clone, Copy)]
pub struct Unrecorded<'a> {
    /// That batch's lease token.
    pub recorded_by: &'a str,
    /// Its results.
    pub results: &'a [DeliveryResult],
}

/// [`record_results`] of the previous batch and [`claim_due`] of the next in
/// ONE statement (one round trip, one commit per batch of a relay lane).
/// The claim runs after the recording (it is the outer side of a lateral
/// join), so it sees its changes: the next row of an ordered aggregate whose
/// row was just delivered is claimable at once. Returns the rows recorded
/// and the rows claimed (in insertion order).
pub async fn record_and_claim(
    db: &dyn Executor,
    previous: Unrecorded<'_>,
    request: ClaimRequest<'_>,
) -> Result<(u64, Vec<OutboxRow>), DbError> {
    let rows = db
        .execute(
            &RECORD_AND_CLAIM,
            &params! {
                "results" => results_json(previous.results),
                "recorded_by" => previous.recorded_by,
                "now" => request.now,
                "lease_until" => request.lease_until,
                "worker" => request.worker,
                "limit" => request.limit,
                "ordered" => serde_json::Value::from(request.ordered_destinations.to_vec()),
            },
        )
        .await?
        .rows;
    let recorded = match rows.first() {
        Some(r) => u64::try_from(r.i64("recorded")?).unwrap_or(0),
        None => 0,
    };
    let mut claimed = Vec::with_capacity(rows.len());
    for r in &rows {
        if !matches!(r.value("id")?, crate::store::Value::Null) {
            claimed.push(outbox_row(r)?);
        }
    }
    claimed.sort_by_key(|r| r.seq);
    Ok((recorded, claimed))
}

pub const COUNTS: Statement = Statement::new(
    "outbox.counts_by_status",
    "SELECT status, count(*) AS n FROM outbox GROUP BY status",
);

/// Rows per status; every status is present (zero when none).
pub async fn counts_by_status(db: &dyn Executor) -> Result<HashMap<OutboxStatus, i64>, DbError> {
    let rows = db.execute(&COUNTS, &params! {}).await?.rows;
    let mut out: HashMap<OutboxStatus, i64> = OutboxStatus::ALL.iter().map(|s| (*s, 0)).collect();
    for r in &rows {
        out.insert(parse_status(r, &r.text("status")?)?, r.i64("n")?);
    }
    Ok(out)
}

pub const OLDEST_PENDING: Statement = Statement::new(
    "outbox.oldest_pending",
    "SELECT min(created_at) AS oldest FROM outbox WHERE status = 'pending'",
);

/// `created_at` of the oldest undelivered row, if any: its age is the outbox lag.
pub async fn oldest_pending_created_at(
    db: &dyn Executor,
) -> Result<Option<DateTime<Utc>>, DbError> {
    fetch_one(db, &OLDEST_PENDING, &params! {})
        .await?
        .opt_timestamp("oldest")
}

pub const PENDING_SUMMARY: Statement = Statement::new(
    "outbox.pending_summary",
    "SELECT count(*) AS pending, min(created_at) AS oldest FROM outbox WHERE status = 'pending'",
);

/// Pending rows right now: how many, and when the oldest was written (its
/// age is the outbox lag). One statement over the pending index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingSummary {
    /// Rows waiting for delivery (leased ones included).
    pub pending: i64,
    /// `created_at` of the oldest of them.
    pub oldest_created_at: Option<DateTime<Utc>>,
}

/// How many rows are pending and how old the oldest is, in one statement.
pub async fn pending_summary(db: &dyn Executor) -> Result<PendingSummary, DbError> {
    let row = fetch_one(db, &PENDING_SUMMARY, &params! {}).await?;
    Ok(PendingSummary {
        pending: row.i64("pending")?,
        oldest_created_at: row.opt_timestamp("oldest")?,
    })
}

pub const PURGE_DELETE: Statement = Statement::new(
    "outbox.purge_delete",
    "WITH old AS (
        SELECT id FROM outbox
         WHERE status = 'delivered' AND created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    )
    DELETE FROM outbox AS o USING old WHERE o.id = old.id",
);

pub const PURGE_ARCHIVE: Statement = Statement::new(
    "outbox.purge_archive",
    "WITH old AS (
        SELECT id FROM outbox
         WHERE status = 'delivered' AND created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), moved AS (
        DELETE FROM outbox AS o USING old WHERE o.id = old.id RETURNING o.*
    )
    INSERT INTO outbox_archive SELECT * FROM moved",
);

/// Deletes (or archives) at most `limit` delivered rows created before
/// `cutoff`; returns how many. Dead rows are kept for the operator.
pub async fn purge_finished(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    limit: i64,
    mode: Retention,
) -> Result<u64, DbError> {
    let statement = match mode {
        Retention::Delete => &PURGE_DELETE,
        Retention::Archive => &PURGE_ARCHIVE,
    };
    Ok(db
        .execute(statement, &params! { "cutoff" => cutoff, "limit" => limit })
        .await?
        .affected)
}

pub const GET: Statement = Statement::new(
    "outbox.get",
    concat!(
        "SELECT ",
        outbox_columns!(""),
        " FROM outbox WHERE id = :id"
    ),
);

/// One row by id.
pub async fn get(db: &dyn Executor, id: Uuid) -> Result<Option<OutboxRow>, DbError> {
    fetch_optional(db, &GET, &params! { "id" => id })
        .await?
        .as_ref()
        .map(outbox_row)
        .transpose()
}

fn parse_status(r: &Row, s: &str) -> Result<OutboxStatus, DbError> {
    s.parse()
        .map_err(|e: super::UnknownStatus| DbError::Decode {
            statement: r.statement(),
            column: "status".into(),
            detail: e.to_string(),
        })
}

fn outbox_row(r: &Row) -> Result<OutboxRow, DbError> {
    Ok(OutboxRow {
        id: r.uuid("id")?,
        seq: r.i64("seq")?,
        aggregate_type: r.text("aggregate_type")?,
        aggregate_id: r.text("aggregate_id")?,
        event_type: r.text("event_type")?,
        destination: r.text("destination")?,
        payload: r.text("payload")?,
        status: parse_status(r, &r.text("status")?)?,
        attempts: r.i64("attempts")?,
        next_attempt_at: r.timestamp("next_attempt_at")?,
        locked_until: r.opt_timestamp("locked_until")?,
        locked_by: r.opt_text("locked_by")?,
        last_error: r.opt_text("last_error")?,
        last_status_code: r.opt_i64("last_status_code")?,
        created_at: r.timestamp("created_at")?,
        processed_at: r.opt_timestamp("processed_at")?,
    })
}
