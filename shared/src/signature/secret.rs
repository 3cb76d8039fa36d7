//! A partner secret (or Standard Webhooks public key), as configured.

use std::fmt;

use zeroize::Zeroizing;

/// One configured secret, kept as the text the partner gave us. Each scheme
/// interprets it: Stripe, GitHub, Shopify, Slack, Twilio and generic HMAC use
/// its UTF-8 bytes as the HMAC key; Standard Webhooks decodes `whsec_<base64>`
/// (and takes `whpk_<base64>` as an Ed25519 public key for `v1a`).
///
/// `Debug` and `Display` never show the value, it is wiped from memory on
/// drop, and it deliberately has no `Serialize` impl.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The secret's text. Named loudly so that uses stand out in review.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// The secret's bytes (its UTF-8 encoding).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.0.as_bytes()
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

    #[test]
    fn debug_and_display_redact_the_value() {
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
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
