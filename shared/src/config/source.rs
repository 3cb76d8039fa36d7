//! Where the configuration text comes from: a file, inline text, or a
//! Secrets Manager secret, picked from the environment.

use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, HookboxConfig, SecretStore};

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

pub(super) async fn fetch(
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
