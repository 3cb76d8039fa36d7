//! The outbox relay: delivers outbox rows to their destinations as
//! Standard-Webhooks-signed POSTs, at least once, under a stable
//! `webhook-id` (the outbox id), with leases, backoff and dead rows. The
//! same run sweeps stranded inbox rows back onto the queue and purges old
//! finished rows.
//!
//! ```text
//! `lanes` loops, each until the deadline (minus a margin):
//!   record what landed since the last statement
//!     + claim ≤ batch_size − in flight due rows, leased to this claim,
//!       within the byte budget and each destination's cap  (1 statement)
//!   read payloads stored by reference (blob store, sha256 checked)
//!   move a payload whose envelope is over an SQS or EventBridge
//!     destination's max_entry_bytes to the blob store (`spill`)
//!   POST each, ≤ max_in_flight at once per destination
//!   next statement: all answered, or `idle` after the last one
//!   nothing was due and nothing is in flight → pause ~1 s
//! every minute: sweep stranded inbox rows → queue
//! once a run:   copy the configured destinations and subscriptions to
//!               the database (publishers evaluate them there), purge
//!               finished rows older than the retention, then the blob
//!               objects no row refers to any more (`retention`)
//! ```
//!
//! A row that can never be delivered as written (its payload object is
//! missing or corrupt, the row cannot be decoded or returned) is dead at once
//! with the reason, alone; a blob store outage is a failed attempt like a
//! failed POST. A claim that fails as a whole, not retryably, is claimed
//! again under its token, row by row ([`Relay::deliver_batch`] and the lanes
//! alike): no lane stops, or claims the same failing rows forever, because
//! of one row.
//!
//! Outcomes: 2xx → delivered. 410 → dead at once, and the destination is
//! reported gone (log + `Gone` metric). Anything else (3xx, 4xx, 5xx, no
//! answer, SSRF refusal) → another attempt after the destination's backoff
//! (±20% jitter; a 429/503 `Retry-After` is honoured within 1×–2× the
//! scheduled delay) until `max_attempts`, then dead with the last status and
//! error. A request's timeout never outlasts its batch, and the lease
//! outlasts the batch, so two relays never deliver the same row at once;
//! results are recorded under the batch's own lease token, so a late batch
//! never overwrites a newer claim; a relay that dies after a POST but before
//! recording it leaves the row to be delivered again, with the same
//! `webhook-id`, when the lease ends.
//! Details and the configuration are in `docs/relay.md`.
//!
//! Where things are: a batch (claim, lease, deliveries within each
//! destination's slots, a failed claim taken again row by row) in `batch`,
//! one delivery attempt and its outcome in `attempt`, the lanes of a run
//! and `drain` in `lanes`, a lane's requests in flight in `flights`, the
//! per-destination caps and rate limits in `fairness`, what they report
//! and the run's metrics in `report`, the notices that name a failing
//! destination in `notices`. The sweeper and retention are upkeep, not outbound work:
//! [`crate::maintenance`].

mod attempt;
pub mod backoff;
mod batch;
pub mod by_destination;
mod fairness;
mod flights;
mod lanes;
pub mod notices;
mod report;
pub mod settings;
pub mod spill;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::blob::BlobStore;
use crate::clock::Clock;
use crate::outbox::ClaimRequest;
use crate::queue::Queue;
use crate::store::Database;

pub use crate::delivery::{
    HttpSender, HttpTransport, OutboundRequest, SendOutcome, Transport, Transports, WebhookSender,
};
pub use crate::delivery::{NetworkGuard, Refused, guard, http as sender};
pub use crate::maintenance::{PurgeReport, SweepReport, retention};
pub use backoff::{FixedJitter, Jitter, RandomJitter};
pub use fairness::MAX_SLOW_ENDPOINT_REQUESTS;
pub use report::{BatchReport, RunReport};
pub use settings::{DEFAULT_REQUESTS_PER_HOST, MAX_ROWS_IN_FLIGHT, RelaySettings, SettingsError};

/// Waits between polls when nothing is due (tokio's sleep in production; a
/// clock-advancing fake in tests).
#[async_trait]
pub trait Pause: Send + Sync + fmt::Debug {
    /// Waits about `duration`.
    async fn pause(&self, duration: Duration);
}

/// [`Pause`] with `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioPause;

#[async_trait]
impl Pause for TokioPause {
    async fn pause(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// [`Pause`] that advances a [`ManualClock`](crate::clock::ManualClock)
/// instead of waiting (tests, simulations): a run on a manual clock moves on
/// at once.
#[derive(Debug, Clone)]
pub struct ManualPause(pub Arc<crate::clock::ManualClock>);

#[async_trait]
impl Pause for ManualPause {
    async fn pause(&self, duration: Duration) {
        self.0.advance(chrono_duration(duration));
    }
}

/// Where the relay finds the destinations that are data rather than
/// configuration: tenants' endpoints (`ep_…`), resolved per claimed batch
/// from the documents the claim returned with them, reading those it did
/// not (adapter: [`crate::tenants::EndpointDirectory`]).
///
/// Error contract: never fails as a whole; each name comes back as a
/// destination or as [`Unresolved`] (retryable when the database or the key
/// vault may recover, and then the row is not attempted). Names that are not
/// endpoints' are left out.
#[async_trait]
pub trait EndpointResolver: Send + Sync + fmt::Debug {
    /// The endpoints among `names`, as of `now`; `supplied` holds the
    /// documents the claim returned for some of them
    /// ([`crate::outbox::Claimed::endpoints`]), to be used rather than read.
    async fn resolve(
        &self,
        db: &dyn crate::store::Executor,
        names: &[&str],
        supplied: &[(String, serde_json::Value)],
        now: DateTime<Utc>,
    ) -> Endpoints;
}

/// Tenants' endpoints by name: each resolved, or why not. (The relay's
/// per-destination maps hash with foldhash, seeded per process: with
/// 10,000 endpoints SipHash cost a delivery about 2 µs.)
pub type Endpoints = foldhash::HashMap<String, Result<Arc<crate::config::Destination>, Unresolved>>;

/// An endpoint the relay cannot deliver to now, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// Why (names the endpoint, never a secret).
    pub reason: String,
    /// The cause may pass (the database, the key vault): the rows are not
    /// attempted, their attempts untouched.
    pub retryable: bool,
}

/// The relay use case, over its ports.
#[derive(Debug, Clone)]
pub struct Relay {
    pub(crate) db: Arc<dyn Database>,
    pub(crate) blobs: Arc<dyn BlobStore>,
    pub(crate) transports: Transports,
    pub(crate) queue: Option<Arc<dyn Queue>>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) jitter: Arc<dyn Jitter>,
    pub(crate) settings: RelaySettings,
    slots: Arc<batch::Slots>,
    fairness: Arc<fairness::Fairness>,
    /// Attempts per destination since the last run's report.
    by_destination: Arc<by_destination::ByDestination>,
    /// Configured destinations' failures since the last run's notices.
    troubles: Arc<notices::Troubles>,
    /// Where notices go (`None`: none are sent).
    notifier: Option<Arc<dyn crate::notify::Notifier>>,
    /// Tenants' endpoints (`None`: their rows are refused as destinations
    /// not configured).
    pub(crate) endpoints: Option<Arc<dyn EndpointResolver>>,
}

impl Relay {
    /// A relay; `blobs` holds the payloads stored by reference (read before
    /// they are POSTed) and the objects retention deletes; `queue` is the
    /// inbox queue for the sweeper (`None`: no sweeping); HTTP destinations
    /// are delivered by an [`HttpTransport`] POSTing through `sender`.
    pub fn new(
        db: Arc<dyn Database>,
        blobs: Arc<dyn BlobStore>,
        sender: Arc<dyn WebhookSender>,
        queue: Option<Arc<dyn Queue>>,
        clock: Arc<dyn Clock>,
        settings: RelaySettings,
    ) -> Self {
        Self {
            db,
            blobs,
            transports: Transports::http(Arc::new(HttpTransport::new(sender, clock.clone()))),
            queue,
            clock,
            jitter: Arc::new(RandomJitter),
            slots: Arc::new(batch::Slots::new(settings.requests_per_host)),
            settings,
            fairness: Arc::default(),
            by_destination: Arc::default(),
            troubles: Arc::default(),
            notifier: None,
            endpoints: None,
        }
    }

    /// The same relay telling `notifier` (the alarm topic) when a
    /// configured destination trips, is disabled or a delivery dies
    /// ([`notices`]).
    pub fn with_notifier(mut self, notifier: Arc<dyn crate::notify::Notifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The same relay delivering tenants' endpoints too, as `endpoints`
    /// resolves them.
    pub fn with_endpoints(mut self, endpoints: Arc<dyn EndpointResolver>) -> Self {
        self.endpoints = Some(endpoints);
        self
    }

    /// The same relay delivering `kind` destinations through `transport`.
    pub fn with_transport(
        mut self,
        kind: crate::config::TransportKind,
        transport: Arc<dyn Transport>,
    ) -> Self {
        self.transports = self.transports.with(kind, transport);
        self
    }

    /// The same relay with another jitter source (tests).
    pub fn with_jitter(mut self, jitter: Arc<dyn Jitter>) -> Self {
        self.jitter = jitter;
        self
    }

    /// Its settings.
    pub fn settings(&self) -> &RelaySettings {
        &self.settings
    }
}

/// The terms of one claim.
#[derive(Debug)]
struct Lease {
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    token: String,
    ordered: Vec<String>,
    /// The most rows of each destination the claim takes (none listed:
    /// up to the batch size for each).
    caps: Vec<(String, i64)>,
}

impl Lease {
    fn request(&self, limit: i64) -> ClaimRequest<'_> {
        ClaimRequest {
            worker: &self.token,
            now: self.now,
            lease_until: self.lease_until,
            limit,
            ordered_destinations: &self.ordered,
            destination_caps: &self.caps,
        }
    }
}

pub(crate) fn record(report: &Mutex<RunReport>, f: impl FnOnce(&mut RunReport)) {
    f(&mut report.lock().unwrap_or_else(|p| p.into_inner()));
}

pub(crate) fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}
