//! The operator page's JSON API under `/admin/api/` (read-mostly: counts,
//! rows that need a human, the destinations' health, tenants; replay,
//! retry, redrive, enable). Answers `{"error": …}` on a refusal: 400 for a
//! bad input, 409 for what this stack cannot do, 503 when the database
//! cannot answer.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::super::{ApiRequest, ApiResponse, ManagementApi};
use super::Operator;
use crate::admin::{InboxCursor, InboxFilter, MAX_PAGE, OutboxCursor, OutboxFilter, OutboxRetry};
use crate::inbox::{self, InboxStatus};
use crate::outbox::{self, OutboxStatus};
use crate::params;
use crate::processing::{ReplayOutcome, replay};
use crate::store::{Database, DbError, Statement, Value as Param};

/// A page of tenants with how many endpoints each has, and how many of
/// them are not healthy (failing, open or disabled).
const TENANTS: Statement = Statement::new(
    "operator.tenants",
    "SELECT t.id, pg_catalog.jsonb_build_object(
                'id', t.id, 'uid', t.uid, 'name', t.name, 'disabled', t.disabled_at IS NOT NULL,
                'endpoints', (SELECT count(*) FROM hookbox_endpoints AS e WHERE e.tenant_id = t.id),
                'unhealthy_endpoints',
                    (SELECT count(*) FROM outbox_destinations AS d
                      WHERE d.tenant_id = t.id
                        AND (d.consecutive_failures > 0 OR d.open_until IS NOT NULL
                             OR d.disabled_at IS NOT NULL))) AS doc
       FROM hookbox_tenants AS t
      WHERE CAST(:after AS text) IS NULL OR t.id > CAST(:after AS text)
      ORDER BY t.id
      LIMIT CAST(:limit AS integer) + 1",
);

fn answer(value: &Value) -> ApiResponse {
    super::no_store(200, value)
}

fn error(status: u16, detail: impl Into<String>) -> ApiResponse {
    super::no_store(status, &json!({ "error": detail.into() }))
}

fn db_error(e: &DbError) -> ApiResponse {
    error(503, e.to_string())
}

/// Counts by status and the oldest pending ages, as `hookbox stats --json`
/// prints.
pub async fn counts(db: &dyn Database, now: DateTime<Utc>) -> Result<Value, DbError> {
    let inbox_counts = inbox::counts_by_status(db).await?;
    let outbox_counts = outbox::counts_by_status(db).await?;
    let inbox_oldest = inbox::oldest_active_received_at(db).await?;
    let outbox_oldest = outbox::oldest_pending_created_at(db).await?;
    let age =
        |t: Option<DateTime<Utc>>| t.map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0);
    let inbox_json: serde_json::Map<String, Value> = InboxStatus::ALL
        .iter()
        .map(|s| {
            (
                s.as_str().to_string(),
                json!(inbox_counts.get(s).copied().unwrap_or(0)),
            )
        })
        .collect();
    let outbox_json: serde_json::Map<String, Value> = OutboxStatus::ALL
        .iter()
        .map(|s| {
            (
                s.as_str().to_string(),
                json!(outbox_counts.get(s).copied().unwrap_or(0)),
            )
        })
        .collect();
    Ok(json!({
        "inbox": inbox_json,
        "outbox": outbox_json,
        "oldest_pending_seconds": { "inbox": age(inbox_oldest), "outbox": age(outbox_oldest) },
    }))
}

fn limit(req: &ApiRequest) -> Result<i64, ApiResponse> {
    match req.query.get("limit") {
        None => Ok(50),
        Some(text) => text
            .parse::<i64>()
            .map(|n| n.clamp(1, MAX_PAGE))
            .map_err(|_| error(400, format!("limit {text:?} is not a number"))),
    }
}

fn row_id(id: &str) -> Result<Uuid, ApiResponse> {
    id.parse()
        .map_err(|_| error(400, format!("{id:?} is not a row id (a UUID)")))
}

/// Answers one route for `operator` (never fails: a refusal is an answer).
pub(super) async fn serve(
    api: &ManagementApi,
    operator: &Operator,
    method: &str,
    segments: &[&str],
    req: &ApiRequest,
) -> ApiResponse {
    let outcome = route(api, operator, method, segments, req).await;
    outcome.unwrap_or_else(|refusal| refusal)
}

async fn route(
    api: &ManagementApi,
    operator: &Operator,
    method: &str,
    segments: &[&str],
    req: &ApiRequest,
) -> Result<ApiResponse, ApiResponse> {
    let db = api.db.as_ref();
    let now = api.clock.now();
    match (method, segments) {
        ("GET", ["stats"]) => {
            let mut c = counts(db, now).await.map_err(|e| db_error(&e))?;
            let history: Vec<Value> = api
                .operator
                .history
                .as_ref()
                .map(|h| {
                    h.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .iter()
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            c["history"] = Value::from(history);
            Ok(answer(&c))
        }
        ("GET", ["inbox"]) => {
            let status: InboxStatus = req
                .query
                .get("status")
                .map(String::as_str)
                .unwrap_or_default()
                .parse()
                .map_err(|e| error(400, format!("{e}")))?;
            let filter = InboxFilter {
                status,
                partner: None,
            };
            let rows = crate::admin::list_inbox(db, &filter, InboxCursor::start(), limit(req)?)
                .await
                .map_err(|e| db_error(&e))?;
            Ok(answer(&json!({ "rows": rows.iter().map(|r| json!({
                "id": r.id,
                "partner": r.partner,
                "event_id": r.event_id,
                "event_type": r.event_type,
                "status": r.status.as_str(),
                "attempts": r.attempts,
                "received_at": r.received_at.to_rfc3339(),
                "last_error": r.last_error,
            })).collect::<Vec<_>>() })))
        }
        ("GET", ["outbox"]) => {
            let status: OutboxStatus = req
                .query
                .get("status")
                .map(String::as_str)
                .unwrap_or_default()
                .parse()
                .map_err(|e| error(400, format!("{e}")))?;
            let filter = OutboxFilter {
                status: Some(status),
                destination: None,
            };
            let rows = crate::admin::list_outbox(db, &filter, OutboxCursor::start(), limit(req)?)
                .await
                .map_err(|e| db_error(&e))?;
            Ok(answer(&json!({ "rows": rows.iter().map(|r| json!({
                "id": r.id,
                "destination": r.destination,
                "event_type": r.event_type,
                "aggregate_id": r.aggregate_id,
                "status": r.status.as_str(),
                "attempts": r.attempts,
                "last_status_code": r.last_status_code,
                "last_error": r.last_error,
                "created_at": r.created_at.to_rfc3339(),
            })).collect::<Vec<_>>() })))
        }
        ("GET", ["outbox", id, "attempts"]) => {
            let id = row_id(id)?;
            let attempts = outbox::attempts::of(db, id)
                .await
                .map_err(|e| db_error(&e))?;
            Ok(answer(
                &json!({ "id": id, "attempts": attempts.iter().map(|a| json!({
                "attempt": a.attempt,
                "attempted_at": a.attempted_at.to_rfc3339(),
                "destination": a.destination,
                "status_code": a.status_code,
                "latency_ms": a.latency_ms,
                "error": a.error,
                "response_excerpt": a.response_excerpt,
            })).collect::<Vec<_>>() }),
            ))
        }
        ("POST", ["inbox", id, "replay"]) => {
            let id = row_id(id)?;
            let Some(queue) = &api.operator.queue else {
                return Err(error(409, "this stack has no inbox queue to replay into"));
            };
            let outcome = replay(db, queue.as_ref(), api.clock.as_ref(), id)
                .await
                .map_err(|e| db_error(&e))?;
            let name = match &outcome {
                ReplayOutcome::Enqueued { .. } => "enqueued",
                ReplayOutcome::PendingForSweeper { .. } => "pending_for_sweeper",
                ReplayOutcome::NotReplayable { .. } => "not_replayable",
                ReplayOutcome::Missing { .. } => "missing",
            };
            tracing::info!(inbox_id = %id, outcome = name, operator = %operator.name, "replay from the operator page");
            Ok(answer(&json!({ "id": id, "outcome": name })))
        }
        ("POST", ["outbox", id, "retry"]) => {
            let id = row_id(id)?;
            let results = crate::admin::retry_dead_outbox(db, &[id], now)
                .await
                .map_err(|e| db_error(&e))?;
            let name = match results.first() {
                Some(OutboxRetry::Retried { .. }) => "retried",
                Some(OutboxRetry::NotRetryable { .. }) => "not_retryable",
                _ => "missing",
            };
            tracing::info!(outbox_id = %id, outcome = name, operator = %operator.name, "retry from the operator page");
            Ok(answer(&json!({ "id": id, "outcome": name })))
        }
        ("POST", ["dlq", "redrive"]) => match &api.operator.redrive {
            Some(redrive) => Ok(answer(&json!({ "moved": redrive() }))),
            None => Err(error(
                409,
                "the stack uses a real SQS queue: use `hookbox dlq redrive`",
            )),
        },
        ("GET", ["destinations"]) => {
            let healthy = outbox::destinations::healthy_endpoints(db)
                .await
                .map_err(|e| db_error(&e))?;
            let rows = outbox::destinations::health(db)
                .await
                .map_err(|e| db_error(&e))?;
            Ok(answer(&json!({
                "healthy_endpoints_not_listed": healthy,
                "rows": rows.iter().map(|h| json!({
                    "name": h.name,
                    "state": h.state(now),
                    "consecutive_failures": h.consecutive_failures,
                    "failing_since": h.failing_since.map(|t| t.to_rfc3339()),
                    "open_until": h.open_until.map(|t| t.to_rfc3339()),
                    "disabled_at": h.disabled_at.map(|t| t.to_rfc3339()),
                    "disabled_reason": h.disabled_reason,
                    "pending": h.pending,
                })).collect::<Vec<_>>(),
            })))
        }
        ("POST", ["destinations", name, "enable"]) => {
            let name = super::super::percent_decode(name)
                .ok_or_else(|| error(400, "the destination's name is not valid UTF-8"))?;
            let done = outbox::destinations::enable(db, &name)
                .await
                .map_err(|e| db_error(&e))?;
            let outcome = if done { "enabled" } else { "missing" };
            tracing::info!(destination = %name, outcome, operator = %operator.name, "enable from the operator page");
            Ok(answer(&json!({ "name": name, "outcome": outcome })))
        }
        ("GET", ["tenants"]) => {
            let limit = limit(req)?;
            let after = req.query.get("after").filter(|a| !a.is_empty());
            let rows = db
                .execute(
                    &TENANTS,
                    &params! {
                        "after" => after.map_or(Param::Null, |a| Param::from(a.as_str())),
                        "limit" => limit,
                    },
                )
                .await
                .map_err(|e| db_error(&e))?
                .rows;
            let more = rows.len() as i64 > limit;
            let mut data = Vec::with_capacity(rows.len());
            for row in rows.iter().take(usize::try_from(limit).unwrap_or(0)) {
                data.push(row.json("doc").map_err(|e| db_error(&e))?);
            }
            let iterator = data.last().and_then(|d| d["id"].as_str()).map(String::from);
            Ok(answer(
                &json!({ "data": data, "iterator": iterator, "done": !more }),
            ))
        }
        ("GET" | "POST", _) => Err(error(
            404,
            format!("the operator page has no route {method} {}", req.path),
        )),
        _ => Err(error(405, format!("{method} is not served here"))),
    }
}
