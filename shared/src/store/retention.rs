//! Retention's statements shared by the inbox and the outbox: one purge of
//! a table by mode (delete or archive), one deleting statement run, and the
//! shape of an archive's own purge.

use chrono::{DateTime, Utc};

use super::{DbError, Executor, Statement, fetch_one};

/// Runs one retention statement of a table: `delete` (which must return one
/// row with `purged`, the rows it deleted) or `archive` (which moves them),
/// with `:cutoff` and `:limit`; returns how many rows went. The inbox and the
/// outbox share it: only their statements differ.
pub(crate) async fn purge_with(
    db: &dyn Executor,
    delete: &Statement,
    archive: &Statement,
    cutoff: DateTime<Utc>,
    limit: i64,
    mode: Retention,
) -> Result<u64, DbError> {
    match mode {
        Retention::Delete => purge_once(db, delete, cutoff, limit).await,
        Retention::Archive => {
            let params = crate::params! { "cutoff" => cutoff, "limit" => limit };
            Ok(db.execute(archive, &params).await?.affected)
        }
    }
}

/// The statement of an archive's own retention (for [`purge_once`]): at
/// most `:limit` rows of `$archive` whose `$at` is before `:cutoff` deleted,
/// their blob keys (`$key`) queued in `blob_deletions`, the count as `purged`.
macro_rules! purge_archived_statement {
    ($archive:literal, $at:literal, $key:literal) => {
        concat!(
            "WITH old AS (
        SELECT id FROM ",
            $archive,
            "
         WHERE ",
            $at,
            " < CAST(:cutoff AS timestamptz)
         LIMIT :limit
         FOR UPDATE SKIP LOCKED
    ), deleted AS (
        DELETE FROM ",
            $archive,
            " AS a WHERE a.id = ANY (ARRAY(SELECT id FROM old))
         RETURNING a.",
            $key,
            "
    ), queued AS (
        INSERT INTO blob_deletions (key)
        SELECT DISTINCT ",
            $key,
            " FROM deleted WHERE ",
            $key,
            " IS NOT NULL
        ON CONFLICT (key) DO NOTHING
    )
    SELECT count(*) AS purged FROM deleted"
        )
    };
}
pub(crate) use purge_archived_statement;

/// Runs one deleting retention statement (`:cutoff`, `:limit`; one row with
/// `purged`); returns how many rows it deleted.
pub(crate) async fn purge_once(
    db: &dyn Executor,
    delete: &Statement,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<u64, DbError> {
    let params = crate::params! { "cutoff" => cutoff, "limit" => limit };
    let purged = fetch_one(db, delete, &params).await?.i64("purged")?;
    Ok(u64::try_from(purged).unwrap_or(0))
}

/// What retention does with finished rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Delete them.
    Delete,
    /// Move them to the `*_archive` table (same columns).
    Archive,
}
