//! The portal's JSON API under `/portal/api/` (docs/portal.md, "The
//! page's API"): the session's tenant's endpoints, their deliveries and
//! secrets, and the event type catalog. Every handler names the tenant
//! from the session alone.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::json as answer;

use super::super::error::ApiError;
use super::super::wire::Body;
use super::super::{ApiRequest, ApiResponse, ManagementApi};
use super::{PortalError, Session};
use crate::params;
use crate::store::{Executor, Statement};
use crate::tenants::deliveries;
use crate::tenants::messages::{self, AttemptStatus};
use crate::tenants::secrets::{MAX_GRACE, generate_secret};
use crate::tenants::{Endpoint, ManageError, manage};

/// A rotation's grace period unless the page asks for another.
const DEFAULT_GRACE: Duration = Duration::from_secs(24 * 3600);

/// A page of the catalog: event types not archived, by name, each with
/// its latest schema and its example (`hookbox_event_type_list`: at most
/// 250 and under 48 KiB a page).
const EVENT_TYPES: Statement = Statement::new(
    "portal.event_types",
    "SELECT hookbox_event_type_list(CAST(:after AS text), 250, false) AS doc",
);

/// The example of one event type of the catalog (NULL: none, or no such
/// type).
const EXAMPLE: Statement = Statement::new(
    "portal.event_type_example",
    "SELECT hookbox_event_type_example(CAST(:name AS text)) AS example",
);

/// The pages of the catalog the portal reads, at most (so 5,000 types, or
/// about 1 MiB of schemas).
const CATALOG_PAGES: usize = 20;

/// The portal's fields by the name the functions' refusals give them (the
/// same names on the wire).
fn field(name: &str) -> Option<&'static str> {
    [
        "url",
        "description",
        "filter_types",
        "since",
        "event_type",
        "hours",
        "grace_secs",
    ]
    .into_iter()
    .find(|f| *f == name)
}

/// A management function's refusal, its field named as the management API
/// names it.
fn refused(e: ManageError) -> PortalError {
    PortalError::Api(ApiError::from_manage(e, field))
}

/// An endpoint as its owner sees it (not the SaaS's metadata, nor its
/// headers' values).
fn endpoint_out(e: &Endpoint) -> Value {
    json!({
        "id": e.id,
        "uid": e.uid,
        "url": e.url,
        "description": e.description,
        "disabled": e.disabled,
        "disabled_reason": e.disabled_reason,
        "held": e.held,
        "filter_types": e.filter_types,
        "rate_limit": e.rate_limit,
        "ordered": e.ordered,
        "header_names": e.header_names,
        "health": e.health,
        "created_at": e.created_at,
        "updated_at": e.updated_at,
    })
}

/// The fields a customer may set on an endpoint.
fn endpoint_spec(body: &Body, creating: bool) -> Result<Value, PortalError> {
    body.only(&["url", "description", "filter_types"], &[])?;
    let mut spec = serde_json::Map::new();
    if creating {
        spec.insert("url".into(), body.required_string("url")?.into());
    } else if let Some(url) = body.string_not_null("url")? {
        spec.insert("url".into(), url.into());
    }
    if let Some(description) = body.string_not_null("description")? {
        spec.insert("description".into(), description.into());
    }
    if body.has("filter_types") {
        // none ticked: every type
        let types = match body.get("filter_types") {
            Some(Value::Array(ticked)) if ticked.is_empty() => None,
            _ => body.string_list("filter_types")?,
        };
        spec.insert(
            "filter_types".into(),
            types.map_or(Value::Null, Value::from),
        );
    }
    Ok(Value::Object(spec))
}

fn query<'a>(
    req: &'a ApiRequest,
    known: &[&str],
) -> Result<&'a std::collections::BTreeMap<String, String>, PortalError> {
    match req.query.keys().find(|k| !known.contains(&k.as_str())) {
        Some(name) => Err(ApiError::query(name, format!("unknown query parameter {name}")).into()),
        None => Ok(&req.query),
    }
}

fn limit(q: &std::collections::BTreeMap<String, String>) -> Result<u32, PortalError> {
    match q.get("limit") {
        None => Ok(50),
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=250).contains(n))
            .ok_or_else(|| {
                ApiError::query("limit", format!("limit must be 1 to 250, not {text:?}")).into()
            }),
    }
}

/// The event type catalog: each type's latest schema and example.
async fn event_types(db: &dyn Executor) -> Result<Value, PortalError> {
    let mut data = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..CATALOG_PAGES {
        let params = params! { "after" => after.clone().map_or(crate::store::Value::Null, crate::store::Value::from) };
        let page = crate::store::fetch_one(db, &EVENT_TYPES, &params)
            .await?
            .json("doc")?;
        for t in page["data"].as_array().into_iter().flatten() {
            data.push(json!({
                "name": t["name"],
                "description": t["description"],
                "deprecated": t["deprecated"],
                "schema": t["schema"],
                "example": t["example"],
            }));
        }
        after = page["iterator"].as_str().map(String::from);
        if page["done"] != json!(false) || after.is_none() {
            break;
        }
    }
    Ok(json!({ "data": data }))
}

/// What an example of `event_type` carries: the catalog's example, or a
/// small document saying what it is (one statement, never raising: it runs
/// inside the write's transaction).
async fn example_payload(db: &dyn Executor, event_type: &str) -> Result<Value, PortalError> {
    let listed = crate::store::fetch_one(db, &EXAMPLE, &params! { "name" => event_type })
        .await?
        .opt_json("example")?;
    Ok(listed.unwrap_or_else(|| json!({"type": event_type, "example": true})))
}

fn since_param(body: &Body) -> Result<DateTime<Utc>, PortalError> {
    let text = body.required_string("since")?;
    DateTime::parse_from_rfc3339(&text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            ApiError::validation(
                "since",
                format!("since must be an RFC 3339 time, not {text:?}: {e}"),
            )
            .into()
        })
}

/// Answers one route of the portal's API for `session`.
pub(super) async fn serve(
    api: &ManagementApi,
    session: &Session,
    method: &str,
    segments: &[&str],
    req: &ApiRequest,
) -> Result<ApiResponse, PortalError> {
    let tenant = session.tenant();
    let db = api.db.as_ref();
    let now = api.clock.now();
    match (method, segments) {
        ("GET", ["event-types"]) => Ok(answer(200, &event_types(db).await?)),
        ("GET", ["endpoints"]) => {
            let q = query(req, &["after", "limit"])?;
            let page =
                manage::list_endpoints(db, tenant, q.get("after").map(String::as_str), limit(q)?)
                    .await
                    .map_err(refused)?;
            Ok(answer(
                200,
                &json!({
                    "data": page.data.iter().map(endpoint_out).collect::<Vec<_>>(),
                    "iterator": page.iterator,
                    "done": page.done,
                }),
            ))
        }
        ("GET", ["endpoints", ep]) => {
            let found = manage::get_endpoint(db, tenant, ep)
                .await
                .map_err(refused)?;
            Ok(answer(200, &endpoint_out(&found)))
        }
        ("GET", ["endpoints", ep, "attempts"]) => {
            let q = query(req, &["before", "limit", "status"])?;
            let status = match q.get("status").map(String::as_str) {
                None => None,
                Some("success") => Some(AttemptStatus::Success),
                Some("failed") => Some(AttemptStatus::Failed),
                Some(other) => {
                    return Err(ApiError::query(
                        "status",
                        format!("status must be success or failed, not {other:?}"),
                    )
                    .into());
                }
            };
            let page = deliveries::attempts_newest_first(
                db,
                tenant,
                ep,
                q.get("before").map(String::as_str),
                limit(q)?,
                status,
            )
            .await
            .map_err(refused)?;
            Ok(answer(200, &json!(page)))
        }
        ("GET", ["endpoints", ep, "stats"]) => {
            let q = query(req, &["hours"])?;
            let hours = match q.get("hours") {
                None => 24,
                Some(text) => text
                    .parse::<u32>()
                    .ok()
                    .filter(|h| (1..=168).contains(h))
                    .ok_or_else(|| {
                        PortalError::from(ApiError::query(
                            "hours",
                            format!("hours must be 1 to 168, not {text:?}"),
                        ))
                    })?,
            };
            let stats = deliveries::stats(db, tenant, ep, hours, now)
                .await
                .map_err(refused)?;
            Ok(answer(200, &json!(stats)))
        }
        ("POST" | "PATCH" | "DELETE", _) => write(api, session, method, segments, req).await,
        ("GET", _) => {
            Err(ApiError::NotFound(format!("the portal has no route {}", req.path)).into())
        }
        _ => Err(PortalError::Method),
    }
}

/// The writes: in one transaction each.
async fn write(
    api: &ManagementApi,
    session: &Session,
    method: &str,
    segments: &[&str],
    req: &ApiRequest,
) -> Result<ApiResponse, PortalError> {
    let seals = matches!(
        (method, segments),
        ("POST", ["endpoints"]) | ("POST", ["endpoints", _, "secret", "rotate"])
    );
    if seals {
        api.seal_ready().await?;
    }
    let tx = api.db.begin().await?;
    let outcome = change(api, tx.as_ref(), session, method, segments, req).await;
    match outcome {
        Ok(answer) => {
            tx.commit().await?;
            Ok(answer)
        }
        Err(e) => {
            // the first error is the one that matters
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

async fn change(
    api: &ManagementApi,
    db: &dyn Executor,
    session: &Session,
    method: &str,
    segments: &[&str],
    req: &ApiRequest,
) -> Result<ApiResponse, PortalError> {
    let tenant = session.tenant();
    let actor = Some(&session.actor);
    let now = api.clock.now();
    let body = Body::parse(&req.body, true)?;
    match (method, segments) {
        ("POST", ["endpoints"]) => {
            let spec = endpoint_spec(&body, true)?;
            let created = manage::create_endpoint(db, tenant, &spec, actor)
                .await
                .map_err(refused)?;
            api.keeper
                .store(
                    db,
                    &created.id,
                    &generate_secret(),
                    Duration::ZERO,
                    false,
                    actor,
                )
                .await
                .map_err(ApiError::from)?;
            Ok(answer(201, &endpoint_out(&created)))
        }
        ("PATCH", ["endpoints", ep]) => {
            let changes = endpoint_spec(&body, false)?;
            let updated = manage::update_endpoint(db, tenant, ep, &changes, actor)
                .await
                .map_err(refused)?;
            Ok(answer(200, &endpoint_out(&updated)))
        }
        ("DELETE", ["endpoints", ep]) => {
            let deleted = manage::delete_endpoint(db, tenant, ep, actor)
                .await
                .map_err(refused)?;
            Ok(answer(
                200,
                &json!({"id": deleted.id, "undelivered": deleted.undelivered, "secrets": deleted.secrets}),
            ))
        }
        ("POST", ["endpoints", ep, toggle @ ("disable" | "enable")]) => {
            body.only(&[], &[])?;
            let changes = json!({"disabled": *toggle == "disable"});
            let updated = manage::update_endpoint(db, tenant, ep, &changes, actor)
                .await
                .map_err(refused)?;
            Ok(answer(200, &endpoint_out(&updated)))
        }
        ("POST", ["endpoints", ep, "secret", "rotate"]) => {
            body.only(&["grace_secs"], &[])?;
            let grace = body
                .uint("grace_secs", 0, MAX_GRACE.as_secs())?
                .map_or(DEFAULT_GRACE, Duration::from_secs);
            let endpoint = manage::get_endpoint(db, tenant, ep)
                .await
                .map_err(refused)?;
            // the new secret is not shown here: `reveal` shows it, recorded
            api.keeper
                .rotate(db, &endpoint.id, None, grace, actor)
                .await
                .map_err(ApiError::from)?;
            let until = now + chrono::Duration::from_std(grace).unwrap_or_default();
            Ok(answer(
                200,
                &json!({"id": endpoint.id, "previous_valid_until": until}),
            ))
        }
        ("POST", ["endpoints", ep, "secret", "reveal"]) => {
            body.only(&[], &[])?;
            let id = deliveries::secret_revealed(db, tenant, ep, actor)
                .await
                .map_err(refused)?;
            let secret = api
                .keeper
                .reveal(db, &id, now, actor)
                .await
                .map_err(ApiError::from)?;
            Ok(answer(200, &json!({"key": secret.expose_secret()})))
        }
        ("POST", ["endpoints", ep, "messages", msg, "resend"]) => {
            body.only(&[], &[])?;
            let resent = deliveries::resend(db, tenant, msg, ep, actor)
                .await
                .map_err(refused)?;
            Ok(answer(202, &json!(resent)))
        }
        ("POST", ["endpoints", ep, "recover"]) => {
            body.only(&["since"], &[])?;
            let since = since_param(&body)?;
            let recovered = messages::recover_endpoint(db, tenant, ep, since, None, actor)
                .await
                .map_err(refused)?;
            Ok(answer(200, &json!(recovered)))
        }
        ("POST", ["endpoints", ep, "example"]) => {
            body.only(&["event_type"], &[])?;
            let event_type = body.required_string("event_type")?;
            let payload = example_payload(db, &event_type).await?;
            let sent = deliveries::send_example(db, tenant, ep, &event_type, &payload, actor)
                .await
                .map_err(refused)?;
            Ok(answer(
                202,
                &json!({"message_id": sent.message.id, "delivery_id": sent.delivery_id,
                        "event_type": sent.message.event_type}),
            ))
        }
        _ => {
            Err(ApiError::NotFound(format!("the portal has no route {method} {}", req.path)).into())
        }
    }
}
