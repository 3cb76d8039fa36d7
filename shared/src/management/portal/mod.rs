//! The customer portal (docs/portal.md): a page and its JSON API under
//! `/portal/`, for one tenant's customer, opened by a portal link with no
//! hookbox account. Served by the management API's function (and the
//! local stack) beside `/api/v1/`.
//!
//! - The page (`shared/portal/`: one HTML file, its script and its style,
//!   built in) is served with a strict Content-Security-Policy: nothing
//!   inline, nothing from elsewhere.
//! - A link is `<base>/portal/#key=hbp_…`: the key stays in the fragment,
//!   which browsers never send. The page posts it to `api/session`, which
//!   answers the session and sets it as an HttpOnly, SameSite=Strict
//!   cookie; every other call carries the cookie, and every write the
//!   session's anti-forgery token (`X-Hookbox-Csrf`), derived from the key.
//! - Every call is scoped to the link's tenant alone: no route takes a
//!   tenant; an endpoint, message or delivery id of another tenant is
//!   "not found". A read-only link cannot write.
//! - Changes go through the same functions as the other faces, recorded in
//!   the audit trail as face `portal` and the link's id.

pub(crate) mod assets;
mod routes;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::error::ApiError;
use super::{ApiRequest, ApiResponse, ManagementApi};
use crate::tenants::links::{self, PortalKey, PortalSession};
use crate::tenants::{Actor, Face};

/// Where the portal is served.
pub const PORTAL_PREFIX: &str = "/portal";

/// The session cookie's name.
pub const COOKIE: &str = "hookbox_portal";

/// The anti-forgery header every write carries.
pub const CSRF_HEADER: &str = "x-hookbox-csrf";

/// A link's URL under `base` (the stack's public URL, with its stage).
pub fn link_url(base: &str, key: &PortalKey) -> String {
    format!(
        "{}{PORTAL_PREFIX}/#key={}",
        base.trim_end_matches('/'),
        key.expose()
    )
}

/// Why a portal request was refused.
#[derive(Debug)]
pub(crate) enum PortalError {
    /// No session: no key, or one that is unknown, expired or revoked (401).
    Unauthorized,
    /// A write without the session's anti-forgery token (403).
    Csrf,
    /// A write through a read-only link (403).
    ReadOnly,
    /// A method the route does not serve (405).
    Method,
    /// What the management API would answer.
    Api(ApiError),
}

impl From<ApiError> for PortalError {
    fn from(e: ApiError) -> Self {
        Self::Api(e)
    }
}

impl From<crate::store::DbError> for PortalError {
    fn from(e: crate::store::DbError) -> Self {
        Self::Api(e.into())
    }
}

impl PortalError {
    pub(crate) fn response(&self) -> ApiResponse {
        let (status, code, detail) = match self {
            Self::Unauthorized => (
                401,
                "unauthorized",
                "this link is invalid, expired or revoked, or not one for this page: ask for a new one".to_string(),
            ),
            Self::Csrf => (
                403,
                "csrf",
                format!("a change needs the session's anti-forgery token in {CSRF_HEADER}"),
            ),
            Self::ReadOnly => (
                403,
                "read_only",
                "this portal link is read-only: it cannot change anything".to_string(),
            ),
            Self::Method => (
                405,
                "method_not_allowed",
                "this route does not serve that method".to_string(),
            ),
            Self::Api(ApiError::Validation { loc, msg }) => {
                let field = loc.rsplit('.').next().unwrap_or_default();
                let mut r = ApiResponse::json(
                    422,
                    &json!({"code": "validation", "field": field, "detail": msg}),
                );
                r.headers.push(("cache-control".into(), "no-store".into()));
                return r;
            }
            Self::Api(other) => {
                let mut r = other.response();
                r.headers.push(("cache-control".into(), "no-store".into()));
                return r;
            }
        };
        let mut r = ApiResponse::json(status, &json!({"code": code, "detail": detail}));
        r.headers.push(("cache-control".into(), "no-store".into()));
        r
    }

    fn status(&self) -> u16 {
        self.response().status
    }
}

/// One request's session: its link, its tenant, its key.
pub(crate) struct Session {
    pub key: PortalKey,
    pub doc: PortalSession,
    pub actor: Actor,
}

impl Session {
    pub fn tenant(&self) -> &str {
        self.doc.tenant.as_ref().map_or("", |t| t.id.as_str())
    }

    fn document(&self) -> serde_json::Value {
        json!({
            "link_id": self.doc.link.id,
            "tenant": self.doc.tenant,
            "read_only": self.doc.link.read_only,
            "expires_at": self.doc.link.expires_at,
            "csrf": self.key.csrf_token(),
        })
    }
}

/// The value of cookie `name` in the request's `Cookie` header.
pub(crate) fn cookie<'a>(req: &'a ApiRequest, name: &str) -> Option<&'a str> {
    req.header("cookie")?.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// The request came in over HTTPS (API Gateway says so in
/// `X-Forwarded-Proto`): the cookie is then `Secure`.
fn over_https(req: &ApiRequest) -> bool {
    req.header("x-forwarded-proto")
        .is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

/// The session cookie `name` holding `key` until `expires_at`.
pub(crate) fn session_cookie(
    req: &ApiRequest,
    name: &str,
    key: &PortalKey,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> String {
    let max_age = (expires_at - now).num_seconds().max(0);
    // no Path: it defaults to the directory of `…/portal/api/session` (or
    // `…/admin/api/session`), so the cookie goes to that page's API alone,
    // under any stage prefix
    format!(
        "{name}={}; Max-Age={max_age}; HttpOnly; SameSite=Strict{}",
        key.expose(),
        if over_https(req) { "; Secure" } else { "" }
    )
}

/// The session cookie `name`, cleared.
pub(crate) fn cleared_cookie(req: &ApiRequest, name: &str) -> String {
    format!(
        "{name}=; Max-Age=0; HttpOnly; SameSite=Strict{}",
        if over_https(req) { "; Secure" } else { "" }
    )
}

pub(crate) fn json(status: u16, value: &serde_json::Value) -> ApiResponse {
    let mut r = ApiResponse::json(status, value);
    r.headers.push(("cache-control".into(), "no-store".into()));
    r
}

impl ManagementApi {
    /// Answers one request under `/portal` (never fails: a refusal is an
    /// answer).
    pub(super) async fn portal(&self, method: &str, req: &ApiRequest) -> ApiResponse {
        let rest = req
            .path
            .strip_prefix(PORTAL_PREFIX)
            .unwrap_or_default()
            .to_string();
        let answer = match rest.strip_prefix("/api/") {
            Some(api) => self.portal_api(method, api, req).await,
            None => Ok(assets::serve(method, &rest, self.frame_ancestors())),
        };
        let response = answer.unwrap_or_else(|e| {
            if e.status() >= 500 {
                tracing::error!(method, path = %req.path, error = ?e, "portal failed");
            }
            e.response()
        });
        tracing::info!(method, path = %req.path, status = response.status, "portal");
        response
    }

    /// `POST /api/v1/auth/logout` (Svix's): the bearer token, a portal
    /// link's key, is revoked (204). Other tokens cannot be logged out.
    pub(super) async fn logout(&self, req: &ApiRequest) -> Result<ApiResponse, ApiError> {
        let bearer = req
            .header("authorization")
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim);
        if let Some(key) = bearer.and_then(PortalKey::parse) {
            return match links::logout(self.db.as_ref(), &key, self.clock.now()).await? {
                Some(_) => Ok(ApiResponse::empty(204)),
                None => Err(ApiError::Unauthorized),
            };
        }
        // a configured token (or an IAM caller) is not a session
        self.actor(req)?;
        Err(ApiError::Forbidden(
            "only a portal link's key (hbp_…) can be logged out; API tokens are rotated in the \
             stack's configuration"
                .into(),
        ))
    }

    async fn open(&self, key: PortalKey) -> Result<Session, PortalError> {
        let doc = links::session(self.db.as_ref(), &key, self.clock.now())
            .await?
            // an operator's link opens the operator page, not a portal
            .filter(|s| s.link.kind == links::LinkKind::Tenant && s.tenant.is_some())
            .ok_or(PortalError::Unauthorized)?;
        let actor = Actor::new(Face::Portal, doc.link.id.clone());
        Ok(Session { key, doc, actor })
    }

    async fn portal_api(
        &self,
        method: &str,
        api: &str,
        req: &ApiRequest,
    ) -> Result<ApiResponse, PortalError> {
        let segments: Vec<&str> = api.trim_end_matches('/').split('/').collect();
        if segments == ["session"] && method == "POST" {
            return self.sign_in(req).await;
        }
        let key = cookie(req, COOKIE)
            .and_then(PortalKey::parse)
            .ok_or(PortalError::Unauthorized)?;
        let session = self.open(key).await?;
        let writes = !matches!(method, "GET" | "HEAD");
        if writes {
            let token = req.header(CSRF_HEADER).unwrap_or_default();
            if !session.key.csrf_matches(token) {
                return Err(PortalError::Csrf);
            }
        }
        if segments == ["session"] {
            return match method {
                "GET" => Ok(json(200, &session.document())),
                "DELETE" => {
                    links::logout(self.db.as_ref(), &session.key, self.clock.now()).await?;
                    let mut r = ApiResponse::empty(204);
                    r.headers
                        .push(("set-cookie".into(), cleared_cookie(req, COOKIE)));
                    r.headers.push(("cache-control".into(), "no-store".into()));
                    Ok(r)
                }
                _ => Err(PortalError::Method),
            };
        }
        if writes && session.doc.link.read_only {
            return Err(PortalError::ReadOnly);
        }
        routes::serve(self, &session, method, &segments, req).await
    }

    async fn sign_in(&self, req: &ApiRequest) -> Result<ApiResponse, PortalError> {
        let body = super::wire::Body::parse(&req.body, false)?;
        body.only(&["key"], &[])?;
        let text = body.required_string("key")?;
        let key = PortalKey::parse(&text).ok_or(PortalError::Unauthorized)?;
        let session = self.open(key).await?;
        let mut r = json(200, &session.document());
        r.headers.push((
            "set-cookie".into(),
            session_cookie(
                req,
                COOKIE,
                &session.key,
                session.doc.link.expires_at,
                self.clock.now(),
            ),
        ));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_read_by_name_only() {
        let req = ApiRequest {
            headers: [(
                "cookie".to_string(),
                "a=1; hookbox_portal=hbp_x; hookbox_portalx=2".to_string(),
            )]
            .into(),
            ..ApiRequest::default()
        };
        assert_eq!(cookie(&req, COOKIE), Some("hbp_x"));
        assert_eq!(cookie(&req, "b"), None);
    }

    #[test]
    fn links_keep_the_key_in_the_fragment() {
        let key = PortalKey::parse(&format!("hbp_{}", "c".repeat(64))).expect("key");
        assert_eq!(
            link_url("https://x.example/Prod/", &key),
            format!("https://x.example/Prod/portal/#key=hbp_{}", "c".repeat(64))
        );
    }
}
