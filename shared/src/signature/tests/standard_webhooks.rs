use base64::Engine as _;
use ed25519_dalek::SigningKey;

use super::*;
use crate::signature::SchemeKind;
use crate::signature::crypto::BASE64_OUT;

// Known-answer vector of the Standard Webhooks reference libraries:
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/python/tests/test_webhooks.py
// (test_sign_function; the same values are in the JavaScript, Go and Rust
// libraries' tests).
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const MSG_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP: i64 = 1_614_265_330;
const TIMESTAMP_TEXT: &str = "1614265330";
const PAYLOAD: &[u8] = br#"{"test": 2432232314}"#;
const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

// Known-answer vector for the asymmetric `v1a` scheme, from
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_asymmetric_test.go
// (TestAsymmetricWebhookSign): an Ed25519 seed and the signature of the
// same message as above.
const ED25519_SEED_B64: &str = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=";
const V1A_SIGNATURE: &str =
    "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==";

fn config() -> SchemeConfig {
    default(SchemeKind::StandardWebhooks)
}

fn headers(signature: &str) -> Vec<(&'static str, String)> {
    vec![
        ("webhook-id", MSG_ID.to_owned()),
        ("webhook-timestamp", TIMESTAMP_TEXT.to_owned()),
        ("webhook-signature", signature.to_owned()),
    ]
}

fn run(
    headers: &[(&str, String)],
    body: &[u8],
    secrets: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    check(config(), &pairs, body, None, secrets, now)
}

/// The `whpk_` public key of the published Ed25519 seed.
fn public_key() -> String {
    let seed: [u8; 32] = crate::signature::crypto::BASE64
        .decode(ED25519_SEED_B64)
        .expect("base64 seed")
        .try_into()
        .expect("32-byte seed");
    let key = SigningKey::from_bytes(&seed).verifying_key();
    format!("whpk_{}", BASE64_OUT.encode(key.to_bytes()))
}

#[test]
fn published_v1_vector_verifies() {
    let verified = run(&headers(SIGNATURE), PAYLOAD, &[SECRET], TIMESTAMP).expect("valid");
    assert_eq!(verified.scheme, SchemeKind::StandardWebhooks);
    assert_eq!(verified.secret_index, 0);
    assert_eq!(verified.message_id.as_deref(), Some(MSG_ID));
    assert_eq!(verified.timestamp(), Some(at(TIMESTAMP)));
}

#[test]
fn published_v1_vector_is_what_the_signer_produces() {
    let signed = crate::signature::sign_standard_webhooks(
        MSG_ID,
        at(TIMESTAMP),
        PAYLOAD,
        &secrets(&[SECRET]),
    )
    .expect("signs");
    assert_eq!(signed.id, MSG_ID);
    assert_eq!(signed.timestamp, TIMESTAMP_TEXT);
    assert_eq!(signed.signature, SIGNATURE);
}

#[test]
fn secret_without_whsec_prefix_is_accepted_like_the_reference_libraries() {
    let bare = SECRET.trim_start_matches("whsec_");
    assert!(run(&headers(SIGNATURE), PAYLOAD, &[bare], TIMESTAMP).is_ok());
}

#[test]
fn published_v1a_vector_verifies_with_the_whpk_public_key() {
    let key = public_key();
    let verified = run(&headers(V1A_SIGNATURE), PAYLOAD, &[&key], TIMESTAMP).expect("valid");
    assert_eq!(verified.secret_index, 0);
    // Tampering with the body breaks it.
    assert!(is_no_match(&run(
        &headers(V1A_SIGNATURE),
        br#"{"test": 2432232315}"#,
        &[&key],
        TIMESTAMP
    )));
}

#[test]
fn published_v1a_vector_is_what_the_signer_produces_with_a_whsk_key() {
    let signing_key = format!("whsk_{ED25519_SEED_B64}");
    let signed = crate::signature::sign_standard_webhooks(
        MSG_ID,
        at(TIMESTAMP),
        PAYLOAD,
        &secrets(&[&signing_key]),
    )
    .expect("signs");
    assert_eq!(signed.signature, V1A_SIGNATURE);
}

#[test]
fn svix_header_names_are_accepted() {
    let svix = vec![
        ("svix-id", MSG_ID.to_owned()),
        ("svix-timestamp", TIMESTAMP_TEXT.to_owned()),
        ("svix-signature", SIGNATURE.to_owned()),
    ];
    assert!(run(&svix, PAYLOAD, &[SECRET], TIMESTAMP).is_ok());
    // Any case.
    let upper = vec![
        ("Webhook-Id", MSG_ID.to_owned()),
        ("WEBHOOK-TIMESTAMP", TIMESTAMP_TEXT.to_owned()),
        ("webhook-Signature", SIGNATURE.to_owned()),
    ];
    assert!(run(&upper, PAYLOAD, &[SECRET], TIMESTAMP).is_ok());
}

#[test]
fn conflicting_svix_headers_count_only_without_webhook_signature() {
    fn repeated(name: &str, result: Result<Verified<'static>, SignatureError>) -> bool {
        matches!(result, Err(SignatureError::MalformedHeader { header, reason })
            if header == name && reason == "repeated with different values")
    }
    // `webhook-*` in use: repeated `svix-*` headers are not read.
    let mut both = headers(SIGNATURE);
    both.push(("svix-id", "a".to_owned()));
    both.push(("svix-id", "b".to_owned()));
    assert!(run(&both, PAYLOAD, &[SECRET], TIMESTAMP).is_ok());
    // `svix-*` in use: they are.
    let svix = vec![
        ("svix-id", MSG_ID.to_owned()),
        ("svix-timestamp", TIMESTAMP_TEXT.to_owned()),
        ("svix-signature", SIGNATURE.to_owned()),
        ("svix-timestamp", "1".to_owned()),
        ("svix-id", "b".to_owned()),
    ];
    assert!(repeated(
        "svix-timestamp",
        run(&svix, PAYLOAD, &[SECRET], TIMESTAMP)
    ));
    // A repeated `webhook-*` header always counts, even beside `svix-*`.
    let mut webhook = svix.clone();
    webhook.insert(0, ("webhook-id", "x".to_owned()));
    webhook.push(("webhook-id", "y".to_owned()));
    assert!(repeated(
        "webhook-id",
        run(&webhook, PAYLOAD, &[SECRET], TIMESTAMP)
    ));
}

#[test]
fn any_valid_entry_passes_and_unknown_versions_are_ignored() {
    // As in the reference libraries' test_multi_sig_payload_is_valid.
    let header = format!(
        "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= {SIGNATURE} v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
    );
    assert!(run(&headers(&header), PAYLOAD, &[SECRET], TIMESTAMP).is_ok());
    // Only unknown versions: nothing to check.
    let unknown = "v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
    assert!(matches!(
        run(&headers(unknown), PAYLOAD, &[SECRET], TIMESTAMP),
        Err(SignatureError::UnsupportedSignatureVersion { .. })
    ));
}

#[test]
fn rotation_any_configured_secret_may_match() {
    let other = "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB";
    let verified = run(&headers(SIGNATURE), PAYLOAD, &[other, SECRET], TIMESTAMP).expect("valid");
    assert_eq!(verified.secret_index, 1);
    assert!(is_no_match(&run(
        &headers(SIGNATURE),
        PAYLOAD,
        &[other],
        TIMESTAMP
    )));
    // A sender signing with old and new secret passes a receiver that knows either.
    let signed = crate::signature::sign_standard_webhooks(
        MSG_ID,
        at(TIMESTAMP),
        PAYLOAD,
        &secrets(&[SECRET, other]),
    )
    .expect("signs");
    assert_eq!(signed.signature.split(' ').count(), 2);
    for receiver in [SECRET, other] {
        let verified = run(&headers(&signed.signature), PAYLOAD, &[receiver], TIMESTAMP);
        assert!(verified.is_ok(), "{receiver}");
    }
    // Symmetric and asymmetric keys side by side.
    let key = public_key();
    let both = run(&headers(V1A_SIGNATURE), PAYLOAD, &[SECRET, &key], TIMESTAMP).expect("valid");
    assert_eq!(both.secret_index, 1);
}

#[test]
fn tolerance_boundaries_are_plus_minus_one_second() {
    let h = headers(SIGNATURE);
    assert!(run(&h, PAYLOAD, &[SECRET], TIMESTAMP + 300).is_ok());
    assert!(run(&h, PAYLOAD, &[SECRET], TIMESTAMP - 300).is_ok());
    assert_eq!(
        run(&h, PAYLOAD, &[SECRET], TIMESTAMP + 301),
        Err(SignatureError::TimestampTooOld {
            age_secs: 301,
            tolerance_secs: 300
        })
    );
    assert_eq!(
        run(&h, PAYLOAD, &[SECRET], TIMESTAMP - 301),
        Err(SignatureError::TimestampInFuture {
            ahead_secs: 301,
            tolerance_secs: 300
        })
    );
    // Configurable.
    let narrow = SchemeConfig::StandardWebhooks { tolerance_secs: 10 };
    let pairs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert!(
        check(
            narrow.clone(),
            &pairs,
            PAYLOAD,
            None,
            &[SECRET],
            TIMESTAMP + 10
        )
        .is_ok()
    );
    assert!(check(narrow, &pairs, PAYLOAD, None, &[SECRET], TIMESTAMP + 11).is_err());
}

#[test]
fn missing_headers_are_named() {
    for missing in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        let h: Vec<_> = headers(SIGNATURE)
            .into_iter()
            .filter(|(n, _)| *n != missing)
            .collect();
        let result = run(&h, PAYLOAD, &[SECRET], TIMESTAMP);
        assert!(is_missing(&result, missing), "{missing}: {result:?}");
    }
}

#[test]
fn malformed_headers_are_refused() {
    let mut bad_timestamp = headers(SIGNATURE);
    bad_timestamp[1].1 = "hello".to_owned();
    assert!(is_malformed(
        &run(&bad_timestamp, PAYLOAD, &[SECRET], TIMESTAMP),
        "webhook-timestamp"
    ));
    let mut dotted_id = headers(SIGNATURE);
    dotted_id[0].1 = "msg.1".to_owned();
    assert!(is_malformed(
        &run(&dotted_id, PAYLOAD, &[SECRET], TIMESTAMP),
        "webhook-id"
    ));
    for signature in [
        "",
        "v1",
        "v1,",
        "v1,not base64!",
        "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ] {
        let result = run(&headers(signature), PAYLOAD, &[SECRET], TIMESTAMP);
        assert!(
            is_malformed(&result, "webhook-signature"),
            "{signature:?}: {result:?}"
        );
    }
    // The published "invalid signature" case: well formed, wrong value.
    let wrong = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=";
    assert!(is_no_match(&run(
        &headers(wrong),
        PAYLOAD,
        &[SECRET],
        TIMESTAMP
    )));
    // Ambiguous: the same header twice with different values.
    let mut twice = headers(SIGNATURE);
    twice.push(("webhook-signature", wrong.to_owned()));
    assert!(is_malformed(
        &run(&twice, PAYLOAD, &[SECRET], TIMESTAMP),
        "webhook-signature"
    ));
}

#[test]
fn unusable_secrets_are_configuration_errors() {
    let h = headers(SIGNATURE);
    for bad in [
        "whsec_***",
        "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=",
        "whpk_AAAA",
        "",
    ] {
        let result = run(&h, PAYLOAD, &[SECRET, bad], TIMESTAMP);
        assert!(
            matches!(result, Err(SignatureError::InvalidSecret { index: 1, .. })),
            "{bad:?}: {result:?}"
        );
    }
    assert_eq!(
        run(&h, PAYLOAD, &[], TIMESTAMP),
        Err(SignatureError::NoSecrets)
    );
}

#[test]
fn precheck_needs_neither_body_nor_secrets() {
    let verifier = Verifier::new(config()).expect("valid");
    let h = headers(SIGNATURE);
    let pairs = Headers::from_pairs(h.iter().map(|(n, v)| (*n, v.as_str())));
    assert_eq!(verifier.precheck(&pairs, at(TIMESTAMP)), Ok(()));
    assert!(matches!(
        verifier.precheck(&pairs, at(TIMESTAMP + 301)),
        Err(SignatureError::TimestampTooOld { .. })
    ));
    assert!(matches!(
        verifier.precheck(&Headers::new(), at(TIMESTAMP)),
        Err(SignatureError::MissingHeader { .. })
    ));
}

#[test]
fn signer_refuses_bad_input() {
    use crate::signature::{SignError, sign_standard_webhooks};
    let s = secrets(&[SECRET]);
    assert!(matches!(
        sign_standard_webhooks("msg.1", at(1), b"", &s),
        Err(SignError::InvalidId { .. })
    ));
    assert!(matches!(
        sign_standard_webhooks("msg 1", at(1), b"", &s),
        Err(SignError::InvalidId { .. })
    ));
    assert!(matches!(
        sign_standard_webhooks("", at(1), b"", &s),
        Err(SignError::InvalidId { .. })
    ));
    assert!(matches!(
        sign_standard_webhooks("m", at(-1), b"", &s),
        Err(SignError::InvalidTimestamp { .. })
    ));
    assert!(matches!(
        sign_standard_webhooks("m", at(1), b"", &[]),
        Err(SignError::NoSecrets)
    ));
    let public = public_key();
    assert!(matches!(
        sign_standard_webhooks("m", at(1), b"", &secrets(&[SECRET, &public])),
        Err(SignError::InvalidSecret { index: 1, .. })
    ));
}
