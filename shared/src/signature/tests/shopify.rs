use base64::Engine as _;

use super::*;
use crate::signature::SchemeKind;
use crate::signature::crypto::BASE64_OUT;

// No published known-answer vector was found for Shopify (its docs and SDK
// tests compute the HMAC at test time). Two vectors are used instead:
// - GitHub's published HMAC-SHA256 example re-encoded in base64 (Shopify's
//   scheme is the same MAC, base64 instead of hex):
//   https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
// - a value computed once, independently, with Python's hmac module:
//   base64(hmac.new(b"hush", b'{"id":1,"email":"x@example.com"}', sha256).digest())
const GITHUB_SECRET: &str = "It's a Secret to Everybody";
const GITHUB_BODY: &[u8] = b"Hello, World!";
const GITHUB_HEX: &str = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
const PY_SECRET: &str = "hush";
const PY_BODY: &[u8] = br#"{"id":1,"email":"x@example.com"}"#;
const PY_B64: &str = "iH1SIntoCrB3CY5w0s/UH8+3YV27PMAz2WeoKgxv2/U=";

fn run(
    headers: &[(&str, &str)],
    body: &[u8],
    secrets: &[&str],
) -> Result<Verified<'static>, SignatureError> {
    check(
        default(SchemeKind::Shopify),
        headers,
        body,
        None,
        secrets,
        0,
    )
}

#[test]
fn vectors_verify_under_both_header_names() {
    let github_b64 = BASE64_OUT.encode(hex::decode(GITHUB_HEX).expect("hex"));
    assert!(
        run(
            &[("X-Shopify-Hmac-Sha256", &github_b64)],
            GITHUB_BODY,
            &[GITHUB_SECRET]
        )
        .is_ok()
    );
    assert!(run(&[("X-Shopify-Hmac-SHA256", PY_B64)], PY_BODY, &[PY_SECRET]).is_ok());
    assert!(run(&[("shopify-hmac-sha256", PY_B64)], PY_BODY, &[PY_SECRET]).is_ok());
}

#[test]
fn tampering_and_rotation() {
    assert!(is_no_match(&run(
        &[("X-Shopify-Hmac-Sha256", PY_B64)],
        b"{}",
        &[PY_SECRET]
    )));
    let verified = run(
        &[("X-Shopify-Hmac-Sha256", PY_B64)],
        PY_BODY,
        &["old", PY_SECRET],
    )
    .expect("valid");
    assert_eq!(verified.secret_index, 1);
}

#[test]
fn malformed_and_missing_headers() {
    for value in ["", "not base64", "iH1SIntoCrB3CY5w0s", GITHUB_HEX] {
        let result = run(&[("X-Shopify-Hmac-Sha256", value)], PY_BODY, &[PY_SECRET]);
        assert!(
            is_malformed(&result, "X-Shopify-Hmac-Sha256"),
            "{value:?}: {result:?}"
        );
    }
    let unprefixed = run(&[("shopify-hmac-sha256", "x")], PY_BODY, &[PY_SECRET]);
    assert!(is_malformed(&unprefixed, "shopify-hmac-sha256"));
    assert!(is_missing(
        &run(&[], PY_BODY, &[PY_SECRET]),
        "X-Shopify-Hmac-Sha256"
    ));
}
