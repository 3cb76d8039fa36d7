//! Messages, their attempts, and recovering an endpoint, from Rust: each
//! call is one statement running one of the SQL functions of migration 22
//! (docs/tenants.md, "Messages and attempts" and "Recover"), as [`super::manage`]
//! does for tenants and endpoints, so the SQL face, the CLI and the HTTP API
//! share one model and one set of refusals ([`ManageError`]).
//!
//! A message is what a SaaS publishes to one tenant (Svix's message): its
//! id (`msg_…`), event type, payload, channels, and optionally the caller's
//! own id (`event_id`, Svix's eventId: a repeated one answers the message
//! recorded the first time and publishes nothing). Each of its deliveries
//! is an outbox row naming it; their attempts come from the attempt log.
//!
//! Every page a function answers is one document under 48 KiB (one Data
//! API row): it may hold fewer items than the limit asked, and is `done`
//! only when nothing follows.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Page;
use super::manage::{Actor, ManageError, call};
use crate::params;
use crate::store::{Executor, Statement, Value};

/// A message, as the functions answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// hookbox's id (`msg_…`), in creation order.
    pub id: String,
    /// Its tenant's id (`app_…`).
    pub tenant_id: String,
    /// Its event type.
    pub event_type: String,
    /// The caller's own id for it (Svix's eventId), unique per tenant.
    pub event_id: Option<String>,
    /// The payload (JSON `null` when [`Message::payload_omitted`]).
    pub payload: serde_json::Value,
    /// Bytes of the payload's JSON text (as the database writes it out).
    pub payload_size: i64,
    /// The payload was too large for the document (lists leave out those
    /// over 8 KiB; [`get_message`] always reads it).
    #[serde(default)]
    pub payload_omitted: bool,
    /// Its channels (`None`: none).
    pub channels: Option<Vec<String>>,
    /// Deliveries written when it was published (one per matching
    /// endpoint; 0 when none matched).
    pub deliveries: i64,
    /// When it was published.
    pub created_at: DateTime<Utc>,
}

/// What [`create_message`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedMessage {
    /// The message (for a duplicate: the one recorded the first time).
    #[serde(flatten)]
    pub message: Message,
    /// The `event_id` was already recorded for the tenant: nothing was
    /// published (Svix answers such a repeat with the first message).
    pub duplicate: bool,
    /// Deliveries this call wrote (0 for a duplicate).
    pub written: i64,
}

/// Which messages [`list_messages`] answers (all of them by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Of these event types (exact names).
    pub event_types: Option<Vec<String>>,
    /// On this channel.
    pub channel: Option<String>,
    /// Created at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Created before this.
    pub until: Option<DateTime<Utc>>,
}

/// Whether an attempt delivered its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptStatus {
    /// A 2xx answer: it delivered.
    Success,
    /// Any other answer, or none.
    Failed,
}

impl AttemptStatus {
    /// Its name in the functions' documents and filters.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failed => "failed",
        }
    }

    /// Svix's `MessageStatus` number for an attempt made: 0 success, 2 fail
    /// (1 pending and 3 sending are deliveries' states, not attempts').
    pub fn svix_code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failed => 2,
        }
    }
}

/// Where a delivery stands (its outbox row's status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Waiting for its next attempt (or held).
    Pending,
    /// Delivered.
    Delivered,
    /// Given up (attempts exhausted, or 410 Gone): `recover` sends it again.
    Dead,
}

/// One attempt to deliver a message to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// A stable id (`atmpt_`, its time, its delivery's id): ids sort in
    /// time order.
    pub id: String,
    /// The delivery (the outbox row; its id is the `webhook-id`).
    pub delivery_id: Uuid,
    /// The message.
    pub message_id: Option<String>,
    /// The endpoint.
    pub endpoint_id: String,
    /// The endpoint's URL now (`None`: the endpoint was deleted).
    pub url: Option<String>,
    /// The delivery's attempt number (1 for the first; a recover or replay
    /// starts again at 1).
    pub attempt: i64,
    /// When it was made.
    pub timestamp: DateTime<Utc>,
    /// The answer's status code (`None`: no answer).
    pub status_code: Option<i64>,
    /// How long it took.
    pub latency_ms: Option<i64>,
    /// Why it failed (at most 1,024 characters).
    pub error: Option<String>,
    /// The start of the answer's body (at most 1 KiB).
    pub response: Option<String>,
    /// Whether it delivered.
    pub status: AttemptStatus,
    /// Where its delivery stands now.
    pub delivery_status: DeliveryStatus,
    /// The delivery's next attempt, while pending.
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// Which attempts the attempt lists answer (all of them by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptFilter {
    /// Only those that succeeded, or failed.
    pub status: Option<AttemptStatus>,
    /// Made at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Made before this.
    pub until: Option<DateTime<Utc>>,
}

/// What [`drop_held`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The endpoint.
    pub id: String,
    /// Deliveries created before this (`None`: all).
    pub until: Option<DateTime<Utc>>,
    /// Deliveries marked dead (no longer sent on enable).
    pub dropped: i64,
}

/// What [`recover_endpoint`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovered {
    /// The endpoint.
    pub id: String,
    /// Deliveries created at or after this.
    pub since: DateTime<Utc>,
    /// Deliveries created before this (`None`: up to now).
    pub until: Option<DateTime<Utc>>,
    /// Deliveries sent again (dead + failed).
    pub recovered: i64,
    /// Of them, dead ones.
    pub dead: i64,
    /// Of them, pending ones that had failed.
    pub failed: i64,
}

/// Characters per piece when a large payload is read ([`get_message`]):
/// four bytes at most each, so a piece stays under the Data API's 64 KB.
const PAYLOAD_PIECE_CHARS: i64 = 8_192;

/// `:types` (a JSON array, or NULL) as a text[] (or NULL).
macro_rules! text_array {
    ($p:literal) => {
        concat!(
            "CASE WHEN CAST(:",
            $p,
            " AS jsonb) IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(CAST(:",
            $p,
            " AS jsonb))) END"
        )
    };
}

/// `hookbox_message_create`.
pub const MESSAGE_CREATE: Statement = Statement::new(
    "messages.create",
    "SELECT hookbox_message_create(CAST(:tenant AS text), CAST(:spec AS jsonb),
                                   CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_message_get`.
pub const MESSAGE_GET: Statement = Statement::new(
    "messages.get",
    "SELECT hookbox_message_get(CAST(:tenant AS text), CAST(:message AS text)) AS doc",
);
/// `hookbox_message_payload`.
pub const MESSAGE_PAYLOAD: Statement = Statement::new(
    "messages.payload",
    "SELECT hookbox_message_payload(CAST(:tenant AS text), CAST(:message AS text),
                                    CAST(:from AS integer), CAST(:len AS integer)) AS doc",
);
/// `hookbox_message_list`.
pub const MESSAGE_LIST: Statement = Statement::new(
    "messages.list",
    concat!(
        "SELECT hookbox_message_list(CAST(:tenant AS text), CAST(:after AS text),
                                     CAST(:limit AS integer), ",
        text_array!("types"),
        ", CAST(:since AS timestamptz), CAST(:until AS timestamptz),
           CAST(:channel AS text)) AS doc"
    ),
);
/// `hookbox_attempt_list_by_message`.
pub const ATTEMPTS_BY_MESSAGE: Statement = Statement::new(
    "messages.attempts_by_message",
    "SELECT hookbox_attempt_list_by_message(CAST(:tenant AS text), CAST(:message AS text),
                CAST(:after AS text), CAST(:limit AS integer), CAST(:status AS text),
                CAST(:endpoint AS text), CAST(:since AS timestamptz),
                CAST(:until AS timestamptz)) AS doc",
);
/// `hookbox_attempt_list_by_endpoint`.
pub const ATTEMPTS_BY_ENDPOINT: Statement = Statement::new(
    "messages.attempts_by_endpoint",
    "SELECT hookbox_attempt_list_by_endpoint(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:after AS text), CAST(:limit AS integer), CAST(:status AS text),
                CAST(:since AS timestamptz), CAST(:until AS timestamptz)) AS doc",
);
/// `hookbox_attempt_get`.
pub const ATTEMPT_GET: Statement = Statement::new(
    "messages.attempt_get",
    "SELECT hookbox_attempt_get(CAST(:tenant AS text), CAST(:attempt AS text)) AS doc",
);
/// `hookbox_endpoint_recover`.
pub const ENDPOINT_RECOVER: Statement = Statement::new(
    "endpoints.recover",
    "SELECT hookbox_endpoint_recover(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:since AS timestamptz), CAST(:until AS timestamptz),
                CAST(:actor AS jsonb)) AS doc",
);

/// Drops what a held endpoint waits with (migration 27).
pub const ENDPOINT_DROP_HELD: Statement = Statement::new(
    "endpoints.drop_held",
    "SELECT hookbox_endpoint_drop_held(CAST(:tenant AS text), CAST(:endpoint AS text),
                CAST(:until AS timestamptz), CAST(:actor AS jsonb)) AS doc",
);

fn text(v: Option<&str>) -> Value {
    v.map_or(Value::Null, Value::from)
}

/// Publishes a message to `tenant` (its id or uid) from `spec`:
/// `event_type` and `payload` (any JSON) required; `event_id` (the caller's
/// own id: a repeat answers the first message, `duplicate`, and publishes
/// nothing) and `channels` optional. One delivery per matching endpoint,
/// due now; none matching still records the message. Inside the caller's
/// transaction when `db` is one. The actor is checked, not recorded (a
/// message is traffic, not a change to the audit trail).
pub async fn create_message(
    db: &dyn Executor,
    tenant: &str,
    spec: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<CreatedMessage, ManageError> {
    call(
        db,
        &MESSAGE_CREATE,
        params! { "tenant" => tenant, "spec" => spec.clone(), "actor" => Actor::json(actor) },
    )
    .await
}

#[derive(Deserialize)]
struct Piece {
    size: i64,
    chunk: Option<String>,
}

/// The message `message` (its id, or its `event_id`) of `tenant`, with its
/// whole payload (one over 32 KiB is read in pieces, each statement's row
/// under the Data API's 64 KB).
pub async fn get_message(
    db: &dyn Executor,
    tenant: &str,
    message: &str,
) -> Result<Message, ManageError> {
    let mut found: Message = call(
        db,
        &MESSAGE_GET,
        params! { "tenant" => tenant, "message" => message },
    )
    .await?;
    if found.payload_omitted {
        found.payload = read_payload(db, tenant, &found).await?;
        found.payload_omitted = false;
    }
    Ok(found)
}

async fn read_payload(
    db: &dyn Executor,
    tenant: &str,
    message: &Message,
) -> Result<serde_json::Value, ManageError> {
    let changed = |detail: String| ManageError::Decode {
        statement: MESSAGE_PAYLOAD.name,
        detail,
    };
    let size = usize::try_from(message.payload_size)
        .map_err(|_| changed(format!("payload size {}", message.payload_size)))?;
    let mut text = String::with_capacity(size);
    let mut chars: i64 = 0;
    while text.len() < size {
        let piece: Piece = call(
            db,
            &MESSAGE_PAYLOAD,
            params! {
                "tenant" => tenant,
                "message" => message.id.as_str(),
                "from" => chars + 1,
                "len" => PAYLOAD_PIECE_CHARS,
            },
        )
        .await?;
        let chunk = piece.chunk.unwrap_or_default();
        if piece.size != message.payload_size || chunk.is_empty() {
            return Err(changed(format!(
                "the payload of {} is {} bytes, not {} as its document said",
                message.id, piece.size, message.payload_size
            )));
        }
        chars += chunk.chars().count() as i64;
        text.push_str(&chunk);
    }
    serde_json::from_str(&text).map_err(|e| changed(format!("payload of {}: {e}", message.id)))
}

/// A page of `tenant`'s messages in id order (creation order) after
/// `after` (the previous page's `iterator`), at most `limit` (1 to 250),
/// matching `filter`. Payloads over 8 KiB are left out
/// ([`Message::payload_omitted`]; [`get_message`] reads them).
pub async fn list_messages(
    db: &dyn Executor,
    tenant: &str,
    filter: &MessageFilter,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<Message>, ManageError> {
    call(
        db,
        &MESSAGE_LIST,
        params! {
            "tenant" => tenant,
            "after" => text(after),
            "limit" => i64::from(limit),
            "types" => filter.event_types.as_ref().map_or(Value::Null, |t| Value::Json(serde_json::json!(t))),
            "since" => filter.since,
            "until" => filter.until,
            "channel" => text(filter.channel.as_deref()),
        },
    )
    .await
}

/// A page of the attempts to deliver `message` (its id or `event_id`) of
/// `tenant`, to every endpoint or to `endpoint` (id or uid), in time order
/// after `after` (an attempt id: the previous page's `iterator`).
pub async fn list_attempts_by_message(
    db: &dyn Executor,
    tenant: &str,
    message: &str,
    endpoint: Option<&str>,
    filter: &AttemptFilter,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<Attempt>, ManageError> {
    call(
        db,
        &ATTEMPTS_BY_MESSAGE,
        params! {
            "tenant" => tenant,
            "message" => message,
            "after" => text(after),
            "limit" => i64::from(limit),
            "status" => text(filter.status.map(AttemptStatus::as_str)),
            "endpoint" => text(endpoint),
            "since" => filter.since,
            "until" => filter.until,
        },
    )
    .await
}

/// A page of the attempts to deliver to `endpoint` (id or uid) of
/// `tenant`: by message (creation order), each message's in time order,
/// after `after` (the previous page's `iterator`). One call looks at most
/// at 2,000 messages, so a page may be short, even empty, and not `done`:
/// go on from its `iterator`.
pub async fn list_attempts_by_endpoint(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    filter: &AttemptFilter,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<Attempt>, ManageError> {
    call(
        db,
        &ATTEMPTS_BY_ENDPOINT,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "after" => text(after),
            "limit" => i64::from(limit),
            "status" => text(filter.status.map(AttemptStatus::as_str)),
            "since" => filter.since,
            "until" => filter.until,
        },
    )
    .await
}

/// One attempt of `tenant`'s, by its id (`atmpt_…`, which names its
/// delivery): while its delivery is in the outbox.
pub async fn get_attempt(
    db: &dyn Executor,
    tenant: &str,
    attempt: &str,
) -> Result<Attempt, ManageError> {
    call(
        db,
        &ATTEMPT_GET,
        params! { "tenant" => tenant, "attempt" => attempt },
    )
    .await
}

/// Sends again `endpoint`'s (id or uid) failed deliveries created at or
/// after `since` and before `until` (`None`: up to now): the dead ones and
/// the pending ones that failed at least once, due now, attempts back to
/// 0, with their `webhook-id`. Delivered ones and ones never attempted are
/// left alone. Recorded in the audit trail (`endpoint.recovered`).
pub async fn recover_endpoint(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    since: DateTime<Utc>,
    until: Option<DateTime<Utc>>,
    actor: Option<&Actor>,
) -> Result<Recovered, ManageError> {
    call(
        db,
        &ENDPOINT_RECOVER,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "since" => since,
            "until" => until,
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// Drops the deliveries a held endpoint (disabled, its tenant disabled, or
/// disabled by the breaker) waits with, created before `until` (`None`:
/// all) and not leased to a relay now: each is dead, with the reason and
/// who chose it, no longer sent on enable (`recover_endpoint` can still
/// send it until retention deletes it). Refused
/// ([`ManageError::Invalid`]) for an endpoint that is not held. Recorded
/// in the audit trail (`endpoint.held_dropped`) with the count.
pub async fn drop_held(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    until: Option<DateTime<Utc>>,
    actor: Option<&Actor>,
) -> Result<Dropped, ManageError> {
    call(
        db,
        &ENDPOINT_DROP_HELD,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "until" => until,
            "actor" => Actor::json(actor),
        },
    )
    .await
}
