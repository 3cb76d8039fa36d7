//! Issue #44, acceptance 2: every signature vector (the providers' own, the
//! SDKs', the computed ones: `shared/tests/presets/`) and every preset's
//! sample, signed as its provider signs, verifies through HTTP API's
//! payload 2.0 events built as AWS documents them, as through REST. Each
//! request goes through the authorizer and ingest of both ingresses (two
//! databases), as a text body (a text Content-Type: HTTP API passes the
//! string) and as a binary one (`application/octet-stream`: base64), except
//! where the recipe reads the Content-Type (a form body, which HTTP API
//! passes base64): sent with its own. Both ingresses must give the same
//! answer, never a refusal of the signature, and store the bytes sent.

mod corpus;
mod ingress;

// the vectors themselves, as the preset tests have them
#[allow(dead_code)]
#[path = "../../../shared/tests/presets/computed.rs"]
mod computed;
#[path = "../../../shared/tests/presets/official.rs"]
mod official;
#[path = "../../../shared/tests/presets/sdk.rs"]
mod sdk;

use chrono::TimeZone;
use corpus::events::Send;
use hookbox::signature::presets::{self, Outgoing, Preset, SigningKey};
use hookbox::signature::{KeyFormat, Primitive, Recipe, SchemeKind, Secret, TimeFormat};
use hookbox::signature::{TimestampSource, joined};
use ingress::{Both, request};
use serde_json::json;

/// Where a vector comes from (as `shared/tests/presets.rs` has it).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Official(&'static str),
    Sdk(&'static str),
    Computed(&'static str),
}

/// One request that must verify with a preset (as
/// `shared/tests/presets.rs` has it).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub struct Vector {
    pub preset: &'static str,
    pub source: Source,
    pub headers: &'static [(&'static str, &'static str)],
    pub body: &'static str,
    pub url: Option<&'static str>,
    pub method: Option<&'static str>,
    pub secrets: &'static [&'static str],
    pub matching: usize,
    pub now: i64,
    pub wrong_secret: &'static str,
    pub tamper: Option<&'static str>,
}

pub const V: Vector = Vector {
    preset: "",
    source: Source::Computed(""),
    headers: &[],
    body: "",
    url: None,
    method: None,
    secrets: &[],
    matching: 0,
    now: 1_700_000_000,
    wrong_secret: "not-the-secret",
    tamper: None,
};

const URL: &str = "https://hooks.example.com/webhooks/partner?x=1";
const NOW: i64 = 1_700_000_000;
const ED25519_SEED: [u8; 32] = [7; 32];
const P256_SCALAR: [u8; 32] = [9; 32];

/// One request to send both ways.
struct Case {
    what: String,
    partner: String,
    headers: Vec<(String, String)>,
    body: String,
    now: i64,
    /// Its preset reads the Content-Type (sent with its own only).
    reads_content_type: bool,
}

fn reads_content_type(preset: &Preset) -> bool {
    preset
        .signature_headers()
        .iter()
        .any(|h| h.eq_ignore_ascii_case("content-type"))
}

/// The secret a preset's verifier takes, of the right form (as
/// `shared/tests/presets/signing.rs` chooses it).
fn secret_for(preset: &Preset) -> Option<Secret> {
    let text = match preset.recipe {
        Recipe::Scheme(SchemeKind::StandardWebhooks) => {
            "whsec_c3RhbmRhcmQtd2ViaG9va3Mta2V5LTMyLWJ5dGVzISE="
        }
        Recipe::Scheme(_) | Recipe::Token { .. } | Recipe::Jws { .. } | Recipe::Twilio(_) => {
            "hookbox-test-secret"
        }
        Recipe::BasicAuth => "hookbox:s3cret",
        Recipe::Signed(signed) => match signed.primitive {
            Primitive::Hmac(_, KeyFormat::Utf8) => "hookbox-test-secret",
            Primitive::Hmac(_, KeyFormat::Hex) => "44782def547aaa06c910c43ac3d7d8f6",
            Primitive::Hmac(_, KeyFormat::Base64) => "YWlydGFibGUtbWFjLXNlY3JldC0zMi1ieXRlcyEhISE=",
            Primitive::Ed25519 | Primitive::EcdsaP256 => return None,
        },
    };
    Some(Secret::new(text))
}

/// The time a sample verifies at: the signing time, or the body's own
/// timestamp where the recipe reads it from the body (Linear).
fn verify_time(preset: &Preset) -> i64 {
    let Recipe::Signed(signed) = preset.recipe else {
        return NOW;
    };
    match signed.timestamp.map(|at| (at.source, at.format)) {
        Some((TimestampSource::Json(pointer), format)) => {
            let body: serde_json::Value =
                serde_json::from_str(preset.sample.body).expect("JSON sample");
            let number = body
                .pointer(pointer)
                .and_then(serde_json::Value::as_i64)
                .expect("a numeric timestamp");
            match format {
                TimeFormat::Millis | TimeFormat::MillisNumber => number / 1000,
                _ => number,
            }
        }
        _ => NOW,
    }
}

/// `config` with what its preset requires besides secrets (Meta's verify
/// token for its GET handshake), tried alone first.
fn complete(partner: &str, mut config: serde_json::Value) -> serde_json::Value {
    let parses = |config: &serde_json::Value| {
        hookbox::config::HookboxConfig::parse(
            &json!({ "partners": { partner: config } }).to_string(),
            "test",
        )
        .map_err(|e| e.to_string())
    };
    if let Err(e) = parses(&config) {
        if e.contains("verify_tokens") {
            config["verify_tokens"] = json!(["hookbox-verify-token"]);
        }
    }
    config
}

/// Every vector sent by POST, and every preset's sample signed (but those
/// whose signature is inside the body: their vectors stand for them), each
/// with the partner configuration it needs.
fn cases() -> (Vec<Case>, serde_json::Map<String, serde_json::Value>) {
    let mut cases = Vec::new();
    let mut partners = serde_json::Map::new();
    let vectors = official::VECTORS
        .iter()
        .chain(sdk::VECTORS.iter())
        .chain(computed::VECTORS.iter());
    for (i, vector) in vectors.enumerate() {
        if vector.method.is_some_and(|m| m != "POST") {
            continue;
        }
        let preset = presets::get(vector.preset).expect("preset");
        let partner = format!("vector-{i}");
        let mut config = json!({ "preset": vector.preset, "secrets": vector.secrets });
        if let Some(url) = vector.url {
            config["public_url"] = json!(url);
        }
        partners.insert(partner.clone(), complete(&partner, config));
        cases.push(Case {
            what: format!("vector {i} of {} ({:?})", vector.preset, vector.source),
            partner,
            headers: vector
                .headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: vector.body.to_string(),
            now: vector.now,
            reads_content_type: reads_content_type(preset),
        });
    }
    for preset in presets::all() {
        if matches!(preset.recipe, Recipe::Signed(s) if s.signature_in_body()) {
            continue;
        }
        let secret = secret_for(preset);
        let key = match (preset.recipe, secret.as_ref()) {
            (_, Some(secret)) => SigningKey::Secret(secret),
            (Recipe::Signed(s), None) if s.primitive == Primitive::Ed25519 => {
                SigningKey::Ed25519Seed(&ED25519_SEED)
            }
            _ => SigningKey::EcdsaP256(&P256_SCALAR),
        };
        let verifying = key.verifying_secret().expect("a valid key");
        let body = preset.sample.body;
        let form = body.contains('=') && !body.starts_with(['{', '[']);
        let mut headers: Vec<(&str, &str)> = preset.sample.headers.to_vec();
        headers.push((
            "Content-Type",
            if form {
                "application/x-www-form-urlencoded"
            } else {
                "application/json"
            },
        ));
        let signed = preset
            .sign(
                &Outgoing {
                    body: body.as_bytes(),
                    headers: &headers,
                    url: Some(URL),
                    method: "POST",
                    timestamp: chrono::Utc.timestamp_opt(NOW, 0).single().expect("valid"),
                },
                key,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        let partner = format!("sample-{}", preset.name);
        let config = json!({ "preset": preset.name, "secrets": [verifying.expose_secret()],
                             "public_url": URL });
        partners.insert(partner.clone(), complete(&partner, config));
        let mut all: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        all.extend(signed.into_iter().map(|(n, v)| (n.to_string(), v)));
        cases.push(Case {
            what: format!("the sample of {}", preset.name),
            partner,
            headers: all,
            body: body.to_string(),
            now: verify_time(preset),
            reads_content_type: reads_content_type(preset),
        });
    }
    (cases, partners)
}

/// The case's headers with the Content-Type replaced (`None`: as they are).
fn with_content_type(case: &Case, content_type: Option<&str>) -> Vec<(String, String)> {
    let Some(content_type) = content_type else {
        return case.headers.clone();
    };
    let mut headers: Vec<(String, String)> = case
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type"))
        .cloned()
        .collect();
    headers.push(("Content-Type".into(), content_type.into()));
    headers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_vector_and_preset_sample_verifies_through_http_api_as_text_and_base64() {
    hookbox::metrics::print_to_stdout(false);
    let (cases, partners) = cases();
    let both = Both::new(&json!({ "partners": partners }), NOW).await;
    let mut failures = Vec::new();
    let (mut text, mut base64) = (0, 0);
    for case in &cases {
        both.set_time(case.now);
        let json_body = serde_json::from_str::<serde_json::Value>(&case.body).is_ok();
        let variants: Vec<Option<&str>> = if case.reads_content_type {
            vec![None]
        } else if json_body {
            vec![Some("application/json"), Some("application/octet-stream")]
        } else {
            vec![
                Some("text/plain; charset=utf-8"),
                Some("application/octet-stream"),
            ]
        };
        for content_type in variants {
            let headers = with_content_type(case, content_type);
            let sent_as_text = hookbox_ingest::http_api_passes_as_text(
                headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.as_str()),
            );
            if sent_as_text {
                text += 1;
            } else {
                base64 += 1;
            }
            let lines: Vec<(&str, &str)> = headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let request = request(&case.partner, &lines, case.body.as_bytes());
            let (rest, http) = both.send(&request, &Send::post()).await;
            let what = format!(
                "{} as {} ({content_type:?})",
                case.what,
                if sent_as_text { "text" } else { "base64" }
            );
            if (rest.status, &rest.error, rest.body.get("status"))
                != (http.status, &http.error, http.body.get("status"))
            {
                failures.push(format!(
                    "{what}: REST {} / HTTP API {}",
                    rest.summary(),
                    http.summary()
                ));
                continue;
            }
            if matches!(http.status, 401 | 403) || http.status >= 500 {
                failures.push(format!("{what}: refused {}", http.summary()));
                continue;
            }
            if http.body.get("status").and_then(|s| s.as_str()) == Some("accepted")
                && http.body.get("id").is_some()
            {
                let stored = both.http.stored_body(&http).await;
                if stored != case.body.as_bytes() {
                    failures.push(format!("{what}: HTTP API stored other bytes"));
                }
            }
        }
    }
    eprintln!(
        "{} requests through both ingresses: {text} with a text body, {base64} base64",
        text + base64
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(text > 100 && base64 > 100, "{text} text, {base64} base64");
    // a header that holds commas in its syntax is among them
    assert!(
        cases.iter().any(|c| c.headers.iter().any(
            |(n, v)| v.contains(',') && joined::comma_rule(n) != joined::CommaRule::EveryComma
        )),
        "no vector's signature header holds a comma"
    );
}
