//! The HTTP management API (docs/tenants.md, "The HTTP API"): tenants and
//! endpoints managed at runtime through Svix's API where the two overlap,
//! so a team using Svix's official SDKs points them at hookbox and keeps
//! its code. Svix's application is hookbox's tenant.
//!
//! Framework-free: [`ManagementApi::handle`] takes an [`ApiRequest`] and
//! answers an [`ApiResponse`]; the local stack and the Lambda function only
//! translate. Every call goes through the same SQL functions as the SQL face
//! and the CLI ([`crate::tenants::manage`]), recorded in the audit trail as
//! face `api` and the principal (a token's name, or the IAM identity API
//! Gateway verified).
//!
//! Served (Svix's OpenAPI document, `server/openapi.json` of
//! svix/svix-webhooks at commit [`SVIX_OPENAPI_COMMIT`]; the subset in
//! docs/api/openapi.json): applications, endpoints with their secrets and
//! rotation, messages, attempts and recover, event types, health. Every other route answers 404
//! `not_supported` naming it; a field or query parameter hookbox does not
//! know answers 422 naming it.
//!
//! - [`auth`]: bearer tokens, configured as SHA-256 hashes.
//! - [`error`]: refusals as Svix shapes them.
//! - [`sigv4`]: AWS Signature Version 4 verification (the local stack's
//!   stand-in for API Gateway's IAM authorization).
//! - `wire`: Svix's camelCase documents and the functions' snake_case ones.
//! - `apps`, `endpoints`, `messages`, `event_types`: the routes.
//! - `idempotency`: `Idempotency-Key` on POST, kept in the database.

mod apps;
pub mod auth;
mod documents;
mod endpoints;
pub mod error;
mod event_types;
pub mod idempotency;
mod messages;
pub mod operator;
pub mod portal;
pub mod sigv4;
mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::store::{Database, Executor};
use crate::tenants::secrets::{SecretError, generate_secret};
use crate::tenants::{Actor, Face, SecretKeeper};

pub use auth::{ApiTokens, TOKENS_ENV, TokenConfigError, token_hash};
pub use error::ApiError;

/// Where the API is served.
pub const PREFIX: &str = "/api/v1/";

/// One HTTP request, as the server framework received it.
#[derive(Debug, Clone, Default)]
pub struct ApiRequest {
    /// `GET`, `POST`, … (any case).
    pub method: String,
    /// The path, from `/api/v1/…` (percent-encoded as sent).
    pub path: String,
    /// The query string's parameters, decoded.
    pub query: BTreeMap<String, String>,
    /// The headers, names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The body.
    pub body: Bytes,
    /// An identity the edge already verified (API Gateway's IAM
    /// authorization: the caller's ARN). Only an edge that checked a SigV4
    /// signature sets it; when set, no bearer token is needed.
    pub verified_principal: Option<String>,
    /// The stack's public URL as the caller reached it (scheme, host and
    /// any stage prefix, no trailing slash), for the links the API mints.
    pub base_url: Option<String>,
}

impl ApiRequest {
    /// The header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// One HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    /// The status code.
    pub status: u16,
    /// Its headers.
    pub headers: Vec<(String, String)>,
    /// Its body (JSON, or empty).
    pub body: Bytes,
}

impl ApiResponse {
    /// `value` as JSON with `status`.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(value.to_string()),
        }
    }

    /// No content.
    pub fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// The body as JSON (`Null` when empty or not JSON).
    pub fn body_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The commit of svix/svix-webhooks whose `server/openapi.json` the API
/// follows (docs/api/openapi.json is its subset).
pub const SVIX_OPENAPI_COMMIT: &str = "4fc0cfb8b426c87ef7e2b937e7d896a71d456a47";

/// An endpoint id no endpoint has: sealing for it commits the sealing data
/// key, then is refused (see [`ManagementApi::seal_ready`]).
const NO_ENDPOINT: &str = "ep_00000000000000000000000000000000";

/// The management API over one database.
#[derive(Debug, Clone)]
pub struct ManagementApi {
    db: Arc<dyn Database>,
    keeper: SecretKeeper,
    clock: Arc<dyn Clock>,
    tokens: ApiTokens,
    /// The keeper's sealing data key is committed (see `seal_ready`).
    sealing_ready: Arc<AtomicBool>,
    /// Where portal links point, when set (else the request's base URL).
    portal_url: Option<String>,
    /// Who may frame the portal (its policy's `frame-ancestors`).
    frame_ancestors: Option<String>,
    /// The operator page's queue, history and redrive.
    operator: operator::OperatorPorts,
}

/// The portal's settings (docs/portal.md).
pub const PORTAL_URL_ENV: &str = "HOOKBOX_PORTAL_URL";
/// Origins that may embed the portal in a frame (space-separated).
pub const PORTAL_FRAME_ANCESTORS_ENV: &str = "HOOKBOX_PORTAL_FRAME_ANCESTORS";

/// What one request's handler works with.
pub(crate) struct Ctx<'a> {
    /// The request's transaction (writes), or the database (reads).
    pub db: &'a dyn Executor,
    /// Who, through the `api` face.
    pub actor: &'a Actor,
    /// The request.
    pub req: &'a ApiRequest,
    /// Seals and opens endpoints' secrets.
    pub keeper: &'a SecretKeeper,
    /// The injected clock's time.
    pub now: DateTime<Utc>,
    /// Where portal links point (the stack's public URL).
    pub public_url: Option<String>,
}

/// The operations served, with their path parameters (decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Health,
    ListApps,
    CreateApp,
    GetApp(String),
    PutApp(String),
    PatchApp(String),
    DeleteApp(String),
    ListEndpoints(String),
    CreateEndpoint(String),
    GetEndpoint(String, String),
    PutEndpoint(String, String),
    PatchEndpoint(String, String),
    DeleteEndpoint(String, String),
    GetSecret(String, String),
    RotateSecret(String, String),
    AppPortalAccess(String),
    Logout,
    CreateMessage(String),
    ListMessages(String),
    GetMessage(String, String),
    AttemptsByMessage(String, String),
    AttemptsByEndpoint(String, String),
    GetAttempt(String, String, String),
    Recover(String, String),
    ListEventTypes,
    CreateEventType,
    GetEventType(String),
    PutEventType(String),
    PatchEventType(String),
    DeleteEventType(String),
}

impl Op {
    /// Reads run outside a transaction; everything else in one.
    fn reads(&self) -> bool {
        matches!(
            self,
            Self::Health
                | Self::ListApps
                | Self::GetApp(_)
                | Self::ListEndpoints(_)
                | Self::GetEndpoint(..)
                | Self::GetSecret(..)
                | Self::ListEventTypes
                | Self::GetEventType(_)
                | Self::ListMessages(_)
                | Self::GetMessage(..)
                | Self::AttemptsByMessage(..)
                | Self::AttemptsByEndpoint(..)
                | Self::GetAttempt(..)
        )
    }

    /// Writes that seal a secret.
    fn seals(&self) -> bool {
        matches!(
            self,
            Self::CreateEndpoint(_) | Self::PutEndpoint(..) | Self::RotateSecret(..)
        )
    }
}

/// `%XX` decoded; `None` when not valid UTF-8 or a bad escape.
pub(crate) fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The operation `method` and `path` name, if hookbox serves it.
fn route(method: &str, path: &str) -> Option<Op> {
    let rest = path.strip_prefix(PREFIX)?.trim_end_matches('/');
    let segments = rest
        .split('/')
        .map(percent_decode)
        .collect::<Option<Vec<String>>>()?;
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let own = |x: &str| x.to_string();
    Some(match (method, s.as_slice()) {
        ("GET", ["health"]) => Op::Health,
        ("GET", ["app"]) => Op::ListApps,
        ("POST", ["app"]) => Op::CreateApp,
        ("GET", ["app", a]) => Op::GetApp(own(a)),
        ("PUT", ["app", a]) => Op::PutApp(own(a)),
        ("PATCH", ["app", a]) => Op::PatchApp(own(a)),
        ("DELETE", ["app", a]) => Op::DeleteApp(own(a)),
        ("GET", ["app", a, "endpoint"]) => Op::ListEndpoints(own(a)),
        ("POST", ["app", a, "endpoint"]) => Op::CreateEndpoint(own(a)),
        ("GET", ["app", a, "endpoint", e]) => Op::GetEndpoint(own(a), own(e)),
        ("PUT", ["app", a, "endpoint", e]) => Op::PutEndpoint(own(a), own(e)),
        ("PATCH", ["app", a, "endpoint", e]) => Op::PatchEndpoint(own(a), own(e)),
        ("DELETE", ["app", a, "endpoint", e]) => Op::DeleteEndpoint(own(a), own(e)),
        ("GET", ["app", a, "endpoint", e, "secret"]) => Op::GetSecret(own(a), own(e)),
        ("POST", ["app", a, "endpoint", e, "secret", "rotate"]) => Op::RotateSecret(own(a), own(e)),
        ("POST", ["auth", "app-portal-access", a]) => Op::AppPortalAccess(own(a)),
        ("POST", ["auth", "logout"]) => Op::Logout,
        ("POST", ["app", a, "msg"]) => Op::CreateMessage(own(a)),
        ("GET", ["app", a, "msg"]) => Op::ListMessages(own(a)),
        ("GET", ["app", a, "msg", m]) => Op::GetMessage(own(a), own(m)),
        ("GET", ["app", a, "attempt", "msg", m]) => Op::AttemptsByMessage(own(a), own(m)),
        ("GET", ["app", a, "attempt", "endpoint", e]) => Op::AttemptsByEndpoint(own(a), own(e)),
        ("GET", ["app", a, "msg", m, "attempt", t]) => Op::GetAttempt(own(a), own(m), own(t)),
        ("POST", ["app", a, "endpoint", e, "recover"]) => Op::Recover(own(a), own(e)),
        ("GET", ["event-type"]) => Op::ListEventTypes,
        ("POST", ["event-type"]) => Op::CreateEventType,
        ("GET", ["event-type", n]) => Op::GetEventType(own(n)),
        ("PUT", ["event-type", n]) => Op::PutEventType(own(n)),
        ("PATCH", ["event-type", n]) => Op::PatchEventType(own(n)),
        ("DELETE", ["event-type", n]) => Op::DeleteEventType(own(n)),
        _ => return None,
    })
}

impl ManagementApi {
    /// The API over `db`, sealing secrets with `keeper`, accepting `tokens`.
    pub fn new(
        db: Arc<dyn Database>,
        keeper: SecretKeeper,
        clock: Arc<dyn Clock>,
        tokens: ApiTokens,
    ) -> Self {
        Self {
            db,
            keeper,
            clock,
            tokens,
            sealing_ready: Arc::default(),
            portal_url: None,
            frame_ancestors: None,
            operator: operator::OperatorPorts::default(),
        }
    }

    /// Portal links point to `url` (the stack's public URL, e.g. a custom
    /// domain), not to the URL each request came in on; the portal may be
    /// framed by `frame_ancestors` (origins, space-separated).
    pub fn with_portal(mut self, url: Option<String>, frame_ancestors: Option<String>) -> Self {
        self.portal_url = url.map(|u| u.trim_end_matches('/').to_string());
        self.frame_ancestors = frame_ancestors.filter(|f| !f.trim().is_empty());
        self
    }

    /// The portal's settings from `HOOKBOX_PORTAL_URL` and
    /// `HOOKBOX_PORTAL_FRAME_ANCESTORS`, when set.
    pub fn with_portal_from_env(self) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        self.with_portal(var(PORTAL_URL_ENV), var(PORTAL_FRAME_ANCESTORS_ENV))
    }

    pub(crate) fn frame_ancestors(&self) -> Option<&str> {
        self.frame_ancestors.as_deref()
    }

    /// The public URL links point to, for `req`.
    pub(crate) fn public_url(&self, req: &ApiRequest) -> Option<String> {
        self.portal_url.clone().or_else(|| req.base_url.clone())
    }

    /// Answers one request (never fails: a refusal is an answer).
    pub async fn handle(&self, req: ApiRequest) -> ApiResponse {
        let method = req.method.to_ascii_uppercase();
        let under =
            |prefix: &str| req.path == prefix || req.path.starts_with(&format!("{prefix}/"));
        if under(portal::PORTAL_PREFIX) {
            return self.portal(&method, &req).await;
        }
        if under(operator::ADMIN_PREFIX) {
            return self.operator_page(&method, &req).await;
        }
        let response = match self.serve(&method, &req).await {
            Ok(response) => response,
            Err(e) => {
                if e.status() >= 500 {
                    tracing::error!(method, path = %req.path, error = %e, "management API failed");
                }
                e.response()
            }
        };
        tracing::info!(method, path = %req.path, status = response.status, "management API");
        response
    }

    fn actor(&self, req: &ApiRequest) -> Result<Actor, ApiError> {
        let principal = match &req.verified_principal {
            Some(arn) => arn.clone(),
            None => self
                .tokens
                .principal(req.header("authorization"))
                .ok_or(ApiError::Unauthorized)?,
        };
        Ok(Actor::new(Face::Api, principal))
    }

    async fn serve(&self, method: &str, req: &ApiRequest) -> Result<ApiResponse, ApiError> {
        let op = route(method, &req.path);
        if op == Some(Op::Health) {
            // as Svix's: no credentials needed
            return Ok(ApiResponse::empty(204));
        }
        if op == Some(Op::Logout) {
            return self.logout(req).await;
        }
        let actor = self.actor(req)?;
        let op = op.ok_or_else(|| ApiError::NotSupported {
            method: method.to_string(),
            path: req.path.clone(),
        })?;
        let now = self.clock.now();
        if op.reads() {
            let cx = Ctx {
                db: self.db.as_ref(),
                actor: &actor,
                req,
                keeper: &self.keeper,
                now,
                public_url: self.public_url(req),
            };
            return run(&cx, &op).await;
        }
        if op.seals() {
            self.seal_ready().await?;
        }
        let tx = self.db.begin().await?;
        let outcome = async {
            let cx = Ctx {
                db: tx.as_ref(),
                actor: &actor,
                req,
                keeper: &self.keeper,
                now,
                public_url: self.public_url(req),
            };
            let key = match method {
                "POST" => idempotency::key_of(req)?,
                _ => None,
            };
            let Some(key) = key else {
                return run(&cx, &op).await;
            };
            match idempotency::claim(tx.as_ref(), &actor.principal, &key, req, now).await? {
                // a rotation's answer holds the new secret, which is never
                // stored in clear: its replay answers the current secret
                // (the rotated one, unless rotated again since)
                idempotency::Claim::Replay(answer) => match &op {
                    Op::RotateSecret(a, e) if answer.status == 200 => {
                        let mut current = endpoints::secret(&cx, a, e).await?;
                        current
                            .headers
                            .push(("idempotent-replayed".into(), "true".into()));
                        Ok(current)
                    }
                    // a link's key is never stored either: a repeat mints
                    // another link (the first one expires unused)
                    Op::AppPortalAccess(_) if answer.status == 200 => {
                        let mut again = run(&cx, &op).await?;
                        again
                            .headers
                            .push(("idempotent-replayed".into(), "true".into()));
                        Ok(again)
                    }
                    _ => Ok(answer),
                },
                idempotency::Claim::Claimed(key) => {
                    let answer = run(&cx, &op).await?;
                    let kept = match &op {
                        Op::RotateSecret(..) | Op::AppPortalAccess(_) => {
                            ApiResponse::empty(answer.status)
                        }
                        _ => answer.clone(),
                    };
                    idempotency::store(tx.as_ref(), &key, &kept).await?;
                    Ok(answer)
                }
            }
        }
        .await;
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

    /// Before the first write that seals a secret: the keeper's sealing data
    /// key committed on its own. The keeper remembers the data key it made
    /// (and inserted) for the rest of the process; made inside a request's
    /// transaction that then rolled back, it would be remembered but not
    /// stored. Sealing for an endpoint that does not exist makes (or finds)
    /// and commits it, then is refused (no endpoint) before storing anything.
    async fn seal_ready(&self) -> Result<(), ApiError> {
        if self.sealing_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        match self
            .keeper
            .store(
                self.db.as_ref(),
                NO_ENDPOINT,
                &generate_secret(),
                std::time::Duration::ZERO,
                true,
                None,
            )
            .await
        {
            Ok(_) => {}
            Err(SecretError::Db(e)) if e.sqlstate() == Some("P0002") => {}
            Err(e) => return Err(e.into()),
        }
        self.sealing_ready.store(true, Ordering::Release);
        Ok(())
    }
}

async fn run(cx: &Ctx<'_>, op: &Op) -> Result<ApiResponse, ApiError> {
    match op {
        Op::Health => Ok(ApiResponse::empty(204)),
        Op::ListApps => apps::list(cx).await,
        Op::CreateApp => apps::create(cx).await,
        Op::GetApp(a) => apps::get(cx, a).await,
        Op::PutApp(a) => apps::put(cx, a).await,
        Op::PatchApp(a) => apps::patch(cx, a).await,
        Op::DeleteApp(a) => apps::delete(cx, a).await,
        Op::ListEndpoints(a) => endpoints::list(cx, a).await,
        Op::CreateEndpoint(a) => endpoints::create(cx, a).await,
        Op::GetEndpoint(a, e) => endpoints::get(cx, a, e).await,
        Op::PutEndpoint(a, e) => endpoints::put(cx, a, e).await,
        Op::PatchEndpoint(a, e) => endpoints::patch(cx, a, e).await,
        Op::DeleteEndpoint(a, e) => endpoints::delete(cx, a, e).await,
        Op::GetSecret(a, e) => endpoints::secret(cx, a, e).await,
        Op::RotateSecret(a, e) => endpoints::rotate(cx, a, e).await,
        Op::AppPortalAccess(a) => apps::portal_access(cx, a).await,
        // answered before any credentials are checked
        Op::Logout => Ok(ApiResponse::empty(204)),
        Op::CreateMessage(a) => messages::create(cx, a).await,
        Op::ListMessages(a) => messages::list(cx, a).await,
        Op::GetMessage(a, m) => messages::get(cx, a, m).await,
        Op::AttemptsByMessage(a, m) => messages::by_message(cx, a, m).await,
        Op::AttemptsByEndpoint(a, e) => messages::by_endpoint(cx, a, e).await,
        Op::GetAttempt(a, m, t) => messages::attempt(cx, a, m, t).await,
        Op::Recover(a, e) => messages::recover(cx, a, e).await,
        Op::ListEventTypes => event_types::list(cx).await,
        Op::CreateEventType => event_types::create(cx).await,
        Op::GetEventType(n) => event_types::get(cx, n).await,
        Op::PutEventType(n) => event_types::put(cx, n).await,
        Op::PatchEventType(n) => event_types::patch(cx, n).await,
        Op::DeleteEventType(n) => event_types::delete(cx, n).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_svix_paths_and_others_are_none() {
        assert_eq!(route("GET", "/api/v1/app"), Some(Op::ListApps));
        assert_eq!(route("GET", "/api/v1/app/"), Some(Op::ListApps));
        assert_eq!(
            route("POST", "/api/v1/app/acme/endpoint/ep_1/secret/rotate"),
            Some(Op::RotateSecret("acme".into(), "ep_1".into()))
        );
        assert_eq!(
            route("GET", "/api/v1/event-type/user%2Esignup"),
            Some(Op::GetEventType("user.signup".into()))
        );
        assert_eq!(
            route("POST", "/api/v1/app/acme/msg"),
            Some(Op::CreateMessage("acme".into()))
        );
        assert_eq!(
            route("POST", "/api/v1/app/acme/msg/m1/endpoint/ep_1/resend"),
            None
        );
        assert_eq!(route("DELETE", "/api/v1/app"), None);
        assert_eq!(route("GET", "/api/v2/app"), None);
        assert_eq!(route("GET", "/api/v1/app/%zz"), None);
    }
}
