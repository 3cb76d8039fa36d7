//! The envelope: what an EventBridge or SQS destination receives for one
//! delivery (an EventBridge event's `Detail`, an SQS message's body). One
//! JSON object, schema `version` 1 (docs/relay.md, "The envelope"):
//!
//! ```json
//! {"version": 1,
//!  "id": "0190…",                      // the delivery id: stable across retries
//!  "type": "order.paid",
//!  "aggregate": {"type": "order", "id": "o-1"},
//!  "content_type": "application/json",
//!  "payload": {"order_id": "o-1"}}     // or "payload_base64", or "payload_ref"
//! ```
//!
//! The payload is carried in exactly one of three ways:
//! - `payload`: the JSON itself, when it is JSON;
//! - `payload_base64`: its bytes in base64 (standard alphabet, padded), when
//!   they are not JSON, with `content_type` saying what they are;
//! - `payload_ref`: `{"bucket", "key", "size", "sha256"}`, when the envelope
//!   with the payload inside would be larger than the destination's
//!   `max_entry_bytes`: the payload is the object `key` of `bucket` (the
//!   deployment's blob bucket), `size` bytes whose sha256 (lower-case hex)
//!   is `sha256`. A payload kept in its row is moved there by the relay
//!   before the entry is handed on (`outbox::relay`, `spill`); the row then
//!   refers to the object, which stays until the row is purged (retention).
//!
//! The text is ASCII-safe where the services are strict: U+FFFE and U+FFFF,
//! which SQS refuses in a message body, are written as JSON escapes (they
//! can only occur inside JSON strings, so the JSON means the same).

use base64::Engine as _;
use serde::Serialize;

use super::Entry;

/// The envelope schema's version.
pub const VERSION: u32 = 1;

/// `content_type` of a JSON payload.
pub const JSON: &str = "application/json";

/// `content_type` of a payload that is not JSON and says nothing of itself.
pub const OCTET_STREAM: &str = "application/octet-stream";

#[derive(Serialize)]
struct Aggregate<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    id: &'a str,
}

#[derive(Serialize)]
struct Head<'a> {
    version: u32,
    id: String,
    #[serde(rename = "type")]
    event_type: &'a str,
    aggregate: Aggregate<'a>,
    content_type: &'a str,
}

#[derive(Serialize)]
struct RefBody<'a> {
    bucket: &'a str,
    key: &'a str,
    size: u64,
    sha256: String,
}

/// An envelope that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// The payload is not in the blob store: it cannot be sent by
    /// reference (the relay moves an envelope over its destination's limit
    /// there before it hands the entry on; one that is not there was handed
    /// on by something else).
    #[error(
        "the envelope is {size} bytes, over the {limit} bytes its destination takes \
         (max_entry_bytes), and the payload is not in the blob store to be sent by reference"
    )]
    NotInBlobStore {
        /// The envelope's size with the payload inside.
        size: usize,
        /// The destination's limit.
        limit: usize,
    },
    /// The transport has no blob store to refer to (no `HOOKBOX_BLOB_BUCKET`
    /// or `HOOKBOX_BLOB_DIR`).
    #[error(
        "the envelope is {size} bytes, over the {limit} bytes its destination takes \
         (max_entry_bytes), and no blob store is configured (HOOKBOX_BLOB_BUCKET or \
         HOOKBOX_BLOB_DIR) to send the payload by reference"
    )]
    NoBlobStore {
        /// The envelope's size with the payload inside.
        size: usize,
        /// The destination's limit.
        limit: usize,
    },
    /// Even the envelope by reference is over the limit.
    #[error(
        "the envelope by reference is {size} bytes, still over the {limit} bytes its destination \
         takes (max_entry_bytes)"
    )]
    EvenByReference {
        /// The envelope's size with the reference inside.
        size: usize,
        /// The destination's limit.
        limit: usize,
    },
}

/// How an envelope carries its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// `payload`: the JSON itself.
    Json,
    /// `payload_base64`: the bytes, not JSON.
    Base64,
    /// `payload_ref`: the reference to its object in the blob store.
    Reference,
}

/// An envelope's JSON text and how it carries the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The JSON text.
    pub text: String,
    /// Whether the payload is inside, or referred to.
    pub carried: Carried,
}

/// The envelope of `entry` with its payload inside (`payload` or
/// `payload_base64`), whatever its size.
pub fn whole(entry: &Entry<'_>) -> Envelope {
    let is_json = serde_json::from_str::<serde::de::IgnoredAny>(entry.payload).is_ok();
    let content_type = if is_json { JSON } else { OCTET_STREAM };
    let mut text = head(entry, content_type);
    if is_json {
        text.push_str(",\"payload\":");
        text.push_str(entry.payload.trim());
    } else {
        text.push_str(",\"payload_base64\":\"");
        text.push_str(&base64::engine::general_purpose::STANDARD.encode(entry.payload));
        text.push('"');
    }
    text.push('}');
    Envelope {
        text: escape_nonchars(text),
        carried: if is_json {
            Carried::Json
        } else {
            Carried::Base64
        },
    }
}

/// The envelope of `entry` as JSON text, at most `limit` bytes: the payload
/// inside it when that fits, else by reference to its object in `bucket`
/// (the blob store's bucket or directory; when the payload is there:
/// [`Entry::blob`]).
pub fn build(entry: &Entry<'_>, bucket: Option<&str>, limit: usize) -> Result<Envelope, TooLarge> {
    let whole = whole(entry);
    if whole.text.len() <= limit {
        return Ok(whole);
    }
    let size = whole.text.len();
    let (bucket, blob) = match (bucket, entry.blob) {
        (Some(bucket), Some(blob)) => (bucket, blob),
        (None, _) => return Err(TooLarge::NoBlobStore { size, limit }),
        (Some(_), None) => return Err(TooLarge::NotInBlobStore { size, limit }),
    };
    let content_type = if whole.carried == Carried::Json {
        JSON
    } else {
        OCTET_STREAM
    };
    let mut text = head(entry, content_type);
    text.push_str(",\"payload_ref\":");
    let reference = RefBody {
        bucket,
        key: blob.key.as_str(),
        size: blob.size,
        sha256: blob.sha256_hex(),
    };
    text.push_str(&serde_json::to_string(&reference).unwrap_or_default());
    text.push('}');
    let text = escape_nonchars(text);
    if text.len() <= limit {
        Ok(Envelope {
            text,
            carried: Carried::Reference,
        })
    } else {
        Err(TooLarge::EvenByReference {
            size: text.len(),
            limit,
        })
    }
}

/// The envelope's fields before the payload: `{"version":1,…` without its
/// closing brace.
fn head(entry: &Entry<'_>, content_type: &str) -> String {
    let head = Head {
        version: VERSION,
        id: entry.id.to_string(),
        event_type: entry.event_type,
        aggregate: Aggregate {
            kind: entry.aggregate_type,
            id: entry.aggregate_id,
        },
        content_type,
    };
    // a struct of strings and numbers always serialises
    let mut text = serde_json::to_string(&head).unwrap_or_else(|_| "{".into());
    text.pop();
    text
}

/// U+FFFE and U+FFFF as JSON escapes (SQS refuses them in a body; they can
/// only be inside JSON strings).
fn escape_nonchars(text: String) -> String {
    if !text.contains(['\u{FFFE}', '\u{FFFF}']) {
        return text;
    }
    text.replace('\u{FFFE}', "\\ufffe")
        .replace('\u{FFFF}', "\\uffff")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::{BlobKey, BlobRef};
    use uuid::Uuid;

    fn entry(payload: &str) -> Entry<'_> {
        Entry {
            id: Uuid::from_u128(7),
            event_type: "order.paid",
            aggregate_type: "order",
            aggregate_id: "o-1",
            payload,
            blob: None,
        }
    }

    fn parse(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("the envelope is JSON")
    }

    #[test]
    fn a_json_payload_is_carried_as_json_beside_the_delivery_id_and_type() {
        let text = build(&entry(r#"{"order_id": "o-1", "n": [1, 2]}"#), None, 1024)
            .expect("fits")
            .text;
        assert_eq!(
            parse(&text),
            serde_json::json!({
                "version": 1,
                "id": Uuid::from_u128(7).to_string(),
                "type": "order.paid",
                "aggregate": {"type": "order", "id": "o-1"},
                "content_type": "application/json",
                "payload": {"order_id": "o-1", "n": [1, 2]},
            })
        );
        assert!(
            text.starts_with(r#"{"version":1,"id":"#),
            "the version comes first: {text}"
        );
    }

    #[test]
    fn a_payload_that_is_not_json_goes_as_base64() {
        let built = build(&entry("a=1&b=<x>"), None, 1024).expect("fits");
        assert_eq!(built.carried, Carried::Base64);
        let text = built.text;
        let value = parse(&text);
        assert_eq!(value["content_type"], "application/octet-stream");
        assert_eq!(value["payload_base64"], "YT0xJmI9PHg+");
        assert!(value.get("payload").is_none());
    }

    #[test]
    fn an_envelope_over_the_limit_refers_to_the_payloads_object() {
        let payload = format!(r#"{{"big": "{}"}}"#, "x".repeat(2000));
        let blob = BlobRef {
            key: BlobKey::content("outbox", "bus", &[0xab; 32]).expect("key"),
            size: payload.len() as u64,
            sha256: [0xab; 32],
        };
        let with_blob = Entry {
            blob: Some(&blob),
            ..entry(&payload)
        };
        let built = build(&with_blob, Some("hookbox-blobs"), 1024).expect("by reference");
        assert_eq!(built.carried, Carried::Reference);
        let text = built.text;
        assert!(text.len() <= 1024);
        let value = parse(&text);
        assert_eq!(
            value["payload_ref"],
            serde_json::json!({
                "bucket": "hookbox-blobs",
                "key": blob.key.as_str(),
                "size": payload.len(),
                "sha256": "ab".repeat(32),
            })
        );
        assert_eq!(value["content_type"], "application/json");
        assert!(value.get("payload").is_none());
        // without an object to refer to, it is refused with both sizes
        let refused = build(&entry(&payload), Some("hookbox-blobs"), 1024).expect_err("too large");
        let TooLarge::NotInBlobStore { size, limit } = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(limit, 1024);
        assert!(size > 2000, "{refused}");
        // without a blob store, it says so
        let refused = build(&with_blob, None, 1024).expect_err("too large");
        assert!(matches!(refused, TooLarge::NoBlobStore { limit: 1024, .. }));
        assert!(
            refused.to_string().contains("no blob store is configured"),
            "{refused}"
        );
    }

    #[test]
    fn nonchars_sqs_refuses_are_escaped_and_the_json_means_the_same() {
        let payload = "{\"s\": \"a\u{FFFE}b\u{FFFF}\"}";
        let text = build(&entry(payload), None, 1024).expect("fits").text;
        assert!(!text.contains(['\u{FFFE}', '\u{FFFF}']), "{text:?}");
        assert_eq!(parse(&text)["payload"]["s"], "a\u{FFFE}b\u{FFFF}");
    }
}
