//! `Preset::signed_message`: for every preset with a primitive, the bytes
//! it returns are the ones the provider's signature covers (the bare
//! primitive over them gives the signature the signer wrote, or verifies
//! it), so the signature bench times the bare primitive over the right
//! bytes.

use base64::Engine as _;

use super::*;
use crate::signature::crypto::{BASE64_OUT, MacState};
use crate::signature::presets::{self, Outgoing, Preset, SigningKey};
use crate::signature::{
    Algorithm, Encoding, KeyFormat, Part, Primitive, Recipe, SchemeKind, TimestampSource,
};

const URL: &str = "https://hooks.example.com/webhooks/partner?x=1";
const RAW_KEY: &[u8] = b"signed-message-test-key";
const ED25519_SEED: [u8; 32] = [5; 32];
const P256_SCALAR: [u8; 32] = [11; 32];
const NOW: i64 = 1_700_000_000;

/// The secret a preset's verifier takes for [`RAW_KEY`] (`None`: a
/// public-key recipe).
fn secret_for(preset: &Preset) -> Option<Secret> {
    let text = match preset.recipe {
        Recipe::Scheme(SchemeKind::StandardWebhooks) => {
            format!("whsec_{}", BASE64_OUT.encode(RAW_KEY))
        }
        Recipe::Signed(signed) => match signed.primitive {
            Primitive::Hmac(_, KeyFormat::Hex) => hex::encode(RAW_KEY),
            Primitive::Hmac(_, KeyFormat::Base64) => BASE64_OUT.encode(RAW_KEY),
            Primitive::Hmac(_, KeyFormat::Utf8) => String::from_utf8_lossy(RAW_KEY).into_owned(),
            Primitive::Ed25519 | Primitive::EcdsaP256 => return None,
        },
        _ => String::from_utf8_lossy(RAW_KEY).into_owned(),
    };
    Some(Secret::new(text))
}

/// The HMAC algorithm and encoding of a preset's signature, when it is an
/// HMAC the signer writes in a header.
fn hmac_of(preset: &Preset) -> Option<(Algorithm, Encoding)> {
    match preset.recipe {
        Recipe::Scheme(kind) => Some(match kind {
            SchemeKind::StandardWebhooks | SchemeKind::Shopify => {
                (Algorithm::Sha256, Encoding::Base64)
            }
            SchemeKind::Twilio => (Algorithm::Sha1, Encoding::Base64),
            _ => (Algorithm::Sha256, Encoding::Hex),
        }),
        Recipe::Twilio(algorithm) => Some((algorithm, Encoding::Base64)),
        Recipe::Signed(signed) => match signed.primitive {
            Primitive::Hmac(algorithm, _) => Some((algorithm, signed.encoding)),
            Primitive::Ed25519 | Primitive::EcdsaP256 => None,
        },
        Recipe::Jws { .. } | Recipe::Token { .. } | Recipe::BasicAuth => None,
    }
}

/// A JSON body with the fields the presets read (Linear's timestamp in
/// milliseconds), or form parameters for Twilio's recipe.
fn body_for(preset: &Preset) -> String {
    if matches!(
        preset.recipe,
        Recipe::Scheme(SchemeKind::Twilio) | Recipe::Twilio(_)
    ) || matches!(preset.recipe, Recipe::Signed(s) if s.message.contains(&Part::Form))
    {
        return "To=%2B14155550100&Body=Hello+there%21&From=%2B14155550123&Body=again".to_owned();
    }
    format!(r#"{{"id":"evt_1","type":"a.b","webhookTimestamp":{NOW}000,"data":"x"}}"#)
}

#[test]
fn signed_message_is_what_each_presets_primitive_covers() {
    let mut checked = 0;
    for preset in presets::all() {
        if matches!(preset.recipe, Recipe::Token { .. } | Recipe::BasicAuth)
            || matches!(preset.recipe, Recipe::Signed(s) if s.signature_in_body())
        {
            continue;
        }
        let body = body_for(preset);
        let mut headers = preset.sample.headers.to_vec();
        headers.push(("Content-Type", "application/x-www-form-urlencoded"));
        let outgoing = Outgoing {
            body: body.as_bytes(),
            headers: &headers,
            url: Some(URL),
            method: "POST",
            timestamp: at(NOW),
        };
        let secret = secret_for(preset);
        let key = match (&secret, preset.recipe) {
            (Some(secret), _) => SigningKey::Secret(secret),
            (None, Recipe::Signed(s)) if s.primitive == Primitive::Ed25519 => {
                SigningKey::Ed25519Seed(&ED25519_SEED)
            }
            (None, _) => SigningKey::EcdsaP256(&P256_SCALAR),
        };
        let signed = preset
            .sign(&outgoing, key)
            .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        let message = preset
            .signed_message(&outgoing)
            .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        let written = |text: &str| signed.iter().any(|(_, value)| value.contains(text));
        match (preset.recipe, hmac_of(preset)) {
            (Recipe::Jws { .. }, _) => assert_eq!(message, body.as_bytes(), "{}", preset.name),
            (_, Some((algorithm, encoding))) => {
                let mut mac = MacState::new(algorithm, RAW_KEY).expect("any key");
                mac.update(&message);
                let tag = mac.finalize();
                let text = match encoding {
                    Encoding::Hex => hex::encode(tag.as_bytes()),
                    Encoding::Base64 => BASE64_OUT.encode(tag.as_bytes()),
                };
                assert!(written(&text), "{}: {signed:?}", preset.name);
            }
            (Recipe::Signed(signed_recipe), None) => {
                let signature_text = signed
                    .iter()
                    .find(|(name, _)| {
                        !matches!(signed_recipe.timestamp, Some(t) if t.source == TimestampSource::Header(name))
                    })
                    .map(|(_, value)| value.clone())
                    .unwrap_or_default();
                let bytes = match signed_recipe.encoding {
                    Encoding::Hex => hex::decode(&signature_text).expect("hex"),
                    Encoding::Base64 => BASE64_OUT.decode(&signature_text).expect("base64"),
                };
                if signed_recipe.primitive == Primitive::Ed25519 {
                    let key = ed25519_dalek::SigningKey::from_bytes(&ED25519_SEED);
                    let signature = ed25519_dalek::Signature::from_slice(&bytes).expect("64 bytes");
                    assert!(
                        key.verifying_key()
                            .verify_strict(&message, &signature)
                            .is_ok(),
                        "{}",
                        preset.name
                    );
                } else {
                    use p256::ecdsa::signature::Verifier as _;
                    let key = p256::ecdsa::SigningKey::from_slice(&P256_SCALAR).expect("scalar");
                    let signature = p256::ecdsa::Signature::from_der(&bytes).expect("DER");
                    assert!(
                        key.verifying_key().verify(&message, &signature).is_ok(),
                        "{}",
                        preset.name
                    );
                }
            }
            (recipe, None) => panic!("{}: unexpected recipe {recipe:?}", preset.name),
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} presets checked");
}

#[test]
fn signed_message_refuses_what_has_no_primitive() {
    for preset in presets::all() {
        let refused = matches!(preset.recipe, Recipe::Token { .. } | Recipe::BasicAuth)
            || matches!(preset.recipe, Recipe::Signed(s) if s.signature_in_body());
        let outgoing = Outgoing {
            body: b"{}",
            headers: preset.sample.headers,
            url: Some(URL),
            method: "POST",
            timestamp: at(NOW),
        };
        if refused {
            assert!(preset.signed_message(&outgoing).is_err(), "{}", preset.name);
        }
    }
}

#[test]
fn a_utc_date_time_is_read_with_or_without_an_offset() {
    use crate::signature::recipe::{TimeFormat, parse_time};
    // Orb's `X-Orb-Timestamp`: no offset, microseconds; read as UTC.
    for text in [
        "2023-11-14T22:13:20.000000",
        "2023-11-14T22:13:20",
        "2023-11-14T22:13:20Z",
        "2023-11-15T00:13:20.5+02:00",
    ] {
        assert_eq!(
            parse_time(text, TimeFormat::UtcDateTime),
            Ok(1_700_000_000),
            "{text}"
        );
    }
    for text in [
        "",
        "2023-11-14",
        "1700000000",
        "2023-11-14 22:13:20",
        "2023-11-14T25:13:20",
    ] {
        assert!(parse_time(text, TimeFormat::UtcDateTime).is_err(), "{text}");
    }
    // The direct read agrees with chrono's parser wherever it answers.
    for text in [
        "2023-11-14T22:13:20.123456789",
        "2024-02-29T00:00:00.1",
        "0000-01-01T00:00:00",
        "9999-12-31T23:59:59",
        "2023-02-29T00:00:00",
        "2023-11-14T24:00:00",
        "2023-11-14T22:60:00",
        "2023-11-14T22:13:60",
        "2023-11-14T22:13:20.",
        "2023-11-14T22:13:20.1234567890",
        "2023-11-14t22:13:20",
        "2023-11-14T22:13:2x",
        "+2023-11-14T22:13:2",
        "2023-1-14T22:13:20.5",
    ] {
        let chrono = text
            .parse::<chrono::NaiveDateTime>()
            .ok()
            .map(|t| t.and_utc().timestamp());
        let ours = parse_time(text, TimeFormat::UtcDateTime).ok();
        assert_eq!(ours, chrono, "{text}");
    }
    // RFC 3339 itself still wants the offset.
    assert!(parse_time("2023-11-14T22:13:20", TimeFormat::Rfc3339).is_err());
}
