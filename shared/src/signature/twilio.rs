//! Twilio: `X-Twilio-Signature`, base64 HMAC-SHA1 keyed with the auth token
//! over the full request URL followed by the POST form parameters sorted by
//! key (then value), each key immediately followed by its value.
//!
//! For JSON bodies Twilio adds `bodySHA256=<hex sha256(body)>` to the URL
//! (so the URL signature covers the body hash) and signs no parameters; the
//! body must then hash to that value. As Twilio's reference validators do,
//! the URL is tried without its port and with its port (the scheme's default
//! when none was given), because Twilio signs one or the other.
//!
//! A body that is neither form parameters nor bound by `bodySHA256` would
//! not be covered by the signature at all: such requests are refused.

use std::borrow::Cow;

use sha2::{Digest as _, Sha256};

use super::config::{Algorithm, Encoding, SchemeKind};
use super::crypto::{self, Tag};
use super::error::SignatureError;
use super::form::Form;
use super::headers::Headers;
use super::keys::{KeyUse, PreparedKey};
use super::parse::{self, ParseError};
use super::recipe::KeyFormat;
use super::secret::Secret;
use super::twilio_url::TwilioUrl;
use super::verifier::{SignedRequest, Verified, check_secrets, key_rejected};

const SCHEME: SchemeKind = SchemeKind::Twilio;
const HEADER: &str = "X-Twilio-Signature";
const CONTENT_TYPE: &str = "Content-Type";

fn parse(headers: &Headers<'_>) -> Result<[u8; 20], SignatureError> {
    let value = headers.required(HEADER)?;
    parse::twilio_signature(value).map_err(|e| e.for_header(HEADER))
}

pub(crate) fn precheck(headers: &Headers<'_>) -> Result<(), SignatureError> {
    parse(headers).map(|_| ())
}

/// The signature of a recipe with another hash (the HMAC-SHA256
/// signature settings): base64 of `algorithm`'s output length.
fn parse_with(headers: &Headers<'_>, algorithm: Algorithm) -> Result<Tag, SignatureError> {
    if algorithm == Algorithm::Sha1 {
        return parse(headers).map(|sig| Tag::of(&sig));
    }
    let value = headers.required(HEADER)?;
    crypto::decode_tag(Encoding::Base64, value, algorithm.output_len()).map_err(|reason| {
        SignatureError::MalformedHeader {
            header: Cow::Borrowed(HEADER),
            reason,
        }
    })
}

/// The precheck of [`verify_with`].
pub(crate) fn precheck_with(
    headers: &Headers<'_>,
    algorithm: Algorithm,
) -> Result<(), SignatureError> {
    parse_with(headers, algorithm).map(|_| ())
}

fn malformed_url(error: ParseError) -> SignatureError {
    match error {
        ParseError::Malformed(reason) | ParseError::UnsupportedVersion(reason) => {
            SignatureError::MalformedUrl { reason }
        }
    }
}

pub(crate) fn verify<'a>(
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    verify_with(SCHEME, Algorithm::Sha1, request, secrets)
}

/// Twilio's recipe with `algorithm` (SHA-1 by default; SHA-256 under its
/// HMAC-SHA256 signature settings), reported as `scheme`.
pub(crate) fn verify_with<'a>(
    scheme: SchemeKind,
    algorithm: Algorithm,
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    let signature = parse_with(&request.headers, algorithm)?;
    let url = request.url.ok_or(SignatureError::MissingUrl {
        scheme: SCHEME.as_str(),
    })?;
    let url = TwilioUrl::parse(url).map_err(malformed_url)?;
    let body_hash = url.body_sha256().map_err(malformed_url)?;

    let mut form = None;
    if body_hash.is_none() {
        if is_form(&request.headers)? {
            let mut params = Form::parse(request.body);
            params.sort_and_dedup();
            form = Some(params);
        } else if !request.body.is_empty() {
            return Err(SignatureError::UnsignedBody {
                reason: "not form-encoded, and the URL has no `bodySHA256`",
            });
        }
    }

    check_secrets(scheme, secrets)?;
    // The URL's two spellings, in pieces (no string built for them).
    let (without_port, with_port) = (url.without_port(), url.with_port());
    let urls: [&[&str]; 2] = [&without_port, &with_port];
    let mut matched = None;
    'secrets: for (index, secret) in secrets.iter().enumerate() {
        // The HMAC state keyed once per secret and kept with it.
        let prepared = secret.prepared(KeyUse::Hmac(algorithm, KeyFormat::Utf8));
        let Ok(PreparedKey::Hmac(keyed)) = prepared.as_ref() else {
            return Err(key_rejected(scheme, index));
        };
        for url in urls {
            let mut mac = keyed.clone();
            for piece in url {
                mac.update(piece.as_bytes());
            }
            for param in form.iter().flat_map(Form::signed) {
                mac.update(param);
            }
            if crypto::ct_eq(mac.finalize().as_bytes(), signature.as_bytes()) {
                matched = Some(index);
                break 'secrets;
            }
        }
    }
    let Some(index) = matched else {
        return Err(SignatureError::NoMatchingSignature {
            candidates: 1,
            secrets: secrets.len(),
            item: None,
        });
    };

    if let Some(expected) = body_hash {
        let actual = Sha256::digest(request.body);
        if !crypto::ct_eq(actual.as_slice(), &expected) {
            return Err(SignatureError::BodyHashMismatch);
        }
    }
    Ok(Verified::new(scheme, index))
}

fn is_form(headers: &Headers<'_>) -> Result<bool, SignatureError> {
    match headers.unique(CONTENT_TYPE) {
        Ok(value) => Ok(value.is_some_and(parse::is_form_content_type)),
        Err(reason) => Err(SignatureError::MalformedHeader {
            header: Cow::Borrowed(CONTENT_TYPE),
            reason,
        }),
    }
}
