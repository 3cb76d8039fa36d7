//! Twilio's URL: its two spellings (without and with the port, as
//! Twilio's reference validators try them) and its `bodySHA256`
//! parameter. Re-exported by [`parse`](super::parse), whose fuzz targets
//! reach them.

use super::crypto;
use super::parse::ParseError;

/// The two spellings of a URL that Twilio's reference validators try: without
/// any port, and with the port (the scheme's default, 443 or 80, when none
/// was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlVariants {
    /// `https://host/path?query` (port removed).
    pub without_port: String,
    /// `https://host:443/path?query` (port kept or default added).
    pub with_port: String,
}

/// Splits `url` (absolute `http`/`https`) and builds its [`UrlVariants`].
/// Works on the text as received: no normalisation (case, percent-encoding,
/// trailing slash) because the signature covers the exact text.
pub fn twilio_url_variants(url: &str) -> Result<UrlVariants, ParseError> {
    let url = TwilioUrl::parse(url)?;
    Ok(UrlVariants {
        without_port: url.without_port().concat(),
        with_port: url.with_port().concat(),
    })
}

/// The `bodySHA256` query parameter of a Twilio URL (decoded from hex), if
/// present. Present but not 64 hex digits, or given twice: malformed.
pub fn twilio_body_sha256(url: &str) -> Result<Option<[u8; 32]>, ParseError> {
    body_sha256(&split_url(url)?)
}

fn body_sha256(parts: &UrlParts<'_>) -> Result<Option<[u8; 32]>, ParseError> {
    let query = parts
        .rest
        .split_once('?')
        .map(|(_, q)| q.split_once('#').map_or(q, |(q, _)| q))
        .unwrap_or("");
    let mut found = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == "bodySHA256" {
            if found.is_some() {
                return Err("`bodySHA256` appears more than once".into());
            }
            found =
                Some(crypto::decode_hex_array(&value).map_err(|_| {
                    ParseError::Malformed("`bodySHA256` is not 64 hexadecimal digits")
                })?);
        }
    }
    Ok(found)
}

struct UrlParts<'a> {
    scheme: &'a str,
    /// `scheme://` and any `userinfo@`.
    before_host: &'a str,
    host: &'a str,
    port: Option<&'a str>,
    /// Path, query and fragment, as given.
    rest: &'a str,
}

fn split_url(url: &str) -> Result<UrlParts<'_>, ParseError> {
    let Some((scheme, after_scheme)) = url.split_once("://") else {
        return Err("URL is not absolute (no `://`)".into());
    };
    if !(scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http")) {
        return Err("URL scheme is not http or https".into());
    }
    let authority_len = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    let (authority, rest) = after_scheme.split_at(authority_len);
    let userinfo_len = authority.rfind('@').map_or(0, |at| at + 1);
    let (userinfo, host_port) = authority.split_at(userinfo_len);
    let before_host = &url[..scheme.len() + 3 + userinfo.len()];
    let (host, port) = if host_port.starts_with('[') {
        let Some(close) = host_port.find(']') else {
            return Err("URL has an unterminated IPv6 address".into());
        };
        let (host, after) = host_port.split_at(close + 1);
        match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if after.is_empty() => (host, None),
            None => return Err("URL has text after the IPv6 address".into()),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err("URL has no host".into());
    }
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err("URL port is not a number".into());
        }
    }
    Ok(UrlParts {
        scheme,
        before_host,
        host,
        port,
        rest,
    })
}

/// A Twilio URL split once: its two spellings as pieces, fed to the MAC
/// one after the other (no string built), and its `bodySHA256`.
pub(crate) struct TwilioUrl<'a> {
    parts: UrlParts<'a>,
    /// The port as given, or the scheme's default.
    port: &'a str,
}

impl<'a> TwilioUrl<'a> {
    /// Splits `url` as [`twilio_url_variants`] does (same errors).
    pub(crate) fn parse(url: &'a str) -> Result<Self, ParseError> {
        let parts = split_url(url)?;
        let port = parts.port.unwrap_or(default_port(parts.scheme));
        Ok(Self { parts, port })
    }

    /// [`UrlVariants::without_port`], in pieces.
    pub(crate) fn without_port(&self) -> [&'a str; 3] {
        let p = &self.parts;
        [p.before_host, p.host, p.rest]
    }

    /// [`UrlVariants::with_port`], in pieces.
    pub(crate) fn with_port(&self) -> [&'a str; 5] {
        let p = &self.parts;
        [p.before_host, p.host, ":", self.port, p.rest]
    }

    /// [`twilio_body_sha256`] of this URL.
    pub(crate) fn body_sha256(&self) -> Result<Option<[u8; 32]>, ParseError> {
        body_sha256(&self.parts)
    }
}

fn default_port(scheme: &str) -> &'static str {
    if scheme.eq_ignore_ascii_case("https") {
        "443"
    } else {
        "80"
    }
}
