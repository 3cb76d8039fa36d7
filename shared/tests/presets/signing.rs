//! The signer (`Preset::sign`, what `hookbox send --preset` and the
//! signature bench use) against the verifiers and the vectors: every
//! preset that a secret can sign signs its sample event so that its own
//! verifier accepts it (and refuses a changed body and another secret);
//! the public-key presets sign only with a private key of one's own; and
//! the signer reproduces the published and computed vectors byte for byte
//! where a vector has one signature.

use std::collections::BTreeSet;

use hookbox::signature::presets::{self, Outgoing, Preset, PresetSignError, SigningKey};
use hookbox::signature::{
    Headers, KeyFormat, Primitive, Recipe, SchemeKind, Secret, SignatureError, SignedRequest,
    TimeFormat, TimestampSource, Verified,
};

use super::{Vector, all_vectors, at, preset};

const URL: &str = "https://hooks.example.com/webhooks/partner?x=1";
const NOW: i64 = 1_700_000_000;
const ED25519_SEED: [u8; 32] = [7; 32];
const P256_SCALAR: [u8; 32] = [9; 32];

/// The secret a preset's verifier takes, of the right format.
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

/// The key that signs a preset's requests in these tests.
fn key_for<'a>(preset: &Preset, secret: Option<&'a Secret>) -> SigningKey<'a> {
    match (preset.recipe, secret) {
        (_, Some(secret)) => SigningKey::Secret(secret),
        (Recipe::Signed(signed), None) if signed.primitive == Primitive::Ed25519 => {
            SigningKey::Ed25519Seed(&ED25519_SEED)
        }
        _ => SigningKey::EcdsaP256(&P256_SCALAR),
    }
}

/// Where the signature is carried inside the body (Mailgun, each item of
/// Adyen's standard notifications): not signed.
fn in_body(preset: &Preset) -> bool {
    matches!(preset.recipe, Recipe::Signed(s) if s.signature_in_body())
}

/// The time a request is verified at: the signing time, or the body's own
/// timestamp where the recipe reads it from the body (Linear).
fn verify_time(preset: &Preset, body: &str) -> i64 {
    let Recipe::Signed(signed) = preset.recipe else {
        return NOW;
    };
    match signed.timestamp {
        Some(at) => match at.source {
            TimestampSource::Json(pointer) => {
                let value: serde_json::Value = serde_json::from_str(body).expect("JSON sample");
                let number = value
                    .pointer(pointer)
                    .and_then(serde_json::Value::as_i64)
                    .expect("a numeric timestamp");
                match at.format {
                    TimeFormat::Millis | TimeFormat::MillisNumber => number / 1000,
                    _ => number,
                }
            }
            _ => NOW,
        },
        None => NOW,
    }
}

fn sample_headers(preset: &Preset) -> Vec<(&'static str, &'static str)> {
    let mut headers = preset.sample.headers.to_vec();
    let form = preset.sample.body.contains('=') && !preset.sample.body.starts_with(['{', '[']);
    headers.push((
        "Content-Type",
        if form {
            "application/x-www-form-urlencoded"
        } else {
            "application/json"
        },
    ));
    headers
}

fn verify_signed(
    preset: &Preset,
    headers: &[(&str, &str)],
    signed: &[(&'static str, String)],
    body: &[u8],
    secret: &Secret,
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    let mut pairs: Vec<(&str, &str)> = headers.to_vec();
    pairs.extend(signed.iter().map(|(n, v)| (*n, v.as_str())));
    let request = SignedRequest::new(body, Headers::from_pairs(pairs)).with_url(URL);
    preset
        .verifier()
        .expect("compiles")
        .verify_at(&request, std::slice::from_ref(secret), at(now))
        .map(Verified::into_owned)
}

#[test]
fn every_preset_signs_its_sample_so_that_its_verifier_accepts_it() {
    let mut signed_presets = BTreeSet::new();
    for preset in presets::all() {
        let secret = secret_for(preset);
        let key = key_for(preset, secret.as_ref());
        let verifying = key.verifying_secret().expect("a valid key");
        let headers = sample_headers(preset);
        let body = preset.sample.body;
        let outgoing = Outgoing {
            body: body.as_bytes(),
            headers: &headers,
            url: Some(URL),
            method: "POST",
            timestamp: at(NOW),
        };
        let signed = match preset.sign(&outgoing, key) {
            Ok(signed) => signed,
            Err(PresetSignError::Unsupported { preset: name, .. }) if in_body(preset) => {
                assert_eq!(name, preset.name);
                continue;
            }
            Err(error) => panic!("{}: {error}", preset.name),
        };
        // The signer writes only headers the registry says the preset reads.
        let read = preset.signature_headers();
        for (name, _) in &signed {
            assert!(
                read.iter().any(|r| r.eq_ignore_ascii_case(name)),
                "{}: {name} is not in signature_headers() {read:?}",
                preset.name
            );
        }
        let now = verify_time(preset, body);
        verify_signed(preset, &headers, &signed, body.as_bytes(), &verifying, now)
            .unwrap_or_else(|e| panic!("{}: {e} ({signed:?})", preset.name));
        let other = match preset.recipe {
            Recipe::Signed(s) if s.primitive == Primitive::Ed25519 => {
                // RFC 8032 test 1 public key.
                Secret::new("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
            }
            Recipe::Signed(s) if s.primitive == Primitive::EcdsaP256 => {
                SigningKey::EcdsaP256(&[3; 32])
                    .verifying_secret()
                    .expect("valid")
            }
            _ => Secret::new(match verifying.expose_secret() {
                s if s.starts_with("whsec_") => "whsec_c2VjcmV0",
                s if s.contains(':') => "hookbox:other",
                _ => "00ff",
            }),
        };
        let wrong = verify_signed(preset, &headers, &signed, body.as_bytes(), &other, now);
        assert!(
            matches!(wrong, Err(SignatureError::NoMatchingSignature { .. })),
            "{}: {wrong:?}",
            preset.name
        );
        // Nothing binds the body: tokens, basic auth, and a recipe that
        // signs other parts only (Plivo's V2: the URL and a nonce).
        if matches!(preset.recipe, Recipe::Token { .. } | Recipe::BasicAuth)
            || matches!(preset.recipe, Recipe::Signed(s) if !s.signs_body())
        {
            signed_presets.insert(preset.name);
            continue;
        }
        let mut changed = body.as_bytes().to_vec();
        let last = changed.len() - 2;
        changed[last] ^= 0x01;
        let tampered = verify_signed(preset, &headers, &signed, &changed, &verifying, now);
        assert!(
            tampered.is_err(),
            "{}: a changed body verified",
            preset.name
        );
        signed_presets.insert(preset.name);
    }
    let expected: BTreeSet<&str> = presets::all()
        .iter()
        .filter(|p| !in_body(p))
        .map(|p| p.name)
        .collect();
    assert_eq!(signed_presets, expected);
}

#[test]
fn a_public_key_preset_refuses_a_secret_naming_the_preset_and_why() {
    for preset in presets::all() {
        let Recipe::Signed(signed) = preset.recipe else {
            continue;
        };
        if !matches!(signed.primitive, Primitive::Ed25519 | Primitive::EcdsaP256) {
            continue;
        }
        let secret =
            Secret::new("0d15438587449c35ac9577a4cc5b6687004e1648a87e2b8f2ab993e8b6372fe0");
        let outgoing = Outgoing {
            body: preset.sample.body.as_bytes(),
            headers: &[],
            url: None,
            method: "POST",
            timestamp: at(NOW),
        };
        let error = preset
            .sign(&outgoing, SigningKey::Secret(&secret))
            .expect_err("a public key cannot sign");
        let text = error.to_string();
        assert!(
            text.contains(&format!("`{}`", preset.name)) && text.contains("public key"),
            "{text}"
        );
        assert!(!text.contains(secret.expose_secret()), "{text}");
    }
    // Debug output shows no key.
    let shown = format!(
        "{:?} {:?} {:?}",
        SigningKey::Ed25519Seed(&ED25519_SEED),
        SigningKey::EcdsaP256(&P256_SCALAR),
        SigningKey::Secret(&Secret::new("hookbox-test-secret"))
    );
    assert!(
        !shown.contains("hookbox-test-secret") && !shown.contains("7, 7"),
        "{shown}"
    );
    // And an HMAC preset refuses a private key.
    let error = preset("github")
        .sign(
            &Outgoing {
                body: b"{}",
                headers: &[],
                url: None,
                method: "POST",
                timestamp: at(NOW),
            },
            SigningKey::Ed25519Seed(&ED25519_SEED),
        )
        .expect_err("not a secret");
    assert!(
        matches!(error, PresetSignError::InvalidSecret { .. }),
        "{error:?}"
    );
}

#[test]
fn a_part_the_recipe_signs_must_be_given() {
    let secret = Secret::new("s");
    let bare = |name: &str| {
        preset(name).sign(
            &Outgoing {
                body: br#"{"a":1}"#,
                headers: &[],
                url: None,
                method: "POST",
                timestamp: at(NOW),
            },
            SigningKey::Secret(&secret),
        )
    };
    for (name, what) in [
        ("square", "the URL"),
        ("twitch-eventsub", "Twitch-Eventsub-Message-Id"),
        ("svix", "svix-id"),
        ("openai", "webhook-id"),
        ("twilio", "the URL"),
    ] {
        let error = bare(name).expect_err(name);
        assert!(
            matches!(&error, PresetSignError::Missing { .. }) && error.to_string().contains(what),
            "{name}: {error}"
        );
    }
}

/// The signed headers of `vector` as our signer writes them, with its
/// matching secret at its `now`.
fn sign_vector(vector: &Vector) -> Option<Vec<(&'static str, String)>> {
    let preset = preset(vector.preset);
    let secret = Secret::new(vector.secrets[vector.matching]);
    let outgoing = Outgoing {
        body: vector.body.as_bytes(),
        headers: vector.headers,
        url: vector.url,
        method: vector.method.unwrap_or("POST"),
        timestamp: at(vector.now),
    };
    preset.sign(&outgoing, SigningKey::Secret(&secret)).ok()
}

#[test]
fn the_signer_reproduces_the_vectors_that_carry_one_signature() {
    let mut reproduced = BTreeSet::new();
    for vector in all_vectors() {
        let Some(signed) = sign_vector(vector) else {
            continue;
        };
        let same = signed.iter().all(|(name, value)| {
            vector
                .headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case(name) && v == value)
        });
        if same {
            reproduced.insert(vector.preset);
        }
    }
    // Every vector with one signature of a preset that a secret signs is
    // reproduced byte for byte (among them the published ones of GitHub,
    // Slack, Twilio, Square, HubSpot, Svix and Standard Webhooks), so a new
    // preset's vectors are checked without being listed here. The presets
    // none of whose vectors is: those with several signatures (Paddle's
    // `h1=dummy`, Stripe's `v0` beside `v1`), DocuSign's (signed with its
    // second key, in `X-DocuSign-Signature-2`), the timestamps written
    // otherwise than the signer writes a whole second (Recurly's
    // milliseconds, Box's `-07:00` offset, Twitch's fraction), the
    // public-key presets (Discord, SendGrid, Telnyx), Mailgun and Adyen's
    // standard notifications (in the body) and
    // WorkOS (`t=…, v1=…`: the signer writes no space after the comma,
    // which WorkOS's SDK reads the same).
    let with_vectors: BTreeSet<&str> = all_vectors().map(|v| v.preset).collect();
    let not_reproduced: BTreeSet<&str> = with_vectors.difference(&reproduced).copied().collect();
    let expected: BTreeSet<&str> = EXCEPTIONS.iter().copied().collect();
    assert_eq!(not_reproduced, expected);
    assert!(reproduced.len() >= 35, "{reproduced:?}");
}

/// The presets the signer cannot reproduce a vector of (see above).
const EXCEPTIONS: &[&str] = &[
    "adyen-standard",
    "box",
    "discord",
    "docusign",
    "mailgun",
    "paddle",
    "recurly",
    "sendgrid",
    "stripe",
    "telnyx",
    "twitch-eventsub",
    "workos",
];
