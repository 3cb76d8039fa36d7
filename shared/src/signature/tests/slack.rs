use super::*;
use crate::signature::SchemeKind;

// Published example of Slack's "Verifying requests from Slack":
// https://api.slack.com/authentication/verifying-requests-from-slack
// (also the fixture of the official SDK test
// https://github.com/slackapi/python-slack-sdk/blob/main/tests/slack_sdk/signature/test_signature_verifier.py).
pub(super) const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub(super) const TIMESTAMP: i64 = 1_531_420_618;
pub(super) const TIMESTAMP_TEXT: &str = "1531420618";
pub(super) const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
pub(super) const SIGNATURE: &str =
    "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

fn run(
    signature: &str,
    timestamp: &str,
    body: &str,
    secrets: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    check(
        default(SchemeKind::Slack),
        &[
            ("X-Slack-Request-Timestamp", timestamp),
            ("X-Slack-Signature", signature),
        ],
        body.as_bytes(),
        None,
        secrets,
        now,
    )
}

#[test]
fn published_vector_verifies() {
    let verified = run(SIGNATURE, TIMESTAMP_TEXT, BODY, &[SECRET], TIMESTAMP).expect("valid");
    assert_eq!(verified.scheme, SchemeKind::Slack);
    assert_eq!(verified.timestamp(), Some(at(TIMESTAMP)));
    // The SDK's test_is_valid_request_invalid_body.
    let modified = format!("{BODY}------");
    assert!(is_no_match(&run(
        SIGNATURE,
        TIMESTAMP_TEXT,
        &modified,
        &[SECRET],
        TIMESTAMP
    )));
    // The timestamp is signed: another one does not match.
    assert!(is_no_match(&run(
        SIGNATURE,
        "1531420619",
        BODY,
        &[SECRET],
        TIMESTAMP
    )));
}

#[test]
fn rotation_any_configured_secret_may_match() {
    let verified =
        run(SIGNATURE, TIMESTAMP_TEXT, BODY, &["old", SECRET], TIMESTAMP).expect("valid");
    assert_eq!(verified.secret_index, 1);
}

#[test]
fn tolerance_boundaries_are_plus_minus_one_second() {
    let ok = |now| run(SIGNATURE, TIMESTAMP_TEXT, BODY, &[SECRET], now);
    assert!(ok(TIMESTAMP + 300).is_ok());
    assert!(ok(TIMESTAMP - 300).is_ok());
    assert!(matches!(
        ok(TIMESTAMP + 301),
        Err(SignatureError::TimestampTooOld { .. })
    ));
    assert!(matches!(
        ok(TIMESTAMP - 301),
        Err(SignatureError::TimestampInFuture { .. })
    ));
}

#[test]
fn malformed_missing_and_unsupported_headers() {
    for signature in ["", "a2114d57", "v0=", "v0=a2114d57", "v0=zz"] {
        let result = run(signature, TIMESTAMP_TEXT, BODY, &[SECRET], TIMESTAMP);
        assert!(
            is_malformed(&result, "X-Slack-Signature"),
            "{signature:?}: {result:?}"
        );
    }
    let v1 = SIGNATURE.replacen("v0=", "v1=", 1);
    assert!(matches!(
        run(&v1, TIMESTAMP_TEXT, BODY, &[SECRET], TIMESTAMP),
        Err(SignatureError::UnsupportedSignatureVersion { .. })
    ));
    for timestamp in ["", "-1", "1531420618.5", "now"] {
        let result = run(SIGNATURE, timestamp, BODY, &[SECRET], TIMESTAMP);
        assert!(
            is_malformed(&result, "X-Slack-Request-Timestamp"),
            "{timestamp:?}"
        );
    }
    let missing = check(
        default(SchemeKind::Slack),
        &[("X-Slack-Signature", SIGNATURE)],
        BODY.as_bytes(),
        None,
        &[SECRET],
        TIMESTAMP,
    );
    assert!(is_missing(&missing, "X-Slack-Request-Timestamp"));
}
