//! The inbox: every inbound webhook stored exactly once, then processed.
//!
//! Lifecycle of a row (`status`):
//! ```text
//! pending ──claim──▶ processing ──▶ processed
//!    ▲                  │  │  └────▶ quarantined (poison pill; operator replays)
//!    └──── retry ───────┘  ├──────▶ deferred ──claim──▶ processing …
//!                          └──────▶ dead (queue gave up; operator replays)
//! ```
//! `next_attempt_at` always says when an active row next needs attention;
//! the sweeper re-enqueues rows that are long overdue.

/// Every inbox column a reader needs, with the body bounded: an inline body
/// over [`super::body::READ_CHUNK_BYTES`] (a row from before bodies went to the blob
/// store) comes back as NULL with its size, so no row of any statement
/// passes the Data API's 64 KB (`inline_body_size` tells [`inbox_row`] to
/// read it in pieces).
macro_rules! inbox_columns {
    ($t:literal) => {
        concat!(
            $t,
            "id, ",
            $t,
            "partner, ",
            $t,
            "event_id, ",
            $t,
            "event_id_derived, ",
            $t,
            "event_type, ",
            $t,
            "ordering_key, ",
            "CASE WHEN octet_length(",
            $t,
            "body) <= 40960 THEN ",
            $t,
            "body END AS body, ",
            "octet_length(",
            $t,
            "body) AS inline_body_size, ",
            $t,
            "body_key, ",
            $t,
            "body_size, ",
            $t,
            "body_sha256, ",
            $t,
            "headers, ",
            $t,
            "signature_verified, ",
            $t,
            "status, ",
            $t,
            "attempts, ",
            $t,
            "next_attempt_at, ",
            $t,
            "locked_until, ",
            $t,
            "last_error, ",
            $t,
            "received_at, ",
            $t,
            "enqueued_at, ",
            $t,
            "deferred_since, ",
            $t,
            "processed_at"
        )
    };
}

pub mod batch;
pub mod body;
pub mod ingest;
mod ingest_batch;
pub mod lease;
pub mod message;
pub mod repo;
pub mod request;
pub mod routed;
pub mod split;
pub mod upkeep;

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use crate::store::Retention;
pub use body::{Body, BodyError};
pub use message::{InboxMessage, MessageError, SpooledEvent};
pub use repo::{
    Claim, ClaimToken, Inserted, MAX_CLAIM_IDS, NewInboxEvent, Replay, StrandedRow, claim,
    claim_as, counts_by_status, get, insert_if_new, insert_if_new_deduped, insert_quarantined,
    mark_dead, mark_deferred, mark_processed, mark_quarantined, mark_retry,
    oldest_active_received_at, purge_archived, purge_finished, quarantine_unreadable,
    release_lease, replay, sweep_stranded,
};

/// Status of an inbox row (the `inbox_status_check` constraint lists the same values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InboxStatus {
    /// Stored, waiting for the processor.
    Pending,
    /// Leased by a processor.
    Processing,
    /// Waiting for an ordering prerequisite.
    Deferred,
    /// Done.
    Processed,
    /// Poison pill: needs a human (replay after fixing the cause).
    Quarantined,
    /// The queue gave up after its maximum receive count.
    Dead,
}

impl InboxStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [InboxStatus; 6] = [
        InboxStatus::Pending,
        InboxStatus::Processing,
        InboxStatus::Deferred,
        InboxStatus::Processed,
        InboxStatus::Quarantined,
        InboxStatus::Dead,
    ];

    /// The database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            InboxStatus::Pending => "pending",
            InboxStatus::Processing => "processing",
            InboxStatus::Deferred => "deferred",
            InboxStatus::Processed => "processed",
            InboxStatus::Quarantined => "quarantined",
            InboxStatus::Dead => "dead",
        }
    }

    /// True for rows still on their way (pending, processing, deferred).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            InboxStatus::Pending | InboxStatus::Processing | InboxStatus::Deferred
        )
    }
}

impl fmt::Display for InboxStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown status string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown inbox status {0:?} (expected one of pending, processing, deferred, processed, quarantined, dead)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for InboxStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InboxStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// One inbox row, as stored.
#[derive(Clone, PartialEq)]
pub struct InboxRow {
    /// Our id (what the queue message carries).
    pub id: Uuid,
    /// Partner name (from the URL path).
    pub partner: String,
    /// The partner's event id (or sha256 of the body, see `event_id_derived`).
    pub event_id: String,
    /// True when the partner sent no id and `event_id` is derived from the body.
    pub event_id_derived: bool,
    /// Event type, when the partner's config says where to find it.
    pub event_type: Option<String>,
    /// Ordering key (e.g. an order id), when configured.
    pub ordering_key: Option<String>,
    /// The raw body, verbatim: inline, or by reference to the blob store
    /// ([`body::read`] gives the bytes either way).
    pub body: Body,
    /// Selected request headers.
    pub headers: serde_json::Value,
    /// Whether the signature was verified at ingest.
    pub signature_verified: bool,
    /// Current status.
    pub status: InboxStatus,
    /// Claims so far.
    pub attempts: i64,
    /// When the row next needs attention (active rows).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Lease expiry while processing.
    pub locked_until: Option<DateTime<Utc>>,
    /// Last failure, deferral or quarantine reason.
    pub last_error: Option<String>,
    /// When ingest stored it.
    pub received_at: DateTime<Utc>,
    /// When a queue message was last sent for it.
    pub enqueued_at: Option<DateTime<Utc>>,
    /// Start of the current run of deferrals.
    pub deferred_since: Option<DateTime<Utc>>,
    /// When it was processed.
    pub processed_at: Option<DateTime<Utc>>,
}

impl fmt::Debug for InboxRow {
    // The body and headers may carry personal data: lengths only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboxRow")
            .field("id", &self.id)
            .field("partner", &self.partner)
            .field("event_id", &self.event_id)
            .field("event_type", &self.event_type)
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .field("body", &self.body)
            .field("next_attempt_at", &self.next_attempt_at)
            .field("last_error", &self.last_error)
            .finish_non_exhaustive()
    }
}
