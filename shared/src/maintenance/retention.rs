//! Retention: finished rows older than `HOOKBOX_RETENTION_DAYS` are deleted
//! (or archived) in bounded batches; then the blob objects that deleted rows
//! referred to and that no remaining row refers to are deleted.
//!
//! ```text
//! inbox::purge_finished  ≤ purge_max_batches × purge_batch rows  (1 statement each)
//! outbox::purge_finished ≤ purge_max_batches × purge_batch rows  (1 statement each)
//!   deleting queues the rows' blob keys in blob_deletions (same statement);
//!   both move each row's delivering attempt into outbox_attempts while it is
//!   younger than the attempt log's retention (same statement)
//! purge_childless_messages: ≤ purge_max_batches × purge_batch tenants'
//!   messages no delivery names (published with no matching endpoint, or
//!   their endpoint deleted), older than the cutoff (1 statement each;
//!   a message with deliveries goes with its last one, migration 22)
//! outbox::attempts::purge (HOOKBOX_ATTEMPT_RETENTION_DAYS, default 30):
//!                        ≤ purge_max_batches × purge_batch attempt log rows
//! inbox::purge_archived, outbox::purge_archived (HOOKBOX_ARCHIVE_RETENTION_DAYS):
//!                        ≤ purge_max_batches × purge_batch archived rows each;
//!   they queue their blob keys in blob_deletions too
//! blob_deletions:        ≤ purge_max_batches × 100 keys, one transaction each:
//!   lock the keys no writer holds → dequeue them, noting which a row still
//!   refers to → delete the other objects (16 at a time) → requeue the ones
//!   the store could not delete for now → commit
//! ```
//!
//! Archived rows keep their references, so their objects stay until the
//! archive's own retention deletes the rows. A failed
//! object delete never fails retention: it is logged and counted
//! (`BlobDeleteFailed`); an outage is tried again by the next run, a refusal
//! leaves the object behind as an orphan. The protocol that keeps an object
//! a writer is about to refer to is [`crate::outbox::blob_refs`].

use futures::StreamExt as _;

use crate::blob::BlobKey;
use crate::inbox;
use crate::outbox::relay::{Relay, chrono_duration};
use crate::outbox::{self, blob_refs};
use crate::store::{DbError, Executor, Statement, Transaction, fetch_one};

/// Keys per transaction of the object deletes.
pub const BLOB_DELETE_BATCH: i64 = 100;

/// Object deletes in flight at once.
pub const BLOB_DELETES_IN_FLIGHT: usize = 16;

/// What retention did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Inbox rows deleted or archived.
    pub inbox: u64,
    /// Outbox rows deleted or archived.
    pub outbox: u64,
    /// Archived rows deleted by the archive's own retention (both tables).
    pub archived_deleted: u64,
    /// Attempt log rows deleted by its own retention.
    pub attempts_deleted: u64,
    /// Tenants' messages no delivery named, deleted by the retention.
    pub messages_deleted: u64,
    /// Blob objects deleted (no row referred to them any more).
    pub blobs_deleted: u64,
    /// Queued objects kept because another row still refers to them (the
    /// same bytes stored for another row).
    pub blobs_kept: u64,
    /// Objects whose delete failed: tried again by the next run when the
    /// store was unavailable, left as orphans when it refused.
    pub blob_delete_failed: u64,
}

/// What one transaction of object deletes did.
#[derive(Debug, Clone, Copy, Default)]
struct BlobBatch {
    /// Keys picked from the queue.
    picked: usize,
    /// Of them, keys a writer holds (left queued).
    busy: usize,
    /// Deletes the store could not do for now (requeued).
    retry: usize,
}

const PURGE_CHILDLESS_MESSAGES: Statement = Statement::new(
    "retention.purge_childless_messages",
    "SELECT hookbox_messages_purge(CAST(:before AS timestamptz), CAST(:limit AS integer)) AS n",
);

/// Deletes at most `limit` of the tenants' messages that no delivery names
/// and that were created before `before`, oldest first; how many.
pub async fn purge_childless_messages(
    db: &dyn Executor,
    before: chrono::DateTime<chrono::Utc>,
    limit: i64,
) -> Result<u64, DbError> {
    let row = fetch_one(
        db,
        &PURGE_CHILDLESS_MESSAGES,
        &crate::params! { "before" => before, "limit" => limit },
    )
    .await?;
    Ok(u64::try_from(row.i64("n")?).unwrap_or(0))
}

impl Relay {
    /// Deletes (or archives) finished rows older than the retention, in
    /// bounded batches, then the blob objects deleted rows referred to that
    /// no remaining row refers to. Dead outbox rows and quarantined/dead
    /// inbox rows are kept (they wait for an operator), and so are their
    /// objects. A database error ends retention (the next run goes on where
    /// it stopped: queued keys stay queued); a blob store error does not.
    pub async fn purge(&self) -> Result<PurgeReport, DbError> {
        let mut report = PurgeReport::default();
        if let Some(retention) = self.settings.retention {
            let cutoff = self.clock.now() - chrono_duration(retention);
            let (batch, mode) = (self.settings.purge_batch, self.settings.retention_mode);
            for _ in 0..self.settings.purge_max_batches {
                let n = inbox::purge_finished(self.db.as_ref(), cutoff, batch, mode).await?;
                report.inbox += n;
                if (n as i64) < batch {
                    break;
                }
            }
            let attempts_after = self
                .settings
                .attempt_retention
                .map(|keep| self.clock.now() - chrono_duration(keep));
            for _ in 0..self.settings.purge_max_batches {
                let n =
                    outbox::purge_finished(self.db.as_ref(), cutoff, attempts_after, batch, mode)
                        .await?;
                report.outbox += n;
                if (n as i64) < batch {
                    break;
                }
            }
            for _ in 0..self.settings.purge_max_batches {
                let n = purge_childless_messages(self.db.as_ref(), cutoff, batch).await?;
                report.messages_deleted += n;
                if (n as i64) < batch {
                    break;
                }
            }
        }
        if let Some(retention) = self.settings.archive_retention {
            let cutoff = self.clock.now() - chrono_duration(retention);
            let batch = self.settings.purge_batch;
            for _ in 0..self.settings.purge_max_batches {
                let n = inbox::purge_archived(self.db.as_ref(), cutoff, batch).await?;
                report.archived_deleted += n;
                if (n as i64) < batch {
                    break;
                }
            }
            for _ in 0..self.settings.purge_max_batches {
                let n = outbox::purge_archived(self.db.as_ref(), cutoff, batch).await?;
                report.archived_deleted += n;
                if (n as i64) < batch {
                    break;
                }
            }
        }
        if let Some(retention) = self.settings.attempt_retention {
            let cutoff = self.clock.now() - chrono_duration(retention);
            let batch = self.settings.purge_batch;
            for _ in 0..self.settings.purge_max_batches {
                let n = outbox::attempts::purge(self.db.as_ref(), cutoff, batch).await?;
                report.attempts_deleted += n;
                if (n as i64) < batch {
                    break;
                }
            }
        }
        crate::failpoint::hit!(crate::failpoint::RETENTION_AFTER_PURGE);
        // (also with retention off: keys queued before it was switched off)
        self.delete_unreferenced_blobs(&mut report).await?;
        Ok(report)
    }

    /// Works through `blob_deletions`, one transaction per
    /// [`BLOB_DELETE_BATCH`] keys, at most `purge_max_batches` of them.
    async fn delete_unreferenced_blobs(&self, report: &mut PurgeReport) -> Result<(), DbError> {
        if blob_refs::queued(self.db.as_ref()).await? == 0 {
            return Ok(());
        }
        for _ in 0..self.settings.purge_max_batches {
            let tx = self.db.begin().await?;
            let batch = match self.delete_blob_batch(tx.as_ref(), report).await {
                Ok(batch) => batch,
                Err(e) => {
                    if let Err(rollback) = tx.rollback().await {
                        tracing::warn!(error = %rollback, "rollback failed; the connection is discarded");
                    }
                    return Err(e);
                }
            };
            tx.commit().await?;
            let all_busy = batch.busy == batch.picked;
            // the store is out (try again next run), writers hold what is
            // left, or the queue is empty
            if batch.retry > 0 || all_busy || (batch.picked as i64) < BLOB_DELETE_BATCH {
                break;
            }
        }
        Ok(())
    }

    /// One transaction of object deletes: lock, dequeue, delete, requeue
    /// what failed for now.
    async fn delete_blob_batch(
        &self,
        tx: &dyn Transaction,
        report: &mut PurgeReport,
    ) -> Result<BlobBatch, DbError> {
        let picked = blob_refs::lock_queued(tx, BLOB_DELETE_BATCH).await?;
        let mut batch = BlobBatch {
            picked: picked.len(),
            busy: picked.busy,
            retry: 0,
        };
        // a later statement than the locks: it sees every writer that
        // committed before they were taken
        let dequeued = blob_refs::dequeue(tx, &picked.locked).await?;
        let mut doomed = Vec::new();
        for d in dequeued {
            if d.referenced {
                report.blobs_kept += 1;
                continue;
            }
            match BlobKey::parse(&d.key) {
                Ok(key) => doomed.push(key),
                // only a hand-made row can hold such a key: nothing to delete
                Err(e) => {
                    tracing::warn!(error = %e, "a queued blob key is not a valid key; dropped")
                }
            }
        }
        let blobs = self.blobs.as_ref();
        let deletes: Vec<_> = futures::stream::iter(doomed)
            .map(|key| async move {
                let deleted = blobs.delete(&key).await;
                (key, deleted)
            })
            .buffer_unordered(BLOB_DELETES_IN_FLIGHT)
            .collect()
            .await;
        let mut retry = Vec::new();
        for (key, deleted) in deletes {
            match deleted {
                Ok(()) => report.blobs_deleted += 1,
                Err(e) if e.is_retryable() => {
                    report.blob_delete_failed += 1;
                    tracing::warn!(key = %key, error = %e, "cannot delete an object no row refers to; the next run tries again");
                    retry.push(key.to_string());
                }
                Err(e) => {
                    report.blob_delete_failed += 1;
                    tracing::error!(key = %key, error = %e, "cannot delete an object no row refers to; it stays behind as an orphan");
                }
            }
        }
        batch.retry = retry.len();
        blob_refs::requeue(tx, &retry).await?;
        Ok(batch)
    }
}
