//! `/api/v1/…`: hookbox's HTTP management API (Svix's API, docs/tenants.md
//! "The HTTP API"), served as the Lambda function serves it behind API
//! Gateway. A request carries a bearer token (`HOOKBOX_API_TOKENS`), or is
//! signed with AWS SigV4 for `execute-api` with one of the stack's access
//! keys: verified here as API Gateway's IAM authorization does, its
//! principal is the key's identity.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hookbox::clock::Clock;
use hookbox::management::sigv4::{self, SigV4Keys, SignedRequest};
use hookbox::management::{ApiRequest, ManagementApi};
use serde_json::json;

/// What the route needs.
#[derive(Debug, Clone)]
pub struct Management {
    /// The API.
    pub api: ManagementApi,
    /// The access keys SigV4-signed requests may use.
    pub sigv4: SigV4Keys,
    /// The time signatures are checked against.
    pub clock: Arc<dyn Clock>,
    /// When set, every answer (`{method, path, status, body}`) is kept here
    /// (tests check them against Svix's OpenAPI document).
    pub answers: Option<Arc<Mutex<Vec<serde_json::Value>>>>,
}

/// The largest body accepted (API Gateway's 10 MB).
pub const MAX_BODY: usize = crate::gateway::MAX_REQUEST_BYTES;

/// Any method on `/api/v1/{*rest}`.
pub async fn handle(
    State(m): State<Arc<Management>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(&m, method, uri, headers, body, None).await
}

/// `/admin…`, behind [`crate::admin::same_origin_only`]: the stack's own
/// loopback pages, vouched for as [`crate::admin::LOCAL_OPERATOR`].
pub async fn handle_loopback(
    State(m): State<Arc<Management>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let local = Some(crate::admin::LOCAL_OPERATOR.to_string());
    serve(&m, method, uri, headers, body, local).await
}

async fn serve(
    m: &Management,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    vouched: Option<String>,
) -> Response {
    let pairs: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let mut lower: BTreeMap<String, String> = BTreeMap::new();
    for (n, v) in &pairs {
        lower
            .entry(n.to_ascii_lowercase())
            .and_modify(|all| {
                all.push(',');
                all.push_str(v);
            })
            .or_insert_with(|| v.clone());
    }
    let mut verified_principal = vouched;
    if sigv4::is_sigv4(lower.get("authorization").map(String::as_str)) {
        let signed = SignedRequest {
            method: method.as_str(),
            path: uri.path(),
            query: uri.query(),
            headers: &pairs,
            body: &body,
        };
        match m.sigv4.verify(&signed, m.clock.now()) {
            Ok(principal) => verified_principal = Some(principal),
            Err(e) => {
                // what API Gateway answers a request its IAM check refuses
                // (`message`), with Svix's error fields beside it
                let text = e.to_string();
                return (
                    StatusCode::FORBIDDEN,
                    [("content-type", "application/json")],
                    json!({"code": "forbidden", "detail": text, "message": text}).to_string(),
                )
                    .into_response();
            }
        }
        lower.remove("authorization");
    }
    let query = uri
        .query()
        .map(|q| {
            form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default();
    // the stack's URL as the caller reached it: portal links point there
    let base_url = lower.get("host").map(|host| format!("http://{host}"));
    let answer = m
        .api
        .handle(ApiRequest {
            method: method.as_str().to_string(),
            path: uri.path().to_string(),
            query,
            headers: lower,
            body,
            verified_principal,
            base_url,
        })
        .await;
    if let Some(answers) = m
        .answers
        .as_ref()
        .filter(|_| uri.path().starts_with("/api/"))
    {
        let body = serde_json::from_slice::<serde_json::Value>(&answer.body).ok();
        answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(json!({
                "method": method.as_str(),
                "path": uri.path(),
                "status": answer.status,
                "body": body,
            }));
    }
    let mut response = Response::new(axum::body::Body::from(answer.body));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in answer.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(n, v);
        }
    }
    response
}
