//! `X-Hub-Signature-256` parser.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if parse::github_signature(&text).is_ok() {
        assert!(text.starts_with("sha256=") && text.len() == 7 + 64);
    }
});
