//! `Stripe-Signature` parser.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(parsed) = parse::stripe_signature(&text) {
        // Never accepted without a v1 signature (no downgrade).
        assert!(!parsed.v1.is_empty());
        assert_eq!(
            parse::parse_unix_seconds(parsed.timestamp_text),
            Ok(parsed.timestamp)
        );
    }
});
