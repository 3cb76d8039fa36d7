//! Svix's wire format (camelCase JSON) and the management functions'
//! documents (snake_case): reading a request's body field by field, each
//! refusal naming the field as Svix's SDKs name it (`loc: ["body",
//! "throttleRate"]`); an unknown field is refused, never ignored.
//! Pagination as Svix's `ListResponse` (`data`, `iterator`, `prevIterator`,
//! `done`) over the functions' pages.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::error::ApiError;
use crate::tenants::Page;

/// Svix's ids and uids, and event type names: letters, digits, `-`, `_`, `.`.
pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A request body: a JSON object, read field by field.
#[derive(Debug, Default)]
pub(crate) struct Body(Map<String, Value>);

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl Body {
    /// A nested object, read the same way.
    pub fn from_map(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// The body as JSON; `empty_ok`: no body at all reads as `{}`.
    pub fn parse(bytes: &[u8], empty_ok: bool) -> Result<Self, ApiError> {
        if empty_ok && bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self::default());
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(other) => Err(ApiError::Validation {
                loc: "body".into(),
                msg: format!("expected a JSON object, got {}", kind(&other)),
            }),
            Err(e) => Err(ApiError::Validation {
                loc: "body".into(),
                msg: format!("the body is not JSON: {e}"),
            }),
        }
    }

    /// Refuses, naming it, a field that is not one of `known`; those of
    /// Svix's that hookbox does not support (`unsupported`) say so.
    pub fn only(&self, known: &[&str], unsupported: &[&str]) -> Result<(), ApiError> {
        for field in self.0.keys() {
            if unsupported.contains(&field.as_str()) {
                return Err(ApiError::validation(
                    field,
                    format!("hookbox does not support {field} (docs/tenants.md, \"The HTTP API\")"),
                ));
            }
            if !known.contains(&field.as_str()) {
                return Err(ApiError::validation(
                    field,
                    format!("unknown field {field} (known: {})", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// True when `field` is present (null included).
    pub fn has(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    pub(crate) fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A field that may not be null when present.
    pub(crate) fn not_null(&self, field: &str) -> Result<(), ApiError> {
        if self.0.get(field).is_some_and(Value::is_null) {
            return Err(ApiError::validation(field, "may not be null"));
        }
        Ok(())
    }

    /// A string (absent or null: `None`).
    pub fn string(&self, field: &str) -> Result<Option<String>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be a string, not {}", kind(other)),
            )),
        }
    }

    /// A string that may not be null when present.
    pub fn string_not_null(&self, field: &str) -> Result<Option<String>, ApiError> {
        self.not_null(field)?;
        self.string(field)
    }

    /// A required, non-empty string.
    pub fn required_string(&self, field: &str) -> Result<String, ApiError> {
        match self.string_not_null(field)? {
            Some(s) if !s.is_empty() => Ok(s),
            Some(_) => Err(ApiError::validation(field, "may not be empty")),
            None => Err(ApiError::validation(field, "field required")),
        }
    }

    /// A uid (nullable): Svix's pattern.
    pub fn uid(&self, field: &str) -> Result<Option<String>, ApiError> {
        let uid = self.string(field)?;
        if let Some(u) = &uid {
            if !is_name(u) {
                return Err(ApiError::validation(
                    field,
                    format!(
                        "{u:?} must be 1 to 256 letters, digits, '-', '_' or '.' \
                         (^[a-zA-Z0-9\\-_.]+$)"
                    ),
                ));
            }
        }
        Ok(uid)
    }

    /// A boolean that may not be null when present.
    pub fn bool(&self, field: &str) -> Result<Option<bool>, ApiError> {
        self.not_null(field)?;
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be true or false, not {}", kind(other)),
            )),
        }
    }

    /// A whole number from `min` to `max` (absent or null: `None`).
    pub fn uint(&self, field: &str, min: u64, max: u64) -> Result<Option<u64>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
                _ => Err(ApiError::validation(
                    field,
                    format!("must be a whole number from {min} to {max}, not {n}"),
                )),
            },
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be a whole number, not {}", kind(other)),
            )),
        }
    }

    /// A list of distinct strings (absent or null: `None`; empty refused:
    /// leave it out, or null, for all).
    pub fn string_list(&self, field: &str) -> Result<Option<Vec<String>>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                if items.is_empty() {
                    return Err(ApiError::validation(
                        field,
                        format!("{field} can't be empty: leave it out, or null, for all"),
                    ));
                }
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) => {
                            if out.contains(s) {
                                return Err(ApiError::validation(
                                    field,
                                    format!("{s:?} is listed twice"),
                                ));
                            }
                            out.push(s.clone());
                        }
                        other => {
                            return Err(ApiError::validation(
                                field,
                                format!("must hold strings, not {}", kind(other)),
                            ));
                        }
                    }
                }
                Ok(Some(out))
            }
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be a list of strings, not {}", kind(other)),
            )),
        }
    }

    /// An object of strings (metadata, headers), not null when present.
    pub fn string_map(&self, field: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        self.not_null(field)?;
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => {
                if let Some((k, v)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(ApiError::validation(
                        field,
                        format!("{field}.{k} must be a string, not {}", kind(v)),
                    ));
                }
                Ok(Some(map.clone()))
            }
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be an object of strings, not {}", kind(other)),
            )),
        }
    }

    /// An object (any JSON object), absent or null: `None`.
    pub fn object(&self, field: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(other) => Err(ApiError::validation(
                field,
                format!("must be an object, not {}", kind(other)),
            )),
        }
    }
}

/// A list's query: `limit` (1 to 250, default 50), `iterator` (from a
/// previous page), `order` (ascending only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListQuery {
    pub limit: u32,
    pub iterator: Option<String>,
}

/// Reads the list parameters of `query`, refusing any other parameter than
/// `extra` names.
pub(crate) fn list_query(
    query: &BTreeMap<String, String>,
    extra: &[&str],
) -> Result<ListQuery, ApiError> {
    for name in query.keys() {
        if !["limit", "iterator", "order"].contains(&name.as_str())
            && !extra.contains(&name.as_str())
        {
            return Err(ApiError::query(
                name,
                format!("hookbox does not support the query parameter {name}"),
            ));
        }
    }
    let limit = match query.get("limit") {
        None => 50,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if (1..=250).contains(&n) => n,
            _ => {
                return Err(ApiError::query(
                    "limit",
                    format!("limit must be a whole number from 1 to 250, not {text:?}"),
                ));
            }
        },
    };
    match query.get("order").map(String::as_str) {
        None | Some("ascending") => {}
        Some("descending") => {
            return Err(ApiError::query(
                "order",
                "hookbox lists in creation order only: order=descending is not supported",
            ));
        }
        Some(other) => {
            return Err(ApiError::query(
                "order",
                format!("order must be ascending or descending, not {other:?}"),
            ));
        }
    }
    let iterator = query.get("iterator").filter(|i| !i.is_empty()).cloned();
    if let Some(it) = &iterator {
        if it.starts_with('-') {
            return Err(ApiError::query(
                "iterator",
                "hookbox pages forward only: a previous-page iterator (-…) is not supported",
            ));
        }
    }
    Ok(ListQuery { limit, iterator })
}

/// A boolean query parameter (`true`/`false`), `false` when absent.
pub(crate) fn query_bool(query: &BTreeMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match query.get(name).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::query(
            name,
            format!("{name} must be true or false, not {other:?}"),
        )),
    }
}

/// Svix's `ListResponse` of `items` (hookbox pages forward only: no
/// `prevIterator`).
pub(crate) fn list_response(data: Vec<Value>, iterator: Option<String>, done: bool) -> Value {
    json!({"data": data, "iterator": iterator, "prevIterator": null, "done": done})
}

/// A page of the functions as Svix's `ListResponse`.
pub(crate) fn page<T>(page: Page<T>, out: fn(&T) -> Value) -> Value {
    list_response(
        page.data.iter().map(out).collect(),
        page.iterator,
        page.done,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(e: ApiError) -> String {
        match e {
            ApiError::Validation { loc, .. } => loc,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn list_parameters_are_checked_and_unsupported_ones_named() {
        let q = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            list_query(&q(&[]), &[]).expect("defaults"),
            ListQuery {
                limit: 50,
                iterator: None
            }
        );
        assert_eq!(
            list_query(&q(&[("limit", "2"), ("iterator", "app_1")]), &[])
                .expect("valid")
                .iterator
                .as_deref(),
            Some("app_1")
        );
        for (pairs, name) in [
            (q(&[("limit", "0")]), "query.limit"),
            (q(&[("limit", "251")]), "query.limit"),
            (q(&[("order", "descending")]), "query.order"),
            (q(&[("iterator", "-app_1")]), "query.iterator"),
            (q(&[("before", "x")]), "query.before"),
        ] {
            assert_eq!(loc(list_query(&pairs, &[]).expect_err("refused")), name);
        }
    }
}
