//! Refusals named precisely: malformed headers, a JWS from another issuer
//! or algorithm, Twilio's two hashes kept apart, Mandrill's URL and form
//! parameters, the signed method's default, a body timestamp of the wrong
//! JSON type (Linear).

use hookbox::signature::{
    Headers, Recipe, Secret, SignatureError, SignedRequest, TimeFormat, Verified,
};

use super::{Vector, all_vectors, at, computed, official, preset, verify};

/// Verifies `headers` and `body` with preset `name` at `now`.
fn check(
    name: &str,
    headers: &[(&str, &str)],
    body: &str,
    secrets: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    let verifier = preset(name).verifier().expect("compiles");
    let request = SignedRequest::new(
        body.as_bytes(),
        Headers::from_pairs(headers.iter().copied()),
    );
    let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new(*s)).collect();
    verifier
        .verify_at(&request, &secrets, at(now))
        .map(Verified::into_owned)
}

fn malformed(result: &Result<Verified<'_>, SignatureError>, header: &str) -> bool {
    matches!(result, Err(SignatureError::MalformedHeader { header: h, .. }) if h.eq_ignore_ascii_case(header))
}

#[test]
fn malformed_headers_are_named_not_guessed() {
    let secret = ["s"];
    // A timestamp that is not milliseconds, not RFC 3339, given twice.
    let webflow = check(
        "webflow",
        &[
            ("x-webflow-timestamp", "17e9"),
            ("x-webflow-signature", "00"),
        ],
        "{}",
        &secret,
        0,
    );
    assert!(malformed(&webflow, "x-webflow-timestamp"), "{webflow:?}");
    // Milliseconds whose last three bytes split a character: malformed,
    // not a panic (found by fuzz/fuzz_targets/verify_any.rs).
    for timestamp in [";ÿ00", "170000000000ÿ", "ÿÿÿÿ"] {
        let webflow = check(
            "webflow",
            &[
                ("x-webflow-timestamp", timestamp),
                ("x-webflow-signature", "00"),
            ],
            "{}",
            &secret,
            0,
        );
        assert!(malformed(&webflow, "x-webflow-timestamp"), "{webflow:?}");
    }
    let twitch = check(
        "twitch-eventsub",
        &[
            ("Twitch-Eventsub-Message-Id", "1"),
            ("Twitch-Eventsub-Message-Timestamp", "yesterday"),
            ("Twitch-Eventsub-Message-Signature", "sha256=00"),
        ],
        "{}",
        &secret,
        0,
    );
    assert!(
        malformed(&twitch, "Twitch-Eventsub-Message-Timestamp"),
        "{twitch:?}"
    );
    let paddle = check(
        "paddle",
        &[("Paddle-Signature", "ts=1;ts=2;h1=00")],
        "{}",
        &secret,
        1,
    );
    assert!(malformed(&paddle, "Paddle-Signature"), "{paddle:?}");
    // Signatures of the wrong length or alphabet: skipped, none left.
    let short = check(
        "sentry",
        &[("Sentry-Hook-Signature", "abcd")],
        "{}",
        &secret,
        0,
    );
    assert!(malformed(&short, "Sentry-Hook-Signature"), "{short:?}");
    // No signature with the expected prefix: another version.
    let version = check(
        "pagerduty",
        &[("X-PagerDuty-Signature", &format!("v2={}", "0".repeat(64)))],
        "{}",
        &secret,
        0,
    );
    assert!(
        matches!(
            version,
            Err(SignatureError::UnsupportedSignatureVersion { .. })
        ),
        "{version:?}"
    );
    // The same header twice with different values is ambiguous.
    let twice = check(
        "dropbox",
        &[("X-Dropbox-Signature", "00"), ("x-dropbox-signature", "01")],
        "{}",
        &secret,
        0,
    );
    assert!(malformed(&twice, "X-Dropbox-Signature"), "{twice:?}");
    // Basic auth: another scheme, not base64, no colon.
    for (value, unsupported) in [
        ("Bearer aG9va2JveDpzM2NyZXQ=", true),
        ("Basic !!!", false),
        ("Basic aG9va2JveA==", false),
        ("Basic", false),
    ] {
        let result = check(
            "chargebee",
            &[("Authorization", value)],
            "{}",
            &["hookbox:s3cret"],
            0,
        );
        if unsupported {
            assert!(
                matches!(
                    result,
                    Err(SignatureError::UnsupportedSignatureVersion { .. })
                ),
                "{value}: {result:?}"
            );
        } else {
            assert!(malformed(&result, "Authorization"), "{value}: {result:?}");
        }
    }
    // A token header that is absent.
    let gitlab = check("gitlab", &[], "{}", &["t"], 0);
    assert!(
        matches!(&gitlab, Err(SignatureError::MissingHeader { header }) if header == "X-Gitlab-Token"),
        "{gitlab:?}"
    );
    // A body-carried signature in a body that is not JSON.
    let mailgun = check("mailgun", &[], "not json", &["k"], 0);
    assert!(mailgun.is_err(), "{mailgun:?}");
    // A configuration secret that cannot be a key is a configuration error.
    let airtable = check(
        "airtable",
        &[(
            "X-Airtable-Content-MAC",
            &format!("hmac-sha256={}", "0".repeat(64)),
        )],
        "{}",
        &["not base64!"],
        0,
    );
    assert!(
        airtable
            .as_ref()
            .is_err_and(SignatureError::is_configuration_error),
        "{airtable:?}"
    );
}

#[test]
fn a_jws_must_be_hs256_from_its_issuer_over_this_body() {
    const BODY: &str = r#"{"id":"evt_1","type":"test.event","data":{"n":42}}"#;
    let secret = ["hookbox-test-secret"];
    let jws = |token: &str| {
        check(
            "netlify",
            &[("X-Webhook-Signature", token)],
            BODY,
            &secret,
            0,
        )
    };
    assert!(jws(computed::NETLIFY_JWS).is_ok());
    // Correctly signed, by another issuer.
    let other = jws(computed::OTHER_ISSUER_JWS);
    assert!(malformed(&other, "X-Webhook-Signature"), "{other:?}");
    // The same claims and MAC under another `alg` (`none`, HS512): refused
    // before any MAC is computed, the token's `alg` chooses nothing.
    let (_, rest) = computed::NETLIFY_JWS
        .split_once('.')
        .expect("a compact JWS");
    for alg in ["eyJhbGciOiJub25lIn0", "eyJhbGciOiJIUzUxMiJ9"] {
        let token = format!("{alg}.{rest}");
        let result = jws(&token);
        assert!(
            matches!(
                result,
                Err(SignatureError::UnsupportedSignatureVersion { .. })
            ),
            "{result:?}"
        );
    }
    // Not three parts, a signature of the wrong length, padding.
    for token in [
        "a.b",
        "a.b.c.d",
        &format!("{}A", computed::NETLIFY_JWS),
        &format!("{}=", computed::NETLIFY_JWS),
    ] {
        let result = jws(token);
        assert!(
            malformed(&result, "X-Webhook-Signature"),
            "{token}: {result:?}"
        );
    }
    // Another body than the one hashed in the claims.
    assert!(matches!(
        check(
            "netlify",
            &[("X-Webhook-Signature", computed::NETLIFY_JWS)],
            "{}",
            &secret,
            0
        ),
        Err(SignatureError::BodyHashMismatch)
    ));
}

#[test]
fn twilio_sha1_and_sha256_do_not_take_each_others_signatures() {
    let find = |name: &str| {
        all_vectors()
            .find(|v| v.preset == name && v.body.starts_with("CallSid="))
            .copied()
            .unwrap_or_else(|| panic!("a {name} form vector"))
    };
    let (sha1, sha256) = (find("twilio"), find("twilio-sha256"));
    for (vector, other) in [(sha1, "twilio-sha256"), (sha256, "twilio")] {
        // The other's signature, even with this vector's own secret: a
        // base64 MAC of the other length is malformed.
        let swapped = Vector {
            preset: other,
            ..vector
        };
        let result = verify(&swapped, vector.body.as_bytes(), vector.secrets, vector.now);
        assert!(
            malformed(&result, "X-Twilio-Signature"),
            "{other}: {result:?}"
        );
    }
}

#[test]
fn mandrill_signs_the_url_as_entered_and_the_form_parameters() {
    let vector = computed::VECTORS
        .iter()
        .find(|v| v.preset == "mandrill" && v.secrets.len() == 1)
        .copied()
        .expect("a mandrill vector");
    assert!(verify(&vector, vector.body.as_bytes(), vector.secrets, vector.now).is_ok());
    // The URL exactly as entered: a trailing slash, or the port Twilio's
    // recipe would also try, is another URL.
    for url in [
        "https://hooks.example.com/webhooks/mandrill/",
        "https://hooks.example.com:443/webhooks/mandrill",
    ] {
        let other = Vector {
            url: Some(url),
            ..vector
        };
        assert!(
            matches!(
                verify(&other, vector.body.as_bytes(), vector.secrets, vector.now),
                Err(SignatureError::NoMatchingSignature { .. })
            ),
            "{url}"
        );
    }
    // No URL: the verifier says it needs one.
    let none = Vector {
        url: None,
        ..vector
    };
    assert!(matches!(
        verify(&none, vector.body.as_bytes(), vector.secrets, vector.now),
        Err(SignatureError::MissingUrl { .. })
    ));
    // A body that is not form-encoded would not be signed: refused.
    let json = Vector {
        headers: &[
            ("X-Mandrill-Signature", "5zJiSweeckKy1/XtjADuGxi6S2A="),
            ("Content-Type", "application/json"),
        ],
        ..vector
    };
    assert!(matches!(
        verify(&json, vector.body.as_bytes(), vector.secrets, vector.now),
        Err(SignatureError::UnsignedBody { .. })
    ));
    // The parameters are signed decoded: another encoding of the same
    // text verifies; an added parameter does not.
    let added = format!("{}&a=1", vector.body);
    assert!(matches!(
        verify(&vector, added.as_bytes(), vector.secrets, vector.now),
        Err(SignatureError::NoMatchingSignature { .. })
    ));
    let plus = vector.body.replace("%40", "@");
    assert!(verify(&vector, plus.as_bytes(), vector.secrets, vector.now).is_ok());
}

#[test]
fn a_signed_method_defaults_to_post() {
    // Ingest does not pass the method (its route is POST only): HubSpot's
    // published v3 vector verifies without it, and not as another method.
    let vector = official::VECTORS
        .iter()
        .find(|v| v.preset == "hubspot")
        .expect("hubspot vector");
    let without = Vector {
        method: None,
        ..*vector
    };
    assert!(verify(&without, vector.body.as_bytes(), vector.secrets, vector.now).is_ok());
    let put = Vector {
        method: Some("PUT"),
        ..*vector
    };
    assert!(matches!(
        verify(&put, vector.body.as_bytes(), vector.secrets, vector.now),
        Err(SignatureError::NoMatchingSignature { .. })
    ));
}

#[test]
fn linear_refuses_a_webhook_timestamp_written_as_a_string_naming_the_field() {
    // Signed correctly (hex HMAC-SHA256 with `hookbox-test-secret`), but
    // `webhookTimestamp` is a JSON string: Linear's SDK refuses it
    // (`typeof timestamp !== "number"`), and so does the preset.
    let string = check(
        "linear",
        &[(
            "Linear-Signature",
            "525fe13db5b9689af4df650dfd4b1ea0176d12726a18aca8c48af7bb04ae4945",
        )],
        r#"{"action":"create","type":"Issue","webhookTimestamp":"1700000000000"}"#,
        &["hookbox-test-secret"],
        1_700_000_000,
    );
    assert!(malformed(&string, "/webhookTimestamp"), "{string:?}");
    let shown = format!("{}", string.as_ref().expect_err("refused"));
    assert!(
        shown.contains("/webhookTimestamp") && shown.contains("string"),
        "{shown}"
    );
    // A boolean is no number either.
    let boolean = check(
        "linear",
        &[(
            "Linear-Signature",
            "23d428e05f0f9e7e060dfba42adcf3387568d2e14f26f220ceaeee80edbeed4d",
        )],
        r#"{"action":"create","type":"Issue","webhookTimestamp":true}"#,
        &["hookbox-test-secret"],
        1_700_000_000,
    );
    assert!(malformed(&boolean, "/webhookTimestamp"), "{boolean:?}");
    // The same body with the number verifies (the computed vector).
    let number = check(
        "linear",
        &[(
            "Linear-Signature",
            "8f907dcb89784bd6bc197feb5443fb4f4d49acaf389d1e974ecf358607923a57",
        )],
        r#"{"action":"create","type":"Issue","webhookTimestamp":1700000000000}"#,
        &["hookbox-test-secret"],
        1_700_000_000,
    );
    assert!(number.is_ok(), "{number:?}");
    // Mailgun's timestamp stays a string, as Mailgun sends it.
    assert!(matches!(
        preset("mailgun").recipe,
        Recipe::Signed(signed) if signed.timestamp.is_some_and(|t| t.format == TimeFormat::Seconds)
    ));
}
