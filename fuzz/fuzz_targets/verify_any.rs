//! Every verifier, end to end, on arbitrary header values and bodies: no
//! panic, and nothing forged verifies.
//!
//! Input: lines. Line 1 selects the scheme (first byte), the following
//! lines are header values in a fixed order, the rest is the body.
#![no_main]

use chrono::{DateTime, Utc};
use hookbox::signature::{
    GenericHmacConfig, Headers, SchemeConfig, SchemeKind, Secret, SignedRequest, Verifier,
};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 12] = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "Stripe-Signature",
    "X-Hub-Signature-256",
    "X-Shopify-Hmac-Sha256",
    "X-Slack-Request-Timestamp",
    "X-Slack-Signature",
    "X-Twilio-Signature",
    "Content-Type",
    "X-Sig",
    "X-Ts",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(NAMES.len() + 3, '\n');
    let selector = lines.next().and_then(|l| l.bytes().next()).unwrap_or(0);
    let url = lines.next().unwrap_or("");
    let values: Vec<&str> = lines.by_ref().take(NAMES.len()).collect();
    let body = lines.next().unwrap_or("").as_bytes();
    let headers = Headers::from_pairs(NAMES.iter().copied().zip(values.iter().copied()));

    let config = match SchemeKind::ALL[usize::from(selector) % SchemeKind::ALL.len()] {
        SchemeKind::GenericHmac => {
            let mut generic = GenericHmacConfig::new("X-Sig");
            generic.timestamp_header = Some("X-Ts".into());
            generic.template = Some("{timestamp}:{body}".into());
            SchemeConfig::GenericHmac(generic)
        }
        kind => match SchemeConfig::default_for(kind) {
            Some(config) => config,
            None => return,
        },
    };
    let Ok(verifier) = Verifier::new(config) else {
        return;
    };
    let request = SignedRequest::new(body, headers.clone()).with_url(url);
    let secrets = [
        Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        // RFC 8032 test 1 public key: a valid Ed25519 point, so `v1a`
        // entries are really verified.
        Secret::new("whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="),
    ];
    let Some(now) = DateTime::<Utc>::from_timestamp(1_700_000_000, 0) else {
        return;
    };
    let _ = verifier.precheck(&headers, now);
    let result = verifier.verify_at(&request, &secrets, now);
    assert!(result.is_err(), "forged request verified: {result:?}");
});
