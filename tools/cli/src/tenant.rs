//! `hookbox tenant create|get|list|update|disable|enable|delete|audit|link|unlink`:
//! tenants (a SaaS's customers) managed at runtime, through the same SQL
//! functions as the SQL face and the HTTP API (`hookbox::tenants::manage`),
//! so one model, one set of checks and one audit trail (face `cli`).
//!
//! Output is one pretty JSON document (what the function returned), for
//! scripts. A refusal (a bad field, no such tenant, a uid taken) prints the
//! function's message, which names the field, on stderr: exit 1.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hookbox::tenants::links::{self, LinkSpec};
use hookbox::tenants::manage::{self, ManageError};
use hookbox::tenants::{Actor, Face};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::common::{DbArgs, Failure, OrFail as _, Outcome, connect};

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints it (its id is `app_…`).
    Create(CreateArgs),
    /// One tenant, by id or uid.
    Get(TenantRef),
    /// A page of tenants in id order, i.e. creation order (`iterator`: pass
    /// it as --after for the next page).
    List(ListArgs),
    /// Change the fields given (the others stay).
    Update(UpdateArgs),
    /// Disable a tenant: every endpoint of it is held (deliveries wait).
    Disable(TenantWrite),
    /// Enable a tenant again: its endpoints deliver unless disabled themselves.
    Enable(TenantWrite),
    /// Delete a tenant with its endpoints, their secrets and their
    /// undelivered deliveries; prints how many of each.
    Delete(TenantWrite),
    /// A page of the tenant's audit trail, oldest first (`iterator`: pass it
    /// as --after for the next page).
    Audit(AuditArgs),
    /// Mint a customer portal link for the tenant (docs/portal.md); prints
    /// it with its key, which is shown this once.
    Link(LinkArgs),
    /// Revoke the tenant's portal links: one (--link), a session's
    /// (--session), or all of them; prints how many.
    Unlink(UnlinkArgs),
}

/// The database and who makes the change (the audit trail records both
/// the face `cli` and this principal).
#[derive(Debug, Args)]
pub struct Writer {
    /// Who makes the change, for the audit trail (default: $USER, else `cli`).
    #[arg(long = "as", value_name = "PRINCIPAL")]
    pub principal: Option<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

impl Writer {
    /// The actor: the CLI face and the principal.
    pub fn actor(&self) -> Actor {
        actor_named(self.principal.clone())
    }
}

/// The CLI face and `principal`, else `$USER`, else `cli`.
pub fn actor_named(principal: Option<String>) -> Actor {
    let principal = principal
        .or_else(|| std::env::var("USER").ok())
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "cli".to_owned());
    Actor::new(Face::Cli, principal)
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Its name.
    #[arg(long, value_name = "NAME")]
    name: String,
    /// The SaaS's own id for it (letters, digits, `.`, `-`, `_`).
    #[arg(long, value_name = "UID")]
    uid: Option<String>,
    /// A key-value pair of the SaaS's own (repeat).
    #[arg(long = "metadata", value_name = "KEY=VALUE", value_parser = parse_pair)]
    metadata: Vec<(String, String)>,
    /// Most requests per second to each of its endpoints that sets none.
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct TenantRef {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct TenantWrite {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Start after this (the previous page's `iterator`).
    #[arg(long, value_name = "ITERATOR")]
    after: Option<String>,
    /// Most tenants on the page (1 to 250).
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: u32,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// A new name.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// A new uid.
    #[arg(long, value_name = "UID")]
    uid: Option<String>,
    /// The new metadata (repeat): replaces the whole map.
    #[arg(long = "metadata", value_name = "KEY=VALUE", value_parser = parse_pair)]
    metadata: Vec<(String, String)>,
    /// Remove every metadata pair.
    #[arg(long, conflicts_with = "metadata")]
    clear_metadata: bool,
    /// A new rate limit (requests per second).
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    /// Remove the rate limit.
    #[arg(long, conflicts_with = "rate_limit")]
    no_rate_limit: bool,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Start after this entry (a `seq`, the previous page's `iterator`).
    #[arg(long, value_name = "SEQ")]
    after: Option<i64>,
    /// Most entries on the page (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 100)]
    limit: u32,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// How long the link lives: seconds, or a number and s, m, h or d
    /// (1h to 7d; default 7d).
    #[arg(long, value_name = "DURATION", value_parser = parse_expiry)]
    expiry: Option<u32>,
    /// The link may look, not change.
    #[arg(long)]
    read_only: bool,
    /// A label of yours, to revoke a session's links together.
    #[arg(long = "session", value_name = "ID")]
    session_id: Option<String>,
    /// The stack's public URL (with its stage, e.g.
    /// https://abc.execute-api.eu-west-1.amazonaws.com/Prod), to print the
    /// whole link.
    #[arg(long, value_name = "URL", env = "HOOKBOX_PORTAL_URL")]
    portal_url: Option<String>,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct UnlinkArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Only this link (its id, `pl_…`).
    #[arg(long = "link", value_name = "ID", conflicts_with = "session_id")]
    link: Option<String>,
    /// Only the links minted with this session id.
    #[arg(long = "session", value_name = "ID")]
    session_id: Option<String>,
    #[command(flatten)]
    writer: Writer,
}

/// `3600`, `90m`, `12h`, `7d`: seconds (a bare number, or an age as
/// `--since` reads one).
pub fn parse_expiry(text: &str) -> Result<u32, String> {
    let text = text.trim();
    text.parse::<u32>()
        .ok()
        .or_else(|| crate::outbox::age_seconds(text).and_then(|s| u32::try_from(s).ok()))
        .ok_or_else(|| {
            format!(
                "{text:?} is not a duration: seconds, or a number and s, m, h or d (90m, 2h, 7d)"
            )
        })
}

async fn link(args: &LinkArgs) -> Outcome {
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let spec = LinkSpec {
        expiry_secs: args.expiry,
        read_only: args.read_only,
        session_id: args.session_id.clone(),
    };
    let minted = links::mint_link(db.as_ref(), &args.tenant, &spec, Some(&actor))
        .await
        .map_err(failed)?;
    let mut doc = serde_json::to_value(&minted.link).or_failed("cannot print the link")?;
    doc["key"] = json!(minted.key.expose());
    doc["url"] = match &args.portal_url {
        Some(base) => json!(hookbox::management::portal::link_url(base, &minted.key)),
        None => Value::Null,
    };
    print_value(&doc)
}

pub async fn run(command: &TenantCommand) -> Outcome {
    match command {
        TenantCommand::Create(args) => create(args).await,
        TenantCommand::Get(args) => {
            let db = connect(&args.db).await?;
            print_json(&manage::get_tenant(db.as_ref(), &args.tenant).await)
        }
        TenantCommand::List(args) => {
            let db = connect(&args.db).await?;
            print_json(&manage::list_tenants(db.as_ref(), args.after.as_deref(), args.limit).await)
        }
        TenantCommand::Update(args) => update(args).await,
        TenantCommand::Disable(args) => set_disabled(args, true).await,
        TenantCommand::Enable(args) => set_disabled(args, false).await,
        TenantCommand::Delete(args) => {
            let db = connect(&args.writer.db).await?;
            let actor = args.writer.actor();
            print_json(&manage::delete_tenant(db.as_ref(), &args.tenant, Some(&actor)).await)
        }
        TenantCommand::Audit(args) => {
            let db = connect(&args.db).await?;
            print_json(&manage::audit(db.as_ref(), &args.tenant, args.after, args.limit).await)
        }
        TenantCommand::Link(args) => link(args).await,
        TenantCommand::Unlink(args) => {
            let db = connect(&args.writer.db).await?;
            let actor = args.writer.actor();
            print_json(
                &links::revoke_links(
                    db.as_ref(),
                    &args.tenant,
                    args.link.as_deref(),
                    args.session_id.as_deref(),
                    Some(&actor),
                )
                .await,
            )
        }
    }
}

async fn create(args: &CreateArgs) -> Outcome {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(args.name));
    if let Some(uid) = &args.uid {
        spec.insert("uid".into(), json!(uid));
    }
    if !args.metadata.is_empty() {
        spec.insert("metadata".into(), pairs(&args.metadata));
    }
    if let Some(limit) = args.rate_limit {
        spec.insert("rate_limit".into(), json!(limit));
    }
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    print_json(&manage::create_tenant(db.as_ref(), &Value::Object(spec), Some(&actor)).await)
}

async fn update(args: &UpdateArgs) -> Outcome {
    let mut changes = Map::new();
    if let Some(name) = &args.name {
        changes.insert("name".into(), json!(name));
    }
    if let Some(uid) = &args.uid {
        changes.insert("uid".into(), json!(uid));
    }
    if !args.metadata.is_empty() || args.clear_metadata {
        changes.insert("metadata".into(), pairs(&args.metadata));
    }
    if let Some(limit) = args.rate_limit {
        changes.insert("rate_limit".into(), json!(limit));
    }
    if args.no_rate_limit {
        changes.insert("rate_limit".into(), Value::Null);
    }
    let changes = nonempty(changes)?;
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    print_json(&manage::update_tenant(db.as_ref(), &args.tenant, &changes, Some(&actor)).await)
}

async fn set_disabled(args: &TenantWrite, disabled: bool) -> Outcome {
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    print_json(
        &manage::set_tenant_disabled(db.as_ref(), &args.tenant, disabled, Some(&actor)).await,
    )
}

/// `changes` as a JSON object, or a usage error when it names nothing.
pub fn nonempty(changes: Map<String, Value>) -> Result<Value, Failure> {
    if changes.is_empty() {
        return Err(Failure::usage(
            "nothing to change: give at least one field (see --help)",
        ));
    }
    Ok(Value::Object(changes))
}

/// Key-value pairs as a JSON object of strings.
pub fn pairs(pairs: &[(String, String)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// `key=value` (the value may hold `=`; the key may not be empty).
pub fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.to_owned()))
        }
        _ => Err("expected KEY=VALUE".to_owned()),
    }
}

/// A refusal or failure of a management call: its message, exit 1.
pub fn failed(error: ManageError) -> Failure {
    Failure::Failed(anyhow::Error::new(error))
}

/// Prints what a management call returned as one pretty JSON document, or
/// fails with its error.
pub fn print_json<T: Serialize>(result: &Result<T, ManageError>) -> Outcome {
    match result {
        Ok(value) => print_value(value),
        Err(e) => Err(Failure::failed(e)),
    }
}

/// Prints `value` as one pretty JSON document.
pub fn print_value<T: Serialize>(value: &T) -> Outcome {
    let text = serde_json::to_string_pretty(value).or_failed("cannot print the result")?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_read_as_seconds() {
        assert_eq!(parse_expiry("3600"), Ok(3600));
        assert_eq!(parse_expiry("90m"), Ok(5400));
        assert_eq!(parse_expiry("7d"), Ok(604_800));
        assert!(parse_expiry("1w").is_err());
        assert!(parse_expiry("h").is_err());
    }

    #[test]
    fn pairs_split_at_the_first_equals_sign() {
        assert_eq!(parse_pair("a=b=c"), Ok(("a".to_owned(), "b=c".to_owned())));
        assert_eq!(parse_pair("k="), Ok(("k".to_owned(), String::new())));
        assert!(parse_pair("=v").is_err());
        assert!(parse_pair("novalue").is_err());
    }
}
