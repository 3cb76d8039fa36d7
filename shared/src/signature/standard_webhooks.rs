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
use zeroize::Zeroizing;

use super::config::{Algorithm, SchemeKind};
use super::crypto::{self, BASE64, BASE64_OUT};
use super::error::{SignError, SignatureError};
use super::headers::Headers;
use super::parse::{self, StandardSignatures};
use super::secret::Secret;
use super::timestamp::{self, check_tolerance};
use super::verifier::{SignedRequest, Verified, check_secrets, key_rejected};

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

/// The `webhook-*` names, unless the request only has `svix-*` ones.
fn family(headers: &Headers<'_>) -> &'static Family {
    let has = |f: &Family| {
        [f.id, f.timestamp, f.signature]
            .iter()
            .any(|name| headers.get(name).is_some())
    };
    if !has(&WEBHOOK) && has(&SVIX) {
        &SVIX
    } else {
        &WEBHOOK
    }
}

fn parse<'a>(headers: &Headers<'a>) -> Result<Parsed<'a>, SignatureError> {
    let names = family(headers);
    let id = headers.required(names.id)?;
    let id = parse::standard_webhooks_id(id).map_err(|e| e.for_header(names.id))?;
    let timestamp_text = headers.required(names.timestamp)?;
    let timestamp = timestamp::parse_unix_seconds(timestamp_text).map_err(|reason| {
        SignatureError::MalformedHeader {
            header: Cow::Borrowed(names.timestamp),
            reason,
        }
    })?;
    let signature = headers.required(names.signature)?;
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

/// A configured secret, decoded for this scheme.
enum Key {
    Hmac(Zeroizing<Vec<u8>>),
    Ed25519(VerifyingKey),
}

fn invalid(index: usize, reason: &'static str) -> SignatureError {
    SignatureError::InvalidSecret {
        index,
        scheme: SCHEME.as_str(),
        reason,
    }
}

fn decode_key(index: usize, secret: &Secret) -> Result<Key, SignatureError> {
    let text = secret.expose_secret();
    if let Some(public) = text.strip_prefix(PUBLIC_KEY_PREFIX) {
        let bytes = Zeroizing::new(
            BASE64
                .decode(public)
                .map_err(|_| invalid(index, "`whpk_` key is not base64"))?,
        );
        let bytes: [u8; 32] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| invalid(index, "`whpk_` key is not 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| invalid(index, "`whpk_` key is not an Ed25519 public key"))?;
        return Ok(Key::Ed25519(key));
    }
    if text.starts_with(SIGNING_KEY_PREFIX) {
        return Err(invalid(
            index,
            "a `whsk_` private key signs; verify with its `whpk_` public key",
        ));
    }
    Ok(Key::Hmac(
        decode_hmac_secret(text).map_err(|reason| invalid(index, reason))?,
    ))
}

/// `whsec_<base64>` (or bare base64, as the reference libraries accept).
fn decode_hmac_secret(text: &str) -> Result<Zeroizing<Vec<u8>>, &'static str> {
    let encoded = text.strip_prefix(SECRET_PREFIX).unwrap_or(text);
    let key = Zeroizing::new(
        BASE64
            .decode(encoded)
            .map_err(|_| "secret is not base64 after `whsec_`")?,
    );
    if key.is_empty() {
        return Err("secret is empty after `whsec_`");
    }
    Ok(key)
}

pub(crate) fn verify(
    request: &SignedRequest<'_>,
    secrets: &[Secret],
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<Verified, SignatureError> {
    let parsed = parse(&request.headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| decode_key(index, secret))
        .collect::<Result<Vec<_>, _>>()?;

    let matched = match_keys(&parsed, request.body, &keys)?;
    let mut verified = Verified::new(
        SCHEME,
        matched.ok_or(SignatureError::NoMatchingSignature {
            candidates: parsed.signatures.v1.len() + parsed.signatures.v1a.len(),
            secrets: secrets.len(),
        })?,
    );
    verified.timestamp = timestamp::to_datetime(parsed.timestamp);
    verified.message_id = Some(parsed.id.to_owned());
    Ok(verified)
}

fn match_keys(
    parsed: &Parsed<'_>,
    body: &[u8],
    keys: &[Key],
) -> Result<Option<usize>, SignatureError> {
    let sigs = &parsed.signatures;
    if !sigs.v1.is_empty() {
        for (index, key) in keys.iter().enumerate() {
            let Key::Hmac(key) = key else { continue };
            let parts: [&[u8]; 5] = [
                parsed.id.as_bytes(),
                b".",
                parsed.timestamp_text.as_bytes(),
                b".",
                body,
            ];
            let tag = crypto::hmac_parts(Algorithm::Sha256, key, &parts)
                .map_err(|_| key_rejected(SCHEME, index))?;
            if sigs.v1.iter().any(|sig| crypto::ct_eq(tag.as_bytes(), sig)) {
                return Ok(Some(index));
            }
        }
    }
    let has_public_key = keys.iter().any(|k| matches!(k, Key::Ed25519(_)));
    if !sigs.v1a.is_empty() && has_public_key {
        // Ed25519 signs the whole message in one piece.
        let content = signed_content(parsed.id, parsed.timestamp_text, body);
        for (index, key) in keys.iter().enumerate() {
            let Key::Ed25519(key) = key else { continue };
            for sig in &sigs.v1a {
                if key
                    .verify_strict(&content, &Signature::from_bytes(sig))
                    .is_ok()
                {
                    return Ok(Some(index));
                }
            }
        }
    }
    Ok(None)
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
        } else if text.starts_with(PUBLIC_KEY_PREFIX) {
            return Err(invalid("a `whpk_` public key cannot sign"));
        } else {
            let key = decode_hmac_secret(text).map_err(invalid)?;
            let parts: [&[u8]; 5] = [id.as_bytes(), b".", timestamp_text.as_bytes(), b".", body];
            let tag = crypto::hmac_parts(Algorithm::Sha256, &key, &parts)
                .map_err(|_| invalid("refused as an HMAC key"))?;
            entries.push(format!("v1,{}", BASE64_OUT.encode(tag.as_bytes())));
        }
    }
    Ok(StandardWebhookHeaders {
        id: id.to_owned(),
        timestamp: timestamp_text,
        signature: entries.join(" "),
    })
}
