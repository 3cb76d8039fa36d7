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
//! Init stays cheap: what can be refused (a missing variable, an invalid
//! partner configuration) is checked at init, but the AWS clients (the
//! Data API, SQS, S3) are built on first use, from one AWS configuration
//! loaded then and shared by all of them (see `lazy`): building an SDK
//! client loads the system's TLS roots, which the first invocation can
//! pay instead of every cold start. Credentials are resolved by the SDK on
//! the first call in any case.

pub(crate) mod lazy;
mod runtime_api;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

use crate::blob::fs::FsBlobStore;
use crate::blob::s3::S3BlobStore;
use crate::blob::{self, BlobConfigError, BlobStore};
use crate::clock::{Clock, SystemClock};
use crate::config::{
    ConfigError, ConfigSource, ConfigStore, SecretStore, SecretsManager, TransportKind,
};
use crate::delivery::{self, Coalescing, EventBridgeTransport, SqsTransport, Transport};
use crate::inbox::body;
use crate::inbox::ingest::{self, Ingest};
use crate::notify::sns::SnsNotifier;
use crate::notify::{LogNotifier, Notifier};
use crate::queue::Queue;
use crate::queue::sqs::SqsQueue;
use crate::store::data_api::DataApiDatabase;
use crate::store::{self, ConnectError, Database};
use crate::tenants::{EndpointDirectory, SecretKeeper};
use crate::vault::KeyVault;
use crate::vault::kms::KmsVault;
use crate::vault::local::LocalVault;
use lazy::{Lazy, LazyVault};

pub use crate::log_format::{self, begin_invocation};
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

type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The AWS configuration, loaded once, on first use.
#[derive(Debug, Clone, Default)]
struct Aws(Arc<OnceCell<SdkConfig>>);

impl Aws {
    async fn get(&self) -> SdkConfig {
        self.0
            .get_or_init(|| aws_config::defaults(aws_config::BehaviorVersion::latest()).load())
            .await
            .clone()
    }

    fn is_loaded(&self) -> bool {
        self.0.initialized()
    }
}

/// The shared pieces of a function's init. Build it once in `main`.
pub struct Startup {
    env: Env,
    clock: Arc<dyn Clock>,
    aws: Aws,
}

impl fmt::Debug for Startup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Startup")
            .field("aws_loaded", &self.aws.is_loaded())
            .finish_non_exhaustive()
    }
}

impl Startup {
    /// The process environment, and tracing installed from it.
    pub fn from_process_env() -> Self {
        let start = Self::with_env(|name| std::env::var(name).ok());
        start.log_settings().install();
        if let Some(stack) = start.var(STACK_VAR) {
            crate::metrics::set_stack(stack.trim());
        }
        start
    }

    /// Reads variables through `env` (tests pass a map); installs nothing.
    pub fn with_env(env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self {
            env: Arc::new(env),
            clock: Arc::new(SystemClock),
            aws: Aws::default(),
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
        self.aws.get().await
    }

    /// Where the relay's notices go ([`crate::outbox::relay::notices`]): the
    /// SNS topic [`ALARM_TOPIC_VAR`] names (its client built on first use),
    /// else the log.
    pub fn notifier(&self) -> Arc<dyn Notifier> {
        let Some(topic) = self.var(ALARM_TOPIC_VAR).map(|t| t.trim().to_owned()) else {
            return Arc::new(LogNotifier);
        };
        let aws = self.aws.clone();
        Arc::new(Lazy::<dyn Notifier>::new("SNS", move || {
            let (aws, topic) = (aws.clone(), topic.clone());
            async move {
                Arc::new(SnsNotifier::from_sdk_config(&aws.get().await, topic)) as Arc<dyn Notifier>
            }
        }))
    }

    /// Secrets Manager, its client built on first use.
    pub fn secrets(&self) -> Arc<dyn SecretStore> {
        let aws = self.aws.clone();
        Arc::new(Lazy::<dyn SecretStore>::new("Secrets Manager", move || {
            let aws = aws.clone();
            async move {
                Arc::new(SecretsManager::from_sdk_config(&aws.get().await)) as Arc<dyn SecretStore>
            }
        }))
    }

    /// The partners/destinations configuration store, from `HOOKBOX_CONFIG`,
    /// `HOOKBOX_PARTNERS` or `HOOKBOX_PARTNERS_SECRET_ARN`.
    pub async fn partners(&self) -> Result<Arc<ConfigStore>, StartupError> {
        let source = ConfigSource::from_env(self.env())?;
        let secrets: Option<Arc<dyn SecretStore>> = match source {
            // read at once: an invalid configuration must fail the init
            ConfigSource::Secret { .. } => Some(self.secrets()),
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

    /// The inbox queue (SQS, `HOOKBOX_QUEUE_URL`); the URL is checked now,
    /// the client built on first use.
    pub async fn queue(&self) -> Result<Arc<dyn Queue>, StartupError> {
        let url = self.queue_url()?;
        let aws = self.aws.clone();
        Ok(Arc::new(Lazy::<dyn Queue>::new("SQS", move || {
            let (aws, url) = (aws.clone(), url.clone());
            async move { Arc::new(SqsQueue::from_sdk_config(&aws.get().await, url)) as Arc<dyn Queue> }
        })))
    }

    /// The database adapter (see [`store::connect_from_env`]); the Data
    /// API's variables are checked now, its client built on first use.
    pub async fn database(&self) -> Result<Arc<dyn Database>, StartupError> {
        let Some(target) = store::data_api_target(self.env())? else {
            return Ok(store::connect_from_env(self.env()).await?);
        };
        let aws = self.aws.clone();
        Ok(Arc::new(Lazy::<dyn Database>::new("Data API", move || {
            let (aws, target) = (aws.clone(), target.clone());
            async move {
                Arc::new(DataApiDatabase::from_sdk_config(&aws.get().await, target))
                    as Arc<dyn Database>
            }
        })))
    }

    /// The blob store (see [`blob::from_env`]); an S3 client is built on
    /// first use.
    pub async fn blobs(&self) -> Result<Arc<dyn BlobStore>, StartupError> {
        let bucket = match blob::location_from_env(self.env())? {
            blob::Location::Dir(dir) => return Ok(Arc::new(FsBlobStore::new(dir))),
            blob::Location::Bucket(bucket) => bucket,
        };
        let (aws, env) = (self.aws.clone(), self.env.clone());
        Ok(Arc::new(Lazy::<dyn BlobStore>::new("S3", move || {
            let (aws, env, bucket) = (aws.clone(), env.clone(), bucket.clone());
            async move {
                Arc::new(S3BlobStore::from_env(&aws.get().await, bucket, |n| env(n)))
                    as Arc<dyn BlobStore>
            }
        })))
    }

    /// The key vault sealing endpoints' secrets: KMS when
    /// `HOOKBOX_KMS_KEY_ID` names a key (its client built on first use), a
    /// local key when `HOOKBOX_LOCAL_VAULT_KEY` holds one (32 bytes, base64:
    /// the local stack), none when neither is set (tenants' endpoints are
    /// then not delivered to: their rows fail, naming the variable).
    pub fn vault(&self) -> Result<Option<Arc<dyn KeyVault>>, StartupError> {
        let var = |name: &str| {
            self.var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        match (var("HOOKBOX_KMS_KEY_ID"), var("HOOKBOX_LOCAL_VAULT_KEY")) {
            (Some(_), Some(_)) => Err(StartupError::settings(
                "key vault",
                "set HOOKBOX_KMS_KEY_ID or HOOKBOX_LOCAL_VAULT_KEY, not both",
            )),
            (Some(key_id), None) => {
                let aws = self.aws.clone();
                let id = key_id.clone();
                Ok(Some(Arc::new(LazyVault {
                    wrapped_by: key_id,
                    inner: Lazy::new("KMS", move || {
                        let (aws, id) = (aws.clone(), id.clone());
                        async move {
                            Arc::new(KmsVault::from_sdk_config(&aws.get().await, id))
                                as Arc<dyn KeyVault>
                        }
                    }),
                })))
            }
            (None, Some(key)) => LocalVault::from_base64(&key)
                .map(|v| Some(Arc::new(v) as Arc<dyn KeyVault>))
                .map_err(|e| StartupError::settings("HOOKBOX_LOCAL_VAULT_KEY", e)),
            (None, None) => Ok(None),
        }
    }

    /// What the relay needs to deliver to tenants' endpoints (none without
    /// a key vault): their secrets opened through [`Self::vault`], the
    /// networks the SSRF guard lets them resolve to
    /// (`HOOKBOX_ENDPOINT_ALLOWED_NETWORKS`, comma-separated; none by
    /// default: public addresses only), and how long an endpoint read on
    /// its own (not with its claim) is kept before it is read again
    /// (`HOOKBOX_ENDPOINT_CACHE_SECONDS`, default 10).
    pub fn endpoints(&self) -> Result<Option<Arc<EndpointDirectory>>, StartupError> {
        let Some(vault) = self.vault()? else {
            return Ok(None);
        };
        let networks = self
            .var("HOOKBOX_ENDPOINT_ALLOWED_NETWORKS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| {
                n.parse::<ipnet::IpNet>()
                    .or_else(|_| n.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        StartupError::settings(
                            "HOOKBOX_ENDPOINT_ALLOWED_NETWORKS",
                            format!("{n:?} is not an address or CIDR"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ttl = match self.var("HOOKBOX_ENDPOINT_CACHE_SECONDS") {
            None => crate::tenants::directory::DEFAULT_TTL,
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|s| *s <= 300)
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    StartupError::settings(
                        "HOOKBOX_ENDPOINT_CACHE_SECONDS",
                        format!("{v:?} is not a whole number of seconds from 0 to 300"),
                    )
                })?,
        };
        Ok(Some(Arc::new(
            EndpointDirectory::new(SecretKeeper::new(vault), networks).with_ttl(ttl),
        )))
    }

    /// The relay's AWS transports, coalescing a claim's entries ten to a
    /// call: SQS and EventBridge, each client built on first use (a relay
    /// with only HTTP destinations never builds one; cold start does not
    /// grow). An over-large envelope refers to its payload's object in the
    /// blob store's bucket (or directory).
    pub fn aws_transports(&self) -> [(TransportKind, Arc<dyn Transport>); 2] {
        let bucket = match blob::location_from_env(self.env()) {
            Ok(blob::Location::Bucket(bucket)) => Some(bucket),
            Ok(blob::Location::Dir(dir)) => Some(dir.display().to_string()),
            Err(_) => None,
        };
        let aws = self.aws.clone();
        let sqs = SqsTransport::lazy(
            move || {
                let aws = aws.clone();
                async move { Arc::new(SqsTransport::client(&aws.get().await)) }
            },
            bucket.clone(),
        );
        let aws = self.aws.clone();
        let eventbridge = EventBridgeTransport::lazy(
            move || {
                let aws = aws.clone();
                async move { Arc::new(EventBridgeTransport::client(&aws.get().await)) }
            },
            bucket,
        );
        [
            (
                TransportKind::Sqs,
                Arc::new(Coalescing::new(sqs, delivery::MAX_BATCH)),
            ),
            (
                TransportKind::EventBridge,
                Arc::new(Coalescing::new(eventbridge, delivery::MAX_BATCH)),
            ),
        ]
    }

    /// The ingest use case: partners, database, queue, blob store, the
    /// inline-body threshold and the database deadline from their variables.
    /// (Here rather than in `functions/ingest`, whose library holds the
    /// Lambda event handling.)
    pub async fn ingest(&self) -> Result<Ingest, StartupError> {
        let inline_max = body::inline_max_from_env(self.env())
            .map_err(|e| StartupError::settings("ingest settings", e))?;
        let db_deadline = ingest::db_deadline_from_env(self.env())
            .map_err(|e| StartupError::settings("ingest settings", e))?;
        let forward = crate::inbox::routed::forward_at_ingest_from_env(self.env())
            .map_err(|e| StartupError::settings("ingest settings", e))?;
        let ingest = Ingest::new(
            self.partners().await?,
            self.database().await?,
            self.queue().await?,
            self.blobs().await?,
            self.clock(),
        );
        Ok(ingest
            .with_inline_max(inline_max)
            .with_db_deadline(db_deadline)
            .with_forwarding_at_ingest(forward))
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

/// The stack's name (the template sets it to `AWS::StackName`): the
/// `Stack` dimension of every metric ([`crate::metrics::set_stack`]).
pub const STACK_VAR: &str = "HOOKBOX_STACK";

/// The SNS topic the relay's notices go to (the template sets the stack's
/// alarm topic); unset, they are logged.
pub const ALARM_TOPIC_VAR: &str = "HOOKBOX_ALARM_TOPIC_ARN";

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

    /// Installs the global subscriber (once; later calls do nothing). JSON
    /// lines as Lambda and Powertools read them ([`log_format`]: flat keys,
    /// `level`, `timestamp`, the invocation's ids); text lines without a
    /// time (CloudWatch stamps every line).
    pub fn install(&self) {
        use tracing_subscriber::EnvFilter;
        let filter = EnvFilter::try_new(&self.filter).unwrap_or_else(|_| EnvFilter::new("info"));
        let builder = tracing_subscriber::fmt().with_env_filter(filter);
        let _ = if self.json {
            builder
                .fmt_fields(log_format::fields())
                .event_format(log_format::formatter())
                .try_init()
        } else {
            builder.without_time().try_init()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;

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
            !start.aws.is_loaded(),
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
        assert!(!start.aws.is_loaded());
    }

    #[tokio::test]
    async fn the_aws_clients_wait_for_their_first_use() {
        let start = Startup::with_env(env(&[
            ("HOOKBOX_QUEUE_URL", "http://127.0.0.1:9/1/inbox"),
            ("HOOKBOX_DB", "data-api"),
            (
                "DB_CLUSTER_ARN",
                "arn:aws:rds:us-east-1:123456789012:cluster:c",
            ),
            (
                "DB_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:s",
            ),
            ("DB_NAME", "hookbox"),
            ("HOOKBOX_BLOB_BUCKET", "bodies"),
            ("AWS_REGION", "us-east-1"),
        ]));
        let queue = start.queue().await.expect("queue");
        let db = start.database().await.expect("database");
        let blobs = start.blobs().await.expect("blobs");
        assert!(!start.aws.is_loaded(), "init loaded no AWS configuration");
        for built in [
            format!("{queue:?}"),
            format!("{db:?}"),
            format!("{blobs:?}"),
        ] {
            assert!(built.contains("built: false"), "{built}");
        }
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
