//! Every verifier, end to end, on arbitrary header values and bodies: the
//! hand-written schemes and every provider preset of the registry. No
//! panic, and nothing forged verifies.
//!
//! Input: lines. Line 1 selects the target (its first byte, modulo the
//! number of schemes plus presets), line 2 is the URL, the following lines
//! are the values of the target's headers in order (a scheme: the fixed
//! list below; a preset: `Preset::signature_headers()` from the registry,
//! then `Content-Type`), the rest is the body.
#![no_main]

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use hookbox::signature::presets::{self, Preset, SigningKey};
use hookbox::signature::{
    GenericHmacConfig, Headers, KeyFormat, Primitive, Recipe, SchemeConfig, SchemeKind, Secret,
    SignedRequest, Verifier,
};
use libfuzzer_sys::fuzz_target;

/// The headers of the hand-written schemes and the generic HMAC below.
const NAMES: [&str; 12] = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-Shopify-Hmac-Sha256",
    "X-Slack-Request-Timestamp",
    "X-Slack-Signature",
    "X-Twilio-Signature",
    "Content-Type",
    "X-Sig",
    "X-Ts",
];

/// Public keys of private keys of our own (no signature by them is
/// published anywhere): valid points, so signatures are really verified.
fn public_keys() -> &'static (Secret, Secret) {
    static KEYS: OnceLock<(Secret, Secret)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let key = |k: SigningKey<'_>| k.verifying_secret().unwrap_or_else(|| Secret::new(""));
        (
            key(SigningKey::Ed25519Seed(&[7; 32])),
            key(SigningKey::EcdsaP256(&[9; 32])),
        )
    })
}

fn scheme_config(kind: SchemeKind) -> Option<SchemeConfig> {
    match kind {
        SchemeKind::GenericHmac => {
            let mut generic = GenericHmacConfig::new("X-Sig");
            generic.timestamp_header = Some("X-Ts".into());
            generic.template = Some("{timestamp}:{body}".into());
            Some(SchemeConfig::GenericHmac(generic))
        }
        kind => SchemeConfig::default_for(kind),
    }
}

/// Secrets of the formats a preset's verifier takes: used as they are, so
/// a forged request must still fail the comparison, not the key parsing.
fn preset_secrets(preset: &Preset) -> Vec<Secret> {
    let texts: &[&str] = match preset.recipe {
        Recipe::Scheme(SchemeKind::StandardWebhooks) => &[
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
        ],
        Recipe::Signed(signed) => match signed.primitive {
            Primitive::Hmac(_, KeyFormat::Hex) => &["44782def547aaa06c910c43ac3d7d8f6"],
            Primitive::Hmac(_, KeyFormat::Base64) => &["c2VjcmV0LWtleS1mb3ItZnV6emluZw=="],
            Primitive::Hmac(_, KeyFormat::Utf8) => &["hookbox-fuzz-secret-7f3a9c"],
            Primitive::Ed25519 => return vec![public_keys().0.clone()],
            Primitive::EcdsaP256 => return vec![public_keys().1.clone()],
        },
        Recipe::BasicAuth => &["hookbox:fuzz-7f3a9c"],
        Recipe::Scheme(_) | Recipe::Token { .. } | Recipe::Jws { .. } | Recipe::Twilio(_) => {
            &["hookbox-fuzz-secret-7f3a9c"]
        }
    };
    texts.iter().map(|t| Secret::new(*t)).collect()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let selector = usize::from(lines.next().and_then(|l| l.bytes().next()).unwrap_or(0));
    let url = lines.next().unwrap_or("");
    let all = presets::all();
    let target = selector % (SchemeKind::ALL.len() + all.len());

    let (config, names, secrets) = match SchemeKind::ALL.get(target) {
        Some(kind) => {
            let Some(config) = scheme_config(*kind) else {
                return;
            };
            let secrets = vec![
                Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
                Secret::new("whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="),
            ];
            (config, NAMES.to_vec(), secrets)
        }
        None => {
            let Some(preset) = all.get(target - SchemeKind::ALL.len()) else {
                return;
            };
            let mut names = preset.signature_headers();
            if !names.iter().any(|n| n.eq_ignore_ascii_case("Content-Type")) {
                names.push("Content-Type");
            }
            (preset.scheme_config(None), names, preset_secrets(preset))
        }
    };
    let values: Vec<&str> = lines.by_ref().take(names.len()).collect();
    let rest: Vec<&str> = lines.collect();
    let body = rest.join("\n");
    let headers = Headers::from_pairs(names.iter().copied().zip(values.iter().copied()));
    let Ok(verifier) = Verifier::new(config) else {
        return;
    };
    let request = SignedRequest::new(body.as_bytes(), headers.clone()).with_url(url);
    let Some(now) = DateTime::<Utc>::from_timestamp(1_700_000_000, 0) else {
        return;
    };
    let _ = verifier.precheck(&headers, now);
    let result = verifier.verify_at(&request, &secrets, now);
    assert!(result.is_err(), "forged request verified: {result:?}");
});
