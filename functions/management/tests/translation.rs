//! The proxy events of `events/` to the management API's requests and its
//! answers back: which route trusts an identity, base64 bodies, query
//! strings, headers in any case, the `/iam` prefix.

use aws_lambda_events::apigw::ApiGatewayProxyRequest;
use aws_lambda_events::encodings::Body;
use bytes::Bytes;
use hookbox::management::ApiResponse;
use hookbox_management::event::{self, Refusal, Route};
use hookbox_management::event_from_json;
use hookbox_testkit::smoke;

const CALLER: &str = "arn:aws:sts::123456789012:assumed-role/hookbox-operator/alice";

fn sample(name: &str) -> ApiGatewayProxyRequest {
    event_from_json(smoke::event(name)).expect("a proxy event")
}

#[test]
fn the_bearer_route_never_takes_an_identity_from_the_event_or_its_headers() {
    let event = sample("apigw-management-spoofed-identity.json");
    assert_eq!(
        event.request_context.identity.user_arn.as_deref(),
        Some(CALLER),
        "the sample carries a spoofed identity"
    );
    let (route, request) = event::request(&event).expect("a request");
    assert_eq!(route, Route::Bearer);
    assert_eq!(request.verified_principal, None);
    assert_eq!(request.header("x-hookbox-principal"), Some(CALLER));
    assert_eq!(request.header("authorization"), None);
}

#[test]
fn an_unknown_resource_is_treated_as_the_bearer_route() {
    let mut json = smoke::event("apigw-management-iam.json");
    json["resource"] = "/iam/api/v1/{other+}".into();
    json["requestContext"]["resourcePath"] = "/iam/api/v1/{other+}".into();
    let (route, request) = event::request(&event_from_json(json).expect("event")).expect("request");
    assert_eq!(route, Route::Bearer);
    assert_eq!(request.verified_principal, None);
}

#[test]
fn the_iam_route_passes_the_verified_caller_and_strips_its_prefix() {
    let (route, request) = event::request(&sample("apigw-management-iam.json")).expect("a request");
    assert_eq!(route, Route::Iam);
    assert_eq!(request.verified_principal.as_deref(), Some(CALLER));
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/api/v1/app/");
    assert_eq!(
        request.body,
        Bytes::from_static(br#"{"name":"Acme Inc","uid":"acme"}"#),
        "the base64 body decoded"
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
}

#[test]
fn the_iam_route_without_an_identity_is_refused_not_served_as_bearer() {
    let mut json = smoke::event("apigw-management-iam.json");
    json["requestContext"]["identity"]["userArn"] = serde_json::Value::Null;
    json["headers"]["Authorization"] = "Bearer hookbox-sample-token-not-a-secret".into();
    json["multiValueHeaders"]["Authorization"] =
        serde_json::json!(["Bearer hookbox-sample-token-not-a-secret"]);
    let refused = event::request(&event_from_json(json).expect("event")).expect_err("refused");
    assert_eq!(refused, Refusal::NoVerifiedIdentity);
    let answer = refused.response();
    assert_eq!(answer.status, 403);
    assert_eq!(answer.body_json()["code"], "authentication_failed");
}

#[test]
fn query_strings_and_headers_of_any_case_arrive_decoded_and_lower_case() {
    let mut json = smoke::event("apigw-management-bearer.json");
    json["headers"] = serde_json::json!({
        "AUTHORIZATION": "Bearer t0ken",
        "X-Idempotency-KEY": "key-1",
        "Accept": "application/json",
    });
    json["multiValueHeaders"] = serde_json::json!({
        "AUTHORIZATION": ["Bearer t0ken"],
        "X-Idempotency-KEY": ["key-1"],
        "Accept": ["application/json", "text/plain"],
    });
    json["queryStringParameters"] = serde_json::json!({"iterator": "app_2 x", "limit": "5"});
    json["multiValueQueryStringParameters"] =
        serde_json::json!({"iterator": ["app_2 x"], "limit": ["1", "5"]});
    let (_, request) = event::request(&event_from_json(json).expect("event")).expect("request");
    assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(request.header("x-idempotency-key"), Some("key-1"));
    assert_eq!(
        request.header("accept"),
        Some("application/json, text/plain")
    );
    assert!(request.headers.keys().all(|k| *k == k.to_ascii_lowercase()));
    assert_eq!(
        request.query.get("iterator").map(String::as_str),
        Some("app_2 x")
    );
    assert_eq!(request.query.get("limit").map(String::as_str), Some("5"));
    assert_eq!(request.path, "/api/v1/app");
    assert_eq!(request.method, "GET");
    assert!(request.body.is_empty());
}

#[test]
fn the_sample_query_is_taken_as_is() {
    let (_, request) = event::request(&sample("apigw-management-bearer.json")).expect("request");
    assert_eq!(request.query.len(), 2);
    assert_eq!(request.query["limit"], "2");
    assert_eq!(request.query["order"], "ascending");
}

#[test]
fn a_body_marked_base64_that_is_not_is_a_400() {
    let mut json = smoke::event("apigw-management-iam.json");
    json["body"] = "{not base64}".into();
    let refused = event::request(&event_from_json(json).expect("event")).expect_err("refused");
    assert!(matches!(refused, Refusal::BodyNotBase64(_)), "{refused:?}");
    let answer = refused.response();
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body_json()["code"], "bad_request");
}

#[test]
fn a_plain_body_is_taken_as_it_is() {
    let mut json = smoke::event("apigw-management-iam.json");
    json["body"] = r#"{"name":"Plain"}"#.into();
    json["isBase64Encoded"] = false.into();
    let (_, request) = event::request(&event_from_json(json).expect("event")).expect("request");
    assert_eq!(request.body, Bytes::from_static(br#"{"name":"Plain"}"#));
}

#[test]
fn behind_a_custom_domain_the_base_path_is_dropped() {
    let mut json = smoke::event("apigw-management-iam.json");
    json["path"] = "/hooks/iam/api/v1/app/app_1/endpoint".into();
    let (_, request) = event::request(&event_from_json(json).expect("event")).expect("request");
    assert_eq!(request.path, "/api/v1/app/app_1/endpoint");
    // no path at all: the proxy parameter
    let mut json = smoke::event("apigw-management-bearer.json");
    json["path"] = serde_json::Value::Null;
    json["pathParameters"]["proxy"] = "app/app_1".into();
    let (_, request) = event::request(&event_from_json(json).expect("event")).expect("request");
    assert_eq!(request.path, "/api/v1/app/app_1");
}

#[test]
fn an_answer_becomes_the_proxy_response_with_its_status_headers_and_body() {
    let answer = ApiResponse::json(201, &serde_json::json!({"id": "app_1"}));
    let response = event::response(answer);
    assert_eq!(response.status_code, 201);
    assert_eq!(
        response
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    assert!(!response.is_base64_encoded);
    assert!(
        matches!(&response.body, Some(Body::Text(t)) if t == r#"{"id":"app_1"}"#),
        "{:?}",
        response.body
    );
    let empty = event::response(ApiResponse::empty(204));
    assert_eq!(empty.status_code, 204);
    assert!(empty.body.is_none());
    // bytes that are not UTF-8 travel base64-encoded
    let binary = event::response(ApiResponse {
        status: 200,
        headers: vec![],
        body: Bytes::from_static(&[0xff, 0x00, 0xfe]),
    });
    assert!(binary.is_base64_encoded);
    assert!(matches!(&binary.body, Some(Body::Text(t)) if t == "/wD+"));
    // and the whole response serializes as API Gateway reads it
    let json = serde_json::to_value(&response).expect("serialize");
    assert_eq!(json["statusCode"], 201);
    assert_eq!(json["isBase64Encoded"], false);
}
