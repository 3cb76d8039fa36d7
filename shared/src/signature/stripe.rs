//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=<hex>]`.
//!
//! Signed content `{t}.{body}`, HMAC-SHA256, hex. The `whsec_…` endpoint
//! secret is the HMAC key as raw UTF-8 bytes (it is not base64-decoded, unlike
//! Standard Webhooks). Any matching `v1` passes; `v0` and unknown schemes
//! are never trusted, so a header without `v1` is refused (no downgrade).

use chrono::{DateTime, Utc};

use super::config::{Algorithm, SchemeKind};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse::{self, StripeSignatures};
use super::secret::Secret;
use super::timestamp::check_tolerance;
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Stripe;
const HEADER: &str = "Stripe-Signature";

fn parse<'a>(headers: &Headers<'a>) -> Result<StripeSignatures<'a>, SignatureError> {
    let value = headers.required(HEADER)?;
    parse::stripe_signature(value).map_err(|e| e.for_header(HEADER))
}

pub(crate) fn precheck(
    headers: &Headers<'_>,
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<(), SignatureError> {
    let parsed = parse(headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)
}

pub(crate) fn verify<'a>(
    request: &SignedRequest<'a>,
    secrets: &[Secret],
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<Verified<'a>, SignatureError> {
    let parsed = parse(&request.headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    let parts: [&[u8]; 3] = [parsed.timestamp_text.as_bytes(), b".", request.body];
    let candidates = parsed.v1.iter().map(|sig| sig.as_slice());
    let index = match_raw_key(SCHEME, Algorithm::Sha256, secrets, &parts, candidates)?;
    let mut verified = Verified::new(SCHEME, index);
    verified.timestamp_secs = Some(parsed.timestamp);
    Ok(verified)
}
