//! The authorizer's one request type, read from either API Gateway event:
//! REST's REQUEST authorizer event, or HTTP API's (payload format 2.0,
//! simple responses). Every check reads this, never an event, so none
//! differs by ingress.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayV2CustomAuthorizerV2Request,
};
use aws_lambda_events::http::{HeaderMap, Method};
use hookbox::signature::Headers;
use hookbox::signature::joined::{is_visible_line, join_visible_values, visible_header_lines};

/// Which API Gateway sent the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// REST API (payload format 1.0, IAM policy answers).
    Rest,
    /// HTTP API (payload format 2.0, simple answers).
    Http,
}

impl Ingress {
    /// The ingress of an authorizer event's JSON: HTTP API's payload 2.0
    /// says `"version": "2.0"`, and names the route (`routeArn`) where REST
    /// names the method (`methodArn`).
    pub fn of(event: &serde_json::Value) -> Self {
        let version_2 = event.get("version").and_then(serde_json::Value::as_str) == Some("2.0");
        let route_only = event.get("routeArn").is_some() && event.get("methodArn").is_none();
        if version_2 || route_only {
            Self::Http
        } else {
            Self::Rest
        }
    }
}

/// One request to authorize, whichever API Gateway sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRequest {
    /// Which API Gateway.
    pub ingress: Ingress,
    /// The method; `None` when the event does not name one (a hand-built
    /// REST event: taken as POST, the strict case).
    pub method: Option<Method>,
    /// The `{partner}` path segment.
    pub partner: String,
    /// The caller's address as API Gateway saw the connection (REST:
    /// `requestContext.identity.sourceIp`; HTTP API:
    /// `requestContext.http.sourceIp`), never a header.
    pub source_ip: Option<String>,
    /// Every header, lines that are not visible ASCII left out. REST: each
    /// line whole (a list header's lines joined: [`visible_header_lines`]);
    /// HTTP API: once per name, its lines joined with commas, split back
    /// by each header's rule where a check needs one value.
    pub headers: Vec<(String, String)>,
    /// Every query parameter, decoded, in the order sent.
    pub query: Vec<(String, String)>,
    /// The ARN the answer is about (`methodArn`, `routeArn`).
    pub arn: Option<String>,
}

impl AuthRequest {
    /// The request of a REST REQUEST-authorizer event.
    pub fn from_rest(event: &ApiGatewayCustomAuthorizerRequestTypeRequest) -> Self {
        Self {
            ingress: Ingress::Rest,
            method: event.http_method.clone(),
            partner: event
                .path_parameters
                .get("partner")
                .cloned()
                .unwrap_or_default(),
            source_ip: event
                .request_context
                .identity
                .as_ref()
                .and_then(|i| i.source_ip.clone()),
            headers: rest_headers(&event.headers, &event.multi_value_headers),
            query: rest_query(event),
            arn: event.method_arn.clone(),
        }
    }

    /// The request of an HTTP API (payload 2.0) authorizer event.
    pub fn from_http(event: &ApiGatewayV2CustomAuthorizerV2Request) -> Self {
        let mut headers = http_headers(&event.headers);
        if !event.cookies.is_empty() && !headers.iter().any(|(n, _)| n == "cookie") {
            // HTTP API moves the Cookie header to `cookies`
            let cookie = event.cookies.join("; ");
            if is_visible_line(&cookie) {
                headers.push(("cookie".into(), cookie));
            }
        }
        Self {
            ingress: Ingress::Http,
            method: Some(event.request_context.http.method.clone()),
            partner: event
                .path_parameters
                .get("partner")
                .cloned()
                .unwrap_or_default(),
            source_ip: event.request_context.http.source_ip.clone(),
            headers,
            query: http_query(
                event.raw_query_string.as_deref(),
                event
                    .query_string_parameters
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ),
            arn: event.route_arn.clone(),
        }
    }

    /// The headers, for the checks.
    pub fn headers(&self) -> Headers<'_> {
        let pairs = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        match self.ingress {
            Ingress::Rest => Headers::from_pairs(pairs),
            Ingress::Http => Headers::from_joined(pairs, hookbox::signature::joined::comma_rule),
        }
    }

    /// The query parameters, for the checks.
    pub fn query_pairs(&self) -> Vec<(&str, &str)> {
        self.query
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

/// REST's headers: every line of `headers` (the last of each) and of
/// `multiValueHeaders` (all of them), each once and whole
/// ([`visible_header_lines`]).
fn rest_headers(single: &HeaderMap, multi: &HeaderMap) -> Vec<(String, String)> {
    visible_header_lines(
        single
            .iter()
            .chain(multi.iter())
            .map(|(n, v)| (n.as_str(), v.as_bytes())),
    )
}

/// HTTP API's headers: each value the lines joined with commas already
/// ([`join_visible_values`]).
fn http_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    join_visible_values(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
}

/// REST's query parameters: every value (API Gateway puts only the last in
/// `queryStringParameters`).
fn rest_query(event: &ApiGatewayCustomAuthorizerRequestTypeRequest) -> Vec<(String, String)> {
    let multi = &event.multi_value_query_string_parameters;
    let source = if multi.is_empty() {
        &event.query_string_parameters
    } else {
        multi
    };
    source
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// HTTP API's query parameters: decoded from `rawQueryString`, every
/// value in order (`queryStringParameters` joins repeated ones with
/// commas, which a value may hold too); the map only when there is no raw
/// string (a hand-built event).
fn http_query<'a>(
    raw: Option<&str>,
    map: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    match raw.filter(|r| !r.is_empty()) {
        Some(raw) => form_urlencoded::parse(raw.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        None => map.map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
    }
}

/// The REST authorizer event from the JSON the Lambda runtime received,
/// without the header values the `http` crate refuses (a control
/// character such as U+0000): otherwise the whole event fails to
/// deserialize and API Gateway answers 500 to a correctly signed webhook.
/// The names dropped are logged.
pub fn event_from_json(
    json: serde_json::Value,
) -> Result<ApiGatewayCustomAuthorizerRequestTypeRequest, serde_json::Error> {
    hookbox::signature::event_without_unusable_headers(json, false)
}

/// [`event_from_json`] for HTTP API's authorizer event: a joined value
/// loses only its lines the `http` crate refuses.
pub fn http_event_from_json(
    json: serde_json::Value,
) -> Result<ApiGatewayV2CustomAuthorizerV2Request, serde_json::Error> {
    hookbox::signature::event_without_unusable_headers(json, true)
}
