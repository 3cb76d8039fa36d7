//! Fields of a JSON document read by JSON pointer in one pass, without
//! building the document: what recipes that read their timestamp or
//! signature inside the body (Linear, Mailgun) and the JWS claims need.
//!
//! The result is the one `serde_json::from_slice::<Value>` followed by
//! `Value::pointer` gives, for every input: the same documents are refused
//! (the parts not read go through the same `serde_json` parser, strings
//! and numbers checked as `Value` checks them, only not stored), a key
//! repeated in an object takes its last value, and the value found is a
//! `Value`. What is saved is building and freeing the whole document: at
//! 64 KiB of JSON that cost more than the HMAC over it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Most pointers one call reads.
pub(crate) const MAX_POINTERS: usize = 64;

/// The document is not JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotJson;

/// Reads the values at `pointers` (JSON pointers, RFC 6901) in
/// `document` into `out` (same positions; `None` where the pointer finds
/// nothing). Returns whether the document is a JSON object.
///
/// At most [`MAX_POINTERS`] pointers, and `out` at least as long as
/// `pointers`.
pub(crate) fn read(
    document: &[u8],
    pointers: &[&str],
    out: &mut [Option<Value>],
) -> Result<bool, NotJson> {
    let pointers = &pointers[..pointers.len().min(MAX_POINTERS).min(out.len())];
    for slot in out.iter_mut() {
        *slot = None;
    }
    if pointers.iter().any(|p| !p.starts_with('/')) {
        // The whole document (`""`) or not a pointer: as `Value` does it.
        let value: Value = serde_json::from_slice(document).map_err(|_| NotJson)?;
        for (slot, pointer) in out.iter_mut().zip(pointers) {
            *slot = value.pointer(pointer).cloned();
        }
        return Ok(value.is_object());
    }
    let mut deserializer = serde_json::Deserializer::from_slice(document);
    let walk = Walk {
        pointers,
        active: all(pointers.len()),
        depth: 0,
        out,
    };
    let object = walk.deserialize(&mut deserializer).map_err(|_| NotJson)?;
    deserializer.end().map_err(|_| NotJson)?;
    Ok(object)
}

/// The bits of the first `n` pointers.
fn all(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The indices of the bits set in `set`.
fn bits(mut set: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if set == 0 {
            return None;
        }
        let i = set.trailing_zeros() as usize;
        set &= set - 1;
        Some(i)
    })
}

/// The reference token of `pointer` at `depth` (escaped), if it has one:
/// `pointer[1..].split('/').nth(depth)`, the slashes found byte by byte
/// (this runs for every key of the document).
fn token(pointer: &str, depth: usize) -> Option<&str> {
    let slash = |text: &str| text.bytes().position(|b| b == b'/');
    let mut rest = pointer.get(1..)?;
    for _ in 0..depth {
        rest = rest.get(slash(rest)? + 1..)?;
    }
    match slash(rest) {
        Some(end) => rest.get(..end),
        None => Some(rest),
    }
}

/// True when `pointer` has exactly `depth + 1` tokens.
fn ends_at(pointer: &str, depth: usize) -> bool {
    pointer.bytes().filter(|&b| b == b'/').count() == depth + 1
}

/// What is left of `pointer` after its first `tokens` tokens (a pointer).
fn rest(pointer: &str, tokens: usize) -> &str {
    match pointer.match_indices('/').nth(tokens) {
        Some((at, _)) => &pointer[at..],
        None => "",
    }
}

/// An object key equals a reference token (`~1` is `/`, `~0` is `~`, as
/// `Value::pointer` unescapes them).
fn key_matches(token: &str, key: &str) -> bool {
    if token.contains('~') {
        token.replace("~1", "/").replace("~0", "~") == key
    } else {
        token == key
    }
}

/// An array index as `Value::pointer` reads it: digits, no `+`, no
/// leading zero.
fn index_of(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// One level of the document, with the pointers that lead through it.
struct Walk<'p, 'o> {
    pointers: &'p [&'p str],
    /// Bit `i`: pointer `i` matches the path down to this level.
    active: u64,
    /// Tokens matched so far.
    depth: usize,
    out: &'o mut [Option<Value>],
}

impl Walk<'_, '_> {
    /// The active pointers whose token at this depth names this member
    /// (`matches`): those that end here, and those that go deeper.
    fn split(&self, matches: impl Fn(&str) -> bool) -> (u64, u64) {
        let (mut ending, mut deeper) = (0, 0);
        for i in bits(self.active) {
            let pointer = self.pointers[i];
            if token(pointer, self.depth).is_some_and(&matches) {
                if ends_at(pointer, self.depth) {
                    ending |= 1 << i;
                } else {
                    deeper |= 1 << i;
                }
            }
        }
        (ending, deeper)
    }

    /// Stores `value` for the pointers that end at it, and what the
    /// deeper ones find inside it.
    fn store(&mut self, value: Value, ending: u64, deeper: u64) {
        for i in bits(deeper) {
            let inside = rest(self.pointers[i], self.depth + 1);
            self.out[i] = value.pointer(inside).cloned();
        }
        let last = 63 - ending.leading_zeros() as usize;
        let mut value = Some(value);
        for i in bits(ending) {
            self.out[i] = if i == last {
                value.take()
            } else {
                value.clone()
            };
        }
    }

    /// A level below, for the pointers in `deeper` (whose values found
    /// so far, under an earlier occurrence of the same key, are dropped:
    /// the last occurrence counts, as in `Value`).
    fn below(&mut self, deeper: u64) -> Walk<'_, '_> {
        for i in bits(deeper) {
            self.out[i] = None;
        }
        Walk {
            pointers: self.pointers,
            active: deeper,
            depth: self.depth + 1,
            out: self.out,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    /// Whether the value was an object.
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<bool, A::Error> {
        while let Some(Key(key)) = map.next_key()? {
            let (ending, deeper) = self.split(|token| key_matches(token, &key));
            if ending != 0 {
                let value: Value = map.next_value()?;
                self.store(value, ending, deeper);
            } else if deeper != 0 {
                map.next_value_seed(self.below(deeper))?;
            } else {
                map.next_value_seed(Skip)?;
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<bool, A::Error> {
        let mut index = 0usize;
        loop {
            let (ending, deeper) = self.split(|token| index_of(token) == Some(index));
            let more = if ending != 0 {
                match seq.next_element::<Value>()? {
                    Some(value) => {
                        self.store(value, ending, deeper);
                        true
                    }
                    None => false,
                }
            } else if deeper != 0 {
                seq.next_element_seed(self.below(deeper))?.is_some()
            } else {
                seq.next_element_seed(Skip)?.is_some()
            };
            if !more {
                return Ok(false);
            }
            index += 1;
        }
    }
}

/// An object key, borrowed from the document unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(key)))
    }

    fn visit_str<E>(self, key: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(key.to_owned())))
    }
}

/// A value not read: parsed as `Value` would parse it (strings and
/// numbers checked the same way), nothing kept.
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Value` finds: the reference.
    fn reference(
        document: &[u8],
        pointers: &[&str],
    ) -> Result<(bool, Vec<Option<Value>>), NotJson> {
        let value: Value = serde_json::from_slice(document).map_err(|_| NotJson)?;
        Ok((
            value.is_object(),
            pointers.iter().map(|p| value.pointer(p).cloned()).collect(),
        ))
    }

    fn ours(document: &[u8], pointers: &[&str]) -> Result<(bool, Vec<Option<Value>>), NotJson> {
        let mut out = vec![None; pointers.len()];
        let object = read(document, pointers, &mut out)?;
        Ok((object, out))
    }

    const POINTERS: &[&str] = &[
        "/a",
        "/a/b",
        "/a/b/0",
        "/c/1",
        "/c/01",
        "/c/+1",
        "/m~1n",
        "/m~0n",
        "/~01",
        "/",
        "/d/e/f",
        "",
        "x",
        "/signature/timestamp",
        "/signature/token",
        "/webhookTimestamp",
    ];

    #[test]
    fn agrees_with_value_pointer_on_examples() {
        let documents: &[&str] = &[
            r#"{"a":{"b":[1,2]},"c":[0,{"x":1},2],"m/n":"s","m~n":1.5,"~1":true,"":null}"#,
            r#"{"a":1,"a":{"b":[3]}}"#,
            r#"{"a":{"b":[3]},"a":2}"#,
            r#"{"a":{"b":1,"c":2},"a":{"c":3}}"#,
            r#"{"d":{"e":{"f":"deep"}},"d":{"e":{"g":1}}}"#,
            r#"{"signature":{"timestamp":"1529006854","token":"a8ce","signature":"d2"},"event-data":{}}"#,
            r#"{"id":"x","webhookTimestamp":1676056940508,"data":{"k":[1,2,{"z":"\u00e9"}]}}"#,
            r#"{"webhookTimestamp":1.5e3}"#,
            r#"[{"a":1},[2]]"#,
            r#""text""#,
            "12",
            "null",
            " { } ",
            r#"{"esc\"aped":1,"a\u0062":2}"#,
            // Refused by `Value`, so by us.
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            r#"{"a":"\ud800"}"#,
            r#"{"x":"\ud800","a":1}"#,
            r#"{"x":1e400,"a":1}"#,
            "{\"x\":\"\u{1}\"}",
            r#"{"x":[1,],"a":1}"#,
            "",
        ];
        for document in documents {
            for pointers in [POINTERS, &POINTERS[..3], &["/webhookTimestamp"], &["/a"]] {
                assert_eq!(
                    ours(document.as_bytes(), pointers),
                    reference(document.as_bytes(), pointers),
                    "{document} {pointers:?}"
                );
            }
        }
        // Not UTF-8 inside a string that is not read.
        let bytes = b"{\"x\":\"\xff\",\"a\":1}";
        assert_eq!(ours(bytes, &["/a"]), Err(NotJson));
        assert_eq!(reference(bytes, &["/a"]), Err(NotJson));
    }

    #[test]
    fn deep_nesting_is_refused_like_value() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(ours(deep.as_bytes(), &["/0"]), Err(NotJson));
        assert_eq!(reference(deep.as_bytes(), &["/0"]), Err(NotJson));
    }

    proptest::proptest! {
        /// Random documents (small alphabets, so keys repeat and pointers
        /// hit) and random pointers: the same as `Value::pointer`.
        #[test]
        fn agrees_with_value_pointer(
            document in r#"[\[\]{}":,0-9a-c ~/\\.e-]{0,40}"#,
            shaped in proptest::collection::vec(("[a-c]", "[a-c0-2]", 0..3usize), 1..4),
            pointers in proptest::collection::vec("(/[a-c0-2~]{0,2}){0,3}", 1..5),
        ) {
            let mut pointers: Vec<String> = pointers;
            // Valid shaped documents too, with repeated keys.
            let object = shaped
                .iter()
                .map(|(k, v, n)| match n {
                    0 => format!(r#""{k}":{{"{v}":[1,"{v}"]}}"#),
                    1 => format!(r#""{k}":["{v}",{{"{k}":2}}]"#),
                    _ => format!(r#""{k}":"{v}""#),
                })
                .collect::<Vec<_>>()
                .join(",");
            pointers.push("/a/b".to_owned());
            let refs: Vec<&str> = pointers.iter().map(String::as_str).collect();
            for text in [document, format!("{{{object}}}")] {
                proptest::prop_assert_eq!(
                    ours(text.as_bytes(), &refs),
                    reference(text.as_bytes(), &refs),
                    "{} {:?}", text, refs
                );
            }
        }
    }
}
