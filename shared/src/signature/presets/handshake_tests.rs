//! Unit tests of `handshake.rs`.

use super::*;

fn secret(s: &str) -> Secret {
    Secret::new(s)
}

fn post(
    h: Handshake,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Result<HandshakeAnswer, HandshakeError>> {
    h.answer_post(
        &Headers::from_pairs(headers.iter().copied()),
        body.as_bytes(),
        &secret("zoom-secret-token"),
    )
}

#[test]
fn slack_url_verification_is_answered_with_its_challenge_as_text() {
    let body = r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let answer = post(Handshake::SlackUrlVerification, &[], body)
        .expect("a handshake")
        .expect("answered");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.content_type, Some("text/plain"));
    assert_eq!(
        answer.body,
        b"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    // an event is not a handshake
    assert_eq!(
        post(
            Handshake::SlackUrlVerification,
            &[],
            r#"{"type":"event_callback"}"#
        ),
        None
    );
}

#[test]
fn zoom_url_validation_is_answered_with_the_token_and_its_hmac() {
    let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let answer = post(Handshake::ZoomUrlValidation, &[], body)
        .expect("a handshake")
        .expect("answered");
    assert_eq!(answer.content_type, Some("application/json"));
    // HMAC-SHA256("zoom-secret-token", plainToken), computed with
    // Python's hmac module
    assert_eq!(
        String::from_utf8(answer.body).expect("utf-8"),
        r#"{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"d9e0d764a78494688ba3f2d5c0ed4ca311394b4834d959759213424d2df961e3"}"#
    );
    assert_eq!(
        post(
            Handshake::ZoomUrlValidation,
            &[],
            r#"{"event":"meeting.started"}"#
        ),
        None
    );
    let missing = r#"{"event":"endpoint.url_validation","payload":{}}"#;
    assert_eq!(
        post(Handshake::ZoomUrlValidation, &[], missing)
            .expect("a handshake")
            .expect_err("refused")
            .to_string(),
        "Zoom endpoint.url_validation: payload.plainToken is missing or not a string"
    );
}

#[test]
fn twitch_callback_verification_is_answered_with_the_raw_challenge() {
    let headers = [(
        "Twitch-Eventsub-Message-Type",
        "webhook_callback_verification",
    )];
    let body = r#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow"}}"#;
    let answer = post(Handshake::TwitchCallbackVerification, &headers, body)
        .expect("a handshake")
        .expect("answered");
    assert_eq!(answer.body, b"pogchamp-kappa-360noscope-vohiyo");
    assert_eq!(answer.content_type, Some("text/plain"));
    let notification = [("Twitch-Eventsub-Message-Type", "notification")];
    assert_eq!(
        post(Handshake::TwitchCallbackVerification, &notification, body),
        None
    );
}

#[test]
fn discord_ping_gets_a_pong() {
    let answer = post(
        Handshake::DiscordPing,
        &[],
        r#"{"type":1,"id":"1","application_id":"2"}"#,
    )
    .expect("a handshake")
    .expect("answered");
    assert_eq!(answer.body, br#"{"type":1}"#);
    assert_eq!(post(Handshake::DiscordPing, &[], r#"{"type":2}"#), None);
    // a large body is an event, never parsed as a handshake
    let large = format!(
        r#"{{"type":1,"pad":"{}"}}"#,
        "a".repeat(MAX_HANDSHAKE_BODY_BYTES)
    );
    assert_eq!(post(Handshake::DiscordPing, &[], &large), None);
}

#[test]
fn asana_hook_secret_is_echoed_in_its_header_only_as_an_enrollment() {
    // Asana's documented example (developers.asana.com, "Establish a
    // webhook"): the header echoed, 200, no body
    let secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
    let headers = Headers::from_pairs([("X-Hook-Secret", secret)]);
    let (answer, handed) = Handshake::AsanaHookSecret
        .answer_enrollment(&headers)
        .expect("a handshake")
        .expect("answered");
    assert_eq!(handed, secret);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.content_type, None);
    assert_eq!(answer.headers, vec![("X-Hook-Secret", secret.to_owned())]);
    assert!(answer.body.is_empty());
    // an event is not a handshake; nor is it one of `answer_post`'s
    let event = Headers::from_pairs([("X-Hook-Signature", "00")]);
    assert_eq!(Handshake::AsanaHookSecret.answer_enrollment(&event), None);
    assert_eq!(
        post(Handshake::AsanaHookSecret, &[("X-Hook-Secret", secret)], ""),
        None
    );
    // only Asana hands a secret over
    assert_eq!(
        Handshake::SlackUrlVerification.answer_enrollment(&headers),
        None
    );
    // a secret that could not be a header value or is unbounded
    for bad in ["", "a b", &"a".repeat(MAX_CHALLENGE_BYTES + 1)] {
        let headers = Headers::from_pairs([("X-Hook-Secret", bad)]);
        assert!(matches!(
            Handshake::AsanaHookSecret.answer_enrollment(&headers),
            Some(Err(HandshakeError::Unusable {
                field: "X-Hook-Secret",
                ..
            }))
        ));
    }
}

#[test]
fn meta_answers_the_challenge_only_for_a_matching_verify_token() {
    let tokens = [secret("old-token"), secret("meta-verify-token")];
    let query = |token: &'static str| {
        vec![
            ("hub.mode", "subscribe"),
            ("hub.challenge", "1158201444"),
            ("hub.verify_token", token),
        ]
    };
    let answer = Handshake::MetaVerifyToken
        .answer_get(&query("meta-verify-token"), &tokens)
        .expect("answered");
    assert_eq!(answer.body, b"1158201444");
    for wrong in ["meta-verify-toke", "", "meta-verify-token2"] {
        let error = Handshake::MetaVerifyToken
            .answer_get(&query(wrong), &tokens)
            .expect_err("refused");
        assert_eq!(
            error,
            HandshakeError::WrongVerifyToken {
                handshake: "Meta GET hub.challenge (verify token)"
            }
        );
        assert!(!error.to_string().contains("meta-verify-token"));
    }
    let unsubscribe = [
        ("hub.mode", "unsubscribe"),
        ("hub.challenge", "1"),
        ("hub.verify_token", "meta-verify-token"),
    ];
    assert!(matches!(
        Handshake::MetaVerifyToken.answer_get(&unsubscribe, &tokens),
        Err(HandshakeError::WrongMode { .. })
    ));
    assert!(matches!(
        Handshake::MetaVerifyToken.answer_get(&query("meta-verify-token"), &[]),
        Err(HandshakeError::WrongVerifyToken { .. })
    ));
}

#[test]
fn dropbox_challenge_is_echoed_bounded_as_plain_text() {
    let answer = Handshake::DropboxChallenge
        .answer_get(&[("challenge", "zSJnL7nKY3aEbBQG")], &[])
        .expect("answered");
    assert_eq!(answer.body, b"zSJnL7nKY3aEbBQG");
    assert_eq!(answer.content_type, Some("text/plain"));
    assert!(
        answer
            .headers
            .contains(&("X-Content-Type-Options", "nosniff".to_owned()))
    );
    let long = "a".repeat(MAX_CHALLENGE_BYTES + 1);
    for bad in [long.as_str(), "", "<script>alert(1)</script> x", "a\u{7f}b"] {
        assert!(
            matches!(
                Handshake::DropboxChallenge.answer_get(&[("challenge", bad)], &[]),
                Err(HandshakeError::Unusable { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(
        Handshake::DropboxChallenge
            .answer_get(&[("challenge", &"a".repeat(MAX_CHALLENGE_BYTES))], &[])
            .is_ok()
    );
    assert!(matches!(
        Handshake::DropboxChallenge.answer_get(&[], &[]),
        Err(HandshakeError::Missing {
            field: "challenge",
            ..
        })
    ));
}

#[test]
fn each_handshake_is_answered_only_on_its_method() {
    for h in [
        Handshake::MetaVerifyToken,
        Handshake::DropboxChallenge,
        Handshake::OktaVerification,
        Handshake::XCrc,
    ] {
        assert!(h.is_get());
        // A POST to these providers' endpoints is an event, never a
        // handshake: ingest stores it (even one shaped like another
        // provider's handshake).
        for body in ["{}", r#"{"type":"url_verification","challenge":"x"}"#] {
            assert_eq!(post(h, &[], body), None, "{h:?}");
        }
    }
    for h in [
        Handshake::SlackUrlVerification,
        Handshake::ZoomUrlValidation,
        Handshake::TwitchCallbackVerification,
        Handshake::DiscordPing,
        Handshake::AsanaHookSecret,
    ] {
        assert!(!h.is_get());
        assert!(matches!(
            h.answer_get(&[], &[]),
            Err(HandshakeError::WrongMethod { method: "GET", .. })
        ));
    }
    assert!(!Handshake::DropboxChallenge.is_authenticated());
    assert!(Handshake::MetaVerifyToken.is_authenticated());
}

fn get<'a>(query: &'a [(&'a str, &'a str)], headers: &'a Headers<'a>) -> GetRequest<'a, 'a> {
    GetRequest { query, headers }
}

#[test]
fn okta_verification_echoes_the_challenge_only_with_a_partners_secret() {
    let secrets = [secret("old-okta-secret"), secret("okta-hook-secret")];
    let headers = Headers::from_pairs([
        ("Authorization", "okta-hook-secret"),
        (
            "X-Okta-Verification-Challenge",
            "E5dYzs0kOQ-ZuCzOOaFvt1V1XKC2CLLIDjTRIZ3g",
        ),
    ]);
    let answer = Handshake::OktaVerification
        .answer_get_request(&get(&[], &headers), &[], &secrets)
        .expect("answered");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.content_type, Some("application/json"));
    assert_eq!(
        answer.body,
        br#"{"verification":"E5dYzs0kOQ-ZuCzOOaFvt1V1XKC2CLLIDjTRIZ3g"}"#
    );
    // Another authentication value, or none: refused, naming the header.
    for auth in [Some("okta-hook-secreT"), Some(""), None] {
        let mut pairs = vec![("X-Okta-Verification-Challenge", "abc")];
        if let Some(auth) = auth {
            pairs.push(("Authorization", auth));
        }
        let headers = Headers::from_pairs(pairs);
        assert_eq!(
            Handshake::OktaVerification.answer_get_request(&get(&[], &headers), &[], &secrets),
            Err(HandshakeError::Unauthenticated {
                handshake: Handshake::OktaVerification.as_str(),
                header: "Authorization",
            })
        );
    }
    // Authenticated, but without a usable challenge.
    let headers = Headers::from_pairs([("Authorization", "okta-hook-secret")]);
    assert!(matches!(
        Handshake::OktaVerification.answer_get_request(&get(&[], &headers), &[], &secrets),
        Err(HandshakeError::Missing {
            field: "X-Okta-Verification-Challenge",
            ..
        })
    ));
    let headers = Headers::from_pairs([
        ("Authorization", "okta-hook-secret"),
        ("X-Okta-Verification-Challenge", "<script>"),
    ]);
    assert!(
        Handshake::OktaVerification
            .answer_get_request(&get(&[], &headers), &[], &secrets)
            .is_ok(),
        "visible ASCII is echoed inside JSON"
    );
    let headers = Headers::from_pairs([
        ("Authorization", "okta-hook-secret"),
        ("X-Okta-Verification-Challenge", "two words"),
    ]);
    assert!(matches!(
        Handshake::OktaVerification.answer_get_request(&get(&[], &headers), &[], &secrets),
        Err(HandshakeError::Unusable { .. })
    ));
    // Without the request's headers and secrets it cannot be answered.
    assert!(matches!(
        Handshake::OktaVerification.answer_get(&[], &[]),
        Err(HandshakeError::NeedsRequest { .. })
    ));
}

#[test]
fn x_crc_is_answered_with_the_hmac_of_the_token_and_never_signs_json() {
    let secrets = [secret("hookbox-test-secret")];
    let headers = Headers::new();
    // tools/presets/compute_vectors.py ("x-activity crc"): Python's hmac.
    let answer = Handshake::XCrc
        .answer_get_request(
            &get(&[("crc_token", "challenge_token_123")], &headers),
            &[],
            &secrets,
        )
        .expect("answered");
    assert_eq!(answer.content_type, Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON");
    assert_eq!(
        body["response_token"],
        format!("sha256={}", x_crc("challenge_token_123", &secrets[0]))
    );
    assert_eq!(
        body["response_token"],
        "sha256=hkc+zqvShRavx2Sxr/dcftQVszv7M0GhOfV/DZnR8Ks="
    );
    // A token that is JSON (or could open a JSON text) would have X's
    // signature of that body: refused.
    for token in ["12345", "true", "null", "\"x\"", "{\"a\":1}", "[1]", "-1e5"] {
        assert_eq!(
            Handshake::XCrc.answer_get_request(
                &get(&[("crc_token", token)], &headers),
                &[],
                &secrets
            ),
            Err(HandshakeError::JsonChallenge {
                handshake: Handshake::XCrc.as_str()
            }),
            "{token}"
        );
    }
    assert!(matches!(
        Handshake::XCrc.answer_get_request(&get(&[], &headers), &[], &secrets),
        Err(HandshakeError::Missing {
            field: "crc_token",
            ..
        })
    ));
    assert!(matches!(
        Handshake::XCrc.answer_get_request(&get(&[("crc_token", "a b")], &headers), &[], &secrets),
        Err(HandshakeError::Unusable { .. })
    ));
    assert!(matches!(
        Handshake::XCrc.answer_get(&[("crc_token", "abc")], &[]),
        Err(HandshakeError::NeedsRequest { .. })
    ));
    assert!(!Handshake::XCrc.is_authenticated());
    assert!(Handshake::OktaVerification.is_authenticated());
    // The older GETs are answered the same way through either entry.
    let query = [("challenge", "abc")];
    assert_eq!(
        Handshake::DropboxChallenge.answer_get_request(&get(&query, &headers), &[], &[]),
        Handshake::DropboxChallenge.answer_get(&query, &[])
    );
}
