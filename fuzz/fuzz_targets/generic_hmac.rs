//! Generic HMAC header parser, with every encoding and MAC length.
#![no_main]

use hookbox::signature::{Algorithm, Encoding, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let encoding = if selector & 1 == 0 {
        Encoding::Hex
    } else {
        Encoding::Base64
    };
    let algorithm = match (selector >> 1) % 3 {
        0 => Algorithm::Sha1,
        1 => Algorithm::Sha256,
        _ => Algorithm::Sha512,
    };
    let prefix = match (selector >> 3) % 3 {
        0 => None,
        1 => Some("sha256="),
        _ => Some(""),
    };
    if let Ok(mac) = parse::generic_signature(&text, prefix, encoding, algorithm.output_len()) {
        assert_eq!(mac.len(), algorithm.output_len());
    }
});
