//! Splitting a verified POST that carries many events into those events,
//! as the partner's batch declaration says ([`crate::config::batch`]):
//! each event keeps its exact bytes as the provider wrote them, with its
//! own id (else its bytes' sha256), type and ordering key. Pure code: the
//! 4xx of a batch that is not what its declaration says are decided here,
//! each naming the event's index; nothing is stored for such a POST.

use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::request::{
    MAX_EVENT_ID_BYTES, MAX_EVENT_TYPE_BYTES, MAX_ORDERING_KEY_BYTES, pointer_text, raw_at_with,
    storable,
};
use crate::config::FieldSource;
use crate::config::batch::{Batch, EventsAt};

/// One event of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitEvent {
    /// Its place in the batch (0-based), as errors and logs name it.
    pub index: usize,
    /// Its bytes, exactly as they are in the body (or in the form field's
    /// decoded value).
    pub bytes: Vec<u8>,
    /// Its id (storable), or the sha256 of `bytes` in hex.
    pub event_id: String,
    /// True when `event_id` is that sha256.
    pub event_id_derived: bool,
    /// Its type, if declared and present.
    pub event_type: Option<String>,
    /// Its ordering key, if declared and present (an empty one is none).
    pub ordering_key: Option<String>,
}

/// A batch that is not what its declaration says: the status (400, or 413
/// for too many events), the reason code and what was wrong, naming the
/// event's index where one is at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct BatchRefused {
    /// HTTP status.
    pub status: u16,
    /// Reason code (the response's `error`, a metric dimension).
    pub code: &'static str,
    /// What was wrong.
    pub detail: String,
}

fn refused(status: u16, code: &'static str, detail: impl Into<String>) -> BatchRefused {
    BatchRefused {
        status,
        code,
        detail: detail.into(),
    }
}

/// Where the declaration puts the events, for messages.
fn place(events: &EventsAt) -> String {
    match events {
        EventsAt::Json(pointer) if pointer.is_empty() => "the body".to_owned(),
        EventsAt::Json(pointer) => format!("{pointer} in the body"),
        EventsAt::FormField(field) => format!("form field {field}"),
    }
}

/// The events of `body` as `batch` declares them, in order: `Ok` with none
/// only for an empty batch its declaration allows.
pub fn split(batch: &Batch, body: &[u8]) -> Result<Vec<SplitEvent>, BatchRefused> {
    let at = place(&batch.events);
    let field_value;
    let array_text: &str = match &batch.events {
        EventsAt::Json(pointer) => {
            let text = std::str::from_utf8(body).map_err(|e| {
                refused(
                    400,
                    "body_not_json",
                    format!("the batch's body is not UTF-8 JSON: {e}"),
                )
            })?;
            if let Err(e) = serde_json::from_str::<&RawValue>(text) {
                return Err(refused(
                    400,
                    "body_not_json",
                    format!("the batch's body is not JSON: {e}"),
                ));
            }
            raw_at_with(text, pointer, false).ok_or_else(|| {
                refused(
                    400,
                    "batch_not_array",
                    format!("nothing at {at}, where this partner's events are declared"),
                )
            })?
        }
        EventsAt::FormField(name) => {
            let mut values = form_urlencoded::parse(body)
                .filter(|(key, _)| key == name.as_str())
                .map(|(_, value)| value.into_owned());
            let Some(value) = values.next() else {
                return Err(refused(
                    400,
                    "batch_not_array",
                    format!("no {at}, where this partner's events are declared"),
                ));
            };
            if values.any(|other| other != value) {
                return Err(refused(
                    400,
                    "ambiguous_batch",
                    format!("{at} appears more than once with different values"),
                ));
            }
            field_value = value;
            field_value.as_str()
        }
    };
    if let Err(e) = serde_json::from_str::<&RawValue>(array_text) {
        return Err(refused(
            400,
            "body_not_json",
            format!("{at} is not JSON: {e}"),
        ));
    }
    let elements: Vec<&RawValue> = serde_json::from_str(array_text).map_err(|_| {
        refused(
            400,
            "batch_not_array",
            format!("{at} is not a JSON array, and this partner's events are declared there"),
        )
    })?;
    if elements.is_empty() {
        return if batch.allow_empty {
            Ok(Vec::new())
        } else {
            Err(refused(400, "batch_empty", format!("{at} holds no event")))
        };
    }
    if elements.len() > batch.max_events {
        return Err(refused(
            413,
            "batch_too_large",
            format!(
                "{} events at {at}, over this partner's limit of {} per POST",
                elements.len(),
                batch.max_events
            ),
        ));
    }
    let total = elements.len();
    elements
        .into_iter()
        .enumerate()
        .map(|(index, element)| event(batch, index, total, element.get()))
        .collect()
}

/// The event at `index` of `total`, from its element's text.
fn event(
    batch: &Batch,
    index: usize,
    total: usize,
    element: &str,
) -> Result<SplitEvent, BatchRefused> {
    let name = || format!("event {index} (of {total})");
    let text = match &batch.item {
        None => element,
        Some(item) => raw_at_with(element, item, true).ok_or_else(|| {
            refused(
                400,
                "batch_item_missing",
                format!("{}: nothing at {item} in its element", name()),
            )
        })?,
    };
    // valid JSON: a slice of the array, which parsed
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| refused(400, "body_not_json", format!("{}: {e}", name())))?;
    let read = |field: &FieldSource| read_field(field, &json, text.as_bytes());
    let (event_id, derived) = match &batch.event_id {
        None => (hex::encode(Sha256::digest(text.as_bytes())), true),
        Some(field) => match read(field) {
            Some(id) => (storable(&id).into_owned(), false),
            None => {
                return Err(refused(
                    400,
                    "missing_event_id",
                    format!("{} has no string or number at {field}", name()),
                ));
            }
        },
    };
    if event_id.len() > MAX_EVENT_ID_BYTES {
        return Err(refused(
            400,
            "event_id_too_long",
            format!(
                "{}: event id of {} bytes is over {MAX_EVENT_ID_BYTES}",
                name(),
                event_id.len()
            ),
        ));
    }
    let event_type = batch
        .event_type
        .as_ref()
        .and_then(read)
        .map(|t| storable(&t).into_owned());
    let ordering_key = batch
        .ordering_key
        .as_ref()
        .and_then(|pointer| pointer_text(&json, text.as_bytes(), pointer))
        .filter(|k| !k.is_empty())
        .map(|k| storable(&k).into_owned());
    for (field, value, max, code) in [
        (
            "event_type",
            &event_type,
            MAX_EVENT_TYPE_BYTES,
            "event_type_too_long",
        ),
        (
            "ordering_key",
            &ordering_key,
            MAX_ORDERING_KEY_BYTES,
            "ordering_key_too_long",
        ),
    ] {
        if let Some(v) = value.as_ref().filter(|v| v.len() > max) {
            return Err(refused(
                400,
                code,
                format!("{}: {field} of {} bytes is over {max}", name(), v.len()),
            ));
        }
    }
    Ok(SplitEvent {
        index,
        bytes: text.as_bytes().to_vec(),
        event_id,
        event_id_derived: derived,
        event_type,
        ordering_key,
    })
}

/// A field of the event (`None`: absent or empty); a composite joins its
/// parts with `:`, all of them present. Batch fields are JSON pointers
/// only (the declaration refuses headers).
fn read_field(field: &FieldSource, json: &serde_json::Value, raw: &[u8]) -> Option<String> {
    match field {
        FieldSource::Header(_) => None,
        FieldSource::JsonPointer(pointer) => {
            pointer_text(json, raw, pointer).filter(|v| !v.is_empty())
        }
        FieldSource::Composite(parts) => {
            let mut joined = String::new();
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    joined.push(':');
                }
                joined.push_str(&read_field(part, json, raw)?);
            }
            Some(joined)
        }
    }
}

#[cfg(test)]
#[path = "split_tests.rs"]
mod tests;
