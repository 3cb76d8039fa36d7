//! What the local API Gateway and the events it builds share: which API
//! Gateway it plays ([`Ingress`]), the functions behind it ([`Gateway`]),
//! one request ([`Call`]) and the answer when the gateway itself fails.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hookbox::clock::Clock;
use hookbox_authorizer::Authorizer;
use hookbox_ingest::IngestFunction;
use serde_json::json;

/// The largest request API Gateway (REST) takes: 10 MB. A larger one is
/// answered 413 before any function runs. On AWS, Lambda's 6 MB invocation
/// payload then applies to the proxy event (the body base64 inside it), so
/// a body over about 4.4 MB never reaches ingest there; ingest's own limit,
/// `max_body_bytes` (4 MiB at most), answers first for what does.
pub const MAX_REQUEST_BYTES: usize = 10 * 1024 * 1024;

/// Which API Gateway the stack plays (`--ingress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ingress {
    /// REST API: payload format 1.0, the authorizer answers with an IAM
    /// policy, every body base64 (binary media type `*/*`).
    #[default]
    Rest,
    /// HTTP API: payload format 2.0, the authorizer answers with a simple
    /// response, a text Content-Type's body as a string.
    Http,
}

impl Ingress {
    /// `rest` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rest => "rest",
            Self::Http => "http",
        }
    }
}

impl Ingress {
    /// What this API Gateway answers itself for a path none of its routes
    /// match (`/webhooks/` with no partner, say), before any authorizer or
    /// function: REST `403 {"message":"Missing Authentication Token"}`,
    /// HTTP API `404 {"message":"Not Found"}`.
    pub fn no_route(self) -> Response {
        let (status, message) = match self {
            Self::Rest => (StatusCode::FORBIDDEN, "Missing Authentication Token"),
            Self::Http => (StatusCode::NOT_FOUND, "Not Found"),
        };
        (
            status,
            [("content-type", "application/json")],
            json!({ "message": message }).to_string(),
        )
            .into_response()
    }
}

impl std::str::FromStr for Ingress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "rest" => Ok(Self::Rest),
            "http" => Ok(Self::Http),
            other => Err(format!("ingress {other:?}: `rest` or `http`")),
        }
    }
}

/// The functions behind the gateway.
#[derive(Debug, Clone)]
pub struct Gateway {
    /// Which API Gateway's events they get.
    pub ingress: Ingress,
    /// The REQUEST authorizer.
    pub authorizer: Authorizer,
    /// The ingest function.
    pub ingest: IngestFunction,
    /// Time (request ids and epochs).
    pub clock: Arc<dyn Clock>,
}

/// One HTTP request to `/webhooks/{partner}`.
pub(crate) struct Call {
    pub(crate) method: Method,
    /// The path segment, decoded.
    pub(crate) partner: String,
    /// The connection's peer address.
    pub(crate) source_ip: String,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// The answer when the gateway itself cannot build an event (502).
pub(crate) fn gateway_error(detail: &str) -> Response {
    tracing::error!(detail, "local gateway failure");
    (
        StatusCode::BAD_GATEWAY,
        [("content-type", "application/json")],
        json!({ "message": "Internal server error", "detail": detail }).to_string(),
    )
        .into_response()
}
