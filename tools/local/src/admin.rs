//! `/admin`: the operator page and its JSON API (read-mostly: counts over
//! time, rows that need a human, the destinations' health, replay / retry /
//! redrive / enable).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use hookbox::admin::{InboxCursor, InboxFilter, OutboxCursor, OutboxFilter, OutboxRetry};
use hookbox::clock::Clock;
use hookbox::inbox::{self, InboxStatus};
use hookbox::outbox::{self, OutboxStatus};
use hookbox::processing::{ReplayOutcome, replay};
use hookbox::queue::Queue;
use hookbox::store::{Database, DbError};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

/// The page (one self-contained file).
pub const PAGE: &str = include_str!("../admin/index.html");

/// Samples kept for the chart (one every [`SAMPLE_EVERY`]).
pub const HISTORY: usize = 120;

/// How often counts are sampled.
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Moves the dead letters of the stack's queue back (the in-memory DLQ
/// locally; `None` with a real SQS queue, where `hookbox dlq redrive` is the
/// tool).
pub type Redrive = Arc<dyn Fn() -> usize + Send + Sync>;

/// What the admin routes need.
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

/// The routes under `/admin`.
pub fn routes(admin: Admin) -> Router {
    Router::new()
        .route("/admin", get(page))
        .route("/admin/", get(page))
        .route("/admin/api/stats", get(stats))
        .route("/admin/api/inbox", get(inbox_rows))
        .route("/admin/api/outbox", get(outbox_rows))
        .route("/admin/api/inbox/{id}/replay", post(replay_row))
        .route("/admin/api/outbox/{id}/retry", post(retry_row))
        .route("/admin/api/outbox/{id}/attempts", get(attempts_of))
        .route("/admin/api/dlq/redrive", post(redrive))
        .route("/admin/api/destinations", get(destination_rows))
        .route(
            "/admin/api/destinations/{name}/enable",
            post(enable_destination),
        )
        .with_state(admin)
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

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Html(PAGE),
    )
        .into_response()
}

fn db_error(e: DbError) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "error": e.to_string() })),
    )
        .into_response()
}

fn bad_request(detail: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": detail }))).into_response()
}

/// Counts by status and oldest pending ages, as `hookbox stats --json` prints.
pub async fn counts(db: &dyn Database, now: DateTime<Utc>) -> Result<Value, DbError> {
    let inbox_counts = inbox::counts_by_status(db).await?;
    let outbox_counts = outbox::counts_by_status(db).await?;
    let inbox_oldest = inbox::oldest_active_received_at(db).await?;
    let outbox_oldest = outbox::oldest_pending_created_at(db).await?;
    let age =
        |t: Option<DateTime<Utc>>| t.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0);
    let mut inbox_json = serde_json::Map::new();
    for s in InboxStatus::ALL {
        inbox_json.insert(
            s.as_str().into(),
            json!(inbox_counts.get(&s).copied().unwrap_or(0)),
        );
    }
    let mut outbox_json = serde_json::Map::new();
    for s in OutboxStatus::ALL {
        outbox_json.insert(
            s.as_str().into(),
            json!(outbox_counts.get(&s).copied().unwrap_or(0)),
        );
    }
    Ok(json!({
        "inbox": inbox_json,
        "outbox": outbox_json,
        "oldest_pending_seconds": { "inbox": age(inbox_oldest), "outbox": age(outbox_oldest) },
    }))
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

async fn stats(State(admin): State<Admin>) -> Response {
    match counts(admin.db.as_ref(), admin.clock.now()).await {
        Ok(mut c) => {
            let history: Vec<Value> = admin
                .history
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect();
            c["history"] = Value::from(history);
            Json(c).into_response()
        }
        Err(e) => db_error(e),
    }
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    status: String,
    #[serde(default)]
    limit: Option<i64>,
}

async fn inbox_rows(State(admin): State<Admin>, Query(q): Query<ListQuery>) -> Response {
    let status: InboxStatus = match q.status.parse() {
        Ok(s) => s,
        Err(e) => return bad_request(format!("{e}")),
    };
    let filter = InboxFilter {
        status,
        partner: None,
    };
    let limit = q.limit.unwrap_or(50).clamp(1, hookbox::admin::MAX_PAGE);
    match hookbox::admin::list_inbox(admin.db.as_ref(), &filter, InboxCursor::start(), limit).await
    {
        Ok(rows) => Json(json!({ "rows": rows.iter().map(|r| json!({
            "id": r.id,
            "partner": r.partner,
            "event_id": r.event_id,
            "event_type": r.event_type,
            "status": r.status.as_str(),
            "attempts": r.attempts,
            "received_at": r.received_at.to_rfc3339(),
            "last_error": r.last_error,
        })).collect::<Vec<_>>() }))
        .into_response(),
        Err(e) => db_error(e),
    }
}

async fn outbox_rows(State(admin): State<Admin>, Query(q): Query<ListQuery>) -> Response {
    let status: OutboxStatus = match q.status.parse() {
        Ok(s) => s,
        Err(e) => return bad_request(format!("{e}")),
    };
    let filter = OutboxFilter {
        status: Some(status),
        destination: None,
    };
    let limit = q.limit.unwrap_or(50).clamp(1, hookbox::admin::MAX_PAGE);
    match hookbox::admin::list_outbox(admin.db.as_ref(), &filter, OutboxCursor::start(), limit)
        .await
    {
        Ok(rows) => Json(json!({ "rows": rows.iter().map(|r| json!({
            "id": r.id,
            "destination": r.destination,
            "event_type": r.event_type,
            "aggregate_id": r.aggregate_id,
            "status": r.status.as_str(),
            "attempts": r.attempts,
            "last_status_code": r.last_status_code,
            "last_error": r.last_error,
            "created_at": r.created_at.to_rfc3339(),
        })).collect::<Vec<_>>() }))
        .into_response(),
        Err(e) => db_error(e),
    }
}

/// Every logged attempt of one delivery, oldest first (empty when none is).
async fn attempts_of(State(admin): State<Admin>, Path(id): Path<String>) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    match outbox::attempts::of(admin.db.as_ref(), id).await {
        Ok(attempts) => Json(
            json!({ "id": id, "attempts": attempts.iter().map(|a| json!({
            "attempt": a.attempt,
            "attempted_at": a.attempted_at.to_rfc3339(),
            "destination": a.destination,
            "status_code": a.status_code,
            "latency_ms": a.latency_ms,
            "error": a.error,
            "response_excerpt": a.response_excerpt,
        })).collect::<Vec<_>>() }),
        )
        .into_response(),
        Err(e) => db_error(e),
    }
}

fn parse_id(id: &str) -> Result<Uuid, Box<Response>> {
    id.parse()
        .map_err(|_| Box::new(bad_request(format!("{id:?} is not a row id (a UUID)"))))
}

async fn replay_row(State(admin): State<Admin>, Path(id): Path<String>) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    match replay(
        admin.db.as_ref(),
        admin.queue.as_ref(),
        admin.clock.as_ref(),
        id,
    )
    .await
    {
        Ok(outcome) => {
            let name = match &outcome {
                ReplayOutcome::Enqueued { .. } => "enqueued",
                ReplayOutcome::PendingForSweeper { .. } => "pending_for_sweeper",
                ReplayOutcome::NotReplayable { .. } => "not_replayable",
                ReplayOutcome::Missing { .. } => "missing",
            };
            tracing::info!(inbox_id = %id, outcome = name, "replay from /admin");
            Json(json!({ "id": id, "outcome": name })).into_response()
        }
        Err(e) => db_error(e),
    }
}

async fn retry_row(State(admin): State<Admin>, Path(id): Path<String>) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    match hookbox::admin::retry_dead_outbox(admin.db.as_ref(), &[id], admin.clock.now()).await {
        Ok(results) => {
            let name = match results.first() {
                Some(OutboxRetry::Retried { .. }) => "retried",
                Some(OutboxRetry::NotRetryable { .. }) => "not_retryable",
                _ => "missing",
            };
            Json(json!({ "id": id, "outcome": name })).into_response()
        }
        Err(e) => db_error(e),
    }
}

/// The health of every configured destination and of every tenant's
/// endpoint that is not healthy (`hookbox destination list`), and how many
/// healthy endpoints are left out.
async fn destination_rows(State(admin): State<Admin>) -> Response {
    let now = admin.clock.now();
    let healthy = match outbox::destinations::healthy_endpoints(admin.db.as_ref()).await {
        Ok(n) => n,
        Err(e) => return db_error(e),
    };
    match outbox::destinations::health(admin.db.as_ref()).await {
        Ok(rows) => Json(
            json!({ "healthy_endpoints_not_listed": healthy, "rows": rows.iter().map(|h| json!({
            "name": h.name,
            "state": h.state(now),
            "consecutive_failures": h.consecutive_failures,
            "failing_since": h.failing_since.map(|t| t.to_rfc3339()),
            "open_until": h.open_until.map(|t| t.to_rfc3339()),
            "disabled_at": h.disabled_at.map(|t| t.to_rfc3339()),
            "disabled_reason": h.disabled_reason,
            "pending": h.pending,
        })).collect::<Vec<_>>() }),
        )
        .into_response(),
        Err(e) => db_error(e),
    }
}

/// Enables a destination and closes its breaker (`hookbox destination
/// enable`): `enabled`, or `missing` when no such destination is synced.
async fn enable_destination(State(admin): State<Admin>, Path(name): Path<String>) -> Response {
    match outbox::destinations::enable(admin.db.as_ref(), &name).await {
        Ok(done) => {
            let outcome = if done { "enabled" } else { "missing" };
            tracing::info!(destination = %name, outcome, "enable from /admin");
            Json(json!({ "name": name, "outcome": outcome })).into_response()
        }
        Err(e) => db_error(e),
    }
}

async fn redrive(State(admin): State<Admin>) -> Response {
    match &admin.redrive {
        Some(redrive) => Json(json!({ "moved": redrive() })).into_response(),
        None => (
            StatusCode::CONFLICT,
            Json(json!({ "error": "the stack uses a real SQS queue: use `hookbox dlq redrive`" })),
        )
            .into_response(),
    }
}
