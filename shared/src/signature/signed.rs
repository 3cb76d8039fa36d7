//! Verifying a [`Signed`] recipe: the timestamp and the signatures read
//! from the headers (or the body), the message assembled from its parts,
//! then the primitive over it with each secret.

use std::borrow::Cow;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use zeroize::Zeroizing;

use super::config::Algorithm;
use super::crypto::{self, BASE64, MacState, Tag};
use super::error::SignatureError;
use super::headers::Headers;
use super::parse::MAX_SIGNATURES;
use super::recipe::{
    Context, KeyFormat, Part, Primitive, SCHEME, SignatureAt, Signed, TimestampSource,
    invalid_secret, malformed, missing, no_match, parse_time,
};
use super::secret::Secret;
use super::timestamp::check_tolerance;
use super::verifier::{SignedRequest, Verified, check_secrets, match_raw_key};

/// The JSON body, parsed once when a recipe reads fields of it.
struct Body<'a> {
    raw: &'a [u8],
    parsed: Option<Result<serde_json::Value, ()>>,
}

impl<'a> Body<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Self { raw, parsed: None }
    }

    /// The text of the field at `pointer`: a string as is, a number or
    /// boolean as JSON writes it.
    fn field(&mut self, pointer: &'static str) -> Result<String, SignatureError> {
        let raw = self.raw;
        let parsed = self
            .parsed
            .get_or_insert_with(|| serde_json::from_slice(raw).map_err(|_| ()));
        let value = parsed
            .as_ref()
            .map_err(|()| malformed(pointer, "the body is not JSON"))?;
        match value.pointer(pointer) {
            Some(serde_json::Value::String(text)) => Ok(text.clone()),
            Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                Ok(value.to_string())
            }
            Some(_) => Err(malformed(pointer, "body field is not a string or number")),
            None => Err(missing(pointer)),
        }
    }
}

/// A signature header value split into items.
fn items(value: &str, separator: Option<char>) -> Vec<&str> {
    match separator {
        Some(sep) => value.split(sep).map(str::trim).collect(),
        None => vec![value],
    }
}

/// The header values of `names` that are present (each unambiguous).
fn header_values<'a>(
    headers: &Headers<'a>,
    names: &'static [&'static str],
) -> Result<Vec<(&'static str, &'a str)>, SignatureError> {
    let mut found = Vec::new();
    for name in names {
        match headers.unique(name) {
            Ok(Some(value)) => found.push((*name, value)),
            Ok(None) => {}
            Err(reason) => return Err(malformed(name, reason)),
        }
    }
    Ok(found)
}

impl Signed {
    /// True when the message includes the timestamp (a captured request
    /// fails once it is older than the tolerance).
    pub fn signs_timestamp(&self) -> bool {
        self.timestamp.is_some() && self.message.contains(&Part::Timestamp)
    }

    /// True when the whole raw body is signed.
    pub fn signs_body(&self) -> bool {
        self.message.contains(&Part::Body)
    }

    fn signature_len(&self) -> Option<usize> {
        match self.primitive {
            Primitive::Hmac(algorithm, _) => Some(algorithm.output_len()),
            Primitive::Ed25519 => Some(64),
            // DER: variable length.
            Primitive::EcdsaP256 => None,
        }
    }

    /// The timestamp text and seconds, when the recipe has one and it is in
    /// the headers or the body.
    fn read_timestamp<'a>(
        &self,
        headers: &Headers<'a>,
        body: Option<&mut Body<'_>>,
    ) -> Result<Option<(Cow<'a, str>, i64)>, SignatureError> {
        let Some(at) = self.timestamp else {
            return Ok(None);
        };
        let (name, text): (&'static str, Cow<'a, str>) = match at.source {
            TimestampSource::Header(name) => (name, Cow::Borrowed(headers.required(name)?)),
            TimestampSource::SignatureItem(_) | TimestampSource::FirstSignatureItem => {
                let SignatureAt::Headers {
                    names, separator, ..
                } = self.signature
                else {
                    return Err(missing(key_name(at.source)));
                };
                let values = header_values(headers, names)?;
                let Some((header, value)) = values.first() else {
                    return Err(missing(names.first().copied().unwrap_or("signature")));
                };
                let all = items(value, separator);
                let found = match at.source {
                    TimestampSource::SignatureItem(key) => {
                        let mut found = None;
                        for item in &all {
                            if let Some(v) =
                                item.strip_prefix(key).and_then(|r| r.strip_prefix('='))
                            {
                                if found.is_some() {
                                    return Err(malformed(header, "more than one timestamp"));
                                }
                                found = Some(v);
                            }
                        }
                        found
                    }
                    _ => all.first().copied(),
                };
                let text = found.ok_or_else(|| malformed(header, "no timestamp item"))?;
                (header, Cow::Borrowed(text))
            }
            TimestampSource::Json(pointer) => match body {
                Some(body) => (pointer, Cow::Owned(body.field(pointer)?)),
                // The authorizer has no body: nothing to check yet.
                None => return Ok(None),
            },
        };
        let secs = parse_time(&text, at.format).map_err(|reason| malformed(name, reason))?;
        Ok(Some((text, secs)))
    }

    /// The signature texts, in order; the first header (or field) name for
    /// errors.
    fn read_signatures<'a>(
        &self,
        headers: &Headers<'a>,
        body: Option<&mut Body<'_>>,
    ) -> Result<(&'static str, Vec<Cow<'a, str>>), SignatureError> {
        match self.signature {
            SignatureAt::Headers {
                names,
                prefixes,
                separator,
            } => {
                let values = header_values(headers, names)?;
                let first = names.first().copied().unwrap_or("signature");
                if values.is_empty() {
                    return Err(missing(first));
                }
                let skip_first = matches!(
                    self.timestamp.map(|t| t.source),
                    Some(TimestampSource::FirstSignatureItem)
                );
                let mut texts = Vec::new();
                for (_, value) in &values {
                    let all = items(value, separator);
                    let all = all.into_iter().skip(usize::from(skip_first));
                    texts.extend(
                        all.filter_map(|item| {
                            prefixes.iter().find_map(|prefix| item.strip_prefix(prefix))
                        })
                        .map(Cow::Borrowed),
                    );
                }
                if texts.len() > MAX_SIGNATURES {
                    return Err(malformed(first, "too many signatures"));
                }
                if texts.is_empty() {
                    return Err(SignatureError::UnsupportedSignatureVersion {
                        header: Cow::Borrowed(first),
                        reason: "no signature with the expected prefix",
                    });
                }
                Ok((values[0].0, texts))
            }
            SignatureAt::Json(pointer) => match body {
                Some(body) => Ok((pointer, vec![Cow::Owned(body.field(pointer)?)])),
                None => Ok((pointer, Vec::new())),
            },
        }
    }

    /// Header checks without body or secrets (the authorizer's).
    pub(crate) fn precheck(
        &self,
        headers: &Headers<'_>,
        now: DateTime<Utc>,
        tolerance_secs: Option<u64>,
    ) -> Result<(), SignatureError> {
        if let Some((_, secs)) = self.read_timestamp(headers, None)? {
            if let Some(tolerance) = tolerance_secs {
                check_tolerance(secs, now, tolerance)?;
            }
        }
        let (name, texts) = self.read_signatures(headers, None)?;
        if matches!(self.signature, SignatureAt::Headers { .. }) {
            self.decode_all(name, &texts)?;
        }
        Ok(())
    }

    /// Decodes the signatures; undecodable ones are skipped, none left is
    /// malformed.
    fn decode_all(
        &self,
        name: &'static str,
        texts: &[Cow<'_, str>],
    ) -> Result<Vec<Decoded>, SignatureError> {
        let decoded: Vec<Decoded> = texts
            .iter()
            .filter_map(|text| match self.signature_len() {
                Some(len) => crypto::decode_tag(self.encoding, text, len)
                    .ok()
                    .map(Decoded::Fixed),
                None => BASE64
                    .decode(text.as_bytes())
                    .ok()
                    .filter(|der| der.len() <= 72)
                    .map(Decoded::Der),
            })
            .collect();
        if decoded.is_empty() {
            return Err(malformed(
                name,
                "no signature decodes to the expected length and encoding",
            ));
        }
        Ok(decoded)
    }

    pub(crate) fn verify<'a>(
        &self,
        context: &Context<'_>,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        now: DateTime<Utc>,
    ) -> Result<Verified<'a>, SignatureError> {
        let mut body = Body::new(request.body);
        let timestamp = self.read_timestamp(&request.headers, Some(&mut body))?;
        if let (Some((_, secs)), Some(tolerance)) = (&timestamp, context.tolerance_secs) {
            check_tolerance(*secs, now, tolerance)?;
        }
        let (name, texts) = self.read_signatures(&request.headers, Some(&mut body))?;
        let signatures = self.decode_all(name, &texts)?;

        // The message, as borrowed or owned pieces.
        let mut owned: Vec<(usize, String)> = Vec::new();
        let mut parts: Vec<&[u8]> = Vec::with_capacity(self.message.len());
        for (i, part) in self.message.iter().enumerate() {
            if let Part::Json(pointer) = part {
                owned.push((i, body.field(pointer)?));
            }
        }
        let timestamp_text = timestamp.as_ref().map(|(text, _)| text.as_ref());
        for (i, part) in self.message.iter().enumerate() {
            let piece: &[u8] = match part {
                Part::Body => request.body,
                Part::Text(text) => text.as_bytes(),
                Part::Timestamp => timestamp_text.unwrap_or_default().as_bytes(),
                Part::Header(header) => request.headers.required(header)?.as_bytes(),
                // Webhooks are POSTs (ingest's route takes nothing else).
                Part::Method => context.method.unwrap_or("POST").as_bytes(),
                Part::Url => request
                    .url
                    .ok_or(SignatureError::MissingUrl {
                        scheme: context.name,
                    })?
                    .as_bytes(),
                Part::Json(_) => owned
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map(|(_, text)| text.as_bytes())
                    .unwrap_or_default(),
            };
            parts.push(piece);
        }

        let index = match self.primitive {
            Primitive::Hmac(algorithm, KeyFormat::Utf8) => {
                let fixed = signatures.iter().filter_map(Decoded::fixed);
                match_raw_key(SCHEME, algorithm, secrets, &parts, fixed)?
            }
            Primitive::Hmac(algorithm, format) => match_decoded_key(
                context.name,
                algorithm,
                format,
                secrets,
                &parts,
                &signatures,
            )?,
            Primitive::Ed25519 => match_ed25519(context.name, secrets, &parts, &signatures)?,
            Primitive::EcdsaP256 => match_ecdsa(context.name, secrets, &parts, &signatures)?,
        };
        let mut verified = Verified::new(SCHEME, index);
        verified.timestamp_secs = timestamp.map(|(_, secs)| secs);
        Ok(verified)
    }
}

fn key_name(source: TimestampSource) -> &'static str {
    match source {
        TimestampSource::Header(name)
        | TimestampSource::SignatureItem(name)
        | TimestampSource::Json(name) => name,
        TimestampSource::FirstSignatureItem => "signature",
    }
}

/// A decoded signature: fixed length (HMAC, Ed25519) or DER (ECDSA).
enum Decoded {
    Fixed(Tag),
    Der(Vec<u8>),
}

impl Decoded {
    fn fixed(&self) -> Option<&[u8]> {
        match self {
            Self::Fixed(tag) => Some(tag.as_bytes()),
            Self::Der(_) => None,
        }
    }
}

fn match_decoded_key(
    name: &'static str,
    algorithm: Algorithm,
    format: KeyFormat,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let text = secret.expose_secret();
            let key = match format {
                KeyFormat::Utf8 => Ok(text.as_bytes().to_vec()),
                KeyFormat::Hex => hex::decode(text).map_err(|_| "secret is not hexadecimal"),
                KeyFormat::Base64 => BASE64.decode(text).map_err(|_| "secret is not base64"),
            };
            key.map(Zeroizing::new)
                .map_err(|reason| invalid_secret(name, index, reason))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (index, key) in keys.iter().enumerate() {
        let mut mac = MacState::new(algorithm, key)
            .map_err(|_| invalid_secret(name, index, "refused as an HMAC key"))?;
        for part in parts {
            mac.update(part);
        }
        let tag = mac.finalize();
        if signatures
            .iter()
            .filter_map(Decoded::fixed)
            .any(|sig| crypto::ct_eq(tag.as_bytes(), sig))
        {
            return Ok(index);
        }
    }
    Err(no_match(signatures.len(), secrets))
}

fn match_ed25519(
    name: &'static str,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    use ed25519_dalek::{Signature, VerifyingKey};
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let bytes: [u8; 32] =
                crypto::decode_hex_array(secret.expose_secret()).map_err(|_| {
                    invalid_secret(name, index, "public key is not 64 hexadecimal digits")
                })?;
            VerifyingKey::from_bytes(&bytes)
                .map_err(|_| invalid_secret(name, index, "not an Ed25519 public key"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let message = parts.concat();
    for (index, key) in keys.iter().enumerate() {
        for sig in signatures.iter().filter_map(Decoded::fixed) {
            let Ok(bytes) = <[u8; 64]>::try_from(sig) else {
                continue;
            };
            if key
                .verify_strict(&message, &Signature::from_bytes(&bytes))
                .is_ok()
            {
                return Ok(index);
            }
        }
    }
    Err(no_match(signatures.len(), secrets))
}

fn match_ecdsa(
    name: &'static str,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &[Decoded],
) -> Result<usize, SignatureError> {
    use p256::ecdsa::signature::Verifier as _;
    use p256::ecdsa::{Signature, VerifyingKey};
    use p256::pkcs8::DecodePublicKey as _;
    check_secrets(SCHEME, secrets)?;
    let keys = secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            let der = BASE64
                .decode(secret.expose_secret().trim())
                .map_err(|_| invalid_secret(name, index, "public key is not base64"))?;
            VerifyingKey::from_public_key_der(&der).map_err(|_| {
                invalid_secret(
                    name,
                    index,
                    "not a P-256 public key (DER SubjectPublicKeyInfo)",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let message = parts.concat();
    let sigs: Vec<Signature> = signatures
        .iter()
        .filter_map(|sig| match sig {
            Decoded::Der(der) => Signature::from_der(der).ok(),
            Decoded::Fixed(_) => None,
        })
        .collect();
    for (index, key) in keys.iter().enumerate() {
        if sigs.iter().any(|sig| key.verify(&message, sig).is_ok()) {
            return Ok(index);
        }
    }
    Err(no_match(signatures.len(), secrets))
}
