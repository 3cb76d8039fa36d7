//! Signing a request as a preset's provider would (`hookbox send
//! --preset`, the preset tests' round trips, the signature bench): the
//! registry's recipe read the other way round, so there is no second list
//! of how each provider signs.
//!
//! A shared secret signs every HMAC recipe, the hand-written schemes, a
//! token and basic credentials. A public-key recipe (Discord's Ed25519,
//! SendGrid's ECDSA) is verified with the provider's public key, which
//! cannot sign: only an explicit private key of one's own
//! ([`SigningKey::Ed25519Seed`], [`SigningKey::EcdsaP256`]) signs it, for
//! tests and benchmarks. A signature carried inside the body (Mailgun, each
//! item of Adyen's standard notifications) is not produced.

use std::borrow::Cow;

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, Utc};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use super::super::config::{Algorithm, Encoding, SchemeKind};
use super::super::crypto::{BASE64, BASE64_OUT, MacState};
use super::super::error::SignError;
use super::super::parse;
use super::super::recipe::{
    KeyFormat, Part, Primitive, Recipe, SignatureAt, Signed, TimeFormat, TimestampSource,
};
use super::super::secret::Secret;
use super::super::{jws, standard_webhooks};
use super::{EventField, Preset};

/// A request to sign: what the provider would send, before its signature.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The body, as it will be sent.
    pub body: &'a [u8],
    /// Headers the request carries besides the signature (event id and
    /// type, `Content-Type`): read where the recipe signs a header (Twitch's
    /// message id) or an id (Standard Webhooks).
    pub headers: &'a [(&'a str, &'a str)],
    /// The full URL the request is sent to (Twilio, Square, HubSpot sign it).
    pub url: Option<&'a str>,
    /// The request method (HubSpot v3 signs it).
    pub method: &'a str,
    /// The signing time (the signed timestamp, where the recipe has one).
    pub timestamp: DateTime<Utc>,
}

/// What signs. `Debug` shows the kind of key, never its bytes.
#[derive(Clone, Copy)]
pub enum SigningKey<'a> {
    /// The secret as the preset's verifier takes it (HMAC recipes, the
    /// hand-written schemes, tokens, basic credentials).
    Secret(&'a Secret),
    /// An Ed25519 private key (32-byte seed) of one's own, for a preset
    /// whose provider signs with Ed25519.
    Ed25519Seed(&'a [u8; 32]),
    /// A P-256 private key (32-byte scalar) of one's own, for a preset whose
    /// provider signs with ECDSA P-256.
    EcdsaP256(&'a [u8; 32]),
}

impl std::fmt::Debug for SigningKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret(secret) => f.debug_tuple("Secret").field(secret).finish(),
            Self::Ed25519Seed(_) => f.write_str("Ed25519Seed(***)"),
            Self::EcdsaP256(_) => f.write_str("EcdsaP256(***)"),
        }
    }
}

/// Why a request could not be signed as a preset's provider would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PresetSignError {
    /// The preset's recipe cannot be signed with the key given.
    #[error("preset `{preset}` cannot be signed: {reason}")]
    Unsupported {
        /// The preset.
        preset: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The recipe signs a part of the request that was not given.
    #[error("preset `{preset}` signs {what}, which the request does not have")]
    Missing {
        /// The preset.
        preset: &'static str,
        /// The missing part (a header name, a JSON pointer, the URL).
        what: Cow<'static, str>,
    },
    /// The secret cannot be the preset's key.
    #[error("preset `{preset}`: the secret cannot sign: {reason}")]
    InvalidSecret {
        /// The preset.
        preset: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The Standard Webhooks signer refused the request.
    #[error("preset `{preset}`: {source}")]
    StandardWebhooks {
        /// The preset.
        preset: &'static str,
        /// The signer's reason.
        #[source]
        source: SignError,
    },
}

/// The headers to add, in order.
pub type SignatureHeaders = Vec<(&'static str, String)>;

impl SigningKey<'_> {
    /// The secret the preset's verifier takes for this key: the secret
    /// itself, or the public key of a private key (Ed25519: 64 hexadecimal
    /// digits; P-256: base64 of the DER `SubjectPublicKeyInfo`). `None` for
    /// a scalar that is not a P-256 private key.
    pub fn verifying_secret(&self) -> Option<Secret> {
        match self {
            Self::Secret(secret) => Some((*secret).clone()),
            Self::Ed25519Seed(seed) => {
                let key = ed25519_dalek::SigningKey::from_bytes(seed);
                Some(Secret::new(hex::encode(key.verifying_key().to_bytes())))
            }
            Self::EcdsaP256(scalar) => {
                let key = p256::ecdsa::SigningKey::from_slice(scalar.as_slice()).ok()?;
                let point = key.verifying_key().to_sec1_point(false);
                // SubjectPublicKeyInfo of id-ecPublicKey on prime256v1,
                // then the uncompressed point as the BIT STRING.
                let mut der = hex::decode(P256_SPKI_PREFIX).ok()?;
                der.extend_from_slice(point.as_bytes());
                Some(Secret::new(BASE64_OUT.encode(der)))
            }
        }
    }
}

/// DER of `SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING
/// (66 bytes, no unused bits) }` up to the point.
const P256_SPKI_PREFIX: &str = "3059301306072a8648ce3d020106082a8648ce3d030107034200";

impl Preset {
    /// The headers the provider would add to `outgoing`, signed with `key`.
    /// The verifier of this preset accepts the request with the same
    /// secret (or the public key of the private key) at the signing time.
    pub fn sign(
        &self,
        outgoing: &Outgoing<'_>,
        key: SigningKey<'_>,
    ) -> Result<SignatureHeaders, PresetSignError> {
        let signer = Signer {
            preset: self,
            outgoing,
        };
        match (self.recipe, key) {
            (Recipe::Scheme(kind), SigningKey::Secret(secret)) => signer.scheme(kind, secret),
            (Recipe::Signed(signed), key) => signer.signed(&signed, key),
            (Recipe::Token { header }, SigningKey::Secret(secret)) => {
                Ok(vec![(header, secret.expose_secret().to_owned())])
            }
            (Recipe::BasicAuth, SigningKey::Secret(secret)) => {
                let credentials = secret.expose_secret();
                if !credentials.contains(':') {
                    return Err(signer.invalid("basic credentials are `user:password`"));
                }
                Ok(vec![(
                    "Authorization",
                    format!("Basic {}", BASE64_OUT.encode(credentials)),
                )])
            }
            (Recipe::Twilio(algorithm), SigningKey::Secret(secret)) => {
                signer.twilio(algorithm, secret.bytes())
            }
            (Recipe::Jws { header, issuer }, SigningKey::Secret(secret)) => {
                let token = jws::sign(issuer, secret, outgoing.body)
                    .ok_or_else(|| signer.invalid("refused as an HMAC key"))?;
                Ok(vec![(header, token)])
            }
            (_, _) => {
                Err(signer.invalid("this preset signs with a shared secret, not a private key"))
            }
        }
    }
}

impl Preset {
    /// The bytes the recipe's primitive covers when the provider signs
    /// `outgoing`, as [`Preset::sign`] builds them: Standard Webhooks'
    /// `id.timestamp.body`, Stripe's `t.body`, Twilio's URL and sorted
    /// form parameters, a [`Signed`] recipe's parts in order. For a JWS
    /// recipe, the body (its `sha256` claim hashes it; the token's own MAC
    /// covers only its short header and claims). The signature bench
    /// times the bare primitive over exactly these bytes. Tokens and basic
    /// credentials have no primitive, and a signature carried inside the
    /// body (Mailgun, Adyen's standard notifications) is not produced: both
    /// are refused.
    pub fn signed_message(&self, outgoing: &Outgoing<'_>) -> Result<Vec<u8>, PresetSignError> {
        let signer = Signer {
            preset: self,
            outgoing,
        };
        let body = outgoing.body;
        let joined = |parts: &[&[u8]]| parts.concat();
        match self.recipe {
            Recipe::Scheme(kind) => match kind {
                SchemeKind::StandardWebhooks => {
                    let svix = self.event_id == EventField::Header("svix-id");
                    let id = signer.header(if svix { "svix-id" } else { "webhook-id" })?;
                    let t = signer.seconds()?;
                    Ok(joined(&[id.as_bytes(), b".", t.as_bytes(), b".", body]))
                }
                SchemeKind::Stripe => {
                    let t = signer.seconds()?;
                    Ok(joined(&[t.as_bytes(), b".", body]))
                }
                SchemeKind::Github | SchemeKind::Shopify => Ok(body.to_vec()),
                SchemeKind::Slack => {
                    let t = signer.seconds()?;
                    Ok(joined(&[b"v0:", t.as_bytes(), b":", body]))
                }
                SchemeKind::Twilio => signer.twilio_message(),
                SchemeKind::GenericHmac | SchemeKind::Preset => {
                    Err(signer.unsupported("its scheme has no fixed recipe"))
                }
            },
            Recipe::Signed(signed) => {
                if signed.signature_in_body() {
                    return Err(signer.unsupported(
                        "the provider carries its signature inside the body, which this signer does not write",
                    ));
                }
                signer.signed_message(&signed).map(|(_, message)| message)
            }
            Recipe::Twilio(_) => signer.twilio_message(),
            Recipe::Jws { .. } => Ok(body.to_vec()),
            Recipe::Token { .. } | Recipe::BasicAuth => {
                Err(signer.unsupported("a token or basic credentials have no primitive"))
            }
        }
    }
}

struct Signer<'p, 'o> {
    preset: &'p Preset,
    outgoing: &'p Outgoing<'o>,
}

impl Signer<'_, '_> {
    fn name(&self) -> &'static str {
        self.preset.name
    }

    fn unsupported(&self, reason: &'static str) -> PresetSignError {
        PresetSignError::Unsupported {
            preset: self.name(),
            reason,
        }
    }

    fn invalid(&self, reason: &'static str) -> PresetSignError {
        PresetSignError::InvalidSecret {
            preset: self.name(),
            reason,
        }
    }

    fn missing(&self, what: impl Into<Cow<'static, str>>) -> PresetSignError {
        PresetSignError::Missing {
            preset: self.name(),
            what: what.into(),
        }
    }

    fn header(&self, name: &'static str) -> Result<&str, PresetSignError> {
        self.outgoing
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .ok_or_else(|| self.missing(format!("the header `{name}`")))
    }

    fn url(&self) -> Result<&str, PresetSignError> {
        self.outgoing.url.ok_or_else(|| self.missing("the URL"))
    }

    fn seconds(&self) -> Result<String, PresetSignError> {
        let secs = self.outgoing.timestamp.timestamp();
        if secs < 0 {
            return Err(self.unsupported("the signing time is before 1970"));
        }
        Ok(secs.to_string())
    }

    fn timestamp(&self, format: TimeFormat) -> Result<String, PresetSignError> {
        let seconds = self.seconds()?;
        Ok(match format {
            TimeFormat::Seconds => seconds,
            TimeFormat::Millis | TimeFormat::MillisNumber => {
                self.outgoing.timestamp.timestamp_millis().to_string()
            }
            TimeFormat::Rfc3339 => self
                .outgoing
                .timestamp
                .to_rfc3339_opts(SecondsFormat::AutoSi, true),
            TimeFormat::UtcDateTime => self
                .outgoing
                .timestamp
                .format("%Y-%m-%dT%H:%M:%S%.6f")
                .to_string(),
        })
    }

    fn json_field(&self, pointer: &'static str) -> Result<String, PresetSignError> {
        let value: serde_json::Value =
            serde_json::from_slice(self.outgoing.body).map_err(|_| {
                self.missing(format!("the body field `{pointer}` (the body is not JSON)"))
            })?;
        match value.pointer(pointer) {
            Some(serde_json::Value::String(text)) => Ok(text.clone()),
            Some(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                Ok(value.to_string())
            }
            _ => Err(self.missing(format!("the body field `{pointer}`"))),
        }
    }

    fn mac(
        &self,
        algorithm: Algorithm,
        key: &[u8],
        parts: &[&[u8]],
    ) -> Result<Vec<u8>, PresetSignError> {
        let mut mac =
            MacState::new(algorithm, key).map_err(|_| self.invalid("refused as an HMAC key"))?;
        for part in parts {
            mac.update(part);
        }
        Ok(mac.finalize().as_bytes().to_vec())
    }

    /// The hand-written schemes.
    fn scheme(
        &self,
        kind: SchemeKind,
        secret: &Secret,
    ) -> Result<SignatureHeaders, PresetSignError> {
        let body = self.outgoing.body;
        let key = secret.bytes();
        match kind {
            SchemeKind::StandardWebhooks => self.standard_webhooks(secret),
            SchemeKind::Stripe => {
                let t = self.seconds()?;
                let tag = self.mac(Algorithm::Sha256, key, &[t.as_bytes(), b".", body])?;
                Ok(vec![(
                    "Stripe-Signature",
                    format!("t={t},v1={}", hex::encode(tag)),
                )])
            }
            SchemeKind::Github => {
                let tag = self.mac(Algorithm::Sha256, key, &[body])?;
                Ok(vec![(
                    "X-Hub-Signature-256",
                    format!("sha256={}", hex::encode(tag)),
                )])
            }
            SchemeKind::Shopify => {
                let tag = self.mac(Algorithm::Sha256, key, &[body])?;
                Ok(vec![("X-Shopify-Hmac-Sha256", BASE64_OUT.encode(tag))])
            }
            SchemeKind::Slack => {
                let t = self.seconds()?;
                let tag = self.mac(Algorithm::Sha256, key, &[b"v0:", t.as_bytes(), b":", body])?;
                Ok(vec![
                    ("X-Slack-Request-Timestamp", t),
                    ("X-Slack-Signature", format!("v0={}", hex::encode(tag))),
                ])
            }
            SchemeKind::Twilio => self.twilio(Algorithm::Sha1, key),
            SchemeKind::GenericHmac | SchemeKind::Preset => {
                Err(self.unsupported("its scheme has no fixed recipe"))
            }
        }
    }

    /// Standard Webhooks under the header names the preset reads its id
    /// from (`svix-*` for Svix senders).
    fn standard_webhooks(&self, secret: &Secret) -> Result<SignatureHeaders, PresetSignError> {
        let svix = self.preset.event_id == EventField::Header("svix-id");
        let (id_name, timestamp_name, signature_name) = if svix {
            ("svix-id", "svix-timestamp", "svix-signature")
        } else {
            ("webhook-id", "webhook-timestamp", "webhook-signature")
        };
        let id = self.header(id_name)?;
        let signed = standard_webhooks::sign(
            id,
            self.outgoing.timestamp,
            self.outgoing.body,
            std::slice::from_ref(secret),
        )
        .map_err(|source| PresetSignError::StandardWebhooks {
            preset: self.name(),
            source,
        })?;
        // The id is the request's own header already.
        Ok(vec![
            (timestamp_name, signed.timestamp),
            (signature_name, signed.signature),
        ])
    }

    /// Twilio: the URL, then the form parameters sorted (as the verifier
    /// reads them).
    fn twilio(
        &self,
        algorithm: Algorithm,
        key: &[u8],
    ) -> Result<SignatureHeaders, PresetSignError> {
        let message = self.twilio_message()?;
        let tag = self.mac(algorithm, key, &[&message])?;
        Ok(vec![("X-Twilio-Signature", BASE64_OUT.encode(tag))])
    }

    /// What Twilio's recipe MACs: the URL, then each form parameter's name
    /// and value, sorted (none for a body bound by `bodySHA256`).
    fn twilio_message(&self) -> Result<Vec<u8>, PresetSignError> {
        let url = self.url()?;
        let body_hash =
            parse::twilio_body_sha256(url).map_err(|_| self.unsupported("the URL is not valid"))?;
        let mut message = url.as_bytes().to_vec();
        if let Some(expected) = body_hash {
            // JSON bodies: the URL signs the body's hash, no parameters.
            if Sha256::digest(self.outgoing.body).as_slice() != expected.as_slice() {
                return Err(self.unsupported("the URL's `bodySHA256` is not the body's"));
            }
        } else if self.is_form() {
            message.extend_from_slice(&self.form_params()?);
        } else if !self.outgoing.body.is_empty() {
            return Err(self.unsupported(
                "Twilio signs form parameters (send `Content-Type: application/x-www-form-urlencoded`) \
                 or a body bound by a `bodySHA256` parameter of the URL",
            ));
        }
        Ok(message)
    }

    fn is_form(&self) -> bool {
        self.header("Content-Type")
            .is_ok_and(parse::is_form_content_type)
    }

    /// [`Part::Form`]: the form parameters decoded and sorted, each name
    /// then its value (none for an empty body).
    fn form_params(&self) -> Result<Vec<u8>, PresetSignError> {
        if !self.is_form() {
            if self.outgoing.body.is_empty() {
                return Ok(Vec::new());
            }
            return Err(self.unsupported(
                "the recipe signs form parameters (send `Content-Type: \
                 application/x-www-form-urlencoded`)",
            ));
        }
        let mut params: Vec<(Cow<'_, str>, Cow<'_, str>)> =
            form_urlencoded::parse(self.outgoing.body).collect();
        params.sort();
        params.dedup();
        let mut message = Vec::new();
        for (name, value) in &params {
            message.extend_from_slice(name.as_bytes());
            message.extend_from_slice(value.as_bytes());
        }
        Ok(message)
    }

    /// The signed timestamp as the provider writes it (where the recipe
    /// has one) and the message a [`Signed`] recipe's primitive covers.
    fn signed_message(
        &self,
        signed: &Signed,
    ) -> Result<(Option<String>, Vec<u8>), PresetSignError> {
        let timestamp = match signed.timestamp {
            None => None,
            Some(at) => Some(match at.source {
                TimestampSource::Json(pointer) => self.json_field(pointer)?,
                _ => self.timestamp(at.format)?,
            }),
        };
        let mut message = Vec::new();
        for part in signed.message {
            let owned;
            let form;
            message.extend_from_slice(match part {
                Part::Body => self.outgoing.body,
                Part::Text(text) => text.as_bytes(),
                Part::Timestamp => timestamp.as_deref().unwrap_or_default().as_bytes(),
                Part::Method => self.outgoing.method.as_bytes(),
                Part::Url => self.url()?.as_bytes(),
                Part::Json(pointer) => {
                    owned = self.json_field(pointer)?;
                    owned.as_bytes()
                }
                Part::Form => {
                    form = self.form_params()?;
                    &form
                }
                Part::Header(header) => self.header(header)?.as_bytes(),
            });
        }
        Ok((timestamp, message))
    }

    /// A [`Signed`] recipe.
    fn signed(
        &self,
        signed: &Signed,
        key: SigningKey<'_>,
    ) -> Result<SignatureHeaders, PresetSignError> {
        let SignatureAt::Headers {
            names,
            prefixes,
            separator,
        } = signed.signature
        else {
            return Err(self.unsupported(
                "the provider carries its signature inside the body, which this signer does not write",
            ));
        };
        let name = names
            .first()
            .copied()
            .ok_or_else(|| self.unsupported("the recipe names no signature header"))?;

        let (timestamp, message) = self.signed_message(signed)?;
        let parts = [message.as_slice()];

        let signature = match (signed.primitive, key) {
            (Primitive::Hmac(algorithm, format), SigningKey::Secret(secret)) => {
                let text = secret.expose_secret();
                let key = Zeroizing::new(match format {
                    KeyFormat::Utf8 => text.as_bytes().to_vec(),
                    KeyFormat::Hex => {
                        hex::decode(text).map_err(|_| self.invalid("secret is not hexadecimal"))?
                    }
                    KeyFormat::Base64 => BASE64
                        .decode(text)
                        .map_err(|_| self.invalid("secret is not base64"))?,
                });
                self.mac(algorithm, &key, &parts)?
            }
            (Primitive::Ed25519, SigningKey::Ed25519Seed(seed)) => {
                use ed25519_dalek::Signer as _;
                let key = ed25519_dalek::SigningKey::from_bytes(seed);
                key.sign(&parts.concat()).to_bytes().to_vec()
            }
            (Primitive::EcdsaP256, SigningKey::EcdsaP256(scalar)) => {
                use p256::ecdsa::signature::Signer as _;
                let key = p256::ecdsa::SigningKey::from_slice(scalar.as_slice())
                    .map_err(|_| self.invalid("not a P-256 private key"))?;
                let signature: p256::ecdsa::Signature = key.sign(&parts.concat());
                signature.to_der().as_bytes().to_vec()
            }
            (Primitive::Ed25519 | Primitive::EcdsaP256, SigningKey::Secret(_)) => {
                return Err(self.unsupported(
                    "the provider signs with its private key; the preset's secret is the \
                     provider's public key, which verifies but cannot sign",
                ));
            }
            (_, _) => return Err(self.invalid("the key does not fit the preset's primitive")),
        };
        let encoded = match signed.encoding {
            Encoding::Hex => hex::encode(&signature),
            Encoding::Base64 => BASE64_OUT.encode(&signature),
        };
        let value = format!("{}{encoded}", prefixes.first().copied().unwrap_or_default());

        let Some(at) = signed.timestamp else {
            return Ok(vec![(name, value)]);
        };
        let timestamp = timestamp.unwrap_or_default();
        let item = |sep: Option<char>| {
            sep.ok_or_else(|| self.unsupported("the timestamp item needs a separator"))
        };
        Ok(match at.source {
            TimestampSource::Header(header) => vec![(header, timestamp), (name, value)],
            TimestampSource::SignatureItem(key) => {
                vec![(
                    name,
                    format!("{key}={timestamp}{}{value}", item(separator)?),
                )]
            }
            TimestampSource::FirstSignatureItem => {
                vec![(name, format!("{timestamp}{}{value}", item(separator)?))]
            }
            // In the body, as given.
            TimestampSource::Json(_) => vec![(name, value)],
        })
    }
}
