//! Applications (`/api/v1/app`): hookbox's tenants, through the tenant
//! functions (`hookbox::tenants::manage`).

use serde_json::json;

use super::documents;
use super::error::ApiError;
use super::wire::{self, Body};
use super::{ApiResponse, Ctx};
use crate::params;
use crate::store::{Statement, fetch_optional};
use crate::tenants::links::{self, LinkSpec, MAX_EXPIRY_SECS, MIN_EXPIRY_SECS};
use crate::tenants::{ManageError, manage};

/// The tenant `key` names (id or uid), if any, without raising: inside a
/// request's transaction a function's "not found" would abort it.
const FIND: Statement = Statement::new(
    "management.app_find",
    "SELECT id FROM hookbox_tenants WHERE id = :key OR uid = :key",
);

pub(crate) async fn find(cx: &Ctx<'_>, key: &str) -> Result<Option<String>, ApiError> {
    Ok(fetch_optional(cx.db, &FIND, &params! { "key" => key })
        .await?
        .map(|r| r.text("id"))
        .transpose()?)
}

fn refused(e: ManageError) -> ApiError {
    ApiError::from_manage(e, documents::app_field)
}

/// `GET /api/v1/app`.
pub(crate) async fn list(cx: &Ctx<'_>) -> Result<ApiResponse, ApiError> {
    let q = wire::list_query(&cx.req.query, &[])?;
    let page = manage::list_tenants(cx.db, q.iterator.as_deref(), q.limit)
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(
        200,
        &wire::page(page, documents::app_out),
    ))
}

/// `POST /api/v1/app[?get_if_exists=true]`: 201 created, or 200 with the
/// application of that uid when `get_if_exists` (409 without it).
pub(crate) async fn create(cx: &Ctx<'_>) -> Result<ApiResponse, ApiError> {
    for name in cx.req.query.keys() {
        if name != "get_if_exists" {
            return Err(ApiError::query(
                name,
                format!("hookbox does not support the query parameter {name}"),
            ));
        }
    }
    let get_if_exists = wire::query_bool(&cx.req.query, "get_if_exists")?;
    let spec = documents::app_in(&Body::parse(&cx.req.body, false)?)?;
    if let Some(uid) = spec["uid"].as_str() {
        if let Some(id) = find(cx, uid).await? {
            if !get_if_exists {
                return Err(ApiError::Conflict {
                    code: "conflict",
                    detail: format!(
                        "an application with uid {uid:?} exists ({id}); pass get_if_exists=true \
                         to get it instead"
                    ),
                });
            }
            let existing = manage::get_tenant(cx.db, &id).await.map_err(refused)?;
            return Ok(ApiResponse::json(200, &documents::app_out(&existing)));
        }
    }
    let created = manage::create_tenant(cx.db, &spec, Some(cx.actor))
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(201, &documents::app_out(&created)))
}

/// `GET /api/v1/app/{app_id}` (its id or uid).
pub(crate) async fn get(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let tenant = manage::get_tenant(cx.db, app).await.map_err(refused)?;
    Ok(ApiResponse::json(200, &documents::app_out(&tenant)))
}

/// `PUT /api/v1/app/{app_id}`: replaces every field (200), or creates the
/// application when none has that id or uid (201), as Svix's upsert does.
pub(crate) async fn put(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let spec = documents::app_in(&Body::parse(&cx.req.body, false)?)?;
    match find(cx, app).await? {
        Some(id) => {
            let updated = manage::update_tenant(cx.db, &id, &spec, Some(cx.actor))
                .await
                .map_err(refused)?;
            Ok(ApiResponse::json(200, &documents::app_out(&updated)))
        }
        None => {
            let created = manage::create_tenant(cx.db, &spec, Some(cx.actor))
                .await
                .map_err(refused)?;
            Ok(ApiResponse::json(201, &documents::app_out(&created)))
        }
    }
}

/// `PATCH /api/v1/app/{app_id}`: the fields given.
pub(crate) async fn patch(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let changes = documents::app_patch(&Body::parse(&cx.req.body, false)?)?;
    let updated = manage::update_tenant(cx.db, app, &changes, Some(cx.actor))
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(200, &documents::app_out(&updated)))
}

/// `DELETE /api/v1/app/{app_id}`: with its endpoints, their secrets and
/// undelivered deliveries (204).
pub(crate) async fn delete(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let deleted = manage::delete_tenant(cx.db, app, Some(cx.actor))
        .await
        .map_err(refused)?;
    tracing::info!(deleted = %json!(deleted), "application deleted through the API");
    Ok(ApiResponse::empty(204))
}

/// `POST /api/v1/auth/app-portal-access/{app_id}`: a portal link for the
/// application (created from `application` when none has that id or uid),
/// as `{url, token}`; the token is the link's key. Svix's later
/// `AppPortalAccessIn` fields are read too: `expiry` (seconds, 3,600 to
/// 604,800; default 7 days), `readOnly`, `sessionId` (revoked together
/// through SQL or the CLI). `capabilities` other than read-only or all are
/// refused, naming them; so are feature flags.
pub(crate) async fn portal_access(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let body = Body::parse(&cx.req.body, true)?;
    body.only(
        &[
            "application",
            "expiry",
            "readOnly",
            "sessionId",
            "capabilities",
            "featureFlags",
        ],
        &[],
    )?;
    if let Some(flags) = body.string_list("featureFlags")? {
        if !flags.is_empty() {
            return Err(ApiError::validation(
                "featureFlags",
                "hookbox's portal has no feature flags: send none",
            ));
        }
    }
    let mut read_only = body.bool("readOnly")?.unwrap_or(false);
    if let Some(capabilities) = body.string_list("capabilities")? {
        let all = [
            "ViewBase",
            "ViewEndpointSecret",
            "ManageEndpointSecret",
            "CreateAttempts",
            "ManageEndpoint",
        ];
        match capabilities
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["ViewBase"] => read_only = true,
            given
                if given.contains(&"ManageEndpoint")
                    && given
                        .iter()
                        .all(|c| all.contains(c) || *c == "ManageTransformations") => {}
            _ => {
                return Err(ApiError::validation(
                    "capabilities",
                    format!(
                        "hookbox's portal links are read-only ([\"ViewBase\"]) or may do \
                         everything ([\"ManageEndpoint\", …]); {capabilities:?} is neither"
                    ),
                ));
            }
        }
    }
    let expiry = body.uint(
        "expiry",
        u64::from(MIN_EXPIRY_SECS),
        u64::from(MAX_EXPIRY_SECS),
    )?;
    let session_id = body.string_not_null("sessionId")?;
    let tenant = match find(cx, app).await? {
        Some(id) => id,
        None => {
            let Some(application) = body.object("application")? else {
                return Err(ApiError::NotFound(format!("no application {app:?}")));
            };
            let mut spec = documents::app_in(&Body::from_map(application))?;
            if spec["uid"].is_null() && !app.starts_with("app_") {
                spec["uid"] = app.into();
            }
            manage::create_tenant(cx.db, &spec, Some(cx.actor))
                .await
                .map_err(refused)?
                .id
        }
    };
    let Some(base) = cx.public_url.as_deref() else {
        return Err(ApiError::Internal(
            "the stack's public URL is not known: set HOOKBOX_PORTAL_URL".into(),
        ));
    };
    let spec = LinkSpec {
        expiry_secs: expiry.and_then(|e| u32::try_from(e).ok()),
        read_only,
        session_id,
    };
    let minted = links::mint_link(cx.db, &tenant, &spec, Some(cx.actor))
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(
        200,
        &json!({
            "url": crate::management::portal::link_url(base, &minted.key),
            "token": minted.key.expose(),
        }),
    ))
}
