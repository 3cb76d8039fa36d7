//! Delivery: the transport-neutral port through which the relay hands
//! outbox rows to a destination, and the adapters beside it (as `store/`,
//! `queue/` and `blob/` hold theirs).
//!
//! The relay asks a [`Transport`] to deliver a batch of [`Entry`]s of one
//! destination and gets one [`EntryOutcome`] per entry: delivered, retry
//! (with the delay the service asked for, if any) or dead (permanent, with
//! the reason). The relay owns everything else: leases, the schedule and
//! its jitter, `max_attempts`, the breaker, the attempt log, recording.
//!
//! - `http`: [`HttpTransport`] signs each entry (Standard Webhooks: signing
//!   is a property of HTTP destinations) and POSTs it through the
//!   [`WebhookSender`] port, whose reqwest adapter is [`HttpSender`];
//!   statuses map onto outcomes (2xx delivered, 410 dead and gone, any
//!   other answer or none retried, a 429/503 `Retry-After` passed on).
//! - `guard`: the SSRF guard the HTTP adapter resolves names through.
//! - `sqs` and `eventbridge`: [`SqsTransport`] (SendMessageBatch) and
//!   [`EventBridgeTransport`] (PutEvents) send each entry as an
//!   [`envelope`], ten to a call; an entry the service refuses for good is
//!   dead with its error code and message, a throttled or failed one
//!   retried (`aws` holds what the two share).
//! - `coalesce`: [`Coalescing`] gathers the single-entry deliveries the
//!   relay starts together into batches for a transport that takes them.
//! - `numbers`: the JSON integers EventBridge refuses, found with their
//!   pointer before the call.
//!
//! An envelope over what its destination takes goes by reference to its
//! payload's blob; [`needs_reference`] tells the relay when to move a
//! payload kept in its row to the blob store first.
//!
//! A new transport is a file here implementing [`Transport`], a
//! [`TransportKind`] with its fields in `config/target.rs`, and a line in
//! [`Transports::of`] and in `Startup::aws_transports` (docs/relay.md,
//! "Transports").

pub(crate) mod aws;
pub mod coalesce;
pub mod envelope;
pub mod eventbridge;
pub mod guard;
pub mod http;
pub mod numbers;
pub mod sqs;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::blob::BlobRef;
use crate::config::{Destination, Target, TransportKind};

pub use aws::{MAX_BATCH, local_config as local_aws_config};
pub use coalesce::Coalescing;
pub use eventbridge::EventBridgeTransport;
pub use guard::{NetworkGuard, Refused};
pub use http::{HttpSender, HttpTransport, OutboundRequest, SendOutcome, WebhookSender};
pub use sqs::SqsTransport;

/// One outbox row to deliver.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The delivery id: the outbox id, the same on every attempt (the
    /// `webhook-id`; the idempotency key receivers deduplicate on).
    pub id: Uuid,
    /// Event type (e.g. `order.paid`).
    pub event_type: &'a str,
    /// What kind of thing changed (e.g. `order`).
    pub aggregate_type: &'a str,
    /// Which one: the ordering key of `ordered` delivery.
    pub aggregate_id: &'a str,
    /// The JSON payload, exactly the bytes to send (and sign).
    pub payload: &'a str,
    /// The payload's object, when it is in the blob store: an envelope too
    /// large for its destination refers to it instead of carrying it.
    pub blob: Option<&'a BlobRef>,
}

/// A batch of entries for one destination.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryRequest<'a> {
    /// Where to.
    pub destination: &'a Destination,
    /// What, in order.
    pub entries: &'a [Entry<'a>],
    /// When the attempt starts (the signature's timestamp).
    pub started_at: DateTime<Utc>,
    /// Give up waiting for the service after this long (it never outlasts
    /// the relay's batch).
    pub timeout: Duration,
}

/// What the destination made of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted (HTTP 2xx; the service's success for the entry).
    Delivered,
    /// Not accepted this time: another attempt on the destination's
    /// schedule, or after `after` when the service asked for a delay (the
    /// relay clamps it to 1×–2× the scheduled one).
    Retry {
        /// The delay the service asked for (`Retry-After`).
        after: Option<Duration>,
        /// What went wrong (no secret, no URL query).
        reason: String,
    },
    /// Refused for good: the row is dead at once with the reason.
    Dead {
        /// Why (HTTP 410; the service's error code and message).
        reason: String,
    },
}

/// One entry's outcome, with what the attempt log keeps of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryOutcome {
    /// Delivered, retry or dead.
    pub verdict: Verdict,
    /// The HTTP status, for HTTP destinations that answered.
    pub status_code: Option<u16>,
    /// The start of the answer (an HTTP response body excerpt).
    pub response_excerpt: Option<String>,
    /// The destination says it no longer exists (HTTP 410): reported
    /// (log + `Gone` metric).
    pub gone: bool,
    /// The SSRF guard refused the destination's address: nothing was sent.
    pub refused: bool,
}

impl EntryOutcome {
    /// Delivered, nothing more to say.
    pub fn delivered() -> Self {
        Self::of(Verdict::Delivered)
    }

    /// Another attempt later, for `reason`.
    pub fn retry(reason: impl Into<String>) -> Self {
        Self::of(Verdict::Retry {
            after: None,
            reason: reason.into(),
        })
    }

    /// Dead at once, for `reason`.
    pub fn dead(reason: impl Into<String>) -> Self {
        Self::of(Verdict::Dead {
            reason: reason.into(),
        })
    }

    fn of(verdict: Verdict) -> Self {
        Self {
            verdict,
            status_code: None,
            response_excerpt: None,
            gone: false,
            refused: false,
        }
    }
}

/// Delivers entries to destinations of one type.
///
/// Error contract: never fails as a call. It returns exactly one outcome
/// per entry, in the entries' order (the relay retries an entry it got no
/// outcome for); a call that fails as a whole (no connection, timeout, a
/// 5xx) is a retry of each of its entries; an entry is [`Verdict::Delivered`]
/// only when the destination accepted it.
#[async_trait]
pub trait Transport: Send + Sync + fmt::Debug {
    /// Delivers `request.entries` to `request.destination`.
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome>;
}

/// Whether `entry` must go to `destination` by reference: its envelope with
/// the payload inside is over what the destination takes (an SQS queue's
/// `max_entry_bytes`; an EventBridge bus's, less `Source` and `DetailType`,
/// and under it), and its payload is not in the blob store yet. The relay
/// then moves the payload there (`outbox::relay::spill`) before it hands
/// the entry on. Never for HTTP (no envelope, no limit here).
pub fn needs_reference(destination: &Destination, entry: &Entry<'_>) -> bool {
    if entry.blob.is_some() {
        return false;
    }
    let limit = match &destination.target {
        Target::Http(_) => return false,
        Target::Sqs(sqs) => sqs.max_entry_bytes,
        Target::EventBridge(bus) => eventbridge::detail_limit(bus, entry.event_type),
    };
    envelope::whole(entry).text.len() > limit
}

/// The transports a relay delivers through, one per destination type.
#[derive(Debug, Clone)]
pub struct Transports {
    http: Arc<dyn Transport>,
    eventbridge: Arc<dyn Transport>,
    sqs: Arc<dyn Transport>,
}

impl Transports {
    /// HTTP only: destinations of another type get [`Missing`].
    pub fn http(http: Arc<dyn Transport>) -> Self {
        Self {
            http,
            eventbridge: Arc::new(Missing(TransportKind::EventBridge)),
            sqs: Arc::new(Missing(TransportKind::Sqs)),
        }
    }

    /// The same, delivering `kind` destinations through `transport`.
    pub fn with(mut self, kind: TransportKind, transport: Arc<dyn Transport>) -> Self {
        match kind {
            TransportKind::Http => self.http = transport,
            TransportKind::EventBridge => self.eventbridge = transport,
            TransportKind::Sqs => self.sqs = transport,
        }
        self
    }

    /// The transport for `destination`.
    pub fn of(&self, destination: &Destination) -> &Arc<dyn Transport> {
        match destination.kind() {
            TransportKind::Http => &self.http,
            TransportKind::EventBridge => &self.eventbridge,
            TransportKind::Sqs => &self.sqs,
        }
    }
}

/// The transport of a type this relay was given none for: every entry is
/// a failed attempt naming it (retried on the schedule, dead past
/// `max_attempts`), never delivered.
#[derive(Debug, Clone, Copy)]
pub struct Missing(pub TransportKind);

#[async_trait]
impl Transport for Missing {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        let reason = format!(
            "destination {:?} is of type {}, and this relay has no {} transport",
            request.destination.name, self.0, self.0
        );
        request
            .entries
            .iter()
            .map(|_| EntryOutcome::retry(reason.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_type_without_a_transport_is_retried_naming_it_never_delivered() {
        let config = crate::config::HookboxConfig::parse(
            r#"{"destinations": {"bus": {"type": "eventbridge", "bus": "orders"}}}"#,
            "test",
        )
        .expect("valid");
        let destination = config.destination("bus").expect("bus");
        let transports = Transports::http(Arc::new(Missing(TransportKind::Http)));
        let entry = Entry {
            id: Uuid::nil(),
            event_type: "order.paid",
            aggregate_type: "order",
            aggregate_id: "o-1",
            payload: "{}",
            blob: None,
        };
        let outcomes = transports
            .of(destination)
            .deliver(DeliveryRequest {
                destination,
                entries: &[entry, entry],
                started_at: DateTime::<Utc>::UNIX_EPOCH,
                timeout: Duration::from_secs(1),
            })
            .await;
        assert_eq!(outcomes.len(), 2, "one outcome per entry");
        for outcome in outcomes {
            assert_eq!(
                outcome,
                EntryOutcome::retry(
                    "destination \"bus\" is of type eventbridge, and this relay has no \
                     eventbridge transport"
                )
            );
        }
    }
}
