//! Typed configuration: partners (who may send us webhooks and how they
//! sign) and destinations (where the relay delivers outbound webhooks, and
//! how it signs them), loaded once at cold start from, in order:
//! 1. `HOOKBOX_CONFIG`: a file path (`.json` or `.toml`);
//! 2. `HOOKBOX_PARTNERS`: inline JSON (starts with `{`) or TOML;
//! 3. `HOOKBOX_PARTNERS_SECRET_ARN`: an AWS Secrets Manager secret holding
//!    the same JSON/TOML, fetched again after a TTL
//!    (`HOOKBOX_CONFIG_TTL_SECS`, default 300) so rotated partner secrets take
//!    effect without a deploy.
//!
//! Invalid configuration fails at start with a message naming the partner
//! and the field. Example (JSON; TOML has the same shape):
//!
//! ```json
//! {"partners": {"demo": {
//!     "signature": {"scheme": "standard-webhooks", "tolerance_secs": 300},
//!     "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="],
//!     "event_id": {"header": "webhook-id"},
//!     "event_type": "/type",
//!     "ordering_key": "/order_id",
//!     "allowed_cidrs": ["203.0.113.0/24"],
//!     "max_body_bytes": 1048576
//! }},
//!  "destinations": {"crm": {
//!     "url": "https://crm.example.com/webhooks",
//!     "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="],
//!     "timeout_secs": 10,
//!     "max_attempts": 8,
//!     "max_in_flight": 10,
//!     "ordered": false,
//!     "allowed_networks": [],
//!     "backoff_secs": [5, 300, 1800, 7200, 18000, 36000, 36000],
//!     "subscribe": {"event_types": ["order.*"],
//!                   "filters": [{"pointer": "/currency", "equals": "EUR"}]},
//!     "trip_after": 5,
//!     "cool_down_secs": 60,
//!     "disable_after_hours": 120
//! }}}
//! ```
//!
//! `subscribe` (optional; without it a destination gets only the events
//! published to it by name) is documented in [`crate::outbox::subscription`]
//! and docs/publishing.md.
//!
//! Every destination field but `url` and `secrets` is optional; the values
//! above are the defaults (`max_attempts` defaults to one more than the
//! number of backoff steps). `allowed_networks` lists CIDRs the destination
//! may resolve to even though the relay's SSRF guard refuses them otherwise
//! (loopback, private, link-local, metadata): the local stack and tests
//! allow `127.0.0.0/8`.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use ipnet::IpNet;
use serde::Deserialize;

use crate::clock::Clock;
use crate::outbox::subscription::{RawSubscription, Subscription};
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

/// A configuration that cannot be used. Names the partner and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No source is configured.
    #[error(
        "no partner configuration: set HOOKBOX_CONFIG (a file), HOOKBOX_PARTNERS (inline JSON \
         or TOML) or HOOKBOX_PARTNERS_SECRET_ARN (a Secrets Manager secret)"
    )]
    NoSource,
    /// The source could not be read.
    #[error("cannot read the configuration from {source_name}: {detail}")]
    Unreadable {
        /// Where it was read from (a path or the variable name).
        source_name: String,
        /// Why.
        detail: String,
    },
    /// The text is not valid JSON/TOML of the expected shape.
    #[error("invalid configuration in {source_name}: {detail}")]
    Syntax {
        /// Where it was read from.
        source_name: String,
        /// The parser's message (it names the field).
        detail: String,
    },
    /// A destination's field is wrong.
    #[error("destination {destination:?}: {field}: {reason}")]
    Destination {
        /// The destination.
        destination: String,
        /// The field, e.g. `url` or `secrets[0]`.
        field: String,
        /// What is wrong, with the offending value when it is not secret.
        reason: String,
    },
    /// A partner's field is wrong.
    #[error("partner {partner:?}: {field}: {reason}")]
    Partner {
        /// The partner.
        partner: String,
        /// The field, e.g. `secrets[1]` or `allowed_cidrs[0]`.
        field: String,
        /// What is wrong, with the offending value when it is not secret.
        reason: String,
    },
}

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

/// The whole configuration.
#[derive(Debug, Clone, Default)]
pub struct HookboxConfig {
    partners: BTreeMap<String, Partner>,
    destinations: BTreeMap<String, Destination>,
}

impl HookboxConfig {
    /// The destination called `name`.
    pub fn destination(&self, name: &str) -> Option<&Destination> {
        self.destinations.get(name)
    }

    /// All destinations by name.
    pub fn destinations(&self) -> impl Iterator<Item = &Destination> {
        self.destinations.values()
    }

    /// The partner called `name`.
    pub fn partner(&self, name: &str) -> Option<&Partner> {
        self.partners.get(name)
    }

    /// All partners by name.
    pub fn partners(&self) -> impl Iterator<Item = &Partner> {
        self.partners.values()
    }

    /// Parses and validates JSON (text starting with `{`) or TOML.
    pub fn parse(text: &str, source_name: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
                source_name: source_name.to_string(),
                detail: json_syntax_detail(&e),
            })?
        } else {
            toml::from_str(text).map_err(|e| ConfigError::Syntax {
                source_name: source_name.to_string(),
                detail: toml_syntax_detail(&e, text),
            })?
        };
        let mut partners = BTreeMap::new();
        for (name, raw) in raw.partners {
            let partner = raw.validate(&name)?;
            partners.insert(name, partner);
        }
        let mut destinations = BTreeMap::new();
        for (name, raw) in raw.destinations {
            let destination = raw.validate(&name)?;
            destinations.insert(name, destination);
        }
        Ok(Self {
            partners,
            destinations,
        })
    }
}

/// A parser's complaint with any quoted input taken out: serde's "invalid
/// type: string \"whsec_…\", expected a sequence" would put a secret in the
/// error text and the logs. Field names (`unknown field \`secret\``) and the
/// position stay.
fn without_values(message: &str) -> String {
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        // "<what> <value>, expected <shape>": keep the kind and the shape
        let kind = rest.split([' ', ',']).next().unwrap_or("value");
        let expected = rest
            .rsplit_once("expected ")
            .map_or("another type", |(_, e)| e);
        return format!("a {kind} where {expected} belongs");
    }
    // any other message: drop whatever it quotes
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '"' if !quoted => {
                quoted = true;
                out.push_str("\"…\"");
            }
            '"' => quoted = false,
            c if !quoted => out.push(c),
            _ => {}
        }
    }
    out
}

fn json_syntax_detail(e: &serde_json::Error) -> String {
    let text = e.to_string();
    // serde_json appends " at line L column C"; rebuild it after cleaning
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    format!(
        "{} at line {} column {}",
        without_values(message),
        e.line(),
        e.column()
    )
}

fn toml_syntax_detail(e: &toml::de::Error, text: &str) -> String {
    // never Display: it quotes the offending source line
    let message = without_values(e.message().trim());
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{message} at line {line} column {column}")
        }
        None => message,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    partners: BTreeMap<String, RawPartner>,
    #[serde(default)]
    destinations: BTreeMap<String, RawDestination>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPartner {
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEventId {
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    json_pointer: Option<String>,
}

/// Longest partner or destination name (a path segment, a blob key segment,
/// part of every row).
pub const MAX_NAME_BYTES: usize = 64;

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
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
    fn validate(self, name: &str) -> Result<Partner, ConfigError> {
        if !is_name(name) {
            return Err(partner_error(
                name,
                "name",
                "partner names are path segments: 1 to 64 lower-case letters, digits, '-' and '_'",
            ));
        }
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
        Ok(Partner {
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

/// Backoff after failed delivery attempts 1, 2, 3, …: 5 s, 5 min, 30 min,
/// 2 h, 5 h, 10 h, 10 h (the last step repeats if `max_attempts` is larger).
pub const DEFAULT_BACKOFF_SECS: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

/// Default per-request timeout of a delivery.
pub const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest per-request timeout accepted (a relay run lasts about a minute).
pub const MAX_DESTINATION_TIMEOUT: Duration = Duration::from_secs(50);

/// Default concurrent requests to one destination.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10;

/// One destination of outbound webhooks, validated and ready to use.
#[derive(Clone)]
pub struct Destination {
    /// Name (what `outbox.destination` holds).
    pub name: String,
    /// Where to POST. Never logged whole (a query may carry a token).
    pub url: reqwest::Url,
    /// Standard Webhooks signing secrets (`whsec_…`, or `whsk_…` Ed25519
    /// keys); several during a rotation: every request carries one
    /// signature per secret.
    pub secrets: Vec<Secret>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Attempts before a row is dead.
    pub max_attempts: u32,
    /// Most concurrent requests to this destination.
    pub max_in_flight: usize,
    /// Deliver rows of one aggregate one at a time, oldest first.
    pub ordered: bool,
    /// Networks the SSRF guard lets this destination resolve to.
    pub allowed_networks: Vec<IpNet>,
    /// Delay after failed attempt n is `backoff[n - 1]` (the last repeats), ±20%.
    pub backoff: Vec<Duration>,
    /// The published events it gets (`None`: only those published to it by
    /// name). See [`crate::outbox::subscription`].
    pub subscription: Option<Subscription>,
    /// The breaker opens after this many failed attempts in a row.
    pub trip_after: u32,
    /// How long an open breaker stops deliveries before one probe.
    pub cool_down: Duration,
    /// Failing continuously this long disables the destination (`None`:
    /// never).
    pub disable_after: Option<Duration>,
    /// Most requests started per second (`None`: no limit beyond
    /// `max_in_flight`); the relay claims no more of its rows than that.
    pub rate_limit_per_sec: Option<u32>,
}

/// Default failed attempts in a row that open a destination's breaker.
pub const DEFAULT_TRIP_AFTER: u32 = 5;
/// Default cool-down of an open breaker.
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(60);
/// Default time of continuous failure after which a destination is
/// disabled: 5 days.
pub const DEFAULT_DISABLE_AFTER: Duration = Duration::from_secs(5 * 86_400);

impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Destination")
            .field("name", &self.name)
            .field("url", &redacted_url(&self.url))
            .field(
                "secrets",
                &format_args!("[{} redacted]", self.secrets.len()),
            )
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .field("max_in_flight", &self.max_in_flight)
            .field("ordered", &self.ordered)
            .field("allowed_networks", &self.allowed_networks)
            .field("subscription", &self.subscription)
            .field("trip_after", &self.trip_after)
            .field("cool_down", &self.cool_down)
            .field("disable_after", &self.disable_after)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .finish_non_exhaustive()
    }
}

/// `scheme://host:port/path`, without query or fragment (which may carry
/// tokens): what logs and errors show of a destination URL.
pub fn redacted_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDestination {
    url: String,
    secrets: Vec<String>,
    #[serde(default)]
    timeout_secs: Option<f64>,
    #[serde(default)]
    max_attempts: Option<u32>,
    #[serde(default)]
    max_in_flight: Option<usize>,
    #[serde(default)]
    ordered: bool,
    #[serde(default)]
    allowed_networks: Vec<String>,
    #[serde(default)]
    backoff_secs: Option<Vec<f64>>,
    #[serde(default)]
    subscribe: Option<RawSubscription>,
    #[serde(default)]
    trip_after: Option<u32>,
    #[serde(default)]
    cool_down_secs: Option<f64>,
    #[serde(default)]
    disable_after_hours: Option<f64>,
    #[serde(default)]
    rate_limit_per_sec: Option<u32>,
}

fn destination_error(
    destination: &str,
    field: impl Into<String>,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Destination {
        destination: destination.to_string(),
        field: field.into(),
        reason: reason.into(),
    }
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value > 0.0 && value <= 366.0 * 86_400.0)
        .then(|| Duration::from_secs_f64(value))
}

impl RawDestination {
    fn validate(self, name: &str) -> Result<Destination, ConfigError> {
        let err = |field: &str, reason: String| destination_error(name, field, reason);
        if !is_name(name) {
            return Err(err(
                "name",
                "destination names are stored in outbox rows: 1 to 64 lower-case letters, digits, \
                 '-' and '_'"
                    .into(),
            ));
        }
        let url =
            reqwest::Url::parse(&self.url).map_err(|e| err("url", format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(err(
                "url",
                format!("scheme {:?} is not http or https", url.scheme()),
            ));
        }
        if url.host().is_none() {
            return Err(err("url", "has no host".into()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(err(
                "url",
                "must not carry credentials (user:password@); receivers authenticate by the \
                 signature"
                    .into(),
            ));
        }
        if self.secrets.is_empty() {
            return Err(err(
                "secrets",
                "at least one signing secret is required".into(),
            ));
        }
        let secrets: Vec<Secret> = self.secrets.into_iter().map(Secret::new).collect();
        for (i, secret) in secrets.iter().enumerate() {
            let text = secret.expose_secret();
            if !(text.starts_with("whsec_") || text.starts_with("whsk_")) {
                return Err(err(
                    &format!("secrets[{i}]"),
                    "a Standard Webhooks signing secret starts with whsec_ (or whsk_ for an \
                     Ed25519 signing key)"
                        .into(),
                ));
            }
            crate::signature::sign_standard_webhooks(
                "msg_check",
                DateTime::<Utc>::UNIX_EPOCH,
                b"",
                std::slice::from_ref(secret),
            )
            .map_err(|e| err(&format!("secrets[{i}]"), format!("cannot sign: {e}")))?;
        }
        let timeout = match self.timeout_secs {
            None => DEFAULT_DESTINATION_TIMEOUT,
            Some(v) => seconds(v)
                .filter(|d| *d <= MAX_DESTINATION_TIMEOUT)
                .ok_or_else(|| {
                    err(
                        "timeout_secs",
                        format!("{v} is outside (0, {}]", MAX_DESTINATION_TIMEOUT.as_secs()),
                    )
                })?,
        };
        let backoff = match self.backoff_secs {
            None => DEFAULT_BACKOFF_SECS
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
            Some(steps) if steps.is_empty() => {
                return Err(err("backoff_secs", "needs at least one delay".into()));
            }
            Some(steps) => steps
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    seconds(*v).ok_or_else(|| {
                        err(
                            &format!("backoff_secs[{i}]"),
                            format!("{v} is not a positive number of seconds (at most a year)"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let max_attempts = match self.max_attempts {
            None => u32::try_from(backoff.len() + 1).unwrap_or(u32::MAX),
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("max_attempts", format!("{n} is outside 1..=1000"))),
        };
        let max_in_flight = match self.max_in_flight {
            None => DEFAULT_MAX_IN_FLIGHT,
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("max_in_flight", format!("{n} is outside 1..=1000"))),
        };
        let allowed_networks = self
            .allowed_networks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.parse::<IpNet>()
                    .or_else(|_| c.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        err(
                            &format!("allowed_networks[{i}]"),
                            format!("{c:?} is not an address or CIDR"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let subscription = self
            .subscribe
            .map(RawSubscription::validate)
            .transpose()
            .map_err(|(field, reason)| err(&field, reason))?;
        let trip_after = match self.trip_after {
            None => DEFAULT_TRIP_AFTER,
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("trip_after", format!("{n} is outside 1..=1000"))),
        };
        let cool_down = match self.cool_down_secs {
            None => DEFAULT_COOL_DOWN,
            Some(v) => seconds(v)
                .filter(|d| *d >= Duration::from_secs(1) && *d <= Duration::from_secs(86_400))
                .ok_or_else(|| err("cool_down_secs", format!("{v} is outside [1, 86400]")))?,
        };
        let disable_after = match self.disable_after_hours {
            None => Some(DEFAULT_DISABLE_AFTER),
            Some(0.0) => None,
            Some(v) => Some(seconds(v * 3_600.0).ok_or_else(|| {
                err(
                    "disable_after_hours",
                    format!("{v} is not a positive number of hours (at most a year; 0: never)"),
                )
            })?),
        };
        let rate_limit_per_sec = match self.rate_limit_per_sec {
            None => None,
            Some(n) if (1..=100_000).contains(&n) => Some(n),
            Some(n) => {
                return Err(err(
                    "rate_limit_per_sec",
                    format!("{n} is outside 1..=100000 (leave it out for no limit)"),
                ));
            }
        };
        Ok(Destination {
            name: name.to_string(),
            url,
            secrets,
            timeout,
            max_attempts,
            max_in_flight,
            ordered: self.ordered,
            allowed_networks,
            backoff,
            subscription,
            trip_after,
            cool_down,
            disable_after,
            rate_limit_per_sec,
        })
    }
}

/// Where the configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A file (`HOOKBOX_CONFIG`).
    File(PathBuf),
    /// Inline text (`HOOKBOX_PARTNERS`).
    Inline(String),
    /// A Secrets Manager secret (`HOOKBOX_PARTNERS_SECRET_ARN`), re-read after `ttl`.
    Secret {
        /// The secret's ARN.
        arn: String,
        /// How long a fetched value is used.
        ttl: Duration,
    },
}

impl ConfigSource {
    /// Picks the source from the environment, in the documented order.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = var("HOOKBOX_CONFIG") {
            return Ok(ConfigSource::File(PathBuf::from(path)));
        }
        if let Some(text) = var("HOOKBOX_PARTNERS") {
            return Ok(ConfigSource::Inline(text));
        }
        if let Some(arn) = var("HOOKBOX_PARTNERS_SECRET_ARN") {
            let ttl = match var("HOOKBOX_CONFIG_TTL_SECS") {
                None => Duration::from_secs(300),
                Some(s) => Duration::from_secs(s.parse().map_err(|_| ConfigError::Syntax {
                    source_name: "HOOKBOX_CONFIG_TTL_SECS".into(),
                    detail: format!("{s:?} is not a number of seconds"),
                })?),
            };
            return Ok(ConfigSource::Secret { arn, ttl });
        }
        Err(ConfigError::NoSource)
    }
}

/// Reads a secret's string value (AWS Secrets Manager in production).
///
/// Error contract: any failure is reported as text; the caller keeps using
/// the configuration it has.
#[async_trait]
pub trait SecretStore: Send + Sync + fmt::Debug {
    /// The current `SecretString` of `arn`.
    async fn secret_string(&self, arn: &str) -> Result<String, String>;
}

/// The Secrets Manager adapter.
#[derive(Debug, Clone)]
pub struct SecretsManager {
    client: aws_sdk_secretsmanager::Client,
}

impl SecretsManager {
    /// A client from the environment (honours `AWS_ENDPOINT_URL_SECRETS_MANAGER`).
    pub async fn from_aws_env() -> Self {
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .load()
            .await;
        Self::from_sdk_config(&shared)
    }

    /// A client from an AWS configuration already loaded.
    pub fn from_sdk_config(shared: &aws_config::SdkConfig) -> Self {
        Self {
            client: aws_sdk_secretsmanager::Client::new(shared),
        }
    }

    /// A client for an emulator at `endpoint` (tests).
    pub fn local(endpoint: &str) -> Self {
        use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
        let config = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "local"))
            .build();
        Self {
            client: aws_sdk_secretsmanager::Client::from_conf(config),
        }
    }
}

#[async_trait]
impl SecretStore for SecretsManager {
    async fn secret_string(&self, arn: &str) -> Result<String, String> {
        let out = self
            .client
            .get_secret_value()
            .secret_id(arn)
            .send()
            .await
            .map_err(|e| {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    source = s.source();
                }
                text
            })?;
        out.secret_string()
            .map(str::to_string)
            .ok_or_else(|| "the secret has no SecretString".to_string())
    }
}

/// The current configuration, re-read from Secrets Manager after its TTL.
/// A failed refresh keeps the last good configuration (and logs why).
#[derive(Debug)]
pub struct ConfigStore {
    source: ConfigSource,
    secrets: Option<Arc<dyn SecretStore>>,
    clock: Arc<dyn Clock>,
    /// The configuration in use and when it was read (held only to copy or
    /// replace it, never across an await).
    current: std::sync::RwLock<(Arc<HookboxConfig>, DateTime<Utc>)>,
    /// Held by the one caller refreshing from the source.
    refreshing: tokio::sync::Mutex<()>,
    /// Refreshes that failed (each also prints the `ConfigRefreshFailed`
    /// metric).
    refresh_failures: std::sync::atomic::AtomicU64,
}

impl ConfigStore {
    /// Loads the configuration once (cold start). Fails on any error: a
    /// function must not start with a broken configuration.
    pub async fn load(
        source: ConfigSource,
        secrets: Option<Arc<dyn SecretStore>>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConfigError> {
        let config = fetch(&source, secrets.as_deref()).await?;
        let now = clock.now();
        Ok(Self {
            source,
            secrets,
            clock,
            current: std::sync::RwLock::new((Arc::new(config), now)),
            refreshing: tokio::sync::Mutex::new(()),
            refresh_failures: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A fixed configuration (tests, local runs).
    pub fn fixed(config: HookboxConfig, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            source: ConfigSource::Inline(String::new()),
            secrets: None,
            clock,
            current: std::sync::RwLock::new((Arc::new(config), now)),
            refreshing: tokio::sync::Mutex::new(()),
            refresh_failures: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether [`ConfigStore::current`] would fetch from the source now (a
    /// secret whose TTL ran out), and so may wait for the network.
    pub fn refresh_due(&self) -> bool {
        let ConfigSource::Secret { ttl, .. } = &self.source else {
            return false;
        };
        let ttl = chrono::Duration::from_std(*ttl).unwrap_or(chrono::Duration::MAX);
        self.clock.now() - self.snapshot().1 >= ttl
    }

    /// The configuration to use now. When the secret's TTL has run out, one
    /// caller reads it again (and waits for Secrets Manager); callers
    /// meanwhile get the configuration in use at once, never waiting for
    /// another's refresh (a relay lane must not hold a delivered batch
    /// unrecorded behind another lane's slow read).
    pub async fn current(&self) -> Arc<HookboxConfig> {
        let ConfigSource::Secret { ttl, .. } = &self.source else {
            return self.snapshot().0;
        };
        let ttl = chrono::Duration::from_std(*ttl).unwrap_or(chrono::Duration::MAX);
        let (config, read_at) = self.snapshot();
        if self.clock.now() - read_at < ttl {
            return config;
        }
        let Ok(_refreshing) = self.refreshing.try_lock() else {
            return config;
        };
        // another caller may have refreshed since the snapshot
        let (config, read_at) = self.snapshot();
        if self.clock.now() - read_at < ttl {
            return config;
        }
        let fetched = fetch(&self.source, self.secrets.as_deref()).await;
        let now = self.clock.now();
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        match fetched {
            Ok(config) => *current = (Arc::new(config), now),
            Err(e) => {
                // the error names the source and the position, never secret material
                tracing::warn!(error = %e, "configuration refresh failed; keeping the last good one");
                self.refresh_failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                crate::metrics::Metrics::new()
                    .dimension("Component", "config")
                    .count("ConfigRefreshFailed", 1)
                    .flush(now.timestamp_millis());
                // try again after another TTL, not on every request
                current.1 = now;
            }
        }
        current.0.clone()
    }

    /// How many refreshes have failed so far.
    pub fn refresh_failures(&self) -> u64 {
        self.refresh_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn snapshot(&self) -> (Arc<HookboxConfig>, DateTime<Utc>) {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        (current.0.clone(), current.1)
    }
}

async fn fetch(
    source: &ConfigSource,
    secrets: Option<&dyn SecretStore>,
) -> Result<HookboxConfig, ConfigError> {
    match source {
        ConfigSource::File(path) => {
            let name = path.display().to_string();
            let text =
                tokio::fs::read_to_string(path)
                    .await
                    .map_err(|e| ConfigError::Unreadable {
                        source_name: name.clone(),
                        detail: e.to_string(),
                    })?;
            HookboxConfig::parse(&text, &name)
        }
        ConfigSource::Inline(text) => HookboxConfig::parse(text, "HOOKBOX_PARTNERS"),
        ConfigSource::Secret { arn, .. } => {
            let store = secrets.ok_or_else(|| ConfigError::Unreadable {
                source_name: arn.clone(),
                detail: "no Secrets Manager client".into(),
            })?;
            let text =
                store
                    .secret_string(arn)
                    .await
                    .map_err(|detail| ConfigError::Unreadable {
                        source_name: arn.clone(),
                        detail,
                    })?;
            HookboxConfig::parse(&text, arn)
        }
    }
}
