//! Provider presets: one entry of data per webhook provider, so a new
//! provider is an entry (and its vectors), not code in twenty places.
//!
//! A [`Preset`] says how the provider signs ([`Recipe`]), the default
//! timestamp tolerance, where the event id and the event type are
//! ([`EventField`]: a header, a JSON pointer into the body, or a composite
//! where the provider has no single id), the handshake it needs before it
//! sends events ([`Handshake`]: [`Handshake::answer_post`] and
//! [`Handshake::answer_get`] compute the answer byte for byte; ingest
//! answers the POST ones), what the secret is, and a sample event.
//!
//! ```
//! use hookbox::signature::presets;
//!
//! let stripe = presets::get("stripe").ok_or("no stripe preset")?;
//! let verifier = stripe.verifier()?;
//! assert_eq!(verifier.scheme().as_str(), "stripe");
//! assert!(presets::all().iter().all(|p| p.name == p.name.to_lowercase()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A configuration names a preset with
//! `{"scheme":"preset","name":"paddle"}` (optionally `"tolerance_secs"`),
//! or a partner's configuration reads [`get`] and builds the verifier with
//! [`Preset::verifier_with_tolerance`].
//!
//! [`Preset::sign`] signs a request as the provider would (`hookbox send
//! --preset`, the tests' round trips, the signature bench), from the same
//! recipe.
//!
//! The entries are in `catalog/`; each has a test in
//! `shared/tests/presets.rs` that verifies a vector published by the
//! provider (documentation or official SDK tests, cited there), and a test
//! there fails when an entry has none. [`providers_page`] renders
//! `docs/providers.md` from the entries.

mod catalog;
mod handshake;
mod page;
mod sign;

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::{SchemeConfig, SchemeKind};
use super::error::ConfigError;
use super::headers::Headers;
use super::recipe::{Part, Recipe, SignatureAt, TimestampAt, TimestampSource};
use super::verifier::Verifier;

pub use catalog::PRESETS;
pub use handshake::{GetRequest, HandshakeAnswer, HandshakeError, MAX_CHALLENGE_BYTES};
pub use page::providers_page;
pub use sign::{Outgoing, PresetSignError, SignatureHeaders, SigningKey};

/// One provider's webhook conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// The registry name: lowercase, unique (`stripe`, `twitch-eventsub`).
    pub name: &'static str,
    /// The provider's name as people write it.
    pub provider: &'static str,
    /// How the provider authenticates its webhooks.
    pub recipe: Recipe,
    /// Accepted clock difference for the signed timestamp, in seconds
    /// (`None`: the provider sends no timestamp, or documents no window).
    pub tolerance_secs: Option<u64>,
    /// Where the event id is (the dedupe key).
    pub event_id: EventField,
    /// Where the event type is.
    pub event_type: EventField,
    /// What the provider needs answered before it sends events.
    pub handshake: Option<Handshake>,
    /// What to configure as the secret, and its format.
    pub secret: &'static str,
    /// The provider's page that documents the signature.
    pub docs: &'static str,
    /// A small event as the provider sends it (headers and body; no
    /// signature).
    pub sample: Sample,
}

/// Where a value (event id, event type) is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventField {
    /// A header's value.
    Header(&'static str),
    /// A string or number of the JSON body, by JSON pointer (RFC 6901).
    Json(&'static str),
    /// Several fields joined with `:`, for providers without a single id
    /// (all must be present).
    Composite(&'static [EventField]),
    /// The provider sends none (ingest falls back to the body's sha256).
    Absent,
}

/// A handshake a provider requires of the endpoint (its answer:
/// [`Handshake::answer_post`], which ingest calls once the request
/// verified, and [`Handshake::answer_get_request`], which the authorizer
/// and ingest call for a GET).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Slack Events API: a signed POST `{"type":"url_verification",
    /// "challenge":…}`, answered with the challenge.
    SlackUrlVerification,
    /// Zoom: a signed POST `{"event":"endpoint.url_validation",
    /// "payload":{"plainToken":…}}`, answered within 3 s with
    /// `{"plainToken":…,"encryptedToken":hex HMAC-SHA256(secret, plainToken)}`.
    ZoomUrlValidation,
    /// Twitch EventSub: a signed POST with
    /// `Twitch-Eventsub-Message-Type: webhook_callback_verification`,
    /// answered with the raw `challenge` as text/plain.
    TwitchCallbackVerification,
    /// Discord interactions: a signed POST `{"type":1}` (PING), answered
    /// with `{"type":1}` (PONG).
    DiscordPing,
    /// Meta (WhatsApp, Messenger, Instagram): GET with `hub.mode=subscribe`,
    /// `hub.verify_token` (compared with the configured verify token) and
    /// `hub.challenge`, answered with the challenge.
    MetaVerifyToken,
    /// Dropbox: GET `?challenge=…`, echoed as text/plain (length-bounded,
    /// `X-Content-Type-Options: nosniff`); not authenticated.
    DropboxChallenge,
    /// Asana: the first POST carries `X-Hook-Secret`, answered by echoing
    /// it in the same header; it then becomes the signing secret.
    AsanaHookSecret,
    /// Okta event hooks: a one-time GET carrying
    /// `X-Okta-Verification-Challenge` and the hook's authentication
    /// header, answered with `{"verification":<challenge>}` once that
    /// header is one of the partner's secrets
    /// ([`Handshake::answer_get_request`]).
    OktaVerification,
    /// X's Account Activity CRC: GET `?crc_token=…` (when the webhook is
    /// registered, then hourly), answered with `{"response_token":"sha256=
    /// <base64 HMAC-SHA256(consumer secret, crc_token)>"}`
    /// ([`Handshake::answer_get_request`]).
    XCrc,
}

/// A sample event: headers and body (unsigned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Headers the provider sends besides the signature.
    pub headers: &'static [(&'static str, &'static str)],
    /// The body.
    pub body: &'static str,
}

/// Every preset, in registry order.
pub fn all() -> &'static [Preset] {
    PRESETS
}

/// The preset named `name` (exact, lowercase).
pub fn get(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.name == name)
}

/// The preset names, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|preset| preset.name)
}

/// A name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown preset (see `hookbox::signature::presets::names()`)")]
pub struct UnknownPreset;

/// Looks a preset up, or says it is unknown.
pub fn lookup(name: &str) -> Result<&'static Preset, UnknownPreset> {
    get(name).ok_or(UnknownPreset)
}

/// The `{"scheme":"preset"}` configuration: a preset by name, and the
/// tolerance when it differs from the preset's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetConfig {
    /// The preset's registry name.
    pub name: String,
    /// Overrides the preset's timestamp tolerance (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_secs: Option<u64>,
}

impl Preset {
    /// The scheme configuration of this preset: the hand-written scheme
    /// itself for presets that are one (so `Verified::scheme` names it),
    /// else `{"scheme":"preset","name":…}`.
    pub fn scheme_config(&self, tolerance_secs: Option<u64>) -> SchemeConfig {
        match self.recipe {
            Recipe::Scheme(kind) => match SchemeConfig::default_for(kind) {
                Some(mut config) => {
                    if let Some(secs) = tolerance_secs.or(self.tolerance_secs) {
                        config.set_tolerance_secs(secs);
                    }
                    config
                }
                None => SchemeConfig::Preset(PresetConfig {
                    name: self.name.to_owned(),
                    tolerance_secs,
                }),
            },
            _ => SchemeConfig::Preset(PresetConfig {
                name: self.name.to_owned(),
                tolerance_secs,
            }),
        }
    }

    /// The verifier with the preset's defaults.
    pub fn verifier(&self) -> Result<Verifier, ConfigError> {
        Verifier::new(self.scheme_config(None))
    }

    /// The verifier with another timestamp tolerance (no effect on presets
    /// without a timestamp).
    pub fn verifier_with_tolerance(&self, tolerance_secs: u64) -> Result<Verifier, ConfigError> {
        Verifier::new(self.scheme_config(Some(tolerance_secs)))
    }

    /// The event id of a request, where the preset says it is (`None` when
    /// absent, or when the preset has none).
    pub fn event_id(&self, headers: &Headers<'_>, body: &[u8]) -> Option<String> {
        self.event_id.read(headers, body)
    }

    /// The event type of a request, where the preset says it is.
    pub fn event_type(&self, headers: &Headers<'_>, body: &[u8]) -> Option<String> {
        self.event_type.read(headers, body)
    }

    /// True when the scheme of this preset is one of the hand-written ones.
    pub fn scheme_kind(&self) -> SchemeKind {
        match self.recipe {
            Recipe::Scheme(kind) => kind,
            _ => SchemeKind::Preset,
        }
    }
}

impl EventField {
    /// Reads the field from a request (`None` when absent or empty).
    pub fn read(&self, headers: &Headers<'_>, body: &[u8]) -> Option<String> {
        let mut json = None;
        self.read_with(headers, body, &mut json)
    }

    fn read_with(
        &self,
        headers: &Headers<'_>,
        body: &[u8],
        json: &mut Option<Option<serde_json::Value>>,
    ) -> Option<String> {
        let text = match self {
            Self::Header(name) => headers.get(name).map(str::to_owned),
            Self::Json(pointer) => {
                let value = json
                    .get_or_insert_with(|| serde_json::from_slice(body).ok())
                    .as_ref()?;
                match value.pointer(pointer)? {
                    serde_json::Value::String(text) => Some(text.clone()),
                    value @ serde_json::Value::Number(_) => Some(value.to_string()),
                    _ => None,
                }
            }
            Self::Composite(fields) => {
                let parts = fields
                    .iter()
                    .map(|field| field.read_with(headers, body, json))
                    .collect::<Option<Vec<_>>>()?;
                Some(parts.join(":"))
            }
            Self::Absent => None,
        };
        text.filter(|t| !t.is_empty())
    }
}

impl fmt::Display for EventField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header {name}"),
            Self::Json(pointer) => write!(f, "body {pointer}"),
            Self::Composite(fields) => {
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" + ")?;
                    }
                    write!(f, "{field}")?;
                }
                Ok(())
            }
            Self::Absent => f.write_str("none"),
        }
    }
}

impl Handshake {
    /// A short name, as the docs table shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SlackUrlVerification => "Slack url_verification",
            Self::ZoomUrlValidation => "Zoom endpoint.url_validation",
            Self::TwitchCallbackVerification => "Twitch webhook_callback_verification",
            Self::DiscordPing => "Discord PING",
            Self::MetaVerifyToken => "Meta GET hub.challenge (verify token)",
            Self::DropboxChallenge => "Dropbox GET challenge (echo)",
            Self::AsanaHookSecret => "Asana X-Hook-Secret (echo)",
            Self::OktaVerification => "Okta GET X-Okta-Verification-Challenge",
            Self::XCrc => "X GET crc_token (CRC)",
        }
    }
}

impl Preset {
    /// The request headers the preset's verifier reads (signature,
    /// timestamp, signed headers, token), in the recipe's order: what the
    /// fuzz target feeds and what a proxy must pass through.
    pub fn signature_headers(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        match self.recipe {
            Recipe::Scheme(kind) => names.extend_from_slice(scheme_headers(kind)),
            Recipe::Signed(signed) => {
                if let SignatureAt::Headers { names: headers, .. } = signed.signature {
                    names.extend_from_slice(headers);
                }
                if let Some(TimestampAt {
                    source: TimestampSource::Header(name),
                    ..
                }) = signed.timestamp
                {
                    names.push(name);
                }
                names.extend(signed.message.iter().filter_map(|part| match part {
                    Part::Header(name) => Some(*name),
                    // Whether the body is form-encoded.
                    Part::Form => Some("Content-Type"),
                    _ => None,
                }));
            }
            Recipe::Token { header } => names.push(header),
            Recipe::BasicAuth => names.push("Authorization"),
            Recipe::Jws { header, .. } => names.push(header),
            Recipe::Twilio(_) => names.extend_from_slice(scheme_headers(SchemeKind::Twilio)),
        }
        let mut seen = Vec::with_capacity(names.len());
        names.retain(|name| {
            let new = !seen.iter().any(|s: &&str| s.eq_ignore_ascii_case(name));
            seen.push(*name);
            new
        });
        names
    }

    /// One line: name first, then provider and recipe (`hookbox presets`).
    pub fn summary(&self) -> String {
        format!("{}\t{}\t{}", self.name, self.provider, self.recipe)
    }
}

/// The headers a hand-written scheme reads.
fn scheme_headers(kind: SchemeKind) -> &'static [&'static str] {
    match kind {
        SchemeKind::StandardWebhooks => &[
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature",
            "svix-id",
            "svix-timestamp",
            "svix-signature",
        ],
        SchemeKind::Stripe => &["Stripe-Signature"],
        SchemeKind::Github => &["X-Hub-Signature-256"],
        SchemeKind::Shopify => &["X-Shopify-Hmac-Sha256", "shopify-hmac-sha256"],
        SchemeKind::Slack => &["X-Slack-Request-Timestamp", "X-Slack-Signature"],
        SchemeKind::Twilio => &["X-Twilio-Signature", "Content-Type"],
        SchemeKind::GenericHmac | SchemeKind::Preset => &[],
    }
}

/// The registry as a Markdown table, one row per preset (the table of
/// `docs/signatures.md` is this text; a test fails when it is stale).
pub fn markdown_table() -> String {
    let mut table = String::from(
        "| preset | provider | signature | tolerance | event id | event type | handshake |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for preset in PRESETS {
        let tolerance = preset
            .tolerance_secs
            .map_or_else(|| "none".to_owned(), |secs| format!("{secs} s"));
        let handshake = preset.handshake.map_or("none", Handshake::as_str);
        let cell = |text: String| text.replace('|', "\\|");
        table.push_str(&format!(
            "| `{}` | [{}]({}) | {} | {} | {} | {} | {} |\n",
            preset.name,
            preset.provider,
            preset.docs,
            cell(preset.recipe.to_string()),
            tolerance,
            cell(preset.event_id.to_string()),
            cell(preset.event_type.to_string()),
            handshake,
        ));
    }
    table
}
