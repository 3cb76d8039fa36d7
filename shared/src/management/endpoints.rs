//! Endpoints (`/api/v1/app/{app_id}/endpoint`): a tenant's endpoints,
//! through the endpoint functions (`hookbox::tenants::manage`), their
//! signing secrets sealed by the [`crate::tenants::SecretKeeper`].
//!
//! `disabled` is hookbox's disable and enable: a disabled endpoint's
//! deliveries are held (they wait), not dropped, and go out when it is
//! enabled again.

use std::time::Duration;

use serde_json::json;

use super::documents;
use super::error::ApiError;
use super::wire::{self, Body};
use super::{ApiResponse, Ctx};
use crate::params;
use crate::store::{Statement, fetch_optional};
use crate::tenants::secrets::{MAX_GRACE, generate_secret, parse_secret};
use crate::tenants::{Endpoint, ManageError, manage};

/// The endpoint `ep` (id or uid) of the tenant `app` (id or uid), if any,
/// without raising (a function's "not found" would abort the transaction).
const FIND: Statement = Statement::new(
    "management.endpoint_find",
    "SELECT e.id FROM hookbox_endpoints AS e
       JOIN hookbox_tenants AS t ON t.id = e.tenant_id
      WHERE (t.id = :app OR t.uid = :app) AND (e.id = :ep OR e.uid = :ep)",
);

fn refused(e: ManageError) -> ApiError {
    ApiError::from_manage(e, documents::endpoint_field)
}

/// `GET /api/v1/app/{app_id}/endpoint`.
pub(crate) async fn list(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    let q = wire::list_query(&cx.req.query, &[])?;
    let page = manage::list_endpoints(cx.db, app, q.iterator.as_deref(), q.limit)
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(
        200,
        &wire::page(page, documents::endpoint_out),
    ))
}

/// Creates the endpoint `spec` describes and seals its secret (`secret`,
/// else a new one) at once, so `GET …/secret` shows the one it signs with.
async fn create_sealed(
    cx: &Ctx<'_>,
    app: &str,
    spec: &serde_json::Value,
    secret: Option<&str>,
) -> Result<Endpoint, ApiError> {
    let secret = match secret {
        Some(text) => {
            parse_secret(text).map_err(|e| ApiError::validation("secret", e.to_string()))?
        }
        None => generate_secret(),
    };
    let created = manage::create_endpoint(cx.db, app, spec, Some(cx.actor))
        .await
        .map_err(refused)?;
    cx.keeper
        .store(
            cx.db,
            &created.id,
            &secret,
            Duration::ZERO,
            false,
            Some(cx.actor),
        )
        .await?;
    Ok(created)
}

/// `POST /api/v1/app/{app_id}/endpoint` (201).
pub(crate) async fn create(cx: &Ctx<'_>, app: &str) -> Result<ApiResponse, ApiError> {
    no_query(cx)?;
    let input = documents::endpoint_in(&Body::parse(&cx.req.body, false)?, true)?;
    let created = create_sealed(cx, app, &input.spec, input.secret.as_deref()).await?;
    Ok(ApiResponse::json(201, &documents::endpoint_out(&created)))
}

fn no_query(cx: &Ctx<'_>) -> Result<(), ApiError> {
    match cx.req.query.keys().next() {
        Some(name) => Err(ApiError::query(
            name,
            format!("hookbox does not support the query parameter {name}"),
        )),
        None => Ok(()),
    }
}

/// `GET /api/v1/app/{app_id}/endpoint/{endpoint_id}`.
pub(crate) async fn get(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    let endpoint = manage::get_endpoint(cx.db, app, ep)
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(200, &documents::endpoint_out(&endpoint)))
}

/// `PUT /api/v1/app/{app_id}/endpoint/{endpoint_id}`: replaces every field
/// Svix's `EndpointUpdate` has (200; its custom headers and secrets stay),
/// or creates the endpoint when the application has none of that id or uid
/// (201), as Svix's upsert does.
pub(crate) async fn put(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    no_query(cx)?;
    let input = documents::endpoint_in(&Body::parse(&cx.req.body, false)?, false)?;
    let found = fetch_optional(cx.db, &FIND, &params! { "app" => app, "ep" => ep })
        .await?
        .map(|r| r.text("id"))
        .transpose()?;
    match found {
        Some(id) => {
            let updated = manage::update_endpoint(cx.db, app, &id, &input.spec, Some(cx.actor))
                .await
                .map_err(refused)?;
            Ok(ApiResponse::json(200, &documents::endpoint_out(&updated)))
        }
        None => {
            let created = create_sealed(cx, app, &input.spec, None).await?;
            Ok(ApiResponse::json(201, &documents::endpoint_out(&created)))
        }
    }
}

/// `PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}`: the fields given.
pub(crate) async fn patch(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    no_query(cx)?;
    let changes = documents::endpoint_patch(&Body::parse(&cx.req.body, false)?)?;
    let updated = manage::update_endpoint(cx.db, app, ep, &changes, Some(cx.actor))
        .await
        .map_err(refused)?;
    Ok(ApiResponse::json(200, &documents::endpoint_out(&updated)))
}

/// `DELETE /api/v1/app/{app_id}/endpoint/{endpoint_id}` (204): with its
/// secrets and undelivered deliveries.
pub(crate) async fn delete(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    let deleted = manage::delete_endpoint(cx.db, app, ep, Some(cx.actor))
        .await
        .map_err(refused)?;
    tracing::info!(deleted = %json!(deleted), "endpoint deleted through the API");
    Ok(ApiResponse::empty(204))
}

/// `GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/secret`: the current
/// signing secret (`{"key": "whsec_…"}`).
pub(crate) async fn secret(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    let endpoint = manage::get_endpoint(cx.db, app, ep)
        .await
        .map_err(refused)?;
    let secret = cx
        .keeper
        .reveal(cx.db, &endpoint.id, cx.now, Some(cx.actor))
        .await?;
    Ok(ApiResponse::json(
        200,
        &json!({"key": secret.expose_secret()}),
    ))
}

/// `POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/secret/rotate`: `key`
/// (or a new secret) becomes current; the previous one keeps signing for
/// `gracePeriodSeconds` (default 24 hours, at most 7 days). Answers 200
/// with the new secret (`{"key": …}`), as Svix's later documents do and
/// its later SDKs read (the pinned document's 204 without a body makes
/// them fail; the SDKs of that document ignore the body): see
/// docs/api/conformance.py, `LATER`.
pub(crate) async fn rotate(cx: &Ctx<'_>, app: &str, ep: &str) -> Result<ApiResponse, ApiError> {
    no_query(cx)?;
    let body = Body::parse(&cx.req.body, true)?;
    body.only(&["key", "gracePeriodSeconds"], &[])?;
    let new = body
        .string("key")?
        .map(|k| parse_secret(&k).map_err(|e| ApiError::validation("key", e.to_string())))
        .transpose()?;
    let grace = body
        .uint("gracePeriodSeconds", 0, MAX_GRACE.as_secs())?
        .unwrap_or(86_400);
    let endpoint = manage::get_endpoint(cx.db, app, ep)
        .await
        .map_err(refused)?;
    let secret = cx
        .keeper
        .rotate(
            cx.db,
            &endpoint.id,
            new,
            Duration::from_secs(grace),
            Some(cx.actor),
        )
        .await?;
    Ok(ApiResponse::json(
        200,
        &json!({"key": secret.expose_secret()}),
    ))
}
