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

/// The JSON value at `pointer` as text: a string as is, a number as the
/// partner wrote it. `json` is `raw` parsed. serde_json holds a number that
/// is not a 64-bit integer as an `f64`, which would round
/// `123456789012345678901234567890` and merge two events' ids into one
/// (the second answered `duplicate`, and lost): such a number is read from
/// `raw` instead, character for character.
pub(super) fn pointer_text(json: &serde_json::Value, raw: &[u8], pointer: &str) -> Option<String> {
    match json.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) if n.is_f64() => std::str::from_utf8(raw)
            .ok()
            .and_then(|text| raw_at(text, pointer))
            .map(str::to_owned),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The text of the JSON value at `pointer` in `text` (valid JSON), as
/// written: each step parses only the level it walks through, keeping its
/// members as raw text. Keys and indexes as `serde_json::Value::pointer`
/// reads them (`~1` is `/`, `~0` is `~`; no sign or leading zero in an
/// index; of a repeated key, the last).
fn raw_at<'a>(text: &'a str, pointer: &str) -> Option<&'a str> {
    raw_at_with(text, pointer, false)
}

/// [`raw_at`], where with `star` the token `*` stands for an object's only
/// member, whatever its name (a batch's `item`: `config::batch`).
pub(super) fn raw_at_with<'a>(text: &'a str, pointer: &str, star: bool) -> Option<&'a str> {
    use serde_json::value::RawValue;
    let mut current: &'a RawValue = serde_json::from_str(text).ok()?;
    if pointer.is_empty() {
        return Some(current.get());
    }
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        let level = current.get();
        current = match level.as_bytes().first()? {
            b'{' => {
                let members: Vec<(String, &'a RawValue)> =
                    serde_json::from_str::<RawObject<'a>>(level).ok()?.0;
                if star && token == "*" {
                    match members.as_slice() {
                        [(_, only)] => *only,
                        _ => return None,
                    }
                } else {
                    members.into_iter().rev().find(|(k, _)| *k == token)?.1
                }
            }
            b'[' => {
                if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
                    return None;
                }
                let index: usize = token.parse().ok()?;
                let items: Vec<&'a RawValue> = serde_json::from_str(level).ok()?;
                *items.get(index)?
            }
            _ => return None,
        };
    }
    Some(current.get())
}

/// A JSON object's members in order, each value as raw text.
struct RawObject<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Members<'a> {
            type Value = RawObject<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some(entry) =
                    map.next_entry::<String, &'a serde_json::value::RawValue>()?
                {
                    members.push(entry);
                }
                Ok(RawObject(members))
            }
        }
        d.deserialize_map(Members(std::marker::PhantomData))
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
            .and_then(|j| pointer_text(j, request.body, pointer))
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
pub(super) fn kept_headers(partner: &Partner, headers: &Headers<'_>) -> serde_json::Value {
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
            match json
                .as_ref()
                .and_then(|j| pointer_text(j, request.body, pointer))
            {
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
            .and_then(|p| json.as_ref().and_then(|j| pointer_text(j, request.body, p)))
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

    fn text_at(body: &str, pointer: &str) -> Option<String> {
        let json: serde_json::Value = serde_json::from_str(body).expect("json");
        pointer_text(&json, body.as_bytes(), pointer)
    }

    #[test]
    fn a_number_is_read_as_the_partner_wrote_it_never_rounded() {
        // two ids f64 cannot tell apart stay two ids
        let a = text_at(r#"{"id": 123456789012345678901234567890}"#, "/id");
        let b = text_at(r#"{"id": 123456789012345678901234567891}"#, "/id");
        assert_eq!(a.as_deref(), Some("123456789012345678901234567890"));
        assert_eq!(b.as_deref(), Some("123456789012345678901234567891"));
        assert_eq!(
            text_at(
                r#"{"a": {"b~/c": [0, {"x": 0.123456789012345678}]}}"#,
                "/a/b~0~1c/1/x"
            )
            .as_deref(),
            Some("0.123456789012345678")
        );
        assert_eq!(text_at(r#"{"n": 1e3}"#, "/n").as_deref(), Some("1e3"));
        // 64-bit integers as before, strings as is
        assert_eq!(text_at(r#"{"n": -42}"#, "/n").as_deref(), Some("-42"));
        assert_eq!(
            text_at(r#"{"n": 18446744073709551615}"#, "/n").as_deref(),
            Some("18446744073709551615")
        );
        assert_eq!(text_at(r#"{"s": "1e3"}"#, "/s").as_deref(), Some("1e3"));
        // a repeated key: the last, as serde_json's Value keeps it
        assert_eq!(
            text_at(r#"{"n": 1.5, "n": 2.5}"#, "/n").as_deref(),
            Some("2.5")
        );
        // indexes as serde_json reads them
        assert_eq!(text_at(r#"[1.5, 2.5]"#, "/1").as_deref(), Some("2.5"));
        assert_eq!(text_at(r#"[1.5, 2.5]"#, "/01"), None);
        assert_eq!(text_at(r#"{"n": [1.5]}"#, "/m"), None);
        assert_eq!(text_at(r#"{"n": true}"#, "/n"), None);
    }
}
