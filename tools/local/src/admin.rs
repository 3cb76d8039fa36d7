//! `/admin`: the operator page (`hookbox::management::operator`, the same
//! page and API the management function serves), with what only the local
//! stack has: counts sampled over time for its chart, the in-memory DLQ's
//! redrive, and trust in its own loopback pages (no operator link needed
//! here; one works too).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookbox::clock::Clock;
use hookbox::management::operator::{OperatorPorts, Redrive, counts};
use hookbox::queue::Queue;
use hookbox::store::{Database, DbError};
use serde_json::{Value, json};

/// Samples kept for the chart (one every [`SAMPLE_EVERY`]).
pub const HISTORY: usize = 120;

/// How often counts are sampled.
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Who the page's requests are from when the stack vouches for them.
pub const LOCAL_OPERATOR: &str = "local (loopback)";

/// What the operator page needs from the local stack.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // holds a closure
pub struct Admin {
    /// The database.
    pub db: Arc<dyn Database>,
    /// The inbox queue (replays enqueue here).
    pub queue: Arc<dyn Queue>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Counts sampled over time.
    pub history: Arc<Mutex<VecDeque<Value>>>,
    /// DLQ redrive, when the queue is the in-memory one.
    pub redrive: Option<Redrive>,
}

impl Admin {
    /// The page's ports.
    pub fn ports(&self) -> OperatorPorts {
        OperatorPorts {
            queue: Some(self.queue.clone()),
            history: Some(self.history.clone()),
            redrive: self.redrive.clone(),
        }
    }
}

/// Only this machine's own pages (and tools without a browser) may use
/// `/admin`: the `Host` must be this stack's loopback address (a
/// DNS-rebinding page has another name), and a browser's `Origin`, when
/// sent, must be the stack itself (a page elsewhere cannot replay, retry or
/// redrive through the user's browser).
pub async fn same_origin_only(
    State(port): State<u16>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let allowed = |authority: &str| {
        [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .iter()
        .any(|a| a == authority)
    };
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !allowed(host) {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({ "error": format!("/admin answers only for 127.0.0.1:{port}") })),
        )
            .into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !origin.strip_prefix("http://").is_some_and(allowed) {
            return (
                StatusCode::FORBIDDEN,
                Json(json!({ "error": "cross-origin requests to /admin are refused" })),
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// Records one sample of the counts (the stack calls this every
/// [`SAMPLE_EVERY`]).
pub async fn sample(admin: &Admin) -> Result<(), DbError> {
    let now = admin.clock.now();
    let c = counts(admin.db.as_ref(), now).await?;
    let mut history = admin.history.lock().unwrap_or_else(|p| p.into_inner());
    history
        .push_back(json!({ "at": now.to_rfc3339(), "inbox": c["inbox"], "outbox": c["outbox"] }));
    while history.len() > HISTORY {
        history.pop_front();
    }
    Ok(())
}
