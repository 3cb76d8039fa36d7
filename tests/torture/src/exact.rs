//! JSON compared as a value, exactly: what the ledger holds a delivered
//! payload to against the partner's body.
//!
//! Numbers are compared by their exact decimal value, never through `f64`
//! (`123456789012345678901234567890` is not `123456789012345680000000000000`,
//! `1e20` is `100000000000000000000`, `1.50e1` is `15.0`, `-0` is `0`);
//! object keys in any order (the last of a repeated key counts, as in
//! jsonb and serde_json); whitespace ignored; strings compared after their
//! escapes are decoded. A small parser of its own: serde_json's numbers are
//! `f64` unless its `arbitrary_precision` feature is on, which would change
//! them for the whole workspace.

use std::collections::BTreeMap;

/// A JSON value whose numbers are exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(Decimal),
    String(String),
    Array(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

/// An exact decimal: `0.<digits> × 10^point`, `digits` without leading or
/// trailing zeros; zero is no digits, point 0, not negative (so `-0` is 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decimal {
    negative: bool,
    digits: String,
    point: i128,
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.digits.is_empty() {
            return f.write_str("0");
        }
        let sign = if self.negative { "-" } else { "" };
        // scientific, the first 40 digits: d.ddd…e±n
        let (first, rest) = self.digits.split_at(1);
        let shown: String = rest.chars().take(39).collect();
        let more = if shown.len() < rest.len() { "…" } else { "" };
        let point = if shown.is_empty() { "" } else { "." };
        write!(f, "{sign}{first}{point}{shown}{more}e{}", self.point - 1)
    }
}

/// Parses `text` as one JSON value (surrounding whitespace allowed).
pub(crate) fn parse(text: &[u8]) -> Result<Json, String> {
    let mut p = Parser { text, at: 0 };
    p.space();
    let value = p.value(0)?;
    p.space();
    if p.at != text.len() {
        return Err(format!("trailing bytes at {}", p.at));
    }
    Ok(value)
}

/// `Ok` when `delivered` and `sent` are the same JSON value exactly; else
/// where they first differ (a JSON pointer) and how.
pub(crate) fn same_json(delivered: &[u8], sent: &[u8]) -> Result<(), String> {
    let delivered = parse(delivered).map_err(|e| format!("the delivered payload: {e}"))?;
    let sent = parse(sent).map_err(|e| format!("the partner's body: {e}"))?;
    difference(&delivered, &sent, &mut String::new())
}

fn difference(a: &Json, b: &Json, at: &mut String) -> Result<(), String> {
    let differs = |a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
        Err(format!("at {:?}: delivered {a}, sent {b}", at.as_str()))
    };
    match (a, b) {
        (Json::Array(x), Json::Array(y)) => {
            if x.len() != y.len() {
                return differs(&format!("{} items", x.len()), &format!("{} items", y.len()));
            }
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                difference(x, y, at)?;
                at.truncate(len);
            }
            Ok(())
        }
        (Json::Object(x), Json::Object(y)) => {
            if let Some(k) = x.keys().find(|k| !y.contains_key(*k)) {
                return differs(&format!("key {k:?}"), &"no such key");
            }
            if let Some(k) = y.keys().find(|k| !x.contains_key(*k)) {
                return differs(&"no such key", &format!("key {k:?}"));
            }
            for (k, x) in x {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                difference(x, &y[k], at)?;
                at.truncate(len);
            }
            Ok(())
        }
        (Json::Number(x), Json::Number(y)) if x != y => differs(x, y),
        (Json::String(x), Json::String(y)) if x != y => {
            let show = |s: &str| format!("{:?}", s.chars().take(60).collect::<String>());
            differs(&show(x), &show(y))
        }
        (x, y) if x == y => Ok(()),
        (x, y) => differs(&kind(x), &kind(y)),
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at {}", byte as char, self.at))
        }
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.text[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(format!("unexpected byte at {}", self.at))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 512 {
            return Err("nested too deep".into());
        }
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut map = BTreeMap::new();
                self.space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Json::Object(map));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    self.space();
                    self.expect(b':')?;
                    self.space();
                    let value = self.value(depth + 1)?;
                    map.insert(key, value);
                    self.space();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Json::Object(map));
                        }
                        _ => return Err(format!("expected ',' or '}}' at {}", self.at)),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    self.space();
                    items.push(self.value(depth + 1)?);
                    self.space();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Json::Array(items));
                        }
                        _ => return Err(format!("expected ',' or ']' at {}", self.at)),
                    }
                }
            }
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number().map(Json::Number),
            _ => Err(format!("unexpected byte at {}", self.at)),
        }
    }

    fn digits(&mut self) -> &[u8] {
        let from = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        &self.text[from..self.at]
    }

    fn number(&mut self) -> Result<Decimal, String> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let int = self.digits().to_vec();
        if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
            return Err(format!("a malformed number at {start}"));
        }
        let mut frac = Vec::new();
        if self.peek() == Some(b'.') {
            self.at += 1;
            frac = self.digits().to_vec();
            if frac.is_empty() {
                return Err(format!("a malformed number at {start}"));
            }
        }
        let mut exponent: i128 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let minus = self.peek() == Some(b'-');
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let digits = self.digits();
            if digits.is_empty() || digits.len() > 30 {
                return Err(format!("a malformed or unbounded exponent at {start}"));
            }
            let magnitude: i128 = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| format!("an exponent out of range at {start}"))?;
            exponent = if minus { -magnitude } else { magnitude };
        }
        // 0.<int frac> × 10^(len(int) + exponent), then the zeros stripped
        let mut all: Vec<u8> = int.iter().chain(frac.iter()).copied().collect();
        let mut point = int.len() as i128 + exponent;
        let leading = all.iter().take_while(|d| **d == b'0').count();
        all.drain(..leading);
        point -= leading as i128;
        while all.last() == Some(&b'0') {
            all.pop();
        }
        if all.is_empty() {
            return Ok(Decimal {
                negative: false,
                digits: String::new(),
                point: 0,
            });
        }
        Ok(Decimal {
            negative,
            digits: String::from_utf8(all).unwrap_or_default(),
            point,
        })
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let hex = self
            .text
            .get(self.at..self.at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("a malformed \\u escape at {}", self.at))?;
        self.at += 4;
        Ok(hex)
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err("an unterminated string".into());
            };
            self.at += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(escaped) = self.peek() else {
                        return Err("an unterminated escape".into());
                    };
                    self.at += 1;
                    let c = match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let first = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&first)
                                && self.text[self.at..].starts_with(b"\\u")
                            {
                                self.at += 2;
                                let second = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&second) {
                                    return Err(format!("a lone surrogate before {}", self.at));
                                }
                                0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
                            } else {
                                first
                            };
                            char::from_u32(code)
                                .ok_or_else(|| format!("a lone surrogate before {}", self.at))?
                        }
                        _ => return Err(format!("a malformed escape at {}", self.at)),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0x00..=0x1f => return Err(format!("a control byte in a string at {}", self.at)),
                _ => out.push(byte),
            }
        }
        String::from_utf8(out).map_err(|_| "a string that is not UTF-8".into())
    }
}

#[cfg(test)]
mod tests {
    use super::same_json;

    fn same(a: &str, b: &str) -> bool {
        same_json(a.as_bytes(), b.as_bytes()).is_ok()
    }

    #[test]
    fn a_rounded_number_differs_and_notations_of_one_value_are_equal() {
        // what f64 would make of it: the ledger must see the difference
        assert!(!same(
            "123456789012345678901234567890",
            "123456789012345680000000000000"
        ));
        let Err(why) = same_json(
            br#"{"n": [1, 123456789012345680000000000000]}"#,
            br#"{"n":[1,123456789012345678901234567890]}"#,
        ) else {
            panic!("a rounded number compared equal");
        };
        assert!(why.contains("/n/1"), "{why}");
        assert!(
            why.contains("1.2345678901234568e29")
                && why.contains("1.2345678901234567890123456789e29"),
            "{why}"
        );
        // jsonb's plain notation of the partner's numbers
        assert!(same("1e20", "100000000000000000000"));
        assert!(same("1E+20", "100000000000000000000"));
        assert!(same("1.50e1", "15.0"));
        assert!(same("15", "15.0"));
        assert!(same("-0", "0"));
        assert!(same("-0.0", "0"));
        assert!(same("1e-7", "0.0000001"));
        assert!(same("0.123456789012345678", "1.23456789012345678e-1"));
        assert!(same("1e300", &format!("1{}", "0".repeat(300))));
        assert!(!same("1e300", &format!("1{}1", "0".repeat(299))));
        assert!(!same("0.123456789012345678", "0.12345678901234568"));
        assert!(!same("1e-20000", "0"));
        assert!(same("1e-20000", "0.1e-19999"));
        assert!(!same("1", "-1"));
        assert!(!same("1", "\"1\""));
    }

    #[test]
    fn key_order_and_whitespace_do_not_count_and_the_rest_does() {
        assert!(same(
            r#"{"b":[true,false,null],"a":{"x":"é"}}"#,
            "{ \"a\": {\"x\": \"\\u00e9\"}, \"b\": [true, false, null] }\n"
        ));
        assert!(same(r#""\ud83d\ude00""#, "\"\u{1f600}\""));
        assert!(!same("[1,2]", "[2,1]"));
        assert!(!same(r#"{"a":1}"#, r#"{"a":1,"b":2}"#));
        assert!(!same(r#"{"a":"x "}"#, r#"{"a":"x"}"#));
        assert!(same_json(b"{\"a\":1", b"{\"a\":1}").is_err());
        assert!(same_json(br#""\ud800""#, br#""\ud800""#).is_err());
    }
}
