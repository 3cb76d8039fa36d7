//! From a verified request to the event ingest stores: the event id, type
//! and ordering key read where the partner's configuration says (a header
//! or a JSON pointer), every text made storable (PostgreSQL refuses
//! U+0000), the headers worth keeping cut to their bounds; and the 400s of
//! a request whose id is missing, ambiguous or too long.

use sha2::{Digest, Sha256};

use super::body::Body;
use super::ingest::{IngestRequest, IngestResponse};
use super::repo::NewInboxEvent;
use crate::config::{EventIdSource, FieldSource, Partner};
use crate::signature::Headers;

/// Longest event id accepted (it is part of a unique index).
pub const MAX_EVENT_ID_BYTES: usize = 512;

/// Longest event type accepted (the row budget: see [`super::body`]).
pub const MAX_EVENT_TYPE_BYTES: usize = 256;

/// Longest ordering key accepted.
pub const MAX_ORDERING_KEY_BYTES: usize = 512;

/// A stored header value longer than this is cut (at a character boundary)
/// and marked `…[cut: N bytes]`: stored headers are for operators, never
/// part of the dedupe key.
pub const MAX_STORED_HEADER_VALUE_BYTES: usize = 1024;

/// The stored headers, as JSON, stay under this: headers past it (in the
/// order of the partner's `keep_headers`) are not stored.
pub const MAX_STORED_HEADERS_BYTES: usize = 8 * 1024;

/// Marks a value that [`storable`] escaped.
pub const ESCAPED_PREFIX: &str = "esc:";

/// `text` as PostgreSQL's `text` and `jsonb` can hold it: they refuse
/// U+0000. A value without it is unchanged (but see `esc:` below); a value
/// with it becomes `esc:` + the value with `\` written `\\` and U+0000
/// written `\0`. The mapping is deterministic (a resend has the same dedupe
/// key) and injective (two values never meet), and the raw body keeps the
/// bytes.
///
/// A value that already starts with `esc:` is escaped too: left unchanged,
/// the id `esc:a\0b` (a backslash and a zero, as sent) would be the stored
/// form of `a` U+0000 `b`, and the second of those two distinct events
/// would be answered "duplicate" and lost (bad-input corpus case
/// `byjson_literal_esc_prefix_id`).
pub fn storable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\0') && !text.starts_with(ESCAPED_PREFIX) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(ESCAPED_PREFIX);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The JSON value at `pointer` as text (strings as is, numbers printed).
fn pointer_text(body: &serde_json::Value, pointer: &str) -> Option<String> {
    match body.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of `field` (`Ok(None)`: absent or empty; `Err(name)`: header
/// `name` repeated with different values). A composite joins its parts
/// with `:`, all of them present.
fn read_field(
    field: &FieldSource,
    request: &IngestRequest<'_>,
    json: Option<&serde_json::Value>,
) -> Result<Option<String>, String> {
    match field {
        FieldSource::Header(name) => match request.headers.unique(name) {
            Err(_) => Err(name.clone()),
            Ok(value) => Ok(value
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)),
        },
        FieldSource::JsonPointer(pointer) => Ok(json
            .and_then(|j| pointer_text(j, pointer))
            .filter(|v| !v.is_empty())),
        FieldSource::Composite(parts) => read_composite(parts, request, json),
    }
}

/// The parts joined with `:` (`Ok(None)` when one is absent or empty).
fn read_composite(
    parts: &[FieldSource],
    request: &IngestRequest<'_>,
    json: Option<&serde_json::Value>,
) -> Result<Option<String>, String> {
    let mut joined = String::new();
    for (i, part) in parts.iter().enumerate() {
        let Some(value) = read_field(part, request, json)? else {
            return Ok(None);
        };
        if i > 0 {
            joined.push(':');
        }
        joined.push_str(&value);
    }
    Ok(Some(joined))
}

/// The partner's `keep_headers`, each value cut to
/// [`MAX_STORED_HEADER_VALUE_BYTES`], all of them within
/// [`MAX_STORED_HEADERS_BYTES`] of JSON.
fn kept_headers(partner: &Partner, headers: &Headers<'_>) -> serde_json::Value {
    let mut kept = serde_json::Map::new();
    let mut size = 2; // {}
    for name in &partner.keep_headers {
        let Some(v) = headers.get(name) else { continue };
        let v = storable(v);
        let value = if v.len() > MAX_STORED_HEADER_VALUE_BYTES {
            let mut cut = MAX_STORED_HEADER_VALUE_BYTES;
            while !v.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}…[cut: {} bytes]", &v[..cut], v.len())
        } else {
            v.to_string()
        };
        let entry = serde_json::to_string(name).map_or(0, |n| n.len())
            + serde_json::to_string(&value).map_or(0, |v| v.len())
            + 2; // : and ,
        if size + entry > MAX_STORED_HEADERS_BYTES {
            tracing::warn!(partner = %partner.name, header = %name, "stored headers full: header not kept");
            continue;
        }
        size += entry;
        kept.insert(name.clone(), value.into());
    }
    serde_json::Value::Object(kept)
}

pub(super) fn build_event(
    partner: &Partner,
    request: &IngestRequest<'_>,
) -> Result<NewInboxEvent, IngestResponse> {
    let needs_json = partner.event_id.reads_json();
    let json: Option<serde_json::Value> = if needs_json
        || partner.event_type.is_some()
        || partner.ordering_key.is_some()
    {
        match serde_json::from_slice(request.body) {
            Ok(v) => Some(v),
            Err(e) if needs_json => {
                return Err(IngestResponse::rejected(
                    400,
                    "body_not_json",
                    format!("the event id is read from the JSON body, which does not parse: {e}"),
                ));
            }
            Err(_) => None,
        }
    } else {
        None
    };
    let (event_id, derived) = match &partner.event_id {
        // A repeated id header with different values is ambiguous: taking
        // either one lets a captured request be replayed under a second id
        // (or splits one delivery into two rows), so it is refused.
        EventIdSource::Header(name) => match request.headers.unique(name) {
            Err(_) => {
                return Err(IngestResponse::rejected(
                    400,
                    "ambiguous_event_id",
                    format!("header {name} appears more than once with different values"),
                ));
            }
            Ok(Some(v)) if !v.trim().is_empty() => (v.trim().to_string(), false),
            Ok(_) => {
                return Err(IngestResponse::rejected(
                    400,
                    "missing_event_id",
                    format!("header {name} is missing or empty"),
                ));
            }
        },
        EventIdSource::JsonPointer(pointer) => {
            match json.as_ref().and_then(|j| pointer_text(j, pointer)) {
                Some(id) if !id.is_empty() => (id, false),
                _ => {
                    return Err(IngestResponse::rejected(
                        400,
                        "missing_event_id",
                        format!("no string or number at {pointer} in the body"),
                    ));
                }
            }
        }
        EventIdSource::Composite(parts) => match read_composite(parts, request, json.as_ref()) {
            Ok(Some(id)) => (id, false),
            Ok(None) => {
                return Err(IngestResponse::rejected(
                    400,
                    "missing_event_id",
                    format!(
                        "the event id is {}: a part is missing or empty",
                        parts
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" + ")
                    ),
                ));
            }
            Err(header) => {
                return Err(IngestResponse::rejected(
                    400,
                    "ambiguous_event_id",
                    format!("header {header} appears more than once with different values"),
                ));
            }
        },
        EventIdSource::BodyHash => (hex::encode(Sha256::digest(request.body)), true),
    };
    let event_id = storable(&event_id).into_owned();
    if event_id.len() > MAX_EVENT_ID_BYTES {
        return Err(IngestResponse::rejected(
            400,
            "event_id_too_long",
            format!(
                "event id of {} bytes is over {MAX_EVENT_ID_BYTES}",
                event_id.len()
            ),
        ));
    }
    let extract = |pointer: &Option<String>| {
        pointer
            .as_ref()
            .and_then(|p| json.as_ref().and_then(|j| pointer_text(j, p)))
    };
    // a type header repeated with different values is ambiguous: which
    // routes apply would depend on which one is read
    let event_type = match partner
        .event_type
        .as_ref()
        .map(|field| read_field(field, request, json.as_ref()))
    {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(t))) => Some(storable(&t).into_owned()),
        Some(Err(header)) => {
            return Err(IngestResponse::rejected(
                400,
                "ambiguous_event_type",
                format!("header {header} appears more than once with different values"),
            ));
        }
    };
    // an empty ordering key (a partner's empty customer field) is no key:
    // the event is ordered behind nothing, and its aggregate is its id
    let ordering_key = extract(&partner.ordering_key)
        .filter(|k| !k.is_empty())
        .map(|k| storable(&k).into_owned());
    for (field, value, max) in [
        ("event_type", &event_type, MAX_EVENT_TYPE_BYTES),
        ("ordering_key", &ordering_key, MAX_ORDERING_KEY_BYTES),
    ] {
        if let Some(v) = value.as_ref().filter(|v| v.len() > max) {
            return Err(IngestResponse::rejected(
                400,
                if field == "event_type" {
                    "event_type_too_long"
                } else {
                    "ordering_key_too_long"
                },
                format!("{field} of {} bytes is over {max}", v.len()),
            ));
        }
    }
    Ok(NewInboxEvent {
        partner: partner.name.clone(),
        event_id,
        event_id_derived: derived,
        event_type,
        ordering_key,
        body: Body::Inline(request.body.to_vec()),
        headers: kept_headers(partner, &request.headers),
        signature_verified: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_text_with_nul_is_escaped_and_the_mapping_is_injective() {
        assert_eq!(storable("evt_1"), "evt_1");
        assert!(matches!(storable(r"a\b"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(storable("a\0b"), r"esc:a\0b");
        assert_eq!(storable("a\\\0"), r"esc:a\\\0");
        // a backslash-zero typed by the partner never meets a NUL
        assert_ne!(storable("a\\0\0"), storable("a\0\0"));
        assert!(!storable("\0\0").contains('\0'));
        // nor does a value that looks escaped already
        assert_eq!(storable(r"esc:a\0b"), r"esc:esc:a\\0b");
        assert_ne!(storable(r"esc:a\0b"), storable("a\0b"));
        assert_eq!(storable("esc"), "esc");
    }
}
