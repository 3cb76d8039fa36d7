//! Which blob objects rows still refer to: the lock that keeps retention
//! from deleting an object a writer is about to refer to, and the queue of
//! objects retention may delete.
//!
//! Objects are content-addressed, so two rows can share one (the same bytes
//! for the same partner or destination), and an object written for a new
//! row may already exist for an old row that retention is deleting. The
//! protocol (PostgreSQL advisory locks, taken per transaction, so it holds
//! through the Data API, which has no sessions):
//!
//! - a writer takes the key's lock SHARED ([`lock_shared`]) in its
//!   transaction BEFORE it puts the object, then writes the row: until it
//!   commits, retention cannot take the lock, so it leaves the object alone;
//! - the statements that delete rows queue their keys in `blob_deletions`
//!   (migration 0007), in the same statement;
//! - retention, in one transaction per batch: picks queued keys and takes
//!   each key's lock EXCLUSIVELY without waiting ([`lock_queued`]; a key a
//!   writer holds stays queued), then, in a later statement and so a later
//!   snapshot, which sees every writer that committed before the lock was
//!   taken, dequeues them and says which ones a row still refers to
//!   ([`dequeue`]); it deletes the others' objects while it still holds the
//!   locks, and commits. A writer that comes after waits for that commit and
//!   then puts the object again.
//!
//! Ingest (the inbox's writer) does not take the lock yet: an inbox body
//! stored again while retention deletes the old row with the same bytes can
//! lose its object (the window is one insert; see docs/blobs.md).

use crate::blob::BlobKey;
use crate::params;
use crate::store::{DbError, Executor, Row, Statement};

/// The first key of every blob lock (`"blob"` in ASCII); the second is
/// `hashtext(key)`. The two-key form keeps these locks apart from the
/// one-key lock of migrations.
pub const LOCK_CLASS: i64 = 0x626c_6f62;

pub const LOCK_SHARED: Statement = Statement::new(
    "blob_refs.lock_shared",
    "SELECT true AS locked
       FROM (SELECT pg_advisory_xact_lock_shared(CAST(:class AS integer), hashtext(:key))) AS l",
);

/// Takes `key`'s lock shared until the end of the transaction `tx` runs
/// (waiting while retention holds it): call it before putting an object a
/// row of this transaction will refer to.
pub async fn lock_shared(tx: &dyn Executor, key: &BlobKey) -> Result<(), DbError> {
    tx.execute(
        &LOCK_SHARED,
        &params! { "class" => LOCK_CLASS, "key" => key.as_str() },
    )
    .await?;
    Ok(())
}

pub const LOCK_QUEUED: Statement = Statement::new(
    "blob_refs.lock_queued",
    "SELECT q.key, pg_try_advisory_xact_lock(CAST(:class AS integer), hashtext(q.key)) AS locked
       FROM (SELECT key FROM blob_deletions LIMIT :limit FOR UPDATE SKIP LOCKED) AS q",
);

/// Queued keys picked by [`lock_queued`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picked {
    /// Keys whose lock this transaction now holds exclusively.
    pub locked: Vec<String>,
    /// Keys a writer holds (they stay queued for the next run).
    pub busy: usize,
}

impl Picked {
    /// How many keys were picked.
    pub fn len(&self) -> usize {
        self.locked.len() + self.busy
    }

    /// True when the queue had nothing to pick.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Picks up to `limit` queued keys (skipping those another retention holds)
/// and takes the lock of each one no writer holds, without waiting. Run it
/// in a transaction: the locks last until it ends.
pub async fn lock_queued(tx: &dyn Executor, limit: i64) -> Result<Picked, DbError> {
    let rows = tx
        .execute(
            &LOCK_QUEUED,
            &params! { "class" => LOCK_CLASS, "limit" => limit },
        )
        .await?
        .rows;
    let mut picked = Picked::default();
    for r in &rows {
        if r.bool("locked")? {
            picked.locked.push(r.text("key")?);
        } else {
            picked.busy += 1;
        }
    }
    Ok(picked)
}

pub const DEQUEUE: Statement = Statement::new(
    "blob_refs.dequeue",
    "DELETE FROM blob_deletions AS q
      WHERE q.key = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(:keys AS jsonb))))
     RETURNING q.key,
               EXISTS (SELECT 1 FROM inbox AS i WHERE i.body_key = q.key)
               OR EXISTS (SELECT 1 FROM inbox_archive AS ia WHERE ia.body_key = q.key)
               OR EXISTS (SELECT 1 FROM outbox AS o WHERE o.payload_key = q.key)
               OR EXISTS (SELECT 1 FROM outbox_archive AS oa WHERE oa.payload_key = q.key)
               AS referenced",
);

/// A dequeued key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dequeued {
    /// The key, as queued.
    pub key: String,
    /// True when a row (inbox, outbox or their archives) still refers to it:
    /// its object must stay.
    pub referenced: bool,
}

/// Removes `keys` from the queue and says, for each, whether a row still
/// refers to it (through the key indexes of migration 0007). Run it after
/// [`lock_queued`], in the same transaction.
pub async fn dequeue(tx: &dyn Executor, keys: &[String]) -> Result<Vec<Dequeued>, DbError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let rows = tx
        .execute(
            &DEQUEUE,
            &params! { "keys" => serde_json::Value::from(keys.to_vec()) },
        )
        .await?
        .rows;
    rows.iter().map(dequeued).collect()
}

fn dequeued(r: &Row) -> Result<Dequeued, DbError> {
    Ok(Dequeued {
        key: r.text("key")?,
        referenced: r.bool("referenced")?,
    })
}

pub const REQUEUE: Statement = Statement::new(
    "blob_refs.requeue",
    "INSERT INTO blob_deletions (key)
     SELECT jsonb_array_elements_text(CAST(:keys AS jsonb))
     ON CONFLICT (key) DO NOTHING",
);

/// Queues `keys` again (objects whose delete failed for now: the next run
/// tries again).
pub async fn requeue(tx: &dyn Executor, keys: &[String]) -> Result<(), DbError> {
    if keys.is_empty() {
        return Ok(());
    }
    tx.execute(
        &REQUEUE,
        &params! { "keys" => serde_json::Value::from(keys.to_vec()) },
    )
    .await?;
    Ok(())
}

pub const QUEUED: Statement = Statement::new(
    "blob_refs.queued",
    "SELECT count(*) AS n FROM blob_deletions",
);

/// How many keys wait in the queue (tests, operators).
pub async fn queued(db: &dyn Executor) -> Result<i64, DbError> {
    crate::store::fetch_one(db, &QUEUED, &params! {})
        .await?
        .i64("n")
}
