//! `X-Twilio-Signature`, request URL (port variants, `bodySHA256`) and
//! `Content-Type` parsers.
#![no_main]

use hookbox::signature::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse::twilio_signature(&text);
    let _ = parse::is_form_content_type(&text);
    if let Ok(variants) = parse::twilio_url_variants(&text) {
        assert!(variants.without_port.len() <= text.len());
        assert!(variants.with_port.len() <= text.len() + 4);
        assert!(variants.with_port.contains(':'));
    }
    let _ = parse::twilio_body_sha256(&text);
});
