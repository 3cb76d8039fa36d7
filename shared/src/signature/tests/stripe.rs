use super::*;
use crate::signature::SchemeKind;

// Known-answer vector from Stripe's official .NET SDK tests:
// https://github.com/stripe/stripe-dotnet/blob/master/src/StripeTests/Services/Events/EventUtilityTest.cs
// (secret "webhook_secret", timestamp 1533204620) over the fixture
// https://github.com/stripe/stripe-dotnet/blob/master/src/StripeTests/Resources/event_test_signature.json
// (LF line endings, trailing newline included, as the test normalises it).
const SECRET: &str = "webhook_secret";
const TIMESTAMP: i64 = 1_533_204_620;
const V1: &str = "2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7";
const V0: &str = "63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef";
const BODY: &str = r#"{
  "id": "evt_123",
  "object": "event",
  "account": "acct_123",
  "api_version": "2017-05-25",
  "created": 1533204620,
  "data": {
    "object": {
      "id": "cus_123",
      "object": "customer",
      "created": 123456789,
      "email": "test@stripe.com",
      "livemode": false,
      "metadata": {}
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {
    "id": "req_123",
    "idempotency_key": "idempotency-key-123"
  },
  "type": "customer.created"
}
"#;

fn run(
    header: &str,
    body: &str,
    secrets: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    check(
        default(SchemeKind::Stripe),
        &[("Stripe-Signature", header)],
        body.as_bytes(),
        None,
        secrets,
        now,
    )
}

fn published_header() -> String {
    format!("t={TIMESTAMP},v1={V1},v0={V0}")
}

#[test]
fn published_vector_verifies() {
    // The SDK test verifies 100 s after the timestamp.
    let verified = run(&published_header(), BODY, &[SECRET], TIMESTAMP + 100).expect("valid");
    assert_eq!(verified.scheme, SchemeKind::Stripe);
    assert_eq!(verified.timestamp(), Some(at(TIMESTAMP)));
    // RejectIncorrectSignature: the body is modified.
    let modified = format!("{BODY}this_changes_the_json");
    assert!(is_no_match(&run(
        &published_header(),
        &modified,
        &[SECRET],
        TIMESTAMP
    )));
}

#[test]
fn secret_is_used_as_raw_bytes_not_base64_decoded() {
    // A whsec_ secret is the HMAC key byte for byte: decoding it (as
    // Standard Webhooks does) must not be what makes a signature match.
    let secret = "whsec_c2VjcmV0";
    let body = "{}";
    let mac = crate::signature::crypto::hmac_parts(
        crate::signature::Algorithm::Sha256,
        secret.as_bytes(),
        &[b"1700000000.", body.as_bytes()],
    )
    .expect("any key");
    let header = format!("t=1700000000,v1={}", hex::encode(mac.as_bytes()));
    assert!(run(&header, body, &[secret], 1_700_000_000).is_ok());
    let decoded = crate::signature::crypto::hmac_parts(
        crate::signature::Algorithm::Sha256,
        b"secret",
        &[b"1700000000.", body.as_bytes()],
    )
    .expect("any key");
    let header = format!("t=1700000000,v1={}", hex::encode(decoded.as_bytes()));
    assert!(is_no_match(&run(&header, body, &[secret], 1_700_000_000)));
}

#[test]
fn any_matching_v1_passes_and_rotation_works() {
    let other = "whsec_other";
    let bogus = "de".repeat(32);
    let header = format!("t={TIMESTAMP},v1={bogus},v1={V1}");
    assert!(run(&header, BODY, &[SECRET], TIMESTAMP).is_ok());
    let verified = run(&published_header(), BODY, &[other, SECRET], TIMESTAMP).expect("valid");
    assert_eq!(verified.secret_index, 1);
    assert!(is_no_match(&run(
        &published_header(),
        BODY,
        &[other],
        TIMESTAMP
    )));
    // An unreadable extra v1 is ignored, as in stripe-go's tests.
    let extra = format!("{},v1=bad_signature", published_header());
    assert!(run(&extra, BODY, &[SECRET], TIMESTAMP).is_ok());
}

#[test]
fn downgrade_to_v0_or_unknown_schemes_is_refused() {
    for header in [
        format!("t={TIMESTAMP},v0={V0}"),
        format!("t={TIMESTAMP},v0={V1}"),
        format!("t={TIMESTAMP},v2={V1}"),
        format!("t={TIMESTAMP}"),
    ] {
        let result = run(&header, BODY, &[SECRET], TIMESTAMP);
        assert!(
            matches!(
                result,
                Err(SignatureError::UnsupportedSignatureVersion { .. })
            ),
            "{header}: {result:?}"
        );
    }
}

#[test]
fn tolerance_boundaries_are_plus_minus_one_second() {
    let header = published_header();
    assert!(run(&header, BODY, &[SECRET], TIMESTAMP + 300).is_ok());
    assert!(run(&header, BODY, &[SECRET], TIMESTAMP - 300).is_ok());
    assert!(matches!(
        run(&header, BODY, &[SECRET], TIMESTAMP + 301),
        Err(SignatureError::TimestampTooOld { age_secs: 301, .. })
    ));
    assert!(matches!(
        run(&header, BODY, &[SECRET], TIMESTAMP - 301),
        Err(SignatureError::TimestampInFuture {
            ahead_secs: 301,
            ..
        })
    ));
    // RejectOutdatedTimestamp of the SDK: tolerance 300, now = t + 400.
    assert!(run(&header, BODY, &[SECRET], TIMESTAMP + 400).is_err());
}

#[test]
fn malformed_and_missing_headers() {
    // stripe-dotnet's ValidateSignatureHandlesIncorrectHeaderValues inputs.
    for header in [
        format!("t=,v1={V1},v0={V0}"),
        "t,v1=,v0=".to_owned(),
        "t,v1=,v0".to_owned(),
        "t,v1=,".to_owned(),
        "t,,".to_owned(),
        ",,".to_owned(),
        "t".to_owned(),
        format!("t={TIMESTAMP},v1=abc"),
    ] {
        let result = run(&header, BODY, &[SECRET], TIMESTAMP);
        assert!(
            is_malformed(&result, "stripe-signature"),
            "{header}: {result:?}"
        );
    }
    let result = check(
        default(SchemeKind::Stripe),
        &[],
        BODY.as_bytes(),
        None,
        &[SECRET],
        TIMESTAMP,
    );
    assert!(is_missing(&result, "Stripe-Signature"));
}
