//! Recording delivery attempts' results, alone or together with the next
//! claim (one statement per batch).

use super::*;

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
                   JOIN outbox_destinations AS d ON d.name = s.destination
                  -- a success changes only a destination that was not
                  -- healthy (migration 32: the index of those answers,
                  -- without reading each healthy destination's row)
                  WHERE NOT s.ok
                     OR s.destination = ANY(ARRAY(
                            SELECT f.name FROM outbox_destinations AS f
                             WHERE f.consecutive_failures <> 0 OR f.failing_since IS NOT NULL
                                OR f.open_until IS NOT NULL))) AS b
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
        " SELECT m.recorded, m.health_changed, ",
        outbox_columns!("m."),
        ", ",
        endpoint_within_budget!(),
        " FROM (SELECT i.recorded, i.health_changed, ",
        outbox_columns!("i."),
        ", ",
        endpoint_of_first!(),
        " FROM (SELECT r.n AS recorded, r.health AS health_changed, ",
        outbox_columns!("c."),
        ", ",
        first_of_endpoint!("c."),
        " FROM (SELECT count(*) AS n, (SELECT count(*) FROM health) AS health
                  FROM updated) AS r
          LEFT JOIN LATERAL outbox_claim_due(",
        claim_args!(),
        ") AS c ON true) AS i OFFSET 0) AS m"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_errors_are_cut_on_a_char_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_LAST_ERROR_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() <= MAX_LAST_ERROR_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }
}
