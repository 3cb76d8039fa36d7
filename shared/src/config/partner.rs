//! A partner: who may send us webhooks, how they sign, where the event's
//! id, type and ordering key are.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::Deserialize;

use super::route::{MAX_ROUTES, RawRoute, Route, Unrouted};
use super::{ConfigError, is_name};
use crate::signature::presets::{self, Handshake};
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

fn partner_error(
    partner: &str,
    field: impl Into<String>,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Partner {
        partner: partner.to_string(),
        field: field.into(),
        reason: reason.into(),
    }
}

/// Where a partner's event id lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdSource {
    /// A request header (case-insensitive).
    Header(String),
    /// A JSON pointer into the body (RFC 6901).
    JsonPointer(String),
    /// The partner sends no id: sha256 of the body, and the row is flagged.
    BodyHash,
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
    /// Where its event id lives.
    pub event_id: EventIdSource,
    /// JSON pointer to the event type, if any.
    pub event_type: Option<String>,
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
    /// handshake that verified instead of storing it.
    pub handshake: Option<Handshake>,
}

impl fmt::Debug for Partner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partner")
            .field("name", &self.name)
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
            .finish_non_exhaustive()
    }
}

impl Partner {
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
    signature: SchemeConfig,
    secrets: Vec<String>,
    #[serde(default)]
    event_id: Option<RawEventId>,
    #[serde(default)]
    event_type: Option<String>,
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEventId {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    json_pointer: Option<String>,
}

fn check_pointer(partner: &str, field: &str, pointer: &str) -> Result<(), ConfigError> {
    if pointer.starts_with('/') {
        Ok(())
    } else {
        Err(partner_error(
            partner,
            field,
            format!("{pointer:?} is not a JSON pointer (it must start with '/', e.g. \"/id\")"),
        ))
    }
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
        // the handshake of the provider its scheme or preset is
        let handshake = match &self.signature {
            SchemeConfig::Preset(preset) => presets::get(&preset.name),
            other => presets::get(other.kind().as_str()),
        }
        .and_then(|preset| preset.handshake);
        let verifier = Verifier::new(self.signature)
            .map_err(|e| partner_error(name, "signature", e.to_string()))?;
        if self.secrets.is_empty() {
            return Err(partner_error(
                name,
                "secrets",
                "at least one secret is required",
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
        let event_id = match self.event_id {
            None => EventIdSource::BodyHash,
            Some(RawEventId {
                header: Some(h),
                json_pointer: None,
            }) if !h.trim().is_empty() => EventIdSource::Header(h.to_ascii_lowercase()),
            Some(RawEventId {
                header: None,
                json_pointer: Some(p),
            }) => {
                check_pointer(name, "event_id.json_pointer", &p)?;
                EventIdSource::JsonPointer(p)
            }
            Some(_) => {
                return Err(partner_error(
                    name,
                    "event_id",
                    "give exactly one of a non-empty \"header\" or \"json_pointer\" (or omit \
                     event_id to use the body's sha256)",
                ));
            }
        };
        if let Some(p) = &self.event_type {
            check_pointer(name, "event_type", p)?;
        }
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
        let keep_headers = self
            .keep_headers
            .unwrap_or_else(|| DEFAULT_KEEP_HEADERS.iter().map(|h| h.to_string()).collect())
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
            event_id,
            event_type: self.event_type,
            ordering_key: self.ordering_key,
            allowed_cidrs,
            max_body_bytes,
            keep_headers,
            public_url: self.public_url,
        })
    }
}
