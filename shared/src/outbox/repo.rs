//! Outbox statements: one statement per function, the same SQL text on every
//! adapter, time from the caller.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use uuid::Uuid;

use super::payload::PayloadStorage;
use super::{OutboxRow, OutboxStatus};
use crate::blob::{BlobKey, BlobRef};
use crate::params;
use crate::store::{
    DbError, Executor, Params, Retention, Row, Statement, fetch_one, fetch_optional,
};

/// Columns every outbox read returns. The payload as text (jsonb's
/// canonical form, identical on every adapter and on every attempt) only up
/// to [`READ_CHUNK_BYTES`](super::payload::READ_CHUNK_BYTES) (40960): a larger inline payload comes back as
/// NULL with its size, so no row of any statement passes the Data API's
/// 64 KB (`payload::read` fetches it in pieces). `payload_size` is the size
/// of what the relay POSTs (rows written before migration 7 have none
/// stored for an inline payload: it is computed).
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
            "destination, ",
            "CASE WHEN coalesce(",
            $p,
            "payload_size, octet_length(CAST(",
            $p,
            "payload AS text))) <= 40960 THEN CAST(",
            $p,
            "payload AS text) END AS payload, ",
            "coalesce(",
            $p,
            "payload_size, octet_length(CAST(",
            $p,
            "payload AS text))) AS payload_size, ",
            $p,
            "payload_key, ",
            $p,
            "payload_sha256, ",
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
            "processed_at, ",
            $p,
            "origin"
        )
    };
}

/// The claim function's arguments (migration 7).
macro_rules! claim_args {
    () => {
        "CAST(:now AS timestamptz), CAST(:lease_until AS timestamptz), :worker,
         CAST(:limit AS bigint), CAST(:ordered AS jsonb), CAST(:budget AS bigint),
         CAST(:caps AS jsonb)"
    };
}

pub const CLAIM_DUE: Statement = Statement::new(
    "outbox.claim_due",
    concat!(
        "SELECT ",
        outbox_columns!("o."),
        " FROM outbox_claim_due(",
        claim_args!(),
        ") AS o"
    ),
);

/// The same claim, returning ids only: rows that cannot be too large for
/// any response. How a relay recovers from a claim that failed as a whole
/// ([`claim_ids`]).
pub const CLAIM_IDS: Statement = Statement::new(
    "outbox.claim_ids",
    concat!(
        "SELECT o.id FROM outbox_claim_due(",
        claim_args!(),
        ") AS o"
    ),
);

/// The Data API's limit on one response, bytes.
pub const MAX_RESPONSE_BYTES: i64 = 1024 * 1024;

/// The budget of the relay's claims, bytes: 7/8 of the Data API's 1 MiB
/// response. A claim stops leasing rows once the bytes they add to its
/// answer would pass its budget (and always takes one): each row counts its
/// inline payload, its other variable columns and 128 for the fixed ones
/// (migration 7). 50 due rows of 30 KB are claimed over two claims.
pub const CLAIM_BUDGET_BYTES: i64 = MAX_RESPONSE_BYTES / 8 * 7;

/// What [`claim_due`] claims.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The lease token (recorded in `locked_by`): one per claim, naming the
    /// relay and its batch. A claim takes back rows its own token leases
    /// (how a claim whose answer was lost is recovered), so two claims must
    /// never share a token.
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
    /// Most rows per destination (the relay passes each destination's free
    /// request slots); a destination not listed takes up to `limit`. A
    /// destination whose breaker is open or that is disabled gets none
    /// whatever this says, one when its cool-down is over (migration 13).
    pub destination_caps: &'a [(String, i64)],
}

impl ClaimRequest<'_> {
    fn params(&self, budget: i64) -> Params {
        params! {
            "now" => self.now,
            "lease_until" => self.lease_until,
            "worker" => self.worker,
            "limit" => self.limit,
            "ordered" => serde_json::Value::from(self.ordered_destinations.to_vec()),
            "budget" => budget,
            "caps" => serde_json::Value::Object(
                self.destination_caps
                    .iter()
                    .map(|(name, cap)| (name.clone(), serde_json::Value::from(*cap)))
                    .collect(),
            ),
        }
    }
}

/// A claimed (so leased) row that could not be decoded: it can never be
/// delivered as written; the relay marks it dead with `error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableRow {
    /// The row.
    pub id: Uuid,
    /// What could not be read.
    pub error: String,
}

/// What a claim returned: the rows, in insertion order, and the rows it
/// leased but could not decode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Claimed {
    /// Readable rows, in insertion order.
    pub rows: Vec<OutboxRow>,
    /// Leased rows that could not be decoded (each alone; the others are
    /// unaffected).
    pub unreadable: Vec<UnreadableRow>,
}

impl Claimed {
    /// The destination of each claimed row that decoded.
    pub(crate) fn destinations(&self) -> impl Iterator<Item = &str> {
        self.rows.iter().map(|r| r.destination.as_str())
    }

    /// Rows claimed, readable or not.
    pub fn len(&self) -> usize {
        self.rows.len() + self.unreadable.len()
    }

    /// True when nothing was claimed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes the rows of a claim, each on its own; rows without an id
    /// (the claim half of [`RECORD_AND_CLAIM`] found nothing) are skipped.
    fn decode(rows: &[Row]) -> Result<Claimed, DbError> {
        let mut out = Claimed::default();
        for r in rows {
            let Some(id) = r.opt_uuid("id")? else {
                continue;
            };
            match outbox_row(r) {
                Ok(row) => out.rows.push(row),
                Err(e) => out.unreadable.push(UnreadableRow {
                    id,
                    error: e.to_string(),
                }),
            }
        }
        out.rows.sort_by_key(|r| r.seq);
        Ok(out)
    }
}

/// Leases up to `limit` due rows until `lease_until`, in ONE statement
/// (`FOR UPDATE SKIP LOCKED`: concurrent relays get disjoint rows), within
/// [`CLAIM_BUDGET_BYTES`] of answer. The
/// lease only sets `locked_until`/`locked_by`, columns no index covers, so
/// PostgreSQL updates the row in place (HOT) without touching any index. For
/// ordered destinations only the oldest undelivered row of each aggregate is
/// claimable. Returned in insertion order. The SQL is the function
/// `outbox_claim_due` (migrations 5 and 7), which pins the plan to a walk of
/// the due index whatever the table's statistics say. A row that cannot be
/// decoded fails the call (its lease stays): the relay uses [`claim_batch`].
pub async fn claim_due(
    db: &dyn Executor,
    request: ClaimRequest<'_>,
) -> Result<Vec<OutboxRow>, DbError> {
    let claimed = claim_batch(db, request, CLAIM_BUDGET_BYTES).await?;
    if let Some(bad) = claimed.unreadable.first() {
        return Err(DbError::Decode {
            statement: CLAIM_DUE.name,
            column: "*".into(),
            detail: format!("outbox row {}: {}", bad.id, bad.error),
        });
    }
    Ok(claimed.rows)
}

/// [`claim_due`] with an explicit budget (bytes of answer: inline payloads
/// and the other columns; always at least one row), each row decoded on its
/// own.
pub async fn claim_batch(
    db: &dyn Executor,
    request: ClaimRequest<'_>,
    budget: i64,
) -> Result<Claimed, DbError> {
    let rows = db.execute(&CLAIM_DUE, &request.params(budget)).await?.rows;
    Claimed::decode(&rows)
}

/// The claim of [`claim_due`], returning only the ids (in no particular
/// order), for rows that a whole answer could not carry:
/// the caller then reads each row alone. Under the token of a claim that
/// failed, it takes that claim's leases back first (they are the oldest
/// due rows).
pub async fn claim_ids(db: &dyn Executor, request: ClaimRequest<'_>) -> Result<Vec<Uuid>, DbError> {
    let rows = db
        .execute(&CLAIM_IDS, &request.params(CLAIM_BUDGET_BYTES))
        .await?
        .rows;
    rows.iter().map(|r| r.uuid("id")).collect()
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
    /// What the attempt log keeps of an attempt that sent a request (`None`:
    /// none was sent, or not known; the log then has the recording time).
    pub attempt: Option<AttemptDetail>,
}

/// An attempt's timing and the start of its answer, for the attempt log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptDetail {
    /// When the request started.
    pub started_at: DateTime<Utc>,
    /// How long until the answer (or the failure).
    pub latency: std::time::Duration,
    /// The start of the response body ([`MAX_RESPONSE_EXCERPT_BYTES`]), when
    /// there was one.
    pub response_excerpt: Option<String>,
}

/// Most response-body bytes the attempt log keeps per attempt.
pub const MAX_RESPONSE_EXCERPT_BYTES: usize = 1024;

/// The UPDATE recording results (`:results`, a JSON array built by
/// [`results_json`]) for rows still leased to the token each result names
/// (`lease`: the claim that took the row), or, when it names none,
/// `:recorded_by` (the statement's most common token, sent once). The
/// results are read once: the UPDATE returns each changed row with its
/// result, and the attempt log and the destinations' health take them from
/// there.
macro_rules! record_update {
    () => {
        "WITH updated AS (
         UPDATE outbox AS o
        SET status = r.status,
            attempts = o.attempts + CASE WHEN r.attempted THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN r.status = 'pending' THEN r.next_attempt_at
                                   ELSE o.next_attempt_at END,
            locked_until = NULL,
            locked_by = NULL,
            last_error = CASE WHEN r.attempted THEN r.error ELSE o.last_error END,
            last_status_code = CASE WHEN r.attempted THEN r.status_code
                                    ELSE o.last_status_code END,
            last_attempted_at = CASE WHEN r.attempted
                                     THEN coalesce(r.attempted_at, CAST(:now AS timestamptz))
                                     ELSE o.last_attempted_at END,
            last_latency_ms = CASE WHEN r.attempted THEN r.latency_ms ELSE o.last_latency_ms END,
            last_response = CASE WHEN r.attempted THEN r.response ELSE o.last_response END,
            processed_at = CASE WHEN r.status = 'pending' THEN NULL
                                ELSE CAST(:now AS timestamptz) END
       FROM jsonb_to_recordset(CAST(:results AS jsonb))
            AS r(id uuid, lease text, status text, attempted boolean,
                 next_attempt_at timestamptz, status_code integer, error text,
                 attempted_at timestamptz, latency_ms integer, response text)
      WHERE o.id = ANY(ARRAY(SELECT CAST(e ->> 'id' AS uuid)
                               FROM jsonb_array_elements(CAST(:results AS jsonb)) AS e))
        AND o.id = r.id AND o.locked_by = coalesce(r.lease, :recorded_by)
      RETURNING o.id, o.attempts, o.destination, r.status, r.attempted, r.attempted_at,
                r.status_code, r.latency_ms, r.error, r.response),
     logged AS (
         INSERT INTO outbox_attempts (outbox_id, attempt, attempted_at, destination,
                                      status_code, latency_ms, error, response_excerpt)
         SELECT u.id, u.attempts, coalesce(u.attempted_at, CAST(:now AS timestamptz)),
                u.destination, u.status_code, u.latency_ms, u.error, u.response
           FROM updated AS u
          WHERE u.attempted AND u.status <> 'delivered'),
     health AS (
         UPDATE outbox_destinations AS h
            SET consecutive_failures = CASE WHEN b.ok THEN 0
                                            ELSE h.consecutive_failures + b.failed END,
                failing_since = CASE WHEN b.ok THEN NULL
                                     ELSE coalesce(h.failing_since, CAST(:now AS timestamptz)) END,
                open_until = CASE WHEN b.ok THEN NULL
                                  WHEN h.consecutive_failures + b.failed >= h.trip_after
                                  THEN CAST(:now AS timestamptz) + make_interval(secs => h.cool_down_secs)
                                  ELSE h.open_until END,
                disabled_at = CASE WHEN b.disable THEN CAST(:now AS timestamptz)
                                   ELSE h.disabled_at END,
                disabled_reason = CASE WHEN b.disable
                                       THEN 'failing continuously since '
                                            || to_char(h.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
                                            || ' UTC (' || (h.consecutive_failures + b.failed) || ' failed attempts in a row)'
                                       ELSE h.disabled_reason END
           FROM (SELECT s.destination, s.ok, s.failed,
                        (NOT s.ok AND d.disabled_at IS NULL AND d.disable_after_secs > 0
                         AND d.failing_since IS NOT NULL
                         AND CAST(:now AS timestamptz) - d.failing_since
                             >= make_interval(secs => d.disable_after_secs)) AS disable
                   FROM (SELECT u.destination, bool_or(u.status = 'delivered') AS ok,
                                count(*) FILTER (WHERE u.status <> 'delivered') AS failed
                           FROM updated AS u
                          WHERE u.attempted_at IS NOT NULL
                          GROUP BY u.destination) AS s
                   JOIN outbox_destinations AS d ON d.name = s.destination) AS b
          WHERE h.name = b.destination
            -- a healthy destination's successes change nothing: no update,
            -- so lanes recording at once never queue on its row's lock
            AND (NOT b.ok OR h.consecutive_failures <> 0 OR h.failing_since IS NOT NULL
                 OR h.open_until IS NOT NULL)
      RETURNING 1)"
    };
}

/// The results of a batch recorded, and each attempt logged
/// (`outbox_attempts`), in one statement; `recorded` is the rows changed.
pub const RECORD_RESULTS: Statement = Statement::new(
    "outbox.record_results",
    concat!(
        record_update!(),
        " SELECT count(*) AS recorded FROM updated"
    ),
);
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
    record_json(
        db,
        now,
        worker,
        results_json(worker, results.iter().map(|r| (worker, r))),
    )
    .await
}

/// [`record_results`] of results claimed under several lease tokens (what a
/// relay lane has left to record when it stops), in one statement.
pub async fn record_leased(
    db: &dyn Executor,
    now: DateTime<Utc>,
    unrecorded: Unrecorded<'_>,
) -> Result<u64, DbError> {
    let default = unrecorded.default_token();
    record_json(db, now, default, unrecorded.json(default)).await
}

async fn record_json(
    db: &dyn Executor,
    now: DateTime<Utc>,
    default: &str,
    results: serde_json::Value,
) -> Result<u64, DbError> {
    if results.as_array().is_none_or(|a| a.is_empty()) {
        return Ok(0);
    }
    let row = crate::store::fetch_one(
        db,
        &RECORD_RESULTS,
        &params! { "results" => results, "recorded_by" => default, "now" => now },
    )
    .await?;
    Ok(u64::try_from(row.i64("recorded")?).unwrap_or(0))
}

/// Longest `last_error` recorded, bytes: errors come back with every claim
/// of the row, so they are cut (on a character boundary) to keep claimed
/// rows small.
pub const MAX_LAST_ERROR_BYTES: usize = 2048;

/// `error` cut to [`MAX_LAST_ERROR_BYTES`], marked with `…` when cut.
fn bounded(error: &str) -> String {
    crate::store::cut_to(error, MAX_LAST_ERROR_BYTES)
}

/// `:results` of [`RECORD_RESULTS`] and [`RECORD_AND_CLAIM`]: each result
/// with the lease token it is recorded under, unless that is `default` (the
/// statement's `:recorded_by`).
fn results_json<'a>(
    default: &str,
    results: impl Iterator<Item = (&'a str, &'a DeliveryResult)>,
) -> serde_json::Value {
    results
        .map(|(lease, r)| {
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
                "lease": (lease != default).then_some(lease),
                "status": status.as_str(),
                "attempted": attempted,
                "next_attempt_at": next,
                "status_code": r.status_code,
                "error": r.error.as_deref().map(bounded),
                "attempted_at": r.attempt.as_ref().and_then(|a| at(&a.started_at)),
                "latency_ms": r.attempt.as_ref().map(|a| i64::try_from(a.latency.as_millis()).unwrap_or(i64::MAX).min(i64::from(i32::MAX))),
                "response": r.attempt.as_ref().and_then(|a| a.response_excerpt.as_deref()).map(|t| crate::store::cut_to(t, MAX_RESPONSE_EXCERPT_BYTES + '…'.len_utf8())),
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
// checks both. The destinations' health is counted in the same aggregate's
// row, so it is updated before the claim as well (a data-modifying CTE no
// one reads runs after the main query; and a subquery without an aggregate
// would be pulled up, its counts left to the end): a probe that succeeded
// closes its breaker for this very claim (tests/destination_health.rs). The
// attempt log is written last.
pub const RECORD_AND_CLAIM: Statement = Statement::new(
    "outbox.record_and_claim",
    concat!(
        record_update!(),
        " SELECT r.n AS recorded, r.health AS health_changed, ",
        outbox_columns!("c."),
        " FROM (SELECT count(*) AS n, (SELECT count(*) FROM health) AS health
                  FROM updated) AS r
          LEFT JOIN LATERAL outbox_claim_due(",
        claim_args!(),
        ") AS c ON true"
    ),
);

/// Results a relay lane has not recorded yet, grouped by the claim (lease
/// token) that took their rows: a lane records what finished since its
/// last statement, from any of its claims.
#[derive(Debug, Clone, Copy)]
pub struct Unrecorded<'a> {
    /// The groups.
    pub leases: &'a [LeasedResults],
}

/// Results of rows claimed under one lease token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeasedResults {
    /// The claim's lease token.
    pub token: String,
    /// Its rows' results.
    pub results: Vec<DeliveryResult>,
}

impl Unrecorded<'_> {
    /// The token of the most results (sent once, as `:recorded_by`).
    fn default_token(&self) -> &str {
        self.leases
            .iter()
            .max_by_key(|l| l.results.len())
            .map_or("", |l| l.token.as_str())
    }

    fn json(&self, default: &str) -> serde_json::Value {
        results_json(
            default,
            self.leases
                .iter()
                .flat_map(|l| l.results.iter().map(move |r| (l.token.as_str(), r))),
        )
    }
}

/// [`record_results`] of the previous batch and [`claim_batch`] of the next
/// (within [`CLAIM_BUDGET_BYTES`]) in ONE statement (one round
/// trip, one commit per batch of a relay lane). The claim runs after the
/// recording (it is the outer side of a lateral join), so it sees its
/// changes: the next row of an ordered aggregate whose row was just
/// delivered is claimable at once. Returns the rows recorded and what was
/// claimed (rows in insertion order, and the claimed rows that could not be
/// decoded, each alone).
pub async fn record_and_claim(
    db: &dyn Executor,
    previous: Unrecorded<'_>,
    request: ClaimRequest<'_>,
) -> Result<(u64, Claimed), DbError> {
    let params = request
        .params(CLAIM_BUDGET_BYTES)
        .with("results", previous.json(previous.default_token()))
        .with("recorded_by", previous.default_token());
    let rows = db.execute(&RECORD_AND_CLAIM, &params).await?.rows;
    let recorded = match rows.first() {
        Some(r) => u64::try_from(r.i64("recorded")?).unwrap_or(0),
        None => 0,
    };
    Ok((recorded, Claimed::decode(&rows)?))
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

/// The CTE of [`PURGE_DELETE`] and [`PURGE_ARCHIVE`] that moves the
/// delivering attempt of each row they take out of the outbox (kept on the
/// row since migration 17) into `outbox_attempts`, when it is younger than
/// `:attempts_after` (the attempt log's own retention; NULL: kept forever),
/// so the attempt log keeps its own period whatever the outbox's is.
macro_rules! keep_delivering_attempts {
    ($from:literal) => {
        concat!(
            "kept AS (
        INSERT INTO outbox_attempts (outbox_id, attempt, attempted_at, destination,
                                     status_code, latency_ms, error, response_excerpt)
        SELECT g.id, g.attempts, g.last_attempted_at, g.destination, g.last_status_code,
               g.last_latency_ms, g.last_error, g.last_response
          FROM ",
            $from,
            " AS g
         WHERE g.last_attempted_at IS NOT NULL
           AND (CAST(:attempts_after AS timestamptz) IS NULL
                OR g.last_attempted_at >= CAST(:attempts_after AS timestamptz)))"
        )
    };
}

pub const PURGE_DELETE: Statement = Statement::new(
    "outbox.purge_delete",
    concat!(
        "WITH old AS (
        SELECT id FROM outbox
         WHERE status = 'delivered' AND created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM outbox AS o WHERE o.id = ANY (ARRAY(SELECT id FROM old))
         RETURNING o.id, o.payload_key, o.attempts, o.destination, o.last_attempted_at,
                   o.last_status_code, o.last_latency_ms, o.last_error, o.last_response
    ), queued AS (
        INSERT INTO blob_deletions (key)
        SELECT DISTINCT payload_key FROM deleted WHERE payload_key IS NOT NULL
        ON CONFLICT (key) DO NOTHING
    ), ",
        keep_delivering_attempts!("deleted"),
        "
    SELECT count(*) AS purged FROM deleted"
    ),
);

pub const PURGE_ARCHIVE: Statement = Statement::new(
    "outbox.purge_archive",
    concat!(
        "WITH old AS (
        SELECT id FROM outbox
         WHERE status = 'delivered' AND created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), moved AS (
        DELETE FROM outbox AS o WHERE o.id = ANY (ARRAY(SELECT id FROM old)) RETURNING o.*
    ), ",
        keep_delivering_attempts!("moved"),
        "
    INSERT INTO outbox_archive SELECT * FROM moved"
    ),
);

pub const PURGE_ARCHIVED: Statement = Statement::new(
    "outbox.purge_archived",
    "WITH old AS (
        SELECT id FROM outbox_archive
         WHERE created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM outbox_archive AS a WHERE a.id = ANY (ARRAY(SELECT id FROM old))
         RETURNING a.payload_key
    ), queued AS (
        INSERT INTO blob_deletions (key)
        SELECT DISTINCT payload_key FROM deleted WHERE payload_key IS NOT NULL
        ON CONFLICT (key) DO NOTHING
    )
    SELECT count(*) AS purged FROM deleted",
);

/// The archive's own retention: deletes at most `limit` archived rows
/// created before `cutoff` and queues their blob keys in `blob_deletions`;
/// returns how many. One statement.
pub async fn purge_archived(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, DbError> {
    crate::store::purge_once(db, &PURGE_ARCHIVED, cutoff, limit).await
}

/// Deletes (or archives) at most `limit` delivered rows created before
/// `cutoff`; returns how many. Dead rows are kept for the operator. One
/// statement. Deleting queues the blob keys of the deleted rows in
/// `blob_deletions` (the relay's retention deletes the objects no row
/// refers to any more); archived rows keep their references, and so their
/// objects.
///
/// The delivering attempt of each row taken out (on the row since
/// migration 17) moves into `outbox_attempts` when it is at least as young
/// as `attempts_after` (the attempt log's cutoff; `None`: the log is kept
/// forever, every such attempt moves), so the attempt log keeps its own
/// retention.
pub async fn purge_finished(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    attempts_after: Option<DateTime<Utc>>,
    limit: i64,
    mode: Retention,
) -> Result<u64, DbError> {
    let params =
        params! { "cutoff" => cutoff, "limit" => limit, "attempts_after" => attempts_after };
    Ok(match mode {
        Retention::Delete => {
            let row = fetch_one(db, &PURGE_DELETE, &params).await?;
            u64::try_from(row.i64("purged")?).unwrap_or(0)
        }
        Retention::Archive => db.execute(&PURGE_ARCHIVE, &params).await?.affected,
    })
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

/// The payload columns of a row read with [`outbox_columns`]: the inline
/// text (empty unless inline and returned) and where the payload is.
fn row_payload(r: &Row) -> Result<(String, PayloadStorage), DbError> {
    let decode = |column: &str, detail: String| DbError::Decode {
        statement: r.statement(),
        column: column.into(),
        detail,
    };
    let size = r
        .opt_i64("payload_size")?
        .map(|n| u64::try_from(n).map_err(|_| decode("payload_size", format!("{n} is negative"))))
        .transpose()?;
    if let Some(key) = r.opt_text("payload_key")? {
        let key = BlobKey::parse(&key).map_err(|e| decode("payload_key", e.to_string()))?;
        let sha256: [u8; 32] = r
            .bytes("payload_sha256")?
            .try_into()
            .map_err(|b: Vec<u8>| {
                decode(
                    "payload_sha256",
                    format!("{} bytes, a sha256 has 32", b.len()),
                )
            })?;
        let size = size.ok_or_else(|| decode("payload_size", "unexpected NULL".into()))?;
        return Ok((
            String::new(),
            PayloadStorage::Blob(BlobRef { key, size, sha256 }),
        ));
    }
    match r.opt_text("payload")? {
        Some(text) => Ok((text, PayloadStorage::Inline)),
        None => Ok((
            String::new(),
            PayloadStorage::InlineUnread {
                size: size.unwrap_or(0),
            },
        )),
    }
}

fn outbox_row(r: &Row) -> Result<OutboxRow, DbError> {
    let (payload, payload_storage) = row_payload(r)?;
    Ok(OutboxRow {
        id: r.uuid("id")?,
        seq: r.i64("seq")?,
        aggregate_type: r.text("aggregate_type")?,
        aggregate_id: r.text("aggregate_id")?,
        event_type: r.text("event_type")?,
        destination: r.text("destination")?,
        payload,
        payload_storage,
        status: parse_status(r, &r.text("status")?)?,
        attempts: r.i64("attempts")?,
        next_attempt_at: r.timestamp("next_attempt_at")?,
        locked_until: r.opt_timestamp("locked_until")?,
        locked_by: r.opt_text("locked_by")?,
        last_error: r.opt_text("last_error")?,
        last_status_code: r.opt_i64("last_status_code")?,
        created_at: r.timestamp("created_at")?,
        processed_at: r.opt_timestamp("processed_at")?,
        origin: super::Origin::from_row(r)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::payload::READ_CHUNK_BYTES;
    use super::*;

    #[test]
    fn reads_return_inline_payloads_only_up_to_the_chunk_size() {
        let bound = format!("<= {READ_CHUNK_BYTES} THEN CAST(o.payload AS text)");
        assert!(CLAIM_DUE.sql.contains(&bound), "{}", CLAIM_DUE.sql);
        assert!(
            RECORD_AND_CLAIM.sql.contains(&bound.replace("o.", "c.")),
            "{}",
            RECORD_AND_CLAIM.sql
        );
        assert!(GET.sql.contains(&bound.replace("o.", "")), "{}", GET.sql);
    }

    #[test]
    fn the_claim_budget_leaves_an_eighth_of_the_response_spare() {
        assert_eq!(CLAIM_BUDGET_BYTES, 917_504);
        // 30 KB payloads: a batch of 50 takes two claims
        const { assert!(CLAIM_BUDGET_BYTES < 50 * 30_000) };
        const { assert!(CLAIM_BUDGET_BYTES > 25 * 30_000) };
    }

    #[test]
    fn last_errors_are_cut_on_a_char_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_LAST_ERROR_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_LAST_ERROR_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }
}
