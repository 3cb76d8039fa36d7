//! The secret-reading port and its AWS Secrets Manager adapter.

use std::fmt;

use async_trait::async_trait;

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
