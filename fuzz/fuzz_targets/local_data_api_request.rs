//! The local Data API's request parser: what the server checks on a request
//! body before it touches the database (`local_data_api::check_request`:
//! decoding, required members, the SQL's named parameters, every
//! parameter's value and type hint), for each of its five operations. No
//! panic, and every refusal is a 4xx the SDK can decode.
//!
//! Input: byte 0 picks the operation, the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

const PATHS: [&str; 6] = [
    "/Execute",
    "/BatchExecute",
    "/BeginTransaction",
    "/CommitTransaction",
    "/RollbackTransaction",
    "/Nope",
];

fuzz_target!(|data: &[u8]| {
    let Some((op, body)) = data.split_first() else {
        return;
    };
    let path = PATHS[usize::from(*op) % PATHS.len()];
    if let Err(e) = local_data_api::check_request(path, body) {
        assert!(e.status().is_client_error(), "{path}: {e}");
        assert!(!e.name().is_empty() && !e.message().is_empty(), "{path}: {e}");
    }
});
