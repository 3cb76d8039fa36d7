//! API Gateway REST proxy events (v1) to [`ApiRequest`] and [`ApiResponse`]
//! back. Pure translation: which route the request came in on decides
//! whether an identity is trusted, nothing else.
//!
//! Two routes reach the function (infra/template.yaml):
//! - `/api/v1/{proxy+}`, no gateway authorization: the API checks the
//!   bearer token (Svix's SDKs send `Authorization: Bearer`). Nothing of
//!   the event is taken as an identity there, whatever it says.
//! - `/iam/api/v1/{proxy+}`, `AWS_IAM`: API Gateway verified the caller's
//!   SigV4 signature before invoking, and the caller's ARN
//!   (`requestContext.identity.userArn`) is the principal. The `/iam`
//!   prefix is stripped, so both routes serve the same API.
//! - `/portal` and `/portal/{proxy+}`, no gateway authorization: the
//!   customer portal (its page, and its API opened by a portal link's key).
//! - `/admin` and `/admin/{proxy+}`, no gateway authorization: the operator
//!   page, opened by an operator's link (nothing of the event is trusted
//!   as an identity there either).

use std::collections::BTreeMap;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayProxyResponse};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue};
use base64::Engine as _;
use bytes::Bytes;
use hookbox::management::{ApiRequest, ApiResponse, PREFIX};

/// The resource of the IAM-authorized route.
pub const IAM_RESOURCE: &str = "/iam/api/v1/{proxy+}";
/// The resource of the bearer-token route.
pub const BEARER_RESOURCE: &str = "/api/v1/{proxy+}";
/// The prefix the IAM route adds in front of [`PREFIX`].
pub const IAM_PREFIX: &str = "/iam";
/// The resources of the portal's routes.
pub const PORTAL_RESOURCES: [&str; 2] = ["/portal", "/portal/{proxy+}"];
/// The resources of the operator page's routes.
pub const ADMIN_RESOURCES: [&str; 2] = ["/admin", "/admin/{proxy+}"];

/// Which route a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `/api/v1/{proxy+}`: the function checks the bearer token.
    Bearer,
    /// `/iam/api/v1/{proxy+}`: API Gateway checked a SigV4 signature.
    Iam,
    /// `/portal…`: the customer portal.
    Portal,
    /// `/admin…`: the operator page.
    Admin,
}

impl Route {
    /// The route of `event`, from the resource API Gateway matched (set by
    /// API Gateway, never by the caller). Anything but the IAM route's
    /// resource is the bearer route: an identity is trusted only where the
    /// gateway verified one.
    pub fn of(event: &ApiGatewayProxyRequest) -> Self {
        let resource = event
            .resource
            .as_deref()
            .or(event.request_context.resource_path.as_deref());
        match resource {
            Some(IAM_RESOURCE) => Route::Iam,
            Some(r) if PORTAL_RESOURCES.contains(&r) => Route::Portal,
            Some(r) if ADMIN_RESOURCES.contains(&r) => Route::Admin,
            _ => Route::Bearer,
        }
    }

    /// Its name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Bearer => "bearer",
            Route::Iam => "iam",
            Route::Portal => "portal",
            Route::Admin => "admin",
        }
    }
}

/// Why an event could not be turned into a request (answered, never a
/// failed invocation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `isBase64Encoded` with a body that is not base64 (400).
    #[error("the request body is marked base64 but is not: {0}")]
    BodyNotBase64(String),
    /// The IAM route without the identity API Gateway puts there (403):
    /// never served as a bearer request instead.
    #[error("the IAM route carries no verified caller identity")]
    NoVerifiedIdentity,
}

impl Refusal {
    /// The answer, shaped as the API's other refusals (`code`, `detail`).
    pub fn response(&self) -> ApiResponse {
        let (status, code) = match self {
            Refusal::BodyNotBase64(_) => (400, "bad_request"),
            Refusal::NoVerifiedIdentity => (403, "authentication_failed"),
        };
        ApiResponse::json(
            status,
            &serde_json::json!({"code": code, "detail": self.to_string()}),
        )
    }
}

/// The request `event` carries, as the management API takes it.
pub fn request(event: &ApiGatewayProxyRequest) -> Result<(Route, ApiRequest), Refusal> {
    let route = Route::of(event);
    let verified_principal = match route {
        Route::Bearer | Route::Portal | Route::Admin => None,
        Route::Iam => Some(
            event
                .request_context
                .identity
                .user_arn
                .clone()
                .filter(|arn| !arn.trim().is_empty())
                .ok_or(Refusal::NoVerifiedIdentity)?,
        ),
    };
    let body = match event.body.as_deref() {
        None => Bytes::new(),
        Some(text) if event.is_base64_encoded => Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(|e| Refusal::BodyNotBase64(e.to_string()))?,
        ),
        Some(text) => Bytes::from(text.to_owned()),
    };
    let request = ApiRequest {
        method: event.http_method.as_str().to_string(),
        path: api_path(event, route),
        query: query(event),
        headers: headers(event),
        body,
        verified_principal,
        base_url: base_url(event),
    };
    Ok((route, request))
}

/// The stack's URL as the caller reached it: `https://`, the domain API
/// Gateway names, and what comes before the event's path in the request
/// context's (the stage, `/Prod`, on the default domain).
fn base_url(event: &ApiGatewayProxyRequest) -> Option<String> {
    let domain = event.request_context.domain_name.as_deref()?;
    let stage = match (event.request_context.path.as_deref(), event.path.as_deref()) {
        (Some(full), Some(path)) => full.strip_suffix(path).unwrap_or_default(),
        _ => "",
    };
    Some(format!("https://{domain}{stage}"))
}

/// The path from `/api/v1/…`: the event's path (behind a custom domain it
/// starts with the base path mapping) from the route's prefix on, without
/// the IAM route's `/iam`. Without a path, the resource's prefix and the
/// `proxy` parameter.
fn api_path(event: &ApiGatewayProxyRequest, route: Route) -> String {
    let prefix = match route {
        Route::Bearer => PREFIX.to_string(),
        Route::Iam => format!("{IAM_PREFIX}{PREFIX}"),
        Route::Portal => return page_path(event, hookbox::management::portal::PORTAL_PREFIX),
        Route::Admin => return page_path(event, hookbox::management::operator::ADMIN_PREFIX),
    };
    if let Some(path) = event.path.as_deref() {
        if let Some(at) = path.find(&prefix) {
            return format!("{PREFIX}{}", &path[at + prefix.len()..]);
        }
    }
    let proxy = event
        .path_parameters
        .get("proxy")
        .map(String::as_str)
        .unwrap_or_default();
    format!("{PREFIX}{proxy}")
}

/// The path from a page's `prefix` (`/portal`, `/admin`) on (behind a
/// custom domain the event's path starts with the base path mapping).
fn page_path(event: &ApiGatewayProxyRequest, prefix: &str) -> String {
    if let Some(path) = event.path.as_deref() {
        if let Some(at) = path.find(prefix) {
            return path[at..].to_string();
        }
    }
    match event.path_parameters.get("proxy") {
        Some(proxy) => format!("{prefix}/{proxy}"),
        None => prefix.to_string(),
    }
}

/// The query parameters, decoded by API Gateway; of a repeated one, the
/// last (as `queryStringParameters` holds it).
fn query(event: &ApiGatewayProxyRequest) -> BTreeMap<String, String> {
    let mut query = BTreeMap::new();
    for source in [
        &event.multi_value_query_string_parameters,
        &event.query_string_parameters,
    ] {
        for (name, value) in source.iter() {
            query.insert(name.to_string(), value.to_string());
        }
    }
    query
}

/// The headers, names in lower case (the `http` crate's), a repeated one
/// joined with `, `; values that are not text are left out.
fn headers(event: &ApiGatewayProxyRequest) -> BTreeMap<String, String> {
    let source = if event.multi_value_headers.is_empty() {
        &event.headers
    } else {
        &event.multi_value_headers
    };
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for name in source.keys() {
        let values: Vec<&str> = source
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if !values.is_empty() {
            headers.insert(name.as_str().to_ascii_lowercase(), values.join(", "));
        }
    }
    // single-value headers the multi-value map lacks (hand-made events)
    for (name, value) in event.headers.iter() {
        if let Ok(v) = value.to_str() {
            headers
                .entry(name.as_str().to_ascii_lowercase())
                .or_insert_with(|| v.to_string());
        }
    }
    headers
}

/// The proxy response of `answer`: its status and headers, its body as
/// text (JSON), or base64 when it is not UTF-8.
pub fn response(answer: ApiResponse) -> ApiGatewayProxyResponse {
    let mut headers = HeaderMap::new();
    for (name, value) in &answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = i64::from(answer.status);
    response.headers = headers;
    if !answer.body.is_empty() {
        match std::str::from_utf8(&answer.body) {
            Ok(text) => response.body = Some(Body::Text(text.to_string())),
            Err(_) => {
                response.body = Some(Body::Text(
                    base64::engine::general_purpose::STANDARD.encode(&answer.body),
                ));
                response.is_base64_encoded = true;
            }
        }
    }
    response
}
