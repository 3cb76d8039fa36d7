//! The downstream receivers, in process (the relay's sender port; nothing
//! leaves the machine): `erp` fails at random, answers 429 with
//! Retry-After, and "hangs" past the timeout; `legacy` answers 410 (gone).
//! Every 2xx is logged by `webhook-id`, as a receiver that deduplicates
//! would.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use hookbox::relay::{OutboundRequest, SendOutcome, WebhookSender};

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
    attempts: Mutex<HashMap<&'static str, u64>>,
}

impl Receivers {
    /// Receivers whose failures follow `seed`.
    pub fn new(seed: u64, fail_pct: u8) -> Self {
        Self {
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            fail_pct,
            delivered: Mutex::default(),
            tried: Mutex::default(),
            attempts: Mutex::default(),
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

    /// Attempts by answer (`2xx`, `500`, `429`, `timeout`, `410`).
    pub fn attempts(&self) -> HashMap<&'static str, u64> {
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
        if request.destination.name == GONE {
            self.count("410");
            return response(410, None);
        }
        let roll = self
            .rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .u8(0..100);
        if roll < self.fail_pct {
            return match roll % 3 {
                0 => {
                    self.count("500");
                    response(500, None)
                }
                1 => {
                    self.count("429");
                    response(429, Some("30"))
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
        *self
            .delivered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(request.headers.id.clone())
            .or_default() += 1;
        response(204, None)
    }
}
