//! What every Lambda `main.rs` does at init, in one place: tracing (honouring
//! Lambda's advanced logging controls, `AWS_LAMBDA_LOG_LEVEL` and
//! `AWS_LAMBDA_LOG_FORMAT`), the configuration store, the queue, the
//! database, the blob store, one AWS configuration shared by every client,
//! and a failed init reported to the Runtime API's init-error endpoint with
//! a message that names the variable.
//!
//! A `main.rs` is then about a dozen lines:
//!
//! ```ignore
//! let start = Startup::from_process_env();
//! let function = start.init(ProcessorFunction::from_startup(&start)).await?;
//! run(service_fn(|event| ...)).await
//! ```
//!
//! Init stays cheap: the AWS configuration is loaded once, and only by a
//! function that needs an AWS client (credentials are resolved by the SDK on
//! the first call, not here); the Data API, SQS and S3 clients share it.

mod runtime_api;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

use crate::blob::{self, BlobConfigError, BlobStore};
use crate::clock::{Clock, SystemClock};
use crate::config::{ConfigError, ConfigSource, ConfigStore, SecretStore, SecretsManager};
use crate::queue::sqs::SqsQueue;
use crate::store::{self, ConnectError, Database};

pub use runtime_api::{RUNTIME_API_VAR, report_init_error};

/// Why a function could not start. Every message names the variable to fix
/// and never quotes a secret.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The partners/destinations configuration.
    #[error("partner configuration: {0}")]
    Config(#[from] ConfigError),
    /// The database adapter.
    #[error("database configuration: {0}")]
    Database(#[from] ConnectError),
    /// The blob store.
    #[error("blob store configuration: {0}")]
    Blob(#[from] BlobConfigError),
    /// A function's own settings (the message names the variable).
    #[error("{what}: {detail}")]
    Settings {
        /// Which settings.
        what: &'static str,
        /// What is wrong, from the settings' own error.
        detail: String,
    },
    /// A required variable is not set (or empty).
    #[error("{name} must be set to {what}")]
    Missing {
        /// The variable.
        name: &'static str,
        /// What it holds.
        what: &'static str,
    },
}

impl StartupError {
    /// A function's own settings refused: `what` and the error's message.
    pub fn settings(what: &'static str, e: impl fmt::Display) -> Self {
        StartupError::Settings {
            what,
            detail: e.to_string(),
        }
    }
}

type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The shared pieces of a function's init. Build it once in `main`.
pub struct Startup {
    env: Env,
    clock: Arc<dyn Clock>,
    aws: OnceCell<SdkConfig>,
}

impl fmt::Debug for Startup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Startup")
            .field("aws_loaded", &self.aws.initialized())
            .finish_non_exhaustive()
    }
}

impl Startup {
    /// The process environment, and tracing installed from it.
    pub fn from_process_env() -> Self {
        let start = Self::with_env(|name| std::env::var(name).ok());
        start.log_settings().install();
        start
    }

    /// Reads variables through `env` (tests pass a map); installs nothing.
    pub fn with_env(env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self {
            env: Box::new(env),
            clock: Arc::new(SystemClock),
            aws: OnceCell::new(),
        }
    }

    /// A variable's value; unset and blank are the same.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|v| !v.trim().is_empty())
    }

    /// The environment as the closure the configuration readers take.
    pub fn env(&self) -> impl Fn(&str) -> Option<String> + '_ {
        |name| self.var(name)
    }

    /// The system clock.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// How this function logs (see [`LogSettings::from_env`]).
    pub fn log_settings(&self) -> LogSettings {
        LogSettings::from_env(self.env())
    }

    /// The AWS configuration (region, endpoints, the credentials chain),
    /// loaded on first use and shared by every client.
    pub async fn aws(&self) -> SdkConfig {
        self.aws
            .get_or_init(|| aws_config::defaults(aws_config::BehaviorVersion::latest()).load())
            .await
            .clone()
    }

    /// The partners/destinations configuration store, from `HOOKBOX_CONFIG`,
    /// `HOOKBOX_PARTNERS` or `HOOKBOX_PARTNERS_SECRET_ARN`.
    pub async fn partners(&self) -> Result<Arc<ConfigStore>, StartupError> {
        let source = ConfigSource::from_env(self.env())?;
        let secrets: Option<Arc<dyn SecretStore>> = match source {
            ConfigSource::Secret { .. } => {
                Some(Arc::new(SecretsManager::from_sdk_config(&self.aws().await)))
            }
            _ => None,
        };
        Ok(Arc::new(
            ConfigStore::load(source, secrets, self.clock()).await?,
        ))
    }

    /// `HOOKBOX_QUEUE_URL`, the inbox queue.
    pub fn queue_url(&self) -> Result<String, StartupError> {
        self.var("HOOKBOX_QUEUE_URL")
            .map(|u| u.trim().to_string())
            .ok_or(StartupError::Missing {
                name: "HOOKBOX_QUEUE_URL",
                what: "the inbox queue's URL",
            })
    }

    /// The inbox queue (SQS, `HOOKBOX_QUEUE_URL`).
    pub async fn queue(&self) -> Result<Arc<SqsQueue>, StartupError> {
        let url = self.queue_url()?;
        Ok(Arc::new(SqsQueue::from_sdk_config(&self.aws().await, url)))
    }

    /// The database adapter (see [`store::connect_from_env`]).
    pub async fn database(&self) -> Result<Arc<dyn Database>, StartupError> {
        Ok(store::connect_with_aws(self.env(), || self.aws()).await?)
    }

    /// The blob store (see [`blob::from_env`]).
    pub async fn blobs(&self) -> Result<Arc<dyn BlobStore>, StartupError> {
        Ok(blob::from_env_with_aws(self.env(), || self.aws()).await?)
    }

    /// Runs a function's init. On failure the error is logged and reported
    /// to the Runtime API's init-error endpoint (so Lambda shows the message
    /// instead of a bare exit status), then returned for `main` to exit with.
    pub async fn init<T, E>(
        &self,
        init: impl Future<Output = Result<T, E>>,
    ) -> Result<T, InitFailed>
    where
        E: fmt::Display,
    {
        match init.await {
            Ok(value) => Ok(value),
            Err(e) => {
                // `{:#}` prints an anyhow chain ("context: cause") in one line
                let message = format!("{e:#}");
                tracing::error!(error = %message, "init failed");
                if let Some(api) = self.var(RUNTIME_API_VAR) {
                    if let Err(report) = report_init_error(&api, INIT_ERROR_TYPE, &message).await {
                        tracing::error!(error = %report, "could not report the init error");
                    }
                }
                Err(InitFailed(message))
            }
        }
    }
}

/// The `errorType` of an init error hookbox reports.
pub const INIT_ERROR_TYPE: &str = "Runtime.ConfigurationError";

/// A failed init, already logged and reported; `main` returns it.
#[derive(Debug, thiserror::Error)]
#[error("init failed: {0}")]
pub struct InitFailed(pub String);

/// How a function logs, from Lambda's advanced logging controls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// JSON lines (the default; Lambda's `JSON` format) or text (`Text`).
    pub json: bool,
    /// The `tracing` filter directive.
    pub filter: String,
}

impl LogSettings {
    /// `AWS_LAMBDA_LOG_FORMAT` (`JSON`, the default here, or `Text`) and the
    /// level: `AWS_LAMBDA_LOG_LEVEL` (`TRACE` … `FATAL`, set by Lambda from
    /// the function's `ApplicationLogLevel`) wins, else `RUST_LOG`, else
    /// `info`.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        let json =
            !env("AWS_LAMBDA_LOG_FORMAT").is_some_and(|f| f.trim().eq_ignore_ascii_case("text"));
        let lambda_level = env("AWS_LAMBDA_LOG_LEVEL").and_then(|level| {
            match level.trim().to_ascii_lowercase().as_str() {
                l @ ("trace" | "debug" | "info" | "warn" | "error") => Some(l.to_string()),
                "fatal" => Some("error".to_string()),
                _ => None,
            }
        });
        let filter = lambda_level
            .or_else(|| env("RUST_LOG").filter(|f| !f.trim().is_empty()))
            .unwrap_or_else(|| "info".to_string());
        Self { json, filter }
    }

    /// Installs the global subscriber (once; later calls do nothing). No
    /// timestamps: CloudWatch stamps every line.
    pub fn install(&self) {
        use tracing_subscriber::EnvFilter;
        let filter = EnvFilter::try_new(&self.filter).unwrap_or_else(|_| EnvFilter::new("info"));
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .without_time();
        let _ = if self.json {
            builder
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .try_init()
        } else {
            builder.try_init()
        };
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn logs_are_json_at_info_unless_lambda_says_otherwise() {
        assert_eq!(
            LogSettings::from_env(env(&[])),
            LogSettings {
                json: true,
                filter: "info".into()
            }
        );
        let text = LogSettings::from_env(env(&[
            ("AWS_LAMBDA_LOG_FORMAT", "Text"),
            ("AWS_LAMBDA_LOG_LEVEL", "DEBUG"),
        ]));
        assert_eq!(
            text,
            LogSettings {
                json: false,
                filter: "debug".into()
            }
        );
    }

    #[test]
    fn lambda_log_level_wins_over_rust_log_and_fatal_is_error() {
        let s = LogSettings::from_env(env(&[
            ("AWS_LAMBDA_LOG_LEVEL", "FATAL"),
            ("RUST_LOG", "trace"),
        ]));
        assert_eq!(s.filter, "error");
        let s = LogSettings::from_env(env(&[("RUST_LOG", "hookbox=debug")]));
        assert_eq!(s.filter, "hookbox=debug");
        // an unknown Lambda level falls back to RUST_LOG / info
        let s = LogSettings::from_env(env(&[("AWS_LAMBDA_LOG_LEVEL", "LOUD")]));
        assert_eq!(s.filter, "info");
    }

    #[tokio::test]
    async fn a_missing_queue_url_names_the_variable() {
        let start = Startup::with_env(env(&[("HOOKBOX_QUEUE_URL", "  ")]));
        let e = start.queue_url().expect_err("blank is unset");
        assert!(e.to_string().contains("HOOKBOX_QUEUE_URL"), "{e}");
    }

    #[tokio::test]
    async fn a_data_api_database_without_its_cluster_names_the_variable() {
        let start = Startup::with_env(env(&[("HOOKBOX_DB", "data-api"), ("DB_NAME", "x")]));
        let e = start.database().await.expect_err("incomplete");
        assert!(e.to_string().contains("DB_CLUSTER_ARN"), "{e}");
        assert!(
            !start.aws.initialized(),
            "nothing was loaded for a refused config"
        );
    }

    #[tokio::test]
    async fn a_function_with_inline_partners_loads_no_aws_configuration() {
        let start = Startup::with_env(env(&[(
            "HOOKBOX_PARTNERS",
            r#"{"partners": {"demo": {"signature": {"scheme": "standard-webhooks"}, "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]}}}"#,
        )]));
        start.partners().await.expect("inline partners");
        assert!(!start.aws.initialized());
    }

    #[tokio::test]
    async fn a_failed_init_outside_lambda_is_returned_with_its_message() {
        let start = Startup::with_env(env(&[]));
        let e = start
            .init(async { start.queue_url() })
            .await
            .expect_err("no queue");
        assert!(e.0.contains("HOOKBOX_QUEUE_URL"), "{e}");
    }
}
