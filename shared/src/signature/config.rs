//! Scheme configuration: what a partner's configuration says about how it
//! signs. Deserializable from JSON or TOML, e.g. `{"scheme":"stripe"}` or
//! `{"scheme":"generic-hmac","header":"X-Sig","algorithm":"sha256",
//! "encoding":"hex","prefix":"sha256="}`. Unknown fields are rejected: a
//! misspelt security option must not be silently ignored.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::presets::PresetConfig;

/// Timestamp tolerance used when a configuration does not set one: 300 s,
/// the default of Standard Webhooks, Stripe and Slack.
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;

fn default_tolerance() -> u64 {
    DEFAULT_TOLERANCE_SECS
}

/// How a partner signs its webhooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "kebab-case", deny_unknown_fields)]
#[non_exhaustive]
pub enum SchemeConfig {
    /// Standard Webhooks (also Svix): `webhook-id`, `webhook-timestamp`,
    /// `webhook-signature` (or the `svix-*` names); `v1` HMAC-SHA256 with a
    /// `whsec_` secret and `v1a` Ed25519 with a `whpk_` public key.
    StandardWebhooks {
        /// Accepted clock difference, in seconds (both directions).
        #[serde(default = "default_tolerance")]
        tolerance_secs: u64,
    },
    /// Stripe: `Stripe-Signature: t=…,v1=…`.
    Stripe {
        /// Accepted clock difference, in seconds (both directions).
        #[serde(default = "default_tolerance")]
        tolerance_secs: u64,
    },
    /// GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body.
    Github {},
    /// Shopify: `X-Shopify-Hmac-Sha256` (or `shopify-hmac-sha256`), base64
    /// HMAC-SHA256 over the body.
    Shopify {},
    /// Slack: `X-Slack-Signature: v0=<hex>` over `v0:{timestamp}:{body}`.
    Slack {
        /// Accepted clock difference, in seconds (both directions).
        #[serde(default = "default_tolerance")]
        tolerance_secs: u64,
    },
    /// Twilio: `X-Twilio-Signature`, base64 HMAC-SHA1 over the URL and the
    /// sorted form parameters (or `bodySHA256` in the URL for JSON bodies).
    Twilio {},
    /// Any other "HMAC of the body in a header" scheme.
    GenericHmac(GenericHmacConfig),
    /// A provider preset of the registry ([`super::presets`]) by name, e.g.
    /// `{"scheme":"preset","name":"paddle"}`.
    Preset(PresetConfig),
}

impl SchemeConfig {
    /// The scheme with its default options.
    pub fn default_for(kind: SchemeKind) -> Option<Self> {
        Some(match kind {
            SchemeKind::StandardWebhooks => Self::StandardWebhooks {
                tolerance_secs: DEFAULT_TOLERANCE_SECS,
            },
            SchemeKind::Stripe => Self::Stripe {
                tolerance_secs: DEFAULT_TOLERANCE_SECS,
            },
            SchemeKind::Github => Self::Github {},
            SchemeKind::Shopify => Self::Shopify {},
            SchemeKind::Slack => Self::Slack {
                tolerance_secs: DEFAULT_TOLERANCE_SECS,
            },
            SchemeKind::Twilio => Self::Twilio {},
            // Generic HMAC has no defaults: the header name is required;
            // a preset needs its name.
            SchemeKind::GenericHmac | SchemeKind::Preset => return None,
        })
    }

    /// Which scheme this is.
    pub fn kind(&self) -> SchemeKind {
        match self {
            Self::StandardWebhooks { .. } => SchemeKind::StandardWebhooks,
            Self::Stripe { .. } => SchemeKind::Stripe,
            Self::Github {} => SchemeKind::Github,
            Self::Shopify {} => SchemeKind::Shopify,
            Self::Slack { .. } => SchemeKind::Slack,
            Self::Twilio {} => SchemeKind::Twilio,
            Self::GenericHmac(_) => SchemeKind::GenericHmac,
            Self::Preset(_) => SchemeKind::Preset,
        }
    }

    /// The timestamp tolerance, for schemes that sign a timestamp.
    pub fn tolerance_secs(&self) -> Option<u64> {
        match self {
            Self::StandardWebhooks { tolerance_secs }
            | Self::Stripe { tolerance_secs }
            | Self::Slack { tolerance_secs } => Some(*tolerance_secs),
            Self::GenericHmac(generic) => generic
                .timestamp_header
                .as_ref()
                .map(|_| generic.tolerance_secs),
            Self::Preset(preset) => preset.tolerance_secs.or_else(|| {
                super::presets::get(&preset.name).and_then(|found| found.tolerance_secs)
            }),
            Self::Github {} | Self::Shopify {} | Self::Twilio {} => None,
        }
    }

    /// Sets the timestamp tolerance; no effect on schemes without a timestamp.
    pub fn set_tolerance_secs(&mut self, secs: u64) {
        match self {
            Self::StandardWebhooks { tolerance_secs }
            | Self::Stripe { tolerance_secs }
            | Self::Slack { tolerance_secs } => *tolerance_secs = secs,
            Self::GenericHmac(generic) => generic.tolerance_secs = secs,
            Self::Preset(preset) => preset.tolerance_secs = Some(secs),
            Self::Github {} | Self::Shopify {} | Self::Twilio {} => {}
        }
    }
}

/// Options of the generic HMAC scheme.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenericHmacConfig {
    /// The header carrying the signature, e.g. `X-Signature`.
    pub header: String,
    /// The HMAC hash function.
    #[serde(default = "default_algorithm")]
    pub algorithm: Algorithm,
    /// How the MAC is written in the header.
    #[serde(default = "default_encoding")]
    pub encoding: Encoding,
    /// Text before the encoded MAC, e.g. `sha256=`; required when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// A header carrying a Unix timestamp (seconds) that is signed too and
    /// checked against the tolerance. The template must then use `{timestamp}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_header: Option<String>,
    /// What is signed. `{body}` (exactly once) is the raw body, `{timestamp}`
    /// the timestamp header's value; `{{` and `}}` are literal braces; other
    /// text is signed as is. Default: `{body}`, or `{timestamp}.{body}` when a
    /// timestamp header is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Accepted clock difference, in seconds, when a timestamp header is set.
    #[serde(default = "default_tolerance")]
    pub tolerance_secs: u64,
}

impl GenericHmacConfig {
    /// A configuration with the given header and the defaults: HMAC-SHA256,
    /// hex, no prefix, no timestamp, the body is signed.
    pub fn new(header: impl Into<String>) -> Self {
        Self {
            header: header.into(),
            algorithm: default_algorithm(),
            encoding: default_encoding(),
            prefix: None,
            timestamp_header: None,
            template: None,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
        }
    }
}

fn default_algorithm() -> Algorithm {
    Algorithm::Sha256
}

fn default_encoding() -> Encoding {
    Encoding::Hex
}

/// HMAC hash functions of the generic scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Algorithm {
    /// HMAC-SHA1 (20-byte MAC). Only for partners that still use it.
    Sha1,
    /// HMAC-SHA256 (32-byte MAC).
    Sha256,
    /// HMAC-SHA512 (64-byte MAC).
    Sha512,
}

impl Algorithm {
    /// Length of the MAC in bytes.
    pub fn output_len(self) -> usize {
        match self {
            Self::Sha1 => 20,
            Self::Sha256 => 32,
            Self::Sha512 => 64,
        }
    }
}

/// How a MAC is written in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Hexadecimal, either case.
    Hex,
    /// Standard base64 (`+/`), padding optional.
    Base64,
}

/// The supported schemes, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemeKind {
    /// `standard-webhooks`
    StandardWebhooks,
    /// `stripe`
    Stripe,
    /// `github`
    Github,
    /// `shopify`
    Shopify,
    /// `slack`
    Slack,
    /// `twilio`
    Twilio,
    /// `generic-hmac`
    GenericHmac,
    /// `preset`: a provider preset of the registry, by name.
    Preset,
}

impl SchemeKind {
    /// Every scheme, in a stable order.
    pub const ALL: [SchemeKind; 8] = [
        Self::StandardWebhooks,
        Self::Stripe,
        Self::Github,
        Self::Shopify,
        Self::Slack,
        Self::Twilio,
        Self::GenericHmac,
        Self::Preset,
    ];

    /// The configuration name, e.g. `standard-webhooks`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StandardWebhooks => "standard-webhooks",
            Self::Stripe => "stripe",
            Self::Github => "github",
            Self::Shopify => "shopify",
            Self::Slack => "slack",
            Self::Twilio => "twilio",
            Self::GenericHmac => "generic-hmac",
            Self::Preset => "preset",
        }
    }
}

impl fmt::Display for SchemeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown scheme name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown signature scheme (expected one of: standard-webhooks, stripe, github, shopify, slack, twilio, generic-hmac, preset)"
)]
pub struct UnknownScheme;

impl FromStr for SchemeKind {
    type Err = UnknownScheme;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or(UnknownScheme)
    }
}
