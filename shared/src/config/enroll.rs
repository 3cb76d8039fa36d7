//! Enrolment of a provider that hands its signing secret over in an
//! unsigned handshake (Asana: the first POST carries `X-Hook-Secret`, which
//! must be echoed and then signs every event).
//!
//! That secret must reach the operator, who puts it in the partner's
//! `secrets`, and nobody else. hookbox never keeps it in clear and never
//! adopts it by itself (the handshake is unsigned: anyone who knows the URL
//! can send one). While a partner has an `enroll_key`, ingest echoes the
//! header and logs the secret sealed to that key: libsodium's
//! `crypto_box_seal` (X25519 + XSalsa20-Poly1305, an ephemeral sender key
//! per message), so the log line is useless without the operator's private
//! key. `hookbox enroll-key new` makes the key pair, `hookbox enroll-key
//! open` opens a sealed secret (or libsodium's `crypto_box_seal_open`).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use crypto_box::aead::OsRng;
use crypto_box::{KEY_SIZE, PublicKey, SecretKey};

use super::Partner;
use crate::signature::Headers;
use crate::signature::presets::{HandshakeAnswer, HandshakeError};

/// What an enrolment key or sealed secret could not be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrollError {
    /// Not base64 of the right length (the key itself is never repeated).
    #[error("{what} must be standard base64 of {len} bytes")]
    Encoding {
        /// What was read.
        what: &'static str,
        /// The length it must decode to.
        len: String,
    },
    /// The sealed secret does not open with this key (another key, or
    /// altered).
    #[error("the sealed secret does not open with this private key (another key, or altered)")]
    DoesNotOpen,
    /// It opened, but to something other than text.
    #[error("the sealed secret opened, but is not UTF-8 text")]
    NotText,
    /// A low-order point: anyone could open what is sealed to it.
    #[error(
        "an enroll key must be the public key `hookbox enroll-key new` prints (this one is a \
         low-order point, whose seal anyone could open)"
    )]
    LowOrder,
    /// The operating system's random source failed.
    #[error("cannot seal: the random source failed")]
    Seal,
}

/// The public half, from the partner's `"enroll_key"`: base64 of 32 bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct EnrollKey(PublicKey);

impl fmt::Debug for EnrollKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EnrollKey({})", self.to_base64())
    }
}

impl EnrollKey {
    /// Reads `"enroll_key"`. A low-order point (all zeros, say: a
    /// placeholder pasted as is) is refused: sealing to it would give a
    /// shared key anyone can compute.
    pub fn from_base64(text: &str) -> Result<Self, EnrollError> {
        let bytes: [u8; KEY_SIZE] = decode(text.trim())
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| EnrollError::Encoding {
                what: "an enroll key",
                len: KEY_SIZE.to_string(),
            })?;
        if has_small_order(&bytes) {
            return Err(EnrollError::LowOrder);
        }
        Ok(Self(PublicKey::from(bytes)))
    }

    /// The key as configured.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0.as_bytes())
    }

    /// `secret` sealed to this key, base64: only the private key opens it.
    pub fn seal(&self, secret: &str) -> Result<String, EnrollError> {
        self.0
            .seal(&mut OsRng, secret.as_bytes())
            .map(|sealed| STANDARD.encode(sealed))
            .map_err(|_| EnrollError::Seal)
    }
}

/// The operator's private half (`hookbox enroll-key`); wiped on drop, never
/// printed by `Debug`.
pub struct EnrollPrivateKey(SecretKey);

impl fmt::Debug for EnrollPrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnrollPrivateKey([redacted])")
    }
}

impl EnrollPrivateKey {
    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> Self {
        Self(SecretKey::generate(&mut OsRng))
    }

    /// Reads a private key file's text: base64 of 32 bytes.
    pub fn from_base64(text: &str) -> Result<Self, EnrollError> {
        let mut bytes = decode(text.trim()).ok_or_else(|| EnrollError::Encoding {
            what: "a private key",
            len: KEY_SIZE.to_string(),
        })?;
        let key = SecretKey::from_slice(&bytes).map_err(|_| EnrollError::Encoding {
            what: "a private key",
            len: KEY_SIZE.to_string(),
        });
        zeroize::Zeroize::zeroize(&mut bytes);
        key.map(Self)
    }

    /// The text of its file.
    pub fn to_base64(&self) -> String {
        let mut bytes = self.0.to_bytes();
        let text = STANDARD.encode(bytes);
        zeroize::Zeroize::zeroize(&mut bytes);
        text
    }

    /// Its public half, for the partner's `"enroll_key"`.
    pub fn public(&self) -> EnrollKey {
        EnrollKey(self.0.public_key())
    }

    /// The secret inside `sealed` (base64, as ingest logged it).
    pub fn open(&self, sealed: &str) -> Result<String, EnrollError> {
        let sealed = decode(sealed.trim()).ok_or_else(|| EnrollError::Encoding {
            what: "a sealed secret",
            len: format!("more than {}", crypto_box::SEALBYTES),
        })?;
        let opened = self
            .0
            .unseal(&sealed)
            .map_err(|_| EnrollError::DoesNotOpen)?;
        String::from_utf8(opened).map_err(|_| EnrollError::NotText)
    }
}

/// Why a handshake that hands a secret over is not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrollRefused {
    /// The partner has no `enroll_key`: the handshake is unsigned, so it is
    /// answered only while the operator enrols the partner.
    #[error(
        "partner {partner}: the {handshake} handshake is answered only while the partner has \
         an \"enroll_key\" (see docs/providers.md, Asana)"
    )]
    NotEnrolling {
        /// The partner.
        partner: String,
        /// The handshake.
        handshake: &'static str,
    },
    /// The secret to echo is unusable (empty, unbounded, not visible ASCII).
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl EnrollRefused {
    /// The HTTP status and reason code: 403 `not_enrolling`, 400
    /// `bad_handshake`.
    pub fn status_and_code(&self) -> (u16, &'static str) {
        match self {
            Self::NotEnrolling { .. } => (403, "not_enrolling"),
            Self::Handshake(_) => (400, "bad_handshake"),
        }
    }
}

/// A handshake answered while enrolling: what to send back, and the secret
/// it handed over, sealed to the partner's `enroll_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enrolled {
    /// The answer (the secret echoed in its header).
    pub answer: HandshakeAnswer,
    /// The secret, sealed (base64): for the log, for the operator.
    pub sealed_secret: String,
}

impl Partner {
    /// When `headers` are those of a handshake that hands the signing
    /// secret over (Asana's `X-Hook-Secret`): whether it may be answered,
    /// and the secret to echo. `None`: not such a handshake, an ordinary
    /// request. The authorizer lets it through only when this is `Ok`;
    /// ingest then answers it with [`Partner::enroll`].
    pub fn enrollment<'h>(
        &self,
        headers: &Headers<'h>,
    ) -> Option<Result<(HandshakeAnswer, &'h str), EnrollRefused>> {
        let handshake = self.handshake?;
        let answered = handshake.answer_enrollment(headers)?;
        Some(match (&self.enroll_key, answered) {
            (None, _) => Err(EnrollRefused::NotEnrolling {
                partner: self.name.clone(),
                handshake: handshake.as_str(),
            }),
            (Some(_), answered) => answered.map_err(EnrollRefused::from),
        })
    }

    /// The answer to such a handshake, with its secret sealed to the
    /// partner's `enroll_key` (`None`: not such a handshake). The sealed
    /// secret is never the secret: the log may carry it.
    pub fn enroll(&self, headers: &Headers<'_>) -> Option<Result<Enrolled, EnrollFailed>> {
        let (answer, secret) = match self.enrollment(headers)? {
            Ok(answered) => answered,
            Err(refused) => return Some(Err(EnrollFailed::Refused(refused))),
        };
        let key = self.enroll_key.as_ref()?;
        Some(match key.seal(secret) {
            Ok(sealed_secret) => Ok(Enrolled {
                answer,
                sealed_secret,
            }),
            Err(e) => Err(EnrollFailed::Seal(e)),
        })
    }
}

/// Why [`Partner::enroll`] did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrollFailed {
    /// Refused: the caller answers 4xx.
    #[error(transparent)]
    Refused(EnrollRefused),
    /// The secret could not be sealed: the caller answers 503 and the
    /// provider's request to create the webhook fails, to be made again.
    #[error(transparent)]
    Seal(EnrollError),
}

/// Whether `key` is one of Curve25519's points of small order, as
/// libsodium's `has_small_order` tests it (the top bit ignored): X25519 with
/// any of them gives a shared secret that does not depend on our key.
fn has_small_order(key: &[u8; KEY_SIZE]) -> bool {
    const SMALL_ORDER: [[u8; 32]; 7] = [
        [0; 32],
        [
            1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0,
        ],
        [
            0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f,
            0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16,
            0x5f, 0x49, 0xb8, 0x00,
        ],
        [
            0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83,
            0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd,
            0xd0, 0x9f, 0x11, 0x57,
        ],
        [
            0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0x7f,
        ],
        [
            0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0x7f,
        ],
        [
            0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0x7f,
        ],
    ];
    let mut masked = *key;
    masked[KEY_SIZE - 1] &= 0x7f;
    SMALL_ORDER.contains(&masked)
}

fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_private_key() {
        let operator = EnrollPrivateKey::generate();
        let key = EnrollKey::from_base64(&operator.public().to_base64()).expect("key");
        let secret = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";
        let sealed = key.seal(secret).expect("sealed");
        assert!(!sealed.contains(secret));
        assert_ne!(
            key.seal(secret).expect("sealed"),
            sealed,
            "an ephemeral key each"
        );
        assert_eq!(operator.open(&sealed).expect("opens"), secret);
        let reread = EnrollPrivateKey::from_base64(&operator.to_base64()).expect("file");
        assert_eq!(reread.open(&sealed).expect("opens"), secret);

        let other = EnrollPrivateKey::generate();
        assert_eq!(other.open(&sealed), Err(EnrollError::DoesNotOpen));
        let mut altered = STANDARD.decode(&sealed).expect("base64");
        let last = altered.len() - 1;
        altered[last] ^= 1;
        assert_eq!(
            operator.open(&STANDARD.encode(altered)),
            Err(EnrollError::DoesNotOpen)
        );
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_never_shown_in_errors_or_debug() {
        let operator = EnrollPrivateKey::generate();
        let private = operator.to_base64();
        assert!(!format!("{operator:?}").contains(&private));
        for bad in ["", "not base64!", "AAAA", &STANDARD.encode([1u8; 33])] {
            let e = EnrollKey::from_base64(bad).expect_err(bad);
            assert_eq!(
                e.to_string(),
                "an enroll key must be standard base64 of 32 bytes"
            );
        }
        // placeholders pasted as they are, and the other low-order points
        for low in [[0u8; 32], [0xff; 32], {
            let mut one = [0u8; 32];
            one[0] = 1;
            one[31] = 0x80;
            one
        }] {
            let e = EnrollKey::from_base64(&STANDARD.encode(low));
            if low == [0xff; 32] {
                // not of small order: an ordinary (if odd) key
                assert!(e.is_ok());
            } else {
                assert_eq!(e, Err(EnrollError::LowOrder));
            }
        }
        let truncated = &private[..private.len() - 4];
        let e = EnrollPrivateKey::from_base64(truncated).expect_err("short");
        assert!(!e.to_string().contains(truncated));
        assert_eq!(
            operator.open("@@@").expect_err("not base64").to_string(),
            "a sealed secret must be standard base64 of more than 48 bytes"
        );
    }
}
