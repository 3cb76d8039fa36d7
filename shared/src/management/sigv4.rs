//! AWS Signature Version 4 verification, for the local stack: what API
//! Gateway's IAM authorization does in AWS (the Lambda gets the verified
//! identity from API Gateway instead). A request signed for the service
//! `execute-api` with a configured access key is answered as that key's
//! principal (`ApiRequest::verified_principal`).
//!
//! Built by the specification (canonical request, string to sign, derived
//! signing key; HMAC-SHA256 and SHA-256), as botocore's `SigV4Auth` and the
//! AWS SDKs sign. The signature is compared in constant time; a secret key
//! is never logged nor named in an error.

use chrono::{DateTime, NaiveDateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The service API Gateway's signatures are made for.
pub const SERVICE: &str = "execute-api";

/// The algorithm of the `Authorization` header.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Most a signature's time may differ from the clock (as AWS: 15 minutes).
pub const MAX_SKEW: chrono::Duration = chrono::Duration::minutes(15);

/// Why a signed request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigV4Error {
    /// The `Authorization` header is not a SigV4 one, or is malformed.
    #[error(
        "the Authorization header is not AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…: {0}"
    )]
    Malformed(String),
    /// The access key is not configured.
    #[error("the access key {0:?} is not one this stack accepts")]
    UnknownKey(String),
    /// Signed for another service than `execute-api`.
    #[error("signed for the service {0:?}, not execute-api")]
    Service(String),
    /// `x-amz-date` missing, malformed or too far from now.
    #[error("{0}")]
    Time(String),
    /// A header the signature names is missing.
    #[error("the signed header {0:?} is missing")]
    MissingHeader(String),
    /// The signature does not match.
    #[error(
        "the request signature we calculated does not match the signature you provided: \
         check your AWS secret access key and signing method"
    )]
    Mismatch,
}

/// One access key pair the stack accepts, and whom it stands for.
#[derive(Clone)]
pub struct AccessKey {
    /// `AKIA…` (any text).
    pub access_key_id: String,
    secret_access_key: String,
    /// The principal requests signed with it act as (an IAM ARN).
    pub principal: String,
}

impl std::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessKey")
            .field("access_key_id", &self.access_key_id)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl AccessKey {
    /// A key pair standing for `principal`.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        principal: impl Into<String>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            principal: principal.into(),
        }
    }

    /// The secret access key (to print for a local run).
    pub fn secret_access_key(&self) -> &str {
        &self.secret_access_key
    }
}

/// What of a request the signature covers.
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    /// The method.
    pub method: &'a str,
    /// The path as sent (percent-encoded).
    pub path: &'a str,
    /// The query string as sent, without `?`.
    pub query: Option<&'a str>,
    /// The headers as received (names in any case; a name may repeat).
    pub headers: &'a [(String, String)],
    /// The body.
    pub body: &'a [u8],
}

/// True when `authorization` is a SigV4 one (else a bearer token, or none).
pub fn is_sigv4(authorization: Option<&str>) -> bool {
    authorization.is_some_and(|a| a.trim_start().starts_with(ALGORITHM))
}

struct Authorization<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse_authorization(value: &str) -> Result<Authorization<'_>, SigV4Error> {
    let malformed = |why: &str| SigV4Error::Malformed(why.to_string());
    let rest = value
        .trim()
        .strip_prefix(ALGORITHM)
        .ok_or_else(|| malformed("not AWS4-HMAC-SHA256"))?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part
            .trim()
            .split_once('=')
            .ok_or_else(|| malformed("a part without '='"))?;
        match k.trim() {
            "Credential" => credential = Some(v.trim()),
            "SignedHeaders" => signed = Some(v.trim()),
            "Signature" => signature = Some(v.trim()),
            _ => {}
        }
    }
    let credential = credential.ok_or_else(|| malformed("no Credential"))?;
    let mut scope = credential.split('/');
    let (Some(access_key_id), Some(date), Some(region), Some(service), Some("aws4_request"), None) = (
        scope.next(),
        scope.next(),
        scope.next(),
        scope.next(),
        scope.next(),
        scope.next(),
    ) else {
        return Err(malformed(
            "Credential is not <key>/<date>/<region>/<service>/aws4_request",
        ));
    };
    let signed_headers: Vec<&str> = signed
        .ok_or_else(|| malformed("no SignedHeaders"))?
        .split(';')
        .filter(|h| !h.is_empty())
        .collect();
    Ok(Authorization {
        access_key_id,
        date,
        region,
        service,
        signed_headers,
        signature: signature.ok_or_else(|| malformed("no Signature"))?,
    })
}

/// RFC 3986 encoding of everything but the unreserved characters (and `/`
/// when `keep_slash`), as SigV4 canonicalises.
fn uri_encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

fn canonical_query(query: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn header_values(headers: &[(String, String)], name: &str) -> Option<String> {
    let values: Vec<String> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The SigV4 signature of `req` with `secret` for `amz_date` (`YYYYMMDDTHHMMSSZ`)
/// and the scope's date, region and service, over `signed_headers` (lower
/// case, sorted as sent).
pub fn signature(
    req: &SignedRequest<'_>,
    secret: &str,
    amz_date: &str,
    scope: (&str, &str, &str),
    signed_headers: &[&str],
) -> Result<String, SigV4Error> {
    let (date, region, service) = scope;
    let mut canonical_headers = String::new();
    for name in signed_headers {
        let value = header_values(req.headers, name)
            .ok_or_else(|| SigV4Error::MissingHeader((*name).to_string()))?;
        canonical_headers.push_str(&format!("{}:{}\n", name.to_ascii_lowercase(), value));
    }
    let path = if req.path.is_empty() { "/" } else { req.path };
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method.to_ascii_uppercase(),
        uri_encode(path.as_bytes(), true),
        canonical_query(req.query),
        canonical_headers,
        signed_headers.join(";"),
        hex::encode(Sha256::digest(req.body)),
    );
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    Ok(hex::encode(hmac(&k_signing, string_to_sign.as_bytes())))
}

/// The access keys a local stack accepts.
#[derive(Debug, Clone, Default)]
pub struct SigV4Keys {
    keys: Vec<AccessKey>,
}

impl SigV4Keys {
    /// Accepts `key` too.
    pub fn with(mut self, key: AccessKey) -> Self {
        self.keys.push(key);
        self
    }

    /// None configured.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The principal of a request signed with one of these keys for
    /// `execute-api`, within [`MAX_SKEW`] of `now`.
    pub fn verify(
        &self,
        req: &SignedRequest<'_>,
        now: DateTime<Utc>,
    ) -> Result<String, SigV4Error> {
        let authorization = header_values(req.headers, "authorization")
            .ok_or_else(|| SigV4Error::Malformed("no Authorization header".into()))?;
        let auth = parse_authorization(&authorization)?;
        if auth.service != SERVICE {
            return Err(SigV4Error::Service(auth.service.to_string()));
        }
        let key = self
            .keys
            .iter()
            .find(|k| k.access_key_id == auth.access_key_id)
            .ok_or_else(|| SigV4Error::UnknownKey(auth.access_key_id.to_string()))?;
        if !auth
            .signed_headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("host"))
        {
            return Err(SigV4Error::Malformed(
                "host is not among SignedHeaders".into(),
            ));
        }
        let amz_date = header_values(req.headers, "x-amz-date")
            .ok_or_else(|| SigV4Error::Time("no x-amz-date header".into()))?;
        let at = NaiveDateTime::parse_from_str(&amz_date, "%Y%m%dT%H%M%SZ")
            .map_err(|_| {
                SigV4Error::Time(format!("x-amz-date {amz_date:?} is not YYYYMMDDTHHMMSSZ"))
            })?
            .and_utc();
        if !amz_date.starts_with(auth.date) {
            return Err(SigV4Error::Time(
                "the Credential's date is not x-amz-date's".into(),
            ));
        }
        if (now - at).abs() > MAX_SKEW {
            return Err(SigV4Error::Time(format!(
                "signed at {amz_date}, more than 15 minutes from now ({})",
                now.format("%Y%m%dT%H%M%SZ")
            )));
        }
        if let Some(claimed) = header_values(req.headers, "x-amz-content-sha256") {
            if claimed != hex::encode(Sha256::digest(req.body)) {
                return Err(SigV4Error::Mismatch);
            }
        }
        let expected = signature(
            req,
            key.secret_access_key(),
            &amz_date,
            (auth.date, auth.region, auth.service),
            &auth.signed_headers,
        )?;
        if bool::from(expected.as_bytes().ct_eq(auth.signature.as_bytes())) {
            Ok(key.principal.clone())
        } else {
            Err(SigV4Error::Mismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// AWS's own example (the SigV4 test suite's `get-vanilla`).
    #[test]
    fn the_signature_is_awss_for_its_published_example() {
        let h = headers(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", "20150830T123600Z"),
        ]);
        let req = SignedRequest {
            method: "GET",
            path: "/",
            query: None,
            headers: &h,
            body: b"",
        };
        let sig = signature(
            &req,
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20150830T123600Z",
            ("20150830", "us-east-1", "service"),
            &["host", "x-amz-date"],
        )
        .expect("sign");
        assert_eq!(
            sig,
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    fn signed(secret: &str, body: &[u8], at: &str) -> Vec<(String, String)> {
        let mut h = headers(&[
            ("host", "127.0.0.1:3000"),
            ("x-amz-date", at),
            ("content-type", "application/json"),
        ]);
        let req = SignedRequest {
            method: "POST",
            path: "/api/v1/app",
            query: Some("get_if_exists=true"),
            headers: &h,
            body,
        };
        let sig = signature(
            &req,
            secret,
            at,
            (&at[..8], "us-east-1", SERVICE),
            &["content-type", "host", "x-amz-date"],
        )
        .expect("sign");
        h.push((
            "authorization".into(),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKLOCAL/{}/us-east-1/execute-api/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, Signature={sig}",
                &at[..8]
            ),
        ));
        h
    }

    #[test]
    fn a_request_signed_with_a_configured_key_is_its_principal_and_any_change_is_refused() {
        let keys = SigV4Keys::default().with(AccessKey::new(
            "AKLOCAL",
            "s3cret",
            "arn:aws:iam::000000000000:user/ci",
        ));
        let now = DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z")
            .expect("time")
            .with_timezone(&Utc);
        let body = br#"{"name":"Acme"}"#;
        let h = signed("s3cret", body, "20260601T120000Z");
        let req =
            |headers: &'static [(String, String)], body: &'static [u8], query| SignedRequest {
                method: "POST",
                path: "/api/v1/app",
                query,
                headers,
                body,
            };
        let h: &'static [(String, String)] = Box::leak(h.into_boxed_slice());
        assert_eq!(
            keys.verify(&req(h, body, Some("get_if_exists=true")), now)
                .as_deref(),
            Ok("arn:aws:iam::000000000000:user/ci")
        );
        // another body, query, secret, or too late
        assert_eq!(
            keys.verify(&req(h, b"{}", Some("get_if_exists=true")), now),
            Err(SigV4Error::Mismatch)
        );
        assert_eq!(
            keys.verify(&req(h, body, None), now),
            Err(SigV4Error::Mismatch)
        );
        let wrong: &'static [(String, String)] =
            Box::leak(signed("other", body, "20260601T120000Z").into_boxed_slice());
        assert_eq!(
            keys.verify(&req(wrong, body, Some("get_if_exists=true")), now),
            Err(SigV4Error::Mismatch)
        );
        assert!(matches!(
            keys.verify(
                &req(h, body, Some("get_if_exists=true")),
                now + chrono::Duration::minutes(16)
            ),
            Err(SigV4Error::Time(_))
        ));
        assert!(matches!(
            SigV4Keys::default().verify(&req(h, body, Some("get_if_exists=true")), now),
            Err(SigV4Error::UnknownKey(k)) if k == "AKLOCAL"
        ));
        assert!(!format!("{keys:?}").contains("s3cret"));
    }

    #[test]
    fn canonical_queries_are_sorted_and_encoded() {
        assert_eq!(
            canonical_query(Some("limit=2&iterator=app_1&a=x%20y")),
            "a=x%20y&iterator=app_1&limit=2"
        );
        assert_eq!(canonical_query(None), "");
        assert_eq!(uri_encode(b"/api/v1/app/a b", true), "/api/v1/app/a%20b");
    }
}
