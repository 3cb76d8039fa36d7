//! The partner configuration parser (JSON or TOML, as an operator or a
//! Secrets Manager secret holds it) on arbitrary text: no panic; a text it
//! accepts parses the same again from its own bytes.
#![no_main]

use hookbox::config::HookboxConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match HookboxConfig::parse(text, "fuzz") {
        Ok(config) => {
            let again = HookboxConfig::parse(text, "fuzz").expect("the same text parses again");
            assert_eq!(format!("{config:?}"), format!("{again:?}"));
        }
        Err(e) => {
            // the error is a text an operator reads: it renders
            let _ = e.to_string();
        }
    }
});
