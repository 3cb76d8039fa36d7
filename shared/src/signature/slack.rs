//! Slack: `X-Slack-Signature: v0=<hex>` over
//! `v0:{X-Slack-Request-Timestamp}:{body}`, HMAC-SHA256 keyed with the
//! app's signing secret.

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::config::{Algorithm, SchemeKind};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse;
use super::secret::Secret;
use super::timestamp::{self, check_tolerance};
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::Slack;
const SIGNATURE: &str = "X-Slack-Signature";
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";

struct Parsed<'a> {
    timestamp_text: &'a str,
    timestamp: i64,
    signature: [u8; 32],
}

fn parse<'a>(headers: &Headers<'a>) -> Result<Parsed<'a>, SignatureError> {
    let timestamp_text = headers.required(TIMESTAMP)?;
    let timestamp = timestamp::parse_unix_seconds(timestamp_text).map_err(|reason| {
        SignatureError::MalformedHeader {
            header: Cow::Borrowed(TIMESTAMP),
            reason,
        }
    })?;
    let value = headers.required(SIGNATURE)?;
    let signature = parse::slack_signature(value).map_err(|e| e.for_header(SIGNATURE))?;
    Ok(Parsed {
        timestamp_text,
        timestamp,
        signature,
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

pub(crate) fn verify<'a>(
    request: &SignedRequest<'a>,
    secrets: &[Secret],
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<Verified<'a>, SignatureError> {
    let parsed = parse(&request.headers)?;
    check_tolerance(parsed.timestamp, now, tolerance_secs)?;
    let parts: [&[u8]; 4] = [b"v0:", parsed.timestamp_text.as_bytes(), b":", request.body];
    let index = match_raw_key(
        SCHEME,
        Algorithm::Sha256,
        secrets,
        &parts,
        [parsed.signature.as_slice()],
    )?;
    let mut verified = Verified::new(SCHEME, index);
    verified.timestamp_secs = Some(parsed.timestamp);
    Ok(verified)
}
