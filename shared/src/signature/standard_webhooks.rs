//! Standard Webhooks (<https://www.standardwebhooks.com/>), also sent by Svix
//! under `svix-*` header names.
//!
//! Signed content: `{webhook-id}.{webhook-timestamp}.{body}`.
//! - `v1,<base64>`: HMAC-SHA256 keyed with the base64-decoded `whsec_` secret.
//! - `v1a,<base64>`: Ed25519, verified with a `whpk_<base64>` public key.
//!
//! The `webhook-signature` header lists space-separated entries; any valid
//! one passes, entries of unknown versions are ignored.

use std::borrow::Cow;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::config::SchemeKind;
use super::crypto::{self, BASE64, BASE64_OUT};
use super::error::{SignError, SignatureError};
use super::headers::Headers;
use super::parse::{self, StandardSignatures};
use super::secret::Secret;
use super::timestamp::{self, check_tolerance};
use super::verifier::{SignedRequest, Verified, check_secrets};

const SCHEME: SchemeKind = SchemeKind::StandardWebhooks;

/// Prefix of a symmetric (HMAC) secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Prefix of an Ed25519 public key (verifies `v1a`).
pub const PUBLIC_KEY_PREFIX: &str = "whpk_";
/// Prefix of an Ed25519 private key (signs `v1a`).
pub const SIGNING_KEY_PREFIX: &str = "whsk_";

struct Family {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const WEBHOOK: Family = Family {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};

const SVIX: Family = Family {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

struct Parsed<'a> {
    id: &'a str,
    timestamp_text: &'a str,
    timestamp: i64,
    signatures: StandardSignatures,
}

fn parse<'a>(headers: &Headers<'a>) -> Result<Parsed<'a>, SignatureError> {
    // `svix-*` only when the request has a `svix-signature` and no
    // `webhook-signature`.
    let [id, timestamp, signature] =
        headers.unique_many([WEBHOOK.id, WEBHOOK.timestamp, WEBHOOK.signature])?;
    let (names, id, timestamp, signature) = match signature {
        Some(_) => (&WEBHOOK, id, timestamp, signature),
        None => match headers.unique_many([SVIX.id, SVIX.timestamp, SVIX.signature])? {
            [svix_id, svix_timestamp, Some(svix_signature)] => {
                (&SVIX, svix_id, svix_timestamp, Some(svix_signature))
            }
            _ => (&WEBHOOK, id, timestamp, signature),
        },
    };
    let missing = |name: &'static str| SignatureError::MissingHeader {
        header: Cow::Borrowed(name),
    };
    let id = id.ok_or_else(|| missing(names.id))?;
    let id = parse::standard_webhooks_id(id).map_err(|e| e.for_header(names.id))?;
    let timestamp_text = timestamp.ok_or_else(|| missing(names.timestamp))?;
    let timestamp = timestamp::parse_unix_seconds(timestamp_text).map_err(|reason| {
        SignatureError::MalformedHeader {
            header: Cow::Borrowed(names.timestamp),
            reason,
        }
    })?;
    let signature = signature.ok_or_else(|| missing(names.signature))?;
    let signatures = parse::standard_webhooks_signatures(signature)
        .map_err(|e| e.for_header(names.signature))?;
    Ok(Parsed {
        id,
        timestamp_text,
        timestamp,
        signatures,
    })
}

pub(crate) fn precheck(
    headers: &Headers<'_>,
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<(), SignatureError> {
    let parsed = parse(headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)
}

fn invalid(index: usize, reason: &'static str) -> SignatureError {
    SignatureError::InvalidSecret {
        index,
        scheme: SCHEME.as_str(),
        reason,
    }
}

/// A configured secret, decoded for this scheme (cached in the [`Secret`]).
#[derive(Clone)]
pub(crate) enum StandardKey {
    /// `whsec_`: HMAC-SHA256 keyed with the decoded secret.
    Hmac(Hmac<Sha256>),
    /// `whpk_`: Ed25519 public key.
    Ed25519(VerifyingKey),
}

/// Interprets a configured secret: `whpk_<base64>` public key, or
/// `whsec_<base64>` (or bare base64, as the reference libraries accept).
pub(crate) fn decode_key(text: &str) -> Result<StandardKey, &'static str> {
    if let Some(public) = text.strip_prefix(PUBLIC_KEY_PREFIX) {
        let bytes = Zeroizing::new(
            BASE64
                .decode(public)
                .map_err(|_| "`whpk_` key is not base64")?,
        );
        let bytes: [u8; 32] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| "`whpk_` key is not 32 bytes")?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| "`whpk_` key is not an Ed25519 public key")?;
        return Ok(StandardKey::Ed25519(key));
    }
    if text.starts_with(SIGNING_KEY_PREFIX) {
        return Err("a `whsk_` private key signs; verify with its `whpk_` public key");
    }
    let encoded = text.strip_prefix(SECRET_PREFIX).unwrap_or(text);
    let key = Zeroizing::new(
        BASE64
            .decode(encoded)
            .map_err(|_| "secret is not base64 after `whsec_`")?,
    );
    if key.is_empty() {
        return Err("secret is empty after `whsec_`");
    }
    let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
        .map_err(|_| "secret is refused as an HMAC key")?;
    Ok(StandardKey::Hmac(mac))
}

pub(crate) fn verify<'a>(
    request: &SignedRequest<'a>,
    secrets: &[Secret],
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<Verified<'a>, SignatureError> {
    let parsed = parse(&request.headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    check_secrets(SCHEME, secrets)?;
    // Every secret must be usable, whichever one would match.
    for (index, secret) in secrets.iter().enumerate() {
        secret
            .standard_key()
            .map_err(|reason| invalid(index, reason))?;
    }
    let Some(index) = match_keys(&parsed, request.body, secrets) else {
        return Err(SignatureError::NoMatchingSignature {
            candidates: parsed.signatures.v1.len() + parsed.signatures.v1a.len(),
            secrets: secrets.len(),
            item: None,
        });
    };
    let mut verified = Verified::new(SCHEME, index);
    verified.timestamp_secs = Some(parsed.timestamp);
    verified.message_id = Some(Cow::Borrowed(parsed.id));
    Ok(verified)
}

fn match_keys(parsed: &Parsed<'_>, body: &[u8], secrets: &[Secret]) -> Option<usize> {
    let sigs = &parsed.signatures;
    let keys = || {
        secrets
            .iter()
            .enumerate()
            .filter_map(|(index, secret)| secret.standard_key().ok().map(|key| (index, key)))
    };
    if !sigs.v1.is_empty() {
        for (index, key) in keys() {
            let StandardKey::Hmac(keyed) = key else {
                continue;
            };
            let tag = hmac_signed_content(keyed, parsed.id, parsed.timestamp_text, body);
            if sigs.v1.iter().any(|sig| crypto::ct_eq(&tag, sig)) {
                return Some(index);
            }
        }
    }
    if !sigs.v1a.is_empty() && keys().any(|(_, key)| matches!(key, StandardKey::Ed25519(_))) {
        // Ed25519 signs the whole message in one piece.
        let content = signed_content(parsed.id, parsed.timestamp_text, body);
        for (index, key) in keys() {
            let StandardKey::Ed25519(key) = key else {
                continue;
            };
            for sig in &sigs.v1a {
                if key
                    .verify_strict(&content, &Signature::from_bytes(sig))
                    .is_ok()
                {
                    return Some(index);
                }
            }
        }
    }
    None
}

/// HMAC-SHA256 of `{id}.{timestamp}.{body}` with a keyed state. The short
/// prefix is assembled on the stack and fed in one call.
fn hmac_signed_content(keyed: &Hmac<Sha256>, id: &str, timestamp: &str, body: &[u8]) -> [u8; 32] {
    let mut mac = keyed.clone();
    let mut prefix = [0u8; 128];
    let len = id.len() + timestamp.len() + 2;
    match prefix.get_mut(..len) {
        Some(buf) => {
            let (id_part, rest) = buf.split_at_mut(id.len());
            id_part.copy_from_slice(id.as_bytes());
            let (dot, rest) = rest.split_at_mut(1);
            dot[0] = b'.';
            let (ts_part, dot) = rest.split_at_mut(timestamp.len());
            ts_part.copy_from_slice(timestamp.as_bytes());
            dot[0] = b'.';
            mac.update(buf);
        }
        None => {
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.as_bytes());
            mac.update(b".");
        }
    }
    mac.update(body);
    mac.finalize().into_bytes().into()
}

fn signed_content(id: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut content = Vec::with_capacity(id.len() + timestamp.len() + 2 + body.len());
    content.extend_from_slice(id.as_bytes());
    content.push(b'.');
    content.extend_from_slice(timestamp.as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    content
}

/// The three Standard Webhooks headers of an outbound webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardWebhookHeaders {
    /// `webhook-id`
    pub id: String,
    /// `webhook-timestamp` (Unix seconds)
    pub timestamp: String,
    /// `webhook-signature`: one space-separated entry per secret.
    pub signature: String,
}

impl StandardWebhookHeaders {
    /// Header name of [`Self::id`].
    pub const ID: &'static str = "webhook-id";
    /// Header name of [`Self::timestamp`].
    pub const TIMESTAMP: &'static str = "webhook-timestamp";
    /// Header name of [`Self::signature`].
    pub const SIGNATURE: &'static str = "webhook-signature";

    /// `(name, value)` pairs, in the order id, timestamp, signature.
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            (Self::ID, &self.id),
            (Self::TIMESTAMP, &self.timestamp),
            (Self::SIGNATURE, &self.signature),
        ]
    }
}

/// Signs an outbound webhook: `id`, `timestamp` and `body` with every secret.
///
/// A `whsec_` secret gives a `v1` (HMAC-SHA256) entry, a `whsk_` key a `v1a`
/// (Ed25519) entry. Several secrets give several space-separated entries, so
/// a receiver that knows any one of them accepts the webhook (rotation
/// without downtime).
pub fn sign(
    id: &str,
    timestamp: DateTime<Utc>,
    body: &[u8],
    secrets: &[Secret],
) -> Result<StandardWebhookHeaders, SignError> {
    parse::standard_webhooks_id(id).map_err(|_| SignError::InvalidId {
        reason: "must be non-empty and must not contain `.`",
    })?;
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(SignError::InvalidId {
            reason: "must be visible ASCII without spaces",
        });
    }
    let secs = timestamp.timestamp();
    if secs < 0 {
        return Err(SignError::InvalidTimestamp {
            reason: "before the Unix epoch",
        });
    }
    if secrets.is_empty() {
        return Err(SignError::NoSecrets);
    }
    let timestamp_text = secs.to_string();
    let mut entries = Vec::with_capacity(secrets.len());
    for (index, secret) in secrets.iter().enumerate() {
        let invalid = |reason| SignError::InvalidSecret { index, reason };
        let text = secret.expose_secret();
        if let Some(seed) = text.strip_prefix(SIGNING_KEY_PREFIX) {
            let seed = Zeroizing::new(
                BASE64
                    .decode(seed)
                    .map_err(|_| invalid("`whsk_` key is not base64"))?,
            );
            let seed: &[u8; 32] = seed
                .as_slice()
                .try_into()
                .map_err(|_| invalid("`whsk_` key is not a 32-byte Ed25519 seed"))?;
            let key = SigningKey::from_bytes(seed);
            let signature = key.sign(&signed_content(id, &timestamp_text, body));
            entries.push(format!("v1a,{}", BASE64_OUT.encode(signature.to_bytes())));
        } else {
            match secret.standard_key().map_err(invalid)? {
                StandardKey::Ed25519(_) => return Err(invalid("a `whpk_` public key cannot sign")),
                StandardKey::Hmac(keyed) => {
                    let tag = hmac_signed_content(keyed, id, &timestamp_text, body);
                    entries.push(format!("v1,{}", BASE64_OUT.encode(tag)));
                }
            }
        }
    }
    Ok(StandardWebhookHeaders {
        id: id.to_owned(),
        timestamp: timestamp_text,
        signature: entries.join(" "),
    })
}
