//! `webhook-signature`, `webhook-id` and `webhook-timestamp` parsers.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(parsed) = parse::standard_webhooks_signatures(&text) {
        assert!(!parsed.v1.is_empty() || !parsed.v1a.is_empty());
        assert!(parsed.v1.len() + parsed.v1a.len() + parsed.unknown <= parse::MAX_SIGNATURES);
    }
    if let Ok(id) = parse::standard_webhooks_id(&text) {
        assert!(!id.is_empty() && !id.contains('.'));
    }
    if let Ok(secs) = parse::parse_unix_seconds(&text) {
        assert!(secs >= 0);
    }
});
