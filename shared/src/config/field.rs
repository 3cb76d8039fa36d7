//! Where a partner reads a value (its event id, type, a part of a composite
//! id, a batch's per-event fields): a header, a JSON pointer or a composite
//! of them; the raw configuration of such a field and its checks, shared by
//! a partner (`partner`) and its batch declaration (`batch`).

use std::fmt;

use serde::Deserialize;

use super::ConfigError;
use crate::signature::presets;

pub(super) fn partner_error(
    partner: &str,
    field: impl Into<String>,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Partner {
        partner: partner.to_string(),
        field: field.into(),
        reason: reason.into(),
    }
}

/// Where a value (the event type, a part of a composite event id) is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSource {
    /// A request header (case-insensitive; stored lower case). A header is
    /// not covered by the provider's signature unless its recipe signs it.
    Header(String),
    /// A string or number of the JSON body, by JSON pointer (RFC 6901).
    JsonPointer(String),
    /// Several fields joined with `:` (all must be present).
    Composite(Vec<FieldSource>),
}

impl FieldSource {
    /// Where the preset reads `field` (`None`: the provider sends none).
    pub(super) fn of_preset(field: presets::EventField) -> Option<Self> {
        match field {
            presets::EventField::Header(name) => Some(Self::Header(name.to_ascii_lowercase())),
            presets::EventField::Json(pointer) => Some(Self::JsonPointer(pointer.to_owned())),
            presets::EventField::Composite(fields) => fields
                .iter()
                .map(|field| Self::of_preset(*field))
                .collect::<Option<Vec<_>>>()
                .map(Self::Composite),
            presets::EventField::Absent => None,
        }
    }

    /// True when it reads the JSON body.
    pub fn reads_json(&self) -> bool {
        match self {
            Self::Header(_) => false,
            Self::JsonPointer(_) => true,
            Self::Composite(fields) => fields.iter().any(Self::reads_json),
        }
    }

    /// The header names it reads (lower case).
    pub(super) fn headers(&self) -> Vec<&str> {
        match self {
            Self::Header(name) => vec![name.as_str()],
            Self::JsonPointer(_) => Vec::new(),
            Self::Composite(fields) => fields.iter().flat_map(Self::headers).collect(),
        }
    }
}

impl fmt::Display for FieldSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header {name}"),
            Self::JsonPointer(pointer) => write!(f, "{pointer} in the body"),
            Self::Composite(fields) => {
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" + ")?;
                    }
                    write!(f, "{field}")?;
                }
                Ok(())
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEventId {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    json_pointer: Option<String>,
    #[serde(default)]
    composite: Option<Vec<RawEventId>>,
}

/// `"event_type"`: a JSON pointer (as before), or `{"header": …}`,
/// `{"json_pointer": …}`, `{"composite": [...]}` like `event_id`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawEventType {
    Pointer(String),
    Field(RawEventId),
}

impl RawEventType {
    /// The field it names (a pointer is checked as one).
    pub(super) fn field(self, partner: &str, at: &str) -> Result<FieldSource, ConfigError> {
        match self {
            Self::Pointer(p) => {
                check_pointer(partner, at, &p)?;
                Ok(FieldSource::JsonPointer(p))
            }
            Self::Field(raw) => raw.field(partner, at, false),
        }
    }
}

/// Most parts a composite field may join.
const MAX_COMPOSITE_PARTS: usize = 4;

impl RawEventId {
    /// The field it names: exactly one of `header`, `json_pointer`,
    /// `composite` (of headers and pointers).
    pub(super) fn field(
        self,
        partner: &str,
        at: &str,
        nested: bool,
    ) -> Result<FieldSource, ConfigError> {
        let usage = || {
            partner_error(
                partner,
                at,
                "give exactly one of a non-empty \"header\", a \"json_pointer\" or (not \
                 nested) a \"composite\" list of 2 to 4 of them",
            )
        };
        match self {
            Self {
                header: Some(h),
                json_pointer: None,
                composite: None,
            } if !h.trim().is_empty() => Ok(FieldSource::Header(h.trim().to_ascii_lowercase())),
            Self {
                header: None,
                json_pointer: Some(p),
                composite: None,
            } => {
                check_pointer(partner, &format!("{at}.json_pointer"), &p)?;
                Ok(FieldSource::JsonPointer(p))
            }
            Self {
                header: None,
                json_pointer: None,
                composite: Some(parts),
            } if !nested && (2..=MAX_COMPOSITE_PARTS).contains(&parts.len()) => parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| part.field(partner, &format!("{at}.composite[{i}]"), true))
                .collect::<Result<Vec<_>, _>>()
                .map(FieldSource::Composite),
            _ => Err(usage()),
        }
    }
}

pub(super) fn check_pointer(partner: &str, field: &str, pointer: &str) -> Result<(), ConfigError> {
    if pointer.starts_with('/') {
        Ok(())
    } else {
        Err(partner_error(
            partner,
            field,
            format!("{pointer:?} is not a JSON pointer (it must start with '/', e.g. \"/id\")"),
        ))
    }
}
