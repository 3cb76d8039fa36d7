//! Behaviour tests of the verifiers and the signer: published known-answer
//! vectors (each cites its source), rotation, tolerance boundaries (±1 s),
//! downgrades, malformed and missing headers, redaction.

mod config;
mod errors;
mod generic;
mod github;
mod presets;
mod roundtrip;
mod shopify;
mod slack;
mod standard_webhooks;
mod stripe;
mod twilio;

use chrono::{DateTime, Utc};

use super::{Headers, SchemeConfig, Secret, SignatureError, SignedRequest, Verified, Verifier};

pub(super) fn at(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(secs, 0).expect("timestamp in range")
}

pub(super) fn secrets(values: &[&str]) -> Vec<Secret> {
    values.iter().map(|s| Secret::new(*s)).collect()
}

/// Verifies one request with `config` at Unix time `now`.
/// The result owns its data, so tests can pass temporaries.
pub(super) fn check(
    config: SchemeConfig,
    headers: &[(&str, &str)],
    body: &[u8],
    url: Option<&str>,
    secret_values: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    let verifier = Verifier::new(config).expect("valid configuration");
    let mut request = SignedRequest::new(body, Headers::from_pairs(headers.iter().copied()));
    request.url = url;
    verifier
        .verify_at(&request, &secrets(secret_values), at(now))
        .map(Verified::into_owned)
}

pub(super) fn default(kind: super::SchemeKind) -> SchemeConfig {
    SchemeConfig::default_for(kind).expect("scheme with defaults")
}

pub(super) fn is_missing(result: &Result<Verified<'_>, SignatureError>, header: &str) -> bool {
    matches!(result, Err(SignatureError::MissingHeader { header: h }) if h.eq_ignore_ascii_case(header))
}

pub(super) fn is_malformed(result: &Result<Verified<'_>, SignatureError>, header: &str) -> bool {
    matches!(result, Err(SignatureError::MalformedHeader { header: h, .. }) if h.eq_ignore_ascii_case(header))
}

pub(super) fn is_no_match(result: &Result<Verified<'_>, SignatureError>) -> bool {
    matches!(result, Err(SignatureError::NoMatchingSignature { .. }))
}
