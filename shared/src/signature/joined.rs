//! Header values joined from repeated lines with commas, and split back.
//!
//! API Gateway's HTTP API (payload format 2.0) hands a header that the
//! partner sent on several lines to its functions as ONE value, the lines
//! joined with `,`; REST (payload format 1.0) hands every line over
//! (`multiValueHeaders`). So that the same lines get the same answer,
//! [`Headers::from_joined`](super::Headers::from_joined) splits HTTP API's
//! value back into its lines ([`split_lines`]) wherever a check needs one
//! value (signature headers, their timestamps and ids, the event id and
//! type headers), while REST's lines are read one by one, each whole
//! ([`visible_header_lines`], a list header's lines joined into the list).
//! Lines that differ are then refused as "repeated with different
//! values" on both. The one answer that differs: a single line holding a
//! comma in a header whose syntax has none (an id `evt-1,000`) is one value
//! through REST, and through HTTP API cannot be told from two lines.
//!
//! A comma is a line boundary unless the header's own syntax uses commas.
//! The rule, by header name (the names come from the preset registry, so
//! a new preset brings its own):
//!
//! 1. A value made of k ≥ 2 identical comma-separated copies is one line
//!    (the same header sent twice with the same value, which REST always
//!    took as one).
//! 2. Then, per [`CommaRule`]:
//!    - `webhook-signature`, `svix-signature` (Standard Webhooks:
//!      space-separated `version,signature` entries; neither part holds a
//!      comma) and the presets with that layout (a signature prefix such as
//!      Finch's `v1,`): a comma after an entry's first comma starts a new
//!      line;
//!    - `Stripe-Signature` and the presets with its layout (`key=value`
//!      items, the signed timestamp in one item: Stripe's `t`,
//!      Buildkite's `timestamp`, Retell's `v`): each further item with the
//!      timestamp's key starts a new line (one timestamp per line: a
//!      line that holds one already ends before the next);
//!    - `recurly-signature` (`<ms>,<sig>,<sig>`): each further item of
//!      10 to 19 digits (a timestamp; a signature is 64 hex digits)
//!      starts a new line;
//!    - the lists of signatures without a timestamp (PagerDuty's
//!      `X-PagerDuty-Signature`, CircleCI's `circleci-signature`:
//!      `v1=…,v1=…`) and the token headers: never. The value is one line:
//!      a list sent on two lines means the list joined (RFC 9110, 5.3), so
//!      two lines of it are read as one value on both ingresses;
//!    - every other header: every comma.
//! 3. Read whole (stored headers, a handshake's echo), a value is the one
//!    line when all its lines are the same, else the value as joined.

use std::sync::LazyLock;

use super::headers::{drop_unusable_headers, is_usable_header_value};
use super::lines;
pub use super::lines::CommaRule;
use super::presets;
use super::recipe::{Recipe, SignatureAt, Signed, TimestampSource};

/// The header names whose syntax uses commas, with their rule: the
/// hand-written schemes', then the registry's.
static RULES: LazyLock<Vec<(&'static str, CommaRule)>> = LazyLock::new(rules);

fn rules() -> Vec<(&'static str, CommaRule)> {
    let mut rules = vec![
        ("webhook-signature", CommaRule::VersionedEntries),
        ("svix-signature", CommaRule::VersionedEntries),
        ("Stripe-Signature", CommaRule::KeyedItems("t")),
    ];
    for preset in presets::all() {
        match preset.recipe {
            Recipe::Signed(Signed {
                signature:
                    SignatureAt::Headers {
                        names,
                        prefixes,
                        separator,
                    },
                timestamp,
                ..
            }) => {
                let rule = match separator {
                    Some(',') => match timestamp.map(|t| t.source) {
                        Some(TimestampSource::SignatureItem(key)) => CommaRule::KeyedItems(key),
                        Some(TimestampSource::FirstSignatureItem) => CommaRule::LeadingTimestamp,
                        _ => CommaRule::Whole,
                    },
                    // `v1,<sig>` entries (Finch): Standard Webhooks' layout
                    _ if prefixes.iter().any(|p| p.contains(',')) => match separator {
                        None | Some(' ') => CommaRule::VersionedEntries,
                        Some(_) => CommaRule::Whole,
                    },
                    _ => continue,
                };
                rules.extend(names.iter().map(|name| (*name, rule)));
            }
            Recipe::Token { header } => rules.push((header, CommaRule::Whole)),
            _ => {}
        }
    }
    rules
}

/// The rule of header `name` (any case).
pub fn comma_rule(name: &str) -> CommaRule {
    RULES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map_or(CommaRule::EveryComma, |(_, rule)| *rule)
}

/// Every header name the registry gives a rule other than
/// [`CommaRule::EveryComma`], with it (the docs and tests list them).
pub fn comma_rules() -> &'static [(&'static str, CommaRule)] {
    &RULES
}

/// The lines of a value of header `name` (trimmed), as the partner sent
/// them before they were joined with commas.
pub fn split_lines<'a>(name: &str, value: &'a str) -> Vec<&'a str> {
    lines::split_with(comma_rule(name), value)
}

/// The value of header `name` read whole: its line when every line is the
/// same, else the value as joined (trimmed).
pub fn whole<'a>(name: &str, value: &'a str) -> &'a str {
    lines::whole_with(comma_rule(name), value)
}

/// Header lines, as an edge received them, joined per name (ASCII case
/// ignored, the first spelling kept, in order of first appearance) with
/// `,`: the value HTTP API would have handed over, for
/// [`Headers::from_joined`](super::Headers::from_joined).
pub fn join_lines<'a>(
    lines: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    let mut joined: Vec<(String, String)> = Vec::new();
    for (name, value) in lines {
        match joined
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some((_, existing)) => {
                existing.push(',');
                existing.push_str(value);
            }
            None => joined.push((name.to_owned(), value.to_owned())),
        }
    }
    joined
}

/// Header lines one per entry (REST's `headers` and `multiValueHeaders`)
/// as [`Headers::from_pairs`](super::Headers::from_pairs) takes them: each
/// line once and whole (a comma in a line is part of it), the lines that
/// are not visible ASCII left out (no reader takes them), and the lines of
/// a list header ([`CommaRule::Whole`]: RFC 9110, 5.3) joined with `,`
/// into the one list they mean, as HTTP API hands it over.
pub fn visible_header_lines<'a>(
    lines: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = Vec::new();
    for (name, value) in lines {
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        if !is_visible_line(value) || kept.iter().any(|(n, v)| n == name && v == value) {
            continue;
        }
        let list = comma_rule(name) == CommaRule::Whole;
        match kept.iter_mut().find(|(n, _)| list && n == name) {
            Some((_, joined)) => {
                joined.push(',');
                joined.push_str(value);
            }
            None => kept.push((name.to_owned(), value.to_owned())),
        }
    }
    kept
}

/// Header values that are lines joined already (HTTP API's `headers`):
/// of each, the lines that are visible ASCII ([`visible_lines`]), joined
/// per name ([`join_lines`]).
pub fn join_visible_values<'a>(
    values: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> Vec<(String, String)> {
    let kept: Vec<(&str, String)> = values
        .into_iter()
        .filter_map(|(name, value)| {
            let text = std::str::from_utf8(value)
                .ok()
                .filter(|text| is_visible_line(text));
            match text {
                Some(text) => Some((name, text.to_owned())),
                None => visible_lines(name, value).map(|kept| (name, kept)),
            }
        })
        .collect();
    join_lines(kept.iter().map(|(n, v)| (*n, v.as_str())))
}

/// True for a line every header reader takes: tab and visible ASCII
/// (what `http::HeaderValue::to_str` accepts).
pub fn is_visible_line(line: &str) -> bool {
    line.bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// The lines of a joined value of header `name` that are visible ASCII,
/// joined again; `None` when none is. A line that is not (bytes that are
/// not UTF-8, U+0000) is dropped, as it is when it comes on a line of its
/// own: REST's readers skip it, so HTTP API's must not lose the other
/// lines it was joined with.
pub fn visible_lines(name: &str, value: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(value);
    let kept: Vec<&str> = split_lines(name, &text)
        .into_iter()
        .filter(|line| is_visible_line(line))
        .collect();
    (!kept.is_empty()).then(|| kept.join(","))
}

/// [`drop_unusable_headers`](super::drop_unusable_headers) for an event
/// whose `headers` hold joined values (HTTP API): a value the `http` crate
/// refuses keeps the lines it takes, since the lines it was joined with
/// would have been taken on their own. Returns the names of the headers
/// that lost a line or their value (never the values).
pub fn drop_unusable_lines(event: &mut serde_json::Value) -> Vec<String> {
    let mut cut = Vec::new();
    if let Some(map) = event
        .get_mut("headers")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, value) in map.iter_mut() {
            let kept = match value.as_str() {
                Some(text) if !is_usable_header_value(text) => split_lines(name, text)
                    .into_iter()
                    .filter(|line| is_usable_header_value(line))
                    .collect::<Vec<_>>()
                    .join(","),
                _ => continue,
            };
            cut.push(name.clone());
            if !kept.is_empty() {
                *value = serde_json::Value::String(kept);
            }
        }
    }
    let mut dropped = drop_unusable_headers(event);
    dropped.extend(cut);
    dropped.sort();
    dropped.dedup();
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_without_commas_in_its_syntax_splits_at_every_comma() {
        assert_eq!(
            split_lines("X-Hub-Signature-256", "sha256=ab, sha256=cd"),
            ["sha256=ab", "sha256=cd"]
        );
        assert_eq!(split_lines("webhook-id", "msg_1"), ["msg_1"]);
        assert_eq!(split_lines("webhook-id", "a,a,a"), ["a", "a", "a"]);
        assert_eq!(split_lines("x-anything", ""), [""]);
        assert_eq!(split_lines("x-anything", "a,"), ["a", ""]);
    }

    #[test]
    fn standard_webhooks_entries_keep_their_own_comma() {
        let one = "v1,AAAA v1a,BBBB v2,CC";
        assert_eq!(split_lines("webhook-signature", one), [one]);
        assert_eq!(
            split_lines("Webhook-Signature", "v1,AAAA,v1,BBBB"),
            ["v1,AAAA", "v1,BBBB"]
        );
        assert_eq!(
            split_lines("svix-signature", "v1,A v1,B,v1,C, v1,D"),
            ["v1,A v1,B", "v1,C", "v1,D"]
        );
        assert_eq!(split_lines("webhook-signature", "v1,A,v1,A"), ["v1,A"]);
        assert_eq!(split_lines("webhook-signature", ",AAAA"), [",AAAA"]);
        assert_eq!(split_lines("webhook-signature", "v1,"), ["v1,"]);
    }

    #[test]
    fn a_keyed_list_starts_a_line_at_each_further_timestamp_item() {
        let one = "t=1,v1=ab,v1=cd,v0=ef";
        assert_eq!(split_lines("stripe-signature", one), [one]);
        assert_eq!(
            split_lines("Stripe-Signature", "t=1,v1=ab,t=2,v1=cd"),
            ["t=1,v1=ab", "t=2,v1=cd"]
        );
        // the same line twice is one line
        assert_eq!(
            split_lines("Stripe-Signature", "t=1,v1=ab, t=1,v1=ab"),
            ["t=1,v1=ab"]
        );
        // a timestamp item later in the line: still one timestamp per line
        assert_eq!(
            split_lines("Stripe-Signature", "v1=ab,t=1,v1=cd,t=2"),
            ["v1=ab,t=1,v1=cd", "t=2"]
        );
        assert_eq!(
            split_lines("Stripe-Signature", "v1=ab,t=1,v1=ab,t=1"),
            ["v1=ab,t=1"]
        );
        // `v1=` is not the key `v`
        assert_eq!(comma_rule("x-retell-signature"), CommaRule::KeyedItems("v"));
        assert_eq!(
            split_lines(
                "x-retell-signature",
                "v=1700000000000,d=ab,v=1700000000001,d=cd"
            ),
            ["v=1700000000000,d=ab", "v=1700000000001,d=cd"]
        );
    }

    #[test]
    fn recurly_starts_a_line_at_each_further_timestamp() {
        assert_eq!(comma_rule("Recurly-Signature"), CommaRule::LeadingTimestamp);
        let digits = "0123456789".repeat(6) + "0123";
        let one = format!("1700000000000,{digits},{}", "ab".repeat(32));
        assert_eq!(split_lines("recurly-signature", &one), [one.as_str()]);
        assert_eq!(
            split_lines(
                "recurly-signature",
                "1700000000000,abcdef,1700000000001,fedcba"
            ),
            ["1700000000000,abcdef", "1700000000001,fedcba"]
        );
    }

    #[test]
    fn a_list_of_signatures_or_a_token_is_one_line() {
        assert_eq!(comma_rule("X-PagerDuty-Signature"), CommaRule::Whole);
        assert_eq!(comma_rule("circleci-signature"), CommaRule::Whole);
        assert_eq!(
            split_lines("x-pagerduty-signature", "v1=ab,v1=cd"),
            ["v1=ab,v1=cd"]
        );
        assert_eq!(
            split_lines("x-pagerduty-signature", "v1=ab, v1=ab"),
            ["v1=ab"]
        );
    }

    #[test]
    fn read_whole_a_value_is_its_line_when_all_lines_agree() {
        assert_eq!(whole("x-github-delivery", "abc,abc"), "abc");
        assert_eq!(whole("x-github-delivery", "abc, def"), "abc, def");
        assert_eq!(
            whole("user-agent", "Mozilla/5.0 (KHTML, like Gecko)"),
            "Mozilla/5.0 (KHTML, like Gecko)"
        );
    }

    #[test]
    fn lines_join_per_name_in_order() {
        let joined = join_lines([
            ("Webhook-Id", "a"),
            ("content-type", "application/json"),
            ("webhook-id", "b"),
        ]);
        assert_eq!(
            joined,
            [
                ("Webhook-Id".to_owned(), "a,b".to_owned()),
                ("content-type".to_owned(), "application/json".to_owned())
            ]
        );
    }

    #[test]
    fn lines_that_are_not_visible_ascii_are_dropped_alone() {
        assert_eq!(
            visible_lines("webhook-id", b"msg_1,\xff\xfe"),
            Some("msg_1".to_owned())
        );
        assert_eq!(visible_lines("webhook-id", b"\xff"), None);
        assert_eq!(visible_lines("user-agent", "é".as_bytes()), None);
        assert!(!is_visible_line("a\u{0}b"));
        assert!(is_visible_line("a\tb c"));
    }

    #[test]
    fn joined_headers_answer_as_their_lines_sent_apart() {
        use super::super::Headers;
        for (name, lines) in [
            ("webhook-id", &["a", "b"][..]),
            ("webhook-id", &["a", "a"][..]),
            ("webhook-signature", &["v1,AAAA", "v1,BBBB"][..]),
            (
                "webhook-signature",
                &["v1,AAAA v1,CCCC", "v1,AAAA v1,CCCC"][..],
            ),
            ("Stripe-Signature", &["t=1,v1=ab", "t=2,v1=ab"][..]),
            ("stripe-signature", &["t=1,v1=ab,v1=cd"][..]),
        ] {
            let apart = Headers::from_pairs(lines.iter().map(|l| (name, *l)));
            let joined = join_lines(lines.iter().map(|l| (name, *l)));
            let together = Headers::from_joined(
                joined.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                comma_rule,
            );
            assert_eq!(
                apart.unique(name),
                together.unique(name),
                "{name} {lines:?}"
            );
            assert_eq!(
                apart.unique_many([name]).is_ok(),
                together.unique_many([name]).is_ok(),
                "{name} {lines:?}"
            );
        }
        // a list sent on two lines is the list: one value
        let list = Headers::from_joined([("X-PagerDuty-Signature", "v1=ab,v1=cd")], comma_rule);
        assert_eq!(
            list.unique("x-pagerduty-signature"),
            Ok(Some("v1=ab,v1=cd"))
        );
        assert_eq!(list.get("x-pagerduty-signature"), Some("v1=ab,v1=cd"));
        let twice = Headers::from_joined([("x-github-delivery", "abc,abc")], comma_rule);
        assert_eq!(twice.get("X-GitHub-Delivery"), Some("abc"));
    }

    #[test]
    fn a_joined_value_loses_only_its_unusable_lines() {
        let mut event = serde_json::json!({"headers": {
            "webhook-id": "msg_1,a\u{0}b",
            "user-agent": "a\u{1}",
            "accept": "ok",
        }});
        let dropped = drop_unusable_lines(&mut event);
        assert_eq!(dropped, ["user-agent", "webhook-id"]);
        assert_eq!(
            event,
            serde_json::json!({"headers": {"webhook-id": "msg_1", "accept": "ok"}})
        );
    }

    #[test]
    fn rest_lines_are_kept_whole_and_http_values_lose_only_unreadable_lines() {
        use super::super::Headers;
        let rest = visible_header_lines([
            ("webhook-id", &b"b"[..]),
            ("webhook-id", b"a,c"),
            ("webhook-id", b"b"),
            ("user-agent", b"\xff"),
            ("accept", b"x"),
        ]);
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            rest,
            pairs(&[("webhook-id", "b"), ("webhook-id", "a,c"), ("accept", "x")])
        );
        let http = join_visible_values([
            ("webhook-id", &b"b,a,c"[..]),
            ("user-agent", b"\xff"),
            ("accept", b"x"),
        ]);
        assert_eq!(http, pairs(&[("webhook-id", "b,a,c"), ("accept", "x")]));
        assert_eq!(
            join_visible_values([("webhook-id", &b"msg_1,\xff"[..])]),
            pairs(&[("webhook-id", "msg_1")])
        );
        // one line holding a comma: one value through REST, two lines
        // through HTTP API
        let line = [("webhook-id", "a,c")];
        assert_eq!(
            Headers::from_pairs(line).unique("webhook-id"),
            Ok(Some("a,c"))
        );
        assert_eq!(
            Headers::from_joined(line, comma_rule).unique("webhook-id"),
            Err("repeated with different values")
        );
        // a list's lines are the list on both
        let list = visible_header_lines([
            ("x-pagerduty-signature", &b"v1=ab"[..]),
            ("x-pagerduty-signature", b"v1=cd"),
        ]);
        assert_eq!(list, pairs(&[("x-pagerduty-signature", "v1=ab,v1=cd")]));
    }

    #[test]
    fn every_name_has_one_rule() {
        for (i, (name, rule)) in comma_rules().iter().enumerate() {
            for (other, other_rule) in &comma_rules()[..i] {
                if name.eq_ignore_ascii_case(other) {
                    assert_eq!(rule, other_rule, "{name} has two rules");
                }
            }
        }
        assert!(comma_rules().len() >= 8, "{:?}", comma_rules());
        assert_eq!(comma_rule("finch-signature"), CommaRule::VersionedEntries);
    }
}
