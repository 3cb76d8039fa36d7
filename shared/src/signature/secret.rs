//! A partner secret (or Standard Webhooks public key), as configured.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::keys::{self, KeyUse, PreparedKey};
use super::standard_webhooks::{self, StandardKey};

/// One configured secret, kept as the text the partner gave us. Each scheme
/// interprets it: Stripe, GitHub, Shopify, Slack, Twilio and generic HMAC use
/// its UTF-8 bytes as the HMAC key; Standard Webhooks decodes `whsec_<base64>`
/// (and takes `whpk_<base64>` as an Ed25519 public key for `v1a`).
///
/// The key material derived from it (the decoded key, the keyed HMAC
/// state, a provider's public key decoded) is computed on first use and
/// kept with the secret, so a long-lived `Secret` (one per partner secret,
/// loaded with the configuration) does not redo that work on every
/// request.
///
/// `Debug` and `Display` never show the value, it is wiped from memory on
/// drop (so are the cached keyed states), and it deliberately has no
/// `Serialize` impl.
#[derive(Clone)]
pub struct Secret {
    text: Zeroizing<String>,
    raw_sha256: OnceLock<Hmac<Sha256>>,
    standard: OnceLock<Result<StandardKey, &'static str>>,
    prepared: OnceLock<Prepared>,
}

/// A key prepared for a recipe, with the use it was prepared for.
type Prepared = (KeyUse, Result<PreparedKey, &'static str>);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            text: Zeroizing::new(value.into()),
            raw_sha256: OnceLock::new(),
            standard: OnceLock::new(),
            prepared: OnceLock::new(),
        }
    }

    /// The secret's text. Named loudly so that uses stand out in review.
    pub fn expose_secret(&self) -> &str {
        &self.text
    }

    /// The secret's bytes (its UTF-8 encoding).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// HMAC-SHA256 keyed with the secret's bytes, ready to be cloned and fed.
    /// `None` only if the HMAC implementation refused the key (it accepts
    /// any length).
    pub(crate) fn raw_sha256(&self) -> Option<&Hmac<Sha256>> {
        if let Some(state) = self.raw_sha256.get() {
            return Some(state);
        }
        let state = <Hmac<Sha256> as KeyInit>::new_from_slice(self.bytes()).ok()?;
        Some(self.raw_sha256.get_or_init(|| state))
    }

    /// The secret prepared for `usage` (an HMAC key of a given format, a
    /// public key), or why it cannot be. Kept for the first use asked,
    /// which is the partner's recipe; a secret asked for another use
    /// prepares it again each time (correct, only slower).
    pub(crate) fn prepared(&self, usage: KeyUse) -> Cow<'_, Result<PreparedKey, &'static str>> {
        let (cached_for, key) = self
            .prepared
            .get_or_init(|| (usage, keys::prepare(self.expose_secret(), usage)));
        if *cached_for == usage {
            Cow::Borrowed(key)
        } else {
            Cow::Owned(keys::prepare(self.expose_secret(), usage))
        }
    }

    /// The secret as a Standard Webhooks key (`whsec_` HMAC key or `whpk_`
    /// Ed25519 public key), or why it is not one.
    pub(crate) fn standard_key(&self) -> Result<&StandardKey, &'static str> {
        self.standard
            .get_or_init(|| standard_webhooks::decode_key(self.expose_secret()))
            .as_ref()
            .map_err(|reason| *reason)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{Algorithm, KeyFormat};

    #[test]
    fn a_prepared_key_is_kept_for_its_use_and_another_use_still_works() {
        let secret = Secret::new("00ff");
        let hex = KeyUse::Hmac(Algorithm::Sha1, KeyFormat::Hex);
        let first = secret.prepared(hex);
        assert!(matches!(first, Cow::Borrowed(Ok(PreparedKey::Hmac(_)))));
        assert!(matches!(secret.prepared(hex), Cow::Borrowed(_)));
        // Another use: prepared again, not from the cache.
        let other = secret.prepared(KeyUse::Ed25519Hex);
        assert!(matches!(other, Cow::Owned(Err(_))));
        let base64 = secret.prepared(KeyUse::Hmac(Algorithm::Sha1, KeyFormat::Base64));
        assert!(matches!(base64, Cow::Owned(Ok(_))));
    }

    #[test]
    fn debug_and_display_redact_the_value() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        // Populate the caches: they must not show either.
        assert!(secret.raw_sha256().is_some());
        assert!(secret.standard_key().is_ok());
        assert!(
            secret
                .prepared(KeyUse::Hmac(Algorithm::Sha1, KeyFormat::Utf8))
                .is_ok()
        );
        let shown = format!("{secret:?} {secret} {:?}", vec![secret.clone()]);
        assert!(!shown.contains("MfKQ9r8"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
        assert_eq!(
            secret.expose_secret(),
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        );
    }

    #[test]
    fn deserializes_from_a_plain_string() {
        let secrets: Vec<Secret> =
            serde_json::from_str(r#"["one", "two"]"#).expect("valid JSON list");
        assert_eq!(secrets.len(), 2);
        assert_eq!(secrets[1].expose_secret(), "two");
    }
}
