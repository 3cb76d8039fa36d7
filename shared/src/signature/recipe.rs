//! Recipes: the few building blocks the provider presets are made of.
//!
//! A [`Recipe`] says how one provider authenticates a webhook, as data:
//! - a hand-written scheme of this module ([`Recipe::Scheme`]: Standard
//!   Webhooks, Stripe, GitHub, Shopify, Slack, Twilio);
//! - a signature ([`Recipe::Signed`]): a primitive (HMAC-SHA1/256/512 with
//!   a key format, Ed25519, ECDSA P-256/SHA-256) over a message made of
//!   [`Part`]s (raw body, timestamp, literal separators, headers, method,
//!   URL, fields of the JSON body), the signature read from a header (one
//!   or several, after a prefix, several values during rotation) or from the
//!   body, and an optional signed timestamp;
//! - a shared token compared as it is ([`Recipe::Token`]: GitLab) or HTTP
//!   basic credentials ([`Recipe::BasicAuth`]: Chargebee, Postmark);
//! - a JWS whose claims hash the body ([`Recipe::Jws`]: Netlify; see
//!   `jws.rs`).
//!
//! Every comparison is constant time (HMAC tags and tokens with
//! `subtle`; Ed25519 and ECDSA verify with their own crates); secrets are
//! never shown (they stay [`Secret`]s, decoded keys are wiped on drop).

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::config::{Algorithm, Encoding, SchemeKind};
use super::crypto::{self, BASE64, MacState, Tag};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse::MAX_SIGNATURES;
use super::secret::Secret;
use super::timestamp::{self, check_tolerance};
use super::verifier::{SignedRequest, Verified, check_secrets, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Preset;

/// How a provider authenticates its webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// A hand-written scheme of [`crate::signature`], with its defaults
    /// (the preset's tolerance replaces the default one).
    Scheme(SchemeKind),
    /// A signature over a message built from parts of the request.
    Signed(Signed),
    /// A shared token sent as it is in a header, compared with the secret
    /// (constant time). Proves only that the sender knows the token: the
    /// body is not signed, so anyone who sees one request (a logging
    /// proxy) can send others.
    Token {
        /// The header carrying the token.
        header: &'static str,
    },
    /// HTTP basic credentials (`Authorization: Basic base64(user:password)`)
    /// compared with the secret `user:password` (constant time). Proves the
    /// same as [`Recipe::Token`], no more.
    BasicAuth,
    /// Twilio's recipe (the URL, then the form parameters sorted, or a JSON
    /// body bound by the URL's `bodySHA256`; base64 in
    /// `X-Twilio-Signature`) with another hash than the scheme's SHA-1:
    /// its HMAC-SHA256 signature settings.
    Twilio(Algorithm),
    /// A compact JWS (HS256 only) in a header, keyed with the secret, whose
    /// `iss` claim is `issuer` and whose `sha256` claim is the hex SHA-256
    /// of the body (Netlify).
    Jws {
        /// The header carrying the token.
        header: &'static str,
        /// The `iss` claim required.
        issuer: &'static str,
    },
}

/// A signature recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed {
    /// The primitive and how the configured secret is read.
    pub primitive: Primitive,
    /// Where the signature is.
    pub signature: SignatureAt,
    /// How the signature is written (ECDSA: base64 of the DER signature).
    pub encoding: Encoding,
    /// What is signed, in order.
    pub message: &'static [Part],
    /// The signed timestamp, if the provider sends one.
    pub timestamp: Option<TimestampAt>,
}

/// A signature primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    /// HMAC with the secret as key.
    Hmac(Algorithm, KeyFormat),
    /// Ed25519; the secret is the provider's public key (hex, 64 digits).
    Ed25519,
    /// ECDSA over P-256 with SHA-256; the secret is the provider's public
    /// key, base64 of its DER `SubjectPublicKeyInfo` (as SendGrid shows it).
    EcdsaP256,
}

/// How an HMAC secret becomes the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFormat {
    /// The secret's UTF-8 bytes, as configured.
    Utf8,
    /// The secret is hexadecimal; the key is the decoded bytes (Adyen).
    Hex,
    /// The secret is base64; the key is the decoded bytes (Airtable).
    Base64,
}

/// Where the signature is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureAt {
    /// In headers: every present one of `names` is read (DocuSign numbers
    /// one header per key, Box sends a primary and a secondary); each value
    /// may hold several signatures split at `separator` (rotation), each
    /// after one of `prefixes` (the first that matches is removed). Items
    /// with none of them are ignored (other versions); items that do not
    /// decode are skipped.
    Headers {
        /// Header names, any of which may be present.
        names: &'static [&'static str],
        /// Text before each signature, e.g. `sha256=`, `v1=` (`""`: none).
        prefixes: &'static [&'static str],
        /// Splits one value into several signatures (trimmed).
        separator: Option<char>,
    },
    /// A string field of the JSON body, by JSON pointer (Mailgun).
    Json(&'static str),
}

/// A piece of the signed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The raw body, byte for byte.
    Body,
    /// Fixed text (separators such as `.`, `:`, a version such as `v0:`).
    Text(&'static str),
    /// The signed timestamp, as sent.
    Timestamp,
    /// A header's value, as sent (trimmed).
    Header(&'static str),
    /// The request method as given with `SignedRequest::with_method`;
    /// `POST` when none is given (webhooks are POSTs, and ingest's route
    /// takes nothing else).
    Method,
    /// The full request URL as the provider called it (scheme, host, path,
    /// query): the notification URL of Square, HubSpot's URI.
    Url,
    /// A field of the JSON body, by JSON pointer: a string as is, a number
    /// as written.
    Json(&'static str),
}

/// Where the signed timestamp is, and how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAt {
    /// Where.
    pub source: TimestampSource,
    /// How.
    pub format: TimeFormat,
}

/// Where the signed timestamp is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampSource {
    /// A header of its own.
    Header(&'static str),
    /// A `key=value` item of the signature header, e.g. Paddle's `ts=`,
    /// Calendly's `t=` (items split at the recipe's separator).
    SignatureItem(&'static str),
    /// The first item of the signature header (Recurly:
    /// `<ms>,<sig>,<sig>`).
    FirstSignatureItem,
    /// A field of the JSON body (Mailgun, Linear).
    Json(&'static str),
}

/// How a timestamp is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    /// Unix seconds, digits only.
    Seconds,
    /// Unix milliseconds, digits only.
    Millis,
    /// RFC 3339, e.g. `2024-01-01T00:00:00.123456789Z`.
    Rfc3339,
}

/// The verification inputs a recipe needs beyond the request.
pub(crate) struct Context<'p> {
    /// The preset's name (for errors: it stands where a scheme name would).
    pub(crate) name: &'static str,
    /// The tolerance, when the timestamp is checked.
    pub(crate) tolerance_secs: Option<u64>,
    /// The request method, when the recipe signs it.
    pub(crate) method: Option<&'p str>,
}

fn missing(name: &'static str) -> SignatureError {
    SignatureError::MissingHeader {
        header: Cow::Borrowed(name),
    }
}

fn malformed(name: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::MalformedHeader {
        header: Cow::Borrowed(name),
        reason,
    }
}

/// The JSON body, parsed once when a recipe reads fields of it.
struct Body<'a> {
    raw: &'a [u8],
    parsed: Option<Result<serde_json::Value, ()>>,
}

impl<'a> Body<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Self { raw, parsed: None }
    }

    /// The text of the field at `pointer`: a string as is, a number or
    /// boolean as JSON writes it.
    fn field(&mut self, pointer: &'static str) -> Result<String, SignatureError> {
        let raw = self.raw;
        let parsed = self
            .parsed
            .get_or_insert_with(|| serde_json::from_slice(raw).map_err(|_| ()));
        let value = parsed
            .as_ref()
            .map_err(|()| malformed(pointer, "the body is not JSON"))?;
        match value.pointer(pointer) {
            Some(serde_json::Value::String(text)) => Ok(text.clone()),
            Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                Ok(value.to_string())
            }
            Some(_) => Err(malformed(pointer, "body field is not a string or number")),
            None => Err(missing(pointer)),
        }
    }
}

/// A signature header value split into items.
fn items(value: &str, separator: Option<char>) -> Vec<&str> {
    match separator {
        Some(sep) => value.split(sep).map(str::trim).collect(),
        None => vec![value],
    }
}

/// The header values of `names` that are present (each unambiguous).
fn header_values<'a>(
    headers: &Headers<'a>,
    names: &'static [&'static str],
) -> Result<Vec<(&'static str, &'a str)>, SignatureError> {
    let mut found = Vec::new();
    for name in names {
        match headers.unique(name) {
            Ok(Some(value)) => found.push((*name, value)),
            Ok(None) => {}
            Err(reason) => return Err(malformed(name, reason)),
        }
    }
    Ok(found)
}

impl Signed {
    /// True when the message includes the timestamp (a captured request
    /// fails once it is older than the tolerance).
    pub fn signs_timestamp(&self) -> bool {
        self.timestamp.is_some() && self.message.contains(&Part::Timestamp)
    }

    /// True when the whole raw body is signed.
    pub fn signs_body(&self) -> bool {
        self.message.contains(&Part::Body)
    }

    fn signature_len(&self) -> Option<usize> {
        match self.primitive {
            Primitive::Hmac(algorithm, _) => Some(algorithm.output_len()),
            Primitive::Ed25519 => Some(64),
            // DER: variable length.
            Primitive::EcdsaP256 => None,
        }
    }

    /// The timestamp text and seconds, when the recipe has one and it is in
    /// the headers or the body.
    fn read_timestamp<'a>(
        &self,
        headers: &Headers<'a>,
        body: Option<&mut Body<'_>>,
    ) -> Result<Option<(Cow<'a, str>, i64)>, SignatureError> {
        let Some(at) = self.timestamp else {
            return Ok(None);
        };
        let (name, text): (&'static str, Cow<'a, str>) = match at.source {
            TimestampSource::Header(name) => (name, Cow::Borrowed(headers.required(name)?)),
            TimestampSource::SignatureItem(_) | TimestampSource::FirstSignatureItem => {
                let SignatureAt::Headers {
                    names, separator, ..
                } = self.signature
                else {
                    return Err(missing(key_name(at.source)));
                };
                let values = header_values(headers, names)?;
                let Some((header, value)) = values.first() else {
                    return Err(missing(names.first().copied().unwrap_or("signature")));
                };
                let all = items(value, separator);
                let found = match at.source {
                    TimestampSource::SignatureItem(key) => {
                        let mut found = None;
                        for item in &all {
                            if let Some(v) =
                                item.strip_prefix(key).and_then(|r| r.strip_prefix('='))
                            {
                                if found.is_some() {
                                    return Err(malformed(header, "more than one timestamp"));
                                }
                                found = Some(v);
                            }
                        }
                        found
                    }
                    _ => all.first().copied(),
                };
                let text = found.ok_or_else(|| malformed(header, "no timestamp item"))?;
                (header, Cow::Borrowed(text))
            }
            TimestampSource::Json(pointer) => match body {
                Some(body) => (pointer, Cow::Owned(body.field(pointer)?)),
                // The authorizer has no body: nothing to check yet.
                None => return Ok(None),
            },
        };
        let secs = parse_time(&text, at.format).map_err(|reason| malformed(name, reason))?;
        Ok(Some((text, secs)))
    }

    /// The signature texts, in order; the first header (or field) name for
    /// errors.
    fn read_signatures<'a>(
        &self,
        headers: &Headers<'a>,
        body: Option<&mut Body<'_>>,
    ) -> Result<(&'static str, Vec<Cow<'a, str>>), SignatureError> {
        match self.signature {
            SignatureAt::Headers {
                names,
                prefixes,
                separator,
            } => {
                let values = header_values(headers, names)?;
                let first = names.first().copied().unwrap_or("signature");
                if values.is_empty() {
                    return Err(missing(first));
                }
                let skip_first = matches!(
                    self.timestamp.map(|t| t.source),
                    Some(TimestampSource::FirstSignatureItem)
                );
                let mut texts = Vec::new();
                for (_, value) in &values {
                    let all = items(value, separator);
                    let all = all.into_iter().skip(usize::from(skip_first));
                    texts.extend(
                        all.filter_map(|item| {
                            prefixes.iter().find_map(|prefix| item.strip_prefix(prefix))
                        })
                        .map(Cow::Borrowed),
                    );
                }
                if texts.len() > MAX_SIGNATURES {
                    return Err(malformed(first, "too many signatures"));
                }
                if texts.is_empty() {
                    return Err(SignatureError::UnsupportedSignatureVersion {
                        header: Cow::Borrowed(first),
                        reason: "no signature with the expected prefix",
                    });
                }
                Ok((values[0].0, texts))
            }
            SignatureAt::Json(pointer) => match body {
                Some(body) => Ok((pointer, vec![Cow::Owned(body.field(pointer)?)])),
                None => Ok((pointer, Vec::new())),
            },
        }
    }

    /// Header checks without body or secrets (the authorizer's).
    pub(crate) fn precheck(
        &self,
        headers: &Headers<'_>,
        now: DateTime<Utc>,
        tolerance_secs: Option<u64>,
    ) -> Result<(), SignatureError> {
        if let Some((_, secs)) = self.read_timestamp(headers, None)? {
            if let Some(tolerance) = tolerance_secs {
                check_tolerance(secs, now, tolerance)?;
            }
        }
        let (name, texts) = self.read_signatures(headers, None)?;
        if matches!(self.signature, SignatureAt::Headers { .. }) {
            self.decode_all(name, &texts)?;
        }
        Ok(())
    }

    /// Decodes the signatures; undecodable ones are skipped, none left is
    /// malformed.
    fn decode_all(
        &self,
        name: &'static str,
        texts: &[Cow<'_, str>],
    ) -> Result<Vec<Decoded>, SignatureError> {
        let decoded: Vec<Decoded> = texts
            .iter()
            .filter_map(|text| match self.signature_len() {
                Some(len) => crypto::decode_tag(self.encoding, text, len)
                    .ok()
                    .map(Decoded::Fixed),
                None => BASE64
                    .decode(text.as_bytes())
                    .ok()
                    .filter(|der| der.len() <= 72)
                    .map(Decoded::Der),
            })
            .collect();
        if decoded.is_empty() {
            return Err(malformed(
                name,
                "no signature decodes to the expected length and encoding",
            ));
        }
        Ok(decoded)
    }

    pub(crate) fn verify<'a>(
        &self,
        context: &Context<'_>,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        now: DateTime<Utc>,
    ) -> Result<Verified<'a>, SignatureError> {
        let mut body = Body::new(request.body);
        let timestamp = self.read_timestamp(&request.headers, Some(&mut body))?;
        if let (Some((_, secs)), Some(tolerance)) = (&timestamp, context.tolerance_secs) {
            check_tolerance(*secs, now, tolerance)?;
        }
        let (name, texts) = self.read_signatures(&request.headers, Some(&mut body))?;
        let signatures = self.decode_all(name, &texts)?;

        // The message, as borrowed or owned pieces.
        let mut owned: Vec<(usize, String)> = Vec::new();
        let mut parts: Vec<&[u8]> = Vec::with_capacity(self.message.len());
        for (i, part) in self.message.iter().enumerate() {
            if let Part::Json(pointer) = part {
                owned.push((i, body.field(pointer)?));
            }
        }
        let timestamp_text = timestamp.as_ref().map(|(text, _)| text.as_ref());
        for (i, part) in self.message.iter().enumerate() {
            let piece: &[u8] = match part {
                Part::Body => request.body,
                Part::Text(text) => text.as_bytes(),
                Part::Timestamp => timestamp_text.unwrap_or_default().as_bytes(),
                Part::Header(header) => request.headers.required(header)?.as_bytes(),
                // Webhooks are POSTs (ingest's route takes nothing else).
                Part::Method => context.method.unwrap_or("POST").as_bytes(),
                Part::Url => request
                    .url
                    .ok_or(SignatureError::MissingUrl {
                        scheme: context.name,
                    })?
                    .as_bytes(),
                Part::Json(_) => owned
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map(|(_, text)| text.as_bytes())
                    .unwrap_or_default(),
            };
            parts.push(piece);
        }

        let index = match self.primitive {
            Primitive::Hmac(algorithm, KeyFormat::Utf8) => {
                let fixed = signatures.iter().filter_map(Decoded::fixed);
                match_raw_key(SCHEME, algorithm, secrets, &parts, fixed)?
            }
            Primitive::Hmac(algorithm, format) => match_decoded_key(
                context.name,
                algorithm,
                format,
                secrets,
                &parts,
                &signatures,
            )?,
            Primitive::Ed25519 => match_ed25519(context.name, secrets, &parts, &signatures)?,
            Primitive::EcdsaP256 => match_ecdsa(context.name, secrets, &parts, &signatures)?,
        };
        let mut verified = Verified::new(SCHEME, index);
        verified.timestamp_secs = timestamp.map(|(_, secs)| secs);
        Ok(verified)
    }
}

fn key_name(source: TimestampSource) -> &'static str {
    match source {
        TimestampSource::Header(name)
        | TimestampSource::SignatureItem(name)
        | TimestampSource::Json(name) => name,
        TimestampSource::FirstSignatureItem => "signature",
    }
}

/// A decoded signature: fixed length (HMAC, Ed25519) or DER (ECDSA).
enum Decoded {
    Fixed(Tag),
    Der(Vec<u8>),
}

impl Decoded {
    fn fixed(&self) -> Option<&[u8]> {
        match self {
            Self::Fixed(tag) => Some(tag.as_bytes()),
            Self::Der(_) => None,
        }
    }
}

fn no_match(candidates: usize, secrets: &[Secret]) -> SignatureError {
    SignatureError::NoMatchingSignature {
        candidates,
        secrets: secrets.len(),
    }
}

fn invalid_secret(name: &'static str, index: usize, reason: &'static str) -> SignatureError {
    SignatureError::InvalidSecret {
        index,
        scheme: name,
        reason,
    }
}

fn match_decoded_key(
    name: &'static str,
    algorithm: Algorithm,
    format: KeyFormat,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let text = secret.expose_secret();
            let key = match format {
                KeyFormat::Utf8 => Ok(text.as_bytes().to_vec()),
                KeyFormat::Hex => hex::decode(text).map_err(|_| "secret is not hexadecimal"),
                KeyFormat::Base64 => BASE64.decode(text).map_err(|_| "secret is not base64"),
            };
            key.map(Zeroizing::new)
                .map_err(|reason| invalid_secret(name, index, reason))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (index, key) in keys.iter().enumerate() {
        let mut mac = MacState::new(algorithm, key)
            .map_err(|_| invalid_secret(name, index, "refused as an HMAC key"))?;
        for part in parts {
            mac.update(part);
        }
        let tag = mac.finalize();
        if signatures
            .iter()
            .filter_map(Decoded::fixed)
            .any(|sig| crypto::ct_eq(tag.as_bytes(), sig))
        {
            return Ok(index);
        }
    }
    Err(no_match(signatures.len(), secrets))
}

fn match_ed25519(
    name: &'static str,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    use ed25519_dalek::{Signature, VerifyingKey};
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let bytes: [u8; 32] =
                crypto::decode_hex_array(secret.expose_secret()).map_err(|_| {
                    invalid_secret(name, index, "public key is not 64 hexadecimal digits")
                })?;
            VerifyingKey::from_bytes(&bytes)
                .map_err(|_| invalid_secret(name, index, "not an Ed25519 public key"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let message = parts.concat();
    for (index, key) in keys.iter().enumerate() {
        for sig in signatures.iter().filter_map(Decoded::fixed) {
            let Ok(bytes) = <[u8; 64]>::try_from(sig) else {
                continue;
            };
            if key
                .verify_strict(&message, &Signature::from_bytes(&bytes))
                .is_ok()
            {
                return Ok(index);
            }
        }
    }
    Err(no_match(signatures.len(), secrets))
}

fn match_ecdsa(
    name: &'static str,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    use p256::ecdsa::signature::Verifier as _;
    use p256::ecdsa::{Signature, VerifyingKey};
    use p256::pkcs8::DecodePublicKey as _;
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let der = BASE64
                .decode(secret.expose_secret().trim())
                .map_err(|_| invalid_secret(name, index, "public key is not base64"))?;
            VerifyingKey::from_public_key_der(&der).map_err(|_| {
                invalid_secret(
                    name,
                    index,
                    "not a P-256 public key (DER SubjectPublicKeyInfo)",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let message = parts.concat();
    let sigs: Vec<Signature> = signatures
        .iter()
        .filter_map(|sig| match sig {
            Decoded::Der(der) => Signature::from_der(der).ok(),
            Decoded::Fixed(_) => None,
        })
        .collect();
    for (index, key) in keys.iter().enumerate() {
        if sigs.iter().any(|sig| key.verify(&message, sig).is_ok()) {
            return Ok(index);
        }
    }
    Err(no_match(signatures.len(), secrets))
}

/// Parses a timestamp into Unix seconds.
pub(crate) fn parse_time(text: &str, format: TimeFormat) -> Result<i64, &'static str> {
    match format {
        TimeFormat::Seconds => timestamp::parse_unix_seconds(text),
        TimeFormat::Millis => {
            // ASCII first: the split below is by bytes, and a header or body
            // field may hold any character (found by the fuzz target).
            if text.len() < 4 || !text.is_ascii() {
                return Err("timestamp is not a number of milliseconds");
            }
            timestamp::parse_unix_seconds(&text[..text.len() - 3]).and_then(|secs| {
                if text[text.len() - 3..].bytes().all(|b| b.is_ascii_digit()) {
                    Ok(secs)
                } else {
                    Err("timestamp is not a number of milliseconds")
                }
            })
        }
        TimeFormat::Rfc3339 => DateTime::parse_from_rfc3339(text)
            .map(|t| t.timestamp())
            .map_err(|_| "timestamp is not RFC 3339"),
    }
}

/// Token and basic-auth recipes.
pub(crate) fn verify_token<'a>(
    header: &'static str,
    basic: bool,
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    let presented = read_token(header, basic, &request.headers)?;
    check_secrets(SCHEME, secrets)?;
    // Digests of equal length are compared, so neither the time nor an
    // early length check tells how long the secret is.
    let presented = Sha256::digest(&presented);
    let mut matched = None;
    for (index, secret) in secrets.iter().enumerate() {
        let expected = Sha256::digest(secret.expose_secret().as_bytes());
        if crypto::ct_eq(&expected, &presented) && matched.is_none() {
            matched = Some(index);
        }
    }
    matched
        .map(|index| Verified::new(SCHEME, index))
        .ok_or_else(|| no_match(1, secrets))
}

pub(crate) fn read_token(
    header: &'static str,
    basic: bool,
    headers: &Headers<'_>,
) -> Result<Zeroizing<Vec<u8>>, SignatureError> {
    let value = headers.required(header)?;
    if !basic {
        if value.is_empty() {
            return Err(malformed(header, "token is empty"));
        }
        return Ok(Zeroizing::new(value.as_bytes().to_vec()));
    }
    let Some((scheme, credentials)) = value.split_once(' ') else {
        return Err(malformed(header, "expected `Basic <base64>`"));
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(SignatureError::UnsupportedSignatureVersion {
            header: Cow::Borrowed(header),
            reason: "expected the `Basic` scheme",
        });
    }
    let decoded = BASE64
        .decode(credentials.trim())
        .map_err(|_| malformed(header, "credentials are not base64"))?;
    if !decoded.contains(&b':') {
        return Err(malformed(header, "credentials are not `user:password`"));
    }
    Ok(Zeroizing::new(decoded))
}

impl fmt::Display for Recipe {
    /// One line, as the docs table and `hookbox presets` show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Scheme(kind) => write!(f, "scheme `{kind}`"),
            Self::Signed(signed) => signed.fmt(f),
            Self::Token { header } => write!(f, "shared token in `{header}` (body not signed)"),
            Self::BasicAuth => f.write_str("HTTP basic auth (body not signed)"),
            Self::Twilio(algorithm) => write!(
                f,
                "Twilio's recipe with {} (base64) of URL + sorted form parameters in `X-Twilio-Signature`",
                algorithm_name(*algorithm)
            ),
            Self::Jws { header, issuer } => write!(
                f,
                "JWS HS256 in `{header}`, claims `iss` = `{issuer}` and `sha256` = hex SHA-256 of body"
            ),
        }
    }
}

fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Sha1 => "HMAC-SHA1",
        Algorithm::Sha256 => "HMAC-SHA256",
        Algorithm::Sha512 => "HMAC-SHA512",
    }
}

impl fmt::Display for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let encoding = match self.encoding {
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
        };
        match self.primitive {
            Primitive::Hmac(algorithm, key) => {
                let algorithm = algorithm_name(algorithm);
                let key = match key {
                    KeyFormat::Utf8 => "",
                    KeyFormat::Hex => ", hex key",
                    KeyFormat::Base64 => ", base64 key",
                };
                write!(f, "{algorithm} ({encoding}{key})")?;
            }
            Primitive::Ed25519 => write!(f, "Ed25519 ({encoding})")?,
            Primitive::EcdsaP256 => write!(f, "ECDSA P-256/SHA-256 ({encoding} DER)")?,
        }
        f.write_str(" of ")?;
        for (i, part) in self.message.iter().enumerate() {
            if i > 0 {
                f.write_str(" + ")?;
            }
            match part {
                Part::Body => f.write_str("body")?,
                Part::Text(text) => write!(f, "`{text}`")?,
                Part::Timestamp => f.write_str("timestamp")?,
                Part::Header(name) => write!(f, "`{name}`")?,
                Part::Method => f.write_str("method")?,
                Part::Url => f.write_str("URL")?,
                Part::Json(pointer) => write!(f, "body `{pointer}`")?,
            }
        }
        match self.signature {
            SignatureAt::Headers {
                names,
                prefixes,
                separator,
            } => {
                f.write_str(" in ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" or ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                let shown: Vec<String> = prefixes
                    .iter()
                    .map(|p| {
                        if p.is_empty() {
                            "nothing".to_owned()
                        } else {
                            format!("`{p}`")
                        }
                    })
                    .collect();
                if prefixes.iter().any(|p| !p.is_empty()) {
                    write!(f, " after {}", shown.join(" or "))?;
                }
                if let Some(separator) = separator {
                    write!(f, " (several, `{separator}`)")?;
                }
            }
            SignatureAt::Json(pointer) => write!(f, " in body `{pointer}`")?,
        }
        if let Some(at) = self.timestamp {
            let format = match at.format {
                TimeFormat::Seconds => "s",
                TimeFormat::Millis => "ms",
                TimeFormat::Rfc3339 => "RFC 3339",
            };
            match at.source {
                TimestampSource::Header(name) => write!(f, "; timestamp `{name}` ({format})")?,
                TimestampSource::SignatureItem(key) => {
                    write!(f, "; timestamp `{key}=` ({format})")?
                }
                TimestampSource::FirstSignatureItem => {
                    write!(f, "; timestamp first item ({format})")?
                }
                TimestampSource::Json(pointer) => {
                    write!(f, "; timestamp body `{pointer}` ({format})")?
                }
            }
        }
        Ok(())
    }
}
