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
//! - [`auth`]: bearer tokens, configured as SHA-256 hashes.
//! - [`error`]: refusals as Svix shapes them.

pub mod auth;
pub mod error;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::clock::Clock;
use crate::store::Database;
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

/// The management API over one database.
#[derive(Debug, Clone)]
pub struct ManagementApi {
    db: Arc<dyn Database>,
    keeper: SecretKeeper,
    clock: Arc<dyn Clock>,
    tokens: ApiTokens,
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
        }
    }

    /// Answers one request (never fails: a refusal is an answer).
    pub async fn handle(&self, req: ApiRequest) -> ApiResponse {
        match self.route(&req).await {
            Ok(response) => response,
            Err(e) => e.response(),
        }
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

    async fn route(&self, req: &ApiRequest) -> Result<ApiResponse, ApiError> {
        let _actor = self.actor(req)?;
        let _ = (&self.db, &self.keeper, &self.clock);
        Err(ApiError::NotSupported {
            method: req.method.to_ascii_uppercase(),
            path: req.path.clone(),
        })
    }
}
