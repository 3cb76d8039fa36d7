//! Replaying a quarantined or dead inbox row (the operator's CLI): back to
//! `pending`, then a fresh queue message, so the processor handles it again,
//! exactly once.

use uuid::Uuid;

use crate::clock::Clock;
use crate::inbox::{self, InboxMessage, InboxStatus, Replay};
use crate::queue::{Queue, QueueError};
use crate::store::{DbError, Executor};

/// What a replay did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// The row is pending again and its message is on the queue.
    Enqueued {
        /// The row.
        id: Uuid,
        /// Its status before (quarantined or dead).
        previous: InboxStatus,
        /// The queue's message id.
        message_id: String,
    },
    /// The row is pending again but the message could not be sent: the
    /// sweeper enqueues it once it is overdue (nothing else to do).
    PendingForSweeper {
        /// The row.
        id: Uuid,
        /// Its status before (quarantined or dead).
        previous: InboxStatus,
        /// Why the send failed.
        error: QueueError,
    },
    /// Only quarantined and dead rows are replayed; nothing changed.
    NotReplayable {
        /// The row.
        id: Uuid,
        /// Its status.
        status: InboxStatus,
    },
    /// No such row.
    Missing {
        /// The requested id.
        id: Uuid,
    },
}

/// Replays inbox row `id`: [`inbox::replay`] (one statement), then sends
/// its [`InboxMessage::Stored`] message.
pub async fn replay(
    db: &dyn Executor,
    queue: &dyn Queue,
    clock: &dyn Clock,
    id: Uuid,
) -> Result<ReplayOutcome, DbError> {
    match inbox::replay(db, id, clock.now()).await? {
        Replay::Missing { id } => Ok(ReplayOutcome::Missing { id }),
        Replay::NotReplayable { id, status } => Ok(ReplayOutcome::NotReplayable { id, status }),
        Replay::Replayed {
            id,
            partner,
            event_id,
            previous,
        } => {
            let sent = match InboxMessage::stored(id, &partner, &event_id).to_body() {
                Ok(body) => queue.send(&body).await,
                Err(e) => Err(QueueError::Rejected {
                    operation: "send",
                    reason: e.to_string(),
                }),
            };
            Ok(match sent {
                Ok(message_id) => {
                    tracing::info!(inbox_id = %id, %previous, "replayed");
                    ReplayOutcome::Enqueued {
                        id,
                        previous,
                        message_id,
                    }
                }
                Err(error) => {
                    tracing::warn!(inbox_id = %id, %error, "replayed; the sweeper will enqueue it");
                    ReplayOutcome::PendingForSweeper {
                        id,
                        previous,
                        error,
                    }
                }
            })
        }
    }
}
