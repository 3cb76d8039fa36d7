//! `hookbox stats`: rows per status in the inbox and the outbox, and the age
//! of the oldest row still on its way (the lag the alarms watch).

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Args;
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::inbox::InboxStatus;
use hookbox::outbox::OutboxStatus;
use hookbox::{inbox, outbox};
use serde::Serialize;

use crate::common::{DbArgs, OrFail as _, Outcome, age, connect};

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print JSON: `{"inbox":{…},"outbox":{…},"oldest_pending_seconds":{…}}`.
    #[arg(long)]
    json: bool,
    /// The current time in Unix seconds, for the ages (default: the system clock).
    #[arg(long, value_name = "UNIX_SECONDS")]
    now: Option<i64>,
    #[command(flatten)]
    db: DbArgs,
}

/// The JSON document (field order is the output order).
#[derive(Debug, Serialize)]
struct Stats {
    inbox: InboxCounts,
    outbox: OutboxCounts,
    oldest_pending_seconds: Oldest,
}

#[derive(Debug, Serialize)]
struct InboxCounts {
    pending: i64,
    processing: i64,
    deferred: i64,
    processed: i64,
    quarantined: i64,
    dead: i64,
}

#[derive(Debug, Serialize)]
struct OutboxCounts {
    pending: i64,
    delivered: i64,
    dead: i64,
}

#[derive(Debug, Serialize)]
struct Oldest {
    /// Age of the oldest pending, processing or deferred inbox row.
    inbox: Option<i64>,
    /// Age of the oldest pending outbox row.
    outbox: Option<i64>,
}

fn seconds_since(oldest: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<i64> {
    oldest.map(|at| (now - at).num_seconds().max(0))
}

pub async fn run(args: &StatsArgs) -> Outcome {
    let now = match args.now {
        Some(secs) => DateTime::<Utc>::from_timestamp(secs, 0).ok_or_else(|| {
            crate::common::Failure::usage(format!("--now {secs} is out of range"))
        })?,
        None => SystemClock.now(),
    };
    let db = connect(&args.db).await?;
    let db = db.as_ref();
    let inbox_counts = inbox::counts_by_status(db)
        .await
        .or_failed("cannot count inbox rows")?;
    let outbox_counts = outbox::counts_by_status(db)
        .await
        .or_failed("cannot count outbox rows")?;
    let inbox_oldest = inbox::oldest_active_received_at(db)
        .await
        .or_failed("cannot read the oldest pending inbox row")?;
    let outbox_oldest = outbox::oldest_pending_created_at(db)
        .await
        .or_failed("cannot read the oldest pending outbox row")?;
    let i = |s: InboxStatus| inbox_counts.get(&s).copied().unwrap_or(0);
    let o = |s: OutboxStatus| outbox_counts.get(&s).copied().unwrap_or(0);
    let stats = Stats {
        inbox: InboxCounts {
            pending: i(InboxStatus::Pending),
            processing: i(InboxStatus::Processing),
            deferred: i(InboxStatus::Deferred),
            processed: i(InboxStatus::Processed),
            quarantined: i(InboxStatus::Quarantined),
            dead: i(InboxStatus::Dead),
        },
        outbox: OutboxCounts {
            pending: o(OutboxStatus::Pending),
            delivered: o(OutboxStatus::Delivered),
            dead: o(OutboxStatus::Dead),
        },
        oldest_pending_seconds: Oldest {
            inbox: seconds_since(inbox_oldest, now),
            outbox: seconds_since(outbox_oldest, now),
        },
    };
    if args.json {
        let text = serde_json::to_string(&stats).or_failed("cannot write JSON")?;
        println!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let oldest = |s: Option<i64>| match s {
        Some(s) => format!("{} ({s} s)", age(s)),
        None => "none".to_owned(),
    };
    println!("inbox");
    for status in InboxStatus::ALL {
        println!("  {:<13}{:>10}", status.as_str(), i(status));
    }
    println!(
        "  oldest pending: {}",
        oldest(stats.oldest_pending_seconds.inbox)
    );
    println!("outbox");
    for status in OutboxStatus::ALL {
        println!("  {:<13}{:>10}", status.as_str(), o(status));
    }
    println!(
        "  oldest pending: {}",
        oldest(stats.oldest_pending_seconds.outbox)
    );
    Ok(ExitCode::SUCCESS)
}
