//! How to start the stack ([`Options`], the command line's flags as data)
//! and the checks that need no running stack.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use hookbox::management::ApiTokens;
use hookbox::management::sigv4::AccessKey;
use hookbox::processing::ProcessorConfig;

use crate::demo::DEMO_TYPES;
use crate::event_source;
use crate::gateway::Ingress;

/// Which queue feeds the processor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueChoice {
    /// In memory, with SQS semantics.
    Memory,
    /// A real SQS queue (e.g. moto): the SQS adapter against `endpoint`.
    Sqs {
        /// Endpoint URL (`http://127.0.0.1:5000`).
        endpoint: String,
        /// The queue URL.
        queue_url: String,
    },
}

/// How to start the stack.
#[derive(Debug, Clone)]
pub struct Options {
    /// Port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// Which API Gateway's events the functions get (`--ingress`).
    pub ingress: Ingress,
    /// An existing database; `None`: a throwaway cluster.
    pub database_url: Option<String>,
    /// Go through the local RDS Data API (tools/local-data-api).
    pub data_api: bool,
    /// A configuration file instead of the built-in demo configuration.
    pub config: Option<PathBuf>,
    /// The queue.
    pub queue: QueueChoice,
    /// Event types the demo partner routes to the orders domain.
    pub demo_types: Vec<String>,
    /// The in-memory queue's visibility timeout.
    pub visibility_timeout: Duration,
    /// The queue's maxReceiveCount (and the processor's).
    pub max_receive_count: u32,
    /// The sweeper's threshold.
    pub sweep_after: Duration,
    /// The processor's backoff by receive count (Retry and Defer).
    pub retry_schedule: Vec<Duration>,
    /// Processor loops receiving batches at once (Lambda's concurrency on
    /// the event source mapping).
    pub processor_concurrency: usize,
    /// Where bodies over the inline threshold go (the blob store; S3 when
    /// deployed). `None`: a temporary directory removed with a throwaway
    /// database, or `<tmp>/hookbox-local-blobs` (kept) with an existing one.
    pub blob_dir: Option<PathBuf>,
    /// Where the relay delivers `eventbridge` and `sqs` destinations (an
    /// emulator such as moto, dummy credentials); `None`: such rows are
    /// failed attempts naming the missing transport.
    pub aws_endpoint: Option<String>,
    /// The local key vault's key sealing tenants' endpoint secrets (32
    /// bytes, base64); `None`: a new random one (what was sealed under an
    /// earlier one does not open: reuse the key with an existing database).
    pub vault_key: Option<String>,
    /// The management API's tokens (`HOOKBOX_API_TOKENS`); `None`: one
    /// generated token named `local` ([`LocalStack::api_token`]).
    pub api_tokens: Option<ApiTokens>,
    /// The access key SigV4-signed management requests may use; `None`: one
    /// generated ([`LocalStack::sigv4_key`]).
    pub sigv4_key: Option<AccessKey>,
    /// Keep every answer of the management API ([`LocalStack::api_answers`]).
    pub record_api_answers: bool,
}

/// The principal of the generated local access key.
pub const LOCAL_SIGV4_PRINCIPAL: &str = "arn:aws:iam::000000000000:user/hookbox-local";

impl Default for Options {
    fn default() -> Self {
        Self {
            port: 3000,
            ingress: Ingress::Rest,
            database_url: None,
            data_api: false,
            config: None,
            queue: QueueChoice::Memory,
            demo_types: DEMO_TYPES.iter().map(|t| t.to_string()).collect(),
            visibility_timeout: Duration::from_secs(30),
            max_receive_count: 4,
            sweep_after: Duration::from_secs(300),
            retry_schedule: ProcessorConfig::default().retry_schedule,
            processor_concurrency: event_source::DEFAULT_CONCURRENCY,
            blob_dir: None,
            aws_endpoint: None,
            vault_key: None,
            api_tokens: None,
            sigv4_key: None,
            record_api_answers: false,
        }
    }
}

/// Checks the options that can be checked before starting.
pub fn check(options: &Options) -> anyhow::Result<()> {
    if options.demo_types.is_empty() {
        bail!("--demo-types needs at least one event type");
    }
    if options.retry_schedule.is_empty() {
        bail!("--retry-schedule needs at least one delay");
    }
    if options.max_receive_count == 0 {
        bail!("--max-receive-count must be at least 1");
    }
    if options.processor_concurrency == 0 {
        bail!("--processor-concurrency must be at least 1");
    }
    Ok(())
}
