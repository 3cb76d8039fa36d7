use super::*;
use crate::signature::{Algorithm, Encoding, GenericHmacConfig};

fn config(header: &str) -> GenericHmacConfig {
    GenericHmacConfig::new(header)
}

#[test]
fn configured_like_github_verifies_the_published_github_vector() {
    // https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
    let mut c = config("X-Hub-Signature-256");
    c.prefix = Some("sha256=".into());
    let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    let result = check(
        SchemeConfig::GenericHmac(c.clone()),
        &[("x-hub-signature-256", header)],
        b"Hello, World!",
        None,
        &["It's a Secret to Everybody"],
        0,
    );
    assert_eq!(
        result.map(|v| v.scheme),
        Ok(crate::signature::SchemeKind::GenericHmac)
    );
    // Without the prefix the header is malformed.
    let result = check(
        SchemeConfig::GenericHmac(c),
        &[("X-Hub-Signature-256", &header["sha256=".len()..])],
        b"Hello, World!",
        None,
        &["It's a Secret to Everybody"],
        0,
    );
    assert!(is_malformed(&result, "X-Hub-Signature-256"));
}

#[test]
fn configured_like_slack_verifies_the_published_slack_vector() {
    // https://api.slack.com/authentication/verifying-requests-from-slack
    use super::slack::{BODY, SECRET, SIGNATURE, TIMESTAMP, TIMESTAMP_TEXT};
    let mut c = config("X-Slack-Signature");
    c.prefix = Some("v0=".into());
    c.timestamp_header = Some("X-Slack-Request-Timestamp".into());
    c.template = Some("v0:{timestamp}:{body}".into());
    let headers = [
        ("X-Slack-Signature", SIGNATURE),
        ("X-Slack-Request-Timestamp", TIMESTAMP_TEXT),
    ];
    let run = |now| {
        check(
            SchemeConfig::GenericHmac(c.clone()),
            &headers,
            BODY.as_bytes(),
            None,
            &[SECRET],
            now,
        )
    };
    let verified = run(TIMESTAMP).expect("valid");
    assert_eq!(verified.timestamp(), Some(at(TIMESTAMP)));
    // Tolerance boundaries, ±1 s.
    assert!(run(TIMESTAMP + 300).is_ok());
    assert!(run(TIMESTAMP - 300).is_ok());
    assert!(matches!(
        run(TIMESTAMP + 301),
        Err(SignatureError::TimestampTooOld { .. })
    ));
    assert!(matches!(
        run(TIMESTAMP - 301),
        Err(SignatureError::TimestampInFuture { .. })
    ));
    let missing = check(
        SchemeConfig::GenericHmac(c.clone()),
        &headers[..1],
        BODY.as_bytes(),
        None,
        &[SECRET],
        TIMESTAMP,
    );
    assert!(is_missing(&missing, "X-Slack-Request-Timestamp"));
}

#[test]
fn sha1_hex_and_sha512_base64() {
    // Values computed once, independently, with Python's hmac module:
    //   hmac.new(b"generic-secret", b"payload-bytes", hashlib.sha1).hexdigest()
    //   base64.b64encode(hmac.new(b"generic-secret",
    //       b"1700000000|payload-bytes", hashlib.sha512).digest())
    let mut sha1 = config("X-Signature");
    sha1.algorithm = Algorithm::Sha1;
    let result = check(
        SchemeConfig::GenericHmac(sha1.clone()),
        &[("X-Signature", "52585017b4d30a3abe6ab9ddbb2ea1cf357eea6d")],
        b"payload-bytes",
        None,
        &["other", "generic-secret"],
        0,
    );
    assert_eq!(result.map(|v| v.secret_index), Ok(1));
    let result = check(
        SchemeConfig::GenericHmac(sha1),
        &[("X-Signature", "52585017b4d30a3abe6ab9ddbb2ea1cf357eea6d")],
        b"payload-bytez",
        None,
        &["generic-secret"],
        0,
    );
    assert!(is_no_match(&result));

    let mut sha512 = config("X-Signature");
    sha512.algorithm = Algorithm::Sha512;
    sha512.encoding = Encoding::Base64;
    sha512.timestamp_header = Some("X-Timestamp".into());
    sha512.template = Some("{timestamp}|{body}".into());
    let sig =
        "RJpP1RSNkYtUEfvLx1zRPme1eHNEx9GmAKXjP57zHgtek+Eps0Ctkz0m4MYmbpVqzlkFNa+4K+AifyYFSHGDsA==";
    let result = check(
        SchemeConfig::GenericHmac(sha512.clone()),
        &[("X-Signature", sig), ("X-Timestamp", "1700000000")],
        b"payload-bytes",
        None,
        &["generic-secret"],
        1_700_000_000,
    );
    assert!(result.is_ok(), "{result:?}");
    // A SHA-256-sized value is malformed for SHA-512.
    let result = check(
        SchemeConfig::GenericHmac(sha512),
        &[
            (
                "X-Signature",
                "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ),
            ("X-Timestamp", "1700000000"),
        ],
        b"payload-bytes",
        None,
        &["generic-secret"],
        1_700_000_000,
    );
    assert!(is_malformed(&result, "X-Signature"));
}

#[test]
fn invalid_configurations_are_refused_when_building_the_verifier() {
    let mut c = config("X-Sig");
    c.template = Some("{timestamp}{body}".into());
    assert!(Verifier::new(SchemeConfig::GenericHmac(c)).is_err());
    assert!(Verifier::for_scheme(crate::signature::SchemeKind::GenericHmac).is_err());
}
