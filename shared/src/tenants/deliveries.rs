//! One endpoint's deliveries, as its owner sees them (migration 30): resend
//! one, send an example, its attempts newest first, its successes and
//! failures by hour, and a record that its secret was shown. The portal
//! and the HTTP API call these; each is one statement.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::manage::{Actor, ManageError, call};
use super::messages::{Attempt, AttemptStatus, Message};
use super::{EndpointHealth, Page};
use crate::params;
use crate::store::{Executor, Statement, Value};

/// What a resend did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResendOutcome {
    /// Dead or delivered: pending again, due now, attempts from 1.
    Resent,
    /// Pending: due now.
    DueNow,
    /// A relay holds it now: left as it is (its attempt is under way).
    InFlight,
}

/// What [`resend`] answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resent {
    /// The message.
    pub message_id: String,
    /// The endpoint.
    pub endpoint_id: String,
    /// The delivery (its id is the `webhook-id`, unchanged).
    pub delivery_id: Uuid,
    /// Its status before (pending, delivered, dead).
    pub was: String,
    /// What was done.
    pub outcome: ResendOutcome,
}

/// What [`send_example`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentExample {
    /// The message recorded.
    #[serde(flatten)]
    pub message: Message,
    /// The endpoint.
    pub endpoint_id: String,
    /// Its one delivery.
    pub delivery_id: Uuid,
}

/// An attempt, with its message's event type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypedAttempt {
    /// The attempt.
    #[serde(flatten)]
    pub attempt: Attempt,
    /// Its message's event type.
    pub event_type: String,
}

/// One hour of an endpoint's attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourCount {
    /// The hour's start.
    pub start: DateTime<Utc>,
    /// Attempts that delivered.
    pub success: i64,
    /// Attempts that did not.
    pub failed: i64,
}

/// An endpoint's attempts by hour, and its health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointStats {
    /// The endpoint.
    pub id: String,
    /// Hours counted (ending with the current one).
    pub hours: i64,
    /// Every hour, oldest first.
    pub buckets: Vec<HourCount>,
    /// The walk saw every message of the span (at most 20,000).
    pub complete: bool,
    /// Its health.
    pub health: EndpointHealth,
    /// Disabled (by its owner, or by continuous failure).
    pub disabled: bool,
}

/// `hookbox_message_resend`.
pub const RESEND: Statement = Statement::new(
    "messages.resend",
    "SELECT hookbox_message_resend(CAST(:tenant AS text), CAST(:message AS text),
                                   CAST(:endpoint AS text), CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_endpoint_send_example`.
pub const SEND_EXAMPLE: Statement = Statement::new(
    "endpoints.send_example",
    "SELECT hookbox_endpoint_send_example(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:event_type AS text), CAST(:payload AS jsonb), CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_portal_attempts`.
pub const ATTEMPTS_NEWEST_FIRST: Statement = Statement::new(
    "endpoints.attempts_newest_first",
    "SELECT hookbox_portal_attempts(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:before AS text), CAST(:limit AS integer), CAST(:status AS text)) AS doc",
);
/// `hookbox_endpoint_stats`.
pub const STATS: Statement = Statement::new(
    "endpoints.stats",
    "SELECT hookbox_endpoint_stats(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:hours AS integer), CAST(:now AS timestamptz)) AS doc",
);
/// `hookbox_endpoint_secret_revealed`.
pub const SECRET_REVEALED: Statement = Statement::new(
    "endpoints.secret_revealed",
    "SELECT to_jsonb(hookbox_endpoint_secret_revealed(CAST(:tenant AS text),
                CAST(:endpoint AS text), CAST(:actor AS jsonb))) AS doc",
);

/// Sends `tenant`'s `message` (id or event id) to `endpoint` again, due
/// now, with the same `webhook-id` (see [`ResendOutcome`]). Recorded in the
/// audit trail.
pub async fn resend(
    db: &dyn Executor,
    tenant: &str,
    message: &str,
    endpoint: &str,
    actor: Option<&Actor>,
) -> Result<Resent, ManageError> {
    call(
        db,
        &RESEND,
        params! {
            "tenant" => tenant,
            "message" => message,
            "endpoint" => endpoint,
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// Sends one message of `event_type` with `payload` to `endpoint` alone,
/// whatever it subscribes to.
pub async fn send_example(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    event_type: &str,
    payload: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<SentExample, ManageError> {
    call(
        db,
        &SEND_EXAMPLE,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "event_type" => event_type,
            "payload" => payload.clone(),
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// A page of `endpoint`'s attempts, newest first, before `before` (the
/// previous page's iterator).
pub async fn attempts_newest_first(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    before: Option<&str>,
    limit: u32,
    status: Option<AttemptStatus>,
) -> Result<Page<TypedAttempt>, ManageError> {
    call(
        db,
        &ATTEMPTS_NEWEST_FIRST,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "before" => before.map_or(Value::Null, Value::from),
            "limit" => i64::from(limit),
            "status" => status.map_or(Value::Null, |s| Value::from(s.as_str())),
        },
    )
    .await
}

/// `endpoint`'s attempts by hour over the `hours` (1 to 168) up to `now`.
pub async fn stats(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    hours: u32,
    now: DateTime<Utc>,
) -> Result<EndpointStats, ManageError> {
    call(
        db,
        &STATS,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "hours" => i64::from(hours),
            "now" => now,
        },
    )
    .await
}

/// Records in the audit trail that `endpoint`'s secret was shown to
/// `actor`; answers the endpoint's id.
pub async fn secret_revealed(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    actor: Option<&Actor>,
) -> Result<String, ManageError> {
    call(
        db,
        &SECRET_REVEALED,
        params! { "tenant" => tenant, "endpoint" => endpoint, "actor" => Actor::json(actor) },
    )
    .await
}
