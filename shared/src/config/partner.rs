//! A partner: who may send us webhooks, how they sign, where the event's
//! id, type and ordering key are.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::Deserialize;

use super::batch::{self, Batch, RawBatchChoice};
use super::enroll::EnrollKey;
pub use super::field::FieldSource;
use super::field::{RawEventId, RawEventType, check_pointer, partner_error};
use super::route::{MAX_ROUTES, RawRoute, Route, Unrouted};
use super::{ConfigError, is_name};
use crate::signature::presets::{self, GetRequest, Handshake, HandshakeAnswer, HandshakeError};
use crate::signature::{SchemeConfig, SchemeKind, Secret, Verifier};

/// Largest `max_body_bytes` accepted, and the default: the largest body the
/// path can carry (4 MiB). API Gateway REST takes 10 MB, but Lambda's
/// request payload is 6 MB and with the binary media type `*/*` the body
/// arrives base64 (4/3 larger) inside the event's JSON, so about 4.4 MB of
/// raw body fit; 4 MiB leaves room for the headers. Bodies over the inline
/// threshold go to the blob store, so neither SQS's 1 MiB nor the Data
/// API's 64 KB per row limits them (README: "Size limits, end to end").
pub const MAX_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Default largest body a partner may send: [`MAX_MAX_BODY_BYTES`].
pub const DEFAULT_MAX_BODY_BYTES: usize = MAX_MAX_BODY_BYTES;

/// Headers stored with each inbox row unless the partner lists its own:
/// identifiers and timestamps worth keeping, never signatures.
pub const DEFAULT_KEEP_HEADERS: &[&str] = &[
    "content-type",
    "user-agent",
    "webhook-id",
    "webhook-timestamp",
    "svix-id",
    "svix-timestamp",
    "x-github-event",
    "x-github-delivery",
    "x-shopify-topic",
    "x-shopify-webhook-id",
    "x-slack-request-timestamp",
];

/// Where a partner's event id lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdSource {
    /// A request header (case-insensitive).
    Header(String),
    /// A JSON pointer into the body (RFC 6901).
    JsonPointer(String),
    /// Several fields joined with `:`, for providers without a single id
    /// (all must be present).
    Composite(Vec<FieldSource>),
    /// The partner sends no id: sha256 of the body, and the row is flagged.
    BodyHash,
}

impl EventIdSource {
    /// True when it reads the JSON body.
    pub fn reads_json(&self) -> bool {
        match self {
            Self::JsonPointer(_) => true,
            Self::Composite(fields) => fields.iter().any(FieldSource::reads_json),
            Self::Header(_) | Self::BodyHash => false,
        }
    }
}

/// One partner, validated and ready to use.
#[derive(Clone)]
pub struct Partner {
    /// Name (the `{partner}` path segment).
    pub name: String,
    /// The signature verifier for its scheme and options.
    pub verifier: Verifier,
    /// Active secrets (several during a rotation).
    pub secrets: Vec<Secret>,
    /// The provider preset it names (`"preset"`), whose signature, event id,
    /// event type and handshake it takes unless it gives its own.
    pub preset: Option<&'static str>,
    /// Where its event id lives.
    pub event_id: EventIdSource,
    /// Where its event type is, if anywhere (a JSON pointer in the
    /// configuration, or a header or composite of its preset).
    pub event_type: Option<FieldSource>,
    /// JSON pointer to the ordering key, if any.
    pub ordering_key: Option<String>,
    /// Source addresses allowed (empty: any).
    pub allowed_cidrs: Vec<IpNet>,
    /// Largest body accepted, bytes.
    pub max_body_bytes: usize,
    /// Headers stored with each event (lower case).
    pub keep_headers: Vec<String>,
    /// The URL the partner calls, for schemes that sign it (Twilio) when the
    /// public URL differs from what API Gateway reports (custom domains).
    pub public_url: Option<String>,
    /// Deduplicate on the body's sha256 as well as on the event id: a
    /// captured request resent with a fresh id is a duplicate. Default: on
    /// for schemes whose signature covers neither a timestamp nor an id
    /// ([`Verifier::signs_a_timestamp_or_id`]). Trade-off: two genuinely
    /// distinct events with byte-identical bodies are stored once.
    pub dedupe_on_body: bool,
    /// Where its events are forwarded (empty: nowhere; the processor's Rust
    /// handler alone decides). See [`super::route`].
    pub routes: Vec<Route>,
    /// What happens to an event no route matches (when it has routes).
    pub unrouted: Unrouted,
    /// The handshake its provider requires (that of its preset, or of the
    /// preset of its hand-written scheme: Slack): ingest answers a POST
    /// handshake that verified instead of storing it, and a GET one (Meta,
    /// Dropbox) that the authorizer let through.
    pub handshake: Option<Handshake>,
    /// Meta's verify tokens (several during a rotation): a GET handshake is
    /// answered only when its `hub.verify_token` is one of them. Required
    /// for, and only for, a partner whose handshake checks one.
    pub verify_tokens: Vec<Secret>,
    /// While set, the handshake of a provider that hands its secret over
    /// (Asana) is answered and the secret logged sealed to this key
    /// ([`super::enroll`]); `secrets` may then be empty.
    pub enroll_key: Option<EnrollKey>,
    /// Where the events of a POST carrying many are, and each one's id,
    /// type and ordering key ([`super::batch`]): its own, else its
    /// preset's. `event_id`, `event_type` and `ordering_key` above then
    /// describe nothing (a partner refuses them beside a batch).
    pub batch: Option<Batch>,
    /// The body its provider expects with a 2xx, sent as `text/plain`
    /// instead of hookbox's JSON (Adyen's `[accepted]`): its own
    /// `"acknowledge"`, else its preset's ([`acknowledgement_of_preset`]).
    pub acknowledge: Option<String>,
}

/// Longest `"acknowledge"` accepted.
pub const MAX_ACKNOWLEDGE_BYTES: usize = 256;

/// The body a provider expects with a 2xx, by preset name: Adyen's
/// standard notifications are acknowledged with `[accepted]`
/// (https://docs.adyen.com/development-resources/webhooks/#accept-webhooks).
pub fn acknowledgement_of_preset(preset: &str) -> Option<&'static str> {
    match preset {
        "adyen-standard" => Some("[accepted]"),
        _ => None,
    }
}

impl fmt::Debug for Partner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partner")
            .field("name", &self.name)
            .field("preset", &self.preset)
            .field("scheme", &self.verifier.scheme())
            .field(
                "secrets",
                &format_args!("[{} redacted]", self.secrets.len()),
            )
            .field("event_id", &self.event_id)
            .field("allowed_cidrs", &self.allowed_cidrs)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("dedupe_on_body", &self.dedupe_on_body)
            .field("routes", &self.routes)
            .field("unrouted", &self.unrouted)
            .field("handshake", &self.handshake)
            .field(
                "verify_tokens",
                &format_args!("[{} redacted]", self.verify_tokens.len()),
            )
            .field("enroll_key", &self.enroll_key)
            .field("batch", &self.batch)
            .field("acknowledge", &self.acknowledge)
            .finish_non_exhaustive()
    }
}

/// Why a GET to a partner's webhook URL is not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetRefused {
    /// The partner's provider has no GET handshake: its URL takes POST only.
    #[error(
        "partner {partner} takes POST only: a GET answers only the handshake of a provider \
         that sends one (meta, dropbox, okta, x-activity)"
    )]
    NoGetHandshake {
        /// The partner.
        partner: String,
    },
    /// The handshake is malformed or (Meta) its verify token does not match.
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

impl GetRefused {
    /// The HTTP status and reason code: 405 `method_not_allowed`, 403
    /// `wrong_verify_token` (as Meta's documentation answers it), 400
    /// `bad_handshake`.
    pub fn status_and_code(&self) -> (u16, &'static str) {
        match self {
            Self::NoGetHandshake { .. } => (405, "method_not_allowed"),
            Self::Handshake(HandshakeError::WrongVerifyToken { .. }) => (403, "wrong_verify_token"),
            Self::Handshake(_) => (400, "bad_handshake"),
        }
    }
}

impl Partner {
    /// The answer to a GET (its decoded query parameters and headers):
    /// only the handshake of a provider that sends one by GET, checked as
    /// [`Handshake::answer_get_request`] checks it (Meta's verify token,
    /// Okta's authentication header against the partner's secrets, X's CRC
    /// signed with them; in constant time). The authorizer lets a GET
    /// through only when this answers; ingest answers it again, so neither
    /// trusts the other.
    pub fn answer_get(&self, request: &GetRequest<'_, '_>) -> Result<HandshakeAnswer, GetRefused> {
        match self.handshake.filter(|handshake| handshake.is_get()) {
            Some(handshake) => {
                Ok(handshake.answer_get_request(request, &self.verify_tokens, &self.secrets)?)
            }
            None => Err(GetRefused::NoGetHandshake {
                partner: self.name.clone(),
            }),
        }
    }

    /// True when `ip` may call (no CIDRs configured means any address).
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        self.allowed_cidrs.is_empty() || self.allowed_cidrs.iter().any(|net| net.contains(&ip))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPartner {
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    signature: Option<SchemeConfig>,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    event_id: Option<RawEventId>,
    #[serde(default)]
    event_type: Option<RawEventType>,
    #[serde(default)]
    ordering_key: Option<String>,
    #[serde(default)]
    allowed_cidrs: Vec<String>,
    #[serde(default)]
    max_body_bytes: Option<usize>,
    #[serde(default)]
    keep_headers: Option<Vec<String>>,
    #[serde(default)]
    public_url: Option<String>,
    #[serde(default)]
    dedupe_on_body: Option<bool>,
    #[serde(default)]
    routes: Vec<RawRoute>,
    #[serde(default)]
    unrouted: Option<Unrouted>,
    #[serde(default)]
    verify_tokens: Vec<String>,
    #[serde(default)]
    enroll_key: Option<String>,
    #[serde(default)]
    batch: Option<RawBatchChoice>,
    #[serde(default)]
    acknowledge: Option<String>,
}

impl RawPartner {
    pub(super) fn validate(self, name: &str) -> Result<Partner, ConfigError> {
        if !is_name(name) {
            return Err(partner_error(
                name,
                "name",
                "partner names are path segments: 1 to 64 lower-case letters, digits, '-' and '_'",
            ));
        }
        let preset = match &self.preset {
            None => None,
            Some(preset) => Some(presets::get(preset).ok_or_else(|| {
                partner_error(
                    name,
                    "preset",
                    format!("{preset:?} is not a preset (`hookbox presets` lists them)"),
                )
            })?),
        };
        // its own signature, else its preset's
        let signature = match (self.signature, preset) {
            (Some(signature), _) => signature,
            (None, Some(preset)) => preset.scheme_config(None),
            (None, None) => {
                return Err(partner_error(
                    name,
                    "signature",
                    "give \"preset\" (a provider, see `hookbox presets`) or \"signature\"",
                ));
            }
        };
        // the handshake of its preset, else of the provider its scheme is
        let handshake = preset
            .or_else(|| match &signature {
                SchemeConfig::Preset(preset) => presets::get(&preset.name),
                other => presets::get(other.kind().as_str()),
            })
            .and_then(|preset| preset.handshake);
        let checks_a_token = handshake.is_some_and(Handshake::checks_a_verify_token);
        if checks_a_token && self.verify_tokens.is_empty() {
            return Err(partner_error(
                name,
                "verify_tokens",
                "this provider's GET handshake checks a verify token: give the one you type in \
                 its dashboard (several during a rotation)",
            ));
        }
        if !checks_a_token && !self.verify_tokens.is_empty() {
            return Err(partner_error(
                name,
                "verify_tokens",
                "only a partner whose handshake checks a verify token (Meta) has verify tokens",
            ));
        }
        for (i, token) in self.verify_tokens.iter().enumerate() {
            if let Err(e) = Handshake::usable_verify_token(token) {
                return Err(partner_error(name, format!("verify_tokens[{i}]"), e));
            }
        }
        let verifier = Verifier::new(signature)
            .map_err(|e| partner_error(name, "signature", e.to_string()))?;
        let enroll_key = match &self.enroll_key {
            None => None,
            Some(_) if !handshake.is_some_and(Handshake::hands_over_a_secret) => {
                return Err(partner_error(
                    name,
                    "enroll_key",
                    "only a partner whose provider hands its secret over in a handshake \
                     (Asana) enrols with a key",
                ));
            }
            Some(key) => Some(
                EnrollKey::from_base64(key)
                    .map_err(|e| partner_error(name, "enroll_key", e.to_string()))?,
            ),
        };
        if self.secrets.is_empty() && enroll_key.is_none() {
            return Err(partner_error(
                name,
                "secrets",
                if handshake.is_some_and(Handshake::hands_over_a_secret) {
                    "at least one secret is required; to get it from the provider's handshake, \
                     give \"enroll_key\" (`hookbox enroll-key new`) and no secrets"
                } else {
                    "at least one secret is required"
                },
            ));
        }
        for (i, secret) in self.secrets.iter().enumerate() {
            if secret.trim().is_empty() {
                return Err(partner_error(name, format!("secrets[{i}]"), "is empty"));
            }
            if verifier.scheme() == SchemeKind::StandardWebhooks
                && !(secret.starts_with("whsec_") || secret.starts_with("whpk_"))
            {
                return Err(partner_error(
                    name,
                    format!("secrets[{i}]"),
                    "a Standard Webhooks secret starts with whsec_ (or whpk_ for a public key)",
                ));
            }
        }
        let batch = match self.batch {
            Some(choice) => choice.validate(name)?,
            None => preset.and_then(|p| batch::of_preset(p.name)),
        };
        if batch.is_some() {
            let given = [
                ("event_id", self.event_id.is_some()),
                ("event_type", self.event_type.is_some()),
                ("ordering_key", self.ordering_key.is_some()),
            ];
            if let Some((field, _)) = given.iter().find(|(_, given)| *given) {
                return Err(partner_error(
                    name,
                    *field,
                    format!(
                        "this partner's POSTs carry many events (\"batch\"): give {field} inside \
                         \"batch\", relative to each event (or \"batch\": false for one row per POST)"
                    ),
                ));
            }
        }
        let acknowledge = match self.acknowledge {
            Some(text)
                if text.is_empty()
                    || text.len() > MAX_ACKNOWLEDGE_BYTES
                    || text.chars().any(char::is_control) =>
            {
                return Err(partner_error(
                    name,
                    "acknowledge",
                    format!(
                        "is the text a 2xx carries: 1 to {MAX_ACKNOWLEDGE_BYTES} bytes, no \
                         control characters"
                    ),
                ));
            }
            Some(text) => Some(text),
            None => preset
                .and_then(|p| acknowledgement_of_preset(p.name))
                .map(str::to_owned),
        };
        let event_id = match self.event_id {
            Some(raw) => match raw.field(name, "event_id", false)? {
                FieldSource::Header(h) => EventIdSource::Header(h),
                FieldSource::JsonPointer(p) => EventIdSource::JsonPointer(p),
                FieldSource::Composite(parts) => EventIdSource::Composite(parts),
            },
            // the preset's, else the body's sha256
            None => match preset.and_then(|p| FieldSource::of_preset(p.event_id)) {
                Some(FieldSource::Header(h)) => EventIdSource::Header(h),
                Some(FieldSource::JsonPointer(p)) => EventIdSource::JsonPointer(p),
                Some(FieldSource::Composite(parts)) => EventIdSource::Composite(parts),
                None => EventIdSource::BodyHash,
            },
        };
        let event_type = match self.event_type {
            Some(raw) => Some(raw.field(name, "event_type")?),
            None => preset.and_then(|p| FieldSource::of_preset(p.event_type)),
        };
        if let Some(p) = &self.ordering_key {
            check_pointer(name, "ordering_key", p)?;
        }
        let allowed_cidrs = self
            .allowed_cidrs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.parse::<IpNet>()
                    .or_else(|_| c.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        partner_error(
                            name,
                            format!("allowed_cidrs[{i}]"),
                            format!("{c:?} is not an address or CIDR"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let max_body_bytes = self.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes == 0 || max_body_bytes > MAX_MAX_BODY_BYTES {
            return Err(partner_error(
                name,
                "max_body_bytes",
                format!(
                    "{max_body_bytes} is outside 1..={MAX_MAX_BODY_BYTES} (the largest body \
                     Lambda's 6 MB request payload carries once base64-encoded)"
                ),
            ));
        }
        // by default, also the headers its event id and type are read from
        let keep_headers = self.keep_headers.unwrap_or_else(|| {
            let mut keep: Vec<String> =
                DEFAULT_KEEP_HEADERS.iter().map(|h| h.to_string()).collect();
            let read = match &event_id {
                EventIdSource::Header(h) => vec![h.as_str()],
                EventIdSource::Composite(parts) => {
                    parts.iter().flat_map(FieldSource::headers).collect()
                }
                EventIdSource::JsonPointer(_) | EventIdSource::BodyHash => Vec::new(),
            };
            let typed = event_type
                .as_ref()
                .map(FieldSource::headers)
                .unwrap_or_default();
            for header in read.into_iter().chain(typed) {
                if !keep.iter().any(|k| k.eq_ignore_ascii_case(header)) {
                    keep.push(header.to_owned());
                }
            }
            keep
        });
        let keep_headers = keep_headers
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        if let Some(url) = &self.public_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(partner_error(
                    name,
                    "public_url",
                    format!("{url:?} is not an http(s) URL"),
                ));
            }
        }
        let dedupe_on_body = self
            .dedupe_on_body
            .unwrap_or(!verifier.signs_a_timestamp_or_id());
        if self.routes.len() > MAX_ROUTES {
            return Err(partner_error(
                name,
                "routes",
                format!(
                    "{} routes, over the limit of {MAX_ROUTES}",
                    self.routes.len()
                ),
            ));
        }
        let routes = self
            .routes
            .into_iter()
            .enumerate()
            .map(|(i, route)| {
                route
                    .validate(i)
                    .map_err(|(field, reason)| partner_error(name, field, reason))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if self.unrouted.is_some() && routes.is_empty() {
            return Err(partner_error(
                name,
                "unrouted",
                "only means something with routes: add \"routes\" or remove \"unrouted\"",
            ));
        }
        Ok(Partner {
            handshake,
            routes,
            unrouted: self.unrouted.unwrap_or_default(),
            name: name.to_string(),
            dedupe_on_body,
            verifier,
            secrets: self.secrets.into_iter().map(Secret::new).collect(),
            preset: preset.map(|p| p.name),
            event_id,
            event_type,
            ordering_key: self.ordering_key,
            allowed_cidrs,
            max_body_bytes,
            keep_headers,
            public_url: self.public_url,
            verify_tokens: self.verify_tokens.into_iter().map(Secret::new).collect(),
            enroll_key,
            batch,
            acknowledge,
        })
    }
}
