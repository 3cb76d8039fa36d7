//! Shopify: `X-Shopify-Hmac-Sha256` (or, for events webhooks, the unprefixed
//! `shopify-hmac-sha256`): base64 HMAC-SHA256 of the body, keyed with the
//! app's client secret.

use std::borrow::Cow;

use super::config::{Algorithm, SchemeKind};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse;
use super::secret::Secret;
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Shopify;
const HEADERS: [&str; 2] = ["X-Shopify-Hmac-Sha256", "shopify-hmac-sha256"];

fn parse(headers: &Headers<'_>) -> Result<[u8; 32], SignatureError> {
    let Some((name, value)) = headers.first_of(&HEADERS)? else {
        return Err(SignatureError::MissingHeader {
            header: Cow::Borrowed(HEADERS[0]),
        });
    };
    parse::shopify_signature(value).map_err(|e| e.for_header(name))
}

pub(crate) fn precheck(headers: &Headers<'_>) -> Result<(), SignatureError> {
    parse(headers).map(|_| ())
}

pub(crate) fn verify<'a>(
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    let signature = parse(&request.headers)?;
    let index = match_raw_key(
        SCHEME,
        Algorithm::Sha256,
        secrets,
        &[request.body],
        [signature.as_slice()],
    )?;
    Ok(Verified::new(SCHEME, index))
}
