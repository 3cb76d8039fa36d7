//! A header value's lines: where a comma in a value joined from repeated
//! lines starts another line, by the header's [`CommaRule`] (which header
//! has which rule is `joined.rs`'s table, from the preset registry), and
//! the optional whitespace around a value.

/// Where a comma in a header's value starts another line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommaRule {
    /// One line never holds a comma: every comma starts a line.
    EveryComma,
    /// Space-separated `version,signature` entries (Standard Webhooks): a
    /// comma after an entry's first comma starts a line.
    VersionedEntries,
    /// `key=value` items with one item of this key per line (the signed
    /// timestamp): an item with it starts a line when the line holds one
    /// already.
    KeyedItems(&'static str),
    /// `<timestamp>,<signature>,…` (Recurly): each further item of 10 to
    /// 19 digits (a timestamp) starts a line.
    LeadingTimestamp,
    /// A list whose lines joined are itself: the value is one line.
    Whole,
}

/// The lines of a value (trimmed) of a header whose rule is `rule`, as the
/// partner sent them before they were joined with commas.
pub fn split_with(rule: CommaRule, value: &str) -> Vec<&str> {
    if rule == CommaRule::EveryComma {
        return value.split(',').map(trim_ows).collect();
    }
    let value = one_copy(value);
    let bytes = value.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    match rule {
        CommaRule::Whole | CommaRule::EveryComma => {}
        CommaRule::VersionedEntries => {
            let mut commas = 0;
            for (i, b) in bytes.iter().enumerate() {
                match b {
                    b' ' | b'\t' => commas = 0,
                    b',' if commas > 0 => {
                        lines.push(trim_ows(&value[start..i]));
                        start = i + 1;
                        commas = 0;
                    }
                    b',' => commas += 1,
                    _ => {}
                }
            }
        }
        CommaRule::KeyedItems(_) | CommaRule::LeadingTimestamp => {
            let starts_line = |item: &str| match rule {
                CommaRule::KeyedItems(key) => item
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('=')),
                _ => (10..=19).contains(&item.len()) && item.bytes().all(|b| b.is_ascii_digit()),
            };
            // whether the current line holds its timestamp item already
            let mut stamped = false;
            let mut item_start = 0;
            for end in bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b',')
                .map(|(i, _)| i)
                .chain([bytes.len()])
            {
                if starts_line(trim_ows(&value[item_start..end])) {
                    if stamped {
                        lines.push(trim_ows(&value[start..item_start - 1]));
                        start = item_start;
                    }
                    stamped = true;
                }
                item_start = end + 1;
            }
        }
    }
    lines.push(trim_ows(&value[start..]));
    lines
}

/// `value` without its repetition: the first of k ≥ 2 identical
/// comma-separated copies (items compared trimmed), else `value`.
fn one_copy(value: &str) -> &str {
    let items: Vec<(usize, &str)> = value
        .split(',')
        .scan(0, |at, item| {
            let start = *at;
            *at += item.len() + 1;
            Some((start, trim_ows(item)))
        })
        .collect();
    let n = items.len();
    for size in (1..n).filter(|size| n.is_multiple_of(*size)) {
        let first = &items[..size];
        if items
            .chunks(size)
            .all(|group| group.iter().zip(first).all(|(a, b)| a.1 == b.1))
        {
            let end = items[size].0 - 1;
            return trim_ows(&value[..end]);
        }
    }
    value
}

/// A value of a header whose rule is `rule` read whole: its line when
/// every line is the same, else the value as joined (trimmed).
pub fn whole_with(rule: CommaRule, value: &str) -> &str {
    let lines = split_with(rule, value);
    match lines.split_first() {
        Some((first, rest)) if rest.iter().all(|l| l == first) => first,
        _ => trim_ows(value),
    }
}

/// The value without RFC 9110's optional whitespace (spaces and tabs) at
/// either end.
pub fn trim_ows(value: &str) -> &str {
    let is_ows = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    let bytes = value.as_bytes();
    if is_ows(bytes.first()) || is_ows(bytes.last()) {
        value.trim_matches([' ', '\t'])
    } else {
        value
    }
}
