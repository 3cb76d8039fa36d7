//! Answering the handshakes providers require before they send events, byte
//! for byte as each documents it. Pure: the caller decides when a request
//! is a handshake's and sends the [`HandshakeAnswer`]; nothing here stores
//! anything. Ingest calls [`Handshake::answer_post`] once a partner's
//! request verified (`inbox::ingest`), [`Handshake::answer_get`] (Meta,
//! Dropbox) for a GET the authorizer let through
//! ([`Handshake::answer_get_request`] answers those and the GETs that need
//! the request's headers or the partner's secrets: Okta, X), and
//! [`Handshake::answer_enrollment`] for Asana's unsigned first request, only
//! while the partner is enrolling (`config::enroll`: the secret it hands
//! over is sealed to the operator's key, never kept).
//!
//! A challenge that is echoed is bounded ([`MAX_CHALLENGE_BYTES`]) and must
//! be visible ASCII: what the providers send, and nothing a browser or a
//! log could take for markup or a control sequence.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest as _, Sha256};
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
    /// The request does not carry one of the partner's secrets where the
    /// provider sends it (Okta's authentication header).
    #[error("{handshake}: {header} does not match")]
    Unauthenticated {
        /// The handshake.
        handshake: &'static str,
        /// The header that authenticates it.
        header: &'static str,
    },
    /// The handshake needs what the caller did not give: the request's
    /// headers (Okta) or the partner's secrets (Okta, X), which
    /// [`Handshake::answer_get`] does not take.
    #[error("{handshake}: answered only with the request's headers and the partner's secrets")]
    NeedsRequest {
        /// The handshake.
        handshake: &'static str,
    },
    /// X's `crc_token` could be read as JSON: answering would sign a body
    /// X's events are signed over (see [`Handshake::answer_get_request`]).
    #[error("{handshake}: crc_token must not be a JSON value")]
    JsonChallenge {
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
        matches!(
            self,
            Self::MetaVerifyToken | Self::DropboxChallenge | Self::OktaVerification | Self::XCrc
        )
    }

    /// Whether the GET's answer needs the request's headers or the
    /// partner's secrets ([`Handshake::answer_get_request`], not
    /// [`Handshake::answer_get`]): Okta's, X's.
    pub fn needs_request(self) -> bool {
        matches!(self, Self::OktaVerification | Self::XCrc)
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
    /// X's CRC is not either: anyone may send a `crc_token`, and the
    /// answer is its HMAC with the consumer secret.
    pub fn is_authenticated(self) -> bool {
        !matches!(
            self,
            Self::DropboxChallenge | Self::AsanaHookSecret | Self::XCrc
        )
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
            Self::MetaVerifyToken
            | Self::DropboxChallenge
            | Self::OktaVerification
            | Self::XCrc => None,
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
            Self::OktaVerification | Self::XCrc => {
                Err(HandshakeError::NeedsRequest { handshake: name })
            }
            _ => Err(HandshakeError::WrongMethod {
                handshake: name,
                method: "GET",
            }),
        }
    }

    /// The answer to a GET, with what every provider's needs: the decoded
    /// query parameters and headers, Meta's verify tokens, and the
    /// partner's secrets (any may match, for rotation).
    ///
    /// - Okta: `X-Okta-Verification-Challenge` echoed as
    ///   `{"verification":…}`, once the `Authorization` header (the event
    ///   hook's authentication field) is one of `secrets`, compared in
    ///   constant time.
    /// - X: `{"response_token":"sha256=<base64 HMAC-SHA256(secret,
    ///   crc_token)>"}` with the first secret. The CRC is unauthenticated
    ///   and its answer is the very signature X's events carry, over the
    ///   token instead of a body: answering any token would sign any body.
    ///   So the token must be visible ASCII without `"`, `{`, `[`, and must
    ///   not parse as JSON (X's tokens are random base64 text): no JSON
    ///   body gets a signature this way.
    /// - Meta, Dropbox: as [`Handshake::answer_get`].
    pub fn answer_get_request(
        self,
        request: &GetRequest<'_, '_>,
        verify_tokens: &[Secret],
        secrets: &[Secret],
    ) -> Result<HandshakeAnswer, HandshakeError> {
        let name = self.as_str();
        match self {
            Self::OktaVerification => {
                const AUTH: &str = "Authorization";
                let presented = request.headers.get(AUTH).unwrap_or_default().as_bytes();
                // Digests of equal length, so the comparison's time tells
                // nothing of a secret's length.
                let presented = Sha256::digest(presented);
                let matches = secrets.iter().fold(0u8, |any, secret| {
                    let expected = Sha256::digest(secret.expose_secret().as_bytes());
                    any | expected.ct_eq(&presented).unwrap_u8()
                });
                if matches == 0 {
                    return Err(HandshakeError::Unauthenticated {
                        handshake: name,
                        header: AUTH,
                    });
                }
                const CHALLENGE: &str = "X-Okta-Verification-Challenge";
                let challenge = request
                    .headers
                    .get(CHALLENGE)
                    .ok_or(HandshakeError::Missing {
                        handshake: name,
                        field: CHALLENGE,
                    })?;
                let challenge = visible(name, CHALLENGE, challenge)?;
                let body = serde_json::json!({ "verification": challenge }).to_string();
                Ok(HandshakeAnswer::json(body))
            }
            Self::XCrc => {
                const TOKEN: &str = "crc_token";
                let token = request.param(TOKEN).ok_or(HandshakeError::Missing {
                    handshake: name,
                    field: TOKEN,
                })?;
                let token = visible(name, TOKEN, token)?;
                if token.bytes().any(|b| matches!(b, b'"' | b'{' | b'['))
                    || serde_json::from_str::<serde_json::Value>(token).is_ok()
                {
                    return Err(HandshakeError::JsonChallenge { handshake: name });
                }
                let secret = secrets
                    .first()
                    .ok_or(HandshakeError::NeedsRequest { handshake: name })?;
                let body = serde_json::json!({
                    "response_token": format!("sha256={}", x_crc(token, secret)),
                })
                .to_string();
                Ok(HandshakeAnswer::json(body))
            }
            _ => self.answer_get(request.query, verify_tokens),
        }
    }
}

/// A GET as [`Handshake::answer_get_request`] reads it: the decoded query
/// parameters and the headers.
#[derive(Debug, Clone, Copy)]
pub struct GetRequest<'q, 'h> {
    /// The decoded query parameters.
    pub query: &'q [(&'q str, &'q str)],
    /// The headers.
    pub headers: &'q Headers<'h>,
}

impl GetRequest<'_, '_> {
    fn param(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// base64 HMAC-SHA256(secret, token): X's CRC response, without `sha256=`.
fn x_crc(token: &str, secret: &Secret) -> String {
    match <Hmac<Sha256> as KeyInit>::new_from_slice(secret.expose_secret().as_bytes()) {
        Ok(mut mac) => {
            mac.update(token.as_bytes());
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
        }
        // HMAC takes a key of any length: unreachable, answered as a
        // mismatch X refuses rather than a panic
        Err(_) => String::new(),
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
#[path = "handshake_tests.rs"]
mod tests;
