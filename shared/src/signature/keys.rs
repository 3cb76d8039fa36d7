//! Keys prepared from a configured secret for a recipe: the HMAC state
//! keyed with it (its text, or the bytes its hex or base64 decodes to) or
//! the provider's public key decoded. A [`Secret`](super::Secret) keeps the
//! one its recipe uses, so a long-lived secret pays the decoding and the
//! key setup once, not on every request.

use base64::Engine as _;
use zeroize::Zeroizing;

use super::config::Algorithm;
use super::crypto::{self, BASE64, KeyRejected, MacState};
use super::recipe::KeyFormat;

/// How a recipe reads its secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyUse {
    /// An HMAC key, its bytes as `KeyFormat` says.
    Hmac(Algorithm, KeyFormat),
    /// An Ed25519 public key, 64 hexadecimal digits.
    Ed25519Hex,
    /// A P-256 public key, base64 of its DER `SubjectPublicKeyInfo`.
    EcdsaP256Der,
}

/// A secret ready for its recipe.
#[derive(Clone)]
pub(crate) enum PreparedKey {
    /// The HMAC state keyed with the secret (cloned for each message; wiped
    /// on drop).
    Hmac(MacState),
    /// An Ed25519 public key.
    Ed25519(ed25519_dalek::VerifyingKey),
    /// A P-256 public key.
    EcdsaP256(p256::ecdsa::VerifyingKey),
}

/// Prepares `text` (a secret's value) for `usage`, or says why it cannot
/// be used (the reasons the verifiers report with the secret's index).
pub(crate) fn prepare(text: &str, usage: KeyUse) -> Result<PreparedKey, &'static str> {
    match usage {
        KeyUse::Hmac(algorithm, format) => {
            let keyed = |key: &[u8]| {
                MacState::new(algorithm, key)
                    .map(PreparedKey::Hmac)
                    .map_err(|KeyRejected| "refused as an HMAC key")
            };
            match format {
                KeyFormat::Utf8 => keyed(text.as_bytes()),
                KeyFormat::Hex => {
                    let key = hex::decode(text).map_err(|_| "secret is not hexadecimal")?;
                    keyed(&Zeroizing::new(key))
                }
                KeyFormat::Base64 => {
                    let key = BASE64.decode(text).map_err(|_| "secret is not base64")?;
                    keyed(&Zeroizing::new(key))
                }
            }
        }
        KeyUse::Ed25519Hex => {
            let bytes: [u8; 32] = crypto::decode_hex_array(text)
                .map_err(|_| "public key is not 64 hexadecimal digits")?;
            ed25519_dalek::VerifyingKey::from_bytes(&bytes)
                .map(PreparedKey::Ed25519)
                .map_err(|_| "not an Ed25519 public key")
        }
        KeyUse::EcdsaP256Der => {
            use p256::pkcs8::DecodePublicKey as _;
            let der = BASE64
                .decode(text.trim())
                .map_err(|_| "public key is not base64")?;
            p256::ecdsa::VerifyingKey::from_public_key_der(&der)
                .map(PreparedKey::EcdsaP256)
                .map_err(|_| "not a P-256 public key (DER SubjectPublicKeyInfo)")
        }
    }
}
