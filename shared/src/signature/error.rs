//! Errors. Each variant names the check that failed. None of them carries a
//! secret or an expected signature; header values received from the network
//! are not echoed either (they may be huge or hold control characters), only
//! the header name and a fixed reason.

use std::borrow::Cow;

/// Why a request's signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A header the scheme needs is absent.
    #[error("missing header `{header}`")]
    MissingHeader {
        /// The header looked for (the first name, when the scheme accepts several).
        header: Cow<'static, str>,
    },

    /// A header is present but does not have the scheme's syntax.
    #[error("malformed header `{header}`: {reason}")]
    MalformedHeader {
        /// The offending header.
        header: Cow<'static, str>,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The signature header is well formed but carries no signature of a
    /// version this verifier accepts (e.g. Stripe `v0` only: downgrades are
    /// refused).
    #[error("header `{header}` has no signature of a supported version: {reason}")]
    UnsupportedSignatureVersion {
        /// The signature header.
        header: Cow<'static, str>,
        /// Which versions were expected.
        reason: &'static str,
    },

    /// Signatures were well formed, but none matched any configured secret.
    #[error(
        "no matching signature{}: {candidates} signature(s) checked against {secrets} secret(s)",
        in_item(*.item)
    )]
    NoMatchingSignature {
        /// Well-formed signatures found in the request.
        candidates: usize,
        /// Secrets (or public keys) they were checked against.
        secrets: usize,
        /// For a recipe that signs each item of the body on its own
        /// (Adyen's standard notifications): the index of the first item
        /// no secret verifies (`None`: the request's signature).
        item: Option<usize>,
    },

    /// The signed timestamp is older than the tolerance allows.
    #[error("timestamp too old: {age_secs} s old, tolerance is {tolerance_secs} s")]
    TimestampTooOld {
        /// How far in the past the timestamp is, in seconds.
        age_secs: u64,
        /// The configured tolerance, in seconds.
        tolerance_secs: u64,
    },

    /// The signed timestamp is further in the future than the tolerance allows.
    #[error("timestamp in the future: {ahead_secs} s ahead, tolerance is {tolerance_secs} s")]
    TimestampInFuture {
        /// How far in the future the timestamp is, in seconds.
        ahead_secs: u64,
        /// The configured tolerance, in seconds.
        tolerance_secs: u64,
    },

    /// Twilio: the signature is valid, but the body does not hash to the
    /// `bodySHA256` value of the signed URL.
    #[error("body hash mismatch: the body does not match `bodySHA256` in the signed URL")]
    BodyHashMismatch,

    /// Twilio: the body is neither form parameters nor bound by `bodySHA256`,
    /// so the signature would not cover it.
    #[error("the request body is not covered by the signature: {reason}")]
    UnsignedBody {
        /// Why the body is not covered.
        reason: &'static str,
    },

    /// The scheme signs the request URL, and none was given.
    #[error("scheme `{scheme}` signs the request URL, and none was given")]
    MissingUrl {
        /// The scheme.
        scheme: &'static str,
    },

    /// The request URL could not be parsed.
    #[error("malformed request URL: {reason}")]
    MalformedUrl {
        /// What is wrong with it.
        reason: &'static str,
    },

    /// No secret was configured for the partner.
    #[error("no secret configured")]
    NoSecrets,

    /// A configured secret cannot be used by this scheme (configuration error).
    #[error("secret #{index} cannot be used by scheme `{scheme}`: {reason}")]
    InvalidSecret {
        /// Position of the secret in the list given to the verifier.
        index: usize,
        /// The scheme.
        scheme: &'static str,
        /// Why it cannot be used.
        reason: &'static str,
    },
}

/// ` in item #N` when an item is named.
fn in_item(item: Option<usize>) -> String {
    item.map_or_else(String::new, |index| format!(" in item #{index}"))
}

impl SignatureError {
    /// `true` when the error comes from the verifier's configuration (secrets,
    /// missing URL) rather than from the request: the partner cannot fix it.
    pub fn is_configuration_error(&self) -> bool {
        matches!(
            self,
            Self::NoSecrets | Self::InvalidSecret { .. } | Self::MissingUrl { .. }
        )
    }
}

/// A [`SchemeConfig`](super::SchemeConfig) that cannot be turned into a verifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// An option has a value the scheme cannot use.
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The configuration field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Why outbound headers could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// No secret was given.
    #[error("no secret given")]
    NoSecrets,
    /// A secret is not a Standard Webhooks signing secret.
    #[error("secret #{index} cannot sign: {reason}")]
    InvalidSecret {
        /// Position of the secret in the list.
        index: usize,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// The message id cannot be used (empty, contains `.`, or is not a
    /// header-safe token).
    #[error("invalid message id: {reason}")]
    InvalidId {
        /// Why.
        reason: &'static str,
    },
    /// The timestamp is before the Unix epoch.
    #[error("invalid timestamp: {reason}")]
    InvalidTimestamp {
        /// Why.
        reason: &'static str,
    },
}
