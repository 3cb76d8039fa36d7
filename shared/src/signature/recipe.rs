//! Recipes: the few building blocks the provider presets are made of.
//!
//! A [`Recipe`] says how one provider authenticates a webhook, as data:
//! - a hand-written scheme of this module ([`Recipe::Scheme`]: Standard
//!   Webhooks, Stripe, GitHub, Shopify, Slack, Twilio);
//! - a signature ([`Recipe::Signed`]): a primitive (HMAC-SHA1/256/512 with
//!   a key format, Ed25519, ECDSA P-256/SHA-256) over a message made of
//!   [`Part`]s (raw body, timestamp, literal separators, headers, method,
//!   URL, fields of the JSON body, the sorted form parameters), the
//!   signature read from a header (one or several, after a prefix, several
//!   values during rotation) or from the body (a field, or one in each item
//!   of an array, each over its own fields: Adyen's standard notifications,
//!   `each_item.rs`), and an optional signed timestamp;
//! - a shared token compared as it is ([`Recipe::Token`]: GitLab) or HTTP
//!   basic credentials ([`Recipe::BasicAuth`]: Chargebee, Postmark);
//! - a JWS whose claims hash the body ([`Recipe::Jws`]: Netlify; see
//!   `jws.rs`).
//!
//! The types and their one-line descriptions are here; verifying a
//! [`Signed`] recipe is in `signed.rs`.
//!
//! Every comparison is constant time (HMAC tags and tokens with
//! `subtle`; Ed25519 and ECDSA verify with their own crates); secrets are
//! never shown (they stay [`Secret`]s, decoded keys are wiped on drop).

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::config::{Algorithm, Encoding, SchemeKind};
use super::crypto::{self, BASE64};
use super::error::SignatureError;
use super::headers::Headers;
use super::secret::Secret;
use super::timestamp;
use super::verifier::{SignedRequest, Verified, check_secrets};

pub(super) const SCHEME: SchemeKind = SchemeKind::Preset;

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
    /// In each item of a JSON array of the body, each item signed on its
    /// own (Adyen's standard notifications, `each_item.rs`): the array at
    /// `items`, in each of its elements the signed object at `item` (`""`:
    /// the element), in that object the signature at `signature` (a string;
    /// absent, `null` or empty: the item is unsigned). The message is
    /// built per item, its [`Part::Json`] pointers relative to the signed
    /// object, where a field that is absent or `null` is empty text, a
    /// string is itself, a number is as written and a boolean `true` or
    /// `false`. Every item must verify with one of the secrets, and an
    /// empty array is refused. An HMAC only, with no timestamp.
    EachItem {
        /// JSON pointer to the array in the body (`""`: the body).
        items: &'static str,
        /// JSON pointer to the signed object inside each element.
        item: &'static str,
        /// JSON pointer to the signature inside the signed object.
        signature: &'static str,
    },
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
    /// as written (with [`SignatureAt::EachItem`], a field of the item).
    Json(&'static str),
    /// The parameters of a form-encoded body
    /// (`application/x-www-form-urlencoded`), decoded and sorted by name
    /// then value (a pair repeated once), each name followed by its value,
    /// nothing between them: what Twilio's recipe signs after the URL, and
    /// Mandrill's. A non-empty body of another content type is refused (it
    /// would not be signed).
    Form,
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
    /// Unix milliseconds, digits only, written as a JSON number: for a
    /// timestamp in the body, a JSON string is refused (Linear's
    /// `webhookTimestamp`, which Linear's SDK refuses as a string). In a
    /// header, the same as [`TimeFormat::Millis`].
    MillisNumber,
    /// RFC 3339, e.g. `2024-01-01T00:00:00.123456789Z`.
    Rfc3339,
    /// An ISO 8601 date and time in UTC written without an offset, e.g.
    /// `2024-01-01T00:00:00.123456` (Orb); an RFC 3339 value is read too.
    UtcDateTime,
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

pub(super) fn missing(name: &'static str) -> SignatureError {
    SignatureError::MissingHeader {
        header: Cow::Borrowed(name),
    }
}

pub(super) fn malformed(name: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::MalformedHeader {
        header: Cow::Borrowed(name),
        reason,
    }
}

pub(super) fn no_match(candidates: usize, secrets: &[Secret]) -> SignatureError {
    SignatureError::NoMatchingSignature {
        candidates,
        secrets: secrets.len(),
        item: None,
    }
}

pub(super) fn invalid_secret(
    name: &'static str,
    index: usize,
    reason: &'static str,
) -> SignatureError {
    SignatureError::InvalidSecret {
        index,
        scheme: name,
        reason,
    }
}

/// Parses a timestamp into Unix seconds.
pub(crate) fn parse_time(text: &str, format: TimeFormat) -> Result<i64, &'static str> {
    match format {
        TimeFormat::Seconds => timestamp::parse_unix_seconds(text),
        TimeFormat::Millis | TimeFormat::MillisNumber => {
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
        // The provider's own layout read directly (chrono's general parser
        // cost 1,700 instructions a request, more than the rest of the
        // recipe); anything else as chrono reads it, without an offset or
        // with one (RFC 3339).
        TimeFormat::UtcDateTime => utc_date_time(text)
            .or_else(|| {
                text.parse::<NaiveDateTime>()
                    .ok()
                    .map(|t| t.and_utc().timestamp())
            })
            .or_else(|| {
                DateTime::parse_from_rfc3339(text)
                    .ok()
                    .map(|t| t.timestamp())
            })
            .ok_or("timestamp is not an ISO 8601 date and time"),
    }
}

/// `YYYY-MM-DDTHH:MM:SS`, then nothing or `.` and 1 to 9 digits, in UTC:
/// Unix seconds. `None` for any other text (which chrono may still read):
/// what this accepts, chrono's `NaiveDateTime` parser reads the same.
fn utc_date_time(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let (head, fraction) = (b.get(..19)?, b.get(19..)?);
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, byte)| head.get(at) != Some(&byte))
    {
        return None;
    }
    match fraction {
        [] => {}
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
        }
        _ => return None,
    }
    let number = |from: usize, to: usize| -> Option<u32> {
        head.get(from..to)?.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(number(0, 4)?).ok()?,
        number(5, 7)?,
        number(8, 10)?,
    )?;
    let time = NaiveTime::from_hms_opt(number(11, 13)?, number(14, 16)?, number(17, 19)?)?;
    Some(date.and_time(time).and_utc().timestamp())
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
        // Each item's fields, or the body's.
        let fields = match self.signature {
            SignatureAt::EachItem { .. } => "item",
            _ => "body",
        };
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
                Part::Json(pointer) => write!(f, "{fields} `{pointer}`")?,
                Part::Form => f.write_str("sorted form parameters")?,
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
            SignatureAt::EachItem {
                items,
                item,
                signature,
            } => write!(
                f,
                " in `{signature}` of each `{item}` of body `{items}` (every item must verify)"
            )?,
        }
        if let Some(at) = self.timestamp {
            let format = match at.format {
                TimeFormat::Seconds => "s",
                TimeFormat::Millis => "ms",
                TimeFormat::MillisNumber => "ms, a JSON number",
                TimeFormat::Rfc3339 => "RFC 3339",
                TimeFormat::UtcDateTime => "ISO 8601, UTC",
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
