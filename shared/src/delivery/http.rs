//! The HTTP transport: [`HttpTransport`] signs each entry and POSTs it
//! through the [`WebhookSender`] port (one signed POST), whose adapter is
//! [`HttpSender`] (reqwest behind the SSRF guard).

use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{DeliveryRequest, Entry, EntryOutcome, Transport, Verdict};
use crate::clock::Clock;
use crate::outbox::relay::backoff::parse_retry_after;

use crate::config::Destination;
use crate::delivery::guard::{GuardedResolver, Lookup, NetworkGuard, Refused, SystemLookup};
use crate::signature::{StandardWebhookHeaders, sign_standard_webhooks};

/// The `user-agent` of every delivery.
pub const USER_AGENT: &str = concat!("hookbox-relay/", env!("CARGO_PKG_VERSION"));

/// Most response-body bytes read (and kept, shortened, in `last_error` of a
/// failure); the rest is dropped.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// One delivery attempt, signed.
#[derive(Debug, Clone)]
pub struct OutboundRequest<'a> {
    /// Where to.
    pub destination: &'a Destination,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    pub headers: StandardWebhookHeaders,
    /// The JSON payload, exactly the bytes signed.
    pub body: &'a str,
    /// Give up waiting for the response after this long.
    pub timeout: Duration,
}

/// What came of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The receiver answered.
    Response {
        /// HTTP status.
        status: u16,
        /// Its `Retry-After` header, as sent.
        retry_after: Option<String>,
        /// The start of the response body (for the error of a failure).
        body_excerpt: String,
    },
    /// No answer: connection refused, reset, timed out, TLS failure, …
    Failed {
        /// What failed (no URL query, no secret).
        error: String,
    },
    /// The SSRF guard refused the destination's address; nothing was sent.
    Refused(Refused),
}

/// Sends one signed webhook.
///
/// Error contract: never fails as a call; every problem (no connection,
/// timeout, refusal) is a [`SendOutcome`], so the relay always has a result
/// to record.
#[async_trait]
pub trait WebhookSender: Send + Sync + fmt::Debug {
    /// POSTs `request` and reports what happened.
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome;
}

/// Most receivers (scheme, host and port) one connection pool serves before
/// the adapter starts a fresh one. A pool keeps every receiver's idle
/// connections open for [`POOL_IDLE`], and each is a file descriptor: with
/// thousands of tenants' endpoints, each its own host, one pool would hold a
/// socket per endpoint met in the last minute and reach a Lambda
/// function's 1,024 descriptors, past which no connection opens (not to
/// any endpoint, the database, S3 or SQS). A fresh pool lets the old one go
/// once its requests in flight end, closing its idle connections.
pub const MAX_POOLED_RECEIVERS: usize = 128;

/// How long an idle connection stays open for reuse.
pub const POOL_IDLE: Duration = Duration::from_secs(60);

/// The HTTP adapter: reqwest with rustls, no proxies, no redirects (a 3xx is
/// a failed attempt, not a hop to an unchecked address), and the SSRF guard
/// as its resolver. One client (connection pool) per set of allowed
/// networks, built on first use, and built anew once it has served
/// [`MAX_POOLED_RECEIVERS`] receivers.
#[derive(Debug)]
pub struct HttpSender {
    lookup: Arc<dyn Lookup>,
    clients: Mutex<HashMap<NetworkGuard, Pool>>,
    max_receivers: usize,
    hasher: foldhash::fast::RandomState,
}

/// One connection pool and the receivers it has served.
#[derive(Debug)]
struct Pool {
    client: reqwest::Client,
    receivers: foldhash::HashSet<u64>,
}

impl Default for HttpSender {
    fn default() -> Self {
        Self::new(Arc::new(SystemLookup))
    }
}

impl HttpSender {
    /// An adapter resolving names with `lookup` (the system resolver in
    /// production).
    pub fn new(lookup: Arc<dyn Lookup>) -> Self {
        Self::with_max_receivers(lookup, MAX_POOLED_RECEIVERS)
    }

    /// As [`HttpSender::new`], a fresh pool after `max_receivers` receivers
    /// (at least 1).
    pub fn with_max_receivers(lookup: Arc<dyn Lookup>, max_receivers: usize) -> Self {
        Self {
            lookup,
            clients: Mutex::new(HashMap::new()),
            max_receivers: max_receivers.max(1),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// The client for `url` under `guard`: its pool's, or a fresh pool's
    /// when `url`'s receiver would be one more than the pool may serve.
    fn client(&self, guard: &NetworkGuard, url: &reqwest::Url) -> Result<reqwest::Client, String> {
        let receiver =
            self.hasher
                .hash_one((url.scheme(), url.host_str(), url.port_or_known_default()));
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pool) = clients.get_mut(guard) {
            if pool.receivers.contains(&receiver) {
                return Ok(pool.client.clone());
            }
            if pool.receivers.len() < self.max_receivers {
                pool.receivers.insert(receiver);
                return Ok(pool.client.clone());
            }
        }
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(GuardedResolver::new(guard.clone(), self.lookup.clone()))
            .pool_idle_timeout(POOL_IDLE)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))?;
        let mut receivers = foldhash::HashSet::default();
        receivers.insert(receiver);
        clients.insert(
            guard.clone(),
            Pool {
                client: client.clone(),
                receivers,
            },
        );
        Ok(client)
    }
}

#[async_trait]
impl WebhookSender for HttpSender {
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome {
        let Some(http) = request.destination.http() else {
            return SendOutcome::Failed {
                error: format!(
                    "destination {:?} is a {} destination, not http",
                    request.destination.name,
                    request.destination.kind()
                ),
            };
        };
        let guard = NetworkGuard::new(http.allowed_networks.clone());
        if let Err(refused) = guard.check_url(&http.url) {
            return SendOutcome::Refused(refused);
        }
        let client = match self.client(&guard, &http.url) {
            Ok(client) => client,
            Err(error) => return SendOutcome::Failed { error },
        };
        let mut builder = client
            .post(http.url.clone())
            .timeout(request.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.body.to_string());
        // the endpoint's own headers first: the signature's cannot be
        // overridden (their names are refused when the headers are set)
        for (name, value) in &http.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        for (name, value) in request.headers.pairs() {
            builder = builder.header(name, value);
        }
        let mut response = match builder.send().await {
            Ok(response) => response,
            Err(e) => return failure(&e, request.timeout),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        // the body is read (bounded) so the connection can be reused; a
        // failure while reading it does not change the answer we got
        while body.len() < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        SendOutcome::Response {
            status,
            retry_after,
            body_excerpt: excerpt(&body),
        }
    }
}

fn failure(error: &reqwest::Error, timeout: Duration) -> SendOutcome {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return SendOutcome::Refused(refused.clone());
        }
        if let Some(crate::delivery::guard::ResolveError::Refused(refused)) =
            e.downcast_ref::<crate::delivery::guard::ResolveError>()
        {
            return SendOutcome::Refused(refused.clone());
        }
        source = e.source();
    }
    let error = if error.is_timeout() {
        format!(
            "no response within {:.1} s (timed out)",
            timeout.as_secs_f64()
        )
    } else {
        chain(error)
    };
    SendOutcome::Failed { error }
}

/// The error and its sources, `: `-separated, without the URL (a query may
/// carry a token).
fn chain(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    text.push_str(&kind(error));
    while let Some(e) = source {
        let line = e.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = e.source();
    }
    text
}

fn kind(error: &reqwest::Error) -> String {
    if error.is_connect() {
        "cannot connect".into()
    } else if error.is_request() {
        "request failed".into()
    } else if error.is_body() {
        "body failed".into()
    } else {
        "HTTP error".into()
    }
}

/// The first 1 KiB of a response body as one line of text (invalid UTF-8
/// replaced, control characters as spaces, `…` when cut): what the attempt
/// log keeps.
pub fn excerpt(body: &[u8]) -> String {
    let cut = body.len() > crate::outbox::repo::MAX_RESPONSE_EXCERPT_BYTES;
    let text = String::from_utf8_lossy(
        &body[..body
            .len()
            .min(crate::outbox::repo::MAX_RESPONSE_EXCERPT_BYTES)],
    );
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out = out.trim().to_string();
    if cut {
        out.push('…');
    }
    out
}

/// The first 200 characters of an excerpt, for an error text.
pub fn short_excerpt(excerpt: &str) -> String {
    if excerpt.chars().count() <= 200 {
        return excerpt.to_string();
    }
    let mut out: String = excerpt.chars().take(200).collect();
    out.push('…');
    out
}

/// The HTTP transport: each entry signed (Standard Webhooks, with every
/// secret of the destination) and POSTed through a [`WebhookSender`], one
/// request per entry, the answer mapped onto an [`EntryOutcome`]: 2xx
/// delivered; 410 dead, the destination gone; any other status retried
/// (with its `Retry-After` on a 429 or 503); no answer retried; an address
/// the SSRF guard refuses retried and flagged `refused`.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
}

impl HttpTransport {
    /// Over `sender`; `clock` dates a `Retry-After` given as an HTTP date.
    pub fn new(sender: Arc<dyn WebhookSender>, clock: Arc<dyn Clock>) -> Self {
        Self { sender, clock }
    }

    async fn deliver_one(
        &self,
        destination: &Destination,
        entry: &Entry<'_>,
        started_at: DateTime<Utc>,
        timeout: Duration,
    ) -> EntryOutcome {
        let Some(http) = destination.http() else {
            return EntryOutcome::retry(format!(
                "destination {:?} is a {} destination, not http",
                destination.name,
                destination.kind()
            ));
        };
        let webhook_id = entry.id.to_string();
        let headers = match sign_standard_webhooks(
            &webhook_id,
            started_at,
            entry.payload.as_bytes(),
            &http.secrets,
        ) {
            Ok(headers) => headers,
            Err(e) => {
                return EntryOutcome::retry(format!(
                    "cannot sign for destination {:?}: {e}",
                    destination.name
                ));
            }
        };
        let sent = self
            .sender
            .send(OutboundRequest {
                destination,
                headers,
                body: entry.payload,
                timeout,
            })
            .await;
        match sent {
            SendOutcome::Response {
                status,
                retry_after,
                body_excerpt,
            } => {
                let response_excerpt = (!body_excerpt.is_empty()).then(|| body_excerpt.clone());
                let verdict = match status {
                    200..=299 => Verdict::Delivered,
                    410 => Verdict::Dead {
                        reason: format!(
                            "410 Gone: destination {:?} says this endpoint no longer exists",
                            destination.name
                        ),
                    },
                    _ => {
                        let mut reason = format!("HTTP {status}");
                        if !body_excerpt.is_empty() {
                            reason.push_str(": ");
                            reason.push_str(&short_excerpt(&body_excerpt));
                        }
                        let after = match status {
                            429 | 503 => retry_after
                                .as_deref()
                                .and_then(|v| parse_retry_after(v, self.clock.now())),
                            _ => None,
                        };
                        Verdict::Retry { after, reason }
                    }
                };
                EntryOutcome {
                    verdict,
                    status_code: Some(status),
                    response_excerpt,
                    gone: status == 410,
                    refused: false,
                }
            }
            SendOutcome::Failed { error } => EntryOutcome::retry(error),
            SendOutcome::Refused(refused) => EntryOutcome {
                refused: true,
                ..EntryOutcome::retry(refused.to_string())
            },
        }
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        let mut outcomes = Vec::with_capacity(request.entries.len());
        for entry in request.entries {
            outcomes.push(
                self.deliver_one(
                    request.destination,
                    entry,
                    request.started_at,
                    request.timeout,
                )
                .await,
            );
        }
        outcomes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_single_lines_of_at_most_1_kib() {
        assert_eq!(excerpt(b"  nope\r\n"), "nope");
        assert_eq!(excerpt(b"a\nb"), "a b");
        let long = "x".repeat(5_000);
        let e = excerpt(long.as_bytes());
        assert_eq!(e.chars().count(), 1_025);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(&[0xff, b'a']), "\u{fffd}a");
        let short = short_excerpt(&e);
        assert_eq!(short.chars().count(), 201);
        assert!(short.ends_with('…'));
        assert_eq!(short_excerpt("fine"), "fine");
    }

    /// Answers every request with the same outcome.
    #[derive(Debug)]
    struct Answer(SendOutcome);

    #[async_trait]
    impl WebhookSender for Answer {
        async fn send(&self, _request: OutboundRequest<'_>) -> SendOutcome {
            self.0.clone()
        }
    }

    async fn outcome_of(answer: SendOutcome) -> EntryOutcome {
        let config = crate::config::HookboxConfig::parse(
            r#"{"destinations": {"crm": {"url": "https://crm.example.com/in",
                "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]}}}"#,
            "test",
        )
        .expect("valid");
        let start = DateTime::<Utc>::UNIX_EPOCH;
        let clock = Arc::new(crate::clock::ManualClock::new(start));
        let transport = HttpTransport::new(Arc::new(Answer(answer)), clock);
        let entries = [Entry {
            id: uuid::Uuid::nil(),
            event_type: "order.paid",
            aggregate_type: "order",
            aggregate_id: "o-1",
            payload: "{}",
            blob: None,
        }];
        let mut outcomes = transport
            .deliver(DeliveryRequest {
                destination: config.destination("crm").expect("crm"),
                entries: &entries,
                started_at: start,
                timeout: Duration::from_secs(1),
            })
            .await;
        assert_eq!(outcomes.len(), 1, "one outcome per entry");
        outcomes.remove(0)
    }

    fn response(status: u16, retry_after: Option<&str>, body: &str) -> SendOutcome {
        SendOutcome::Response {
            status,
            retry_after: retry_after.map(str::to_string),
            body_excerpt: body.to_string(),
        }
    }

    #[tokio::test]
    async fn http_answers_map_onto_delivered_retry_and_dead() {
        let ok = outcome_of(response(204, None, "")).await;
        assert_eq!(
            (ok.verdict, ok.status_code),
            (Verdict::Delivered, Some(204))
        );
        assert_eq!(ok.response_excerpt, None);

        let gone = outcome_of(response(410, None, "bye")).await;
        assert!(
            gone.gone && matches!(gone.verdict, Verdict::Dead { .. }),
            "{gone:?}"
        );
        assert_eq!(gone.response_excerpt.as_deref(), Some("bye"));

        let busy = outcome_of(response(503, Some("120"), "later")).await;
        assert_eq!(
            busy.verdict,
            Verdict::Retry {
                after: Some(Duration::from_secs(120)),
                reason: "HTTP 503: later".into()
            }
        );
        // Retry-After counts only on 429 and 503
        let bad = outcome_of(response(500, Some("120"), "")).await;
        assert_eq!(
            bad.verdict,
            Verdict::Retry {
                after: None,
                reason: "HTTP 500".into()
            }
        );

        let silent = outcome_of(SendOutcome::Failed {
            error: "cannot connect".into(),
        })
        .await;
        assert_eq!(
            silent.verdict,
            Verdict::Retry {
                after: None,
                reason: "cannot connect".into()
            }
        );
        assert_eq!(silent.status_code, None);
    }
}
