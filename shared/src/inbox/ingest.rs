//! The ingest use case: one partner request in, one answer out.
//!
//! Verify the signature over the exact raw bytes, extract the event id, then
//! ONE statement (insert-if-new) and a queue message for a new row. The
//! partner gets 200 for new and duplicate alike. A body above the inline
//! threshold is put in the blob store first and the row keeps its reference
//! (see [`super::body`]); when the blob store is down the partner gets 503
//! and retries. When the database is unavailable the verified event itself
//! is spooled to the queue (202) so nothing accepted is lost, and so is one
//! that does not answer within the deadline (5 s by default, well under API
//! Gateway's 29 s); when the queue is down too, 503 + Retry-After makes the
//! partner retry later.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;

use super::InboxMessage;
use super::InboxStatus;
use super::body::{self, Body, DEFAULT_INLINE_MAX_BYTES, MAX_INLINE_MAX_BYTES};
pub use super::ingest_batch::{BATCH_INLINE_BUDGET, BatchCounts};
use super::repo::{Inserted, NewInboxEvent, insert_if_new_deduped};
use super::request::build_event;
pub use super::request::{
    ESCAPED_PREFIX, MAX_EVENT_ID_BYTES, MAX_EVENT_TYPE_BYTES, MAX_ORDERING_KEY_BYTES,
    MAX_STORED_HEADER_VALUE_BYTES, MAX_STORED_HEADERS_BYTES, storable,
};
use super::routed::{self, AtIngest, Stored};
use crate::blob::BlobStore;
use crate::clock::Clock;
use crate::config::enroll::{EnrollFailed, Enrolled};
use crate::config::{ConfigStore, Partner};
use crate::metrics::{Metrics, Unit};
use crate::queue::Queue;
use crate::signature::presets::{GetRequest, HandshakeAnswer};
use crate::signature::{Headers, SignatureError, SignedRequest};
use crate::store::Database;

/// Seconds a partner is told to wait when we cannot store anything.
pub const RETRY_AFTER_SECS: u64 = 30;

/// How long ingest waits for the database before it spools the event
/// instead (API Gateway gives up at 29 s and answers a bare 504).
pub const DEFAULT_DB_DEADLINE: Duration = Duration::from_secs(5);

/// The variable that sets that deadline, in seconds (1 to 20).
pub const DB_DEADLINE_VAR: &str = "HOOKBOX_INGEST_DB_TIMEOUT_SECONDS";

/// [`DB_DEADLINE_VAR`] holds something other than 1 to 20 seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "HOOKBOX_INGEST_DB_TIMEOUT_SECONDS={0:?} is not a number of seconds in 1..=20 (API Gateway \
     stops waiting at 29 s; ingest must spool well before)"
)]
pub struct DbDeadlineError(pub String);

/// The database deadline from [`DB_DEADLINE_VAR`], else [`DEFAULT_DB_DEADLINE`].
pub fn db_deadline_from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Duration, DbDeadlineError> {
    match env(DB_DEADLINE_VAR).filter(|v| !v.trim().is_empty()) {
        None => Ok(DEFAULT_DB_DEADLINE),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=20).contains(n))
            .map(Duration::from_secs)
            .ok_or(DbDeadlineError(v)),
    }
}

/// A partner's request, as the edge (API Gateway) delivered it.
#[derive(Debug, Clone)]
pub struct IngestRequest<'a> {
    /// The `{partner}` path segment.
    pub partner: &'a str,
    /// Request headers (names in any case).
    pub headers: Headers<'a>,
    /// The raw body, exactly as received (already base64-decoded).
    pub body: &'a [u8],
    /// The full URL the partner called, for schemes that sign it.
    pub url: Option<&'a str>,
}

/// What happened, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// New row stored (and enqueued, unless `enqueue_failed`).
    Accepted {
        /// The queue send failed after the insert (the sweeper will enqueue).
        enqueue_failed: bool,
    },
    /// New row stored and finished in the same statement (forwarding at
    /// ingest, [`Ingest::with_forwarding_at_ingest`]): nothing enqueued.
    Forwarded {
        /// Outbox rows written (0 for an unrouted event).
        deliveries: u64,
        /// `processed`, or `quarantined` (unrouted, the partner's policy).
        status: InboxStatus,
    },
    /// Already stored.
    Duplicate,
    /// Refused, with the reason code sent to the partner.
    Rejected(&'static str),
    /// Database down: the event went to the queue instead.
    Spooled,
    /// Neither database nor queue could take it: the partner must retry.
    Unavailable,
    /// A provider's handshake, answered ([`IngestResponse::handshake`]);
    /// nothing stored.
    Handshake,
    /// A POST carrying many events (a partner with a batch declaration),
    /// every event stored or found stored.
    Batch(BatchCounts),
}

/// The answer to the partner.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestResponse {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: serde_json::Value,
    /// `Retry-After` seconds, on 503.
    pub retry_after: Option<u64>,
    /// What happened.
    pub outcome: Outcome,
    /// An answer sent as it is instead of `body`: a handshake's, or the
    /// acknowledgement a provider expects with a 2xx (the partner's
    /// `acknowledge`: Adyen's `[accepted]`).
    pub handshake: Option<Box<HandshakeAnswer>>,
    /// The secret a handshake handed over (Asana's), sealed to the
    /// partner's `enroll_key`; also logged. Never sent to the partner.
    pub sealed_secret: Option<String>,
}

impl IngestResponse {
    pub(super) fn new(status: u16, body: serde_json::Value, outcome: Outcome) -> Self {
        Self {
            status,
            body,
            retry_after: None,
            outcome,
            handshake: None,
            sealed_secret: None,
        }
    }

    fn handshake(answer: HandshakeAnswer) -> Self {
        Self {
            handshake: Some(Box::new(answer)),
            ..Self::new(200, json!({"status": "handshake"}), Outcome::Handshake)
        }
    }

    pub(super) fn rejected(status: u16, code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(
            status,
            json!({"error": code, "detail": detail.into()}),
            Outcome::Rejected(code),
        )
    }

    pub(super) fn unavailable() -> Self {
        Self {
            status: 503,
            body: json!({"error": "temporarily_unavailable", "retry_after": RETRY_AFTER_SECS}),
            retry_after: Some(RETRY_AFTER_SECS),
            outcome: Outcome::Unavailable,
            handshake: None,
            sealed_secret: None,
        }
    }
}

/// The answer to a request whose signature did not verify.
fn signature_refused(partner: &Partner, e: &SignatureError) -> IngestResponse {
    let code = signature_reason(e);
    if e.is_configuration_error() {
        tracing::error!(partner = %partner.name, error = %e, "partner signature configuration is unusable");
        return IngestResponse::new(
            500,
            json!({"error": "partner_misconfigured"}),
            Outcome::Rejected("partner_misconfigured"),
        );
    }
    // The error says which check failed, never a secret or an expected MAC.
    tracing::info!(partner = %partner.name, reason = code, error = %e, "signature rejected");
    IngestResponse::rejected(401, code, e.to_string())
}

/// The reason code sent to the partner (and used as metric dimension).
pub fn signature_reason(e: &SignatureError) -> &'static str {
    match e {
        SignatureError::MissingHeader { .. } => "missing_signature_header",
        SignatureError::MalformedHeader { .. } => "malformed_signature_header",
        SignatureError::UnsupportedSignatureVersion { .. } => "unsupported_signature_version",
        SignatureError::NoMatchingSignature { .. } => "invalid_signature",
        SignatureError::TimestampTooOld { .. } => "timestamp_too_old",
        SignatureError::TimestampInFuture { .. } => "timestamp_in_future",
        SignatureError::BodyHashMismatch => "body_hash_mismatch",
        SignatureError::UnsignedBody { .. } => "unsigned_body",
        SignatureError::MissingUrl { .. } | SignatureError::MalformedUrl { .. } => "invalid_url",
        _ => "signature_configuration",
    }
}

/// The ingest use case, built once per sandbox.
#[derive(Debug, Clone)]
pub struct Ingest {
    config: Arc<ConfigStore>,
    pub(super) db: Arc<dyn Database>,
    pub(super) queue: Arc<dyn Queue>,
    pub(super) blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    pub(super) inline_max: usize,
    pub(super) db_deadline: Duration,
    pub(super) forward_at_ingest: bool,
}

impl Ingest {
    /// Wires the ports. Bodies over [`DEFAULT_INLINE_MAX_BYTES`] go to
    /// `blobs` (see [`Ingest::with_inline_max`]).
    pub fn new(
        config: Arc<ConfigStore>,
        db: Arc<dyn Database>,
        queue: Arc<dyn Queue>,
        blobs: Arc<dyn BlobStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            config,
            db,
            queue,
            blobs,
            clock,
            inline_max: DEFAULT_INLINE_MAX_BYTES,
            db_deadline: DEFAULT_DB_DEADLINE,
            forward_at_ingest: false,
        }
    }

    /// Forwards the events of partners with routes in the statement that
    /// stores them (`inbox::routed`): only for a processor that forwards by
    /// routes and runs no Rust handler for those partners (else the handler
    /// would never see them). Off by default.
    pub fn with_forwarding_at_ingest(mut self, on: bool) -> Self {
        self.forward_at_ingest = on;
        self
    }

    /// Spools the event when the database has not answered within
    /// `deadline` (default [`DEFAULT_DB_DEADLINE`]).
    pub fn with_db_deadline(mut self, deadline: Duration) -> Self {
        self.db_deadline = deadline;
        self
    }

    /// Bodies over `bytes` go to the blob store (at most
    /// [`MAX_INLINE_MAX_BYTES`]: a larger value is clamped to it).
    pub fn with_inline_max(mut self, bytes: usize) -> Self {
        self.inline_max = bytes.min(MAX_INLINE_MAX_BYTES);
        self
    }

    /// Handles one request and records its metrics in `metrics`.
    pub async fn handle(
        &self,
        request: &IngestRequest<'_>,
        metrics: &mut Metrics,
    ) -> IngestResponse {
        self.handle_then(request, metrics, |response| response)
            .await
    }

    /// [`Self::handle`], with `amend` applied to the answer before its
    /// metrics are recorded: the edge may know more of the request than
    /// the use case (ingest's HTTP API shape: a text body in which API
    /// Gateway may have replaced bytes) and name a refusal more precisely.
    pub async fn handle_then(
        &self,
        request: &IngestRequest<'_>,
        metrics: &mut Metrics,
        amend: impl FnOnce(IngestResponse) -> IngestResponse,
    ) -> IngestResponse {
        let started = Instant::now();
        let response = amend(self.handle_inner(request).await);
        match response.outcome {
            Outcome::Accepted { enqueue_failed } => {
                metrics.count("accepted", 1);
                if enqueue_failed {
                    metrics.count("enqueue_failed", 1);
                }
            }
            Outcome::Forwarded { deliveries, status } => {
                metrics.count("accepted", 1);
                metrics.count("forwarded_at_ingest", 1);
                metrics.count("deliveries", deliveries);
                if status == InboxStatus::Quarantined {
                    metrics.count("unrouted_quarantined", 1);
                } else if deliveries == 0 {
                    metrics.count("unrouted_dropped", 1);
                }
            }
            Outcome::Duplicate => {
                metrics.count("duplicate", 1);
            }
            Outcome::Rejected(reason) => {
                metrics.count("rejected", 1);
                metrics.count(&format!("rejected_{reason}"), 1);
            }
            Outcome::Spooled => {
                metrics.count("spooled", 1);
            }
            Outcome::Unavailable => {
                metrics.count("unavailable", 1);
            }
            Outcome::Handshake => {
                metrics.count("handshake", 1);
            }
            Outcome::Batch(counts) => {
                metrics.count("batches", 1);
                metrics.count("batch_events", counts.events.into());
                metrics.count("accepted", counts.stored.into());
                metrics.count("duplicate", counts.duplicates.into());
                if counts.forwarded > 0 {
                    metrics.count("forwarded_at_ingest", counts.forwarded.into());
                    metrics.count("deliveries", counts.deliveries.into());
                }
                if counts.enqueue_failed > 0 {
                    metrics.count("enqueue_failed", counts.enqueue_failed.into());
                }
            }
        }
        metrics.record(
            "latency_ms",
            Unit::Milliseconds,
            started.elapsed().as_secs_f64() * 1000.0,
        );
        response
    }

    /// Answers a GET to `partner`'s webhook URL: only the handshake of a
    /// provider that sends one by GET (Meta's `hub.challenge` with its
    /// verify token, Dropbox's `challenge`, Okta's verification challenge
    /// with its authentication header, X's CRC), as
    /// [`Partner::answer_get`](crate::config::Partner::answer_get) decides;
    /// nothing is stored. `query`: the decoded query parameters.
    pub async fn handle_get(
        &self,
        partner: &str,
        query: &[(&str, &str)],
        headers: &Headers<'_>,
        metrics: &mut Metrics,
    ) -> IngestResponse {
        let config = self.config.current().await;
        let response = match config.partner(partner) {
            None => {
                tracing::info!(partner = %partner, "unknown partner");
                IngestResponse::rejected(404, "unknown_partner", "no such partner")
            }
            Some(partner) => match partner.answer_get(&GetRequest { query, headers }) {
                Ok(answer) => {
                    tracing::info!(partner = %partner.name, "GET handshake answered");
                    IngestResponse::handshake(answer)
                }
                Err(e) => {
                    let (status, code) = e.status_and_code();
                    tracing::info!(partner = %partner.name, reason = code, error = %e, "GET refused");
                    IngestResponse::rejected(status, code, e.to_string())
                }
            },
        };
        match response.outcome {
            Outcome::Handshake => {
                metrics.count("handshake", 1);
            }
            Outcome::Rejected(reason) => {
                metrics.count("rejected", 1);
                metrics.count(&format!("rejected_{reason}"), 1);
            }
            _ => {}
        }
        response
    }

    async fn handle_inner(&self, request: &IngestRequest<'_>) -> IngestResponse {
        let config = self.config.current().await;
        let response = self.answer(&config, request).await;
        match config
            .partner(request.partner)
            .and_then(|p| p.acknowledge.as_deref())
        {
            // the provider's expected acknowledgement of what it sent
            Some(text) if response.handshake.is_none() && (200..300).contains(&response.status) => {
                IngestResponse {
                    handshake: Some(Box::new(HandshakeAnswer {
                        status: response.status,
                        content_type: Some("text/plain"),
                        headers: vec![("X-Content-Type-Options", "nosniff".to_owned())],
                        body: text.as_bytes().to_vec(),
                    })),
                    ..response
                }
            }
            _ => response,
        }
    }

    async fn answer(
        &self,
        config: &crate::config::HookboxConfig,
        request: &IngestRequest<'_>,
    ) -> IngestResponse {
        let Some(partner) = config.partner(request.partner) else {
            tracing::info!(partner = %request.partner, "unknown partner");
            return IngestResponse::rejected(404, "unknown_partner", "no such partner");
        };
        if request.body.len() > partner.max_body_bytes {
            return IngestResponse::rejected(
                413,
                "body_too_large",
                format!(
                    "body of {} bytes is over the limit of {} bytes",
                    request.body.len(),
                    partner.max_body_bytes
                ),
            );
        }
        // Asana's unsigned first request, which hands the signing secret
        // over: answered only while the partner enrols, the secret logged
        // sealed to the operator's key and kept nowhere
        if let Some(enrolled) = partner.enroll(&request.headers) {
            return match enrolled {
                Ok(Enrolled {
                    answer,
                    sealed_secret,
                }) => {
                    // warn: the operator must act (and the local stack
                    // shows warnings only)
                    tracing::warn!(
                        partner = %partner.name,
                        sealed_secret = %sealed_secret,
                        "handshake answered: the secret it handed over is sealed to the \
                         partner's enroll_key; open it with `hookbox enroll-key open`"
                    );
                    IngestResponse {
                        sealed_secret: Some(sealed_secret),
                        ..IngestResponse::handshake(answer)
                    }
                }
                Err(EnrollFailed::Refused(e)) => {
                    let (status, code) = e.status_and_code();
                    tracing::info!(partner = %partner.name, reason = code, error = %e, "handshake refused");
                    IngestResponse::rejected(status, code, e.to_string())
                }
                Err(EnrollFailed::Seal(e)) => {
                    tracing::error!(partner = %partner.name, error = %e, "handshake not answered");
                    IngestResponse::unavailable()
                }
            };
        }
        if partner.secrets.is_empty() {
            // enrolling, and the operator has not added the secret yet
            tracing::info!(partner = %partner.name, "no secret yet: the partner is enrolling");
            return IngestResponse::rejected(
                401,
                "no_secret_yet",
                format!(
                    "partner {} is enrolling and has no secret to verify with yet: add the one \
                     its handshake handed over to \"secrets\"",
                    partner.name
                ),
            );
        }
        let now = self.clock.now();
        let url = partner.public_url.as_deref().or(request.url);
        let mut signed = SignedRequest::new(request.body, request.headers.clone());
        if let Some(url) = url {
            signed = signed.with_url(url);
        }
        let verified = match partner.verifier.verify_at(&signed, &partner.secrets, now) {
            Ok(verified) => verified,
            Err(e) => return signature_refused(partner, &e),
        };
        // a provider's handshake, verified like its events: answered, not
        // stored
        if let Some(answer) = partner.handshake.and_then(|handshake| {
            let secret = partner.secrets.get(verified.secret_index)?;
            handshake.answer_post(&request.headers, request.body, secret)
        }) {
            return match answer {
                Ok(answer) => {
                    tracing::info!(partner = %partner.name, "handshake answered");
                    IngestResponse::handshake(answer)
                }
                Err(e) => {
                    tracing::info!(partner = %partner.name, error = %e, "handshake refused");
                    IngestResponse::rejected(400, "bad_handshake", e.to_string())
                }
            };
        }
        if let Some(batch) = &partner.batch {
            return self.store_batch(partner, batch, request, now).await;
        }
        let mut event = match build_event(partner, request) {
            Ok(event) => event,
            Err(response) => return response,
        };
        // A scheme that signs neither a timestamp nor an id: a captured
        // request resent under a fresh id must still be a duplicate.
        let dedupe = partner
            .dedupe_on_body
            .then(|| crate::blob::sha256(request.body));
        // Into the blob store BEFORE the insert: a row never refers to an
        // object that is not there.
        if let Body::Inline(bytes) = &mut event.body {
            let bytes = std::mem::take(bytes);
            event.body = match body::store(
                self.blobs.as_ref(),
                &event.partner,
                bytes,
                self.inline_max,
            )
            .await
            {
                Ok(body) => body,
                Err(e) => {
                    tracing::error!(error = %e, partner = %event.partner, "cannot store the body in the blob store");
                    return IngestResponse::unavailable();
                }
            };
        }
        let forward = self
            .forward_at_ingest
            .then(|| routed::at_ingest(partner, &event))
            .flatten();
        self.store(event, dedupe, forward, now).await
    }

    /// Stores the event and, with `forward`, finishes it in the same
    /// statement (`inbox::routed`).
    async fn store(
        &self,
        event: NewInboxEvent,
        dedupe: Option<[u8; 32]>,
        forward: Option<AtIngest>,
        now: DateTime<Utc>,
    ) -> IngestResponse {
        let inserted = tokio::time::timeout(self.db_deadline, async {
            match &forward {
                Some(forward) => {
                    routed::insert_forwarded(self.db.as_ref(), &event, now, dedupe, forward).await
                }
                // a new row is pending, for the processor
                None => insert_if_new_deduped(self.db.as_ref(), &event, now, dedupe)
                    .await
                    .map(|inserted| match inserted {
                        Inserted::New(id) => Stored::Waiting { id, refusal: None },
                        Inserted::Duplicate(id) => Stored::Duplicate(id),
                    }),
            }
        })
        .await;
        let Ok(inserted) = inserted else {
            // Safe even if the insert commits after all: the spooled copy's
            // insert is idempotent, and it carries what the row would.
            tracing::warn!(
                partner = %event.partner,
                deadline_ms = self.db_deadline.as_millis() as u64,
                "the database did not answer in time: spooling"
            );
            return self.spool(&event, dedupe, now).await;
        };
        match inserted {
            Ok(Stored::Finished {
                id,
                status,
                deliveries,
            }) => {
                crate::failpoint::hit!(crate::failpoint::INGEST_AFTER_INSERT);
                tracing::info!(
                    inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                    status = %status, deliveries, "accepted and forwarded"
                );
                IngestResponse::new(
                    200,
                    json!({"status": "accepted", "id": id}),
                    Outcome::Forwarded { deliveries, status },
                )
            }
            Ok(Stored::Waiting { id, refusal }) => {
                crate::failpoint::hit!(crate::failpoint::INGEST_AFTER_INSERT);
                if let Some(refusal) = refusal {
                    // not an error: the processor forwards it (through the
                    // blob store) or quarantines it, naming why
                    tracing::info!(
                        inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                        refusal = %refusal, "not forwarded at ingest: left to the processor"
                    );
                }
                let message = InboxMessage::stored(id, &event.partner, &event.event_id);
                let enqueue_failed = match message.to_body() {
                    Ok(body) => match self.queue.send(&body).await {
                        Ok(_) => {
                            crate::failpoint::hit!(crate::failpoint::INGEST_AFTER_SEND);
                            false
                        }
                        Err(e) => {
                            // The row is safe; the sweeper enqueues it later.
                            tracing::warn!(
                                inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                                error = %e, "enqueue after insert failed"
                            );
                            true
                        }
                    },
                    Err(e) => {
                        tracing::warn!(
                            inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                            error = %e, "cannot build the queue message"
                        );
                        true
                    }
                };
                tracing::info!(inbox_id = %id, partner = %event.partner, event_id = %event.event_id, "accepted");
                IngestResponse::new(
                    200,
                    json!({"status": "accepted", "id": id}),
                    Outcome::Accepted { enqueue_failed },
                )
            }
            Ok(Stored::Duplicate(id)) => {
                tracing::info!(inbox_id = %id, partner = %event.partner, event_id = %event.event_id, "duplicate");
                IngestResponse::new(
                    200,
                    json!({"status": "duplicate", "id": id}),
                    Outcome::Duplicate,
                )
            }
            Err(e) if e.is_retryable() => {
                tracing::warn!(error = %e, partner = %event.partner, "database unavailable: spooling");
                self.spool(&event, dedupe, now).await
            }
            Err(e) => {
                tracing::error!(error = %e, partner = %event.partner, "cannot store the event");
                IngestResponse::new(
                    500,
                    json!({"error": "internal"}),
                    Outcome::Rejected("internal"),
                )
            }
        }
    }

    async fn spool(
        &self,
        event: &NewInboxEvent,
        dedupe: Option<[u8; 32]>,
        now: DateTime<Utc>,
    ) -> IngestResponse {
        let body = match InboxMessage::spooled_deduped(event, dedupe, now).to_body() {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(error = %e, partner = %event.partner, "event too large to spool");
                return IngestResponse::unavailable();
            }
        };
        match self.queue.send(&body).await {
            Ok(_) => IngestResponse::new(202, json!({"status": "spooled"}), Outcome::Spooled),
            Err(e) => {
                tracing::error!(error = %e, partner = %event.partner, "database and queue unavailable");
                IngestResponse::unavailable()
            }
        }
    }
}
