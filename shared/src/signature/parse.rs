//! The header parsers, one per scheme. Each is total: any input yields a
//! value or a [`ParseError`], never a panic (the `fuzz/` crate runs each one
//! on arbitrary input). They are public so the fuzz targets can reach them;
//! applications use [`Verifier`](super::Verifier).

use std::borrow::Cow;

use super::config::Encoding;
use super::crypto::{self, Tag};
use super::error::SignatureError;

pub use super::timestamp::parse_unix_seconds;
pub use super::twilio_url::{UrlVariants, twilio_body_sha256, twilio_url_variants};

/// Most signatures one header may carry. A partner rotating secrets sends
/// two or three; the cap bounds the work (each `v1a` entry costs an Ed25519
/// verification per public key).
pub const MAX_SIGNATURES: usize = 32;

/// Why a header value was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not the scheme's syntax.
    Malformed(&'static str),
    /// Well formed, but no signature of a version we accept.
    UnsupportedVersion(&'static str),
}

impl ParseError {
    /// The verifier error for this header.
    pub fn for_header(self, header: impl Into<Cow<'static, str>>) -> SignatureError {
        match self {
            Self::Malformed(reason) => SignatureError::MalformedHeader {
                header: header.into(),
                reason,
            },
            Self::UnsupportedVersion(reason) => SignatureError::UnsupportedSignatureVersion {
                header: header.into(),
                reason,
            },
        }
    }
}

impl From<&'static str> for ParseError {
    fn from(reason: &'static str) -> Self {
        Self::Malformed(reason)
    }
}

/// Decoded signatures of one kind. The first is stored inline, so the usual
/// single signature costs no allocation on the verification path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureList<const N: usize> {
    inline: [[u8; N]; INLINE],
    len: usize,
    spill: Vec<[u8; N]>,
}

/// Signatures a [`SignatureList`] holds without allocating.
const INLINE: usize = 1;

impl<const N: usize> SignatureList<N> {
    /// An empty list.
    pub fn new() -> Self {
        Self {
            inline: [[0; N]; INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    fn push(&mut self, signature: [u8; N]) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = signature,
            None => self.spill.push(signature),
        }
        self.len += 1;
    }

    /// Number of signatures.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when there is none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The signatures, in header order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8; N]> + Clone {
        self.inline[..self.len.min(INLINE)]
            .iter()
            .chain(self.spill.iter())
    }

    /// The signatures as a vector.
    pub fn to_vec(&self) -> Vec<[u8; N]> {
        self.iter().copied().collect()
    }
}

impl<const N: usize> Default for SignatureList<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The signatures of a Standard Webhooks `webhook-signature` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StandardSignatures {
    /// `v1` entries: HMAC-SHA256.
    pub v1: SignatureList<32>,
    /// `v1a` entries: Ed25519.
    pub v1a: Vec<[u8; 64]>,
    /// Entries of other versions (ignored, as the specification says).
    pub unknown: usize,
}

/// Parses `webhook-signature`: space-separated `version,base64` entries.
///
/// Entries of unknown versions are ignored. A `v1`/`v1a` entry that is not
/// base64 of the right length is skipped too (another entry may be valid),
/// but when no usable entry remains the header is malformed. Only `unknown`
/// versions: unsupported.
pub fn standard_webhooks_signatures(value: &str) -> Result<StandardSignatures, ParseError> {
    let mut out = StandardSignatures::default();
    let mut entries = 0usize;
    let mut undecodable = 0usize;
    // Usually one entry and no whitespace at all: a branch-free scan
    // (vectorised) finds that out cheaply.
    let single = !value.is_empty() && !value.bytes().fold(false, |any, b| any | (b <= b' '));
    let words = single.then_some(value).into_iter();
    let words = words.chain(ascii_words(if single { "" } else { value }));
    for entry in words {
        entries += 1;
        if entries > MAX_SIGNATURES {
            return Err("too many signature entries".into());
        }
        let Some((version, signature)) = split_at_byte(entry, b',') else {
            return Err("entry is not `version,signature`".into());
        };
        match version {
            "v1" => match crypto::decode_base64_array(signature) {
                Ok(sig) => out.v1.push(sig),
                Err(_) => undecodable += 1,
            },
            "v1a" => match crypto::decode_base64_array(signature) {
                Ok(sig) => out.v1a.push(sig),
                Err(_) => undecodable += 1,
            },
            "" => return Err("entry has an empty version".into()),
            _ => out.unknown += 1,
        }
    }
    if entries == 0 {
        return Err("no signature entries".into());
    }
    if out.v1.is_empty() && out.v1a.is_empty() {
        if undecodable > 0 {
            return Err("no v1/v1a entry is base64 of the right length".into());
        }
        return Err(ParseError::UnsupportedVersion(
            "expected `v1` (HMAC-SHA256) or `v1a` (Ed25519)",
        ));
    }
    Ok(out)
}

/// The space- (or tab-, newline-) separated words of `value`.
fn ascii_words(value: &str) -> impl Iterator<Item = &str> {
    // Printable characters are never whitespace: test that first.
    let is_space = |b: &u8| *b <= b' ' && b.is_ascii_whitespace();
    let bytes = value.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = bytes.get(at..)?;
        let start = at + rest.iter().position(|b| !is_space(b))?;
        let len = bytes
            .get(start..)?
            .iter()
            .position(is_space)
            .unwrap_or(bytes.len() - start);
        at = start + len;
        // Both ends are at ASCII bytes (or the ends of the text), so these
        // are character boundaries and `get` always succeeds.
        value.get(start..at)
    })
}

/// The pieces of `text` between `delimiter`s (an ASCII byte), like
/// `str::split` with a byte search.
fn split_bytes(text: &str, delimiter: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match split_at_byte(current, delimiter) {
            Some((piece, after)) => {
                rest = Some(after);
                Some(piece)
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

/// `text` without surrounding spaces and tabs.
fn trim_spaces(text: &str) -> &str {
    let is_space = |c: char| c == ' ' || c == '\t';
    if text.starts_with(is_space) || text.ends_with(is_space) {
        text.trim_matches(is_space)
    } else {
        text
    }
}

/// Splits at the first `delimiter` (an ASCII byte).
fn split_at_byte(text: &str, delimiter: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == delimiter)?;
    Some((text.get(..at)?, text.get(at + 1..)?))
}

/// Checks a Standard Webhooks `webhook-id`: not empty and without `.` (the
/// signed content is `id.timestamp.body`; a `.` in the id would let a
/// sender shift bytes between id, timestamp and body).
pub fn standard_webhooks_id(value: &str) -> Result<&str, ParseError> {
    if value.is_empty() {
        return Err("message id is empty".into());
    }
    if value.bytes().any(|b| b == b'.') {
        return Err("message id contains `.`".into());
    }
    Ok(value)
}

/// The parts of a `Stripe-Signature` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeSignatures<'a> {
    /// The `t=` value as sent (it is signed as text).
    pub timestamp_text: &'a str,
    /// The `t=` value.
    pub timestamp: i64,
    /// The `v1=` signatures (HMAC-SHA256).
    pub v1: SignatureList<32>,
    /// Other elements (`v0=`, unknown schemes): ignored, never trusted.
    pub other: usize,
}

/// Parses `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=<hex>]`.
///
/// Exactly one `t`. `v1` values that are not 64 hex digits are skipped;
/// when no usable `v1` remains the header is refused: malformed if there was
/// a `v1`, unsupported if there was none (a `v0`-only header is a downgrade).
pub fn stripe_signature(value: &str) -> Result<StripeSignatures<'_>, ParseError> {
    let mut timestamp: Option<(&str, i64)> = None;
    let mut v1 = SignatureList::new();
    let mut undecodable_v1 = 0usize;
    let mut other = 0usize;
    for (index, element) in split_bytes(value, b',').enumerate() {
        if index > MAX_SIGNATURES {
            return Err("too many elements".into());
        }
        let element = trim_spaces(element);
        let Some((key, val)) = split_at_byte(element, b'=') else {
            return Err("element is not `key=value`".into());
        };
        match key {
            "t" => {
                if timestamp.is_some() {
                    return Err("more than one `t=`".into());
                }
                timestamp = Some((val, parse_unix_seconds(val)?));
            }
            "v1" => match crypto::decode_hex_array(val) {
                Ok(sig) => v1.push(sig),
                Err(_) => undecodable_v1 += 1,
            },
            "" => return Err("element has an empty key".into()),
            _ => other += 1,
        }
    }
    let Some((timestamp_text, timestamp)) = timestamp else {
        return Err("missing `t=` timestamp".into());
    };
    if v1.is_empty() {
        if undecodable_v1 > 0 {
            return Err("no `v1=` value is 64 hexadecimal digits".into());
        }
        return Err(ParseError::UnsupportedVersion(
            "expected a `v1=` signature (`v0` and other schemes are not accepted)",
        ));
    }
    Ok(StripeSignatures {
        timestamp_text,
        timestamp,
        v1,
        other,
    })
}

/// Parses GitHub's `X-Hub-Signature-256: sha256=<64 hex digits>`.
pub fn github_signature(value: &str) -> Result<[u8; 32], ParseError> {
    let Some((algorithm, hex)) = split_at_byte(value, b'=') else {
        return Err("expected `sha256=<hex>`".into());
    };
    if algorithm != "sha256" {
        return Err(ParseError::UnsupportedVersion("expected `sha256=`"));
    }
    Ok(crypto::decode_hex_array(hex)?)
}

/// Parses Slack's `X-Slack-Signature: v0=<64 hex digits>`.
pub fn slack_signature(value: &str) -> Result<[u8; 32], ParseError> {
    let Some((version, hex)) = split_at_byte(value, b'=') else {
        return Err("expected `v0=<hex>`".into());
    };
    if version != "v0" {
        return Err(ParseError::UnsupportedVersion("expected `v0=`"));
    }
    Ok(crypto::decode_hex_array(hex)?)
}

/// Parses Shopify's `X-Shopify-Hmac-Sha256`: base64 of 32 bytes.
pub fn shopify_signature(value: &str) -> Result<[u8; 32], ParseError> {
    Ok(crypto::decode_base64_array(value)?)
}

/// Parses Twilio's `X-Twilio-Signature`: base64 of 20 bytes (HMAC-SHA1).
pub fn twilio_signature(value: &str) -> Result<[u8; 20], ParseError> {
    Ok(crypto::decode_base64_array(value)?)
}

/// Parses a generic HMAC header: the optional `prefix`, then the MAC written
/// with `encoding`, which must be `len` bytes.
pub fn generic_signature(
    value: &str,
    prefix: Option<&str>,
    encoding: Encoding,
    len: usize,
) -> Result<Vec<u8>, ParseError> {
    generic_tag(value, prefix, encoding, len).map(|tag| tag.as_bytes().to_vec())
}

pub(crate) fn generic_tag(
    value: &str,
    prefix: Option<&str>,
    encoding: Encoding,
    len: usize,
) -> Result<Tag, ParseError> {
    let encoded = match prefix {
        Some(prefix) => value
            .strip_prefix(prefix)
            .ok_or(ParseError::Malformed("missing the configured prefix"))?,
        None => value,
    };
    Ok(crypto::decode_tag(encoding, encoded, len)?)
}

/// `true` when a `Content-Type` value is form-encoded parameters.
pub fn is_form_content_type(value: &str) -> bool {
    let media_type = value.split(';').next().unwrap_or("").trim();
    media_type.eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    const SIG32_B64: &str = "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn standard_signatures_keep_v1_and_v1a_and_ignore_unknown_versions() {
        let v1a = crypto::BASE64_OUT.encode([7u8; 64]);
        let header = format!("v2,abc  v1,{SIG32_B64}\tv1a,{v1a} v1,!!!");
        let parsed = standard_webhooks_signatures(&header).expect("valid");
        assert_eq!(parsed.v1.len(), 1);
        assert_eq!(parsed.v1a, vec![[7u8; 64]]);
        assert_eq!(parsed.unknown, 1);
    }

    #[test]
    fn standard_signatures_refuse_malformed_headers() {
        let malformed = [
            "", "   ", "v1", ",abc", "v1,", "v1,!!!", "v1,AAAA", "v1a,AAAA",
        ];
        for header in malformed {
            assert!(
                matches!(
                    standard_webhooks_signatures(header),
                    Err(ParseError::Malformed(_))
                ),
                "{header:?}"
            );
        }
        let many = vec![format!("v1,{SIG32_B64}"); MAX_SIGNATURES + 1].join(" ");
        assert!(standard_webhooks_signatures(&many).is_err());
        assert!(matches!(
            standard_webhooks_signatures("v2,abc v3,def"),
            Err(ParseError::UnsupportedVersion(_))
        ));
    }

    #[test]
    fn words_and_byte_splits() {
        let words: Vec<&str> = ascii_words(" a\tbc  déf \n").collect();
        assert_eq!(words, ["a", "bc", "déf"]);
        assert_eq!(ascii_words("").count(), 0);
        assert_eq!(split_at_byte("k=v=w", b'='), Some(("k", "v=w")));
        assert_eq!(split_at_byte("é=", b'='), Some(("é", "")));
        assert_eq!(split_at_byte("kv", b'='), None);
        let pieces: Vec<&str> = split_bytes(",a,,é,", b',').collect();
        assert_eq!(pieces, ["", "a", "", "é", ""]);
        assert_eq!(split_bytes("", b',').collect::<Vec<_>>(), [""]);
        assert_eq!(trim_spaces(" \ta b\t "), "a b");
        assert_eq!(trim_spaces("ab"), "ab");
    }

    #[test]
    fn standard_id_refuses_dots_and_empty() {
        assert_eq!(standard_webhooks_id("msg_1"), Ok("msg_1"));
        assert!(standard_webhooks_id("").is_err());
        assert!(standard_webhooks_id("msg.1").is_err());
    }

    #[test]
    fn stripe_header_parts() {
        let hex = "ab".repeat(32);
        let header = format!("t=1533204620,v1={hex},v1=zz,v0={hex},x=1");
        let parsed = stripe_signature(&header).expect("valid");
        assert_eq!(parsed.timestamp, 1_533_204_620);
        assert_eq!(parsed.timestamp_text, "1533204620");
        assert_eq!(parsed.v1.to_vec(), vec![[0xab; 32]]);
        let many = format!("t=1,v1={hex},v1={hex},v1={hex}");
        assert_eq!(
            stripe_signature(&many).map(|p| p.v1.to_vec()),
            Ok(vec![[0xab; 32]; 3])
        );
        assert_eq!(parsed.other, 2);
    }

    #[test]
    fn stripe_header_malformed_cases() {
        let hex = "ab".repeat(32);
        // The first seven mirror stripe-dotnet's
        // ValidateSignatureHandlesIncorrectHeaderValues cases.
        let malformed = [
            format!("t=,v1={hex}"),
            "t,v1=,v0=".to_owned(),
            "t,v1=,v0".to_owned(),
            "t,v1=,".to_owned(),
            "t,,".to_owned(),
            ",,".to_owned(),
            "t".to_owned(),
            String::new(),
            format!("v1={hex}"),
            format!("t=1,t=2,v1={hex}"),
            format!("t=-1,v1={hex}"),
            "t=1,v1=abc".to_owned(),
            format!("t=1,={hex}"),
        ];
        for header in &malformed {
            assert!(
                matches!(stripe_signature(header), Err(ParseError::Malformed(_))),
                "{header:?}"
            );
        }
        assert!(matches!(
            stripe_signature(&format!("t=1,v0={hex}")),
            Err(ParseError::UnsupportedVersion(_))
        ));
        assert!(matches!(
            stripe_signature(&format!("t=1,v2={hex}")),
            Err(ParseError::UnsupportedVersion(_))
        ));
    }

    #[test]
    fn prefixed_hex_and_base64_headers() {
        let hex = "0f".repeat(32);
        assert_eq!(github_signature(&format!("sha256={hex}")), Ok([0x0f; 32]));
        assert!(matches!(
            github_signature(&format!("sha1={}", "0f".repeat(20))),
            Err(ParseError::UnsupportedVersion(_))
        ));
        assert!(github_signature(&hex).is_err());
        assert!(github_signature("sha256=").is_err());
        assert_eq!(slack_signature(&format!("v0={hex}")), Ok([0x0f; 32]));
        assert!(matches!(
            slack_signature(&format!("v1={hex}")),
            Err(ParseError::UnsupportedVersion(_))
        ));
        assert!(shopify_signature(SIG32_B64).is_ok());
        assert!(shopify_signature("abc").is_err());
        assert!(twilio_signature("RSOYDt4T1cUTdK1PDd93/VVr8B8=").is_ok());
        assert!(twilio_signature(SIG32_B64).is_err());
    }

    #[test]
    fn generic_signature_prefix_and_encodings() {
        let hex = "01".repeat(20);
        assert_eq!(
            generic_signature(&format!("sha1={hex}"), Some("sha1="), Encoding::Hex, 20),
            Ok(vec![1; 20])
        );
        assert!(generic_signature(&hex, Some("sha1="), Encoding::Hex, 20).is_err());
        assert!(generic_signature(&hex, None, Encoding::Hex, 32).is_err());
        assert_eq!(
            generic_signature(SIG32_B64, None, Encoding::Base64, 32).map(|v| v.len()),
            Ok(32)
        );
    }

    #[test]
    fn url_variants_add_or_remove_the_port() {
        let v = twilio_url_variants("https://mycompany.com/myapp.php?foo=1&bar=2").expect("valid");
        assert_eq!(
            v.without_port,
            "https://mycompany.com/myapp.php?foo=1&bar=2"
        );
        assert_eq!(
            v.with_port,
            "https://mycompany.com:443/myapp.php?foo=1&bar=2"
        );
        let v = twilio_url_variants("http://user:pw@host:8080?x=1").expect("valid");
        assert_eq!(v.without_port, "http://user:pw@host?x=1");
        assert_eq!(v.with_port, "http://user:pw@host:8080?x=1");
        let v = twilio_url_variants("http://[::1]/p").expect("valid");
        assert_eq!(v.with_port, "http://[::1]:80/p");
        for bad in [
            "mycompany.com/x",
            "ftp://host/x",
            "https:///x",
            "https://host:abc/x",
            "https://host:/x",
            "https://[::1/x",
            "https://[::1]x/",
        ] {
            assert!(twilio_url_variants(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn body_sha256_parameter() {
        let hash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";
        let url = format!("https://h/p?foo=1&bodySHA256={hash}#frag");
        assert!(matches!(twilio_body_sha256(&url), Ok(Some(_))));
        assert_eq!(twilio_body_sha256("https://h/p?foo=1"), Ok(None));
        assert!(twilio_body_sha256("https://h/p?bodySHA256=xyz").is_err());
        assert!(
            twilio_body_sha256(&format!("https://h/?bodySHA256={hash}&bodySHA256={hash}")).is_err()
        );
    }

    #[test]
    fn form_content_type_detection() {
        assert!(is_form_content_type("application/x-www-form-urlencoded"));
        assert!(is_form_content_type(
            "Application/X-WWW-Form-Urlencoded; charset=utf-8"
        ));
        assert!(!is_form_content_type("application/json"));
        assert!(!is_form_content_type(""));
    }
}
