//! Finding the JSON integers a service refuses: EventBridge's PutEvents
//! takes a JSON integer in an event's `Detail` only from
//! -9,223,372,036,854,775,808 to 9,223,372,036,854,775,807 (a signed 64-bit
//! integer; PutEvents API reference,
//! <https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html>:
//! "For the JSON number (integer) data type, the constraints are: a minimum
//! value of -9,223,372,036,854,775,808 and a maximum value of
//! 9,223,372,036,854,775,807"). Payloads keep a partner's numbers exactly,
//! and PostgreSQL's jsonb writes them in plain notation (`1e20` becomes
//! `100000000000000000000`), so such an integer can reach the transport.
//!
//! A number with a fraction or an exponent is not an integer literal and is
//! not checked (the page states no limit for it); the range rules of content
//! filtering (numeric matching) only decide whether a rule matches, never
//! whether the event is taken (docs/relay.md, "The envelope").

/// An integer literal outside the signed 64-bit range, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfRange {
    /// Its JSON pointer (RFC 6901) in the scanned document (`""`: the
    /// document itself).
    pub pointer: String,
    /// The literal as written.
    pub literal: String,
}

impl OutOfRange {
    /// The literal, cut to 40 characters with its length after, for a
    /// message (jsonb writes `1e300` as 301 digits).
    pub fn shown(&self) -> String {
        const SHOWN: usize = 40;
        if self.literal.len() <= SHOWN {
            self.literal.clone()
        } else {
            // the literal is ASCII: any byte index is a char boundary
            format!(
                "{}… ({} characters)",
                &self.literal[..SHOWN],
                self.literal.len()
            )
        }
    }
}

/// One open container of the scan.
enum Frame {
    /// An object: its current member's key; whether the next string is a
    /// key.
    Object { key: String, expect_key: bool },
    /// An array: its current element's index.
    Array { index: usize },
}

/// The first integer literal of `json` outside `i64` (in document order),
/// if any. `json` must be valid JSON (the caller parsed it): on other text
/// the answer is meaningless, but the scan never panics. Iterative: any
/// depth.
pub fn first_integer_outside_i64(json: &str) -> Option<OutOfRange> {
    let bytes = json.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                stack.push(Frame::Object {
                    key: String::new(),
                    expect_key: true,
                });
                at += 1;
            }
            b'[' => {
                stack.push(Frame::Array { index: 0 });
                at += 1;
            }
            b'}' | b']' => {
                stack.pop();
                at += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Array { index }) => *index += 1,
                    Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                    None => {}
                }
                at += 1;
            }
            b'"' => {
                let end = string_end(bytes, at);
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    if *expect_key {
                        let raw = &json[at..end];
                        *key = serde_json::from_str::<String>(raw)
                            .unwrap_or_else(|_| raw.trim_matches('"').to_string());
                        *expect_key = false;
                    }
                }
                at = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while at < bytes.len()
                    && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    at += 1;
                }
                let literal = &json[start..at];
                let integer = !literal.contains(['.', 'e', 'E']);
                if integer && literal.parse::<i64>().is_err() {
                    return Some(OutOfRange {
                        pointer: pointer(&stack),
                        literal: literal.to_string(),
                    });
                }
            }
            _ => at += 1,
        }
    }
    None
}

/// The index just past the string that starts (with its quote) at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The JSON pointer of the value the scan is at.
fn pointer(stack: &[Frame]) -> String {
    let mut out = String::new();
    for frame in stack {
        out.push('/');
        match frame {
            Frame::Object { key, .. } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Frame::Array { index } => out.push_str(&index.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(json: &str) -> Option<(String, String)> {
        first_integer_outside_i64(json).map(|o| (o.pointer, o.literal))
    }

    #[test]
    fn integers_inside_i64_and_other_numbers_pass() {
        for json in [
            r#"{"a": 1, "b": -9223372036854775808, "c": 9223372036854775807}"#,
            r#"{"big": 1.0e300, "f": 100000000000000000000.5, "e": 1E30, "neg": -0}"#,
            r#"["100000000000000000000", {"s": "9223372036854775808"}]"#,
            r#"{"k\"ey": [true, false, null]}"#,
            "7",
        ] {
            assert_eq!(found(json), None, "{json}");
        }
    }

    #[test]
    fn an_integer_past_i64_is_found_with_its_pointer() {
        assert_eq!(
            found(r#"{"amount": 100000000000000000000}"#),
            Some(("/amount".into(), "100000000000000000000".into()))
        );
        assert_eq!(
            found(r#"{"a": 9223372036854775807, "n": [1, {"x": -9223372036854775809}]}"#),
            Some(("/n/1/x".into(), "-9223372036854775809".into()))
        );
        // keys are unescaped, then escaped as RFC 6901 says
        assert_eq!(
            found(r#"{"a/b": {"m~n": [0, 0, 18446744073709551616]}}"#),
            Some(("/a~1b/m~0n/2".into(), "18446744073709551616".into()))
        );
        assert_eq!(
            found(r#"{"s": "x\"y", "k\u00e9": 99999999999999999999}"#),
            Some(("/ké".into(), "99999999999999999999".into()))
        );
        // a key after a nested container, and the document itself
        assert_eq!(
            found(r#"{"a": {"b": [1]}, "c": 99999999999999999999}"#),
            Some(("/c".into(), "99999999999999999999".into()))
        );
        assert_eq!(
            found("99999999999999999999"),
            Some((String::new(), "99999999999999999999".into()))
        );
    }

    #[test]
    fn a_long_literal_is_shown_cut_with_its_length() {
        let literal = format!("1{}", "0".repeat(300));
        let found = first_integer_outside_i64(&format!("[{literal}]")).expect("found");
        assert_eq!(found.pointer, "/0");
        assert_eq!(
            found.shown(),
            format!("1{}… (301 characters)", "0".repeat(39))
        );
    }

    #[test]
    fn any_depth_is_scanned_without_recursion() {
        let deep = format!(
            "{}99999999999999999999{}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let found = first_integer_outside_i64(&deep).expect("found");
        assert_eq!(found.pointer, "/0".repeat(10_000));
    }
}
