//! Generic HMAC: a configurable header carrying an HMAC (SHA-1, SHA-256 or
//! SHA-512; hex or base64; optional prefix such as `sha256=`) over a signed
//! content built from a template (`{body}`, and `{timestamp}` from an
//! optional timestamp header that is also checked against the tolerance).

use std::borrow::Cow;

use chrono::{DateTime, Utc};

use super::config::{Algorithm, Encoding, GenericHmacConfig, SchemeKind};
use super::crypto::Tag;
use super::error::{ConfigError, SignatureError};
use super::headers::Headers;
use super::parse;
use super::secret::Secret;
use super::timestamp::{self, check_tolerance};
use super::verifier::{SignedRequest, Verified, match_raw_key};

const SCHEME: SchemeKind = SchemeKind::GenericHmac;

/// One piece of the signed content.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(Vec<u8>),
    Timestamp,
    Body,
}

/// A validated generic configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compiled {
    header: String,
    algorithm: Algorithm,
    encoding: Encoding,
    prefix: Option<String>,
    timestamp_header: Option<String>,
    template: Vec<Segment>,
    tolerance_secs: u64,
}

/// The signature, and the timestamp header (text as sent, and its value).
type ParsedHeaders<'a> = (Tag, Option<(&'a str, i64)>);

fn invalid(field: &'static str, reason: &'static str) -> ConfigError {
    ConfigError::Invalid { field, reason }
}

/// RFC 9110 token characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn compile_template(template: &str) -> Result<Vec<Segment>, ConfigError> {
    const FIELD: &str = "template";
    let mut segments = Vec::new();
    let mut literal = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        literal.extend_from_slice(&rest.as_bytes()[..i]);
        let tail = &rest[i..];
        let (segment, consumed) = if tail.starts_with("{{") || tail.starts_with("}}") {
            (None, 2)
        } else if tail.starts_with("{body}") {
            (Some(Segment::Body), "{body}".len())
        } else if tail.starts_with("{timestamp}") {
            (Some(Segment::Timestamp), "{timestamp}".len())
        } else {
            return Err(invalid(
                FIELD,
                "unknown placeholder: use {body}, {timestamp}, {{ or }}",
            ));
        };
        match segment {
            None => literal.push(tail.as_bytes()[0]),
            Some(segment) => {
                if !literal.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                segments.push(segment);
            }
        }
        rest = &tail[consumed..];
    }
    literal.extend_from_slice(rest.as_bytes());
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Ok(segments)
}

impl Compiled {
    /// True when the signed content includes the checked timestamp (a
    /// captured request cannot be replayed after the tolerance).
    pub(crate) fn signs_timestamp(&self) -> bool {
        self.timestamp_header.is_some() && self.template.contains(&Segment::Timestamp)
    }

    pub(crate) fn new(config: &GenericHmacConfig) -> Result<Self, ConfigError> {
        if !is_header_name(&config.header) {
            return Err(invalid("header", "must be a non-empty HTTP header name"));
        }
        if let Some(name) = &config.timestamp_header {
            if !is_header_name(name) {
                return Err(invalid(
                    "timestamp_header",
                    "must be a non-empty HTTP header name",
                ));
            }
        }
        let default_template = if config.timestamp_header.is_some() {
            "{timestamp}.{body}"
        } else {
            "{body}"
        };
        let template = compile_template(config.template.as_deref().unwrap_or(default_template))?;
        let count = |wanted: &Segment| template.iter().filter(|s| *s == wanted).count();
        if count(&Segment::Body) != 1 {
            return Err(invalid("template", "must contain {body} exactly once"));
        }
        match (
            config.timestamp_header.is_some(),
            count(&Segment::Timestamp) > 0,
        ) {
            (true, false) => {
                return Err(invalid(
                    "template",
                    "must contain {timestamp} when timestamp_header is set (an unsigned timestamp can be replaced)",
                ));
            }
            (false, true) => {
                return Err(invalid(
                    "timestamp_header",
                    "is required when the template uses {timestamp}",
                ));
            }
            _ => {}
        }
        Ok(Self {
            header: config.header.clone(),
            algorithm: config.algorithm,
            encoding: config.encoding,
            prefix: config.prefix.clone().filter(|p| !p.is_empty()),
            timestamp_header: config.timestamp_header.clone(),
            template,
            tolerance_secs: config.tolerance_secs,
        })
    }

    fn parse<'a>(&self, headers: &Headers<'a>) -> Result<ParsedHeaders<'a>, SignatureError> {
        let timestamp = match &self.timestamp_header {
            Some(name) => {
                let text = headers.required_dyn(Cow::Owned(name.clone()))?;
                let secs = timestamp::parse_unix_seconds(text).map_err(|reason| {
                    SignatureError::MalformedHeader {
                        header: Cow::Owned(name.clone()),
                        reason,
                    }
                })?;
                Some((text, secs))
            }
            None => None,
        };
        let value = headers.required_dyn(Cow::Owned(self.header.clone()))?;
        let tag = parse::generic_tag(
            value,
            self.prefix.as_deref(),
            self.encoding,
            self.algorithm.output_len(),
        )
        .map_err(|e| e.for_header(self.header.clone()))?;
        Ok((tag, timestamp))
    }

    pub(crate) fn precheck(
        &self,
        headers: &Headers<'_>,
        now: DateTime<Utc>,
    ) -> Result<(), SignatureError> {
        let (_, timestamp) = self.parse(headers)?;
        if let Some((_, secs)) = timestamp {
            check_tolerance(secs, now, self.tolerance_secs)?;
        }
        Ok(())
    }

    pub(crate) fn verify<'a>(
        &self,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        now: DateTime<Utc>,
    ) -> Result<Verified<'a>, SignatureError> {
        let (tag, timestamp) = self.parse(&request.headers)?;
        if let Some((_, secs)) = timestamp {
            check_tolerance(secs, now, self.tolerance_secs)?;
        }
        let timestamp_text = timestamp.map_or("", |(text, _)| text);
        let parts: Vec<&[u8]> = self
            .template
            .iter()
            .map(|segment| match segment {
                Segment::Literal(bytes) => bytes.as_slice(),
                Segment::Timestamp => timestamp_text.as_bytes(),
                Segment::Body => request.body,
            })
            .collect();
        let index = match_raw_key(SCHEME, self.algorithm, secrets, &parts, [tag.as_bytes()])?;
        let mut verified = Verified::new(SCHEME, index);
        verified.timestamp_secs = timestamp.map(|(_, secs)| secs);
        Ok(verified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile_into_segments() {
        assert_eq!(
            compile_template("v0:{timestamp}:{body}").expect("valid"),
            vec![
                Segment::Literal(b"v0:".to_vec()),
                Segment::Timestamp,
                Segment::Literal(b":".to_vec()),
                Segment::Body
            ]
        );
        assert_eq!(
            compile_template("{{x}}{body}").expect("valid"),
            vec![Segment::Literal(b"{x}".to_vec()), Segment::Body]
        );
        for bad in ["{bod}", "{body", "}", "{", "{id}"] {
            assert!(compile_template(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unsafe_or_inconsistent_configurations_are_refused() {
        let ok = GenericHmacConfig::new("X-Sig");
        assert!(Compiled::new(&ok).is_ok());
        let mut no_header = ok.clone();
        no_header.header = String::new();
        assert!(Compiled::new(&no_header).is_err());
        let mut bad_name = ok.clone();
        bad_name.header = "X Sig".into();
        assert!(Compiled::new(&bad_name).is_err());
        let mut twice = ok.clone();
        twice.template = Some("{body}{body}".into());
        assert!(Compiled::new(&twice).is_err());
        let mut no_body = ok.clone();
        no_body.template = Some("constant".into());
        assert!(Compiled::new(&no_body).is_err());
        let mut unsigned_timestamp = ok.clone();
        unsigned_timestamp.timestamp_header = Some("X-Ts".into());
        unsigned_timestamp.template = Some("{body}".into());
        assert!(Compiled::new(&unsigned_timestamp).is_err());
        let mut timestamp_without_header = ok.clone();
        timestamp_without_header.template = Some("{timestamp}.{body}".into());
        assert!(Compiled::new(&timestamp_without_header).is_err());
        let mut default_with_timestamp = ok;
        default_with_timestamp.timestamp_header = Some("X-Ts".into());
        let compiled = Compiled::new(&default_with_timestamp).expect("valid");
        assert_eq!(compiled.template.first(), Some(&Segment::Timestamp));
    }
}
