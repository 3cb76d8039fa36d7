//! `cargo run -p hookbox-local`: the whole of hookbox on this machine.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox_local::{
    DEMO_PARTNER, DEMO_SECRET, DOWNSTREAM, FORWARDED_PARTNER, LocalStack, Options, QueueChoice,
};

/// hookbox's local stack: PostgreSQL, API Gateway + authorizer + ingest, a
/// queue with SQS semantics, the processor, the relay and sweeper, /admin.
#[derive(Debug, Parser)]
#[command(name = "hookbox-local", version)]
struct Args {
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Which API Gateway to play in front of the authorizer and ingest:
    /// `rest` (REST API, payload format 1.0, every body base64) or `http`
    /// (HTTP API, payload format 2.0 with simple authorizer responses: a
    /// text Content-Type's body as a string, repeated headers joined with
    /// commas). See docs/ingress.md.
    #[arg(long, default_value = "rest", value_parser = ["rest", "http"])]
    ingress: String,
    /// Use this PostgreSQL database instead of a throwaway cluster (kept on
    /// exit; restarting with it picks up where the last run left off).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Reach the database through the local RDS Data API, as on Aurora.
    #[arg(long)]
    data_api: bool,
    /// A hookbox configuration file (JSON or TOML) instead of the demo one.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Use a real SQS endpoint (e.g. moto) instead of the in-memory queue.
    #[arg(long, requires = "sqs_queue_url")]
    sqs_endpoint: Option<String>,
    /// The queue URL at --sqs-endpoint.
    #[arg(long, requires = "sqs_endpoint")]
    sqs_queue_url: Option<String>,
    /// Event types the demo partner routes to the orders domain (others are
    /// quarantined as poison pills).
    #[arg(long, value_delimiter = ',', default_values_t = hookbox_local::DEMO_TYPES.map(String::from))]
    demo_types: Vec<String>,
    /// The in-memory queue's visibility timeout, seconds.
    #[arg(long, default_value_t = 30)]
    visibility_timeout: u64,
    /// Receives before a message goes to the dead-letter queue.
    #[arg(long, default_value_t = 4)]
    max_receive_count: u32,
    /// The sweeper re-enqueues inbox rows overdue by this many seconds.
    #[arg(long, default_value_t = 300)]
    sweep_after: u64,
    /// The processor's backoff after receive 1, 2, 3, … (seconds; the last
    /// repeats).
    #[arg(long, value_delimiter = ',', default_values_t = [60, 300, 900])]
    retry_schedule: Vec<u64>,
    /// Processor loops receiving batches at once, as Lambda runs several
    /// invocations of the processor (its concurrency on the event source
    /// mapping).
    #[arg(long, default_value_t = hookbox_local::event_source::DEFAULT_CONCURRENCY)]
    processor_concurrency: usize,
    /// Directory for bodies over the inline threshold (the blob store; S3
    /// when deployed). Default: a temporary one, removed on exit with the
    /// throwaway database, or <tmp>/hookbox-local-blobs with --database-url.
    #[arg(long)]
    blob_dir: Option<PathBuf>,
    /// Deliver `eventbridge` and `sqs` destinations to this endpoint (e.g.
    /// moto: `http://127.0.0.1:5000`), with dummy credentials.
    #[arg(long)]
    aws_endpoint: Option<String>,
    /// The local key vault's key sealing tenants' endpoint secrets (32
    /// bytes, base64). Default: a new one, printed at start; pass it again
    /// with --database-url to open what an earlier run sealed.
    #[arg(long, env = "HOOKBOX_LOCAL_VAULT_KEY", hide_env_values = true)]
    vault_key: Option<String>,
    /// The management API's tokens, hashed: `[{"name": "ci", "sha256":
    /// "<hex of the token's SHA-256>"}]`. Default: one token, generated and
    /// printed at start.
    #[arg(long, env = hookbox::management::TOKENS_ENV, hide_env_values = true)]
    api_tokens: Option<String>,
    /// The access key SigV4-signed management requests may use (service
    /// execute-api), as `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:PRINCIPAL_ARN]`.
    /// Default: one generated and printed at start.
    #[arg(long, env = "HOOKBOX_LOCAL_SIGV4_KEY", hide_env_values = true)]
    sigv4_key: Option<String>,
}

/// `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:PRINCIPAL_ARN]`.
fn parse_sigv4_key(text: &str) -> anyhow::Result<hookbox::management::sigv4::AccessKey> {
    let mut parts = text.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(id), Some(secret), principal) if !id.is_empty() && !secret.is_empty() => {
            Ok(hookbox::management::sigv4::AccessKey::new(
                id,
                secret,
                principal.unwrap_or(hookbox_local::LOCAL_SIGV4_PRINCIPAL),
            ))
        }
        _ => anyhow::bail!(
            "--sigv4-key (HOOKBOX_LOCAL_SIGV4_KEY) must be ACCESS_KEY_ID:SECRET_ACCESS_KEY[:PRINCIPAL_ARN]"
        ),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    // EMF lines are for CloudWatch; locally they go to the debug log
    hookbox::metrics::print_to_stdout(false);
    let args = Args::parse();
    let options = Options {
        port: args.port,
        ingress: args.ingress.parse().map_err(anyhow::Error::msg)?,
        database_url: args.database_url,
        data_api: args.data_api,
        config: args.config.clone(),
        queue: match (args.sqs_endpoint, args.sqs_queue_url) {
            (Some(endpoint), Some(queue_url)) => QueueChoice::Sqs {
                endpoint,
                queue_url,
            },
            _ => QueueChoice::Memory,
        },
        demo_types: args.demo_types,
        visibility_timeout: Duration::from_secs(args.visibility_timeout),
        max_receive_count: args.max_receive_count,
        sweep_after: Duration::from_secs(args.sweep_after),
        retry_schedule: args
            .retry_schedule
            .iter()
            .map(|s| Duration::from_secs(*s))
            .collect(),
        processor_concurrency: args.processor_concurrency,
        blob_dir: args.blob_dir,
        aws_endpoint: args.aws_endpoint,
        vault_key: args.vault_key,
        api_tokens: args
            .api_tokens
            .as_deref()
            .map(hookbox::management::ApiTokens::from_json)
            .transpose()?,
        sigv4_key: args.sigv4_key.as_deref().map(parse_sigv4_key).transpose()?,
        record_api_answers: false,
    };
    hookbox_local::check(&options)?;
    if let Some(url) = &options.database_url {
        eprintln!(
            "using the existing database {} (migrated; its inbox and outbox rows are handled by \
             this stack's demo handlers and relay)",
            hookbox_local::redact(url)
        );
    }
    let stack = LocalStack::start(options).await?;
    println!(
        "hookbox local stack listening on {} (API Gateway {} ingress)",
        stack.url(),
        stack.ingress().as_str()
    );
    // the throwaway cluster has no password; a given URL's password is not echoed
    println!(
        "DATABASE_URL={}",
        hookbox_local::redact(stack.database_url())
    );
    println!(
        "HOOKBOX_BLOB_DIR={} (bodies over the inline threshold)",
        stack.blob_dir().display()
    );
    println!(
        "HOOKBOX_LOCAL_VAULT_KEY={} (seals tenants' endpoint secrets; the CLI needs it to \
         reveal or rotate one)",
        stack.vault_key()
    );
    let api = format!("{}/api/v1", stack.url());
    match stack.api_token() {
        Some(token) => println!(
            "HOOKBOX_API_TOKEN={token} (the management API at {api}, Svix's API: e.g. \
             Svix(\"{token}\", SvixOptions(server_url=\"{}\")); configure your own with \
             {}, hashed)",
            stack.url(),
            hookbox::management::TOKENS_ENV
        ),
        None => println!("the management API at {api} (tokens from --api-tokens)"),
    }
    let key = stack.sigv4_key();
    println!(
        "AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={} (SigV4 for execute-api at {api}, as {})",
        key.access_key_id,
        key.secret_access_key(),
        key.principal
    );
    match &args.config {
        // the demo's partners and secrets: ready-to-paste signed requests
        None => println!("{}", try_it(stack.url())?),
        Some(path) => println!(
            "send a webhook as one of {}'s partners, signed as its provider signs:\n  \
             cargo run -q -p hookbox-cli -- send --preset <preset> --secret <its secret> \
             --url {}/webhooks/<partner> --body '<json>'",
            path.display(),
            stack.url()
        ),
    }
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    eprintln!("stopping…");
    stack.stop().await;
    Ok(())
}

/// The ready-to-paste commands: a signed curl (valid for 5 minutes) and the
/// `hookbox send` equivalent.
fn try_it(url: &str) -> anyhow::Result<String> {
    let body = r#"{"type":"payment.received","order_id":"o-1","amount":12.5}"#;
    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let signed = sign_standard_webhooks(
        &id,
        chrono::Utc::now(),
        body.as_bytes(),
        &[Secret::new(DEMO_SECRET)],
    )?;
    let forward = r#"{"type":"invoice.paid","order_id":"o-2","amount":12.5}"#;
    let fid = format!("msg_{}", uuid::Uuid::new_v4().simple());
    let fsigned = sign_standard_webhooks(
        &fid,
        chrono::Utc::now(),
        forward.as_bytes(),
        &[Secret::new(DEMO_SECRET)],
    )?;
    Ok(format!(
        "send a webhook (signed now, valid for 5 minutes):\n  curl -i {url}/webhooks/{DEMO_PARTNER} \
         -H 'content-type: application/json' -H 'webhook-id: {}' -H 'webhook-timestamp: {}' \
         -H 'webhook-signature: {}' -d '{body}'\nor: cargo run -q -p hookbox-cli -- send --partner \
         {DEMO_PARTNER} --url {url}/webhooks/{DEMO_PARTNER} --body '{body}'\n\
         forward one by routes, as a deployed stack does (to {DOWNSTREAM}, this stack's own \
         receiver; see it in {url}/admin and `SELECT * FROM local_downstream_received`):\n  \
         curl -i {url}/webhooks/{FORWARDED_PARTNER} -H 'content-type: application/json' \
         -H 'webhook-id: {}' -H 'webhook-timestamp: {}' -H 'webhook-signature: {}' -d '{forward}'\n\
         watch it: {url}/admin (and `DATABASE_URL=… cargo run -q -p hookbox-cli -- stats`)",
        signed.id,
        signed.timestamp,
        signed.signature,
        fsigned.id,
        fsigned.timestamp,
        fsigned.signature
    ))
}
