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
//! published to it by name) is documented in [`crate::subscription`]
//! and docs/publishing.md.
//!
//! A destination's `"type"` is its transport: `"http"` (the default, the
//! shape above), `"eventbridge"` (`"bus"`: a name or ARN; `"source"`,
//! default `hookbox`; `"max_entry_bytes"`, default 256 KiB, at most 1 MiB)
//! or `"sqs"` (`"queue_url"`, FIFO when the name ends in `.fifo`;
//! `"max_entry_bytes"`); a field of another type is refused by name
//! (`target`).
//!
//! Every HTTP destination field but `url` and `secrets` is optional; the values
//! above are the defaults (`max_attempts` defaults to one more than the
//! number of backoff steps). `allowed_networks` lists CIDRs the destination
//! may resolve to even though the relay's SSRF guard refuses them otherwise
//! (loopback, private, link-local, metadata): the local stack and tests
//! allow `127.0.0.0/8`.
//!
//! Where things are: the whole configuration and its errors here; a
//! partner's schema in `partner`, a destination's in `destination`; where
//! the text comes from in `source`, the Secrets Manager port and adapter in
//! `secrets_manager`, the refreshing cache in `cache`; how parser errors are
//! kept free of secrets in `redact`.

pub mod batch;
mod cache;
mod destination;
pub mod enroll;
mod field;
mod partner;
mod redact;
pub mod route;
mod secrets_manager;
mod source;
mod target;

use std::collections::BTreeMap;

use serde::Deserialize;

pub use cache::ConfigStore;
pub use destination::{
    DEFAULT_BACKOFF_SECS, DEFAULT_COOL_DOWN, DEFAULT_DESTINATION_TIMEOUT, DEFAULT_DISABLE_AFTER,
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_TRIP_AFTER, Destination, ENDPOINT_PREFIX,
    MAX_DESTINATION_TIMEOUT, is_endpoint,
};
pub use partner::{
    DEFAULT_KEEP_HEADERS, DEFAULT_MAX_BODY_BYTES, EventIdSource, FieldSource, GetRefused,
    MAX_ACKNOWLEDGE_BYTES, MAX_MAX_BODY_BYTES, Partner, acknowledgement_of_preset,
};
pub use secrets_manager::{SecretStore, SecretsManager};
pub use source::ConfigSource;
pub use target::{
    DEFAULT_EVENTBRIDGE_SOURCE, DEFAULT_MAX_ENTRY_BYTES, EventBridgeTarget, HttpTarget,
    MAX_MAX_ENTRY_BYTES, MIN_MAX_ENTRY_BYTES, SqsTarget, Target, TransportKind, redacted_url,
};

use destination::RawDestination;
use partner::RawPartner;

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
                detail: redact::json_syntax_detail(&e),
            })?
        } else {
            toml::from_str(text).map_err(|e| ConfigError::Syntax {
                source_name: source_name.to_string(),
                detail: redact::toml_syntax_detail(&e, text),
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
        // a route names a destination of this configuration
        for partner in partners.values() {
            for (i, route) in partner.routes.iter().enumerate() {
                if !destinations.contains_key(&route.to) {
                    return Err(ConfigError::Partner {
                        partner: partner.name.clone(),
                        field: format!("routes[{i}].to"),
                        reason: format!(
                            "{:?} is not a configured destination (destinations: {})",
                            route.to,
                            if destinations.is_empty() {
                                "none".to_owned()
                            } else {
                                destinations.keys().cloned().collect::<Vec<_>>().join(", ")
                            }
                        ),
                    });
                }
            }
        }
        Ok(Self {
            partners,
            destinations,
        })
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
