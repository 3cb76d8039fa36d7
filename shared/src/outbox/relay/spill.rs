//! Moving a payload out of its row: an entry whose envelope, with the
//! payload inside, is over what its SQS or EventBridge destination takes
//! (`max_entry_bytes`, as the transport counts it:
//! [`crate::delivery::needs_reference`]) has its payload put in the blob
//! store before the entry is handed to the transport, which then sends it
//! by reference (`payload_ref`). hookbox keeps payloads of up to 256 KiB in
//! their rows (`hookbox_publish`), so without this a payload hookbox
//! accepted could be dead for its size alone.
//!
//! The object is what an enqueue by reference writes: the payload's exact
//! text under its content-addressed key `outbox/{destination}/{sha256}`.
//! And the row is changed to refer to it, as such a row does (`payload`
//! NULL, `payload_key`, `payload_size`, `payload_sha256`: migration 0007's
//! "exactly one of the two"), so retention finds the object the way it
//! finds every other (the row's delete queues its key; the object goes once
//! no row refers to it), and later attempts read the same bytes from the
//! store. One transaction: the key's lock taken shared first
//! ([`blob_refs::lock_shared`]: retention cannot delete the object, which
//! may be an older row's, until the row refers to it), the row's update
//! (only while this batch holds its lease and the payload is still in the
//! row), the put, the commit. A commit that fails after the put leaves an
//! orphan (docs/blobs.md, "Orphans"); the row is unchanged and the next
//! attempt does it again.

use bytes::Bytes;

use super::Relay;
use crate::blob::{self, BlobError, BlobKey, BlobKeyError, BlobRef, OUTBOX_PREFIX};
use crate::outbox::{OutboxRow, blob_refs};
use crate::params;
use crate::store::{DbError, Statement};

pub const PAYLOAD_TO_BLOB: Statement = Statement::new(
    "relay.payload_to_blob",
    "UPDATE outbox
        SET payload = NULL,
            payload_key = :key,
            payload_size = CAST(:size AS bigint),
            payload_sha256 = CAST(:sha256 AS bytea)
      WHERE id = :id AND locked_by = :lease AND status = 'pending'
        AND payload IS NOT NULL AND payload_key IS NULL
     RETURNING id",
);

/// Why a payload could not be moved to the blob store.
#[derive(Debug, thiserror::Error)]
pub(super) enum SpillError {
    /// The destination's name cannot be a key segment.
    #[error("no blob key for it: {0}")]
    Key(#[from] BlobKeyError),
    /// The blob store failed.
    #[error("{0}")]
    Blob(#[from] BlobError),
    /// The database failed.
    #[error("{0}")]
    Db(#[from] DbError),
}

impl Relay {
    /// Puts `payload` (row `row`'s, read whole) in the blob store and makes
    /// the row refer to it. `Ok(None)`: the row is no longer this batch's
    /// (its lease ran out) or no longer holds its payload; nothing changed.
    pub(super) async fn move_to_blob(
        &self,
        row: &OutboxRow,
        payload: &str,
    ) -> Result<Option<BlobRef>, SpillError> {
        let sha256 = blob::sha256(payload.as_bytes());
        let key = BlobKey::content(OUTBOX_PREFIX, &row.destination, &sha256)?;
        let reference = BlobRef {
            key,
            size: payload.len() as u64,
            sha256,
        };
        let lease = row.locked_by.as_deref().unwrap_or_default();
        let tx = self.db.begin().await?;
        let moved: Result<bool, SpillError> = async {
            blob_refs::lock_shared(tx.as_ref(), &reference.key).await?;
            let updated = tx
                .execute(
                    &PAYLOAD_TO_BLOB,
                    &params! {
                        "id" => row.id,
                        "lease" => lease,
                        "key" => reference.key.as_str(),
                        // a payload is far below i64::MAX bytes
                        "size" => i64::try_from(reference.size).unwrap_or(i64::MAX),
                        "sha256" => reference.sha256.as_slice(),
                    },
                )
                .await?;
            if updated.rows.is_empty() {
                return Ok(false);
            }
            self.blobs
                .put(&reference.key, Bytes::copy_from_slice(payload.as_bytes()))
                .await?;
            Ok(true)
        }
        .await;
        match moved {
            Ok(true) => {
                tx.commit().await?;
                tracing::info!(
                    delivery_id = %row.id,
                    destination = %row.destination,
                    key = %reference.key,
                    size = reference.size,
                    "the envelope is over the destination's max_entry_bytes: its payload moved \
                     to the blob store, sent by reference"
                );
                Ok(Some(reference))
            }
            Ok(false) => {
                tx.rollback().await?;
                Ok(None)
            }
            Err(e) => {
                if let Err(rollback) = tx.rollback().await {
                    tracing::warn!(delivery_id = %row.id, error = %rollback, "rollback failed");
                }
                Err(e)
            }
        }
    }
}
