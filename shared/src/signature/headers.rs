//! Request headers with case-insensitive lookup.

use std::borrow::Cow;

use super::error::SignatureError;
use super::lines::{self, CommaRule, trim_ows};

/// True for a header value the `http` crate (and so `aws_lambda_events`)
/// takes: tab, visible ASCII, space and bytes of 0x80 and above; never a
/// control character such as U+0000 or U+0001.
pub fn is_usable_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80)
}

/// True for a header name the `http` crate takes (an RFC 9110 token).
pub fn is_usable_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Removes from an API Gateway event's JSON (`headers` and
/// `multiValueHeaders`) the headers and values the `http` crate refuses:
/// otherwise the whole event fails to deserialize before any hookbox code
/// runs, and a correctly signed webhook with, say, U+0000 in its
/// `User-Agent` gets API Gateway's bare 500 (authorizer) or 502 (ingest) on
/// every resend. No signature scheme signs such a header. Returns the names
/// of the headers that lost a value (never the values).
pub fn drop_unusable_headers(event: &mut serde_json::Value) -> Vec<String> {
    let mut dropped = Vec::new();
    for field in ["headers", "multiValueHeaders"] {
        let Some(map) = event
            .get_mut(field)
            .and_then(serde_json::Value::as_object_mut)
        else {
            continue;
        };
        map.retain(|name, value| {
            let usable = |v: &serde_json::Value| v.as_str().is_some_and(is_usable_header_value);
            let keep = if !is_usable_header_name(name) {
                false
            } else if let serde_json::Value::Array(values) = value {
                let before = values.len();
                values.retain(usable);
                if values.len() < before {
                    dropped.push(name.clone());
                }
                !values.is_empty()
            } else {
                value.is_null() || usable(value)
            };
            if !keep {
                dropped.push(name.clone());
            }
            keep
        });
    }
    dropped.sort();
    dropped.dedup();
    dropped
}

/// The headers of one request: `(name, value)` pairs borrowed from the
/// caller (an API Gateway event, an `http::HeaderMap`, the CLI, a test).
///
/// Lookup ignores ASCII case in names and trims optional whitespace (space,
/// tab) around values. A header that appears several times with different
/// values is ambiguous: the verifiers reject it as malformed rather than
/// guessing which one the partner signed.
///
/// Built with [`Headers::from_joined`], each value is the header's lines
/// joined with commas (what API Gateway's HTTP API hands over): a lookup that needs one value splits it
/// back into its lines first (by the header's [`CommaRule`], from the rule
/// table it was built with: `signature::joined::comma_rule`), so a header
/// sent twice with different values is ambiguous there too.
#[derive(Debug, Clone, Default)]
pub struct Headers<'a> {
    pairs: Vec<(&'a str, &'a str)>,
    /// Joined values: each header's rule.
    joined: Option<fn(&str) -> CommaRule>,
}

impl<'a> Headers<'a> {
    /// No headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Headers from `(name, value)` pairs.
    pub fn from_pairs<I>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        Self {
            pairs: pairs.into_iter().collect(),
            joined: None,
        }
    }

    /// Headers from `(name, value)` pairs whose values are the header's
    /// lines joined with commas ([`super::joined::join_lines`]), split back
    /// by each header's rule (`rules`: [`super::joined::comma_rule`]).
    pub fn from_joined<I>(pairs: I, rules: fn(&str) -> CommaRule) -> Self
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        Self {
            pairs: pairs.into_iter().collect(),
            joined: Some(rules),
        }
    }

    /// True when the values are lines joined with commas.
    pub fn is_joined(&self) -> bool {
        self.joined.is_some()
    }

    /// Adds one header.
    pub fn push(&mut self, name: &'a str, value: &'a str) {
        self.pairs.push((name, value));
    }

    /// Number of header lines.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// `true` when there are no headers.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The first value of header `name` (any case), trimmed. Joined: the
    /// value read whole ([`lines::whole_with`]: its line when all its
    /// lines are the same, else as joined).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let value = self
            .pairs
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)?;
        Some(match self.joined {
            Some(rules) => lines::whole_with(rules(name), value),
            None => trim_ows(value),
        })
    }

    /// The value of header `name`, or `None` when absent; an error when it
    /// appears more than once with different values.
    pub(crate) fn unique(&self, name: &str) -> Result<Option<&'a str>, &'static str> {
        if let Some(rules) = self.joined {
            return self.unique_joined(name, rules(name));
        }
        // The cheap key first, as in `unique_many`: a request's other
        // headers often have the name's length (Twitch sends four of 33
        // bytes), and comparing those in full cost more than the key.
        let wanted = key(name);
        let mut found: Option<&'a str> = None;
        for (n, v) in &self.pairs {
            if key(n) == wanted && same_name(n, name) {
                let v = trim_ows(v);
                match found {
                    None => found = Some(v),
                    Some(prev) if prev == v => {}
                    Some(_) => return Err("repeated with different values"),
                }
            }
        }
        Ok(found)
    }

    /// [`Self::unique`] of joined values: every line of every value named
    /// `name` (split by its `rule`: [`lines::split_with`]) must be the same.
    fn unique_joined(&self, name: &str, rule: CommaRule) -> Result<Option<&'a str>, &'static str> {
        let mut found: Option<&'a str> = None;
        for (n, v) in &self.pairs {
            if !same_name(n, name) {
                continue;
            }
            for line in lines::split_with(rule, v) {
                match found {
                    None => found = Some(line),
                    Some(prev) if prev == line => {}
                    Some(_) => return Err("repeated with different values"),
                }
            }
        }
        Ok(found)
    }

    /// [`Self::unique`] for several names in one pass over the headers.
    pub(crate) fn unique_many<const N: usize>(
        &self,
        names: [&'static str; N],
    ) -> Result<[Option<&'a str>; N], SignatureError> {
        if let Some(rules) = self.joined {
            let mut found: [Option<&'a str>; N] = [None; N];
            for (slot, name) in found.iter_mut().zip(names) {
                *slot = self.unique_joined(name, rules(name)).map_err(|reason| {
                    SignatureError::MalformedHeader {
                        header: Cow::Borrowed(name),
                        reason,
                    }
                })?;
            }
            return Ok(found);
        }
        // Cheap keys first (length, last letter), the full comparison only
        // when they match.
        let keys = names.map(key);
        let mut found: [Option<&'a str>; N] = [None; N];
        for (n, v) in &self.pairs {
            let k = key(n);
            for i in 0..N {
                if keys[i] != k || !same_name(n, names[i]) {
                    continue;
                }
                let v = trim_ows(v);
                match found[i] {
                    None => found[i] = Some(v),
                    Some(prev) if prev == v => {}
                    Some(_) => {
                        return Err(SignatureError::MalformedHeader {
                            header: Cow::Borrowed(names[i]),
                            reason: "repeated with different values",
                        });
                    }
                }
            }
        }
        Ok(found)
    }

    /// Like [`Self::unique`], with the scheme's errors: missing or ambiguous.
    pub(crate) fn required(&self, name: &'static str) -> Result<&'a str, SignatureError> {
        self.required_dyn(Cow::Borrowed(name))
    }

    /// [`Self::required`] for a configured (non-static) header name.
    pub(crate) fn required_dyn(&self, name: Cow<'static, str>) -> Result<&'a str, SignatureError> {
        match self.unique(&name) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(SignatureError::MissingHeader { header: name }),
            Err(reason) => Err(SignatureError::MalformedHeader {
                header: name,
                reason,
            }),
        }
    }

    /// The value of the first of `names` that is present (each must be
    /// unambiguous), with the name that matched.
    pub(crate) fn first_of(
        &self,
        names: &[&'static str],
    ) -> Result<Option<(&'static str, &'a str)>, SignatureError> {
        for name in names {
            match self.unique(name) {
                Ok(Some(v)) => return Ok(Some((name, v))),
                Ok(None) => {}
                Err(reason) => {
                    return Err(SignatureError::MalformedHeader {
                        header: Cow::Borrowed(name),
                        reason,
                    });
                }
            }
        }
        Ok(None)
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Headers<'a> {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(iter: I) -> Self {
        Self::from_pairs(iter)
    }
}

/// Header names equal ignoring ASCII case; exact bytes first, as senders
/// mostly use one canonical spelling.
fn same_name(a: &str, b: &str) -> bool {
    a == b || a.eq_ignore_ascii_case(b)
}

/// Length and the last four bytes with bit 5 set (which lower-cases
/// ASCII letters and maps equal names, ignoring ASCII case, to equal
/// keys): different keys, different names. Names differ most at their
/// end (`-Signature`, `-Timestamp`, `-Id`).
fn key(name: &str) -> (usize, u32) {
    let bytes = name.as_bytes();
    // One load for the usual name (a copy of a variable length would
    // call `memcpy` for every header compared).
    let tail = match bytes
        .len()
        .checked_sub(4)
        .and_then(|start| bytes.get(start..))
    {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => bytes
            .iter()
            .fold(0u32, |word, &byte| (word << 8) | u32::from(byte)),
    };
    (bytes.len(), tail | 0x2020_2020)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_trims_values() {
        let headers = Headers::from_pairs([("X-Hub-Signature-256", "  sha256=ab\t")]);
        assert_eq!(headers.get("x-hub-signature-256"), Some("sha256=ab"));
        assert_eq!(headers.get("X-HUB-SIGNATURE-256"), Some("sha256=ab"));
        assert_eq!(headers.get("x-hub-signature"), None);
    }

    #[test]
    fn repeated_header_with_different_values_is_ambiguous() {
        let same = Headers::from_pairs([("a", "1"), ("A", "1")]);
        assert_eq!(same.unique("a"), Ok(Some("1")));
        let different = Headers::from_pairs([("a", "1"), ("A", "2")]);
        assert!(different.unique("a").is_err());
        assert!(matches!(
            different.required("a"),
            Err(SignatureError::MalformedHeader { .. })
        ));
        assert!(matches!(
            Headers::new().required("a"),
            Err(SignatureError::MissingHeader { .. })
        ));
        let many = Headers::from_pairs([("X-One", " 1 "), ("x-two", "2"), ("X-TWO", "2")]);
        assert_eq!(
            many.unique_many(["x-one", "X-Two", "x-three", ""]),
            Ok([Some("1"), Some("2"), None, None])
        );
        assert!(same_name("Webhook-Signature", "webhook-signature"));
        assert!(same_name("WEBHOOK-ID", "webhook-id"));
        assert!(!same_name("webhook-timestamp", "webhook-signature"));
        assert!(!same_name("webhook-id", "webhook-i"));
        let clash = Headers::from_pairs([("x-two", "2"), ("X-TWO", "3")]);
        assert!(clash.unique_many(["x-one", "x-two"]).is_err());
    }

    #[test]
    fn names_equal_ignoring_ascii_case_have_equal_keys() {
        let names = [
            "",
            "a",
            "A",
            "ab",
            "x-Id",
            "X-ID",
            "@",
            "`",
            "Twitch-Eventsub-Message-Signature",
            "twitch-eventsub-message-signature",
            "Twitch-Eventsub-Message-Timestamp",
        ];
        for a in names {
            for b in names {
                if a.eq_ignore_ascii_case(b) {
                    assert_eq!(key(a), key(b), "{a:?} {b:?}");
                }
            }
        }
        assert_ne!(
            key("Twitch-Eventsub-Message-Signature"),
            key("Twitch-Eventsub-Message-Timestamp")
        );
        let twitch = Headers::from_pairs([
            ("Twitch-Eventsub-Message-Timestamp", "t"),
            ("twitch-eventsub-message-signature", "s"),
        ]);
        assert_eq!(
            twitch.unique("Twitch-Eventsub-Message-Signature"),
            Ok(Some("s"))
        );
    }
}

#[cfg(test)]
mod edge_tests {
    use super::*;

    #[test]
    fn headers_the_http_crate_refuses_are_dropped_by_name_only() {
        let mut event = serde_json::json!({
            "headers": {"user-agent": "a\u{0}b", "webhook-id": "msg_1", "x-ctl": "\u{1}", "bad name": "v"},
            "multiValueHeaders": {"user-agent": ["a\u{0}b"], "accept": ["ok", "no\u{7f}"]},
        });
        let dropped = drop_unusable_headers(&mut event);
        assert_eq!(dropped, ["accept", "bad name", "user-agent", "x-ctl"]);
        assert_eq!(
            event,
            serde_json::json!({
                "headers": {"webhook-id": "msg_1"},
                "multiValueHeaders": {"accept": ["ok"]},
            })
        );
        assert!(is_usable_header_value("tab\there é"));
    }
}
