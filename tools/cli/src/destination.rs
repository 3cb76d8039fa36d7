//! `hookbox destination list|status|disable|enable`: the outbound
//! endpoints' health (migration 13) for operators.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::outbox::destinations::{self, DestinationHealth};

use crate::common::{DbArgs, FAILED, OrFail as _, Outcome, connect, print_table, shorten, time};

#[derive(Debug, Subcommand)]
pub enum DestinationCommand {
    /// Every destination the relay has synced: state (healthy, open,
    /// probing, disabled), failures in a row, pending rows.
    List(ListArgs),
    /// One destination in full. Exit 1 when it is not synced.
    Status(NameArgs),
    /// Stop delivering to it (its rows wait, attempts untouched) until
    /// `enable`. Exit 1 when it is not synced.
    Disable(DisableArgs),
    /// Deliver to it again, breaker closed: its waiting rows go out from the
    /// relay's next claim. Exit 1 when it is not synced.
    Enable(NameArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct NameArgs {
    /// The destination's name (as configured).
    #[arg(value_name = "NAME")]
    name: String,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct DisableArgs {
    /// The destination's name (as configured).
    #[arg(value_name = "NAME")]
    name: String,
    /// Why (shown by `status` and `list`).
    #[arg(long, value_name = "TEXT", default_value = "disabled by an operator")]
    reason: String,
    #[command(flatten)]
    db: DbArgs,
}

pub async fn run(command: &DestinationCommand) -> Outcome {
    match command {
        DestinationCommand::List(args) => list(args).await,
        DestinationCommand::Status(args) => status(args).await,
        DestinationCommand::Disable(args) => disable(args).await,
        DestinationCommand::Enable(args) => enable(args).await,
    }
}

fn opt_time(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "-".into(), time)
}

async fn list(args: &ListArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let all = destinations::health(db.as_ref())
        .await
        .or_failed("cannot read the destinations")?;
    let now = SystemClock.now();
    let table: Vec<Vec<String>> = all
        .iter()
        .map(|h| {
            vec![
                h.name.clone(),
                h.state(now).to_string(),
                h.consecutive_failures.to_string(),
                h.pending.to_string(),
                opt_time(h.failing_since),
                h.disabled_reason
                    .as_deref()
                    .map_or_else(|| "-".into(), |r| shorten(r, 60)),
            ]
        })
        .collect();
    print_table(
        &[
            "DESTINATION",
            "STATE",
            "FAILURES",
            "PENDING",
            "FAILING_SINCE",
            "DISABLED_REASON",
        ],
        &table,
    );
    let healthy = destinations::healthy_endpoints(db.as_ref())
        .await
        .or_failed("cannot count the healthy endpoints")?;
    if healthy > 0 {
        println!(
            "({} destinations; {healthy} healthy tenants' endpoints not listed: \
             `hookbox destination status ep_…` shows one)",
            all.len()
        );
    } else {
        println!("({} destinations)", all.len());
    }
    Ok(ExitCode::SUCCESS)
}

async fn find(
    args: &DbArgs,
    name: &str,
) -> Result<Option<DestinationHealth>, crate::common::Failure> {
    let db = connect(args).await?;
    destinations::health_of(db.as_ref(), name)
        .await
        .or_failed("cannot read the destination")
}

fn not_synced(name: &str) -> Outcome {
    eprintln!(
        "no destination {name:?} is synced (the relay copies the configured destinations at \
         the start of each run: check the configuration's destinations)"
    );
    Ok(ExitCode::from(FAILED))
}

async fn status(args: &NameArgs) -> Outcome {
    let Some(h) = find(&args.db, &args.name).await? else {
        return not_synced(&args.name);
    };
    let now = SystemClock.now();
    println!("destination:          {}", h.name);
    println!("state:                {}", h.state(now));
    println!("failures in a row:    {}", h.consecutive_failures);
    println!("failing since:        {}", opt_time(h.failing_since));
    println!("breaker open until:   {}", opt_time(h.open_until));
    println!("disabled at:          {}", opt_time(h.disabled_at));
    println!(
        "disabled because:     {}",
        h.disabled_reason.as_deref().unwrap_or("-")
    );
    println!("pending rows:         {}", h.pending);
    Ok(ExitCode::SUCCESS)
}

async fn disable(args: &DisableArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let done = destinations::disable(db.as_ref(), &args.name, &args.reason, SystemClock.now())
        .await
        .or_failed("cannot disable the destination")?;
    if !done {
        return not_synced(&args.name);
    }
    println!(
        "disabled {}: its rows wait until `hookbox destination enable {}`",
        args.name, args.name
    );
    Ok(ExitCode::SUCCESS)
}

async fn enable(args: &NameArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let done = destinations::enable(db.as_ref(), &args.name)
        .await
        .or_failed("cannot enable the destination")?;
    if !done {
        return not_synced(&args.name);
    }
    println!(
        "enabled {}: its waiting rows are delivered from the relay's next claim",
        args.name
    );
    Ok(ExitCode::SUCCESS)
}
