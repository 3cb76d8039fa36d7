//! The bad-input corpus (`events/bad-input/corpus.json`, docs/bad-input.md)
//! as data: its cases, what each expects, its partners' signing secrets,
//! and each case as the request a partner sends (headers in order, the
//! body), signed at a given time. Shared by `tests/bad_input.rs` (the
//! events of both API Gateway ingresses, to the handlers) and the local
//! stack's corpus test (`tools/local/tests/corpus.rs`, over HTTP), which
//! includes this file by path.
#![allow(dead_code)]

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::Value;
use sha2::Sha256;

pub const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
/// The Host header a request gets when the case names none.
pub const HOST: &str = "abc123defg.execute-api.eu-west-1.amazonaws.com";

/// Bytes, written in the corpus as text, `{"base64"}`, `{"repeat", "count"}`
/// or `{"concat"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Spec {
    Text(String),
    Base64 { base64: String },
    Repeat { repeat: Box<Spec>, count: usize },
    Concat { concat: Vec<Spec> },
}

impl Spec {
    /// The bytes, with `{signature}` and `{timestamp}` replaced in text.
    pub fn render(&self, fill: &dyn Fn(&str) -> String) -> Vec<u8> {
        match self {
            Spec::Text(t) => fill(t).into_bytes(),
            Spec::Base64 { base64 } => STANDARD
                .decode(base64)
                .unwrap_or_else(|e| panic!("corpus: {base64:?} is not base64: {e}")),
            Spec::Repeat { repeat, count } => repeat.render(fill).repeat(*count),
            Spec::Concat { concat } => concat.iter().flat_map(|s| s.render(fill)).collect(),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.render(&|t| t.to_string())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.bytes()).unwrap_or_else(|_| panic!("corpus: {self:?} is not text"))
    }
}

/// One header value, or several (the header repeated).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum HeaderValues {
    Many(Vec<Spec>),
    One(Spec),
}

impl HeaderValues {
    pub fn specs(&self) -> Vec<&Spec> {
        match self {
            HeaderValues::Many(v) => v.iter().collect(),
            HeaderValues::One(s) => vec![s],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sign {
    StandardWebhooks,
    Github,
    None,
    Corrupt,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    /// API Gateway with the binary media type `*/*` (the SAM template).
    #[default]
    Binary,
    /// `isBase64Encoded: false`, the body as text (the events/ fixtures).
    Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventBody {
    pub body: String,
    pub is_base64_encoded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Verdict {
    Allow,
    Deny,
}

/// `Some(value)` when the field is present, even as `null`.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub authorizer: Verdict,
    pub status: u16,
    #[serde(default)]
    pub error: Option<String>,
    pub stored: bool,
    #[serde(default)]
    pub duplicate_of: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub event_id: Option<Option<Spec>>,
    #[serde(default, deserialize_with = "present")]
    pub event_type: Option<Option<Spec>>,
    #[serde(default, deserialize_with = "present")]
    pub ordering_key: Option<Option<Spec>>,
    /// Stored headers: a value, or `null` for "not kept".
    #[serde(default)]
    pub kept_headers: BTreeMap<String, Option<Spec>>,
    #[serde(default)]
    pub body_in_blob: Option<bool>,
    /// For a partner with routes, forwarded at ingest: the outbox rows the
    /// stored event's one statement wrote (the row `processed`, no queue
    /// message). `0` or absent: the row is `pending`, with no outbox row,
    /// and one queue message (left to the processor).
    #[serde(default)]
    pub forwarded: Option<u64>,
}

impl Expect {
    pub fn summary(&self) -> String {
        let mut s = format!("{:?} {}", self.authorizer, self.status);
        if let Some(e) = &self.error {
            s.push_str(&format!(" {e}"));
        }
        s.push_str(match (&self.duplicate_of, self.stored) {
            (Some(_), _) => " duplicate",
            (None, true) => " stored",
            (None, false) => " nothing stored",
        });
        match self.forwarded {
            Some(0) => s.push_str(", left to the processor"),
            Some(n) => s.push_str(&format!(", forwarded ({n})")),
            None => {}
        }
        s
    }

    /// Outbox rows the case writes (all of them at ingest).
    pub fn deliveries(&self) -> u64 {
        self.forwarded.unwrap_or(0)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub about: String,
    pub partner: Spec,
    pub headers: BTreeMap<String, Option<HeaderValues>>,
    #[serde(default)]
    pub body: Option<Spec>,
    #[serde(default)]
    body_base64: Option<String>,
    pub sign: Sign,
    #[serde(default)]
    pub timestamp_offset_secs: i64,
    #[serde(default)]
    pub delivery: Delivery,
    #[serde(default)]
    pub event_body: Option<EventBody>,
    #[serde(default)]
    pub source_ip: Option<String>,
    pub expect: Expect,
}

impl Case {
    pub fn body(&self) -> Vec<u8> {
        match (&self.body, &self.body_base64) {
            (Some(spec), None) => spec.bytes(),
            (None, Some(b64)) => STANDARD
                .decode(b64)
                .unwrap_or_else(|e| panic!("{}: body_base64: {e}", self.name)),
            (None, None) => Vec::new(),
            (Some(_), Some(_)) => panic!("{}: both body and body_base64", self.name),
        }
    }
}

pub fn corpus() -> Vec<Case> {
    let path = format!("{EVENTS}/bad-input/corpus.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases: Vec<Case> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut seen = std::collections::HashSet::new();
    for (i, c) in cases.iter().enumerate() {
        assert!(
            !c.name.is_empty()
                && c.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "case {i}: name {:?} is not snake_case",
            c.name
        );
        assert!(seen.insert(c.name.clone()), "case name {} twice", c.name);
        assert!(
            c.expect.forwarded.is_none() || (c.expect.stored && c.expect.duplicate_of.is_none()),
            "{}: forwarded is for a newly stored event",
            c.name
        );
        if let Some(of) = &c.expect.duplicate_of {
            assert!(
                cases[..i].iter().any(|earlier| &earlier.name == of),
                "{}: duplicate_of {of} is not an earlier case",
                c.name
            );
        }
    }
    cases
}

/// What the corpus signs with: each partner's scheme and first secret.
pub struct Partners(pub Value);

impl Partners {
    pub fn load() -> Self {
        let path = format!("{EVENTS}/bad-input/partners.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Partners(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}")))
    }

    /// Scheme and secret of `partner`; an unknown partner's requests are
    /// signed like demo's (a plausible request sent to the wrong path).
    pub fn signing(&self, partner: &str) -> (String, String) {
        let p = self.0["partners"]
            .get(partner)
            .unwrap_or(&self.0["partners"]["demo"]);
        // a preset partner (adyen: signed inside the body) by its preset
        let scheme = p["signature"]["scheme"]
            .as_str()
            .or(p["preset"].as_str())
            .expect("scheme or preset");
        let secret = p["secrets"][0].as_str().expect("secret");
        (scheme.to_string(), secret.to_string())
    }
}

// ---------------------------------------------------------------- the request

pub fn standard_webhooks_signature(
    secret: &str,
    id: &[u8],
    timestamp: &str,
    body: &[u8],
) -> String {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .expect("whsec_ secret");
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("key");
    mac.update(id);
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

pub fn github_signature(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The signature with its first MAC character changed (still well formed).
pub fn corrupt(signature: &str) -> String {
    let (prefix, mac) = signature
        .split_once([',', '='])
        .expect("a prefixed signature");
    let separator = &signature[prefix.len()..=prefix.len()];
    let mut chars: Vec<char> = mac.chars().collect();
    chars[0] = match chars[0] {
        'A' => 'B',
        '0' => '1',
        c if c.is_ascii_hexdigit() && prefix == "sha256" => '0',
        _ => 'A',
    };
    format!(
        "{prefix}{separator}{}",
        chars.into_iter().collect::<String>()
    )
}

pub fn trim_ows(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// One request as the partner sends it: header lines (name, bytes) in
/// order, and the body.
pub struct Request {
    pub partner: String,
    pub headers: Vec<(String, Vec<Vec<u8>>)>,
    pub body: Vec<u8>,
}

/// The request of `case`, signed at `now` plus the case's offset.
pub fn request(case: &Case, partners: &Partners, now: i64) -> Request {
    let partner = case.partner.text();
    let body = case.body();
    let timestamp_default = (now + case.timestamp_offset_secs).to_string();
    let find = |names: &[&str]| -> Option<&Option<HeaderValues>> {
        case.headers
            .iter()
            .find(|(n, _)| names.iter().any(|name| n.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v)
    };
    let first = |names: &[&str], fill: &dyn Fn(&str) -> String| -> Option<Vec<u8>> {
        find(names).and_then(Option::as_ref).and_then(|v| {
            v.specs()
                .first()
                .map(|s| trim_ows(&s.render(fill)).to_vec())
        })
    };
    let (scheme, secret) = partners.signing(&partner);
    let scheme = match case.sign {
        Sign::None => None,
        Sign::StandardWebhooks => Some("standard-webhooks".to_string()),
        Sign::Github => Some("github".to_string()),
        Sign::Corrupt => Some(scheme),
    };
    let timestamp_fill = |t: &str| t.replace("{timestamp}", &timestamp_default);
    let mut extra: Vec<(&str, &str)> = Vec::new();
    let signature = match scheme.as_deref() {
        None => None,
        Some("standard-webhooks") => {
            // The svix-* names only when the request has a svix-signature and
            // no webhook-signature (as the verifier reads them).
            let svix =
                find(&["svix-signature"]).is_some() && find(&["webhook-signature"]).is_none();
            let [id_name, timestamp_name, signature_name] = if svix {
                ["svix-id", "svix-timestamp", "svix-signature"]
            } else {
                ["webhook-id", "webhook-timestamp", "webhook-signature"]
            };
            let id = first(&[id_name], &timestamp_fill).unwrap_or_default();
            let timestamp = first(&[timestamp_name], &timestamp_fill)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_else(|| timestamp_default.clone());
            if find(&[timestamp_name]).is_none() {
                extra.push((timestamp_name, "{timestamp}"));
            }
            if find(&[signature_name]).is_none() {
                extra.push((signature_name, "{signature}"));
            }
            Some(standard_webhooks_signature(&secret, &id, &timestamp, &body))
        }
        Some("github") => {
            if find(&["x-hub-signature-256"]).is_none() {
                extra.push(("x-hub-signature-256", "{signature}"));
            }
            Some(github_signature(&secret, &body))
        }
        Some(other) => panic!("{}: cannot sign for scheme {other}", case.name),
    };
    let signature = match (case.sign, signature) {
        (Sign::Corrupt, Some(s)) => Some(corrupt(&s)),
        (_, s) => s,
    };
    let fill = |t: &str| {
        if t.contains("{signature}") {
            let s = signature
                .as_deref()
                .unwrap_or_else(|| panic!("{}: {{signature}} in an unsigned case", case.name));
            timestamp_fill(&t.replace("{signature}", s))
        } else {
            timestamp_fill(t)
        }
    };
    let mut headers: Vec<(String, Vec<Vec<u8>>)> = case
        .headers
        .iter()
        .filter_map(|(name, values)| {
            values.as_ref().map(|v| {
                let rendered = v.specs().iter().map(|s| s.render(&fill)).collect();
                (name.clone(), rendered)
            })
        })
        .collect();
    for (name, value) in extra {
        headers.push((name.to_string(), vec![fill(value).into_bytes()]));
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        headers.push(("Host".into(), vec![HOST.as_bytes().to_vec()]));
    }
    Request {
        partner,
        headers,
        body,
    }
}

impl Request {
    /// The first value of header `name` (any case), when it is text.
    pub fn header_text(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, values)| values.first())
            .and_then(|v| String::from_utf8(v.clone()).ok())
    }

    /// True when API Gateway's HTTP API passes this body as a string that
    /// cannot be the partner's bytes: its Content-Type is text
    /// (`hookbox_ingest::http_api_passes_as_text`) and it is not UTF-8.
    pub fn http_api_alters_body(&self) -> bool {
        !self.body.is_empty()
            && hookbox_ingest::http_api_passes_as_text(self.header_text("content-type").as_deref())
            && std::str::from_utf8(&self.body).is_err()
    }
}

/// What a case expects through HTTP API: what it expects through REST,
/// except for a body HTTP API passes as text that is not UTF-8 (an event
/// the case builds itself, `event_body`, aside). What AWS does with such a
/// body is undocumented; the tests take the worst case, the bytes that are
/// not UTF-8 replaced with U+FFFD: the signature then fails, and ingest
/// refuses it 401 `invalid_signature_body_altered`, storing nothing
/// (docs/bad-input.md, "Both ingresses").
pub fn expect_through_http_api(case: &Case, request: &Request) -> Expect {
    if case.event_body.is_none() && request.http_api_alters_body() {
        Expect {
            authorizer: Verdict::Allow,
            status: 401,
            error: Some(hookbox_ingest::BODY_ALTERED.into()),
            stored: false,
            duplicate_of: None,
            event_id: None,
            event_type: None,
            ordering_key: None,
            kept_headers: BTreeMap::new(),
            body_in_blob: None,
            forwarded: None,
        }
    } else {
        case.expect.clone()
    }
}
