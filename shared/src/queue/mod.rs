//! The queue port and its adapters: SQS ([`sqs::SqsQueue`]) and an
//! in-memory queue with SQS's semantics ([`memory::MemoryQueue`]: visibility
//! timeout, receive count, maxReceiveCount → dead-letter queue) for the local
//! stack and tests.
//!
//! In AWS the processor never receives itself: the Lambda event source polls
//! SQS and hands batches to the function. [`QueueConsumer`] is what the local
//! stack uses to play that part.

pub mod memory;
pub mod sqs;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// SQS's message size limit (1 MiB since 2025; it was 256 KiB before).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Most messages one [`Queue::send_batch`] call takes (SQS's
/// SendMessageBatch takes 10, their bodies together at most
/// [`MAX_MESSAGE_BYTES`]).
pub const MAX_BATCH_MESSAGES: usize = 10;

/// SQS's limit on a visibility timeout (12 hours).
pub const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 60 * 60);

/// SQS's limit on a message's delay (`DelaySeconds`, 15 minutes).
pub const MAX_DELAY: Duration = Duration::from_secs(15 * 60);

/// What went wrong talking to the queue.
///
/// Contract: [`QueueError::Unavailable`] is retryable (network, throttling,
/// service errors); the others are definite refusals of this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// The queue could not be reached or refused for now.
    #[error("queue unavailable during {operation}: {reason}")]
    Unavailable {
        /// `send`, `change_visibility`, …
        operation: &'static str,
        /// What the SDK or service said.
        reason: String,
    },
    /// The message is larger than the queue accepts.
    #[error("message of {bytes} bytes is over the queue's limit of {limit} bytes")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The queue refused the request (unknown queue, bad receipt handle,
    /// invalid parameter).
    #[error("queue refused {operation}: {reason}")]
    Rejected {
        /// The operation.
        operation: &'static str,
        /// Why.
        reason: String,
    },
}

impl QueueError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, QueueError::Unavailable { .. })
    }
}

/// Sending side of the queue, used by ingest, the processor (visibility) and
/// the sweeper.
#[async_trait]
pub trait Queue: Send + Sync + fmt::Debug {
    /// Sends one message; returns its queue message id. Bodies over
    /// [`MAX_MESSAGE_BYTES`] are refused with [`QueueError::TooLarge`], and
    /// bodies with a character SQS refuses ([`sqs_allows`]) with
    /// [`QueueError::Rejected`], without a call.
    async fn send(&self, body: &str) -> Result<String, QueueError>;

    /// Like [`Queue::send`], the message becoming visible only after
    /// `delay` (clamped to [`MAX_DELAY`]): a fresh message, whose receive
    /// count starts over.
    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError>;

    /// Sends up to [`MAX_BATCH_MESSAGES`] messages in one call (SQS's
    /// SendMessageBatch), their bodies together at most
    /// [`MAX_MESSAGE_BYTES`]; returns one result per body, in order: a
    /// batch succeeds or fails entry by entry. A body [`Queue::send`] would
    /// refuse is refused alone; too many bodies or bytes for one call are
    /// refused as a whole ([`QueueError::Rejected`] for each), without a
    /// call, as SQS would ([`send_all`] splits any number into such
    /// calls). The default sends them one by one with [`Queue::send`].
    async fn send_batch(&self, bodies: &[String]) -> Vec<Result<String, QueueError>> {
        if let Err(e) = check_batch(bodies) {
            return bodies.iter().map(|_| Err(e.clone())).collect();
        }
        let mut results = Vec::with_capacity(bodies.len());
        for body in bodies {
            results.push(self.send(body).await);
        }
        results
    }

    /// Makes a received message invisible for `timeout` from now (0 makes
    /// it visible at once). At most [`MAX_VISIBILITY`].
    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError>;
}

/// A received message, as the Lambda event source would deliver it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The queue's message id (new after a DLQ redrive: never deduplicate on it).
    pub message_id: String,
    /// Handle for delete / change visibility of THIS receipt.
    pub receipt_handle: String,
    /// The body.
    pub body: String,
    /// How many times it has been received, this time included.
    pub receive_count: u32,
    /// The X-Ray trace header it was sent with (SQS's `AWSTraceHeader`:
    /// the sender's invocation's, when tracing was active), so that its
    /// processing is logged in that trace.
    pub trace_header: Option<String>,
    /// When it was first sent.
    pub sent_at: DateTime<Utc>,
}

/// Receiving side: what the Lambda event source does in AWS.
#[async_trait]
pub trait QueueConsumer: Send + Sync + fmt::Debug {
    /// Receives up to `max` visible messages (at most 10), making each
    /// invisible for the queue's visibility timeout.
    async fn receive(&self, max: usize) -> Result<Vec<Received>, QueueError>;
    /// Deletes a received message (it was handled).
    async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError>;
}

/// True for the characters SQS accepts in a message body: #x9 | #xA | #xD |
/// #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
pub fn sqs_allows(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// What SQS refuses before any call: a body over [`MAX_MESSAGE_BYTES`], or
/// one with a character outside [`sqs_allows`] (every adapter refuses the
/// same, so the in-memory queue of the local stack cannot hide such a body).
fn check_body(body: &str) -> Result<(), QueueError> {
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(QueueError::TooLarge {
            bytes: body.len(),
            limit: MAX_MESSAGE_BYTES,
        });
    }
    if let Some((at, c)) = body.char_indices().find(|(_, c)| !sqs_allows(*c)) {
        return Err(QueueError::Rejected {
            operation: "send",
            reason: format!(
                "the message body has U+{:04X} at byte {at}, a character SQS refuses \
                 (allowed: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF)",
                u32::from(c)
            ),
        });
    }
    Ok(())
}

/// What SendMessageBatch refuses as a whole: more than
/// [`MAX_BATCH_MESSAGES`] entries, none, or bodies over
/// [`MAX_MESSAGE_BYTES`] together.
fn check_batch(bodies: &[String]) -> Result<(), QueueError> {
    let bytes: usize = bodies.iter().map(String::len).sum();
    if bodies.is_empty() || bodies.len() > MAX_BATCH_MESSAGES || bytes > MAX_MESSAGE_BYTES {
        return Err(QueueError::Rejected {
            operation: "send_batch",
            reason: format!(
                "{} messages of {bytes} bytes together: one batch takes 1 to \
                 {MAX_BATCH_MESSAGES} messages of at most {MAX_MESSAGE_BYTES} bytes together",
                bodies.len()
            ),
        });
    }
    Ok(())
}

/// Sends every body, in as few [`Queue::send_batch`] calls as SQS allows
/// (10 messages, 1 MiB together), the calls at once; one result per body,
/// in order. A body too large to share a call goes alone (and is refused
/// by the queue if it is over [`MAX_MESSAGE_BYTES`]).
pub async fn send_all(queue: &dyn Queue, bodies: Vec<String>) -> Vec<Result<String, QueueError>> {
    let mut chunks: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for body in bodies {
        let fits = chunks.last().is_some_and(|chunk| {
            chunk.len() < MAX_BATCH_MESSAGES && bytes + body.len() <= MAX_MESSAGE_BYTES
        });
        if !fits {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += body.len();
        if let Some(chunk) = chunks.last_mut() {
            chunk.push(body);
        }
    }
    let sent = futures::future::join_all(chunks.iter().map(|chunk| async move {
        if chunk.len() == 1 {
            // alone: a body over the limit is refused as itself, not as a batch
            vec![queue.send(&chunk[0]).await]
        } else {
            queue.send_batch(chunk).await
        }
    }))
    .await;
    sent.into_iter().flatten().collect()
}

fn check_visibility(operation: &'static str, timeout: Duration) -> Result<(), QueueError> {
    if timeout > MAX_VISIBILITY {
        Err(QueueError::Rejected {
            operation,
            reason: format!(
                "visibility timeout of {} s is over the 12 h maximum",
                timeout.as_secs()
            ),
        })
    } else {
        Ok(())
    }
}
