//! `hookbox outbox list|show|attempts|retry|replay`: the outbound side for
//! operators.

use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand, ValueEnum};
use hookbox::admin::{self, OutboxCursor, OutboxFilter, OutboxRetry};
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::outbox::OutboxStatus;
use hookbox::outbox::destinations;
use hookbox::store::Executor;
use uuid::Uuid;

use crate::common::{
    DbArgs, FAILED, Failure, OrFail as _, Outcome, connect, opt_time, print_table, shorten, time,
};

/// `last_error` in listings is cut to this many characters.
const LIST_ERROR_CHARS: usize = 60;

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// List rows, oldest first.
    List(ListArgs),
    /// One row: its fields and, when it was written for an inbound webhook,
    /// that webhook (inbox row, partner, event id, received, trace). Exit 1
    /// when there is no such row (delivered rows are purged by retention).
    Show(AttemptsArgs),
    /// Every logged attempt of one delivery, oldest first: when, status,
    /// latency, error, the start of the response. Exit 1 when none is
    /// logged (an unknown id, or attempts older than the log's retention).
    Attempts(AttemptsArgs),
    /// Put dead rows back to pending, due now, attempts reset to 0 (by id,
    /// or every dead row). Exit 1 when an id is missing or not dead.
    Retry(RetryArgs),
    /// Deliver one destination's rows created in a time range again (dead
    /// ones by default; `--status delivered,dead` for both), a page per
    /// statement, with progress: each is pending again, due now, attempts
    /// reset to 0, under the same webhook-id. Pending rows are left alone.
    /// Exit 1 when the destination has no rows and is not synced.
    Replay(ReplayArgs),
}

/// The statuses a replay takes rows from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReplayStatus {
    Delivered,
    Dead,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The destination (as configured).
    #[arg(long, value_name = "NAME")]
    destination: String,
    /// Rows created at or after this: RFC 3339 (`2026-11-30T08:00:00Z`), a
    /// date (`2026-11-30`, midnight UTC), or an age (`90m`, `6h`, `2d`).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    since: DateTime<Utc>,
    /// Rows created before this (same forms; default: now).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
    /// Statuses to replay, comma separated.
    #[arg(
        long,
        value_enum,
        value_name = "STATUS",
        value_delimiter = ',',
        default_value = "dead"
    )]
    status: Vec<ReplayStatus>,
    /// Rows looked at per statement, of every destination: the walk goes
    /// through the rows written over the range's span in `seq` order.
    #[arg(long, value_name = "N", default_value_t = 1_000,
          value_parser = clap::value_parser!(i64).range(1..=hookbox::admin::MAX_REPLAY_PAGE))]
    batch_size: i64,
    #[command(flatten)]
    db: DbArgs,
}

/// An age or a duration, `30s`, `90m`, `6h`, `2d`, in seconds (at most a
/// century); `None` when it is not one.
pub(crate) fn age_seconds(text: &str) -> Option<i64> {
    let unit = text.chars().last()?;
    let per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        _ => return None,
    };
    text[..text.len() - unit.len_utf8()]
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(per))
        .filter(|s| (0..=36_500 * 86_400).contains(s))
}

/// A `--since`/`--until` value: RFC 3339, a date (midnight UTC), or an age
/// (`30s`, `90m`, `6h`, `2d`) before now.
pub(crate) fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.to_utc());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    match age_seconds(text) {
        Some(seconds) => Ok(SystemClock.now() - chrono::Duration::seconds(seconds)),
        None => Err(format!(
            "{text:?} is not a time: use RFC 3339 (2026-11-30T08:00:00Z), a date \
             (2026-11-30) or an age (90m, 6h, 2d)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// pending, delivered or dead (default: every status).
    #[arg(long, value_name = "STATUS")]
    status: Option<OutboxStatus>,
    /// Only rows for this destination.
    #[arg(long, value_name = "NAME")]
    destination: Option<String>,
    /// At most this many rows.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..))]
    limit: u32,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct AttemptsArgs {
    /// The outbox row id (its deliveries' `webhook-id`).
    #[arg(value_name = "ID")]
    id: Uuid,
    #[command(flatten)]
    db: DbArgs,
}

/// The statuses a retry takes rows from.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum RetryStatus {
    Dead,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["ids", "status"])))]
pub struct RetryArgs {
    /// Outbox row ids.
    #[arg(value_name = "ID", conflicts_with = "status")]
    ids: Vec<Uuid>,
    /// Retry every row with this status (only `dead`), in batches.
    #[arg(long, value_enum, value_name = "STATUS")]
    status: Option<RetryStatus>,
    /// With --status: only rows for this destination.
    #[arg(long, value_name = "NAME", requires = "status")]
    destination: Option<String>,
    /// Rows handled per statement.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(i64).range(1..=hookbox::admin::MAX_PAGE))]
    batch_size: i64,
    #[command(flatten)]
    db: DbArgs,
}

pub async fn run(command: &OutboxCommand) -> Outcome {
    match command {
        OutboxCommand::List(args) => list(args).await,
        OutboxCommand::Show(args) => show(args).await,
        OutboxCommand::Attempts(args) => attempts(args).await,
        OutboxCommand::Retry(args) => retry(args).await,
        OutboxCommand::Replay(args) => replay(args).await,
    }
}

async fn replay(args: &ReplayArgs) -> Outcome {
    let now = SystemClock.now();
    let until = args.until.unwrap_or(now);
    if until <= args.since {
        return Err(Failure::usage(format!(
            "--until ({}) must come after --since ({})",
            time(until),
            time(args.since)
        )));
    }
    let db = connect(&args.db).await?;
    let db = db.as_ref();
    let range = admin::ReplayRange {
        destination: args.destination.clone(),
        since: args.since,
        until: Some(until),
        statuses: args
            .status
            .iter()
            .map(|s| match s {
                ReplayStatus::Delivered => OutboxStatus::Delivered,
                ReplayStatus::Dead => OutboxStatus::Dead,
            })
            .collect(),
    };
    let plan = admin::plan_replay(db, &range)
        .await
        .or_failed("cannot count the rows to replay")?;
    let total = plan.replayable;
    if total == 0 {
        let known = admin::destination_has_rows(db, &args.destination)
            .await
            .or_failed("cannot look for the destination's rows")?
            || destinations::health_of(db, &args.destination)
                .await
                .or_failed("cannot read the destination")?
                .is_some();
        if !known && plan.walk.is_none() {
            eprintln!(
                "destination {:?} has no rows in that range, none pending or dead, and is not \
                 synced (a typo? `hookbox destination list` shows the synced ones)",
                args.destination
            );
            return Ok(ExitCode::from(FAILED));
        }
    }
    let bar = crate::inbox::progress(Some(total));
    let mut walk = plan.walk;
    let mut replayed = 0;
    while let Some(at) = walk {
        let page = admin::replay_page(db, &range, at, args.batch_size, SystemClock.now())
            .await
            .or_failed("cannot replay outbox rows")?;
        replayed += page.replayed;
        bar.inc(page.replayed);
        walk = page.next;
    }
    bar.finish_and_clear();
    println!(
        "replayed: {replayed} rows of {:?} created in [{}, {}) (statuses: {})",
        args.destination,
        time(args.since),
        time(until),
        range
            .statuses
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if replayed > 0 {
        println!("{REPLAY_SEEN_AGAIN}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What a consumer sees of `outbox replay` and `outbox retry`
/// (docs/forwarding.md, "Replays").
pub(crate) const REPLAY_SEEN_AGAIN: &str = "what consumers see: each row is delivered again \
     under its own delivery id (the envelope's `id`, the `webhook-id` header), the one its \
     first delivery carried: a consumer that deduplicates on it skips the rows it already \
     processed. To have one processed again, delete its id from that consumer's deduplication \
     store first (docs/forwarding.md, \"Replays\").";

async fn list(args: &ListArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let filter = OutboxFilter {
        status: args.status,
        destination: args.destination.clone(),
    };
    let wanted = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let mut rows = Vec::new();
    let mut after = OutboxCursor::start();
    // one more than asked, to say whether more rows match
    while rows.len() <= wanted {
        let missing = i64::try_from(wanted + 1 - rows.len()).unwrap_or(admin::MAX_PAGE);
        let page = admin::list_outbox(db.as_ref(), &filter, after, missing)
            .await
            .or_failed("cannot list outbox rows")?;
        let Some(last) = page.last() else { break };
        after = last.cursor();
        rows.extend(page);
    }
    let more = rows.len() > wanted;
    rows.truncate(wanted);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                r.destination.clone(),
                r.event_type.clone(),
                format!("{}/{}", r.aggregate_type, r.aggregate_id),
                r.status.to_string(),
                r.attempts.to_string(),
                time(r.created_at),
                if r.status == OutboxStatus::Pending {
                    time(r.next_attempt_at)
                } else {
                    "-".into()
                },
                r.last_status_code
                    .map_or_else(|| "-".into(), |c| c.to_string()),
                r.last_error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| shorten(e, LIST_ERROR_CHARS)),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "DESTINATION",
            "EVENT_TYPE",
            "AGGREGATE",
            "STATUS",
            "ATTEMPTS",
            "CREATED_AT",
            "NEXT_ATTEMPT_AT",
            "LAST_STATUS",
            "LAST_ERROR",
        ],
        &table,
    );
    if more {
        println!("(first {wanted} rows; more match: raise --limit)");
    } else {
        println!("({} rows)", rows.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// Response excerpts in the table are cut to this many characters.
const RESPONSE_CHARS: usize = 80;

async fn show(args: &AttemptsArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let row = hookbox::outbox::get(db.as_ref(), args.id)
        .await
        .or_failed(format!("cannot read outbox row {}", args.id))?
        .ok_or_else(|| {
            Failure::failed(format!(
                "no outbox row {} (an unknown id, or purged by retention)",
                args.id
            ))
        })?;
    let text = |v: Option<&str>| v.map_or_else(|| "-".to_owned(), str::to_owned);
    let origin = row.origin.as_ref();
    let fields = [
        ("id", row.id.to_string()),
        ("destination", row.destination.clone()),
        ("event_type", row.event_type.clone()),
        (
            "aggregate",
            format!("{} {}", row.aggregate_type, row.aggregate_id),
        ),
        ("status", row.status.to_string()),
        ("attempts", row.attempts.to_string()),
        ("created_at", time(row.created_at)),
        ("next_attempt_at", time(row.next_attempt_at)),
        ("processed_at", opt_time(row.processed_at)),
        (
            "last_status_code",
            row.last_status_code
                .map_or_else(|| "-".into(), |c| c.to_string()),
        ),
        ("last_error", text(row.last_error.as_deref())),
        (
            "inbound",
            origin.map_or_else(
                || "- (published by business code, not for an inbound webhook)".into(),
                |o| {
                    format!(
                        "{}/{}",
                        text(o.partner.as_deref()),
                        text(o.event_id.as_deref())
                    )
                },
            ),
        ),
        (
            "inbox_id",
            origin.map_or_else(|| "-".into(), |o| o.inbox_id.to_string()),
        ),
        ("received_at", opt_time(origin.and_then(|o| o.received_at))),
        ("trace_id", text(origin.and_then(|o| o.trace_id.as_deref()))),
    ];
    for (name, value) in fields {
        println!("{:<17} {value}", format!("{name}:"));
    }
    Ok(ExitCode::SUCCESS)
}

async fn attempts(args: &AttemptsArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let attempts = hookbox::outbox::attempts::of(db.as_ref(), args.id)
        .await
        .or_failed("cannot read the attempt log")?;
    if attempts.is_empty() {
        eprintln!(
            "no attempt of outbox row {} is logged (unknown id, not attempted yet, or older than \
             HOOKBOX_ATTEMPT_RETENTION_DAYS)",
            args.id
        );
        return Ok(ExitCode::from(FAILED));
    }
    let table: Vec<Vec<String>> = attempts
        .iter()
        .map(|a| {
            vec![
                a.attempt.to_string(),
                time(a.attempted_at),
                a.destination.clone(),
                a.status_code.map_or_else(|| "-".into(), |c| c.to_string()),
                a.latency_ms
                    .map_or_else(|| "-".into(), |ms| format!("{ms} ms")),
                a.error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| shorten(e, LIST_ERROR_CHARS)),
                a.response_excerpt
                    .as_deref()
                    .map_or_else(|| "-".into(), |r| shorten(r, RESPONSE_CHARS)),
            ]
        })
        .collect();
    print_table(
        &[
            "ATTEMPT",
            "AT",
            "DESTINATION",
            "STATUS",
            "LATENCY",
            "ERROR",
            "RESPONSE",
        ],
        &table,
    );
    println!("({} attempts of {})", attempts.len(), args.id);
    Ok(ExitCode::SUCCESS)
}

/// What a retry run did, id by id.
#[derive(Debug, Default)]
struct Summary {
    retried: Vec<Uuid>,
    not_retryable: Vec<(Uuid, OutboxStatus)>,
    missing: Vec<Uuid>,
}

impl Summary {
    fn record(&mut self, outcomes: Vec<OutboxRetry>) {
        for outcome in outcomes {
            match outcome {
                OutboxRetry::Retried { id } => self.retried.push(id),
                OutboxRetry::NotRetryable { id, status } => self.not_retryable.push((id, status)),
                OutboxRetry::Missing { id } => self.missing.push(id),
            }
        }
    }

    fn print(&self) {
        println!("retried: {}", self.retried.len());
        println!("not retryable: {}", self.not_retryable.len());
        for (id, status) in &self.not_retryable {
            println!("  {id}  ({status}: only dead rows are retried)");
        }
        println!("missing: {}", self.missing.len());
        for id in &self.missing {
            println!("  {id}");
        }
    }
}

async fn retry(args: &RetryArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let mut summary = Summary::default();
    let result = match args.status {
        None => retry_ids(db.as_ref(), &args.ids, args.batch_size, &mut summary).await,
        Some(RetryStatus::Dead) => {
            retry_all_dead(
                db.as_ref(),
                args.destination.as_deref(),
                args.batch_size,
                &mut summary,
            )
            .await
        }
    };
    summary.print();
    result?;
    if !summary.retried.is_empty() {
        println!("{REPLAY_SEEN_AGAIN}");
    }
    Ok(
        if summary.missing.is_empty() && summary.not_retryable.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(FAILED)
        },
    )
}

async fn retry_ids(
    db: &dyn Executor,
    ids: &[Uuid],
    batch: i64,
    summary: &mut Summary,
) -> Result<(), Failure> {
    let batch = usize::try_from(batch).unwrap_or(1).max(1);
    for chunk in ids.chunks(batch) {
        let outcomes = admin::retry_dead_outbox(db, chunk, SystemClock.now())
            .await
            .or_failed("cannot retry outbox rows")?;
        summary.record(outcomes);
    }
    Ok(())
}

/// Every dead row (for `destination`), one bounded page of ids at a time.
async fn retry_all_dead(
    db: &dyn Executor,
    destination: Option<&str>,
    batch: i64,
    summary: &mut Summary,
) -> Result<(), Failure> {
    let mut after = OutboxCursor::start();
    loop {
        let page = admin::outbox_dead_ids(db, destination, after, batch)
            .await
            .or_failed("cannot list dead outbox rows")?;
        let Some((_, last)) = page.last() else {
            return Ok(());
        };
        after = *last;
        let ids: Vec<Uuid> = page.iter().map(|(id, _)| *id).collect();
        let outcomes = admin::retry_dead_outbox(db, &ids, SystemClock.now())
            .await
            .or_failed("cannot retry outbox rows")?;
        summary.record(outcomes);
    }
}
