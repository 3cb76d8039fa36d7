//! `hookbox endpoint create|get|list|update|disable|enable|delete|secret|rotate|
//! recover|drop-held|attempts`:
//! a tenant's endpoints managed at runtime, through the same SQL functions
//! as the SQL face and the HTTP API (`hookbox::tenants::manage`).
//!
//! Output is one pretty JSON document. A header's value is never printed
//! (an endpoint shows its headers' names), nor a secret, except by `secret`
//! and `rotate`, which exist to show it; both need the key vault
//! (`HOOKBOX_KMS_KEY_ID` or `HOOKBOX_LOCAL_VAULT_KEY`).

use std::sync::Arc;
use std::time::Duration;

use aws_config::BehaviorVersion;
use clap::{Args, Subcommand};
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::tenants::manage;
use hookbox::tenants::secrets::{SecretError, parse_secret};
use hookbox::tenants::{Endpoint, SecretKeeper};
use hookbox::vault::KeyVault;
use hookbox::vault::kms::KmsVault;
use hookbox::vault::local::LocalVault;
use serde_json::{Map, Value, json};

use crate::common::{DbArgs, Failure, Outcome, connect};
use crate::message;
use crate::tenant::{Writer, failed, nonempty, pairs, parse_pair, print_json, print_value};

/// The key vault's variables.
const KMS_KEY_VAR: &str = "HOOKBOX_KMS_KEY_ID";
const LOCAL_KEY_VAR: &str = "HOOKBOX_LOCAL_VAULT_KEY";
/// Longest grace of a rotated secret: 7 days.
const MAX_GRACE_SECS: u32 = 604_800;

#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Create an endpoint of a tenant; prints it (its id is `ep_…`). Its
    /// signing secret is generated on first use (`secret`, `rotate` or the
    /// relay's first delivery).
    Create(CreateArgs),
    /// One endpoint, by id or uid.
    Get(EndpointRef),
    /// A page of a tenant's endpoints in id order, i.e. creation order
    /// (`iterator`: pass it as --after for the next page).
    List(ListArgs),
    /// Change the fields given (the others stay).
    Update(UpdateArgs),
    /// Disable an endpoint: its deliveries wait (held) until `enable`.
    Disable(EndpointWrite),
    /// Enable an endpoint again (also after continuous failure disabled it).
    Enable(EndpointWrite),
    /// Delete an endpoint with its secrets and undelivered deliveries;
    /// prints how many of each.
    Delete(EndpointWrite),
    /// Print the endpoint's current signing secret (needs the key vault:
    /// HOOKBOX_KMS_KEY_ID or HOOKBOX_LOCAL_VAULT_KEY).
    Secret(EndpointRef),
    /// Seal a new signing secret now and print it (once); the previous one
    /// keeps signing for --grace-secs (needs the key vault).
    Rotate(RotateArgs),
    /// Send again the endpoint's failed deliveries created since --since
    /// (dead ones, and pending ones that failed), due now, with their
    /// webhook-id; prints how many.
    Recover(message::RecoverArgs),
    /// Drop what a held endpoint (disabled, its tenant disabled, or
    /// disabled after failing continuously) waits with: its pending
    /// deliveries created before --until (default: all) are dead, no longer
    /// sent on enable (`recover` can still send them); prints how many.
    /// Refused for an endpoint that is not held.
    DropHeld(message::DropHeldArgs),
    /// A page of the endpoint's delivery attempts, message by message
    /// (`iterator`: pass it as --after; a page may be short and not done).
    Attempts(message::EndpointAttemptsArgs),
}

/// The fields `create` and `update` share.
#[derive(Debug, Args)]
pub struct Fields {
    /// The SaaS's own id for it (unique within the tenant).
    #[arg(long, value_name = "UID")]
    uid: Option<String>,
    /// A description.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    description: Option<String>,
    /// An event type or `*` pattern it gets (repeat; default: every type).
    #[arg(long = "filter-type", value_name = "TYPE")]
    filter_types: Vec<String>,
    /// A channel it gets (repeat; default: every message).
    #[arg(long = "channel", value_name = "CHANNEL")]
    channels: Vec<String>,
    /// A custom header sent with each delivery (repeat; on `update` they
    /// replace every header). Its value is never printed back.
    #[arg(long = "header", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    headers: Vec<String>,
    /// A key-value pair of the SaaS's own (repeat; on `update` they replace
    /// the whole map).
    #[arg(long = "metadata", value_name = "KEY=VALUE", value_parser = parse_pair)]
    metadata: Vec<(String, String)>,
    /// Most requests per second to it.
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    /// Deliver one aggregate's events in publish order.
    #[arg(long)]
    ordered: bool,
}

impl Fields {
    /// The fields given, as the functions' JSON.
    fn spec(&self) -> Result<Map<String, Value>, Failure> {
        let mut spec = Map::new();
        if let Some(uid) = &self.uid {
            spec.insert("uid".into(), json!(uid));
        }
        if let Some(description) = &self.description {
            spec.insert("description".into(), json!(description));
        }
        if !self.filter_types.is_empty() {
            spec.insert("filter_types".into(), json!(self.filter_types));
        }
        if !self.channels.is_empty() {
            spec.insert("channels".into(), json!(self.channels));
        }
        if !self.headers.is_empty() {
            spec.insert("headers".into(), headers(&self.headers)?);
        }
        if !self.metadata.is_empty() {
            spec.insert("metadata".into(), pairs(&self.metadata));
        }
        if let Some(limit) = self.rate_limit {
            spec.insert("rate_limit".into(), json!(limit));
        }
        if self.ordered {
            spec.insert("ordered".into(), json!(true));
        }
        Ok(spec)
    }
}

/// `Name=Value` headers as a JSON object, parsed here rather than by clap,
/// whose errors would print the value (which may be a credential).
fn headers(given: &[String]) -> Result<Value, Failure> {
    let mut map = Map::new();
    for text in given {
        match text.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                map.insert(name.trim().to_owned(), Value::String(value.to_owned()));
            }
            _ => {
                return Err(Failure::usage(
                    "a --header is NAME=VALUE (what was given is not shown: it may be a \
                     credential)",
                ));
            }
        }
    }
    Ok(Value::Object(map))
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Where deliveries are POSTed (http:// or https://).
    #[arg(long, value_name = "URL")]
    url: String,
    #[command(flatten)]
    fields: Fields,
    /// Create it disabled (its deliveries wait until `enable`).
    #[arg(long)]
    disabled: bool,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    /// A new URL.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    #[command(flatten)]
    fields: Fields,
    /// Get every event type again (clears the filter types).
    #[arg(long, conflicts_with = "filter_types")]
    all_types: bool,
    /// Get every channel again (clears the channels).
    #[arg(long, conflicts_with = "channels")]
    all_channels: bool,
    /// Remove every custom header.
    #[arg(long, conflicts_with = "headers")]
    clear_headers: bool,
    /// Remove every metadata pair.
    #[arg(long, conflicts_with = "metadata")]
    clear_metadata: bool,
    /// Remove the rate limit.
    #[arg(long, conflicts_with = "rate_limit")]
    no_rate_limit: bool,
    /// Deliver in any order (undoes --ordered).
    #[arg(long, conflicts_with = "ordered")]
    unordered: bool,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct EndpointRef {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct EndpointWrite {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Start after this (the previous page's `iterator`).
    #[arg(long, value_name = "ITERATOR")]
    after: Option<String>,
    /// Most endpoints on the page (1 to 250).
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: u32,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct RotateArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    /// How long the previous secret keeps signing (0 to 604800: 7 days).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 86_400,
        value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_GRACE_SECS))
    )]
    grace_secs: u32,
    /// The new secret (`whsec_` and the base64 of 24 to 64 bytes) instead of
    /// a generated one. A flag is visible to other users of the machine.
    #[arg(long, value_name = "whsec_…")]
    key: Option<String>,
    #[command(flatten)]
    writer: Writer,
}

pub async fn run(command: &EndpointCommand) -> Outcome {
    match command {
        EndpointCommand::Create(args) => create(args).await,
        EndpointCommand::Get(args) => {
            let db = connect(&args.db).await?;
            print_json(&manage::get_endpoint(db.as_ref(), &args.tenant, &args.endpoint).await)
        }
        EndpointCommand::List(args) => {
            let db = connect(&args.db).await?;
            let page = manage::list_endpoints(
                db.as_ref(),
                &args.tenant,
                args.after.as_deref(),
                args.limit,
            )
            .await;
            print_json(&page)
        }
        EndpointCommand::Update(args) => update(args).await,
        EndpointCommand::Disable(args) => set_disabled(args, true).await,
        EndpointCommand::Enable(args) => set_disabled(args, false).await,
        EndpointCommand::Delete(args) => delete(args).await,
        EndpointCommand::Secret(args) => secret(args).await,
        EndpointCommand::Rotate(args) => rotate(args).await,
        EndpointCommand::Recover(args) => message::recover(args).await,
        EndpointCommand::DropHeld(args) => message::drop_held(args).await,
        EndpointCommand::Attempts(args) => message::endpoint_attempts(args).await,
    }
}

async fn create(args: &CreateArgs) -> Outcome {
    let mut spec = args.fields.spec()?;
    spec.insert("url".into(), json!(args.url));
    if args.disabled {
        spec.insert("disabled".into(), json!(true));
    }
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let created = manage::create_endpoint(
        db.as_ref(),
        &args.tenant,
        &Value::Object(spec),
        Some(&actor),
    )
    .await;
    print_json(&created)
}

async fn update(args: &UpdateArgs) -> Outcome {
    let mut changes = args.fields.spec()?;
    if let Some(url) = &args.url {
        changes.insert("url".into(), json!(url));
    }
    for (clear, field, empty) in [
        (args.all_types, "filter_types", Value::Null),
        (args.all_channels, "channels", Value::Null),
        (args.clear_headers, "headers", json!({})),
        (args.clear_metadata, "metadata", json!({})),
        (args.no_rate_limit, "rate_limit", Value::Null),
        (args.unordered, "ordered", json!(false)),
    ] {
        if clear {
            changes.insert(field.into(), empty);
        }
    }
    let changes = nonempty(changes)?;
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let updated = manage::update_endpoint(
        db.as_ref(),
        &args.tenant,
        &args.endpoint,
        &changes,
        Some(&actor),
    )
    .await;
    print_json(&updated)
}

async fn set_disabled(args: &EndpointWrite, disabled: bool) -> Outcome {
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let changed = manage::update_endpoint(
        db.as_ref(),
        &args.tenant,
        &args.endpoint,
        &json!({ "disabled": disabled }),
        Some(&actor),
    )
    .await;
    print_json(&changed)
}

async fn delete(args: &EndpointWrite) -> Outcome {
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let deleted = manage::delete_endpoint(db.as_ref(), &args.tenant, &args.endpoint, Some(&actor))
        .await
        .map_err(failed)?;
    // an endpoint's deletion counts no endpoints: leave the field out
    print_value(&json!({
        "id": deleted.id,
        "uid": deleted.uid,
        "secrets": deleted.secrets,
        "undelivered": deleted.undelivered,
    }))
}

/// The key vault from the environment: KMS (`HOOKBOX_KMS_KEY_ID`) or the
/// local stack's key (`HOOKBOX_LOCAL_VAULT_KEY`), exactly one.
async fn keeper() -> Result<SecretKeeper, Failure> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let vault: Arc<dyn KeyVault> = match (var(KMS_KEY_VAR), var(LOCAL_KEY_VAR)) {
        (Some(_), Some(_)) => {
            return Err(Failure::failed(format!(
                "set {KMS_KEY_VAR} or {LOCAL_KEY_VAR}, not both"
            )));
        }
        (Some(key_id), None) => {
            let aws = aws_config::defaults(BehaviorVersion::latest()).load().await;
            Arc::new(KmsVault::from_sdk_config(&aws, key_id))
        }
        (None, Some(key)) => Arc::new(
            LocalVault::from_base64(&key)
                .map_err(|e| Failure::failed(format!("{LOCAL_KEY_VAR}: {e}")))?,
        ),
        (None, None) => {
            return Err(Failure::failed(format!(
                "no key vault: set {KMS_KEY_VAR} (the KMS key sealing endpoints' secrets) or \
                 {LOCAL_KEY_VAR} (the local stack's key, printed by `tools/dev run`)"
            )));
        }
    };
    Ok(SecretKeeper::new(vault))
}

/// The endpoint `tenant`/`endpoint` names (the keeper knows ids only, and
/// not which tenant they belong to).
async fn resolve(
    db: &dyn hookbox::store::Executor,
    tenant: &str,
    endpoint: &str,
) -> Result<Endpoint, Failure> {
    manage::get_endpoint(db, tenant, endpoint)
        .await
        .map_err(failed)
}

fn secret_failed(error: SecretError) -> Failure {
    Failure::Failed(anyhow::Error::new(error))
}

async fn secret(args: &EndpointRef) -> Outcome {
    let keeper = keeper().await?;
    let db = connect(&args.db).await?;
    let endpoint = resolve(db.as_ref(), &args.tenant, &args.endpoint).await?;
    let secret = keeper
        .reveal(
            db.as_ref(),
            &endpoint.id,
            SystemClock.now(),
            Some(&crate::tenant::actor_named(None)),
        )
        .await
        .map_err(secret_failed)?;
    print_value(&json!({ "id": endpoint.id, "key": secret.expose_secret() }))
}

async fn rotate(args: &RotateArgs) -> Outcome {
    let new = args
        .key
        .as_deref()
        .map(parse_secret)
        .transpose()
        .map_err(secret_failed)?;
    let keeper = keeper().await?;
    let db = connect(&args.writer.db).await?;
    let endpoint = resolve(db.as_ref(), &args.tenant, &args.endpoint).await?;
    let actor = args.writer.actor();
    let grace = Duration::from_secs(u64::from(args.grace_secs));
    let secret = keeper
        .rotate(db.as_ref(), &endpoint.id, new, grace, Some(&actor))
        .await
        .map_err(secret_failed)?;
    print_value(&json!({
        "id": endpoint.id,
        "key": secret.expose_secret(),
        "previous_valid_for_secs": args.grace_secs,
    }))
}
