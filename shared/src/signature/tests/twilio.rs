use super::*;
use crate::signature::SchemeKind;

// Known-answer vectors of Twilio's official Python SDK tests:
// https://github.com/twilio/twilio-python/blob/main/tests/unit/test_request_validator.py
// Auth token "12345", URL https://mycompany.com/myapp.php?foo=1&bar=2 and
// the form parameters below.
const TOKEN: &str = "12345";
const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
const FORM: &str = "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309";
const EXPECTED: &str = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
/// Same request, signed over the URL with the explicit port 443.
const EXPECTED_PORT_443: &str = "kvajT1Ptam85bY51eRf/AJRuM3w=";
/// Same request over http, signed with the explicit port 80.
const EXPECTED_HTTP_PORT_80: &str = "0ZXoZLH/DfblKGATFgpif+LLRf4=";
/// Same request over http://mycompany.com:1234/…, signed with that port.
const EXPECTED_HTTP_PORT_1234: &str = "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=";
/// JSON body, bound by `bodySHA256` in the URL.
const JSON_BODY: &str = r#"{"property": "value", "boolean": true}"#;
const JSON_BODY_SHA256: &str = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
const EXPECTED_JSON: &str = "a9nBmqA0ju/hNViExpshrM61xv4=";
/// Repeated parameter names (values sorted too).
const DUPLICATE_FORM: &str = "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234";
const EXPECTED_DUPLICATE: &str = "IK+Dwps556ElfBT0I3Rgjkr1wJU=";

const FORM_TYPE: &str = "application/x-www-form-urlencoded";

fn run(
    signature: &str,
    content_type: Option<&str>,
    body: &str,
    url: Option<&str>,
    secrets: &[&str],
) -> Result<Verified<'static>, SignatureError> {
    let mut headers = vec![("X-Twilio-Signature", signature)];
    if let Some(content_type) = content_type {
        headers.push(("Content-Type", content_type));
    }
    check(
        default(SchemeKind::Twilio),
        &headers,
        body.as_bytes(),
        url,
        secrets,
        0,
    )
}

#[test]
fn published_form_vector_verifies() {
    let verified = run(EXPECTED, Some(FORM_TYPE), FORM, Some(URL), &[TOKEN]).expect("valid");
    assert_eq!(verified.scheme, SchemeKind::Twilio);
    // Parameter order in the body does not matter; a changed value does.
    let reordered = "To=%2B18005551212&Caller=%2B14158675309&CallSid=CA1234567890ABCDE&From=%2B14158675309&Digits=1234";
    assert!(run(EXPECTED, Some(FORM_TYPE), reordered, Some(URL), &[TOKEN]).is_ok());
    let changed = FORM.replace("Digits=1234", "Digits=1235");
    assert!(is_no_match(&run(
        EXPECTED,
        Some(FORM_TYPE),
        &changed,
        Some(URL),
        &[TOKEN]
    )));
    // With a charset parameter, any case.
    let typed = "Application/X-WWW-Form-Urlencoded; charset=UTF-8";
    assert!(run(EXPECTED, Some(typed), FORM, Some(URL), &[TOKEN]).is_ok());
}

#[test]
fn published_port_vectors_verify() {
    // test_validation_removes_port_on_https: signed without port.
    let with_port = URL.replace(".com", ".com:1234");
    assert!(run(EXPECTED, Some(FORM_TYPE), FORM, Some(&with_port), &[TOKEN]).is_ok());
    // test_validation_adds_port_on_https: signed with :443.
    assert!(
        run(
            EXPECTED_PORT_443,
            Some(FORM_TYPE),
            FORM,
            Some(URL),
            &[TOKEN]
        )
        .is_ok()
    );
    // test_validation_adds_port_on_http: signed with :80.
    let http = URL.replace("https", "http");
    assert!(
        run(
            EXPECTED_HTTP_PORT_80,
            Some(FORM_TYPE),
            FORM,
            Some(&http),
            &[TOKEN]
        )
        .is_ok()
    );
    // test_validation_removes_port_on_http: signed with :1234, kept.
    let http_port = http.replace(".com", ".com:1234");
    assert!(
        run(
            EXPECTED_HTTP_PORT_1234,
            Some(FORM_TYPE),
            FORM,
            Some(&http_port),
            &[TOKEN]
        )
        .is_ok()
    );
    // A different host is a different URL.
    let other = URL.replace("mycompany", "theircompany");
    assert!(is_no_match(&run(
        EXPECTED,
        Some(FORM_TYPE),
        FORM,
        Some(&other),
        &[TOKEN]
    )));
}

#[test]
fn published_duplicate_parameter_vector_verifies() {
    assert!(
        run(
            EXPECTED_DUPLICATE,
            Some(FORM_TYPE),
            DUPLICATE_FORM,
            Some(URL),
            &[TOKEN]
        )
        .is_ok()
    );
}

#[test]
fn published_json_body_vector_verifies_and_binds_the_body() {
    let url = format!("{URL}&bodySHA256={JSON_BODY_SHA256}");
    let ok = run(
        EXPECTED_JSON,
        Some("application/json"),
        JSON_BODY,
        Some(&url),
        &[TOKEN],
    );
    assert!(ok.is_ok(), "{ok:?}");
    // The URL signature is valid, but the body is not the one hashed.
    let tampered = JSON_BODY.replace("true", "false");
    assert_eq!(
        run(
            EXPECTED_JSON,
            Some("application/json"),
            &tampered,
            Some(&url),
            &[TOKEN]
        ),
        Err(SignatureError::BodyHashMismatch)
    );
    // A JSON body without bodySHA256 would be unsigned: refused.
    assert!(matches!(
        run(
            EXPECTED,
            Some("application/json"),
            JSON_BODY,
            Some(URL),
            &[TOKEN]
        ),
        Err(SignatureError::UnsignedBody { .. })
    ));
    assert!(matches!(
        run(EXPECTED, None, FORM, Some(URL), &[TOKEN]),
        Err(SignatureError::UnsignedBody { .. })
    ));
}

#[test]
fn rotation_any_configured_token_may_match() {
    let verified = run(EXPECTED, Some(FORM_TYPE), FORM, Some(URL), &["old", TOKEN]).expect("valid");
    assert_eq!(verified.secret_index, 1);
    assert!(is_no_match(&run(
        EXPECTED,
        Some(FORM_TYPE),
        FORM,
        Some(URL),
        &["old"]
    )));
}

#[test]
fn url_is_required_and_must_parse() {
    assert_eq!(
        run(EXPECTED, Some(FORM_TYPE), FORM, None, &[TOKEN]),
        Err(SignatureError::MissingUrl { scheme: "twilio" })
    );
    for url in [
        "/myapp.php?foo=1",
        "ftp://mycompany.com/",
        "https://mycompany.com:x/",
    ] {
        assert!(
            matches!(
                run(EXPECTED, Some(FORM_TYPE), FORM, Some(url), &[TOKEN]),
                Err(SignatureError::MalformedUrl { .. })
            ),
            "{url}"
        );
    }
    let bad_hash = format!("{URL}&bodySHA256=abc");
    assert!(matches!(
        run(
            EXPECTED_JSON,
            Some("application/json"),
            JSON_BODY,
            Some(&bad_hash),
            &[TOKEN]
        ),
        Err(SignatureError::MalformedUrl { .. })
    ));
}

#[test]
fn malformed_and_missing_headers() {
    for signature in [
        "",
        "RSOYDt4T1cUTdK1PDd93",
        "not base64!",
        "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    ] {
        let result = run(signature, Some(FORM_TYPE), FORM, Some(URL), &[TOKEN]);
        assert!(
            is_malformed(&result, "X-Twilio-Signature"),
            "{signature:?}: {result:?}"
        );
    }
    let missing = check(
        default(SchemeKind::Twilio),
        &[],
        FORM.as_bytes(),
        Some(URL),
        &[TOKEN],
        0,
    );
    assert!(is_missing(&missing, "X-Twilio-Signature"));
}
