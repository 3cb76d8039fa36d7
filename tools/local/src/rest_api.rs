//! The REST API's events: the REQUEST-authorizer event and the REST (v1)
//! proxy event AWS would send (binary media type `*/*`, so the body arrives
//! base64-encoded, byte for byte), and the proxy response as HTTP.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayProxyRequest, ApiGatewayProxyResponse,
};
use aws_lambda_events::encodings::Body as ApiBody;
use aws_lambda_events::iam::IamPolicyEffect;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::ingress::{Call, Gateway, gateway_error};

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

/// One call through the REST API.
pub(crate) async fn webhook(gateway: &Gateway, call: Call) -> Response {
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
        // what API Gateway answers for a Deny policy: the stack's
        // ACCESS_DENIED gateway response, filled from the Deny's context
        return (
            StatusCode::FORBIDDEN,
            [("content-type", "application/json")],
            hookbox_authorizer::rest_deny_body(&decision.context),
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
