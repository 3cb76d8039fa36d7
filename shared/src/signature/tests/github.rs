use super::*;
use crate::signature::SchemeKind;

// Published example from GitHub's documentation, "Validating webhook
// deliveries" (section "Testing the webhook payload validation"):
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
const SECRET: &str = "It's a Secret to Everybody";
const BODY: &[u8] = b"Hello, World!";
const HEADER: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

fn run(
    headers: &[(&str, &str)],
    body: &[u8],
    secrets: &[&str],
) -> Result<Verified<'static>, SignatureError> {
    // GitHub has no timestamp: the time does not matter.
    check(default(SchemeKind::Github), headers, body, None, secrets, 0)
}

#[test]
fn published_vector_verifies() {
    let verified = run(&[("X-Hub-Signature-256", HEADER)], BODY, &[SECRET]).expect("valid");
    assert_eq!(verified.scheme, SchemeKind::Github);
    assert_eq!(verified.timestamp(), None);
    // Upper-case hex is the same signature.
    let upper = HEADER.replace("757107ea", "757107EA");
    assert!(run(&[("x-hub-signature-256", &upper)], BODY, &[SECRET]).is_ok());
}

#[test]
fn wrong_body_or_secret_does_not_match() {
    assert!(is_no_match(&run(
        &[("X-Hub-Signature-256", HEADER)],
        b"Hello, World?",
        &[SECRET]
    )));
    assert!(is_no_match(&run(
        &[("X-Hub-Signature-256", HEADER)],
        BODY,
        &["It's a Secret to Everybody!"]
    )));
}

#[test]
fn rotation_any_configured_secret_may_match() {
    let verified = run(&[("X-Hub-Signature-256", HEADER)], BODY, &["old", SECRET]).expect("valid");
    assert_eq!(verified.secret_index, 1);
}

#[test]
fn malformed_missing_and_downgraded_headers() {
    for header in [
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=",
        "sha256=757107ea",
        "sha256=zz7107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    ] {
        let result = run(&[("X-Hub-Signature-256", header)], BODY, &[SECRET]);
        assert!(
            is_malformed(&result, "X-Hub-Signature-256"),
            "{header}: {result:?}"
        );
    }
    assert!(matches!(
        run(&[("X-Hub-Signature-256", "sha1=0123")], BODY, &[SECRET]),
        Err(SignatureError::UnsupportedSignatureVersion { .. })
    ));
    // Only the legacy SHA-1 header: refused, not verified with SHA-1.
    let legacy = run(
        &[(
            "X-Hub-Signature",
            "sha1=0000000000000000000000000000000000000000",
        )],
        BODY,
        &[SECRET],
    );
    assert!(is_missing(&legacy, "X-Hub-Signature-256"));
}
