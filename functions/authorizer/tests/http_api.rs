//! Issue #44: the authorizer through API Gateway's HTTP API (payload 2.0,
//! simple responses) decides as through REST: the sample events' twins
//! (`events/httpapi-*.json`), the source address from
//! `requestContext.http.sourceIp`, the GET handshakes, the enrolling POST,
//! and a signature header sent on two lines (which HTTP API joins with a
//! comma) for every layout of signature header. One entry point answers
//! each ingress in its own shape.

use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayV2CustomAuthorizerV2Request,
};
use chrono::TimeZone;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigSource, ConfigStore, HookboxConfig};
use hookbox::signature::Secret;
use hookbox::signature::presets::{self, Outgoing, SigningKey};
use hookbox_authorizer::{AuthRequest, Authorizer, Decision, Ingress};
use serde_json::{Value, json};

const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
/// The time the sample events were signed at (events/generate.py).
const T: i64 = 1_780_000_000;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ))
}

fn read(name: &str) -> Value {
    let path = format!("{EVENTS}/{name}");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn with(config: Value) -> Authorizer {
    let clock = clock();
    let config = HookboxConfig::parse(&config.to_string(), "test").expect("config");
    Authorizer::new(Arc::new(ConfigStore::fixed(config, clock.clone())), clock)
}

/// One request as both ingresses send it: `lines` are header lines (a name
/// twice: sent on two lines), `query` decoded parameters in order.
struct Call<'a> {
    method: &'a str,
    partner: &'a str,
    lines: &'a [(&'a str, &'a str)],
    query: &'a [(&'a str, &'a str)],
    source_ip: &'a str,
}

impl Call<'_> {
    fn rest(&self) -> ApiGatewayCustomAuthorizerRequestTypeRequest {
        let mut single = serde_json::Map::new();
        let mut multi = serde_json::Map::new();
        for (name, value) in self.lines {
            single.insert(name.to_string(), json!(value));
            multi
                .entry(name.to_string())
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .expect("array")
                .push(json!(value));
        }
        let mut query = serde_json::Map::new();
        let mut multi_query = serde_json::Map::new();
        for (k, v) in self.query {
            query.insert(k.to_string(), json!(v));
            multi_query
                .entry(k.to_string())
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .expect("array")
                .push(json!(v));
        }
        hookbox_authorizer::event_from_json(json!({
            "type": "REQUEST",
            "methodArn": format!("arn:aws:execute-api:eu-west-1:123456789012:abc/prod/{}/webhooks/{}", self.method, self.partner),
            "httpMethod": self.method,
            "headers": single,
            "multiValueHeaders": multi,
            "queryStringParameters": query,
            "multiValueQueryStringParameters": multi_query,
            "pathParameters": { "partner": self.partner },
            "requestContext": { "identity": { "sourceIp": self.source_ip } },
        }))
        .expect("REST event")
    }

    fn http(&self) -> ApiGatewayV2CustomAuthorizerV2Request {
        let mut joined: Vec<(String, String)> = Vec::new();
        for (name, value) in self.lines {
            let name = name.to_ascii_lowercase();
            match joined.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => {
                    v.push(',');
                    v.push_str(value);
                }
                None => joined.push((name, value.to_string())),
            }
        }
        let mut query: Vec<(String, String)> = Vec::new();
        for (k, v) in self.query {
            match query.iter_mut().find(|(n, _)| n == k) {
                Some((_, joined)) => {
                    joined.push(',');
                    joined.push_str(v);
                }
                None => query.push((k.to_string(), v.to_string())),
            }
        }
        let raw = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.query)
            .finish();
        let event = json!({
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": format!("arn:aws:execute-api:eu-west-1:123456789012:abc/$default/{}/webhooks/{}", self.method, self.partner),
            "identitySource": [],
            "routeKey": format!("{} /webhooks/{{partner}}", self.method),
            "rawPath": format!("/webhooks/{}", self.partner),
            "rawQueryString": raw,
            "headers": joined
                .into_iter()
                .map(|(n, v)| (n, json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "queryStringParameters": query
                .into_iter()
                .map(|(n, v)| (n, json!(v)))
                .collect::<serde_json::Map<_, _>>(),
            "pathParameters": { "partner": self.partner },
            "requestContext": { "http": { "method": self.method, "path": format!("/webhooks/{}", self.partner),
                                          "sourceIp": self.source_ip } },
        });
        assert_eq!(Ingress::of(&event), Ingress::Http);
        hookbox_authorizer::http_event_from_json(event).expect("HTTP API event")
    }
}

/// The decisions of both ingresses, which must agree; and both answers
/// must say what the decision says.
async fn decide(a: &Authorizer, call: &Call<'_>) -> Decision {
    let (rest, _) = a.decide(&call.rest()).await;
    let (http, _) = a
        .decide_request(&AuthRequest::from_http(&call.http()))
        .await;
    assert_eq!(
        rest, http,
        "{} {} {:?} {:?}",
        call.method, call.partner, call.lines, call.query
    );
    let answer = a.handle_http(call.http()).await;
    assert_eq!(answer.is_authorized, http == Decision::Allow);
    rest
}

#[tokio::test]
async fn the_sample_events_twins_get_the_same_decisions() {
    let clock = clock();
    let config = ConfigStore::load(
        ConfigSource::File(format!("{EVENTS}/partners-test.json").into()),
        None,
        clock.clone(),
    )
    .await
    .expect("config");
    let a = Authorizer::new(Arc::new(config), clock);
    for (twin, rest, decision) in [
        (
            "httpapi-authorizer-allow.json",
            "apigw-authorizer-allow.json",
            Decision::Allow,
        ),
        (
            "httpapi-authorizer-spoofed-ip.json",
            "apigw-authorizer-spoofed-ip.json",
            Decision::Deny("source_ip_not_allowed"),
        ),
        (
            "httpapi-authorizer-stale.json",
            "apigw-authorizer-stale.json",
            Decision::Deny("timestamp_too_old"),
        ),
    ] {
        let json = read(twin);
        assert_eq!(Ingress::of(&json), Ingress::Http, "{twin}");
        let event = hookbox_authorizer::http_event_from_json(json.clone()).expect("event");
        let request = AuthRequest::from_http(&event);
        assert_eq!(a.decide_request(&request).await.0, decision, "{twin}");
        let rest: ApiGatewayCustomAuthorizerRequestTypeRequest =
            serde_json::from_value(read(rest)).expect("REST event");
        assert_eq!(a.decide(&rest).await.0, decision, "{rest:?}");
        // the one entry point answers each in its own shape
        let answer =
            serde_json::to_value(a.handle_json(json).await.expect("answer")).expect("json");
        let allowed = decision == Decision::Allow;
        let context = if allowed {
            json!({"partner": "restricted"})
        } else {
            json!({})
        };
        assert_eq!(
            answer,
            json!({"isAuthorized": allowed, "context": context}),
            "{twin}"
        );
        let rest_answer = serde_json::to_value(
            a.handle_json(read(twin.replace("httpapi", "apigw").as_str()))
                .await
                .expect("answer"),
        )
        .expect("json");
        assert_eq!(
            rest_answer["policyDocument"]["Statement"][0]["Effect"],
            if allowed { "Allow" } else { "Deny" },
            "{rest_answer}"
        );
    }
}

#[tokio::test]
async fn handshakes_enrolment_and_addresses_decide_alike() {
    let key = hookbox::config::enroll::EnrollPrivateKey::generate()
        .public()
        .to_base64();
    let a = with(json!({"partners": {
        "meta": {"preset": "meta", "secrets": ["app-secret"], "verify_tokens": ["old", "meatyhamhock"]},
        "dropbox": {"preset": "dropbox", "secrets": ["app-secret"]},
        "office": {"preset": "dropbox", "secrets": ["app-secret"], "allowed_cidrs": ["198.51.100.0/24"]},
        "asana": {"preset": "asana", "enroll_key": key},
        "asana-enrolled": {"preset": "asana", "secrets": ["asana-secret"]},
        "stripe": {"preset": "stripe", "secrets": ["whsec_x"]},
    }}));
    let meta = [
        ("hub.mode", "subscribe"),
        ("hub.challenge", "1158201444"),
        ("hub.verify_token", "meatyhamhock"),
    ];
    let hook_secret = [("X-Hook-Secret", "b537207f20cbfa02357cf448134da559")];
    let ip = "203.0.113.10";
    for (method, partner, lines, query, source_ip, decision) in [
        ("GET", "meta", &[][..], &meta[..], ip, Decision::Allow),
        (
            "GET",
            "meta",
            &[],
            &[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1"),
                ("hub.verify_token", "guessed"),
            ][..],
            ip,
            Decision::Deny("wrong_verify_token"),
        ),
        // the verify token sent twice: REST hands both values over, HTTP
        // API joins them in queryStringParameters but keeps rawQueryString
        (
            "GET",
            "meta",
            &[],
            &[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1"),
                ("hub.verify_token", "guessed"),
                ("hub.verify_token", "meatyhamhock"),
            ][..],
            ip,
            Decision::Deny("wrong_verify_token"),
        ),
        (
            "GET",
            "dropbox",
            &[],
            &[("challenge", "a,b")][..],
            ip,
            Decision::Allow,
        ),
        (
            "GET",
            "dropbox",
            &[],
            &[][..],
            ip,
            Decision::Deny("bad_handshake"),
        ),
        (
            "GET",
            "office",
            &[],
            &[("challenge", "abc")][..],
            ip,
            Decision::Deny("source_ip_not_allowed"),
        ),
        (
            "GET",
            "office",
            &[],
            &[("challenge", "abc")][..],
            "198.51.100.7",
            Decision::Allow,
        ),
        (
            "GET",
            "stripe",
            &[],
            &[][..],
            ip,
            Decision::Deny("method_not_allowed"),
        ),
        (
            "PUT",
            "dropbox",
            &[],
            &[][..],
            ip,
            Decision::Deny("method_not_allowed"),
        ),
        (
            "GET",
            "nobody",
            &[],
            &[][..],
            ip,
            Decision::Deny("unknown_partner"),
        ),
        (
            "POST",
            "asana",
            &hook_secret[..],
            &[][..],
            ip,
            Decision::Allow,
        ),
        (
            "POST",
            "asana-enrolled",
            &hook_secret[..],
            &[][..],
            ip,
            Decision::Deny("not_enrolling"),
        ),
        (
            "POST",
            "asana",
            &[("X-Hook-Secret", "two words")][..],
            &[][..],
            ip,
            Decision::Deny("bad_handshake"),
        ),
        (
            "POST",
            "asana",
            &[][..],
            &[][..],
            ip,
            Decision::Deny("missing_signature_header"),
        ),
    ] {
        let call = Call {
            method,
            partner,
            lines,
            query,
            source_ip,
        };
        assert_eq!(
            decide(&a, &call).await,
            decision,
            "{method} {partner} {lines:?} {query:?} from {source_ip}"
        );
    }
}

/// The signature headers `preset`'s provider adds to its sample, signed
/// with `secret` at the fixed time.
fn signed(preset: &str, secret: &str) -> Vec<(String, String)> {
    let preset = presets::get(preset).expect("preset");
    let secret = Secret::new(secret);
    preset
        .sign(
            &Outgoing {
                body: preset.sample.body.as_bytes(),
                headers: preset.sample.headers,
                url: None,
                method: "POST",
                timestamp: chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
            },
            SigningKey::Secret(&secret),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", preset.name))
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

#[tokio::test]
async fn a_signature_header_sent_twice_is_decided_alike_for_every_layout() {
    // preset, its secret, another of the same form, its signature header
    let partners = [
        (
            "standard-webhooks",
            "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==",
            "whsec_b3RoZXItc2VjcmV0LW9mLXRoZS1zYW1lLWZvcm0=",
            "webhook-signature",
        ),
        ("github", "gh-secret", "gh-other", "X-Hub-Signature-256"),
        ("stripe", "whsec_stripe", "whsec_other", "Stripe-Signature"),
        (
            "recurly",
            "recurly-key",
            "recurly-other",
            "recurly-signature",
        ),
        ("retell", "retell-key", "retell-other", "x-retell-signature"),
        (
            "buildkite",
            "bk-secret",
            "bk-other",
            "X-Buildkite-Signature",
        ),
        (
            "pagerduty",
            "pd-secret",
            "pd-other",
            "X-PagerDuty-Signature",
        ),
        ("slack", "slack-secret", "slack-other", "X-Slack-Signature"),
        (
            "shopify",
            "shopify-secret",
            "shopify-other",
            "X-Shopify-Hmac-Sha256",
        ),
    ];
    let mut config = serde_json::Map::new();
    for (preset, secret, _, _) in partners {
        config.insert(
            preset.into(),
            json!({"preset": preset, "secrets": [secret]}),
        );
    }
    let a = with(json!({ "partners": config }));
    for (preset, secret, other, header) in partners {
        let good = signed(preset, secret);
        let bad = signed(preset, other);
        let value = |signed: &[(String, String)]| {
            signed
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(header))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("{preset}: no {header}"))
        };
        let (good_value, bad_value) = (value(&good), value(&bad));
        let sample = presets::get(preset).expect("preset").sample.headers;
        let mut lines: Vec<(&str, &str)> = sample.to_vec();
        lines.extend(
            good.iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case(header))
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let list = hookbox::signature::joined::comma_rule(header)
            == hookbox::signature::joined::CommaRule::Whole;
        for (values, decision) in [
            (vec![good_value.as_str()], Decision::Allow),
            (
                vec![good_value.as_str(), good_value.as_str()],
                Decision::Allow,
            ),
            (
                vec![good_value.as_str(), bad_value.as_str()],
                if list {
                    Decision::Allow
                } else {
                    Decision::Deny("malformed_signature_header")
                },
            ),
        ] {
            let mut all = lines.clone();
            all.extend(values.iter().map(|v| (header, *v)));
            let call = Call {
                method: "POST",
                partner: preset,
                lines: &all,
                query: &[],
                source_ip: "203.0.113.10",
            };
            assert_eq!(
                decide(&a, &call).await,
                decision,
                "{preset}: {header} {values:?}"
            );
        }
    }
}
