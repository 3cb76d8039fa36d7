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
use super::headers::Headers;
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

fn json_object(
    header: &'static str,
    part: &str,
    what: &'static str,
) -> Result<serde_json::Map<String, serde_json::Value>, SignatureError> {
    let bytes = BASE64URL
        .decode(part)
        .map_err(|_| malformed(header, what))?;
    match serde_json::from_slice(&bytes) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        _ => Err(malformed(header, what)),
    }
}

fn parse<'a>(header: &'static str, headers: &Headers<'a>) -> Result<Token<'a>, SignatureError> {
    let value = headers.required(header)?;
    let mut parts = value.split('.');
    let (Some(protected), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed(
            header,
            "expected a JWS `header.claims.signature`",
        ));
    };
    let protected_json = json_object(header, protected, "JWS header is not base64url JSON")?;
    if protected_json
        .get("alg")
        .and_then(serde_json::Value::as_str)
        != Some(ALGORITHM)
    {
        return Err(SignatureError::UnsupportedSignatureVersion {
            header: Cow::Borrowed(header),
            reason: "only HS256 tokens are accepted",
        });
    }
    let mut mac = [0u8; 32];
    match BASE64URL.decode_slice(signature, &mut mac) {
        Ok(32) => {}
        _ => return Err(malformed(header, "signature is not 32 bytes of base64url")),
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
    let claims = json_object(header, token.claims, "JWS claims are not base64url JSON")?;
    if claims.get("iss").and_then(serde_json::Value::as_str) != Some(issuer) {
        return Err(malformed(header, "the token's issuer is not the provider"));
    }
    let expected = claims
        .get("sha256")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| malformed(header, "the token has no `sha256` claim"))?;
    let expected: [u8; 32] = crypto::decode_hex_array(expected)
        .map_err(|_| malformed(header, "the `sha256` claim is not 64 hexadecimal digits"))?;
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
