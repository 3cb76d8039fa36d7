//! Ingest's one request type, read from either API Gateway event: REST's
//! proxy event (payload 1.0) or HTTP API's (payload 2.0). Everything ingest
//! checks reads this, never an event, so no check differs by ingress.

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayV2httpRequest};
use aws_lambda_events::http::Method;
use base64::Engine as _;
use hookbox::signature::Headers;
use hookbox::signature::joined::{is_visible_line, join_visible_values, visible_header_lines};

/// Which API Gateway sent the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// REST API (payload format 1.0; the body base64 under the binary
    /// media type `*/*`, byte for byte).
    Rest,
    /// HTTP API (payload format 2.0; a text Content-Type's body as a
    /// string, any other base64).
    Http,
}

impl Ingress {
    /// The ingress of a proxy event's JSON: HTTP API's payload 2.0 says
    /// `"version": "2.0"` and describes the call in `requestContext.http`.
    pub fn of(event: &serde_json::Value) -> Self {
        let version_2 = event.get("version").and_then(serde_json::Value::as_str) == Some("2.0");
        let http = event
            .get("requestContext")
            .and_then(|c| c.get("http"))
            .is_some_and(serde_json::Value::is_object);
        if version_2 || (http && event.get("httpMethod").is_none()) {
            Self::Http
        } else {
            Self::Rest
        }
    }
}

/// True when API Gateway's HTTP API passes a body of this Content-Type as a
/// string (`isBase64Encoded: false`): `text/*`, `application/json`,
/// `application/javascript`, `application/xml` (the media type, any case,
/// parameters ignored). Any other body, or one without a Content-Type, it
/// passes base64. REST with the binary media type `*/*` passes every body
/// base64.
pub fn http_api_passes_as_text(content_type: Option<&str>) -> bool {
    let Some(content_type) = content_type else {
        return false;
    };
    let media = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media.starts_with("text/")
        || matches!(
            media.as_str(),
            "application/json" | "application/javascript" | "application/xml"
        )
}

/// One request to ingest, whichever API Gateway sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressRequest {
    /// Which API Gateway.
    pub ingress: Ingress,
    /// The method.
    pub method: Method,
    /// The `{partner}` path segment.
    pub partner: String,
    /// Every header, lines that are not visible ASCII left out. REST: each
    /// line whole (a list header's lines joined: [`visible_header_lines`]);
    /// HTTP API: once per name, its lines joined with commas, split back
    /// by each header's rule where a check needs one value.
    pub headers: Vec<(String, String)>,
    /// Every query parameter, decoded, in the order sent.
    pub query: Vec<(String, String)>,
    /// The request path with its stage, as API Gateway saw it.
    pub path: String,
    /// The body as the event carries it.
    pub body: Option<String>,
    /// Whether `body` is base64.
    pub is_base64_encoded: bool,
}

impl IngressRequest {
    /// The request of a REST proxy event.
    pub fn from_rest(event: &ApiGatewayProxyRequest) -> Self {
        let multi = &event.multi_value_query_string_parameters;
        let query = if multi.is_empty() {
            &event.query_string_parameters
        } else {
            multi
        };
        Self {
            ingress: Ingress::Rest,
            method: event.http_method.clone(),
            partner: event
                .path_parameters
                .get("partner")
                .cloned()
                .unwrap_or_default(),
            headers: visible_header_lines(
                event
                    .headers
                    .iter()
                    .chain(event.multi_value_headers.iter())
                    .map(|(n, v)| (n.as_str(), v.as_bytes())),
            ),
            query: query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            path: event
                .request_context
                .path
                .clone()
                .or_else(|| event.path.clone())
                .unwrap_or_else(|| "/".into()),
            body: event.body.clone(),
            is_base64_encoded: event.is_base64_encoded,
        }
    }

    /// The request of an HTTP API (payload 2.0) proxy event.
    pub fn from_http(event: &ApiGatewayV2httpRequest) -> Self {
        let mut headers = join_visible_values(
            event
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
        );
        let cookies = event.cookies.as_deref().unwrap_or_default();
        if !cookies.is_empty() && !headers.iter().any(|(n, _)| n == "cookie") {
            // HTTP API moves the Cookie header to `cookies`
            let cookie = cookies.join("; ");
            if is_visible_line(&cookie) {
                headers.push(("cookie".into(), cookie));
            }
        }
        let query = match event.raw_query_string.as_deref().filter(|r| !r.is_empty()) {
            // every value, in order (`queryStringParameters` joins repeated
            // ones with commas, which a value may hold too)
            Some(raw) => form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            None => event
                .query_string_parameters
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        Self {
            ingress: Ingress::Http,
            method: event.request_context.http.method.clone(),
            partner: event
                .path_parameters
                .get("partner")
                .cloned()
                .unwrap_or_default(),
            headers,
            query,
            path: event
                .raw_path
                .clone()
                .or_else(|| event.request_context.http.path.clone())
                .unwrap_or_else(|| "/".into()),
            body: event.body.clone(),
            is_base64_encoded: event.is_base64_encoded,
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

    /// The body's bytes: decoded from base64 when the event says so, else
    /// the string's UTF-8 bytes exactly.
    pub fn body_bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        let raw = self.body.as_deref().unwrap_or_default();
        if self.is_base64_encoded {
            base64::engine::general_purpose::STANDARD.decode(raw.as_bytes())
        } else {
            Ok(raw.as_bytes().to_vec())
        }
    }

    /// A body HTTP API passed as text that holds U+FFFD: the replacement
    /// character API Gateway may have put where the partner's bytes were
    /// not UTF-8 (undocumented), so the bytes signed may not be these.
    /// Never for REST, which passes the body base64, byte for byte.
    pub fn text_body_may_be_altered(&self) -> bool {
        self.ingress == Ingress::Http
            && !self.is_base64_encoded
            && self.body.as_deref().is_some_and(|b| b.contains('\u{FFFD}'))
    }

    /// The URL the partner called, as far as API Gateway tells: https, the
    /// Host header, the request path (with stage) and the query string
    /// (sorted: REST hands it over as a map). Partners whose scheme signs
    /// the URL behind a custom domain set `public_url` instead.
    pub fn url(&self) -> Option<String> {
        let host = self.headers().get("host")?;
        let mut query: Vec<&(String, String)> = self.query.iter().collect();
        query.sort();
        let mut url = format!("https://{host}{}", self.path);
        if !query.is_empty() {
            let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            url.push('?');
            url.push_str(&q.join("&"));
        }
        Some(url)
    }
}

/// The REST proxy event from the JSON the Lambda runtime received, without
/// the header values the `http` crate refuses (a control character such as
/// U+0000): otherwise the whole event fails to deserialize and API Gateway
/// answers 502 to a correctly signed webhook. The names dropped are logged.
pub fn event_from_json(
    json: serde_json::Value,
) -> Result<ApiGatewayProxyRequest, serde_json::Error> {
    hookbox::signature::event_without_unusable_headers(json, false)
}

/// [`event_from_json`] for HTTP API's proxy event: a joined value loses
/// only its lines the `http` crate refuses.
pub fn http_event_from_json(
    json: serde_json::Value,
) -> Result<ApiGatewayV2httpRequest, serde_json::Error> {
    hookbox::signature::event_without_unusable_headers(json, true)
}
