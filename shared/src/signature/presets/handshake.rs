//! Answering the handshakes providers require before they send events, byte
//! for byte as each documents it. Pure: the caller decides when a request
//! is a handshake's and sends the [`HandshakeAnswer`]; nothing here stores
//! anything. Ingest calls [`Handshake::answer_post`] once a partner's
//! request verified (`inbox::ingest`), [`Handshake::answer_get`] (Meta,
//! Dropbox) for a GET the authorizer let through, and
//! [`Handshake::answer_enrollment`] for Asana's unsigned first request, only
//! while the partner is enrolling (`config::enroll`: the secret it hands
//! over is sealed to the operator's key, never kept).
//!
//! A challenge that is echoed is bounded ([`MAX_CHALLENGE_BYTES`]) and must
//! be visible ASCII: what the providers send, and nothing a browser or a
//! log could take for markup or a control sequence.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::Handshake;
use crate::signature::{Headers, Secret};

/// The longest challenge echoed back.
pub const MAX_CHALLENGE_BYTES: usize = 1024;

/// The largest body read as a possible handshake: theirs are a few hundred
/// bytes, so an ordinary event (up to 4 MiB) is not parsed a second time.
const MAX_HANDSHAKE_BODY_BYTES: usize = 16 * 1024;

/// What to send back: status, content type, extra headers and the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeAnswer {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, when there is a body.
    pub content_type: Option<&'static str>,
    /// Other headers (`X-Content-Type-Options`, Asana's `X-Hook-Secret`).
    pub headers: Vec<(&'static str, String)>,
    /// The body, exactly.
    pub body: Vec<u8>,
}

impl HandshakeAnswer {
    fn text(challenge: &str) -> Self {
        Self {
            status: 200,
            content_type: Some("text/plain"),
            headers: vec![("X-Content-Type-Options", "nosniff".to_owned())],
            body: challenge.as_bytes().to_vec(),
        }
    }

    fn json(body: String) -> Self {
        Self {
            status: 200,
            content_type: Some("application/json"),
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }
}

/// Why a handshake was not answered (the caller answers 4xx with this
/// text: it names the field, never a secret or a token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The challenge (or token to sign) is absent, empty or not a string.
    #[error("{handshake}: {field} is missing or not a string")]
    Missing {
        /// The handshake.
        handshake: &'static str,
        /// The field, as the provider names it.
        field: &'static str,
    },
    /// The challenge is too long or has other than visible ASCII.
    #[error(
        "{handshake}: {field} must be 1 to {MAX_CHALLENGE_BYTES} bytes of visible ASCII \
         (got {len} bytes)"
    )]
    Unusable {
        /// The handshake.
        handshake: &'static str,
        /// The field.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// Meta's `hub.mode` is not `subscribe`.
    #[error("{handshake}: hub.mode must be \"subscribe\"")]
    WrongMode {
        /// The handshake.
        handshake: &'static str,
    },
    /// Meta's `hub.verify_token` matches none of the configured ones.
    #[error("{handshake}: hub.verify_token does not match")]
    WrongVerifyToken {
        /// The handshake.
        handshake: &'static str,
    },
    /// The handshake arrives by the other method.
    #[error("{handshake}: not answered on {method}")]
    WrongMethod {
        /// The handshake.
        handshake: &'static str,
        /// The method it was asked on.
        method: &'static str,
    },
}

impl Handshake {
    /// Whether the provider sends it as a GET (Meta, Dropbox) rather than a
    /// POST.
    pub fn is_get(self) -> bool {
        matches!(self, Self::MetaVerifyToken | Self::DropboxChallenge)
    }

    /// Whether it is authenticated by a configured verify token (Meta), which
    /// the partner's configuration must then give.
    pub fn checks_a_verify_token(self) -> bool {
        matches!(self, Self::MetaVerifyToken)
    }

    /// Why `token` cannot be a verify token (`Err`: the reason, without the
    /// token): it must be 1 to [`MAX_CHALLENGE_BYTES`] bytes of visible
    /// ASCII, since it travels in a query string the provider builds.
    pub fn usable_verify_token(token: &str) -> Result<(), String> {
        if token.is_empty()
            || token.len() > MAX_CHALLENGE_BYTES
            || !token.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(format!(
                "a verify token is 1 to {MAX_CHALLENGE_BYTES} bytes of visible ASCII (got {} \
                 bytes)",
                token.len()
            ));
        }
        Ok(())
    }

    /// Whether the provider authenticates it: signed like its events, or
    /// (Meta) with a verify token. Dropbox's challenge and Asana's first
    /// request are not: they are echoed, bounded, nothing else.
    pub fn is_authenticated(self) -> bool {
        !matches!(self, Self::DropboxChallenge | Self::AsanaHookSecret)
    }

    /// Whether the provider hands its signing secret over in the handshake
    /// (Asana's `X-Hook-Secret`): answered only while the partner has an
    /// `enroll_key`, see [`Handshake::answer_enrollment`].
    pub fn hands_over_a_secret(self) -> bool {
        matches!(self, Self::AsanaHookSecret)
    }

    /// Asana's first request, which carries the secret that will sign its
    /// events in `X-Hook-Secret` and is not signed itself (`None`: not
    /// that handshake). The answer echoes the header, 200 with no body, as
    /// Asana's documentation shows; the `&str` is the secret, for the
    /// caller to seal. The caller decides whether the partner may enrol.
    pub fn answer_enrollment<'h>(
        self,
        headers: &Headers<'h>,
    ) -> Option<Result<(HandshakeAnswer, &'h str), HandshakeError>> {
        if !self.hands_over_a_secret() {
            return None;
        }
        let name = self.as_str();
        let echoed = headers.get("X-Hook-Secret")?;
        Some(visible(name, "X-Hook-Secret", echoed).map(|echoed| {
            let answer = HandshakeAnswer {
                status: 200,
                content_type: None,
                headers: vec![("X-Hook-Secret", echoed.to_owned())],
                body: Vec::new(),
            };
            (answer, echoed)
        }))
    }

    /// The answer to a POST, when it is this handshake (`None`: an ordinary
    /// event). For an authenticated handshake, call it only once the
    /// request verified; `secret` is the secret that verified it (Zoom
    /// signs its answer with it).
    pub fn answer_post(
        self,
        headers: &Headers<'_>,
        body: &[u8],
        secret: &Secret,
    ) -> Option<Result<HandshakeAnswer, HandshakeError>> {
        let name = self.as_str();
        let json = || {
            (body.len() <= MAX_HANDSHAKE_BODY_BYTES)
                .then(|| serde_json::from_slice::<serde_json::Value>(body).ok())
                .flatten()
        };
        match self {
            Self::SlackUrlVerification => {
                let body = json()?;
                (body["type"] == "url_verification")
                    .then(|| challenge(name, "challenge", &body["challenge"]))
                    .map(|c| c.map(HandshakeAnswer::text))
            }
            Self::ZoomUrlValidation => {
                let body = json()?;
                (body["event"] == "endpoint.url_validation").then(|| {
                    let plain =
                        challenge(name, "payload.plainToken", &body["payload"]["plainToken"])?;
                    Ok(HandshakeAnswer::json(zoom_answer(plain, secret)))
                })
            }
            Self::TwitchCallbackVerification => {
                let kind = headers.get("Twitch-Eventsub-Message-Type")?;
                (kind == "webhook_callback_verification").then(|| {
                    let body = json().unwrap_or_default();
                    challenge(name, "challenge", &body["challenge"]).map(HandshakeAnswer::text)
                })
            }
            Self::DiscordPing => {
                let body = json()?;
                (body["type"] == 1).then(|| Ok(HandshakeAnswer::json(r#"{"type":1}"#.to_owned())))
            }
            // unsigned: answered before verification, and only while
            // enrolling (`answer_enrollment`)
            Self::AsanaHookSecret => None,
            // The handshake is a GET: every POST of these providers is an
            // event. (Answering one with `WrongMethod` made ingest refuse
            // every signed Meta and Dropbox event with 400 bad_handshake.)
            Self::MetaVerifyToken | Self::DropboxChallenge => None,
        }
    }

    /// The answer to a GET with these query parameters (decoded).
    /// `verify_tokens`: Meta's configured verify tokens (any may match,
    /// for rotation; compared in constant time).
    pub fn answer_get(
        self,
        query: &[(&str, &str)],
        verify_tokens: &[Secret],
    ) -> Result<HandshakeAnswer, HandshakeError> {
        let name = self.as_str();
        let param = |key: &str| query.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        match self {
            Self::MetaVerifyToken => {
                if param("hub.mode") != Some("subscribe") {
                    return Err(HandshakeError::WrongMode { handshake: name });
                }
                let token = param("hub.verify_token").unwrap_or_default().as_bytes();
                let matches = verify_tokens.iter().fold(0u8, |any, expected| {
                    any | expected.expose_secret().as_bytes().ct_eq(token).unwrap_u8()
                });
                if token.is_empty() || matches == 0 {
                    return Err(HandshakeError::WrongVerifyToken { handshake: name });
                }
                let challenge = param("hub.challenge").ok_or(HandshakeError::Missing {
                    handshake: name,
                    field: "hub.challenge",
                })?;
                visible(name, "hub.challenge", challenge).map(HandshakeAnswer::text)
            }
            Self::DropboxChallenge => {
                let challenge = param("challenge").ok_or(HandshakeError::Missing {
                    handshake: name,
                    field: "challenge",
                })?;
                visible(name, "challenge", challenge).map(HandshakeAnswer::text)
            }
            _ => Err(HandshakeError::WrongMethod {
                handshake: name,
                method: "GET",
            }),
        }
    }
}

/// A challenge field of a JSON body, checked.
fn challenge<'a>(
    handshake: &'static str,
    field: &'static str,
    value: &'a serde_json::Value,
) -> Result<&'a str, HandshakeError> {
    let text = value
        .as_str()
        .ok_or(HandshakeError::Missing { handshake, field })?;
    visible(handshake, field, text)
}

/// `text` when it is 1 to [`MAX_CHALLENGE_BYTES`] bytes of visible ASCII.
fn visible<'a>(
    handshake: &'static str,
    field: &'static str,
    text: &'a str,
) -> Result<&'a str, HandshakeError> {
    if text.is_empty()
        || text.len() > MAX_CHALLENGE_BYTES
        || !text.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(HandshakeError::Unusable {
            handshake,
            field,
            len: text.len(),
        });
    }
    Ok(text)
}

/// Zoom's answer: `{"plainToken":…,"encryptedToken":hex HMAC-SHA256(secret,
/// plainToken)}`, in the order of Zoom's documentation.
fn zoom_answer(plain: &str, secret: &Secret) -> String {
    let encrypted =
        match <Hmac<Sha256> as KeyInit>::new_from_slice(secret.expose_secret().as_bytes()) {
            Ok(mut mac) => {
                mac.update(plain.as_bytes());
                hex::encode(mac.finalize().into_bytes())
            }
            // HMAC takes a key of any length: unreachable, answered as a
            // mismatch Zoom refuses rather than a panic
            Err(_) => String::new(),
        };
    // `plain` is visible ASCII: only `"` and `\` need escaping, which
    // serde_json does
    let plain = serde_json::Value::from(plain).to_string();
    format!(r#"{{"plainToken":{plain},"encryptedToken":"{encrypted}"}}"#)
}

#[cfg(test)]
mod tests {
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
        for h in [Handshake::MetaVerifyToken, Handshake::DropboxChallenge] {
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
}
