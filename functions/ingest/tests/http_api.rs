//! Issue #44: the authorizer and ingest through API Gateway's HTTP API
//! (payload 2.0 events, as AWS documents them) answer as through REST. A
//! signature header sent on two lines, which HTTP API joins with a comma,
//! gets REST's answer for every layout of signature header; a body HTTP API
//! passes base64 verifies byte for byte, while a text body holding U+FFFD
//! whose signature fails is refused naming that; the GET handshakes answer
//! alike; one binary's entry point tells the two shapes apart.

mod corpus;
mod ingress;

use chrono::TimeZone;
use corpus::check::Got;
use corpus::events::Send;
use hookbox::inbox::ingest::Outcome;
use hookbox::signature::Secret;
use hookbox::signature::presets::{self, Outgoing, SigningKey};
use hookbox_ingest::{BODY_ALTERED, Ingress, IngressRequest};
use ingress::{Both, request};
use serde_json::json;

const NOW: i64 = 1_700_000_000;
const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// A partner per layout of signature header, by its preset, with its
/// secret, another secret of the same form and the header that carries
/// the signature.
const PARTNERS: &[(&str, &str, &str, &str)] = &[
    (
        "standard-webhooks",
        DEMO_SECRET,
        "whsec_b3RoZXItc2VjcmV0LW9mLXRoZS1zYW1lLWZvcm0=",
        "webhook-signature",
    ),
    ("github", "gh-secret", "gh-other", "X-Hub-Signature-256"),
    ("stripe", "whsec_stripe", "whsec_other", "Stripe-Signature"),
    (
        "pagerduty",
        "pd-secret",
        "pd-other",
        "X-PagerDuty-Signature",
    ),
    ("circleci", "ci-secret", "ci-other", "circleci-signature"),
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
];

fn config() -> serde_json::Value {
    let mut partners = serde_json::Map::new();
    for (preset, secret, _, _) in PARTNERS {
        partners.insert(
            preset.to_string(),
            json!({ "preset": preset, "secrets": [secret] }),
        );
    }
    partners.insert(
        "demo".into(),
        json!({ "signature": {"scheme": "standard-webhooks"}, "secrets": [DEMO_SECRET],
                "event_id": {"header": "webhook-id"} }),
    );
    partners.insert(
        "meta".into(),
        json!({ "preset": "meta", "secrets": ["app-secret"], "verify_tokens": ["tok"] }),
    );
    json!({ "partners": partners })
}

/// The signature headers `preset`'s provider adds to its sample, signed
/// with `secret` at [`NOW`].
fn signed(
    preset: &str,
    secret: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<(String, String)> {
    let preset = presets::get(preset).expect("preset");
    let secret = Secret::new(secret);
    preset
        .sign(
            &Outgoing {
                body,
                headers,
                url: None,
                method: "POST",
                timestamp: chrono::Utc.timestamp_opt(NOW, 0).single().expect("valid"),
            },
            SigningKey::Secret(&secret),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", preset.name))
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

fn same(what: &str, rest: &Got, http: &Got) {
    assert_eq!(
        (rest.status, &rest.error, rest.body.get("status")),
        (http.status, &http.error, http.body.get("status")),
        "{what}: REST {} / HTTP API {}",
        rest.summary(),
        http.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_header_sent_twice_gets_the_same_answer_through_both_ingresses() {
    hookbox::metrics::print_to_stdout(false);
    let both = Both::new(&config(), NOW).await;
    for (name, secret, other_secret, header) in PARTNERS {
        let preset = presets::get(name).expect("preset");
        let sample: Vec<(&str, &str)> = preset.sample.headers.to_vec();
        let body = preset.sample.body.as_bytes();
        let valid = signed(name, secret, &sample, body);
        let other = signed(name, other_secret, &sample, body);
        let value = |signed: &[(String, String)]| {
            signed
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(header))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("{name}: no {header} in {signed:?}"))
        };
        let (good, bad) = (value(&valid), value(&other));
        assert_ne!(good, bad, "{name}");
        // the other signed headers (ids, timestamps) once each
        let mut lines: Vec<(&str, &str)> = sample.clone();
        lines.extend(
            valid
                .iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case(header))
                .map(|(n, v)| (n.as_str(), v.as_str())),
        );
        let with = |values: &[&str]| {
            let mut all = lines.clone();
            all.extend(values.iter().map(|v| (*header, *v)));
            request(name, &all, body)
        };
        // once, then twice with the same value: one value, accepted (the
        // second a duplicate)
        for (what, values, status) in [
            ("once", vec![good.as_str()], "accepted"),
            (
                "twice, the same",
                vec![good.as_str(), good.as_str()],
                "duplicate",
            ),
        ] {
            let (rest, http) = both.send(&with(&values), &Send::post()).await;
            same(&format!("{name}: {header} {what}"), &rest, &http);
            assert_eq!(rest.status, 200, "{name} {what}: {}", rest.summary());
            assert_eq!(rest.body["status"], status, "{name} {what}");
        }
        // twice with different values: ambiguous, refused by the
        // authorizer; a list of signatures is the list, verified
        let (rest, http) = both
            .send(&with(&[good.as_str(), bad.as_str()]), &Send::post())
            .await;
        same(&format!("{name}: {header} twice, different"), &rest, &http);
        let list = hookbox::signature::joined::comma_rule(header)
            == hookbox::signature::joined::CommaRule::Whole;
        if list {
            assert_eq!(
                (rest.status, rest.body["status"].as_str()),
                (200, Some("duplicate")),
                "{name}: {}",
                rest.summary()
            );
        } else {
            assert_eq!(
                (rest.status, rest.error.as_deref()),
                (403, Some("malformed_signature_header")),
                "{name}: {}",
                rest.summary()
            );
        }
        // the forged value alone: refused alike
        let (rest, http) = both.send(&with(&[bad.as_str()]), &Send::post()).await;
        same(&format!("{name}: another secret's {header}"), &rest, &http);
        assert_eq!(rest.status, 401, "{name}: {}", rest.summary());
    }
}

/// A JSON body with a Latin-1 `é` (byte E9): not UTF-8.
const LATIN1: &[u8] = b"{\"type\":\"order.created\",\"note\":\"caf\xe9\"}";

fn sw(id: &str, body: &[u8], content_type: &str, secret: &str) -> corpus::model::Request {
    let signature = hookbox::signature::sign_standard_webhooks(
        id,
        chrono::Utc.timestamp_opt(NOW, 0).single().expect("valid"),
        body,
        &[Secret::new(secret)],
    )
    .expect("signs");
    request(
        "demo",
        &[
            ("Content-Type", content_type),
            ("webhook-id", &signature.id),
            ("webhook-timestamp", &signature.timestamp),
            ("webhook-signature", &signature.signature),
        ],
        body,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_utf8_verifies_as_binary_and_as_text_is_refused_naming_why() {
    hookbox::metrics::print_to_stdout(false);
    let both = Both::new(&config(), NOW).await;
    let other = "whsec_b3RoZXItc2VjcmV0LW9mLXRoZS1zYW1lLWZvcm0=";
    // application/octet-stream: base64 through HTTP API, byte for byte
    let binary = sw("msg_bin", LATIN1, "application/octet-stream", DEMO_SECRET);
    let (rest, http) = both.send(&binary, &Send::post()).await;
    same("octet-stream", &rest, &http);
    assert_eq!(rest.body["status"], "accepted", "{}", rest.summary());
    assert_eq!(both.rest.stored_body(&rest).await, LATIN1);
    assert_eq!(both.http.stored_body(&http).await, LATIN1);

    // application/json: HTTP API passes it as a string, the byte E9
    // replaced with U+FFFD; REST still passes it base64
    let text = sw("msg_text", LATIN1, "application/json", DEMO_SECRET);
    let (rest, http) = both.send(&text, &Send::post()).await;
    assert_eq!(rest.body["status"], "accepted", "{}", rest.summary());
    assert_eq!(both.rest.stored_body(&rest).await, LATIN1);
    assert_eq!(
        (http.authorizer.as_str(), http.status, http.error.as_deref()),
        ("Allow", 401, Some(BODY_ALTERED)),
        "{}",
        http.summary()
    );
    let detail = http.body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("U+FFFD") && detail.contains("rest ingress"),
        "{detail}"
    );

    // a body holding a real U+FFFD, correctly signed: no false alarm
    let real = "{\"type\":\"order.created\",\"note\":\"\u{FFFD}\"}".as_bytes();
    let (rest, http) = both
        .send(
            &sw("msg_real", real, "application/json", DEMO_SECRET),
            &Send::post(),
        )
        .await;
    same("a real U+FFFD", &rest, &http);
    assert_eq!(http.body["status"], "accepted", "{}", http.summary());
    assert_eq!(both.http.stored_body(&http).await, real);

    // signed with another secret: REST's invalid_signature; through HTTP
    // API the U+FFFD names the possible cause, and only there
    let (rest, http) = both
        .send(
            &sw("msg_forged", real, "application/json", other),
            &Send::post(),
        )
        .await;
    assert_eq!(rest.error.as_deref(), Some("invalid_signature"));
    assert_eq!(http.error.as_deref(), Some(BODY_ALTERED));
    let plain = b"{\"type\":\"order.created\"}";
    let (rest, http) = both
        .send(
            &sw("msg_plain", plain, "application/json", other),
            &Send::post(),
        )
        .await;
    same("no U+FFFD, another secret", &rest, &http);
    assert_eq!(http.error.as_deref(), Some("invalid_signature"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_handshakes_answer_alike_through_both_ingresses() {
    hookbox::metrics::print_to_stdout(false);
    let both = Both::new(&config(), NOW).await;
    let get = |query: &'static [(&'static str, &'static str)]| Send {
        method: "GET",
        query,
        ..Send::post()
    };
    let meta = request("meta", &[], b"");
    for (query, status, error) in [
        (
            &[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "tok"),
            ][..],
            200,
            None,
        ),
        (
            &[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "guessed"),
            ][..],
            403,
            Some("wrong_verify_token"),
        ),
    ] {
        let (rest, http) = both.send(&meta, &get(query)).await;
        same(&format!("meta GET {query:?}"), &rest, &http);
        assert_eq!((rest.status, rest.error.as_deref()), (status, error));
        if status == 200 {
            assert_eq!(rest.body, http.body, "the challenge echoed alike");
            // the challenge as sent (text that reads as a JSON number)
            assert_eq!(http.body.to_string(), "1158201444");
        } else {
            // a deny: REST's body names the reason, HTTP API's cannot
            assert_eq!(rest.body["error"], "wrong_verify_token");
            assert_eq!(http.body, serde_json::json!({"message": "Forbidden"}));
        }
    }
    // a value holding a comma, and a parameter sent twice: decoded from
    // rawQueryString, as REST hands them over
    let (rest, http) = both
        .send(
            &meta,
            &get(&[
                ("hub.mode", "subscribe"),
                ("hub.challenge", "a,b"),
                ("hub.verify_token", "tok"),
            ]),
        )
        .await;
    same("a challenge with a comma", &rest, &http);
}

#[test]
fn one_entry_point_tells_the_event_shapes_apart() {
    let rest = json!({"resource": "/webhooks/{partner}", "httpMethod": "POST", "headers": {}});
    let http = json!({"version": "2.0", "routeKey": "POST /webhooks/{partner}", "rawPath": "/webhooks/demo",
                      "requestContext": {"http": {"method": "POST"}}});
    assert_eq!(Ingress::of(&rest), Ingress::Rest);
    assert_eq!(Ingress::of(&http), Ingress::Http);
    // payload format 1.0 through an HTTP API is REST's shape
    let v1 = json!({"version": "1.0", "httpMethod": "POST", "requestContext": {}});
    assert_eq!(Ingress::of(&v1), Ingress::Rest);
    // no version, but HTTP API's request context and no httpMethod
    let unversioned = json!({"requestContext": {"http": {"method": "POST"}}});
    assert_eq!(Ingress::of(&unversioned), Ingress::Http);

    let event: aws_lambda_events::apigw::ApiGatewayV2httpRequest = serde_json::from_value(json!({
        "version": "2.0", "rawPath": "/webhooks/demo", "rawQueryString": "a=1&a=2,3",
        "cookies": ["c=1", "d=2"],
        "headers": {"webhook-id": "msg_1,msg_1", "host": "h.example"},
        "queryStringParameters": {"a": "1,2,3"},
        "pathParameters": {"partner": "demo"},
        "requestContext": {"http": {"method": "POST", "path": "/webhooks/demo", "sourceIp": "203.0.113.9"}},
        "body": "ab\u{FFFD}", "isBase64Encoded": false,
    }))
    .expect("event");
    let r = IngressRequest::from_http(&event);
    assert_eq!(r.ingress, Ingress::Http);
    assert_eq!(
        r.query,
        [
            ("a".to_owned(), "1".to_owned()),
            ("a".to_owned(), "2,3".to_owned())
        ],
        "every value from rawQueryString, a comma kept"
    );
    assert!(
        r.headers
            .contains(&("cookie".to_owned(), "c=1; d=2".to_owned()))
    );
    assert_eq!(r.headers().get("webhook-id"), Some("msg_1"));
    assert_eq!(
        r.url().as_deref(),
        Some("https://h.example/webhooks/demo?a=1&a=2,3")
    );
    assert!(r.text_body_may_be_altered());
    assert_eq!(r.body_bytes().expect("text"), "ab\u{FFFD}".as_bytes());
    let mut b64 = event.clone();
    b64.is_base64_encoded = true;
    assert!(!IngressRequest::from_http(&b64).text_body_may_be_altered());
    let _ = Outcome::Rejected(BODY_ALTERED);
}

/// One header line holding a comma: REST hands the line over whole, so an
/// event id such as `evt-1,000` is one id there; HTTP API joins repeated
/// lines with the same comma, so there it cannot be told from two lines
/// with different ids and is refused as ambiguous (docs/ingress.md,
/// "Repeated headers").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_header_line_holding_a_comma_is_one_value_through_rest_and_ambiguous_through_http_api()
{
    hookbox::metrics::print_to_stdout(false);
    let both = Both::new(&config(), NOW).await;
    let body = br#"{"type":"order.created"}"#;
    let request = sw("evt-1,000", body, "application/json", DEMO_SECRET);
    let (rest, http) = both.send(&request, &Send::post()).await;
    assert_eq!(
        (
            rest.authorizer.as_str(),
            rest.status,
            rest.body["status"].as_str()
        ),
        ("Allow", 200, Some("accepted")),
        "{}",
        rest.summary()
    );
    let id: uuid::Uuid = rest.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(both.rest.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.event_id, "evt-1,000");
    assert_eq!(both.rest.stored_body(&rest).await, body);
    assert_eq!(
        (http.authorizer.as_str(), http.status, http.error.as_deref()),
        ("Deny", 403, Some("malformed_signature_header")),
        "{}",
        http.summary()
    );
    // the same id on two lines, `evt-1` and `000`: refused through both
    let signature = hookbox::signature::sign_standard_webhooks(
        "evt-1,000",
        chrono::Utc.timestamp_opt(NOW, 0).single().expect("valid"),
        body,
        &[Secret::new(DEMO_SECRET)],
    )
    .expect("signs");
    let two_lines = request_lines(&signature, body);
    let (rest, http) = both.send(&two_lines, &Send::post()).await;
    same("an id on two lines", &rest, &http);
    assert_eq!(
        (rest.status, rest.error.as_deref()),
        (403, Some("malformed_signature_header")),
        "{}",
        rest.summary()
    );
}

/// [`sw`]'s request with its `webhook-id` split at its comma onto two
/// lines.
fn request_lines(
    signature: &hookbox::signature::StandardWebhookHeaders,
    body: &[u8],
) -> corpus::model::Request {
    let (first, second) = signature.id.split_once(',').expect("a comma");
    request(
        "demo",
        &[
            ("Content-Type", "application/json"),
            ("webhook-id", first),
            ("webhook-id", second),
            ("webhook-timestamp", &signature.timestamp),
            ("webhook-signature", &signature.signature),
        ],
        body,
    )
}
