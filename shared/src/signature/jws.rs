//! A JWS recipe (Netlify): the signature header carries a compact JWT,
//! `base64url(header).base64url(claims).base64url(HMAC-SHA256)`, keyed with
//! the shared secret over the first two parts; its `iss` claim names the
//! provider and its `sha256` claim is the hex SHA-256 of the body, which
//! binds the body to the token.
//!
//! Only `HS256` is accepted (the `alg` of the token is read, never trusted
//! to choose another algorithm: `none` and the RSA/EC algorithms are
//! refused). The MAC is compared in constant time before any claim is
//! trusted; then the issuer must match and the body must hash to the
//! `sha256` claim (compared in constant time too).

use std::borrow::Cow;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use sha2::{Digest as _, Sha256};

use super::config::{Algorithm, SchemeKind};
use super::crypto;
use super::error::SignatureError;
use super::form::find_byte;
use super::headers::Headers;
use super::json;
use super::secret::Secret;
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Preset;

/// Base64url without padding, as JWS writes it.
pub(crate) const BASE64URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone),
);

/// The only algorithm accepted.
pub(crate) const ALGORITHM: &str = "HS256";

fn malformed(header: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::MalformedHeader {
        header: Cow::Borrowed(header),
        reason,
    }
}

/// A token split and checked as far as it can be without the secret.
struct Token<'a> {
    /// `header.claims`, the MAC's input.
    signing_input: &'a str,
    claims: &'a str,
    signature: [u8; 32],
}

/// Longest header or claims decoded on the stack (Netlify's claims are
/// about a hundred bytes); longer ones are decoded on the heap.
const INLINE_JSON: usize = 512;

/// Calls `read` with the string fields at `pointers` (`"/name"`) of a
/// base64url JSON object (`None` where absent or not a string): the
/// fields `serde_json::Value` and `Value::pointer` find, with the same
/// documents refused. Malformed (`what`) when `part` is not base64url or
/// not a JSON object.
///
/// A flat object of plain strings (what providers send: `{"alg":"HS256",
/// "typ":"JWT"}`) is read in place ([`flat_strings`]); any other document
/// goes through `json::read`, without building the object either.
fn with_fields<const N: usize, T>(
    header: &'static str,
    part: &str,
    pointers: [&str; N],
    what: &'static str,
    read: impl FnOnce([Option<&str>; N]) -> Result<T, SignatureError>,
) -> Result<T, SignatureError> {
    let mut inline = [0u8; INLINE_JSON];
    let heap;
    // Decoded by the table-driven decoder of `crypto` (strict as the
    // `base64` crate: no `=`, canonical last character), on the heap by
    // the crate when too long for the stack.
    let bytes: &[u8] = match crypto::Alphabet::decoded_len(part.len()) {
        Some(len) if len <= INLINE_JSON => {
            let out = inline.get_mut(..len).unwrap_or_default();
            crypto::decode_unpadded(&crypto::URL_SAFE, part.as_bytes(), out)
                .map_err(|_| malformed(header, what))?;
            out
        }
        Some(_) => {
            heap = BASE64URL
                .decode(part)
                .map_err(|_| malformed(header, what))?;
            &heap
        }
        None => return Err(malformed(header, what)),
    };
    if let Some(fields) = flat_strings(bytes, pointers) {
        return read(fields);
    }
    let mut values: [Option<serde_json::Value>; N] = std::array::from_fn(|_| None);
    match json::read(bytes, &pointers, &mut values) {
        Ok(true) => {}
        Ok(false) | Err(_) => return Err(malformed(header, what)),
    }
    read(values.each_ref().map(|value| match value {
        Some(serde_json::Value::String(text)) => Some(text.as_str()),
        _ => None,
    }))
}

/// The fields at `pointers` of `document` when it is a flat JSON object
/// of plain strings: `{"key":"value",...}`, no whitespace, no escapes, no
/// control characters, UTF-8, no key repeated, each pointer `/key` with
/// neither `/` nor `~` in `key`. Such a document is JSON and
/// `Value::pointer` finds exactly these values in it; `None` for any
/// other document (read in full then).
fn flat_strings<'d, const N: usize>(
    document: &'d [u8],
    pointers: [&str; N],
) -> Option<[Option<&'d str>; N]> {
    let text = std::str::from_utf8(document).ok()?;
    let mut names = [""; N];
    for (name, pointer) in names.iter_mut().zip(pointers) {
        *name = pointer.strip_prefix('/')?;
        if name.contains(['/', '~']) {
            return None;
        }
    }
    // A string's content up to its closing quote, and what follows.
    let string = |rest: &'d str| -> Option<(&'d str, &'d str)> {
        let rest = rest.strip_prefix('"')?;
        let end = rest
            .bytes()
            .position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
        let (content, after) = rest.split_at(end);
        Some((content, after.strip_prefix('"')?))
    };
    let mut found: [Option<&'d str>; N] = [None; N];
    let mut keys = 0usize;
    let mut rest = text.strip_prefix('{')?;
    if rest == "}" {
        return Some(found);
    }
    loop {
        let (key, after) = string(rest)?;
        let (value, after) = string(after.strip_prefix(':')?)?;
        keys += 1;
        // Few keys: a repeated one (whose last value counts) is read in full.
        if keys > 16 {
            return None;
        }
        for (slot, name) in found.iter_mut().zip(names) {
            if key == name {
                if slot.is_some() {
                    return None;
                }
                *slot = Some(value);
            }
        }
        if after == "}" {
            return Some(found);
        }
        rest = after.strip_prefix(',')?;
    }
}

/// `header.claims.signature` split at its two dots; `None` unless there
/// are exactly two.
fn split3(value: &str) -> Option<(&str, &str, &str)> {
    // Eight bytes at a time: byte by byte, finding the dots of a 200-byte
    // token cost about a thousand instructions.
    let dot = |text: &str| find_byte(text.as_bytes(), b'.');
    let first = dot(value)?;
    let (protected, rest) = (value.get(..first)?, value.get(first + 1..)?);
    let second = dot(rest)?;
    let (claims, signature) = (rest.get(..second)?, rest.get(second + 1..)?);
    if dot(signature).is_some() {
        return None;
    }
    Some((protected, claims, signature))
}

fn parse<'a>(header: &'static str, headers: &Headers<'a>) -> Result<Token<'a>, SignatureError> {
    let value = headers.required(header)?;
    let Some((protected, claims, signature)) = split3(value) else {
        return Err(malformed(
            header,
            "expected a JWS `header.claims.signature`",
        ));
    };
    with_fields(
        header,
        protected,
        ["/alg"],
        "JWS header is not base64url JSON",
        |[alg]| {
            if alg == Some(ALGORITHM) {
                Ok(())
            } else {
                Err(SignatureError::UnsupportedSignatureVersion {
                    header: Cow::Borrowed(header),
                    reason: "only HS256 tokens are accepted",
                })
            }
        },
    )?;
    let mut mac = [0u8; 32];
    // 43 characters are 32 bytes (unpadded).
    if signature.len() != 43
        || crypto::decode_unpadded(&crypto::URL_SAFE, signature.as_bytes(), &mut mac).is_err()
    {
        return Err(malformed(header, "signature is not 32 bytes of base64url"));
    }
    let signing_input = &value[..protected.len() + 1 + claims.len()];
    Ok(Token {
        signing_input,
        claims,
        signature: mac,
    })
}

/// Header checks without body or secrets (the authorizer's).
pub(crate) fn precheck(header: &'static str, headers: &Headers<'_>) -> Result<(), SignatureError> {
    parse(header, headers).map(|_| ())
}

pub(crate) fn verify<'a>(
    header: &'static str,
    issuer: &'static str,
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    let token = parse(header, &request.headers)?;
    let index = match_raw_key(
        SCHEME,
        Algorithm::Sha256,
        secrets,
        &[token.signing_input.as_bytes()],
        [token.signature.as_slice()],
    )?;
    // Authentic from here on: the claims are the provider's.
    let expected: [u8; 32] = with_fields(
        header,
        token.claims,
        ["/iss", "/sha256"],
        "JWS claims are not base64url JSON",
        |[iss, sha256]| {
            if iss != Some(issuer) {
                return Err(malformed(header, "the token's issuer is not the provider"));
            }
            let expected =
                sha256.ok_or_else(|| malformed(header, "the token has no `sha256` claim"))?;
            crypto::decode_hex_array(expected)
                .map_err(|_| malformed(header, "the `sha256` claim is not 64 hexadecimal digits"))
        },
    )?;
    if !crypto::ct_eq(Sha256::digest(request.body).as_slice(), &expected) {
        return Err(SignatureError::BodyHashMismatch);
    }
    Ok(Verified::new(SCHEME, index))
}

/// The token a provider would send for `body` (the signer's).
pub(crate) fn sign(issuer: &str, secret: &Secret, body: &[u8]) -> Option<String> {
    use hmac::{Hmac, KeyInit, Mac};
    let protected = BASE64URL.encode(format!(r#"{{"alg":"{ALGORITHM}","typ":"JWT"}}"#));
    let claims = BASE64URL.encode(
        serde_json::json!({
            "iss": issuer,
            "sha256": hex::encode(Sha256::digest(body)),
        })
        .to_string(),
    );
    let signing_input = format!("{protected}.{claims}");
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret.expose_secret().as_bytes()).ok()?;
    mac.update(signing_input.as_bytes());
    Some(format!(
        "{signing_input}.{}",
        BASE64URL.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Value` and `Value::pointer` find (strings only), or `None`
    /// when the document is not a JSON object.
    fn reference<const N: usize>(
        document: &str,
        pointers: [&str; N],
    ) -> Option<[Option<String>; N]> {
        let value: serde_json::Value = serde_json::from_str(document).ok()?;
        value.is_object().then(|| {
            pointers.map(|p| {
                value
                    .pointer(p)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            })
        })
    }

    #[test]
    fn flat_strings_read_what_value_reads_or_leave_the_document_to_it() {
        let documents = [
            r#"{"alg":"HS256","typ":"JWT"}"#,
            r#"{"iss":"netlify","sha256":"00ff"}"#,
            r#"{}"#,
            r#"{"typ":"JWT"}"#,
            r#"{"alg":"none","alg":"HS256"}"#,
            r#"{"x":"1","x":"2","alg":"é"}"#,
            r#"{"alg":"HS\u0032"}"#,
            r#"{"alg":"HS256" }"#,
            r#"{"alg":256}"#,
            r#"{"alg":"HS256"}x"#,
            r#"{"alg":"HS256",}"#,
            r#"["alg"]"#,
            r#"{"a/b":"1","m~n":"2"}"#,
            "{\"alg\":\"a\u{1}\"}",
        ];
        for document in documents {
            let pointers = ["/alg", "/typ"];
            if let Some(fast) = flat_strings(document.as_bytes(), pointers) {
                let expected = reference(document, pointers);
                assert_eq!(
                    Some(fast.map(|f| f.map(str::to_owned))),
                    expected,
                    "{document}"
                );
            }
        }
        // What providers send is read in place.
        assert!(flat_strings(br#"{"alg":"HS256","typ":"JWT"}"#, ["/alg"]).is_some());
        // Repeated wanted keys, escapes, other values, whitespace: in full.
        for document in [
            r#"{"alg":"none","alg":"HS256"}"#,
            r#"{"alg":"HS\u0032"}"#,
            r#"{"alg":256}"#,
            r#"{"alg":"HS256" }"#,
        ] {
            assert!(
                flat_strings(document.as_bytes(), ["/alg"]).is_none(),
                "{document}"
            );
        }
        assert!(flat_strings(br#"{"a/b":"1"}"#, ["/a~1b"]).is_none());
    }

    proptest::proptest! {
        /// The table-driven base64url decoding refuses and accepts what
        /// the crate (`BASE64URL`) does, with the same bytes, at every
        /// length, and for a 43-character signature.
        #[test]
        fn base64url_decoding_agrees_with_the_crate(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..70),
            noise in "[A-Za-z0-9_=+/$-]{0,70}",
            position in proptest::prelude::any::<proptest::sample::Index>(),
            replacement in "[A-Za-z0-9_=+/$-]",
        ) {
            let encoded = BASE64URL.encode(&bytes);
            let mutated = if encoded.is_empty() {
                replacement.clone()
            } else {
                let i = position.index(encoded.len());
                format!("{}{replacement}{}", &encoded[..i], &encoded[i + 1..])
            };
            for text in [encoded.as_str(), mutated.as_str(), noise.as_str()] {
                let reference = BASE64URL.decode(text).ok();
                let ours = crypto::Alphabet::decoded_len(text.len()).and_then(|len| {
                    let mut out = vec![0u8; len];
                    crypto::decode_unpadded(&crypto::URL_SAFE, text.as_bytes(), &mut out)
                        .ok()
                        .map(|()| out)
                });
                proptest::prop_assert_eq!(&ours, &reference, "{:?}", text);
            }
        }
    }
}
