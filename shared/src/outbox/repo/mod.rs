//! Outbox statements: one statement per function, the same SQL text on every
//! adapter, time from the caller. The claim is in `claim.rs`,
//! recording attempts' results (and the next claim with them) in
//! `record.rs`; counts, retention and reads by id here.

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

/// What the relay needs of a tenant's endpoint to deliver to it, as one
/// document `doc`: its URL, custom headers, rate limit (its own, else its
/// tenant's), its destination's settings and its sealed secrets not expired
/// when it was written, each with its expiry (never opened here: sealed
/// under a data key the relay unwraps; the relay drops those past their
/// expiry when it signs). The endpoint whose id is `$id` (an SQL
/// expression, and any further condition); no row when none. The claims
/// return it with the first row of each endpoint in a batch; the directory
/// reads the others with it ([`crate::tenants::directory::ENDPOINTS`]).
/// It is kept on the endpoint's row (`relay_doc`, migration 33, rewritten by
/// triggers in the transaction of any change to what it holds), so reading
/// it is one probe of the endpoints' primary key: built at each claim from
/// the endpoint's four tables it cost four probes and about 10 µs an
/// endpoint (`EXPLAIN ANALYZE` of 100 endpoints of 10,000: 2.2-3.5 ms
/// built, 0.6-0.8 ms read).
macro_rules! endpoint_doc {
    ($id:literal) => {
        concat!(
            "SELECT e.relay_doc AS doc FROM hookbox_endpoints AS e WHERE e.id = ",
            $id
        )
    };
}
pub(crate) use endpoint_doc;

/// A claim's inner column `first_of_endpoint`: whether the row is the first
/// of a tenant's endpoint (`ep_…`) in the batch.
macro_rules! first_of_endpoint {
    ($p:literal) => {
        concat!(
            $p,
            "destination LIKE 'ep\\_%' AND row_number() OVER (PARTITION BY ",
            $p,
            "destination ORDER BY ",
            $p,
            "seq) = 1 AS first_of_endpoint"
        )
    };
}

/// A claim's outer column `endpoint`, from its middle query `m`: the first
/// row of each endpoint carries the endpoint's document ([`endpoint_doc`]),
/// in insertion order, while they add up to at most
/// [`ENDPOINT_DOCS_BUDGET_BYTES`] (the rest come back NULL: the relay reads
/// those endpoints itself).
macro_rules! endpoint_within_budget {
    () => {
        "CASE WHEN sum(octet_length(CAST(m.endpoint AS text))) OVER (ORDER BY m.seq) <= 98304
              THEN m.endpoint END AS endpoint"
    };
}

/// A claim's middle column `endpoint`, from its inner query `i`: the
/// document of the row's endpoint when the row is its first, else NULL
/// (read only then: as a join it was read for every row).
macro_rules! endpoint_of_first {
    () => {
        concat!(
            "CASE WHEN i.first_of_endpoint THEN (",
            endpoint_doc!("i.destination"),
            ") END AS endpoint"
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

mod claim;
mod record;

pub use claim::*;
pub use record::*;

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

/// The start of the outbox's retention statements: `old`, at most `:limit`
/// delivered rows created before `:cutoff`, locked (others skipped).
macro_rules! delivered_before_cutoff {
    () => {
        "WITH old AS (
        SELECT id FROM outbox
         WHERE status = 'delivered' AND created_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), "
    };
}

pub const PURGE_DELETE: Statement = Statement::new(
    "outbox.purge_delete",
    concat!(
        delivered_before_cutoff!(),
        "deleted AS (
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
        delivered_before_cutoff!(),
        "moved AS (
        DELETE FROM outbox AS o WHERE o.id = ANY (ARRAY(SELECT id FROM old)) RETURNING o.*
    ), ",
        keep_delivering_attempts!("moved"),
        "
    INSERT INTO outbox_archive SELECT * FROM moved"
    ),
);

pub const PURGE_ARCHIVED: Statement = Statement::new(
    "outbox.purge_archived",
    crate::store::purge_archived_statement!("outbox_archive", "created_at", "payload_key"),
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
    fn claims_return_endpoints_within_their_budget() {
        let bound = format!("<= {ENDPOINT_DOCS_BUDGET_BYTES}\n");
        for statement in [&CLAIM_DUE, &RECORD_AND_CLAIM] {
            assert!(statement.sql.contains(&bound), "{}", statement.sql);
            assert!(statement.sql.contains("LIKE 'ep\\_%'"), "{}", statement.sql);
        }
        assert!(crate::config::is_endpoint(&format!(
            "{}x",
            crate::config::ENDPOINT_PREFIX
        )));
        assert_eq!(crate::config::ENDPOINT_PREFIX, "ep_");
    }

    #[test]
    fn the_claim_budget_leaves_an_eighth_of_the_response_spare() {
        assert_eq!(CLAIM_BUDGET_BYTES, 917_504);
        // 30 KB payloads: a batch of 50 takes two claims
        const { assert!(CLAIM_BUDGET_BYTES < 50 * 30_000) };
        const { assert!(CLAIM_BUDGET_BYTES > 25 * 30_000) };
    }
}
