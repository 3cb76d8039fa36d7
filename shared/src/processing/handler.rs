//! The business-handler port: what users implement to turn an inbox event
//! into business changes.
//!
//! The processor calls [`BusinessHandler::handle`] with the event and an
//! open transaction. Everything the handler writes through that transaction
//! (its own tables, `outbox::enqueue`) commits together with the inbox row's
//! `processed` status if and only if the handler returns
//! [`Outcome::Processed`]; any other outcome, an error or a panic rolls it
//! all back.
//!
//! Rules for implementations:
//! - write only through the transaction you are given (never the pool), so
//!   a rollback really undoes everything;
//! - decide ordering with a state machine: when a prerequisite is missing
//!   (shipped before paid) return [`Outcome::Defer`]; the event comes back
//!   later, and after the maximum deferral age it is quarantined;
//! - input that can never succeed (unparseable payload, unknown event type,
//!   an impossible transition) is [`Outcome::Quarantine`] (or
//!   `Err(HandlerError::Poison)`, which `?` produces from [`PoisonPill`]):
//!   it is not retried, an operator replays it after fixing the cause;
//! - anything that may work later (a database or downstream hiccup) is
//!   [`Outcome::Retry`] (or `Err(HandlerError::Retryable)`, which `?`
//!   produces from [`DbError`]);
//! - be idempotent per inbox event anyway: the inbox makes a second effect
//!   impossible for a committed event, but a handler that calls an external
//!   API before failing will call it again on the retry.

use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

use crate::blob::BlobStore;
use crate::inbox::InboxRow;
use crate::store::{DbError, Transaction};

/// One inbox event, as the business handler sees it.
#[derive(Debug, Clone, Copy)]
pub struct InboxEvent<'a> {
    /// The inbox row (status `processing`, leased to this processor).
    pub row: &'a InboxRow,
    /// The raw body, exactly as received, whether the row keeps it inline
    /// or by reference to the blob store (read and sha256-checked by the
    /// processor before the handler runs).
    pub body: &'a [u8],
    /// The processor's "now" (pass it to `outbox::enqueue` and use it for
    /// your own timestamps, so tests control time).
    pub now: DateTime<Utc>,
    /// The blob store, for `outbox::enqueue_with_blobs(tx, event.blobs, …)`:
    /// a payload over the inline threshold (32 KiB of JSON) is put there,
    /// before its row is written, and the row keeps the reference. The put
    /// is not undone if the transaction rolls back: the object stays, with
    /// no row referring to it (see docs/blobs.md, orphans).
    pub blobs: &'a dyn BlobStore,
    /// How many times the queue has delivered this message (1 on the first try).
    pub receive_count: u32,
}

impl InboxEvent<'_> {
    /// The event type stored at ingest, if the partner's configuration says
    /// where to find it.
    pub fn event_type(&self) -> Option<&str> {
        self.row.event_type.as_deref()
    }

    /// The body parsed as JSON into `T`; a body that does not parse is a
    /// poison pill (the message names the partner and event id, never the
    /// body).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, PoisonPill> {
        serde_json::from_slice(self.body).map_err(|e| {
            PoisonPill(format!(
                "payload of {}/{} is not the expected JSON: {}",
                self.row.partner,
                self.row.event_id,
                super::json_error(&e)
            ))
        })
    }
}

/// What the handler decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done: commit the business writes and mark the row processed.
    Processed,
    /// An ordering prerequisite is missing: roll back, try again later
    /// (backoff), quarantine after the maximum deferral age.
    Defer(String),
    /// A temporary failure: roll back, try again later (backoff); the row
    /// is dead once the queue gives up.
    Retry(String),
    /// A poison pill: roll back, quarantine at once, do not retry.
    Quarantine(String),
}

/// An error a handler may return instead of an [`Outcome`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Same as [`Outcome::Quarantine`].
    #[error("poison pill: {0}")]
    Poison(String),
    /// Same as [`Outcome::Retry`].
    #[error("{0}")]
    Retryable(String),
}

/// Input that can never be processed (see [`InboxEvent::json`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PoisonPill(pub String);

impl From<PoisonPill> for HandlerError {
    fn from(p: PoisonPill) -> Self {
        HandlerError::Poison(p.0)
    }
}

impl From<DbError> for HandlerError {
    /// Every database error is retried: `Unavailable` may pass, and a
    /// statement bug or constraint violation ends in `dead` after the last
    /// attempt, to be replayed once the code is fixed.
    fn from(e: DbError) -> Self {
        HandlerError::Retryable(e.to_string())
    }
}

impl From<HandlerError> for Outcome {
    fn from(e: HandlerError) -> Self {
        match e {
            HandlerError::Poison(reason) => Outcome::Quarantine(reason),
            HandlerError::Retryable(error) => Outcome::Retry(error),
        }
    }
}

/// The business logic: one inbox event in, one [`Outcome`] out.
#[async_trait]
pub trait BusinessHandler: Send + Sync + fmt::Debug {
    /// Handles `event` inside `tx` (do not commit or roll back: the
    /// processor does, together with the inbox status change).
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError>;
}
