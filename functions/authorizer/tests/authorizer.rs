//! The authorizer with the sample events in `events/`: Allow only for a
//! known partner, from an allowed source IP (API Gateway's view, not
//! X-Forwarded-For), with well-formed signature headers and a fresh
//! timestamp. Everything else is a Deny policy, never an error.

use std::sync::Arc;

use aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequestTypeRequest;
use aws_lambda_events::iam::IamPolicyEffect;
use chrono::TimeZone;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigSource, ConfigStore};
use hookbox_authorizer::{Authorizer, Decision, REST_DENY_MESSAGE, rest_deny_body};

const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
/// The time the sample events were signed at (events/generate.py).
const T: i64 = 1_780_000_000;

async fn authorizer() -> Authorizer {
    let clock = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let config = ConfigStore::load(
        ConfigSource::File(format!("{EVENTS}/partners-test.json").into()),
        None,
        clock.clone(),
    )
    .await
    .expect("config");
    Authorizer::new(Arc::new(config), clock)
}

fn event(name: &str) -> ApiGatewayCustomAuthorizerRequestTypeRequest {
    let path = format!("{EVENTS}/{name}");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn a_known_partner_from_an_allowed_address_with_fresh_headers_is_allowed() {
    let a = authorizer().await;
    let e = event("apigw-authorizer-allow.json");
    let method_arn = e.method_arn.clone().expect("method arn");
    let response = a.handle(e).await;
    let statement = &response.policy_document.statement[0];
    assert_eq!(statement.effect, IamPolicyEffect::Allow);
    assert_eq!(statement.resource, vec![method_arn]);
    assert_eq!(statement.action, vec!["execute-api:Invoke".to_string()]);
    assert_eq!(response.context["partner"], "restricted");
    assert_eq!(response.principal_id.as_deref(), Some("restricted"));
}

#[tokio::test]
async fn every_other_case_is_denied_with_its_reason() {
    let a = authorizer().await;
    for (name, reason) in [
        ("apigw-authorizer-spoofed-ip.json", "source_ip_not_allowed"),
        ("apigw-authorizer-stale.json", "timestamp_too_old"),
        (
            "apigw-authorizer-missing-signature.json",
            "missing_signature_header",
        ),
        ("apigw-authorizer-unknown-partner.json", "unknown_partner"),
    ] {
        let e = event(name);
        assert_eq!(a.decide(&e).await.0, Decision::Deny(reason), "{name}");
        let response = a.handle(e).await;
        assert_eq!(
            response.policy_document.statement[0].effect,
            IamPolicyEffect::Deny,
            "{name}"
        );
        // the gateway response's body names the reason, as ingest's
        // refusals do; the context holds nothing else
        let keys: Vec<&String> = response.context.as_object().expect("map").keys().collect();
        assert_eq!(keys, ["detail", "reason"], "{name}");
        let body: serde_json::Value =
            serde_json::from_str(&rest_deny_body(&response.context)).expect("JSON");
        assert_eq!(body["error"], reason, "{name}");
        assert_eq!(body["message"], REST_DENY_MESSAGE, "{name}");
        let detail = body["detail"].as_str().expect("detail");
        assert!(detail.len() > 20, "{name}: {detail}");
    }
}

/// A Deny's detail says which check failed (here the method), as ingest's
/// refusals do.
#[tokio::test]
async fn a_denys_detail_says_which_check_failed() {
    let a = authorizer().await;
    let mut e = event("apigw-authorizer-allow.json");
    e.http_method = Some(aws_lambda_events::http::Method::from_bytes(b"PROPFIND").expect("method"));
    let response = a.handle(e).await;
    let body: serde_json::Value =
        serde_json::from_str(&rest_deny_body(&response.context)).expect("JSON");
    assert_eq!(body["error"], "method_not_allowed");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .starts_with("PROPFIND is not accepted: a webhook path takes POST"),
        "{body}"
    );
}

#[tokio::test]
async fn the_spoofed_request_differs_only_by_its_real_source_address() {
    let allowed = event("apigw-authorizer-allow.json");
    let spoofed = event("apigw-authorizer-spoofed-ip.json");
    assert_eq!(
        spoofed
            .headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok()),
        Some("203.0.113.10"),
        "the header claims an allowed address"
    );
    let ip = |e: &ApiGatewayCustomAuthorizerRequestTypeRequest| {
        e.request_context
            .identity
            .as_ref()
            .and_then(|i| i.source_ip.clone())
    };
    assert_eq!(ip(&allowed).as_deref(), Some("203.0.113.10"));
    assert_eq!(ip(&spoofed).as_deref(), Some("198.51.100.66"));
}

#[tokio::test]
async fn an_empty_or_odd_event_is_denied_not_an_error() {
    let a = authorizer().await;
    let response = a
        .handle(ApiGatewayCustomAuthorizerRequestTypeRequest::default())
        .await;
    assert_eq!(
        response.policy_document.statement[0].effect,
        IamPolicyEffect::Deny
    );
    assert_eq!(
        response.policy_document.statement[0].resource,
        vec!["*".to_string()]
    );
    let mut no_ip = event("apigw-authorizer-allow.json");
    no_ip.request_context.identity = None;
    assert_eq!(
        a.decide(&no_ip).await.0,
        Decision::Deny("source_ip_not_allowed")
    );
}

/// Issue #28, item 4: a GET carries no signature, so it is let through only
/// for a partner whose provider sends its handshake by GET, and only when
/// the handshake would be answered (Meta: one of its verify tokens, the
/// challenge bounded); a GET to any other partner, and any other method,
/// is denied.
#[tokio::test]
async fn a_get_is_allowed_only_as_the_handshake_of_a_provider_that_sends_one() {
    let clock = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let config = hookbox::config::HookboxConfig::parse(
        &serde_json::json!({"partners": {
            "meta": {"signature": {"scheme": "preset", "name": "meta"},
                     "secrets": ["app-secret"], "verify_tokens": ["old", "meatyhamhock"]},
            "dropbox": {"signature": {"scheme": "preset", "name": "dropbox"},
                        "secrets": ["app-secret"]},
            "office": {"signature": {"scheme": "preset", "name": "dropbox"},
                       "secrets": ["app-secret"], "allowed_cidrs": ["198.51.100.0/24"]},
            "stripe": {"signature": {"scheme": "stripe"}, "secrets": ["whsec_x"]},
        }})
        .to_string(),
        "test",
    )
    .expect("config");
    let a = Authorizer::new(Arc::new(ConfigStore::fixed(config, clock.clone())), clock);
    let get = |method: &str, partner: &str, query: &[(&str, &str)]| {
        let mut multi = serde_json::Map::new();
        for (k, v) in query {
            multi
                .entry(k.to_string())
                .or_insert_with(|| serde_json::json!([]))
                .as_array_mut()
                .expect("array")
                .push(serde_json::json!(v));
        }
        let mut e: serde_json::Value =
            serde_json::to_value(event("apigw-authorizer-allow.json")).expect("event");
        e["httpMethod"] = serde_json::json!(method);
        e["pathParameters"]["partner"] = serde_json::json!(partner);
        // a GET has no signature headers
        e["headers"] =
            serde_json::json!({"Host": "abc123defg.execute-api.eu-west-1.amazonaws.com"});
        e["multiValueHeaders"] = serde_json::json!({});
        e["queryStringParameters"] = serde_json::json!(
            query
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                .collect::<serde_json::Map<_, _>>()
        );
        e["multiValueQueryStringParameters"] = serde_json::Value::Object(multi);
        serde_json::from_value::<ApiGatewayCustomAuthorizerRequestTypeRequest>(e).expect("event")
    };
    let meta = [
        ("hub.mode", "subscribe"),
        ("hub.challenge", "1158201444"),
        ("hub.verify_token", "meatyhamhock"),
    ];
    let long = "c".repeat(1025);
    for (method, partner, query, decision) in [
        ("GET", "meta", &meta[..], Decision::Allow),
        (
            "GET",
            "dropbox",
            &[("challenge", "abc")][..],
            Decision::Allow,
        ),
        (
            "GET",
            "meta",
            &[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "guessed"),
            ][..],
            Decision::Deny("wrong_verify_token"),
        ),
        (
            "GET",
            "meta",
            &[
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "meatyhamhock"),
            ][..],
            Decision::Deny("bad_handshake"),
        ),
        (
            "GET",
            "dropbox",
            &[("challenge", long.as_str())][..],
            Decision::Deny("bad_handshake"),
        ),
        ("GET", "dropbox", &[][..], Decision::Deny("bad_handshake")),
        // its detail quotes "subscribe"
        (
            "GET",
            "meta",
            &[
                ("hub.mode", "unsubscribe"),
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "meatyhamhock"),
            ][..],
            Decision::Deny("bad_handshake"),
        ),
        // the partner's CIDRs apply to its handshake too
        (
            "GET",
            "office",
            &[("challenge", "abc")][..],
            Decision::Deny("source_ip_not_allowed"),
        ),
        (
            "GET",
            "stripe",
            &[("challenge", "abc")][..],
            Decision::Deny("method_not_allowed"),
        ),
        ("GET", "nobody", &[][..], Decision::Deny("unknown_partner")),
        (
            "PUT",
            "dropbox",
            &[("challenge", "abc")][..],
            Decision::Deny("method_not_allowed"),
        ),
        (
            "DELETE",
            "meta",
            &meta[..],
            Decision::Deny("method_not_allowed"),
        ),
    ] {
        let e = get(method, partner, query);
        assert_eq!(
            a.decide(&e).await.0,
            decision,
            "{method} {partner} {query:?}"
        );
        let response = a.handle(e).await;
        let effect = response.policy_document.statement[0].effect.clone();
        let allowed = decision == Decision::Allow;
        if let Decision::Deny(reason) = decision {
            // (the wrong hub.mode's detail quotes "subscribe": the body
            // stays JSON)
            let body: serde_json::Value =
                serde_json::from_str(&rest_deny_body(&response.context)).expect("JSON");
            assert_eq!(body["error"], reason, "{method} {partner}");
            if query.contains(&("hub.mode", "unsubscribe")) {
                assert_eq!(
                    body["detail"],
                    "Meta GET hub.challenge (verify token): hub.mode must be \"subscribe\"",
                    "{body}"
                );
            }
        }
        assert_eq!(
            effect == IamPolicyEffect::Allow,
            allowed,
            "{method} {partner}"
        );
    }
}

#[tokio::test]
async fn an_unsigned_post_passes_only_as_the_handshake_of_an_enrolling_partner() {
    let clock = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let key = hookbox::config::enroll::EnrollPrivateKey::generate()
        .public()
        .to_base64();
    let config = hookbox::config::HookboxConfig::parse(
        &serde_json::json!({"partners": {
            "asana": {"preset": "asana", "enroll_key": key},
            "asana-enrolled": {"preset": "asana", "secrets": ["asana-secret"]},
            "asana-office": {"preset": "asana", "enroll_key": key,
                             "allowed_cidrs": ["198.51.100.0/24"]},
            "github": {"preset": "github", "secrets": ["gh-secret"]},
        }})
        .to_string(),
        "test",
    )
    .expect("config");
    let a = Authorizer::new(Arc::new(ConfigStore::fixed(config, clock.clone())), clock);
    let post = |partner: &str, headers: &[(&str, &str)]| {
        let mut e: serde_json::Value =
            serde_json::to_value(event("apigw-authorizer-allow.json")).expect("event");
        e["httpMethod"] = serde_json::json!("POST");
        e["pathParameters"]["partner"] = serde_json::json!(partner);
        e["headers"] = serde_json::Value::Object(
            headers
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                .collect(),
        );
        e["multiValueHeaders"] = serde_json::json!({});
        serde_json::from_value::<ApiGatewayCustomAuthorizerRequestTypeRequest>(e).expect("event")
    };
    let secret = ("X-Hook-Secret", "b537207f20cbfa02357cf448134da559");
    for (partner, headers, decision) in [
        ("asana", &[secret][..], Decision::Allow),
        // not enrolling: the unsigned handshake is denied, nothing echoed
        (
            "asana-enrolled",
            &[secret][..],
            Decision::Deny("not_enrolling"),
        ),
        (
            "asana",
            &[("X-Hook-Secret", "two words")][..],
            Decision::Deny("bad_handshake"),
        ),
        // the partner's CIDRs apply to its handshake too
        (
            "asana-office",
            &[secret][..],
            Decision::Deny("source_ip_not_allowed"),
        ),
        // X-Hook-Secret means nothing to another provider
        (
            "github",
            &[secret][..],
            Decision::Deny("missing_signature_header"),
        ),
        // an event of the enrolling partner goes on to ingest (which answers
        // 401 no_secret_yet); one without a signature does not
        (
            "asana",
            &[(
                "X-Hook-Signature",
                "0eb9a12b79a295c1d785376a8bbef343d79f5b1d300d4b99e1862ab3d60e1f41",
            )][..],
            Decision::Allow,
        ),
        ("asana", &[][..], Decision::Deny("missing_signature_header")),
    ] {
        let e = post(partner, headers);
        assert_eq!(a.decide(&e).await.0, decision, "{partner} {headers:?}");
    }
}

/// The template's ACCESS_DENIED gateway response is the body the local
/// stack and these tests fill ([`REST_DENY_TEMPLATE`]).
#[test]
fn the_templates_access_denied_response_is_the_deny_body() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../infra/template.yaml");
    let template = std::fs::read_to_string(path).expect("template");
    let section = template
        .split_once("x-amazon-apigateway-gateway-responses:")
        .map(|(_, rest)| rest)
        .expect("the REST API's gateway responses");
    let access_denied = section
        .split_once("ACCESS_DENIED:")
        .map(|(_, rest)| rest)
        .expect("ACCESS_DENIED");
    let line = access_denied
        .lines()
        .find(|l| l.trim_start().starts_with("application/json:"))
        .expect("its JSON template");
    let value = line.trim_start()["application/json:".len()..].trim();
    assert_eq!(
        value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')),
        Some(hookbox_authorizer::REST_DENY_TEMPLATE)
    );
    assert!(access_denied.contains("statusCode: 403"));
}
