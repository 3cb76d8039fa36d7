//! What a destination subscribes to: the events published without a
//! destination (`hookbox_publish(…)`, [`crate::outbox::publish`]) that it
//! gets; a partner's routes ([`crate::config::route`]) use the same matcher.
//! It lives below both directions: config, the outbox and the inbox's
//! routing all read it, it reads none of them.
//!
//! ```json
//! "subscribe": {
//!   "event_types": ["order.*", "payment.received"],
//!   "filters": [{"pointer": "/currency", "equals": "EUR"}]
//! }
//! ```
//! An event type is an exact name or a pattern where `*` stands for any run
//! of characters (`order.*` is every event type starting `order.`, `*` is
//! every one). Every filter must hold: the payload's value at the JSON
//! pointer (RFC 6901) equals the given JSON value (a missing value equals
//! nothing). The database evaluates them at publish (migration 11); the
//! same rules are here, for the configuration check and the tests.

use serde::Deserialize;

/// Most event types one destination lists.
pub const MAX_EVENT_TYPES: usize = 64;
/// Most filters one destination lists.
pub const MAX_FILTERS: usize = 16;
/// Longest event type or pattern, bytes (an outbox row's `event_type`).
pub const MAX_PATTERN_BYTES: usize = MAX_EVENT_TYPE_BYTES;
/// Longest event type, bytes: the outbox's `event_type` column
/// ([`crate::outbox::MAX_OUTBOX_EVENT_TYPE_BYTES`] is this).
pub const MAX_EVENT_TYPE_BYTES: usize = 256;

/// A destination's subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// Exact names and `*` patterns, as configured.
    pub event_types: Vec<String>,
    /// All must hold.
    pub filters: Vec<Filter>,
}

/// A payload filter: the value at `pointer` equals `equals`.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// The JSON pointer, as configured (`/a/b`).
    pub pointer: String,
    /// Its reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
    pub path: Vec<String>,
    /// The JSON value it must equal.
    pub equals: serde_json::Value,
}

/// `subscribe` as written in the configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSubscription {
    pub(crate) event_types: Vec<String>,
    #[serde(default)]
    pub(crate) filters: Vec<RawFilter>,
}

/// A filter as written in the configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFilter {
    pointer: String,
    equals: serde_json::Value,
}

impl RawSubscription {
    /// Checked; `Err` is (field, reason).
    pub(crate) fn validate(self) -> Result<Subscription, (String, String)> {
        self.validate_as("subscribe")
    }

    /// Checked, its fields named under `field` (`subscribe`,
    /// `routes[0]`); `Err` is (field, reason).
    pub(crate) fn validate_as(self, field: &str) -> Result<Subscription, (String, String)> {
        if self.event_types.is_empty() {
            let hint = if field == "subscribe" {
                " (leave `subscribe` out for explicit publishes only)"
            } else {
                " (\"*\" is every event type)"
            };
            return Err((
                format!("{field}.event_types"),
                format!("needs at least one event type or pattern{hint}"),
            ));
        }
        if self.event_types.len() > MAX_EVENT_TYPES {
            return Err((
                format!("{field}.event_types"),
                format!(
                    "{} entries, over the limit of {MAX_EVENT_TYPES}",
                    self.event_types.len()
                ),
            ));
        }
        for (i, t) in self.event_types.iter().enumerate() {
            let field = format!("{field}.event_types[{i}]");
            if t.is_empty() || t.len() > MAX_PATTERN_BYTES {
                return Err((
                    field,
                    format!("must be 1 to {MAX_PATTERN_BYTES} bytes, not {}", t.len()),
                ));
            }
            if t.chars().any(char::is_control) {
                return Err((field, format!("{t:?} contains a control character")));
            }
        }
        if self.filters.len() > MAX_FILTERS {
            return Err((
                format!("{field}.filters"),
                format!(
                    "{} filters, over the limit of {MAX_FILTERS}",
                    self.filters.len()
                ),
            ));
        }
        let filters = self
            .filters
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let path = pointer_path(&f.pointer)
                    .map_err(|reason| (format!("{field}.filters[{i}].pointer"), reason))?;
                Ok(Filter {
                    pointer: f.pointer,
                    path,
                    equals: f.equals,
                })
            })
            .collect::<Result<Vec<_>, (String, String)>>()?;
        Ok(Subscription {
            event_types: self.event_types,
            filters,
        })
    }
}

/// The reference tokens of a JSON pointer (RFC 6901).
fn pointer_path(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "{pointer:?} is not a JSON pointer: it starts with '/' (or is empty, the whole payload)"
        ));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => {
                        return Err(format!(
                            "{pointer:?}: '~' must be followed by 0 or 1 (RFC 6901)"
                        ));
                    }
                }
            }
            Ok(out)
        })
        .collect()
}

/// `pattern` as a LIKE pattern (`\` the escape): `%`, `_` and `\` escaped,
/// `*` to `%`.
pub fn like_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    for c in pattern.chars() {
        match c {
            '*' => out.push('%'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

impl Subscription {
    /// Whether an event of `event_type` with `payload` goes to this
    /// destination (what the database decides at publish).
    pub fn matches(&self, event_type: &str, payload: &serde_json::Value) -> bool {
        self.event_types.iter().any(|p| glob(p, event_type))
            && self.filters.iter().all(|f| {
                let mut value = Some(payload);
                for token in &f.path {
                    value = value.and_then(|v| match v {
                        serde_json::Value::Object(map) => map.get(token),
                        serde_json::Value::Array(items) => {
                            token.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => None,
                    });
                }
                value == Some(&f.equals)
            })
    }

    /// The filters as the database keeps them (`outbox_destinations.filters`).
    pub fn filters_json(&self) -> serde_json::Value {
        self.filters
            .iter()
            .map(|f| serde_json::json!({"pointer": f.pointer, "path": f.path, "equals": f.equals}))
            .collect()
    }
}

/// `*` matches any run of characters; everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sub(types: &[&str], filters: serde_json::Value) -> Subscription {
        let raw: RawSubscription =
            serde_json::from_value(json!({"event_types": types, "filters": filters})).expect("raw");
        raw.validate().expect("valid")
    }

    #[test]
    fn patterns_match_exact_names_and_runs_of_characters() {
        let s = sub(&["order.*", "payment.received"], json!([]));
        assert!(s.matches("order.paid", &json!({})));
        assert!(s.matches("order.", &json!({})));
        assert!(s.matches("payment.received", &json!({})));
        assert!(!s.matches("payment.refunded", &json!({})));
        assert!(!s.matches("orders.paid", &json!({})));
        assert!(sub(&["*"], json!([])).matches("anything", &json!(null)));
        assert!(sub(&["a*b*c"], json!([])).matches("aXbYc", &json!(null)));
        assert!(!sub(&["a*b*c"], json!([])).matches("acb", &json!(null)));
        assert!(!sub(&["ab*ba"], json!([])).matches("aba", &json!(null)));
    }

    #[test]
    fn filters_compare_the_value_at_the_pointer() {
        let s = sub(
            &["*"],
            json!([{"pointer": "/currency", "equals": "EUR"}, {"pointer": "/a~1b/0", "equals": 1}]),
        );
        assert!(s.matches("x", &json!({"currency": "EUR", "a/b": [1, 2]})));
        assert!(!s.matches("x", &json!({"currency": "USD", "a/b": [1]})));
        assert!(
            !s.matches("x", &json!({"currency": "EUR"})),
            "missing equals nothing"
        );
        assert!(
            !s.matches("x", &json!({"currency": "EUR", "a/b": ["1"]})),
            "1 is not \"1\""
        );
        assert_eq!(s.filters[1].path, vec!["a/b".to_string(), "0".to_string()]);
    }

    #[test]
    fn like_patterns_escape_what_like_would_read() {
        assert_eq!(like_pattern("order.*"), "order.%");
        assert_eq!(like_pattern("a_b%c\\*"), "a\\_b\\%c\\\\%");
    }

    #[test]
    fn a_bad_subscription_names_its_field() {
        let bad = |v: serde_json::Value| {
            serde_json::from_value::<RawSubscription>(v)
                .expect("raw")
                .validate()
                .expect_err("invalid")
        };
        assert_eq!(bad(json!({"event_types": []})).0, "subscribe.event_types");
        assert_eq!(
            bad(json!({"event_types": ["a\nb"]})).0,
            "subscribe.event_types[0]"
        );
        let (field, reason) =
            bad(json!({"event_types": ["a"], "filters": [{"pointer": "x", "equals": 1}]}));
        assert_eq!(field, "subscribe.filters[0].pointer");
        assert!(reason.contains("starts with '/'"), "{reason}");
        assert!(
            bad(json!({"event_types": ["a"], "filters": [{"pointer": "/~2", "equals": 1}]}))
                .1
                .contains("RFC 6901")
        );
    }
}
