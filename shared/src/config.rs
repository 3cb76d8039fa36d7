//! Typed configuration: partners (who may send us webhooks and how they
//! sign), loaded once at cold start from, in order:
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
//!     "max_body_bytes": 524288
//! }}}
//! ```

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
use tokio::sync::RwLock;

use crate::clock::Clock;
use crate::signature::{SchemeConfig, SchemeKind, Secret, Verifier};

/// Default largest body a partner may send (512 KiB). A spooled event must
/// fit one SQS message (1 MiB) after base64, which bounds the useful maximum.
pub const DEFAULT_MAX_BODY_BYTES: usize = 512 * 1024;

/// Largest `max_body_bytes` accepted: the Lambda synchronous payload limit.
pub const MAX_MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

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
}

impl HookboxConfig {
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
                detail: e.to_string(),
            })?
        } else {
            toml::from_str(text).map_err(|e| ConfigError::Syntax {
                source_name: source_name.to_string(),
                detail: e.to_string(),
            })?
        };
        let mut partners = BTreeMap::new();
        for (name, raw) in raw.partners {
            let partner = raw.validate(&name)?;
            partners.insert(name, partner);
        }
        Ok(Self { partners })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    partners: BTreeMap<String, RawPartner>,
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
    fn validate(self, name: &str) -> Result<Partner, ConfigError> {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(partner_error(
                name,
                "name",
                "partner names are path segments: lower-case letters, digits, '-' and '_'",
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
                format!("{max_body_bytes} is outside 1..={MAX_MAX_BODY_BYTES}"),
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
        Ok(Partner {
            name: name.to_string(),
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
        Self {
            client: aws_sdk_secretsmanager::Client::new(&shared),
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
    current: RwLock<(Arc<HookboxConfig>, DateTime<Utc>)>,
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
            current: RwLock::new((Arc::new(config), now)),
        })
    }

    /// A fixed configuration (tests, local runs).
    pub fn fixed(config: HookboxConfig, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            source: ConfigSource::Inline(String::new()),
            secrets: None,
            clock,
            current: RwLock::new((Arc::new(config), now)),
        }
    }

    /// The configuration to use now.
    pub async fn current(&self) -> Arc<HookboxConfig> {
        let ConfigSource::Secret { ttl, .. } = &self.source else {
            return self.current.read().await.0.clone();
        };
        let now = self.clock.now();
        let ttl = chrono::Duration::from_std(*ttl).unwrap_or(chrono::Duration::MAX);
        {
            let current = self.current.read().await;
            if now - current.1 < ttl {
                return current.0.clone();
            }
        }
        let mut current = self.current.write().await;
        if now - current.1 < ttl {
            return current.0.clone();
        }
        match fetch(&self.source, self.secrets.as_deref()).await {
            Ok(config) => {
                *current = (Arc::new(config), now);
            }
            Err(e) => {
                tracing::warn!(error = %e, "configuration refresh failed; keeping the last good one");
                // try again after another TTL, not on every request
                current.1 = now;
            }
        }
        current.0.clone()
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
