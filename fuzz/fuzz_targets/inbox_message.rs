//! The inbox queue message decoder (what the processor reads from SQS) on
//! arbitrary bodies: no panic, and a message it accepts survives its own
//! encoding (the processor re-sends spooled messages as they decoded).
#![no_main]

use hookbox::inbox::InboxMessage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = String::from_utf8_lossy(data);
    if let Ok(message) = InboxMessage::from_body(&body) {
        if let Ok(encoded) = message.to_body() {
            let again = InboxMessage::from_body(&encoded).expect("our own encoding decodes");
            assert_eq!(again, message);
        }
    }
});
