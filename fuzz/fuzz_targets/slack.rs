//! `X-Slack-Signature` and `X-Slack-Request-Timestamp` parsers.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if parse::slack_signature(&text).is_ok() {
        assert!(text.starts_with("v0=") && text.len() == 3 + 64);
    }
    let _ = parse::parse_unix_seconds(&text);
});
