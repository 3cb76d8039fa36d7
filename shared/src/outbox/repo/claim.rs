//! The relay's claim of due rows (`outbox_claim_due`, docs/relay.md): its
//! statement, its request and what it returns.

use super::*;

pub const CLAIM_DUE: Statement = Statement::new(
    "outbox.claim_due",
    concat!(
        "SELECT ",
        outbox_columns!("m."),
        ", ",
        endpoint_within_budget!(),
        " FROM (SELECT ",
        outbox_columns!("i."),
        ", ",
        endpoint_of_first!(),
        " FROM (SELECT ",
        outbox_columns!("o."),
        ", ",
        first_of_endpoint!("o."),
        " FROM outbox_claim_due(",
        claim_args!(),
        ") AS o) AS i OFFSET 0) AS m"
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

/// The most bytes of endpoints' documents a claim returns (with the first
/// row of each endpoint, in insertion order; the rest the relay reads
/// itself): 3/32 of the Data API's response, within the eighth the rows'
/// budget leaves spare, so a claim's answer stays under 1 MiB. About 160
/// endpoints of one secret each.
pub const ENDPOINT_DOCS_BUDGET_BYTES: i64 = MAX_RESPONSE_BYTES / 32 * 3;

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
    pub(super) fn params(&self, budget: i64) -> Params {
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
    /// Tenants' endpoints among the rows' destinations, each with what the
    /// relay needs to deliver to it (its document, `endpoint_doc!`), as the claim
    /// read them (within [`ENDPOINT_DOCS_BUDGET_BYTES`]; the relay reads
    /// the others itself).
    pub endpoints: Vec<(String, serde_json::Value)>,
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
    pub(super) fn decode(rows: &[Row]) -> Result<Claimed, DbError> {
        let mut out = Claimed::default();
        for r in rows {
            let Some(id) = r.opt_uuid("id")? else {
                continue;
            };
            match outbox_row(r) {
                Ok(row) => {
                    // (a document that does not decode is read again by the
                    // relay, which then names what is wrong with it)
                    if let Ok(Some(doc)) = r.opt_json("endpoint") {
                        out.endpoints.push((row.destination.clone(), doc));
                    }
                    out.rows.push(row)
                }
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
