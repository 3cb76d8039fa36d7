//! `X-Shopify-Hmac-Sha256` parser.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if parse::shopify_signature(&text).is_ok() {
        assert!(text.len() == 43 || text.len() == 44);
    }
});
