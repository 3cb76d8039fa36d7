//! `hookbox event-type put|get|list|delete`: the event type catalog
//! (docs/portal.md, "The event catalog"), through the same SQL functions
//! as the SQL face (`hookbox::tenants::catalog`). JSON out; a refusal names
//! the field (exit 1).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use hookbox::tenants::catalog;
use serde_json::{Map, Value, json};

use crate::common::{DbArgs, Failure, OrFail as _, Outcome, connect};
use crate::tenant::{Writer, print_json};

#[derive(Debug, Subcommand)]
pub enum EventTypeCommand {
    /// Create or replace an event type; prints it.
    Put(PutArgs),
    /// One event type.
    Get(NameArgs),
    /// A page of the catalog by name (`iterator`: pass it as --after).
    List(ListArgs),
    /// Delete an event type from the catalog (deliveries never depend on it).
    Delete(DeleteArgs),
}

#[derive(Debug, Args)]
pub struct PutArgs {
    /// Its name (letters, digits, `.`, `-`, `_`).
    #[arg(value_name = "NAME")]
    name: String,
    /// What it means (shown to your customers in the portal).
    #[arg(long, value_name = "TEXT")]
    description: String,
    /// A file holding its JSON Schema (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// An example payload (JSON): what the portal's "send an example" sends.
    #[arg(long, value_name = "JSON")]
    example: Option<String>,
    /// Marked deprecated in the portal.
    #[arg(long)]
    deprecated: bool,
    /// Archived: hidden, not enforced.
    #[arg(long)]
    archived: bool,
    /// Publishing refuses payloads the schema does not accept.
    #[arg(long)]
    enforce: bool,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct NameArgs {
    /// The event type's name.
    #[arg(value_name = "NAME")]
    name: String,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The event type's name.
    #[arg(value_name = "NAME")]
    name: String,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Start after this name (the previous page's `iterator`).
    #[arg(long, value_name = "NAME")]
    after: Option<String>,
    /// Most types on the page (1 to 250).
    #[arg(long, value_name = "N", default_value_t = 50)]
    limit: u32,
    /// Archived types too.
    #[arg(long)]
    archived: bool,
    #[command(flatten)]
    db: DbArgs,
}

fn json_arg(what: &str, text: &str) -> Result<Value, Failure> {
    serde_json::from_str(text).map_err(|e| Failure::usage(format!("{what} is not JSON: {e}")))
}

async fn put(args: &PutArgs) -> Outcome {
    let mut spec = Map::new();
    spec.insert("name".into(), json!(args.name));
    spec.insert("description".into(), json!(args.description));
    if let Some(path) = &args.schema {
        let text = if path.as_os_str() == "-" {
            std::io::read_to_string(std::io::stdin()).or_failed("cannot read the schema")?
        } else {
            std::fs::read_to_string(path)
                .or_failed(format!("cannot read the schema {}", path.display()))?
        };
        spec.insert("schema".into(), json_arg("--schema's file", &text)?);
    }
    if let Some(example) = &args.example {
        spec.insert("example".into(), json_arg("--example", example)?);
    }
    spec.insert("deprecated".into(), json!(args.deprecated));
    spec.insert("archived".into(), json!(args.archived));
    spec.insert("enforce_schema".into(), json!(args.enforce));
    let db = connect(&args.writer.db).await?;
    let actor = args.writer.actor();
    print_json(&catalog::put_event_type(db.as_ref(), &Value::Object(spec), Some(&actor)).await)
}

pub async fn run(command: &EventTypeCommand) -> Outcome {
    match command {
        EventTypeCommand::Put(args) => put(args).await,
        EventTypeCommand::Get(args) => {
            let db = connect(&args.db).await?;
            print_json(&catalog::get_event_type(db.as_ref(), &args.name).await)
        }
        EventTypeCommand::List(args) => {
            let db = connect(&args.db).await?;
            print_json(
                &catalog::list_event_types(
                    db.as_ref(),
                    args.after.as_deref(),
                    args.limit,
                    args.archived,
                )
                .await,
            )
        }
        EventTypeCommand::Delete(args) => {
            let db = connect(&args.writer.db).await?;
            let actor = args.writer.actor();
            print_json(&catalog::delete_event_type(db.as_ref(), &args.name, Some(&actor)).await)
        }
    }
}
