//! `hookbox admin link|unlink`: operator links to the operator page
//! (`/admin`, docs/portal.md "The operator page"). Minting needs the
//! stack's database credentials (a `hookbox_management` member): whoever
//! can mint holds the stack's IAM rights to its Data API and secret.

use clap::{Args, Subcommand};
use hookbox::tenants::links;
use serde_json::{Value, json};

use crate::common::{DbArgs, Failure, OrFail as _, Outcome, connect};
use crate::tenant::{Writer, parse_expiry, print_value};

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Mint an operator link to the operator page; prints it with its key,
    /// shown this once.
    Link(LinkArgs),
    /// Revoke every operator link; prints how many.
    Unlink(UnlinkArgs),
}

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// How long it lives: seconds, or a number and s, m, h or d (5m to 1d;
    /// default 1h).
    #[arg(long, value_name = "DURATION", value_parser = parse_expiry)]
    expiry: Option<u32>,
    /// The stack's public URL (with its stage), to print the whole link.
    #[arg(long, value_name = "URL", env = "HOOKBOX_PORTAL_URL")]
    portal_url: Option<String>,
    #[command(flatten)]
    writer: Writer,
}

#[derive(Debug, Args)]
pub struct UnlinkArgs {
    #[command(flatten)]
    db: DbArgs,
}

pub async fn run(command: &AdminCommand) -> Outcome {
    match command {
        AdminCommand::Link(args) => {
            let db = connect(&args.writer.db).await?;
            let who = args.writer.actor().principal;
            let minted = links::mint_operator_link(
                db.as_ref(),
                args.expiry.unwrap_or(links::DEFAULT_OPERATOR_EXPIRY_SECS),
                &who,
            )
            .await
            .map_err(Failure::failed)?;
            let mut doc = serde_json::to_value(&minted.link).or_failed("cannot print the link")?;
            doc["key"] = json!(minted.key.expose());
            doc["url"] = match &args.portal_url {
                Some(base) => json!(format!(
                    "{}/admin/#key={}",
                    base.trim_end_matches('/'),
                    minted.key.expose()
                )),
                None => Value::Null,
            };
            print_value(&doc)
        }
        AdminCommand::Unlink(args) => {
            let db = connect(&args.db).await?;
            let revoked = links::revoke_operator_links(db.as_ref())
                .await
                .map_err(Failure::failed)?;
            print_value(&json!({ "revoked": revoked }))
        }
    }
}
