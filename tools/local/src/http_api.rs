//! The HTTP API in front of the functions, locally (`--ingress http`): each
//! HTTP request becomes the authorizer event (payload format 2.0, simple
//! responses) and the proxy event (payload format 2.0) that API Gateway's
//! HTTP API sends, as AWS documents them:
//! - header names lower-case, a header sent on several lines one value,
//!   the lines joined with `,`; the Cookie header in `cookies`, one entry
//!   per cookie; the caller's address appended to `x-forwarded-for`;
//! - `rawQueryString` as sent, and `queryStringParameters` decoded, a
//!   repeated parameter's values joined with `,`;
//! - a body whose Content-Type is `text/*`, `application/json`,
//!   `application/javascript` or `application/xml` as a string
//!   (`isBase64Encoded: false`), any other base64. What AWS does with such
//!   a text body that is not UTF-8 is undocumented: this stack replaces
//!   the bytes that are not with U+FFFD (`String::from_utf8_lossy`), the
//!   case ingest's `invalid_signature_body_altered` names;
//! - the `$default` stage: `rawPath` is the path as requested.
//!
//! A Deny is HTTP API's `403 {"message":"Forbidden"}`.

use std::collections::BTreeMap;

use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use aws_lambda_events::encodings::Body as ApiBody;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use hookbox_ingest::http_api_passes_as_text;

use crate::ingress::{Call, Gateway, gateway_error};

const STAGE: &str = "$default";

/// `body` and `isBase64Encoded` as HTTP API sets them.
pub fn body_fields(content_type: Option<&str>, body: &[u8]) -> (Value, bool) {
    if body.is_empty() {
        (Value::Null, false)
    } else if http_api_passes_as_text(content_type) {
        (json!(String::from_utf8_lossy(body)), false)
    } else {
        (
            json!(base64::engine::general_purpose::STANDARD.encode(body)),
            true,
        )
    }
}

/// `headers` (lines joined with `,` per lower-case name) and `cookies`.
pub fn header_fields(headers: &HeaderMap, source_ip: &str) -> (Map<String, Value>, Vec<String>) {
    let mut joined: BTreeMap<String, String> = BTreeMap::new();
    let mut cookies = Vec::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        let name = name.as_str().to_ascii_lowercase();
        if name == "cookie" {
            cookies.extend(
                value
                    .split(';')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            );
            continue;
        }
        joined
            .entry(name)
            .and_modify(|v| {
                v.push(',');
                v.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    // API Gateway appends the caller's address to X-Forwarded-For
    let forwarded = match joined.get("x-forwarded-for") {
        Some(existing) => format!("{existing}, {source_ip}"),
        None => source_ip.to_string(),
    };
    joined.insert("x-forwarded-for".into(), forwarded);
    let map = joined.into_iter().map(|(n, v)| (n, json!(v))).collect();
    (map, cookies)
}

/// `queryStringParameters`: decoded, a repeated parameter's values joined
/// with `,`; `None` without a query.
pub fn query_parameters(raw: Option<&str>) -> Option<Map<String, Value>> {
    let raw = raw?;
    let mut joined: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
        joined
            .entry(k.into_owned())
            .and_modify(|existing| {
                existing.push(',');
                existing.push_str(&v);
            })
            .or_insert_with(|| v.into_owned());
    }
    Some(joined.into_iter().map(|(k, v)| (k, json!(v))).collect())
}

/// One call through the HTTP API: the authorizer, then (when it allows)
/// ingest.
pub(crate) async fn webhook(gateway: &Gateway, call: Call) -> Response {
    let now = gateway.clock.now();
    let method = call.method.as_str();
    let route_key = format!("{method} /webhooks/{{partner}}");
    let path = call.uri.path().to_string();
    let raw_query = call.uri.query().unwrap_or_default().to_string();
    let (headers, cookies) = header_fields(&call.headers, &call.source_ip);
    let header = |name: &str| headers.get(name).and_then(Value::as_str).map(str::to_owned);
    let content_type = header("content-type").map(|v| v.split(',').next().unwrap_or("").to_owned());
    let mut context = json!({
        "accountId": "000000000000",
        "apiId": "local",
        "domainName": header("host").unwrap_or_else(|| "localhost".into()),
        "domainPrefix": "local",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": call.source_ip,
            "userAgent": header("user-agent").unwrap_or_default(),
        },
        "requestId": uuid::Uuid::new_v4().to_string(),
        "routeKey": route_key,
        "stage": STAGE,
        "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
        "timeEpoch": now.timestamp_millis(),
    });
    let query = query_parameters(call.uri.query());
    let mut auth_event = json!({
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": format!(
            "arn:aws:execute-api:local:000000000000:local/{STAGE}/{method}/webhooks/{}",
            call.partner
        ),
        "identitySource": [],
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "cookies": cookies,
        "headers": headers,
        "pathParameters": { "partner": call.partner },
        "stageVariables": {},
        "requestContext": context,
    });
    if let Some(query) = &query {
        auth_event["queryStringParameters"] = Value::Object(query.clone());
    }
    let auth_event = match hookbox_authorizer::http_event_from_json(auth_event) {
        Ok(e) => e,
        Err(e) => return gateway_error(&format!("cannot build the authorizer event: {e}")),
    };
    let decision = gateway.authorizer.handle_http(auth_event).await;
    if !decision.is_authorized {
        // what HTTP API answers when a simple-response authorizer says no
        return (
            StatusCode::FORBIDDEN,
            [("content-type", "application/json")],
            json!({ "message": "Forbidden" }).to_string(),
        )
            .into_response();
    }
    context["authorizer"] = json!({ "lambda": decision.context });
    let (body, is_base64) = body_fields(content_type.as_deref(), &call.body);
    let mut proxy_event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": headers,
        "pathParameters": { "partner": call.partner },
        "requestContext": context,
        "isBase64Encoded": is_base64,
    });
    if !cookies.is_empty() {
        proxy_event["cookies"] = json!(cookies);
    }
    if let Some(query) = query {
        proxy_event["queryStringParameters"] = Value::Object(query);
    }
    if !body.is_null() {
        proxy_event["body"] = body;
    }
    let proxy_event = match hookbox_ingest::http_event_from_json(proxy_event) {
        Ok(e) => e,
        Err(e) => return gateway_error(&format!("cannot build the proxy event: {e}")),
    };
    response(gateway.ingest.handle_http(proxy_event).await)
}

/// The HTTP answer of a payload 2.0 response: status, headers, each of
/// `cookies` a `set-cookie`, the body (decoded when base64).
fn response(r: ApiGatewayV2httpResponse) -> Response {
    let status = u16::try_from(r.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::BAD_GATEWAY);
    let body = match r.body {
        Some(ApiBody::Text(text)) if r.is_base64_encoded => {
            match base64::engine::general_purpose::STANDARD.decode(text.as_bytes()) {
                Ok(bytes) => Body::from(bytes),
                Err(e) => return gateway_error(&format!("a base64 body that is not: {e}")),
            }
        }
        Some(ApiBody::Text(text)) => Body::from(text),
        Some(ApiBody::Binary(bytes)) => Body::from(bytes),
        _ => Body::empty(),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    for (name, value) in &r.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    for cookie in &r.cookies {
        if let Ok(value) = HeaderValue::from_str(cookie) {
            response.headers_mut().append("set-cookie", value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_content_types_are_strings_and_the_rest_base64() {
        for text in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "text/plain",
            "text/csv;charset=iso-8859-1",
            "application/xml",
            "application/javascript",
        ] {
            assert!(http_api_passes_as_text(Some(text)), "{text}");
        }
        for binary in [
            "application/octet-stream",
            "application/x-www-form-urlencoded",
            "application/cloudevents+json",
            "image/png",
        ] {
            assert!(!http_api_passes_as_text(Some(binary)), "{binary}");
        }
        assert!(!http_api_passes_as_text(None));
        assert_eq!(
            body_fields(Some("application/json"), b"{\"a\":1}"),
            (json!("{\"a\":1}"), false)
        );
        assert_eq!(
            body_fields(Some("application/json"), b"\xff{}"),
            (json!("\u{FFFD}{}"), false)
        );
        assert_eq!(
            body_fields(Some("application/octet-stream"), b"\xff"),
            (json!("/w=="), true)
        );
        assert_eq!(body_fields(None, b""), (Value::Null, false));
    }

    #[test]
    fn repeated_headers_join_and_cookies_move_out() {
        let mut headers = HeaderMap::new();
        headers.append("Webhook-Signature", HeaderValue::from_static("v1,AAAA"));
        headers.append("webhook-signature", HeaderValue::from_static("v1,BBBB"));
        headers.append("cookie", HeaderValue::from_static("a=1; b=2"));
        headers.append("cookie", HeaderValue::from_static("c=3"));
        let (map, cookies) = header_fields(&headers, "127.0.0.1");
        assert_eq!(map["webhook-signature"], "v1,AAAA,v1,BBBB");
        assert_eq!(map["x-forwarded-for"], "127.0.0.1");
        assert!(map.get("cookie").is_none());
        assert_eq!(cookies, ["a=1", "b=2", "c=3"]);
    }

    #[test]
    fn repeated_query_values_join_and_the_raw_string_stays() {
        let query = query_parameters(Some("a=1&b=x%20y&b=z+w&flag")).expect("a query");
        assert_eq!(
            Value::Object(query),
            json!({ "a": "1", "b": "x y,z w", "flag": "" })
        );
        assert!(query_parameters(None).is_none());
    }
}
