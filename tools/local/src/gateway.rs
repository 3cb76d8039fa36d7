//! The API Gateway in front of the functions, locally: each HTTP request
//! becomes the events the chosen ingress sends ([`Ingress`]), the
//! authorizer decides, ingest answers. REST (the default): the
//! REQUEST-authorizer event and the REST (v1) proxy event AWS would send
//! (binary media type `*/*`, so the body arrives base64-encoded, byte for
//! byte). HTTP API: the payload 2.0 events, built in `http_api.rs`.

use std::net::SocketAddr;
use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayProxyRequest, ApiGatewayProxyResponse,
};
use aws_lambda_events::encodings::Body as ApiBody;
use aws_lambda_events::iam::IamPolicyEffect;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hookbox::clock::Clock;
use hookbox_authorizer::Authorizer;
use hookbox_ingest::IngestFunction;
use serde_json::{Map, Value, json};

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

const STAGE: &str = "local";
const RESOURCE: &str = "/webhooks/{partner}";

fn header_maps(headers: &HeaderMap, source_ip: &str) -> (Value, Value) {
    let mut single = Map::new();
    let mut multi: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        single.insert(name.as_str().to_string(), json!(value));
        if let Some(values) = multi
            .entry(name.as_str().to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            values.push(json!(value));
        }
    }
    // API Gateway appends the caller's address to X-Forwarded-For
    let forwarded = match headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        Some(existing) => format!("{existing}, {source_ip}"),
        None => source_ip.to_string(),
    };
    single.insert("x-forwarded-for".into(), json!(forwarded));
    multi.insert("x-forwarded-for".into(), json!([forwarded]));
    (Value::Object(single), Value::Object(multi))
}

fn query_maps(uri: &Uri) -> (Value, Value) {
    let Some(query) = uri.query() else {
        return (Value::Null, Value::Null);
    };
    let mut single = Map::new();
    let mut multi: Map<String, Value> = Map::new();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        single.insert(k.to_string(), json!(v));
        if let Some(values) = multi
            .entry(k.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            values.push(json!(v));
        }
    }
    (Value::Object(single), Value::Object(multi))
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

/// `POST /webhooks/{partner}`, and `GET` for the providers' handshakes
/// (the template routes both methods to the same authorizer and ingest).
pub async fn webhook(
    State(gateway): State<Arc<Gateway>>,
    method: Method,
    Path(partner): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = Call {
        method,
        partner,
        source_ip: peer.ip().to_string(),
        uri,
        headers,
        body,
    };
    match gateway.ingress {
        Ingress::Rest => rest(&gateway, call).await,
        Ingress::Http => crate::http_api::webhook(&gateway, call).await,
    }
}

/// One call through the REST API.
async fn rest(gateway: &Gateway, call: Call) -> Response {
    let Call {
        method,
        partner,
        source_ip,
        uri,
        headers,
        body,
    } = call;
    let now = gateway.clock.now();
    let request_id = uuid::Uuid::new_v4().to_string();
    let path = format!("/webhooks/{partner}");
    let (single, multi) = header_maps(&headers, &source_ip);
    let (query, multi_query) = query_maps(&uri);
    let user_agent = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let context = json!({
        "accountId": "000000000000",
        "apiId": "local",
        "resourceId": "local",
        "stage": STAGE,
        "resourcePath": RESOURCE,
        "path": format!("/{STAGE}{path}"),
        "httpMethod": method.as_str(),
        "requestId": request_id,
        "requestTimeEpoch": now.timestamp_millis(),
        "identity": { "sourceIp": source_ip, "userAgent": user_agent },
    });
    let auth_event = json!({
        "type": "REQUEST",
        "methodArn": format!("arn:aws:execute-api:local:000000000000:local/{STAGE}/{method}{path}"),
        "resource": RESOURCE,
        "path": path,
        "httpMethod": method.as_str(),
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": if query.is_null() { json!({}) } else { query.clone() },
        "multiValueQueryStringParameters": if multi_query.is_null() { json!({}) } else { multi_query.clone() },
        "pathParameters": { "partner": partner },
        "stageVariables": {},
        "requestContext": context,
    });
    let auth_event: ApiGatewayCustomAuthorizerRequestTypeRequest =
        match serde_json::from_value(auth_event) {
            Ok(e) => e,
            Err(e) => return gateway_error(&format!("cannot build the authorizer event: {e}")),
        };
    let decision = gateway.authorizer.handle(auth_event).await;
    let allowed = decision
        .policy_document
        .statement
        .first()
        .is_some_and(|s| s.effect == IamPolicyEffect::Allow);
    if !allowed {
        // what API Gateway answers for a Deny policy
        return (
            StatusCode::FORBIDDEN,
            [("content-type", "application/json")],
            json!({ "Message": "User is not authorized to access this resource with an explicit deny" })
                .to_string(),
        )
            .into_response();
    }
    let mut context = context;
    context["authorizer"] = json!({
        "partner": decision.context.get("partner").cloned().unwrap_or(Value::Null),
        "principalId": decision.principal_id,
    });
    let proxy_event = json!({
        "resource": RESOURCE,
        "path": path,
        "httpMethod": method.as_str(),
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": { "partner": partner },
        "stageVariables": null,
        "requestContext": context,
        "body": base64::engine::general_purpose::STANDARD.encode(&body),
        "isBase64Encoded": true,
    });
    let proxy_event: ApiGatewayProxyRequest = match serde_json::from_value(proxy_event) {
        Ok(e) => e,
        Err(e) => return gateway_error(&format!("cannot build the proxy event: {e}")),
    };
    proxy_response(gateway.ingest.handle(proxy_event).await)
}

pub(crate) fn gateway_error(detail: &str) -> Response {
    tracing::error!(detail, "local gateway failure");
    (
        StatusCode::BAD_GATEWAY,
        [("content-type", "application/json")],
        json!({ "message": "Internal server error", "detail": detail }).to_string(),
    )
        .into_response()
}

fn proxy_response(r: ApiGatewayProxyResponse) -> Response {
    let status = u16::try_from(r.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::BAD_GATEWAY);
    let body = match r.body {
        Some(ApiBody::Text(text)) => Body::from(text),
        Some(ApiBody::Binary(bytes)) => Body::from(bytes),
        _ => Body::empty(),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    for (name, value) in r.headers.iter().chain(
        r.multi_value_headers
            .iter()
            .filter(|(n, _)| !r.headers.contains_key(*n)),
    ) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_are_decoded_like_api_gateway() {
        let uri: Uri = "/webhooks/demo?a=1&b=x%20y&b=z+w&flag"
            .parse()
            .expect("uri");
        let (single, multi) = query_maps(&uri);
        assert_eq!(single, json!({ "a": "1", "b": "z w", "flag": "" }));
        assert_eq!(multi["b"], json!(["x y", "z w"]));
        let (none, _) = query_maps(&"/webhooks/demo".parse().expect("uri"));
        assert_eq!(none, Value::Null);
    }
}
