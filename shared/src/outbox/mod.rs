//! The outbox: outbound webhooks written in the same transaction as the
//! business change that causes them, delivered later by the relay, at least
//! once, under a stable id (the `webhook-id` receivers deduplicate on).
//!
//! ```text
//! pending ──claim (lease)──▶ pending, leased ──2xx──▶ delivered
//!    ▲                              │
//!    └────── failure, backoff ──────┤
//!                                   └── max attempts / 410 ──▶ dead
//! ```
//! A claim sets `locked_until` (the lease); a row is claimable when it is due
//! and not leased, so a crashed relay's rows become claimable again by
//! themselves when the lease ends.
//!
//! A payload up to 32 KiB of JSON is kept in the row; a larger one is put in
//! the blob store before the row is written ([`enqueue_with_blobs`]) and the
//! row keeps the reference ([`payload`]). Every row any statement returns
//! stays inside the Data API's 64 KB, and every claim inside its 1 MiB
//! ([`repo::CLAIM_BUDGET_BYTES`]).

pub mod attempts;
pub mod blob_refs;
pub mod destinations;
pub mod enqueue;
pub mod origin;
pub mod payload;
pub mod publish;
pub mod relay;
pub mod repo;

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use crate::store::Retention;
pub use enqueue::{
    EnqueueError, JsonOutboxEvent, MAX_AGGREGATE_ID_BYTES, MAX_AGGREGATE_TYPE_BYTES,
    MAX_OUTBOX_EVENT_TYPE_BYTES, NewOutboxEvent, enqueue, enqueue_json_with_blobs,
    enqueue_with_blobs,
};
pub use origin::{Origin, TrailDelivery, deliveries_of};
pub use payload::{PayloadError, PayloadStorage};
pub use publish::{MAX_PUBLISHED_PAYLOAD_BYTES, NewEvent, publish};
pub use repo::{
    AttemptDetail, ClaimRequest, Claimed, DeliveryOutcome, DeliveryResult, LeasedResults,
    PendingSummary, UnreadableRow, Unrecorded, claim_batch, claim_due, claim_ids, counts_by_status,
    get, oldest_pending_created_at, pending_summary, purge_archived, purge_finished,
    record_and_claim, record_leased, record_results,
};

/// Status of an outbox row (the `outbox_status_check` constraint lists the same values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutboxStatus {
    /// Waiting for (another) delivery attempt.
    Pending,
    /// A 2xx was received.
    Delivered,
    /// Gave up (max attempts, or 410 Gone).
    Dead,
}

impl OutboxStatus {
    /// Every status.
    pub const ALL: [OutboxStatus; 3] = [
        OutboxStatus::Pending,
        OutboxStatus::Delivered,
        OutboxStatus::Dead,
    ];

    /// The database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Pending => "pending",
            OutboxStatus::Delivered => "delivered",
            OutboxStatus::Dead => "dead",
        }
    }
}

impl fmt::Display for OutboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown status string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outbox status {0:?} (expected one of pending, delivered, dead)")]
pub struct UnknownStatus(pub String);

impl FromStr for OutboxStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OutboxStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// One outbox row, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRow {
    /// The id: the `webhook-id` of every delivery attempt.
    pub id: Uuid,
    /// Insertion order.
    pub seq: i64,
    /// What kind of thing changed (e.g. `order`).
    pub aggregate_type: String,
    /// Which one (e.g. the order id).
    pub aggregate_id: String,
    /// Event type (e.g. `order.paid`).
    pub event_type: String,
    /// Destination name from configuration.
    pub destination: String,
    /// The JSON payload as text when it is in the row and was returned
    /// (jsonb's canonical form: the exact bytes to sign and send); empty
    /// otherwise, see `payload_storage` and [`payload::read`].
    pub payload: String,
    /// Where the payload is: inline, inline but too large to be returned
    /// whole, or in the blob store by reference.
    pub payload_storage: PayloadStorage,
    /// Current status.
    pub status: OutboxStatus,
    /// Delivery attempts so far.
    pub attempts: i64,
    /// Due time (while pending; the lease expiry while leased).
    pub next_attempt_at: DateTime<Utc>,
    /// Lease expiry, while a relay holds the row.
    pub locked_until: Option<DateTime<Utc>>,
    /// Relay holding the lease.
    pub locked_by: Option<String>,
    /// Last failure.
    pub last_error: Option<String>,
    /// Last HTTP status received.
    pub last_status_code: Option<i64>,
    /// When the business transaction wrote it.
    pub created_at: DateTime<Utc>,
    /// When it was delivered or given up.
    pub processed_at: Option<DateTime<Utc>>,
    /// The inbound webhook it was written for, if any ([`origin`]).
    pub origin: Option<Origin>,
}
