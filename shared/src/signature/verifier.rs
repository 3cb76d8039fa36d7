//! The verifier: a compiled [`SchemeConfig`] that checks requests.

use std::borrow::Cow;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::config::{DEFAULT_TOLERANCE_SECS, SchemeConfig, SchemeKind};
use super::presets::{self, Preset, PresetConfig};
use super::recipe::{self, Recipe};
use hmac::Mac as _;

use super::crypto;
use super::error::{ConfigError, SignatureError};
use super::headers::Headers;
use super::keys::{KeyUse, PreparedKey};
use super::recipe::KeyFormat;
use super::secret::Secret;
use super::{generic, github, jws, shopify, slack, standard_webhooks, stripe, twilio};
use crate::clock::Clock;

/// What a verifier looks at: the raw body bytes exactly as received, the
/// headers, and the full request URL for schemes that sign it (Twilio).
#[derive(Clone)]
pub struct SignedRequest<'a> {
    /// The raw body, byte for byte (never a re-serialised JSON value).
    pub body: &'a [u8],
    /// The request headers.
    pub headers: Headers<'a>,
    /// The full URL the partner called (scheme, host, path, query).
    pub url: Option<&'a str>,
    /// The request method, for presets that sign it (HubSpot v3).
    pub method: Option<&'a str>,
}

impl<'a> SignedRequest<'a> {
    /// A request without URL.
    pub fn new(body: &'a [u8], headers: Headers<'a>) -> Self {
        Self {
            body,
            headers,
            url: None,
            method: None,
        }
    }

    /// The same request with its method (`POST`).
    pub fn with_method(mut self, method: &'a str) -> Self {
        self.method = Some(method);
        self
    }

    /// The same request with its URL.
    pub fn with_url(mut self, url: &'a str) -> Self {
        self.url = Some(url);
        self
    }
}

impl fmt::Debug for SignedRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedRequest")
            .field("body_len", &self.body.len())
            .field("headers", &self.headers)
            .field("url", &self.url)
            .field("method", &self.method)
            .finish()
    }
}

/// A request whose signature verified. Borrows from the request's headers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified<'a> {
    /// The scheme that verified it.
    pub scheme: SchemeKind,
    /// Index, in the secrets given to the verifier, of the one that matched
    /// (tells when a partner has moved to a rotated secret).
    pub secret_index: usize,
    /// The signed timestamp in Unix seconds, for schemes that have one (see
    /// [`Verified::timestamp`]).
    pub timestamp_secs: Option<i64>,
    /// The signed message id (Standard Webhooks `webhook-id`), borrowed
    /// from the request.
    pub message_id: Option<Cow<'a, str>>,
}

impl Verified<'_> {
    /// The signed timestamp, for schemes that have one.
    pub fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.timestamp_secs.and_then(super::timestamp::to_datetime)
    }

    /// The same result, owning its data (no longer tied to the request).
    pub fn into_owned(self) -> Verified<'static> {
        Verified {
            scheme: self.scheme,
            secret_index: self.secret_index,
            timestamp_secs: self.timestamp_secs,
            message_id: self.message_id.map(|id| Cow::Owned(id.into_owned())),
        }
    }

    pub(crate) fn new(scheme: SchemeKind, secret_index: usize) -> Self {
        Self {
            scheme,
            secret_index,
            timestamp_secs: None,
            message_id: None,
        }
    }
}

/// Verifies requests for one scheme configuration. Build it once per partner
/// (it validates the configuration), then call [`Verifier::verify`] per
/// request with the partner's active secrets.
///
/// Deserializes from the same JSON/TOML as [`SchemeConfig`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SchemeConfig", into = "SchemeConfig")]
pub struct Verifier {
    config: SchemeConfig,
    compiled: Compiled,
}

/// The configuration, checked and prepared for verifying.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Compiled {
    StandardWebhooks {
        tolerance_secs: u64,
    },
    Stripe {
        tolerance_secs: u64,
    },
    Github,
    Shopify,
    Slack {
        tolerance_secs: u64,
    },
    Twilio,
    Generic(generic::Compiled),
    Preset {
        preset: &'static Preset,
        tolerance_secs: Option<u64>,
    },
}

impl Verifier {
    /// Validates `config` and builds the verifier.
    pub fn new(config: SchemeConfig) -> Result<Self, ConfigError> {
        let compiled = match &config {
            SchemeConfig::StandardWebhooks { tolerance_secs } => Compiled::StandardWebhooks {
                tolerance_secs: *tolerance_secs,
            },
            SchemeConfig::Stripe { tolerance_secs } => Compiled::Stripe {
                tolerance_secs: *tolerance_secs,
            },
            SchemeConfig::Github {} => Compiled::Github,
            SchemeConfig::Shopify {} => Compiled::Shopify,
            SchemeConfig::Slack { tolerance_secs } => Compiled::Slack {
                tolerance_secs: *tolerance_secs,
            },
            SchemeConfig::Twilio {} => Compiled::Twilio,
            SchemeConfig::GenericHmac(generic) => {
                Compiled::Generic(generic::Compiled::new(generic)?)
            }
            SchemeConfig::Preset(named) => compile_preset(named)?,
        };
        Ok(Self { config, compiled })
    }

    /// The scheme with its default options (not for `generic-hmac`, which
    /// needs at least a header name).
    pub fn for_scheme(kind: SchemeKind) -> Result<Self, ConfigError> {
        let config = SchemeConfig::default_for(kind).ok_or(ConfigError::Invalid {
            field: "header",
            reason: "generic-hmac needs a header name",
        })?;
        Self::new(config)
    }

    /// The configuration this verifier was built from.
    pub fn config(&self) -> &SchemeConfig {
        &self.config
    }

    /// The scheme that verifies: for a preset that is one of the
    /// hand-written schemes (`{"scheme":"preset","name":"clerk"}`), that
    /// scheme (`standard-webhooks`), as [`Verified::scheme`] reports it.
    pub fn scheme(&self) -> SchemeKind {
        match &self.compiled {
            Compiled::StandardWebhooks { .. } => SchemeKind::StandardWebhooks,
            Compiled::Stripe { .. } => SchemeKind::Stripe,
            Compiled::Github => SchemeKind::Github,
            Compiled::Shopify => SchemeKind::Shopify,
            Compiled::Slack { .. } => SchemeKind::Slack,
            Compiled::Twilio => SchemeKind::Twilio,
            Compiled::Generic(_) => SchemeKind::GenericHmac,
            Compiled::Preset { .. } => SchemeKind::Preset,
        }
    }

    /// Verifies `request` against `secrets` (any one may match), reading the
    /// time from `clock`.
    pub fn verify<'a>(
        &self,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        clock: &dyn Clock,
    ) -> Result<Verified<'a>, SignatureError> {
        self.verify_at(request, secrets, clock.now())
    }

    /// Verifies `request` against `secrets` (any one may match) at time `now`.
    ///
    /// True when the signature covers a timestamp checked against the
    /// tolerance, or a message id (Standard Webhooks, Stripe, Slack, a
    /// generic scheme whose template signs `{timestamp}`): a captured request
    /// cannot be sent again later, or under another id. False for GitHub,
    /// Shopify, Twilio and a generic scheme signing only the body: their
    /// event id header is not signed, so a captured request resent with a
    /// fresh id verifies (hookbox then deduplicates on the body as well).
    pub fn signs_a_timestamp_or_id(&self) -> bool {
        match &self.compiled {
            Compiled::StandardWebhooks { .. }
            | Compiled::Stripe { .. }
            | Compiled::Slack { .. } => true,
            Compiled::Github | Compiled::Shopify | Compiled::Twilio => false,
            Compiled::Generic(generic) => generic.signs_timestamp(),
            Compiled::Preset {
                preset,
                tolerance_secs,
            } => match &preset.recipe {
                Recipe::Signed(signed) => signed.signs_timestamp() && tolerance_secs.is_some(),
                Recipe::Scheme(_)
                | Recipe::Token { .. }
                | Recipe::BasicAuth
                | Recipe::Twilio(_)
                | Recipe::Jws { .. } => false,
            },
        }
    }

    /// Order of checks: headers present and well formed, timestamp inside
    /// the tolerance, then the signatures. The first failing check is the
    /// error.
    pub fn verify_at<'a>(
        &self,
        request: &SignedRequest<'a>,
        secrets: &[Secret],
        now: DateTime<Utc>,
    ) -> Result<Verified<'a>, SignatureError> {
        match &self.compiled {
            Compiled::StandardWebhooks { tolerance_secs } => {
                standard_webhooks::verify(request, secrets, now, *tolerance_secs)
            }
            Compiled::Stripe { tolerance_secs } => {
                stripe::verify(request, secrets, now, *tolerance_secs)
            }
            Compiled::Github => github::verify(request, secrets),
            Compiled::Shopify => shopify::verify(request, secrets),
            Compiled::Slack { tolerance_secs } => {
                slack::verify(request, secrets, now, *tolerance_secs)
            }
            Compiled::Twilio => twilio::verify(request, secrets),
            Compiled::Generic(generic) => generic.verify(request, secrets, now),
            Compiled::Preset {
                preset,
                tolerance_secs,
            } => match &preset.recipe {
                Recipe::Signed(signed) => {
                    let context = recipe::Context {
                        name: preset.name,
                        tolerance_secs: *tolerance_secs,
                        method: request.method,
                    };
                    signed.verify(&context, request, secrets, now)
                }
                Recipe::Token { header } => recipe::verify_token(header, false, request, secrets),
                Recipe::BasicAuth => recipe::verify_token(AUTHORIZATION, true, request, secrets),
                Recipe::Jws { header, issuer } => jws::verify(header, issuer, request, secrets),
                Recipe::Twilio(algorithm) => {
                    twilio::verify_with(SchemeKind::Preset, *algorithm, request, secrets)
                }
                // Compiled as the scheme itself (see `compile_preset`).
                Recipe::Scheme(_) => Err(SignatureError::NoSecrets),
            },
        }
    }

    /// The checks that need neither body nor secrets: signature headers
    /// present and well formed, timestamp inside the tolerance. For the API
    /// Gateway authorizer, which never sees the body. A request that passes
    /// must still be verified with [`Verifier::verify`].
    pub fn precheck(
        &self,
        headers: &Headers<'_>,
        now: DateTime<Utc>,
    ) -> Result<(), SignatureError> {
        match &self.compiled {
            Compiled::StandardWebhooks { tolerance_secs } => {
                standard_webhooks::precheck(headers, now, *tolerance_secs)
            }
            Compiled::Stripe { tolerance_secs } => stripe::precheck(headers, now, *tolerance_secs),
            Compiled::Github => github::precheck(headers),
            Compiled::Shopify => shopify::precheck(headers),
            Compiled::Slack { tolerance_secs } => slack::precheck(headers, now, *tolerance_secs),
            Compiled::Twilio => twilio::precheck(headers),
            Compiled::Generic(generic) => generic.precheck(headers, now),
            Compiled::Preset {
                preset,
                tolerance_secs,
            } => match &preset.recipe {
                Recipe::Signed(signed) => signed.precheck(headers, now, *tolerance_secs),
                Recipe::Token { header } => recipe::read_token(header, false, headers).map(|_| ()),
                Recipe::BasicAuth => recipe::read_token(AUTHORIZATION, true, headers).map(|_| ()),
                Recipe::Jws { header, .. } => jws::precheck(header, headers),
                Recipe::Twilio(algorithm) => twilio::precheck_with(headers, *algorithm),
                Recipe::Scheme(_) => Ok(()),
            },
        }
    }
}

const AUTHORIZATION: &str = "Authorization";

/// A preset by name: the hand-written scheme itself when the preset is one,
/// else its recipe.
fn compile_preset(named: &PresetConfig) -> Result<Compiled, ConfigError> {
    let preset = presets::get(&named.name).ok_or(ConfigError::Invalid {
        field: "name",
        reason: "unknown preset",
    })?;
    let tolerance = named.tolerance_secs.or(preset.tolerance_secs);
    Ok(match preset.recipe {
        Recipe::Scheme(kind) => {
            let with_tolerance = tolerance.unwrap_or(DEFAULT_TOLERANCE_SECS);
            match kind {
                SchemeKind::StandardWebhooks => Compiled::StandardWebhooks {
                    tolerance_secs: with_tolerance,
                },
                SchemeKind::Stripe => Compiled::Stripe {
                    tolerance_secs: with_tolerance,
                },
                SchemeKind::Slack => Compiled::Slack {
                    tolerance_secs: with_tolerance,
                },
                SchemeKind::Github => Compiled::Github,
                SchemeKind::Shopify => Compiled::Shopify,
                SchemeKind::Twilio => Compiled::Twilio,
                SchemeKind::GenericHmac | SchemeKind::Preset => {
                    return Err(ConfigError::Invalid {
                        field: "name",
                        reason: "preset names a scheme that needs options",
                    });
                }
            }
        }
        Recipe::Signed(_)
        | Recipe::Token { .. }
        | Recipe::BasicAuth
        | Recipe::Twilio(_)
        | Recipe::Jws { .. } => Compiled::Preset {
            preset,
            tolerance_secs: tolerance,
        },
    })
}

impl TryFrom<SchemeConfig> for Verifier {
    type Error = ConfigError;

    fn try_from(config: SchemeConfig) -> Result<Self, Self::Error> {
        Self::new(config)
    }
}

impl From<Verifier> for SchemeConfig {
    fn from(verifier: Verifier) -> Self {
        verifier.config
    }
}

/// Refuses an empty list and empty secrets, before any MAC is computed (so a
/// bad secret is reported even when another one would have matched).
pub(crate) fn check_secrets(scheme: SchemeKind, secrets: &[Secret]) -> Result<(), SignatureError> {
    if secrets.is_empty() {
        return Err(SignatureError::NoSecrets);
    }
    if let Some(index) = secrets.iter().position(|s| s.bytes().is_empty()) {
        return Err(SignatureError::InvalidSecret {
            index,
            scheme: scheme.as_str(),
            reason: "secret is empty",
        });
    }
    Ok(())
}

/// For schemes whose key is the secret's UTF-8 bytes: the index of the first
/// secret whose HMAC over `parts` equals one of `candidates`.
pub(crate) fn match_raw_key<'c, I>(
    scheme: SchemeKind,
    algorithm: super::config::Algorithm,
    secrets: &[Secret],
    parts: &[&[u8]],
    candidates: I,
) -> Result<usize, SignatureError>
where
    I: IntoIterator<Item = &'c [u8]> + Clone,
{
    check_secrets(scheme, secrets)?;
    let matches = |tag: &[u8]| {
        candidates
            .clone()
            .into_iter()
            .any(|candidate| crypto::ct_eq(tag, candidate))
    };
    for (index, secret) in secrets.iter().enumerate() {
        let found = if algorithm == super::config::Algorithm::Sha256 {
            // The common case: reuse the keyed state cached in the secret.
            let mut mac = secret
                .raw_sha256()
                .ok_or_else(|| key_rejected(scheme, index))?
                .clone();
            for part in parts {
                mac.update(part);
            }
            matches(&mac.finalize().into_bytes())
        } else {
            // SHA-1, SHA-512: the keyed state kept with the secret.
            let prepared = secret.prepared(KeyUse::Hmac(algorithm, KeyFormat::Utf8));
            let Ok(PreparedKey::Hmac(keyed)) = prepared.as_ref() else {
                return Err(key_rejected(scheme, index));
            };
            let mut mac = keyed.clone();
            for part in parts {
                mac.update(part);
            }
            matches(mac.finalize().as_bytes())
        };
        if found {
            return Ok(index);
        }
    }
    Err(SignatureError::NoMatchingSignature {
        candidates: candidates.into_iter().count(),
        secrets: secrets.len(),
        item: None,
    })
}

pub(crate) fn key_rejected(scheme: SchemeKind, index: usize) -> SignatureError {
    SignatureError::InvalidSecret {
        index,
        scheme: scheme.as_str(),
        reason: "refused as an HMAC key",
    }
}
