//! The fields of a JSON body a [`Signed`] recipe reads (its timestamp,
//! its signature, parts of its message), read in one pass over the body
//! and kept on the stack.

use std::fmt;

use super::error::SignatureError;
use super::few::Few;
use super::json;
use super::recipe::{Part, SignatureAt, Signed, TimestampAt, TimestampSource, malformed, missing};

/// JSON fields of the body a recipe reads, kept without allocating
/// (Mailgun reads three).
const INLINE_FIELDS: usize = 4;

/// A field of the JSON body, as a recipe reads it.
#[derive(Debug, Default)]
enum Field {
    /// Absent.
    #[default]
    Missing,
    /// A string as is, a number or boolean as JSON writes it.
    Text(String),
    /// A number or boolean as JSON writes it, on the stack (a timestamp:
    /// no allocation).
    Short(Short),
    /// A number too long for [`Field::Short`], as JSON writes it.
    Long(String),
    /// Another kind of value (object, array, null).
    Other,
}

/// A short text written on the stack (`fmt::Write`; an error when it
/// does not fit).
#[derive(Debug, Default)]
struct Short {
    bytes: [u8; 32],
    len: usize,
}

impl Short {
    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.bytes.get(..self.len)?).ok()
    }
}

impl fmt::Write for Short {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The fields of the JSON body a recipe reads, read in one pass over the
/// body (`json::read`) when the recipe reads any. Errors are reported
/// when a field is asked for, so the checks keep their order.
pub(super) struct Body {
    fields: Fields,
}

/// What was read in the body. Lives on the stack for one verification
/// (boxing the large variant would put back the allocation it saves).
#[allow(clippy::large_enum_variant)]
enum Fields {
    /// Nothing: the recipe reads nothing in the body (nothing set up).
    Nothing,
    /// The body is not JSON.
    NotJson,
    /// The fields, inline (no allocation) up to [`INLINE_FIELDS`].
    Read(Few<(&'static str, Field), INLINE_FIELDS>),
}

impl Body {
    /// Reads the fields `signed` reads from `raw` (nothing when it reads
    /// none).
    pub(super) fn read(signed: &Signed, raw: &[u8]) -> Self {
        if !reads_body(signed) {
            // Most recipes: nothing to set up.
            return Self {
                fields: Fields::Nothing,
            };
        }
        let mut pointers: Few<&'static str, INLINE_FIELDS> = Few::new();
        let mut add = |pointer: &'static str| {
            if !pointers.iter().any(|p| *p == pointer) {
                pointers.push(pointer);
            }
        };
        if let Some(TimestampAt {
            source: TimestampSource::Json(pointer),
            ..
        }) = signed.timestamp
        {
            add(pointer);
        }
        if let SignatureAt::Json(pointer) = signed.signature {
            add(pointer);
        }
        for part in signed.message {
            if let Part::Json(pointer) = part {
                add(pointer);
            }
        }
        if pointers.is_empty() {
            return Self {
                fields: Fields::Nothing,
            };
        }
        let all: Vec<&str>;
        let pointers: &[&str] = match pointers.as_slice() {
            Some(inline) => inline,
            None => {
                all = pointers.iter().copied().collect();
                &all
            }
        };
        let mut fields = Few::new();
        let mut values: [Option<serde_json::Value>; INLINE_FIELDS] = Default::default();
        for chunk in pointers.chunks(INLINE_FIELDS) {
            if json::read(raw, chunk, &mut values).is_err() {
                return Self {
                    fields: Fields::NotJson,
                };
            }
            for (pointer, value) in chunk.iter().zip(values.iter_mut()) {
                let field = match value.take() {
                    None => Field::Missing,
                    Some(serde_json::Value::String(text)) => Field::Text(text),
                    Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                        let mut short = Short::default();
                        if fmt::Write::write_fmt(&mut short, format_args!("{value}")).is_ok() {
                            Field::Short(short)
                        } else {
                            Field::Long(value.to_string())
                        }
                    }
                    Some(_) => Field::Other,
                };
                fields.push((*pointer, field));
            }
        }
        Self {
            fields: Fields::Read(fields),
        }
    }

    /// The text of the field at `pointer`: a string as is, a number or
    /// boolean as JSON writes it.
    pub(super) fn field(&self, pointer: &'static str) -> Result<&str, SignatureError> {
        let fields = match &self.fields {
            Fields::Read(fields) => fields,
            Fields::Nothing => return Err(missing(pointer)),
            Fields::NotJson => return Err(malformed(pointer, "the body is not JSON")),
        };
        match fields.iter().find(|(p, _)| *p == pointer).map(|(_, f)| f) {
            Some(Field::Text(text) | Field::Long(text)) => Ok(text),
            Some(Field::Short(short)) => short
                .as_str()
                .ok_or_else(|| malformed(pointer, "body field is not a string or number")),
            Some(Field::Other) => Err(malformed(pointer, "body field is not a string or number")),
            Some(Field::Missing) | None => Err(missing(pointer)),
        }
    }
}

impl Body {
    /// The text of the field at `pointer`, which must be a JSON number (a
    /// string, even of digits, is refused, naming the field).
    pub(super) fn number(&self, pointer: &'static str) -> Result<&str, SignatureError> {
        if let Fields::Read(fields) = &self.fields {
            match fields.iter().find(|(p, _)| *p == pointer).map(|(_, f)| f) {
                Some(Field::Text(_)) => {
                    return Err(malformed(
                        pointer,
                        "body field is a JSON string, not a number",
                    ));
                }
                Some(Field::Short(short)) if matches!(short.as_str(), Some("true" | "false")) => {
                    return Err(malformed(pointer, "body field is a boolean, not a number"));
                }
                _ => {}
            }
        }
        self.field(pointer)
    }
}

/// True when `signed` reads a field of the body (its timestamp, its
/// signature or a part of its message).
fn reads_body(signed: &Signed) -> bool {
    matches!(
        signed.timestamp,
        Some(TimestampAt {
            source: TimestampSource::Json(_),
            ..
        })
    ) || matches!(signed.signature, SignatureAt::Json(_))
        || signed
            .message
            .iter()
            .any(|part| matches!(part, Part::Json(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_fields_hold_what_to_string_writes() {
        use std::fmt::Write as _;
        for value in [
            serde_json::json!(1_676_056_940_508u64),
            serde_json::json!(-1.5e-300),
            serde_json::json!(true),
        ] {
            let mut short = Short::default();
            write!(short, "{value}").expect("fits");
            assert_eq!(short.as_str(), Some(value.to_string().as_str()));
        }
        let mut short = Short::default();
        assert!(write!(short, "{}", "x".repeat(33)).is_err());
    }
}
