//! GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
//!
//! The legacy SHA-1 `X-Hub-Signature` header is not accepted (it would be a
//! downgrade); use `generic-hmac` for a partner that only sends that one.

use super::config::{Algorithm, SchemeKind};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse;
use super::secret::Secret;
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Github;
const HEADER: &str = "X-Hub-Signature-256";

fn parse(headers: &Headers<'_>) -> Result<[u8; 32], SignatureError> {
    let value = headers.required(HEADER)?;
    parse::github_signature(value).map_err(|e| e.for_header(HEADER))
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
