//! Messages, attempts and recover (`/api/v1/app/{app_id}/msg`,
//! `…/attempt/…`, `…/endpoint/{endpoint_id}/recover`), through the message
//! functions of migration 22 (`hookbox::tenants::messages`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::error::ApiError;
use super::wire::{self, Body};
use super::{ApiResponse, Ctx};
use crate::tenants::messages::{
    self, Attempt, AttemptFilter, AttemptStatus, Message, MessageFilter,
};
use crate::tenants::{ManageError, Page};

fn message_field(snake: &str) -> Option<&'static str> {
    Some(match snake {
        "event_type" => "eventType",
        "event_id" => "eventId",
        "payload" => "payload",
        "channels" => "channels",
        _ => return None,
    })
}

fn refused(e: ManageError) -> ApiError {
    ApiError::from_manage(e, message_field)
}

/// `MessageOut` (the payload `{}` without content, as Svix leaves it out).
fn message_out(m: &Message, with_content: bool) -> Value {
    json!({
        "id": m.id,
        "eventType": m.event_type,
        "eventId": m.event_id,
        "payload": if with_content { m.payload.clone() } else { json!({}) },
        "channels": m.channels,
        "timestamp": m.created_at,
    })
}

/// `MessageAttemptOut`.
fn attempt_out(a: &Attempt, with_content: bool) -> Value {
    let (status, text) = match a.status {
        AttemptStatus::Success => (a.status.svix_code(), "success"),
        AttemptStatus::Failed => (a.status.svix_code(), "fail"),
    };
    json!({
        "id": a.id,
        "msgId": a.message_id.clone().unwrap_or_default(),
        "endpointId": a.endpoint_id,
        "url": a.url.clone().unwrap_or_default(),
        "response": if with_content { a.response.clone().unwrap_or_default() } else { String::new() },
        "responseStatusCode": a.status_code.unwrap_or(0),
        "responseDurationMs": a.latency_ms.unwrap_or(0),
        "status": status,
        "statusText": text,
        "timestamp": a.timestamp,
        // hookbox's attempts are scheduled ones (a recover sends again as such)
        "triggerType": 0,
    })
}

fn only_query(query: &BTreeMap<String, String>, known: &[&str]) -> Result<(), ApiError> {
    match query.keys().find(|k| !known.contains(&k.as_str())) {
        Some(name) => Err(ApiError::query(
            name,
            format!("hookbox does not support the query parameter {name}"),
        )),
        None => Ok(()),
    }
}

fn query_time(
    query: &BTreeMap<String, String>,
    name: &str,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    query
        .get(name)
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ApiError::query(name, format!("{t:?} is not an RFC 3339 date-time")))
        })
        .transpose()
}

fn with_content(query: &BTreeMap<String, String>) -> Result<bool, ApiError> {
    match query.get("with_content").map(String::as_str) {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(ApiError::query(
            "with_content",
            format!("with_content must be true or false, not {other:?}"),
        )),
    }
}

fn page<T>(page: Page<T>, out: impl Fn(&T) -> Value) -> Value {
    wire::list_response(
        page.data.iter().map(out).collect(),
        page.iterator,
        page.done,
    )
}

/// `POST /api/v1/app/{app_id}/msg` (202; a repeated `eventId`: 409).
pub(crate) async fn create(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    only_query(&cx.req.query, &["with_content"])?;
    let content = with_content(&cx.req.query)?;
    let body = Body::parse(&cx.req.body, false)?;
    body.only(
        &["eventType", "payload", "eventId", "channels"],
        &["application", "payloadRetentionPeriod", "tags"],
    )?;
    let event_type = body.required_string("eventType")?;
    if !wire::is_name(&event_type) {
        return Err(ApiError::validation(
            "eventType",
            format!("{event_type:?} is not 1 to 256 letters, digits, '-', '_' or '.'"),
        ));
    }
    let payload = body
        .object("payload")?
        .ok_or_else(|| ApiError::validation("payload", "field required (a JSON object)"))?;
    let event_id = body.uid("eventId")?;
    let channels = body.string_list("channels")?;
    if let Some(bad) = channels
        .iter()
        .flatten()
        .find(|c| !wire::is_name(c) || c.len() > 128)
    {
        return Err(ApiError::validation(
            "channels",
            format!("{bad:?} is not 1 to 128 letters, digits, '-', '_' or '.'"),
        ));
    }
    if channels.as_ref().is_some_and(|c| c.len() > 5) {
        return Err(ApiError::validation("channels", "at most 5 channels"));
    }
    let spec = json!({
        "event_type": event_type,
        "payload": payload,
        "event_id": event_id,
        "channels": channels,
    });
    let created = messages::create_message(cx.db, app, &spec, Some(cx.actor))
        .await
        .map_err(refused)?;
    if created.duplicate {
        return Err(ApiError::Conflict {
            code: "conflict",
            detail: format!(
                "a message with eventId {:?} exists ({})",
                created.message.event_id.as_deref().unwrap_or_default(),
                created.message.id
            ),
        });
    }
    Ok(ApiResponse::json(
        202,
        &message_out(&created.message, content),
    ))
}

/// `GET /api/v1/app/{app_id}/msg` (`limit`, `iterator`, `channel`,
/// `before`, `after`, `event_types`, `with_content`).
pub(crate) async fn list(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let q = &cx.req.query;
    let list = wire::list_query(
        &q.iter()
            .filter(|(k, _)| {
                !["channel", "before", "after", "event_types", "with_content"].contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        &[],
    )?;
    if q.contains_key("order") {
        return Err(ApiError::query(
            "order",
            "hookbox does not support the query parameter order here",
        ));
    }
    let content = with_content(q)?;
    let filter = MessageFilter {
        event_types: q
            .get("event_types")
            .map(|t| t.split(',').map(String::from).collect()),
        channel: q.get("channel").cloned(),
        since: query_time(q, "after")?,
        until: query_time(q, "before")?,
    };
    let found = messages::list_messages(cx.db, app, &filter, list.iterator.as_deref(), list.limit)
        .await
        .map_err(refused)?;
    // a payload left out of a list (over 8 KiB) is read whole
    let mut data = Vec::with_capacity(found.data.len());
    for m in &found.data {
        if m.payload_omitted && content {
            let whole = messages::get_message(cx.db, app, &m.id)
                .await
                .map_err(refused)?;
            data.push(message_out(&whole, true));
        } else {
            data.push(message_out(m, content));
        }
    }
    Ok(ApiResponse::json(
        200,
        &wire::list_response(data, found.iterator, found.done),
    ))
}

/// `GET /api/v1/app/{app_id}/msg/{msg_id}` (its id or `eventId`).
pub(crate) async fn get(cx: &Ctx<'_>, app: &str, msg: &str) -> Result<ApiResponse, ApiError> {
    only_query(&cx.req.query, &["with_content"])?;
    let content = with_content(&cx.req.query)?;
    let found = messages::get_message(cx.db, app, msg)
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(200, &message_out(&found, content)))
}

fn attempt_filter(q: &BTreeMap<String, String>) -> Result<AttemptFilter, ApiError> {
    let status = match q.get("status").map(String::as_str) {
        None => None,
        Some("0") => Some(AttemptStatus::Success),
        Some("2") => Some(AttemptStatus::Failed),
        Some(other) => {
            return Err(ApiError::query(
                "status",
                format!(
                    "status {other:?}: hookbox lists attempts made, 0 (success) or 2 (fail); \
                     pending and sending are deliveries' states"
                ),
            ));
        }
    };
    Ok(AttemptFilter {
        status,
        since: query_time(q, "after")?,
        until: query_time(q, "before")?,
    })
}

fn attempt_list_query(
    q: &BTreeMap<String, String>,
    extra: &[&str],
) -> Result<wire::ListQuery, ApiError> {
    // `expanded_statuses` (Svix's SDKs send it, true): hookbox's attempts
    // are 0 (success) or 2 (fail) either way
    wire::query_bool(q, "expanded_statuses")?;
    let mut known = vec![
        "status",
        "before",
        "after",
        "with_content",
        "expanded_statuses",
    ];
    known.extend(extra);
    for name in q.keys() {
        if name == "order" {
            return Err(ApiError::query(
                name,
                "hookbox does not support the query parameter order here",
            ));
        }
    }
    wire::list_query(
        &q.iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        &[],
    )
}

/// `GET /api/v1/app/{app_id}/attempt/msg/{msg_id}` (`endpoint_id`,
/// `status`, `before`, `after`).
pub(crate) async fn by_message(
    cx: &Ctx<'_>,
    app: &str,
    msg: &str,
) -> Result<ApiResponse, ApiError> {
    let q = &cx.req.query;
    let list = attempt_list_query(q, &["endpoint_id"])?;
    let content = with_content(q)?;
    let found = messages::list_attempts_by_message(
        cx.db,
        app,
        msg,
        q.get("endpoint_id").map(String::as_str),
        &attempt_filter(q)?,
        list.iterator.as_deref(),
        list.limit,
    )
    .await
    .map_err(refused)?;
    Ok(ApiResponse::json(
        200,
        &page(found, |a| attempt_out(a, content)),
    ))
}

/// `GET /api/v1/app/{app_id}/attempt/endpoint/{endpoint_id}`.
pub(crate) async fn by_endpoint(
    cx: &Ctx<'_>,
    app: &str,
    ep: &str,
) -> Result<ApiResponse, ApiError> {
    let q = &cx.req.query;
    let list = attempt_list_query(q, &[])?;
    let content = with_content(q)?;
    let found = messages::list_attempts_by_endpoint(
        cx.db,
        app,
        ep,
        &attempt_filter(q)?,
        list.iterator.as_deref(),
        list.limit,
    )
    .await
    .map_err(refused)?;
    Ok(ApiResponse::json(
        200,
        &page(found, |a| attempt_out(a, content)),
    ))
}

/// `GET /api/v1/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}`.
pub(crate) async fn attempt(
    cx: &Ctx<'_>,
    app: &str,
    msg: &str,
    attempt: &str,
) -> Result<ApiResponse, ApiError> {
    let found = messages::get_attempt(cx.db, app, attempt)
        .await
        .map_err(refused)?;
    if found.message_id.as_deref() != Some(msg) {
        // the path may name the message by its eventId
        let message = messages::get_message(cx.db, app, msg)
            .await
            .map_err(refused)?;
        if found.message_id.as_deref() != Some(message.id.as_str()) {
            return Err(ApiError::NotFound(format!(
                "attempt {attempt:?} is not one of message {msg:?}"
            )));
        }
    }
    Ok(ApiResponse::json(200, &attempt_out(&found, true)))
}

/// `POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/recover` (202): the
/// endpoint's failed deliveries since `since` (until `until`) are due
/// again now; the relay sends them. The task is `running`, the only status
/// Svix's document allows here (there is no background task to poll:
/// hookbox serves none; the work is done when it answers).
pub(crate) async fn recover(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    only_query(&cx.req.query, &[])?;
    let body = Body::parse(&cx.req.body, false)?;
    body.only(&["since", "until"], &[])?;
    let time = |field: &str| -> Result<Option<DateTime<Utc>>, ApiError> {
        body.string(field)?
            .map(|t| {
                DateTime::parse_from_rfc3339(&t)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| {
                        ApiError::validation(field, format!("{t:?} is not an RFC 3339 date-time"))
                    })
            })
            .transpose()
    };
    let since = time("since")?.ok_or_else(|| ApiError::validation("since", "field required"))?;
    let until = time("until")?;
    let done = messages::recover_endpoint(cx.db, app, ep, since, until, Some(cx.actor))
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(
        202,
        &json!({
            "id": format!("rcvr_{}", uuid::Uuid::now_v7().simple()),
            "status": "running",
            "task": "endpoint.recover",
            "updatedAt": cx.now,
            // hookbox's own count (recovered deliveries are due now)
            "recovered": done.recovered,
        }),
    ))
}
