//! Property tests: sign → verify round trip, single-byte changes fail, and
//! no parser or verifier panics on arbitrary input.

use base64::Engine as _;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;
use crate::signature::crypto::BASE64_OUT;
use crate::signature::{SchemeKind, parse, sign_standard_webhooks};

const ID_CHARS: &str = "[A-Za-z0-9_-]";

fn whsec(key: &[u8]) -> Secret {
    Secret::new(format!("whsec_{}", BASE64_OUT.encode(key)))
}

fn verify_signed<'a>(
    id: &'a str,
    timestamp: &'a str,
    signature: &'a str,
    body: &'a [u8],
    secret: &Secret,
    now: i64,
) -> Result<Verified<'a>, SignatureError> {
    let verifier = Verifier::for_scheme(SchemeKind::StandardWebhooks).expect("defaults");
    let headers = Headers::from_pairs([
        ("webhook-id", id),
        ("webhook-timestamp", timestamp),
        ("webhook-signature", signature),
    ]);
    verifier.verify_at(
        &SignedRequest::new(body, headers),
        std::slice::from_ref(secret),
        at(now),
    )
}

fn keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 24..=64), 1..=3)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn signed_headers_verify_with_every_signing_secret(
        id in "[A-Za-z0-9_-]{1,40}",
        ts in 0i64..4_000_000_000,
        body in prop::collection::vec(any::<u8>(), 0..512),
        keys in keys(),
    ) {
        let secrets: Vec<Secret> = keys.iter().map(|k| whsec(k)).collect();
        let signed = sign_standard_webhooks(&id, at(ts), &body, &secrets).expect("signs");
        prop_assert_eq!(signed.signature.split(' ').count(), secrets.len());
        for (index, secret) in secrets.iter().enumerate() {
            let verified = verify_signed(&signed.id, &signed.timestamp, &signed.signature, &body, secret, ts);
            prop_assert!(verified.is_ok(), "secret {}: {:?}", index, verified);
        }
        // A secret that did not sign does not verify.
        let stranger = whsec(&[0xA5; 32]);
        prop_assume!(!keys.iter().any(|k| k.as_slice() == [0xA5; 32]));
        let result = verify_signed(&signed.id, &signed.timestamp, &signed.signature, &body, &stranger, ts);
        prop_assert!(matches!(result, Err(SignatureError::NoMatchingSignature { .. })), "{:?}", result);
    }

    #[test]
    fn any_single_byte_change_to_body_id_or_timestamp_fails(
        id in "[A-Za-z0-9_-]{1,40}",
        ts in 0i64..4_000_000_000,
        body in prop::collection::vec(any::<u8>(), 1..512),
        key in prop::collection::vec(any::<u8>(), 24..=64),
        position in any::<Index>(),
        flip in 1u8..=255,
        id_char in ID_CHARS,
        digit in 0u8..10,
    ) {
        let secret = whsec(&key);
        let signed = sign_standard_webhooks(&id, at(ts), &body, std::slice::from_ref(&secret)).expect("signs");
        let ok = verify_signed(&signed.id, &signed.timestamp, &signed.signature, &body, &secret, ts);
        prop_assert!(ok.is_ok(), "{:?}", ok);

        // Body.
        let mut changed = body.clone();
        changed[position.index(body.len())] ^= flip;
        let result = verify_signed(&signed.id, &signed.timestamp, &signed.signature, &changed, &secret, ts);
        prop_assert!(matches!(result, Err(SignatureError::NoMatchingSignature { .. })), "body: {:?}", result);

        // Id: one character replaced by another valid one.
        let i = position.index(id.len());
        prop_assume!(id.as_bytes()[i] != id_char.as_bytes()[0]);
        let changed_id = format!("{}{}{}", &id[..i], id_char, &id[i + 1..]);
        let result = verify_signed(&changed_id, &signed.timestamp, &signed.signature, &body, &secret, ts);
        prop_assert!(matches!(result, Err(SignatureError::NoMatchingSignature { .. })), "id: {:?}", result);

        // Timestamp: one digit replaced; "now" follows it so that only the
        // signature can fail.
        let text = &signed.timestamp;
        let j = position.index(text.len());
        let new_digit = char::from(b'0' + digit);
        prop_assume!(text.as_bytes()[j] != new_digit as u8);
        let changed_ts = format!("{}{}{}", &text[..j], new_digit, &text[j + 1..]);
        let now = parse::parse_unix_seconds(&changed_ts).expect("still digits");
        let result = verify_signed(&signed.id, &changed_ts, &signed.signature, &body, &secret, now);
        prop_assert!(matches!(result, Err(SignatureError::NoMatchingSignature { .. })), "timestamp: {:?}", result);
    }

    #[test]
    fn parsers_never_panic(text in any::<String>(), near in "[tv01a=,. :/?#@\\[\\]A-Za-z0-9+/=_-]{0,120}") {
        for input in [text.as_str(), near.as_str()] {
            let _ = parse::standard_webhooks_signatures(input);
            let _ = parse::standard_webhooks_id(input);
            let _ = parse::stripe_signature(input);
            let _ = parse::github_signature(input);
            let _ = parse::slack_signature(input);
            let _ = parse::shopify_signature(input);
            let _ = parse::twilio_signature(input);
            let _ = parse::twilio_url_variants(input);
            let _ = parse::twilio_body_sha256(input);
            let _ = parse::parse_unix_seconds(input);
            let _ = parse::is_form_content_type(input);
            let _ = parse::generic_signature(input, Some("sha256="), crate::signature::Encoding::Hex, 32);
            let _ = parse::generic_signature(input, None, crate::signature::Encoding::Base64, 64);
        }
    }

    #[test]
    fn verifiers_never_panic_and_never_accept_garbage(
        value in "[ -~]{0,100}",
        timestamp in "[0-9]{0,12}",
        body in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let headers = [
            ("webhook-id", "msg_1"), ("webhook-timestamp", timestamp.as_str()), ("webhook-signature", value.as_str()),
            ("Stripe-Signature", value.as_str()), ("X-Hub-Signature-256", value.as_str()),
            ("X-Shopify-Hmac-Sha256", value.as_str()), ("X-Slack-Signature", value.as_str()),
            ("X-Slack-Request-Timestamp", timestamp.as_str()), ("X-Twilio-Signature", value.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        for kind in SchemeKind::ALL {
            let Some(config) = SchemeConfig::default_for(kind) else { continue };
            let result = check(config, &headers, &body, Some(value.as_str()), &["whsec_c2VjcmV0"], 1_700_000_000);
            prop_assert!(result.is_err(), "{}: {:?}", kind, result);
        }
    }
}
