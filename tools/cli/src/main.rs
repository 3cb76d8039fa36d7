//! `hookbox`: the operator CLI. Verify and sign webhook signatures with the
//! same code the ingest Lambda and the outbound relay use; inspect and repair
//! the inbox, the outbox and the dead-letter queue; send a signed test
//! webhook.
//!
//! Exit codes: 0 success (`valid`, signed, done), 1 the signature does not
//! verify (the reason is printed on stderr) or an operation failed or left
//! ids undone (missing, not replayable), 2 usage or configuration error
//! (unknown scheme, no body, unreadable file, unusable secret or
//! configuration, missing URL, no database configured).

mod admin_link;
mod common;
mod destination;
mod dlq;
mod endpoint;
mod enroll;
mod event_type;
mod inbox;
mod message;
mod outbox;
mod send;
mod stats;
mod tenant;

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, anyhow};
use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::signature::{
    Headers, SchemeConfig, SchemeKind, Secret, SignedRequest, Verifier, presets,
    sign_standard_webhooks,
};

use common::USAGE;
/// Exit code of a signature that does not verify.
const INVALID: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "hookbox",
    version,
    about = "hookbox operator CLI: signatures, inbox, outbox, dead-letter queue"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Verify a webhook request: prints `valid` (exit 0), or the reason on
    /// stderr (exit 1).
    Verify(VerifyArgs),
    /// Sign a webhook body: prints the header lines (`Name: value`), ready for
    /// `curl -H @file`.
    Sign(SignArgs),
    /// Rows per status in the inbox and the outbox, and the age of the
    /// oldest pending row of each.
    Stats(stats::StatsArgs),
    /// Inbound webhooks: list, show, replay.
    #[command(subcommand)]
    Inbox(inbox::InboxCommand),
    /// Outbound webhooks: list, retry dead rows.
    #[command(subcommand)]
    Outbox(outbox::OutboxCommand),
    /// Outbound endpoints' health: list, status, disable, enable.
    #[command(subcommand)]
    Destination(destination::DestinationCommand),
    /// The inbox queue's dead-letter queue.
    #[command(subcommand)]
    Dlq(dlq::DlqCommand),
    /// Sign a body as a partner (Standard Webhooks) or as a provider preset
    /// would (`--preset`), and POST it.
    Send(send::SendArgs),
    /// The provider presets, one a line: name, provider, signature recipe
    /// (tab-separated).
    Presets,
    /// The key pair that enrols a partner whose provider hands its secret
    /// over in a handshake (Asana): new, open.
    #[command(subcommand)]
    EnrollKey(enroll::EnrollKeyCommand),
    /// Tenants (a SaaS's customers): create, get, list, update, disable,
    /// enable, delete, audit. JSON out; a refusal names the field (exit 1).
    #[command(subcommand)]
    Tenant(tenant::TenantCommand),
    /// A tenant's endpoints: create, get, list, update, disable, enable,
    /// delete, secret, rotate, recover, drop-held, attempts. JSON out; a
    /// refusal names the field (exit 1).
    #[command(subcommand)]
    Endpoint(endpoint::EndpointCommand),
    /// A tenant's messages: create (publish), get, list, attempts. JSON
    /// out; a refusal names the field (exit 1).
    #[command(subcommand)]
    Message(message::MessageCommand),
    /// The event type catalog: put, get, list, delete (its JSON Schema, an
    /// example, whether publishing enforces the schema). JSON out; a
    /// refusal names the field (exit 1).
    #[command(subcommand)]
    EventType(event_type::EventTypeCommand),
    /// The operator page (`/admin`): mint an operator link (needs the
    /// stack's database credentials), or revoke them all.
    #[command(subcommand)]
    Admin(admin_link::AdminCommand),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum VerifyScheme {
    StandardWebhooks,
    Stripe,
    Github,
    Shopify,
    Slack,
    Twilio,
}

impl From<VerifyScheme> for SchemeKind {
    fn from(scheme: VerifyScheme) -> Self {
        match scheme {
            VerifyScheme::StandardWebhooks => Self::StandardWebhooks,
            VerifyScheme::Stripe => Self::Stripe,
            VerifyScheme::Github => Self::Github,
            VerifyScheme::Shopify => Self::Shopify,
            VerifyScheme::Slack => Self::Slack,
            VerifyScheme::Twilio => Self::Twilio,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SignScheme {
    StandardWebhooks,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct Body {
    /// The request body, as text (may start with `-`: a JSON body `-1`).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    body: Option<String>,
    /// A file holding the raw request body (bytes, as received).
    #[arg(long, value_name = "PATH")]
    body_file: Option<PathBuf>,
}

impl Body {
    pub(crate) fn bytes(&self) -> Result<Vec<u8>> {
        match (&self.body, &self.body_file) {
            (Some(text), _) => Ok(text.clone().into_bytes()),
            (None, Some(path)) => fs::read(path)
                .with_context(|| format!("cannot read --body-file {}", path.display())),
            (None, None) => Err(anyhow!("give --body or --body-file")),
        }
    }
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// The partner's signature scheme.
    #[arg(long, value_enum, required_unless_present_any = ["config", "preset"])]
    scheme: Option<VerifyScheme>,
    /// A full scheme configuration as JSON instead of --scheme, e.g.
    /// '{"scheme":"generic-hmac","header":"X-Sig","prefix":"sha256="}'.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["scheme", "preset"])]
    config: Option<String>,
    /// A provider preset instead of --scheme (`hookbox presets` lists them).
    #[arg(long, value_name = "NAME", conflicts_with = "scheme", value_parser = preset_name)]
    preset: Option<String>,
    /// The request method, for presets that sign it (HubSpot v3).
    #[arg(long, value_name = "METHOD", default_value = "POST")]
    method: String,
    /// A secret (repeat for rotation). Standard Webhooks: `whsec_…`, or a
    /// `whpk_…` public key for `v1a` signatures. May start with `-` (a
    /// GitHub secret `-Zx8…`).
    #[arg(
        long = "secret",
        value_name = "S",
        required = true,
        allow_hyphen_values = true
    )]
    secrets: Vec<String>,
    /// The full request URL (Twilio signs it).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The current time, in Unix seconds (default: the system clock).
    #[arg(long, value_name = "UNIX_SECONDS")]
    now: Option<i64>,
    /// Timestamp tolerance in seconds (default 300), for schemes with a timestamp.
    #[arg(long, value_name = "SECONDS")]
    tolerance: Option<u64>,
    /// A request header, `Name: value` (repeat).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    #[command(flatten)]
    body: Body,
}

#[derive(Debug, Args)]
struct SignArgs {
    /// The signature scheme (only Standard Webhooks signs outbound webhooks).
    #[arg(long, value_enum)]
    scheme: SignScheme,
    /// A `whsec_…` secret or `whsk_…` signing key (repeat: one signature each).
    #[arg(
        long = "secret",
        value_name = "S",
        required = true,
        allow_hyphen_values = true
    )]
    secrets: Vec<String>,
    /// The message id (`webhook-id`; may start with `-`).
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    id: String,
    /// The timestamp, in Unix seconds (`webhook-timestamp`).
    #[arg(long, value_name = "UNIX_SECONDS")]
    timestamp: i64,
    #[command(flatten)]
    body: Body,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| "expected `Name: value`".to_owned())?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err("expected `Name: value` with a header name without spaces".to_owned());
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}

pub(crate) fn preset_name(text: &str) -> Result<String, String> {
    match presets::get(text) {
        Some(preset) => Ok(preset.name.to_owned()),
        None => Err(format!(
            "unknown preset (one of: {})",
            presets::names().collect::<Vec<_>>().join(", ")
        )),
    }
}

fn list_presets() -> ExitCode {
    for preset in presets::all() {
        println!("{}", preset.summary());
    }
    ExitCode::SUCCESS
}

fn timestamp(secs: i64, flag: &str) -> Result<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp(secs, 0).ok_or_else(|| anyhow!("{flag} is out of range"))
}

fn verify(args: &VerifyArgs) -> Result<ExitCode> {
    let mut config = match (&args.config, args.scheme, &args.preset) {
        (Some(json), _, _) => serde_json::from_str::<SchemeConfig>(json)
            .with_context(|| "--config is not a valid scheme configuration")?,
        (None, _, Some(name)) => presets::lookup(name)?.scheme_config(None),
        (None, Some(scheme), None) => SchemeConfig::default_for(scheme.into())
            .ok_or_else(|| anyhow!("scheme needs --config"))?,
        (None, None, None) => return Err(anyhow!("give --scheme, --preset or --config")),
    };
    if let Some(tolerance) = args.tolerance {
        config.set_tolerance_secs(tolerance);
    }
    let verifier = Verifier::new(config).context("invalid scheme configuration")?;
    let body = args.body.bytes()?;
    let now = match args.now {
        Some(secs) => timestamp(secs, "--now")?,
        None => SystemClock.now(),
    };
    let headers = Headers::from_pairs(args.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let mut request = SignedRequest::new(&body, headers);
    request.url = args.url.as_deref();
    request.method = Some(&args.method);
    let secrets: Vec<Secret> = args.secrets.iter().map(Secret::new).collect();

    match verifier.verify_at(&request, &secrets, now) {
        Ok(_) => {
            println!("valid");
            Ok(ExitCode::SUCCESS)
        }
        Err(error) if error.is_configuration_error() => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(USAGE))
        }
        Err(error) => {
            eprintln!("invalid: {error}");
            Ok(ExitCode::from(INVALID))
        }
    }
}

fn sign(args: &SignArgs) -> Result<ExitCode> {
    let SignScheme::StandardWebhooks = args.scheme;
    let body = args.body.bytes()?;
    let secrets: Vec<Secret> = args.secrets.iter().map(Secret::new).collect();
    let headers = sign_standard_webhooks(
        &args.id,
        timestamp(args.timestamp, "--timestamp")?,
        &body,
        &secrets,
    )?;
    for (name, value) in headers.pairs() {
        println!("{name}: {value}");
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    common::stop_when_stdout_closes();
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Verify(args) => verify(args).map_err(common::Failure::Usage),
        Command::Sign(args) => sign(args).map_err(common::Failure::Usage),
        Command::Stats(args) => common::block_on(stats::run(args)),
        Command::Inbox(command) => common::block_on(inbox::run(command)),
        Command::Outbox(command) => common::block_on(outbox::run(command)),
        Command::Destination(command) => common::block_on(destination::run(command)),
        Command::Dlq(command) => common::block_on(dlq::run(command)),
        Command::Send(args) => common::block_on(send::run(args)),
        Command::Presets => Ok(list_presets()),
        Command::EnrollKey(command) => enroll::run(command),
        Command::Tenant(command) => common::block_on(tenant::run(command)),
        Command::Endpoint(command) => common::block_on(endpoint::run(command)),
        Command::Message(command) => common::block_on(message::run(command)),
        Command::EventType(command) => common::block_on(event_type::run(command)),
        Command::Admin(command) => common::block_on(admin_link::run(command)),
    };
    result.unwrap_or_else(common::Failure::report)
}
