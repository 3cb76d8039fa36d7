//! The queue message between ingest (and the sweeper) and the processor.
//!
//! Normally the message only points at the inbox row (`stored`). When the
//! database was unavailable at ingest, the verified event itself travels in
//! the message (`spooled`) and the processor stores it first; the UNIQUE
//! (partner, event_id) key still deduplicates. A spooled body above the
//! inline threshold is already in the blob store: the message carries its
//! reference (`body_ref`), never bytes that could pass SQS's 1 MiB.
//!
//! Never deduplicate on the queue's message id: a DLQ redrive assigns new ids.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Body, NewInboxEvent};
use crate::blob::{BlobKey, BlobRef};
use crate::queue::MAX_MESSAGE_BYTES;

/// A message on the inbox queue. JSON, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum InboxMessage {
    /// The event is stored in the inbox under `inbox_id`.
    Stored {
        /// The inbox row.
        inbox_id: Uuid,
        /// Its partner (for logs and spans; the row is the truth).
        partner: String,
        /// Its event id (for logs and spans).
        event_id: String,
    },
    /// The database was down at ingest: the verified event itself.
    Spooled(SpooledEvent),
}

/// A verified event that could not be stored at ingest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpooledEvent {
    /// Partner name.
    pub partner: String,
    /// The partner's event id (or sha256 of the body when `event_id_derived`).
    pub event_id: String,
    /// True when `event_id` is derived from the body.
    pub event_id_derived: bool,
    /// Event type, if known at ingest.
    pub event_type: Option<String>,
    /// Ordering key, if known at ingest.
    pub ordering_key: Option<String>,
    /// The raw body, base64 (standard alphabet, padded): bodies need not be
    /// UTF-8. Empty when the body is in the blob store (`body_ref`).
    pub body_base64: String,
    /// The body's blob reference, when it is above the inline threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<SpooledBodyRef>,
    /// The body's sha256 (hex), for partners deduplicated on the body too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_digest: Option<String>,
    /// Selected request headers (a JSON object).
    pub headers: serde_json::Value,
    /// Whether ingest verified the signature (always true: unverified
    /// events are never spooled).
    pub signature_verified: bool,
    /// When ingest received it.
    pub received_at: DateTime<Utc>,
}

/// A body's blob reference inside a spooled event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpooledBodyRef {
    /// The blob key (`inbox/{partner}/{sha256}`).
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256, lower-case hex.
    pub sha256: String,
}

/// Why a message could not be read or built.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// Not one of our messages (a poison pill for the processor).
    #[error("not an inbox queue message: {0}")]
    Invalid(String),
    /// The spooled event's body is not valid base64.
    #[error("spooled event {partner}/{event_id} has a body that is not base64: {detail}")]
    BadBody {
        /// Partner.
        partner: String,
        /// Event id.
        event_id: String,
        /// The decoder's complaint.
        detail: String,
    },
    /// The message would exceed the queue's size limit.
    #[error("message of {bytes} bytes is over the queue's {limit} byte limit")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

impl InboxMessage {
    /// The message for a stored row.
    pub fn stored(inbox_id: Uuid, partner: &str, event_id: &str) -> Self {
        InboxMessage::Stored {
            inbox_id,
            partner: partner.to_string(),
            event_id: event_id.to_string(),
        }
    }

    /// The message carrying an event that could not be stored.
    pub fn spooled(event: &NewInboxEvent, received_at: DateTime<Utc>) -> Self {
        Self::spooled_deduped(event, None, received_at)
    }

    /// [`InboxMessage::spooled`], keeping the body digest of a partner
    /// deduplicated on the body (see `inbox::insert_if_new_deduped`).
    pub fn spooled_deduped(
        event: &NewInboxEvent,
        dedupe_digest: Option<[u8; 32]>,
        received_at: DateTime<Utc>,
    ) -> Self {
        let (body_base64, body_ref) = match &event.body {
            Body::Inline(bytes) => (STANDARD.encode(bytes), None),
            Body::Blob(r) => (
                String::new(),
                Some(SpooledBodyRef {
                    key: r.key.to_string(),
                    size: r.size,
                    sha256: r.sha256_hex(),
                }),
            ),
            // never the body of a new event (only statements return it)
            Body::InlineUnread { .. } => (String::new(), None),
        };
        InboxMessage::Spooled(SpooledEvent {
            partner: event.partner.clone(),
            event_id: event.event_id.clone(),
            event_id_derived: event.event_id_derived,
            event_type: event.event_type.clone(),
            ordering_key: event.ordering_key.clone(),
            body_base64,
            body_ref,
            dedupe_digest: dedupe_digest.map(hex::encode),
            headers: event.headers.clone(),
            signature_verified: event.signature_verified,
            received_at,
        })
    }

    /// The JSON body for the queue, refused when over the queue's limit.
    /// ASCII only: every non-ASCII character is a `\uXXXX` escape, so no
    /// partner text (an event id with U+FFFE, say) can put a character SQS
    /// refuses into a message.
    pub fn to_body(&self) -> Result<String, MessageError> {
        let body = serde_json::to_string(self)
            .map_err(|e| MessageError::Invalid(format!("cannot serialise: {e}")))?;
        let body = ascii_json(&body);
        if body.len() > MAX_MESSAGE_BYTES {
            return Err(MessageError::TooLarge {
                bytes: body.len(),
                limit: MAX_MESSAGE_BYTES,
            });
        }
        Ok(body)
    }

    /// Reads a queue body.
    pub fn from_body(body: &str) -> Result<Self, MessageError> {
        serde_json::from_str(body).map_err(|e| MessageError::Invalid(e.to_string()))
    }

    /// Partner and event id, for spans and logs.
    pub fn key(&self) -> (&str, &str) {
        match self {
            InboxMessage::Stored {
                partner, event_id, ..
            } => (partner, event_id),
            InboxMessage::Spooled(e) => (&e.partner, &e.event_id),
        }
    }
}

/// `json` with every non-ASCII character written as a JSON `\uXXXX` escape
/// (a surrogate pair above U+FFFF). Valid because serde_json only writes
/// non-ASCII characters inside strings, where the escape means the same.
fn ascii_json(json: &str) -> String {
    if json.is_ascii() {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    let mut units = [0u16; 2];
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

impl SpooledEvent {
    /// The body digest to deduplicate on, if the partner is deduplicated on
    /// the body; malformed hex is [`MessageError::BadBody`].
    pub fn dedupe_digest(&self) -> Result<Option<[u8; 32]>, MessageError> {
        self.dedupe_digest
            .as_ref()
            .map(|hex| {
                hex::decode(hex)
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| MessageError::BadBody {
                        partner: self.partner.clone(),
                        event_id: self.event_id.clone(),
                        detail: format!("dedupe_digest {hex:?} is not 64 hex digits"),
                    })
            })
            .transpose()
    }

    /// The event to insert-if-new.
    pub fn to_new_event(&self) -> Result<NewInboxEvent, MessageError> {
        let bad = |detail: String| MessageError::BadBody {
            partner: self.partner.clone(),
            event_id: self.event_id.clone(),
            detail,
        };
        let body = match &self.body_ref {
            None => Body::Inline(
                STANDARD
                    .decode(&self.body_base64)
                    .map_err(|e| bad(e.to_string()))?,
            ),
            Some(r) if self.body_base64.is_empty() => {
                let key = BlobKey::parse(&r.key).map_err(|e| bad(e.to_string()))?;
                let sha256: [u8; 32] = hex::decode(&r.sha256)
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| {
                        bad(format!(
                            "body_ref.sha256 {:?} is not 64 hex digits",
                            r.sha256
                        ))
                    })?;
                Body::Blob(BlobRef {
                    key,
                    size: r.size,
                    sha256,
                })
            }
            Some(_) => return Err(bad("both body_base64 and body_ref are set".into())),
        };
        Ok(NewInboxEvent {
            partner: self.partner.clone(),
            event_id: self.event_id.clone(),
            event_id_derived: self.event_id_derived,
            event_type: self.event_type.clone(),
            ordering_key: self.ordering_key.clone(),
            body,
            headers: self.headers.clone(),
            signature_verified: self.signature_verified,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn event(body: Vec<u8>) -> NewInboxEvent {
        with_body(Body::Inline(body))
    }

    fn with_body(body: Body) -> NewInboxEvent {
        NewInboxEvent {
            partner: "acme".into(),
            event_id: "evt_1".into(),
            event_id_derived: false,
            event_type: Some("payment.received".into()),
            ordering_key: Some("o-1".into()),
            body,
            headers: serde_json::json!({"webhook-id": "evt_1"}),
            signature_verified: true,
        }
    }

    #[test]
    fn stored_messages_have_a_stable_json_shape() {
        let id = Uuid::nil();
        let body = InboxMessage::stored(id, "acme", "evt_1")
            .to_body()
            .expect("body");
        assert_eq!(
            body,
            r#"{"kind":"stored","inbox_id":"00000000-0000-0000-0000-000000000000","partner":"acme","event_id":"evt_1"}"#
        );
        assert_eq!(
            InboxMessage::from_body(&body).expect("parse"),
            InboxMessage::stored(id, "acme", "evt_1")
        );
    }

    #[test]
    fn spooled_events_round_trip_with_binary_bodies() {
        let at = Utc
            .with_ymd_and_hms(2026, 6, 1, 0, 0, 0)
            .single()
            .expect("valid");
        let original = event(vec![0, 0xff, b'{', b'}']);
        let message = InboxMessage::spooled(&original, at);
        let back = InboxMessage::from_body(&message.to_body().expect("body")).expect("parse");
        let InboxMessage::Spooled(spooled) = back else {
            panic!("expected spooled");
        };
        assert_eq!(spooled.received_at, at);
        assert_eq!(spooled.to_new_event().expect("event"), original);
        assert_eq!(message.key(), ("acme", "evt_1"));
    }

    #[test]
    fn a_spooled_body_in_the_blob_store_travels_as_its_reference() {
        let at = Utc
            .with_ymd_and_hms(2026, 6, 1, 0, 0, 0)
            .single()
            .expect("valid");
        let digest = crate::blob::sha256(b"big");
        let reference = BlobRef {
            key: BlobKey::content("inbox", "acme", &digest).expect("key"),
            size: 4 * 1024 * 1024,
            sha256: digest,
        };
        let original = with_body(Body::Blob(reference));
        let text = InboxMessage::spooled_deduped(&original, Some(digest), at)
            .to_body()
            .expect("body");
        assert!(text.len() < 1024, "a reference, not the body: {text}");
        assert!(text.contains(r#""body_base64":"""#), "{text}");
        let InboxMessage::Spooled(spooled) = InboxMessage::from_body(&text).expect("parse") else {
            panic!("expected spooled");
        };
        assert_eq!(spooled.to_new_event().expect("event"), original);
        assert_eq!(spooled.dedupe_digest().expect("digest"), Some(digest));

        // a tampered reference is refused, not followed
        let mut bad = spooled.clone();
        bad.body_ref.as_mut().expect("ref").key = "../etc/passwd".into();
        assert!(matches!(
            bad.to_new_event(),
            Err(MessageError::BadBody { .. })
        ));
        let mut both = spooled;
        both.body_base64 = "eA==".into();
        assert!(matches!(
            both.to_new_event(),
            Err(MessageError::BadBody { .. })
        ));
    }

    #[test]
    fn messages_are_ascii_whatever_the_partner_sent() {
        let id = Uuid::nil();
        let odd = "evt-\u{FFFE}-\u{0}-é-😀";
        let body = InboxMessage::stored(id, "acme", odd)
            .to_body()
            .expect("body");
        assert!(body.is_ascii(), "{body}");
        assert!(
            body.contains(r"\ufffe") && body.contains(r"\ud83d\ude00"),
            "{body}"
        );
        assert_eq!(
            InboxMessage::from_body(&body).expect("parse"),
            InboxMessage::stored(id, "acme", odd),
            "the same text after the round trip"
        );
    }

    #[test]
    fn garbage_and_oversize_are_refused() {
        assert!(matches!(
            InboxMessage::from_body("{}"),
            Err(MessageError::Invalid(_))
        ));
        assert!(matches!(
            InboxMessage::from_body(
                r#"{"kind":"stored","inbox_id":"nope","partner":"a","event_id":"b"}"#
            ),
            Err(MessageError::Invalid(_))
        ));
        let at = Utc
            .with_ymd_and_hms(2026, 6, 1, 0, 0, 0)
            .single()
            .expect("valid");
        let big = InboxMessage::spooled(&event(vec![b'x'; MAX_MESSAGE_BYTES]), at);
        assert!(matches!(big.to_body(), Err(MessageError::TooLarge { .. })));
    }
}
