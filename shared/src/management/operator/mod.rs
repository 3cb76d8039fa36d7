//! The operator page (`/admin`, docs/portal.md "The operator page"): the
//! inbox and outbox rows that need a human, replay and retry, destination
//! health and enable, tenants, counts. Served by the management function
//! behind API Gateway and by the local stack, from the same code.
//!
//! Opened with an operator's link (`<base>/admin/#key=hbp_…`), minted only
//! by someone with the stack's database credentials (`hookbox admin link`):
//! the page signs in with the key as the portal does (an HttpOnly,
//! SameSite=Strict cookie of its own; writes carry the anti-forgery token).
//! A customer's portal link opens nothing here. The local stack also trusts
//! its own loopback pages (it says so with `verified_principal`), as its
//! `/admin` always has.

mod assets;
mod routes;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::portal::{
    CSRF_HEADER, PortalError, cleared_cookie, cookie, json as no_store, session_cookie,
};
use super::{ApiRequest, ApiResponse, ManagementApi};
use crate::queue::Queue;
use crate::tenants::links::{self, LinkKind, PortalKey};

pub use routes::counts;

/// Where the operator page is served.
pub const ADMIN_PREFIX: &str = "/admin";

/// Its session cookie's name.
pub const COOKIE: &str = "hookbox_admin";

/// Moves the dead letters of the stack's queue back (the local stack's
/// in-memory DLQ; with SQS, `hookbox dlq redrive`).
pub type Redrive = Arc<dyn Fn() -> usize + Send + Sync>;

/// What the operator page works with besides the database.
#[derive(Clone, Default)]
pub struct OperatorPorts {
    /// The inbox queue: replays enqueue there (none: replay is refused).
    pub queue: Option<Arc<dyn Queue>>,
    /// Counts sampled over time (the local stack samples; a function keeps
    /// none).
    pub history: Option<Arc<Mutex<VecDeque<Value>>>>,
    /// The DLQ's redrive, when the queue is the local in-memory one.
    pub redrive: Option<Redrive>,
}

impl std::fmt::Debug for OperatorPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorPorts")
            .field("queue", &self.queue.is_some())
            .field("history", &self.history.is_some())
            .field("redrive", &self.redrive.is_some())
            .finish()
    }
}

/// One request's operator: who, until when, and the key (none when the
/// edge vouched for the request: the local stack's own pages).
pub(crate) struct Operator {
    pub name: String,
    pub expires_at: Option<DateTime<Utc>>,
    pub key: Option<PortalKey>,
}

impl Operator {
    fn document(&self) -> Value {
        json!({
            "operator": self.name,
            "expires_at": self.expires_at,
            "csrf": self.key.as_ref().map(PortalKey::csrf_token),
        })
    }
}

impl ManagementApi {
    /// The operator page's ports (its queue, history, redrive).
    pub fn with_operator(mut self, ports: OperatorPorts) -> Self {
        self.operator = ports;
        self
    }

    /// Answers one request under `/admin` (never fails: a refusal is an
    /// answer).
    pub(super) async fn operator_page(&self, method: &str, req: &ApiRequest) -> ApiResponse {
        let rest = req
            .path
            .strip_prefix(ADMIN_PREFIX)
            .unwrap_or_default()
            .to_string();
        let answer = match rest.strip_prefix("/api/") {
            Some(api) => self.operator_api(method, api, req).await,
            None => Ok(assets::serve(method, &rest)),
        };
        let response = answer.unwrap_or_else(|e| e.response());
        tracing::info!(method, path = %req.path, status = response.status, "operator page");
        response
    }

    async fn operator_of(&self, key: PortalKey) -> Result<Operator, PortalError> {
        let session = links::session(self.db.as_ref(), &key, self.clock.now())
            .await?
            // a customer's link opens its portal, never this page
            .filter(|s| s.link.kind == LinkKind::Operator)
            .ok_or(PortalError::Unauthorized)?;
        Ok(Operator {
            name: session
                .link
                .principal
                .unwrap_or_else(|| session.link.id.clone()),
            expires_at: Some(session.link.expires_at),
            key: Some(key),
        })
    }

    async fn operator_api(
        &self,
        method: &str,
        api: &str,
        req: &ApiRequest,
    ) -> Result<ApiResponse, PortalError> {
        let segments: Vec<&str> = api.trim_end_matches('/').split('/').collect();
        if segments == ["session"] && method == "POST" {
            let body = super::wire::Body::parse(&req.body, false)?;
            body.only(&["key"], &[])?;
            let text = body.required_string("key")?;
            let key = PortalKey::parse(&text).ok_or(PortalError::Unauthorized)?;
            let operator = self.operator_of(key).await?;
            let mut r = no_store(200, &operator.document());
            if let (Some(key), Some(until)) = (&operator.key, operator.expires_at) {
                r.headers.push((
                    "set-cookie".into(),
                    session_cookie(req, COOKIE, key, until, self.clock.now()),
                ));
            }
            return Ok(r);
        }
        let cookie_key = cookie(req, COOKIE).and_then(PortalKey::parse);
        let operator = match (&req.verified_principal, cookie_key) {
            (_, Some(key)) => self.operator_of(key).await?,
            (Some(principal), None) => Operator {
                name: principal.clone(),
                expires_at: None,
                key: None,
            },
            (None, None) => return Err(PortalError::Unauthorized),
        };
        let writes = !matches!(method, "GET" | "HEAD");
        if writes {
            if let Some(key) = &operator.key {
                if !key.csrf_matches(req.header(CSRF_HEADER).unwrap_or_default()) {
                    return Err(PortalError::Csrf);
                }
            }
        }
        if segments == ["session"] {
            return match method {
                "GET" => Ok(no_store(200, &operator.document())),
                "DELETE" => {
                    if let Some(key) = &operator.key {
                        links::logout(self.db.as_ref(), key, self.clock.now()).await?;
                    }
                    let mut r = ApiResponse::empty(204);
                    r.headers
                        .push(("set-cookie".into(), cleared_cookie(req, COOKIE)));
                    Ok(r)
                }
                _ => Err(PortalError::Method),
            };
        }
        Ok(routes::serve(self, &operator, method, &segments, req).await)
    }
}
