//! The downstream receivers, in process (the relay's sender port; nothing
//! leaves the machine): `erp` fails at random, answers 429 with
//! Retry-After, and hangs past the timeout; `legacy` answers 410 (gone).
//! Every 2xx is logged by `webhook-id`, as a receiver that deduplicates
//! would; so is the body of every attempt (the first, and how many later
//! attempts of the same id sent other bytes), for the ledger to compare
//! with what the partner sent.
//!
//! Every attempt at a tenant's endpoint (`ep_…`) is also logged in order,
//! with its headers, body and answer ([`EndpointAttempt`]), for the tenants'
//! ledger to check who got what, when and signed with which secret. Their
//! hangs are simulated: an endpoint's timeout is 10 s of real time.
//!
//! A quarter of the hangs are real: the attempt goes through hookbox's own
//! HTTP adapter (`HttpSender`, reqwest) to a tarpit on 127.0.0.1 that reads
//! the request and never answers, so the relay's timeout is what ends it.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use hookbox::config::{Destination, HttpTarget, Target};
use hookbox::relay::{HttpSender, OutboundRequest, SendOutcome, WebhookSender};

/// The destination that is gone.
pub const GONE: &str = "legacy";

/// The receivers.
#[derive(Debug)]
pub struct Receivers {
    rng: Mutex<fastrand::Rng>,
    /// Percent of `erp` attempts that fail (500, 429 or a timeout).
    fail_pct: u8,
    delivered: Mutex<HashMap<String, u32>>,
    tried: Mutex<HashMap<String, u32>>,
    bodies: Mutex<HashMap<String, Body>>,
    attempts: Mutex<HashMap<&'static str, u64>>,
    endpoints: Mutex<Vec<EndpointAttempt>>,
    tarpit: Tarpit,
}

/// One attempt at a tenant's endpoint, as its receiver saw it.
#[derive(Debug, Clone)]
pub struct EndpointAttempt {
    /// The endpoint (`ep_…`).
    pub endpoint: String,
    /// `webhook-id`.
    pub id: String,
    /// `webhook-timestamp` (the relay's clock when it sent).
    pub timestamp: String,
    /// `webhook-signature`.
    pub signature: String,
    /// The body.
    pub body: String,
    /// Answered 2xx.
    pub ok: bool,
}

/// What the attempts of one `webhook-id` POSTed.
#[derive(Debug, Clone, Default)]
pub struct Body {
    /// The first attempt's body.
    pub first: String,
    /// Later attempts whose body was not the first's, byte for byte.
    pub changed: u32,
}

/// A receiver on 127.0.0.1 that reads every request and never answers,
/// reached through the real HTTP adapter.
#[derive(Debug)]
struct Tarpit {
    url: reqwest::Url,
    http: HttpSender,
}

impl Tarpit {
    /// Listening (on the caller's runtime) until the process ends.
    async fn start() -> Self {
        let tarpit = hookbox_testkit::receivers::Tarpit::start().await;
        let url = reqwest::Url::parse(&tarpit.url("/hooks"))
            .unwrap_or_else(|e| panic!("the tarpit's URL: {e}"));
        Self {
            url,
            http: HttpSender::default(),
        }
    }

    /// `request`, sent to the tarpit instead of its destination (the SSRF
    /// guard told that loopback is this destination's network).
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome {
        let (secrets, headers) = request
            .destination
            .http()
            .map(|http| (http.secrets.clone(), http.headers.clone()))
            .unwrap_or_default();
        let destination = Destination {
            target: Target::Http(HttpTarget {
                url: self.url.clone(),
                secrets,
                allowed_networks: vec!["127.0.0.1/32".parse().unwrap_or_else(|e| panic!("{e}"))],
                headers,
            }),
            ..request.destination.clone()
        };
        self.http
            .send(OutboundRequest {
                destination: &destination,
                ..request
            })
            .await
    }
}

impl Receivers {
    /// Receivers whose failures follow `seed` (the tarpit listens on the
    /// caller's runtime).
    pub async fn new(seed: u64, fail_pct: u8) -> Self {
        Self {
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            fail_pct,
            delivered: Mutex::default(),
            tried: Mutex::default(),
            bodies: Mutex::default(),
            attempts: Mutex::default(),
            endpoints: Mutex::default(),
            tarpit: Tarpit::start().await,
        }
    }

    /// Times each `webhook-id` was answered 2xx.
    pub fn delivered(&self) -> HashMap<String, u32> {
        self.delivered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Times each `webhook-id` was sent, whatever the answer.
    pub fn tried(&self) -> HashMap<String, u32> {
        self.tried.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The body each `webhook-id` was sent with.
    pub fn bodies(&self) -> HashMap<String, Body> {
        self.bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Attempts by answer (`2xx`, `500`, `429`, `timeout` (simulated),
    /// `hang` (the tarpit, ended by the relay's timeout), `410`).
    pub fn attempts(&self) -> HashMap<&'static str, u64> {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every attempt at a tenant's endpoint, in the order they were made.
    pub fn endpoint_attempts(&self) -> Vec<EndpointAttempt> {
        self.endpoints
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn log_endpoint(&self, request: &OutboundRequest<'_>, ok: bool) {
        if hookbox::config::is_endpoint(&request.destination.name) {
            self.endpoints
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(EndpointAttempt {
                    endpoint: request.destination.name.clone(),
                    id: request.headers.id.clone(),
                    timestamp: request.headers.timestamp.clone(),
                    signature: request.headers.signature.clone(),
                    body: request.body.to_owned(),
                    ok,
                });
        }
    }

    fn count(&self, kind: &'static str) {
        *self
            .attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(kind)
            .or_default() += 1;
    }
}

fn response(status: u16, retry_after: Option<&str>) -> SendOutcome {
    SendOutcome::Response {
        status,
        retry_after: retry_after.map(str::to_owned),
        body_excerpt: String::new(),
    }
}

#[async_trait]
impl WebhookSender for Receivers {
    async fn send(&self, request: OutboundRequest<'_>) -> SendOutcome {
        *self
            .tried
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(request.headers.id.clone())
            .or_default() += 1;
        {
            let mut bodies = self.bodies.lock().unwrap_or_else(|p| p.into_inner());
            match bodies.get_mut(&request.headers.id) {
                Some(seen) => seen.changed += u32::from(seen.first != request.body),
                None => {
                    bodies.insert(
                        request.headers.id.clone(),
                        Body {
                            first: request.body.to_owned(),
                            changed: 0,
                        },
                    );
                }
            }
        }
        if request.destination.name == GONE {
            self.count("410");
            return response(410, None);
        }
        let (roll, real) = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            (rng.u8(0..100), rng.u8(0..4) == 0)
        };
        let endpoint = hookbox::config::is_endpoint(&request.destination.name);
        if roll < self.fail_pct {
            self.log_endpoint(&request, false);
            return match roll % 3 {
                0 => {
                    self.count("500");
                    response(500, None)
                }
                1 => {
                    self.count("429");
                    response(429, Some("30"))
                }
                _ if real && !endpoint => {
                    let outcome = self.tarpit.send(request).await;
                    match &outcome {
                        SendOutcome::Failed { .. } => self.count("hang"),
                        // the tarpit never answers: anything else is wrong
                        // and shows in the figures
                        _ => self.count("hang answered"),
                    }
                    outcome
                }
                _ => {
                    self.count("timeout");
                    SendOutcome::Failed {
                        error: format!("no answer within {:?}", request.timeout),
                    }
                }
            };
        }
        self.count("2xx");
        self.log_endpoint(&request, true);
        *self
            .delivered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(request.headers.id.clone())
            .or_default() += 1;
        response(204, None)
    }
}
