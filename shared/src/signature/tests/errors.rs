//! Errors must say which check failed without revealing secrets or the
//! signature the verifier expected.

use base64::Engine as _;

use super::*;
use crate::signature::crypto::{BASE64_OUT, hmac_parts};
use crate::signature::{Algorithm, SchemeKind, sign_standard_webhooks};

fn assert_reveals_nothing(error: &SignatureError, forbidden: &[&str]) {
    let shown = format!("{error} | {error:?}");
    for needle in forbidden {
        assert!(!shown.contains(needle), "{shown:?} reveals {needle:?}");
    }
}

#[test]
fn no_match_errors_reveal_neither_secret_nor_expected_signature() {
    let secret = "configured-secret-value";
    let body = b"the body";

    // GitHub: expected hex MAC of the configured secret.
    let expected = hmac_parts(Algorithm::Sha256, secret.as_bytes(), &[body]).expect("key");
    let expected_hex = hex::encode(expected.as_bytes());
    let expected_b64 = BASE64_OUT.encode(expected.as_bytes());
    let wrong = format!("sha256={}", "00".repeat(32));
    let error = check(
        default(SchemeKind::Github),
        &[("X-Hub-Signature-256", &wrong)],
        body,
        None,
        &[secret],
        0,
    )
    .expect_err("wrong signature");
    assert!(is_no_match(&Err(error.clone())));
    assert_reveals_nothing(&error, &[secret, &expected_hex, &expected_b64]);

    // Shopify: expected base64 MAC.
    let error = check(
        default(SchemeKind::Shopify),
        &[("X-Shopify-Hmac-Sha256", &BASE64_OUT.encode([0u8; 32]))],
        body,
        None,
        &[secret],
        0,
    )
    .expect_err("wrong signature");
    assert_reveals_nothing(&error, &[secret, &expected_b64]);

    // Stripe: expected hex MAC over "t.body".
    let t = "1700000000";
    let expected = hmac_parts(
        Algorithm::Sha256,
        secret.as_bytes(),
        &[t.as_bytes(), b".", body],
    )
    .expect("key");
    let header = format!("t={t},v1={}", "11".repeat(32));
    let error = check(
        default(SchemeKind::Stripe),
        &[("Stripe-Signature", &header)],
        body,
        None,
        &[secret],
        1_700_000_000,
    )
    .expect_err("wrong signature");
    assert_reveals_nothing(&error, &[secret, &hex::encode(expected.as_bytes())]);

    // Standard Webhooks: expected v1 entry of the configured secret.
    let whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let signed = sign_standard_webhooks("msg_1", at(1_700_000_000), body, &secrets(&[whsec]))
        .expect("signs");
    let headers = [
        ("webhook-id", "msg_1"),
        ("webhook-timestamp", "1700000000"),
        (
            "webhook-signature",
            "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ),
    ];
    let error = check(
        default(SchemeKind::StandardWebhooks),
        &headers,
        body,
        None,
        &[whsec],
        1_700_000_000,
    )
    .expect_err("wrong signature");
    let expected_entry = signed.signature.trim_start_matches("v1,");
    assert_reveals_nothing(
        &error,
        &["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", expected_entry],
    );
}

#[test]
fn each_failed_check_has_its_own_error() {
    let cases: [(&str, Result<Verified<'static>, SignatureError>); 5] = [
        (
            "missing",
            check(default(SchemeKind::Github), &[], b"", None, &["s"], 0),
        ),
        (
            "malformed",
            check(
                default(SchemeKind::Github),
                &[("X-Hub-Signature-256", "sha256=xyz")],
                b"",
                None,
                &["s"],
                0,
            ),
        ),
        (
            "no match",
            check(
                default(SchemeKind::Github),
                &[(
                    "X-Hub-Signature-256",
                    &format!("sha256={}", "00".repeat(32)),
                )],
                b"",
                None,
                &["s"],
                0,
            ),
        ),
        (
            "too old",
            check(
                default(SchemeKind::Stripe),
                &[(
                    "Stripe-Signature",
                    &format!("t=1000,v1={}", "00".repeat(32)),
                )],
                b"",
                None,
                &["s"],
                2000,
            ),
        ),
        (
            "future",
            check(
                default(SchemeKind::Stripe),
                &[(
                    "Stripe-Signature",
                    &format!("t=3000,v1={}", "00".repeat(32)),
                )],
                b"",
                None,
                &["s"],
                2000,
            ),
        ),
    ];
    let messages: Vec<String> = cases
        .iter()
        .map(|(name, result)| match result {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{name}: unexpectedly verified"),
        })
        .collect();
    assert!(
        messages[0].starts_with("missing header `X-Hub-Signature-256`"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].starts_with("malformed header `X-Hub-Signature-256`"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].starts_with("no matching signature"),
        "{}",
        messages[2]
    );
    assert!(
        messages[3].starts_with("timestamp too old"),
        "{}",
        messages[3]
    );
    assert!(
        messages[4].starts_with("timestamp in the future"),
        "{}",
        messages[4]
    );
}

#[test]
fn configuration_errors_are_flagged() {
    assert!(SignatureError::NoSecrets.is_configuration_error());
    assert!(SignatureError::MissingUrl { scheme: "twilio" }.is_configuration_error());
    assert!(!SignatureError::BodyHashMismatch.is_configuration_error());
}
