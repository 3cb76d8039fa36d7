//! `hookbox message create|get|list|attempts`, and what `hookbox endpoint
//! recover|attempts` run: a tenant's messages, their deliveries' attempts,
//! and sending an endpoint's failed deliveries again, through the same SQL
//! functions as the SQL face and the HTTP API
//! (`hookbox::tenants::messages`). Output is one pretty JSON document; a
//! refusal prints the function's message (exit 1).

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand, ValueEnum};
use hookbox::tenants::messages::{self, AttemptFilter, AttemptStatus, MessageFilter};
use serde_json::{Map, Value, json};

use crate::common::{DbArgs, Failure, Outcome, connect};
use crate::outbox::parse_time;
use crate::tenant::{Writer, print_json};

#[derive(Debug, Subcommand)]
pub enum MessageCommand {
    /// Publish a message to a tenant's matching endpoints (due now); prints
    /// it with `written` (deliveries). A repeated --event-id prints the
    /// first message (`duplicate`) and publishes nothing.
    Create(CreateArgs),
    /// One message, by id (`msg_…`) or event id, with its whole payload.
    Get(MessageRef),
    /// A page of a tenant's messages in id order, i.e. creation order
    /// (`iterator`: pass it as --after for the next page). Payloads over 8
    /// KiB are left out (`payload_omitted`; `get` shows them).
    List(ListArgs),
    /// A page of a message's delivery attempts, in time order.
    Attempts(MessageAttemptsArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Its event type (what endpoints' filter types match).
    #[arg(long, value_name = "TYPE")]
    event_type: String,
    /// The payload, as JSON.
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    payload: String,
    /// Your own id for it: publishing it again publishes nothing.
    #[arg(long, value_name = "ID")]
    event_id: Option<String>,
    /// A channel of it (repeat): an endpoint with channels gets it only on
    /// one of them.
    #[arg(long = "channel", value_name = "CHANNEL")]
    channels: Vec<String>,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct MessageRef {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The message's id (`msg_…`) or event id.
    #[arg(value_name = "MESSAGE")]
    message: String,
    #[command(flatten)]
    db: DbArgs,
}

/// Paging, shared by the lists.
#[derive(Debug, Args)]
pub struct Paging {
    /// Start after this (the previous page's `iterator`).
    #[arg(long, value_name = "ITERATOR")]
    after: Option<String>,
    /// Most items on the page (1 to 250; a page also stops before 48 KiB).
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: u32,
}

/// A time range: RFC 3339 (`2026-11-30T08:00:00Z`), a date (`2026-11-30`,
/// midnight UTC), or an age (`90m`, `6h`, `2d`).
#[derive(Debug, Args)]
pub struct Range {
    /// At or after this.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: Option<DateTime<Utc>>,
    /// Before this.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// Only messages of this event type (repeat).
    #[arg(long = "event-type", value_name = "TYPE")]
    event_types: Vec<String>,
    /// Only messages on this channel.
    #[arg(long, value_name = "CHANNEL")]
    channel: Option<String>,
    #[command(flatten)]
    range: Range,
    #[command(flatten)]
    paging: Paging,
    #[command(flatten)]
    db: DbArgs,
}

/// success or failed.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatusArg {
    /// A 2xx answer: it delivered.
    Success,
    /// Any other answer, or none.
    Failed,
}

/// Which attempts (made in the range, of the status).
#[derive(Debug, Args)]
pub struct AttemptArgs {
    /// Only attempts that succeeded, or failed.
    #[arg(long, value_enum, value_name = "STATUS")]
    status: Option<StatusArg>,
    #[command(flatten)]
    range: Range,
    #[command(flatten)]
    paging: Paging,
}

impl AttemptArgs {
    fn filter(&self) -> AttemptFilter {
        AttemptFilter {
            status: self.status.map(|s| match s {
                StatusArg::Success => AttemptStatus::Success,
                StatusArg::Failed => AttemptStatus::Failed,
            }),
            since: self.range.since,
            until: self.range.until,
        }
    }
}

#[derive(Debug, Args)]
pub struct MessageAttemptsArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The message's id (`msg_…`) or event id.
    #[arg(value_name = "MESSAGE")]
    message: String,
    /// Only attempts to this endpoint (id or uid).
    #[arg(long, value_name = "ENDPOINT")]
    endpoint: Option<String>,
    #[command(flatten)]
    attempts: AttemptArgs,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct EndpointAttemptsArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    #[command(flatten)]
    attempts: AttemptArgs,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    /// Deliveries created at or after this: RFC 3339
    /// (`2026-11-30T08:00:00Z`), a date (`2026-11-30`), or an age (`6h`).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: DateTime<Utc>,
    /// Deliveries created before this (same forms; default: now).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct DropHeldArgs {
    /// The tenant's id (`app_…`) or uid.
    #[arg(value_name = "TENANT")]
    tenant: String,
    /// The endpoint's id (`ep_…`) or uid.
    #[arg(value_name = "ENDPOINT")]
    endpoint: String,
    /// Only deliveries created before this: RFC 3339, a date, or an age
    /// (`24h`: those older than a day). Default: every one it waits with.
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
    #[command(flatten)]
    writer: Writer,
}

pub async fn run(command: &MessageCommand) -> Outcome {
    match command {
        MessageCommand::Create(args) => create(args).await,
        MessageCommand::Get(args) => {
            let db = connect(&args.db).await?;
            print_json(&messages::get_message(db.as_ref(), &args.tenant, &args.message).await)
        }
        MessageCommand::List(args) => {
            let filter = MessageFilter {
                event_types: (!args.event_types.is_empty()).then(|| args.event_types.clone()),
                channel: args.channel.clone(),
                since: args.range.since,
                until: args.range.until,
            };
            let db = connect(&args.db).await?;
            let page = messages::list_messages(
                db.as_ref(),
                &args.tenant,
                &filter,
                args.paging.after.as_deref(),
                args.paging.limit,
            )
            .await;
            print_json(&page)
        }
        MessageCommand::Attempts(args) => {
            let db = connect(&args.db).await?;
            let page = messages::list_attempts_by_message(
                db.as_ref(),
                &args.tenant,
                &args.message,
                args.endpoint.as_deref(),
                &args.attempts.filter(),
                args.attempts.paging.after.as_deref(),
                args.attempts.paging.limit,
            )
            .await;
            print_json(&page)
        }
    }
}

async fn create(args: &CreateArgs) -> Outcome {
    let payload: Value = serde_json::from_str(&args.payload)
        .map_err(|e| Failure::usage(format!("--payload is not JSON: {e}")))?;
    let mut spec = Map::new();
    spec.insert("event_type".into(), json!(args.event_type));
    spec.insert("payload".into(), payload);
    if let Some(id) = &args.event_id {
        spec.insert("event_id".into(), json!(id));
    }
    if !args.channels.is_empty() {
        spec.insert("channels".into(), json!(args.channels));
    }
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let created = messages::create_message(
        db.as_ref(),
        &args.tenant,
        &Value::Object(spec),
        Some(&actor),
    )
    .await;
    print_json(&created)
}

/// `hookbox endpoint attempts`.
pub async fn endpoint_attempts(args: &EndpointAttemptsArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let page = messages::list_attempts_by_endpoint(
        db.as_ref(),
        &args.tenant,
        &args.endpoint,
        &args.attempts.filter(),
        args.attempts.paging.after.as_deref(),
        args.attempts.paging.limit,
    )
    .await;
    print_json(&page)
}

/// `hookbox endpoint recover`.
pub async fn recover(args: &RecoverArgs) -> Outcome {
    if let Some(until) = args.until {
        if until <= args.since {
            return Err(Failure::usage(format!(
                "--until ({}) must come after --since ({})",
                crate::common::time(until),
                crate::common::time(args.since)
            )));
        }
    }
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let recovered = messages::recover_endpoint(
        db.as_ref(),
        &args.tenant,
        &args.endpoint,
        args.since,
        args.until,
        Some(&actor),
    )
    .await;
    print_json(&recovered)
}

pub async fn drop_held(args: &DropHeldArgs) -> Outcome {
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    let dropped = messages::drop_held(
        db.as_ref(),
        &args.tenant,
        &args.endpoint,
        args.until,
        Some(&actor),
    )
    .await;
    print_json(&dropped)
}
