//! Verifying a [`Signed`] recipe: the timestamp and the signatures read
//! from the headers (or the body), the message assembled from its parts,
//! then the primitive over it with each secret.

use std::borrow::Cow;

use base64::Engine as _;
use chrono::{DateTime, Utc};

use super::body_fields::Body;
use super::config::Algorithm;
use super::crypto::{self, BASE64, Tag};
use super::each_item;
use super::error::SignatureError;
use super::few::Few;
use super::form::find_byte;
use super::headers::Headers;
use super::keys::{KeyUse, PreparedKey};
use super::parse::MAX_SIGNATURES;
use super::recipe::{
    Context, KeyFormat, Part, Primitive, SCHEME, SignatureAt, Signed, TimeFormat, TimestampSource,
    malformed, missing, no_match, parse_time,
};
use super::secret::Secret;
use super::signed_parts::{check_prepared, form_message};
use super::timestamp::check_tolerance;
use super::verifier::{SignedRequest, Verified, match_raw_key};

/// Parts of a message assembled without allocating (the longest recipe
/// has four).
const INLINE_PARTS: usize = 8;

/// A signature header value's items: split at `separator` and trimmed, or
/// the whole value. What `value.split(separator).map(str::trim)` gives,
/// an ASCII separator found eight bytes at a time ([`find_byte`]; found
/// byte by byte, Calendly's `t=…,v1=<64 digits>` cost 1,200 instructions
/// to split, and `str::split` with a `char` searches with `memchr`,
/// costlier still on a header's few dozen bytes).
fn items(value: &str, separator: Option<char>) -> impl Iterator<Item = &str> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let current = rest?;
        let Some(separator) = separator else {
            rest = None;
            return Some(current);
        };
        let split = match u8::try_from(separator) {
            Ok(byte) if byte.is_ascii() => find_byte(current.as_bytes(), byte)
                .and_then(|at| Some((current.get(..at)?, current.get(at + 1..)?))),
            _ => current.split_once(separator),
        };
        let item = match split {
            Some((item, after)) => {
                rest = Some(after);
                item
            }
            None => {
                rest = None;
                current
            }
        };
        Some(trim(item))
    })
}

/// `str::trim`, without its Unicode scan when the text neither starts nor
/// ends with whitespace (an ASCII byte other than tab to carriage return
/// and space; anything else goes through `str::trim`).
fn trim(text: &str) -> &str {
    let plain = |b: &u8| b.is_ascii() && !matches!(*b, b'\t'..=b'\r' | b' ');
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(first), Some(last)) if plain(first) && plain(last) => text,
        _ => text.trim(),
    }
}

/// `item` after the first of `prefixes` it starts with. An empty prefix
/// takes the whole item without calling `strip_prefix`: through the
/// `&&str` pattern of a prefix list that call cost as much as a tenth of
/// a 1 KiB verification (measured: Asana 0.84× of the bare HMAC with it,
/// 0.99× without).
fn after_prefix<'a>(item: &'a str, prefixes: &[&str]) -> Option<&'a str> {
    prefixes.iter().find_map(|prefix| {
        if prefix.is_empty() {
            Some(item)
        } else {
            item.strip_prefix(*prefix)
        }
    })
}

/// Signature headers present kept inline (Box sends two; DocuSign names
/// five, of which a request has one per key; more still work, on the
/// heap).
const INLINE_HEADERS: usize = 2;

/// The signature headers present, in the recipe's order, with their
/// values, after checking that none is ambiguous (repeated with different
/// values). Looked up once for the timestamp and the signatures.
type Present<'a> = Few<(&'static str, &'a str), INLINE_HEADERS>;

fn signature_headers<'a>(
    headers: &Headers<'a>,
    names: &'static [&'static str],
) -> Result<Present<'a>, SignatureError> {
    let mut present = Few::new();
    for name in names {
        match headers.unique(name) {
            Ok(Some(value)) => present.push((*name, value)),
            Ok(None) => {}
            Err(reason) => return Err(malformed(name, reason)),
        }
    }
    Ok(present)
}

/// The signature headers present (see [`signature_headers`]), looked up
/// on first use and kept in `cache`.
fn looked_up<'c, 'a>(
    cache: &'c mut Option<Present<'a>>,
    headers: &Headers<'a>,
    names: &'static [&'static str],
) -> Result<&'c Present<'a>, SignatureError> {
    if cache.is_none() {
        *cache = Some(signature_headers(headers, names)?);
    }
    match cache {
        Some(present) => Ok(present),
        // Filled just above.
        None => Err(missing(names.first().copied().unwrap_or("signature"))),
    }
}

/// The signatures of a request, decoded: the fixed-length ones (HMAC,
/// Ed25519) inline, DER ones (ECDSA) on the heap. Undecodable ones are
/// skipped; past [`MAX_SIGNATURES`] they are only counted.
struct Signatures {
    /// Signature texts seen (with an expected prefix).
    texts: usize,
    fixed: Few<Tag, 2>,
    der: Vec<Vec<u8>>,
}

impl Signatures {
    fn new() -> Self {
        Self {
            texts: 0,
            fixed: Few::new(),
            der: Vec::new(),
        }
    }

    fn add(&mut self, signed: &Signed, text: &str) {
        self.texts += 1;
        if self.texts > MAX_SIGNATURES {
            return;
        }
        match signed.signature_len() {
            Some(len) => {
                if let Ok(tag) = crypto::decode_tag(signed.encoding, text, len) {
                    self.fixed.push(tag);
                }
            }
            None => {
                if let Ok(der) = BASE64.decode(text.as_bytes()) {
                    if der.len() <= 72 {
                        self.der.push(der);
                    }
                }
            }
        }
    }

    /// Signatures decoded.
    fn len(&self) -> usize {
        self.fixed.len() + self.der.len()
    }

    fn fixed(&self) -> impl Iterator<Item = &[u8]> + Clone {
        self.fixed.iter().map(Tag::as_bytes)
    }
}

impl Signed {
    /// True when the message includes the timestamp (a captured request
    /// fails once it is older than the tolerance).
    pub fn signs_timestamp(&self) -> bool {
        self.timestamp.is_some() && self.message.contains(&Part::Timestamp)
    }

    /// True when the whole body is signed: its raw bytes, or all its form
    /// parameters.
    pub fn signs_body(&self) -> bool {
        self.message.contains(&Part::Body) || self.message.contains(&Part::Form)
    }

    /// True when the signature is inside the body (a field, or one in each
    /// item): the signer, which writes headers, does not produce it.
    pub fn signature_in_body(&self) -> bool {
        matches!(
            self.signature,
            SignatureAt::Json(_) | SignatureAt::EachItem { .. }
        )
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
        present: &mut Option<Present<'a>>,
        body: Option<&'a Body>,
    ) -> Result<Option<(&'a str, i64)>, SignatureError> {
        let Some(at) = self.timestamp else {
            return Ok(None);
        };
        let (name, text): (&'static str, &'a str) = match at.source {
            TimestampSource::Header(name) => (name, headers.required(name)?),
            TimestampSource::SignatureItem(_) | TimestampSource::FirstSignatureItem => {
                let SignatureAt::Headers {
                    names, separator, ..
                } = self.signature
                else {
                    return Err(missing(key_name(at.source)));
                };
                let Some(&(header, value)) = looked_up(present, headers, names)?.iter().next()
                else {
                    return Err(missing(names.first().copied().unwrap_or("signature")));
                };
                let mut all = items(value, separator);
                let found = match at.source {
                    TimestampSource::SignatureItem(key) => {
                        let mut found = None;
                        for item in all {
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
                    _ => all.next(),
                };
                let text = found.ok_or_else(|| malformed(header, "no timestamp item"))?;
                (header, text)
            }
            TimestampSource::Json(pointer) => match body {
                Some(body) if at.format == TimeFormat::MillisNumber => {
                    (pointer, body.number(pointer)?)
                }
                Some(body) => (pointer, body.field(pointer)?),
                // The authorizer has no body: nothing to check yet.
                None => return Ok(None),
            },
        };
        let secs = parse_time(text, at.format).map_err(|reason| malformed(name, reason))?;
        Ok(Some((text, secs)))
    }

    /// The signatures, decoded into `signatures` (none when they are in
    /// the body and there is no body). Undecodable ones are skipped; none
    /// left is malformed.
    fn read_signatures<'a>(
        &self,
        headers: &Headers<'a>,
        present: &mut Option<Present<'a>>,
        body: Option<&Body>,
        signatures: &mut Signatures,
    ) -> Result<(), SignatureError> {
        let name = match self.signature {
            SignatureAt::Headers {
                names,
                prefixes,
                separator,
            } => {
                let first = names.first().copied().unwrap_or("signature");
                let skip_first = matches!(
                    self.timestamp.map(|t| t.source),
                    Some(TimestampSource::FirstSignatureItem)
                );
                let present = looked_up(present, headers, names)?;
                for &(_, value) in present.iter() {
                    for item in items(value, separator).skip(usize::from(skip_first)) {
                        if let Some(text) = after_prefix(item, prefixes) {
                            signatures.add(self, text);
                        }
                    }
                }
                let Some(&(present, _)) = present.iter().next() else {
                    return Err(missing(first));
                };
                if signatures.texts > MAX_SIGNATURES {
                    return Err(malformed(first, "too many signatures"));
                }
                if signatures.texts == 0 {
                    return Err(SignatureError::UnsupportedSignatureVersion {
                        header: Cow::Borrowed(first),
                        reason: "no signature with the expected prefix",
                    });
                }
                present
            }
            SignatureAt::Json(pointer) => match body {
                Some(body) => {
                    signatures.add(self, body.field(pointer)?);
                    pointer
                }
                None => return Ok(()),
            },
            // Read item by item (`each_item.rs`), never here.
            SignatureAt::EachItem { .. } => return Ok(()),
        };
        if signatures.len() == 0 {
            return Err(malformed(
                name,
                "no signature decodes to the expected length and encoding",
            ));
        }
        Ok(())
    }

    /// Header checks without body or secrets (the authorizer's).
    pub(crate) fn precheck(
        &self,
        headers: &Headers<'_>,
        now: DateTime<Utc>,
        tolerance_secs: Option<u64>,
    ) -> Result<(), SignatureError> {
        if let SignatureAt::EachItem { .. } = self.signature {
            // Everything it reads is in the body.
            return Ok(());
        }
        let mut present = None;
        if let Some((_, secs)) = self.read_timestamp(headers, &mut present, None)? {
            if let Some(tolerance) = tolerance_secs {
                check_tolerance(secs, now, tolerance)?;
            }
        }
        self.read_signatures(headers, &mut present, None, &mut Signatures::new())
    }

    pub(crate) fn verify<'a>(
        &self,
        context: &Context<'_>,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        now: DateTime<Utc>,
    ) -> Result<Verified<'a>, SignatureError> {
        if let SignatureAt::EachItem {
            items,
            item,
            signature,
        } = self.signature
        {
            let at = each_item::ItemsAt {
                items,
                item,
                signature,
            };
            return each_item::verify(self, &at, context, request, secrets);
        }
        let body = Body::read(self, request.body);
        // The signature headers, once (the timestamp may be one of their
        // items).
        let mut present = None;
        let timestamp = self.read_timestamp(&request.headers, &mut present, Some(&body))?;
        if let (Some((_, secs)), Some(tolerance)) = (&timestamp, context.tolerance_secs) {
            check_tolerance(*secs, now, tolerance)?;
        }
        let mut signatures = Signatures::new();
        self.read_signatures(&request.headers, &mut present, Some(&body), &mut signatures)?;

        // The message: fields of the body first (their errors come first),
        // then the other parts, on the stack.
        for part in self.message {
            if let Part::Json(pointer) = part {
                body.field(pointer)?;
            }
        }
        let timestamp_text = timestamp.map(|(text, _)| text);
        let form = if self.message.contains(&Part::Form) {
            form_message(request)?
        } else {
            Vec::new()
        };
        let piece = |part: &Part| -> Result<&[u8], SignatureError> {
            Ok(match part {
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
                Part::Json(pointer) => body.field(pointer)?.as_bytes(),
                Part::Form => &form,
            })
        };
        let mut inline: [&[u8]; INLINE_PARTS] = [&[]; INLINE_PARTS];
        let spilled: Vec<&[u8]>;
        let parts: &[&[u8]] = if self.message.len() <= INLINE_PARTS {
            for (slot, part) in inline.iter_mut().zip(self.message) {
                *slot = piece(part)?;
            }
            &inline[..self.message.len()]
        } else {
            spilled = self.message.iter().map(piece).collect::<Result<_, _>>()?;
            &spilled
        };

        let index = match self.primitive {
            Primitive::Hmac(algorithm, KeyFormat::Utf8) => {
                match_raw_key(SCHEME, algorithm, secrets, parts, signatures.fixed())?
            }
            Primitive::Hmac(algorithm, format) => {
                match_hmac_key(context.name, algorithm, format, secrets, parts, &signatures)?
            }
            Primitive::Ed25519 => match_ed25519(context.name, secrets, parts, &signatures)?,
            Primitive::EcdsaP256 => match_ecdsa(context.name, secrets, parts, &signatures)?,
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

/// HMAC with a key decoded from hex or base64 (kept with the secret).
fn match_hmac_key(
    name: &'static str,
    algorithm: Algorithm,
    format: KeyFormat,
    secrets: &[Secret],
    parts: &[&[u8]],
    signatures: &Signatures,
) -> Result<usize, SignatureError> {
    let usage = KeyUse::Hmac(algorithm, format);
    check_prepared(name, usage, secrets)?;
    for (index, secret) in secrets.iter().enumerate() {
        let prepared = secret.prepared(usage);
        let Ok(PreparedKey::Hmac(keyed)) = prepared.as_ref() else {
            continue;
        };
        let mut mac = keyed.clone();
        for part in parts {
            mac.update(part);
        }
        let tag = mac.finalize();
        if signatures
            .fixed()
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
    signatures: &Signatures,
) -> Result<usize, SignatureError> {
    use ed25519_dalek::Signature;
    check_prepared(name, KeyUse::Ed25519Hex, secrets)?;
    // Ed25519 hashes the message after the signature's R and the key: one
    // piece (borrowed when the message is one part).
    let message: Cow<'_, [u8]> = match parts {
        [one] => Cow::Borrowed(one),
        _ => Cow::Owned(parts.concat()),
    };
    for (index, secret) in secrets.iter().enumerate() {
        let prepared = secret.prepared(KeyUse::Ed25519Hex);
        let Ok(PreparedKey::Ed25519(key)) = prepared.as_ref() else {
            continue;
        };
        for sig in signatures.fixed() {
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
    signatures: &Signatures,
) -> Result<usize, SignatureError> {
    use p256::ecdsa::Signature;
    use p256::ecdsa::signature::MultipartVerifier as _;
    check_prepared(name, KeyUse::EcdsaP256Der, secrets)?;
    let sigs: Vec<Signature> = signatures
        .der
        .iter()
        .filter_map(|der| Signature::from_der(der).ok())
        .collect();
    for (index, secret) in secrets.iter().enumerate() {
        let prepared = secret.prepared(KeyUse::EcdsaP256Der);
        let Ok(PreparedKey::EcdsaP256(key)) = prepared.as_ref() else {
            continue;
        };
        // SHA-256 over the parts in order: `verify` of their concatenation.
        if sigs
            .iter()
            .any(|sig| key.multipart_verify(parts, sig).is_ok())
        {
            return Ok(index);
        }
    }
    Err(no_match(signatures.len(), secrets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_split_and_trim_as_str_split_and_trim_do() {
        let values = [
            "",
            ",",
            "a",
            " a ",
            "t=1,v1=ab, v1=cd ,",
            "\u{a0}x\u{a0},\x0by\x0b,\tz\r",
            "é,ü ,  ",
            "a;b;;c",
            "a→b→c",
        ];
        for value in values {
            for separator in [',', ';', ' ', '→'] {
                let ours: Vec<&str> = items(value, Some(separator)).collect();
                let reference: Vec<&str> = value.split(separator).map(str::trim).collect();
                assert_eq!(ours, reference, "{value:?} {separator:?}");
            }
            assert_eq!(items(value, None).collect::<Vec<_>>(), vec![value]);
        }
    }
}
