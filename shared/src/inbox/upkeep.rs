//! Keeping the inbox healthy: the sweeper's statement (stranded rows sent
//! again, at doubling intervals), the counts and the oldest active row (stats,
//! the inbox lag), and retention (delete or archive old processed rows).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::InboxStatus;
use super::repo::parse_status;
use crate::params;
use crate::store::{DbError, Executor, Retention, Statement, fetch_one};

/// A row the sweeper must enqueue again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrandedRow {
    /// The row.
    pub id: Uuid,
    /// Its partner.
    pub partner: String,
    /// Its event id.
    pub event_id: String,
}

pub const SWEEP_STRANDED: Statement = Statement::new(
    "inbox.sweep_stranded",
    "WITH stranded AS (
        SELECT id FROM inbox
         WHERE status IN ('pending', 'processing', 'deferred')
           AND next_attempt_at <= CAST(:cutoff AS timestamptz)
           -- not re-sent every grace period while its message merely waits
           -- behind a backlog: the pause since the last send must also be
           -- as long as the row had waited before it (doubling: 5, 10, 20,
           -- 40 min...), at most an hour
           AND (enqueued_at IS NULL
                OR (enqueued_at <= CAST(:cutoff AS timestamptz)
                    AND CAST(:now AS timestamptz) - enqueued_at
                        >= LEAST(enqueued_at - received_at, INTERVAL '1 hour')))
         ORDER BY next_attempt_at
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    )
    UPDATE inbox AS i SET enqueued_at = CAST(:now AS timestamptz)
      FROM stranded AS s
     WHERE i.id = s.id
    RETURNING i.id, i.partner, i.event_id, i.next_attempt_at",
);

/// Finds active rows overdue by more than `grace` (pending rows the queue
/// never delivered, deferred rows whose retry never came, processing rows
/// whose lease expired long ago) and not enqueued within `grace`, nor within
/// the time the row had waited before its last send (at most an hour: a row
/// whose message is merely queued behind a slow processor is sent again at
/// 5, 10, 20, 40, 80 minutes, then hourly, not every 5 minutes), marks them
/// enqueued at `now` and returns them, oldest due first, at most `limit`.
/// One statement; concurrent sweepers skip each other's rows.
pub async fn sweep_stranded(
    db: &dyn Executor,
    now: DateTime<Utc>,
    grace: chrono::Duration,
    limit: i64,
) -> Result<Vec<StrandedRow>, DbError> {
    let rows = db
        .execute(
            &SWEEP_STRANDED,
            &params! { "now" => now, "cutoff" => now - grace, "limit" => limit },
        )
        .await?
        .rows;
    let mut out: Vec<(DateTime<Utc>, StrandedRow)> = rows
        .iter()
        .map(|r| {
            Ok((
                r.timestamp("next_attempt_at")?,
                StrandedRow {
                    id: r.uuid("id")?,
                    partner: r.text("partner")?,
                    event_id: r.text("event_id")?,
                },
            ))
        })
        .collect::<Result<_, DbError>>()?;
    out.sort_by_key(|(due, row)| (*due, row.id));
    Ok(out.into_iter().map(|(_, row)| row).collect())
}

pub const COUNTS: Statement = Statement::new(
    "inbox.counts_by_status",
    "SELECT status, count(*) AS n FROM inbox GROUP BY status",
);

/// Rows per status; every status is present (zero when none).
pub async fn counts_by_status(db: &dyn Executor) -> Result<HashMap<InboxStatus, i64>, DbError> {
    let rows = db.execute(&COUNTS, &params! {}).await?.rows;
    let mut out: HashMap<InboxStatus, i64> = InboxStatus::ALL.iter().map(|s| (*s, 0)).collect();
    for r in &rows {
        let status = parse_status(r, "status", &r.text("status")?)?;
        out.insert(status, r.i64("n")?);
    }
    Ok(out)
}

pub const OLDEST_ACTIVE: Statement = Statement::new(
    "inbox.oldest_active",
    "SELECT min(received_at) AS oldest FROM inbox
      WHERE status IN ('pending', 'processing', 'deferred')",
);

/// `received_at` of the oldest row not yet finished (pending, processing or
/// deferred), if any. Its age is the inbox lag.
pub async fn oldest_active_received_at(
    db: &dyn Executor,
) -> Result<Option<DateTime<Utc>>, DbError> {
    fetch_one(db, &OLDEST_ACTIVE, &params! {})
        .await?
        .opt_timestamp("oldest")
}

pub const PURGE_DELETE: Statement = Statement::new(
    "inbox.purge_delete",
    "WITH old AS (
        SELECT id FROM inbox
         WHERE status = 'processed' AND received_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM inbox AS i WHERE i.id = ANY (ARRAY(SELECT id FROM old)) RETURNING i.body_key
    ), queued AS (
        INSERT INTO blob_deletions (key)
        SELECT DISTINCT body_key FROM deleted WHERE body_key IS NOT NULL
        ON CONFLICT (key) DO NOTHING
    )
    SELECT count(*) AS purged FROM deleted",
);

pub const PURGE_ARCHIVE: Statement = Statement::new(
    "inbox.purge_archive",
    "WITH old AS (
        SELECT id FROM inbox
         WHERE status = 'processed' AND received_at < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), moved AS (
        DELETE FROM inbox AS i WHERE i.id = ANY (ARRAY(SELECT id FROM old)) RETURNING i.*
    )
    INSERT INTO inbox_archive SELECT * FROM moved",
);

pub const PURGE_ARCHIVED: Statement = Statement::new(
    "inbox.purge_archived",
    crate::store::purge_archived_statement!("inbox_archive", "received_at", "body_key"),
);

/// The archive's own retention: deletes at most `limit` archived rows
/// received before `cutoff` and queues their blob keys in `blob_deletions`
/// (an object goes only once no row, live or archived, refers to it); returns
/// how many. One statement.
pub async fn purge_archived(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, DbError> {
    crate::store::purge_once(db, &PURGE_ARCHIVED, cutoff, limit).await
}

/// Deletes (or archives) at most `limit` processed rows received before
/// `cutoff`; returns how many. Call repeatedly until it returns less than
/// `limit`. Quarantined and dead rows are kept: they wait for an operator.
/// One statement. Deleting queues the blob keys of the deleted rows in
/// `blob_deletions` (the relay's retention deletes the objects no row
/// refers to any more); archived rows keep their references, and so their
/// objects.
pub async fn purge_finished(
    db: &dyn Executor,
    cutoff: DateTime<Utc>,
    limit: i64,
    mode: Retention,
) -> Result<u64, DbError> {
    crate::store::purge_with(db, &PURGE_DELETE, &PURGE_ARCHIVE, cutoff, limit, mode).await
}
