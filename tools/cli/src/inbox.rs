//! `hookbox inbox list|show|replay`: the inbound side for operators.

use std::process::ExitCode;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use clap::{Args, Subcommand, ValueEnum};
use hookbox::admin::{self, AttentionStatus, InboxCursor, InboxFilter};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::SystemClock;
use hookbox::inbox::{self, Body, InboxStatus};
use hookbox::processing::replay::{ReplayOutcome, replay};
use hookbox::store::Executor;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use uuid::Uuid;

use crate::common::{
    BlobArgs, DbArgs, Failure, OrFail as _, Outcome, QueueArgs, connect, opt_time, print_table,
    shorten, time,
};

/// `last_error` in listings is cut to this many characters.
const LIST_ERROR_CHARS: usize = 60;

#[derive(Debug, Subcommand)]
pub enum InboxCommand {
    /// List rows with one status, oldest first.
    List(ListArgs),
    /// Show every column of one row (the body as text when it is UTF-8,
    /// else base64).
    Show(ShowArgs),
    /// Put quarantined or dead rows back to pending and enqueue them again
    /// (by id, or every row with a status). Exit 1 when an id is missing or
    /// not replayable.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// pending, processing, deferred, processed, quarantined or dead.
    #[arg(long, value_name = "STATUS")]
    status: InboxStatus,
    /// Only this partner's rows.
    #[arg(long, value_name = "NAME")]
    partner: Option<String>,
    /// At most this many rows.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..))]
    limit: u32,
    #[command(flatten)]
    db: DbArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The inbox row id.
    id: Uuid,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    blobs: BlobArgs,
}

/// The statuses a replay takes rows from.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ReplayStatus {
    Quarantined,
    Dead,
}

impl From<ReplayStatus> for AttentionStatus {
    fn from(status: ReplayStatus) -> Self {
        match status {
            ReplayStatus::Quarantined => AttentionStatus::Quarantined,
            ReplayStatus::Dead => AttentionStatus::Dead,
        }
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["ids", "status"])))]
pub struct ReplayArgs {
    /// Inbox row ids.
    #[arg(value_name = "ID", conflicts_with = "status")]
    ids: Vec<Uuid>,
    /// Replay every row with this status (paged, in batches).
    #[arg(long, value_enum, value_name = "STATUS")]
    status: Option<ReplayStatus>,
    /// With --status: only this partner's rows.
    #[arg(long, value_name = "NAME", requires = "status")]
    partner: Option<String>,
    /// With --status: rows read per batch.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(i64).range(1..=hookbox::admin::MAX_PAGE))]
    batch_size: i64,
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    queue: QueueArgs,
}

pub async fn run(command: &InboxCommand) -> Outcome {
    match command {
        InboxCommand::List(args) => list(args).await,
        InboxCommand::Show(args) => show(args).await,
        InboxCommand::Replay(args) => replay_rows(args).await,
    }
}

async fn list(args: &ListArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let filter = InboxFilter {
        status: args.status,
        partner: args.partner.clone(),
    };
    let wanted = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let mut rows = Vec::new();
    let mut after = InboxCursor::start();
    // one more than asked, to say whether more rows match
    while rows.len() <= wanted {
        let missing = i64::try_from(wanted + 1 - rows.len()).unwrap_or(admin::MAX_PAGE);
        let page = admin::list_inbox(db.as_ref(), &filter, after, missing)
            .await
            .or_failed(format!("cannot list {} inbox rows", args.status))?;
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
                r.partner.clone(),
                r.event_id.clone(),
                r.event_type.clone().unwrap_or_else(|| "-".into()),
                r.status.to_string(),
                r.attempts.to_string(),
                time(r.received_at),
                r.last_error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| shorten(e, LIST_ERROR_CHARS)),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "PARTNER",
            "EVENT_ID",
            "EVENT_TYPE",
            "STATUS",
            "ATTEMPTS",
            "RECEIVED_AT",
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

/// The deliveries written for inbox row `id` (the trail), one line each.
async fn print_deliveries(
    db: &dyn hookbox::store::Executor,
    id: uuid::Uuid,
) -> Result<(), Failure> {
    let deliveries = hookbox::outbox::deliveries_of(db, id)
        .await
        .or_failed(format!("cannot read the deliveries of inbox row {id}"))?;
    println!("deliveries:         {}", deliveries.len());
    let table: Vec<Vec<String>> = deliveries
        .iter()
        .map(|d| {
            vec![
                d.id.to_string(),
                d.destination.clone(),
                if d.archived {
                    format!("{} (archived)", d.status)
                } else {
                    d.status.to_string()
                },
                d.attempts.to_string(),
                d.last_status_code
                    .map_or_else(|| "-".into(), |c| c.to_string()),
                opt_time(d.processed_at),
                d.last_error
                    .as_deref()
                    .map_or_else(|| "-".into(), |e| shorten(e, 60)),
            ]
        })
        .collect();
    if !table.is_empty() {
        print_table(
            &[
                "DELIVERY",
                "DESTINATION",
                "STATUS",
                "ATTEMPTS",
                "LAST",
                "FINISHED",
                "ERROR",
            ],
            &table,
        );
    }
    Ok(())
}

async fn show(args: &ShowArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let row = inbox::get(db.as_ref(), args.id)
        .await
        .or_failed(format!("cannot read inbox row {}", args.id))?
        .ok_or_else(|| Failure::failed(format!("no inbox row {}", args.id)))?;
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let fields = [
        ("id", row.id.to_string()),
        ("partner", row.partner.clone()),
        ("event_id", row.event_id.clone()),
        ("event_id_derived", row.event_id_derived.to_string()),
        ("event_type", text(&row.event_type)),
        ("ordering_key", text(&row.ordering_key)),
        ("status", row.status.to_string()),
        ("attempts", row.attempts.to_string()),
        ("signature_verified", row.signature_verified.to_string()),
        ("received_at", time(row.received_at)),
        ("enqueued_at", opt_time(row.enqueued_at)),
        ("next_attempt_at", opt_time(row.next_attempt_at)),
        ("locked_until", opt_time(row.locked_until)),
        ("deferred_since", opt_time(row.deferred_since)),
        ("processed_at", opt_time(row.processed_at)),
        ("last_error", text(&row.last_error)),
    ];
    for (name, value) in fields {
        println!("{:<19} {value}", format!("{name}:"));
    }
    print_deliveries(db.as_ref(), row.id).await?;
    let headers = serde_json::to_string_pretty(&row.headers).or_failed("cannot show headers")?;
    println!("headers:\n{headers}");
    if let Some(r) = row.body.blob() {
        println!(
            "body_ref:           {} ({} bytes, sha256 {})",
            r.key,
            r.size,
            r.sha256_hex()
        );
    }
    let bytes = match (&row.body, args.blobs.store().await) {
        (Body::Blob(_), None) => {
            println!(
                "body: in the blob store; pass --blob-bucket or --blob-dir (or set \
                 HOOKBOX_BLOB_BUCKET / HOOKBOX_BLOB_DIR) to show it"
            );
            return Ok(ExitCode::SUCCESS);
        }
        (body, store) => {
            // an inline body never touches the store: any will do
            let store = store.unwrap_or_else(|| Arc::new(MemoryBlobStore::new()));
            hookbox::inbox::body::read(db.as_ref(), store.as_ref(), row.id, body)
                .await
                .or_failed(format!("cannot read the body of inbox row {}", row.id))?
        }
    };
    match std::str::from_utf8(&bytes) {
        Ok(body) => println!("body (utf-8, {} bytes):\n{body}", bytes.len()),
        Err(_) => println!(
            "body (base64, {} bytes, not UTF-8):\n{}",
            bytes.len(),
            BASE64.encode(&bytes)
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// What a replay run did, id by id.
#[derive(Debug, Default)]
struct Summary {
    enqueued: Vec<Uuid>,
    pending_for_sweeper: Vec<(Uuid, String)>,
    not_replayable: Vec<(Uuid, InboxStatus)>,
    missing: Vec<Uuid>,
}

impl Summary {
    fn record(&mut self, outcome: ReplayOutcome) {
        match outcome {
            ReplayOutcome::Enqueued { id, .. } => self.enqueued.push(id),
            ReplayOutcome::PendingForSweeper { id, error, .. } => {
                self.pending_for_sweeper.push((id, error.to_string()));
            }
            ReplayOutcome::NotReplayable { id, status } => self.not_replayable.push((id, status)),
            ReplayOutcome::Missing { id } => self.missing.push(id),
        }
    }

    fn print(&self) {
        println!("enqueued: {}", self.enqueued.len());
        println!("pending for sweeper: {}", self.pending_for_sweeper.len());
        for (id, error) in &self.pending_for_sweeper {
            println!("  {id}  (queue: {error})");
        }
        println!("not replayable: {}", self.not_replayable.len());
        for (id, status) in &self.not_replayable {
            println!("  {id}  ({status}: only quarantined and dead rows are replayed)");
        }
        println!("missing: {}", self.missing.len());
        for id in &self.missing {
            println!("  {id}");
        }
        if !self.enqueued.is_empty() || !self.pending_for_sweeper.is_empty() {
            println!(
                "what consumers see: each replayed event is processed again; one of a partner \
                 with routes is forwarded then, under NEW delivery ids, one per matching route. \
                 Only quarantined and dead events are replayed, and those were never forwarded, \
                 so no consumer has seen them (docs/forwarding.md, \"Replays\")."
            );
        }
    }

    fn exit_code(&self) -> ExitCode {
        if self.missing.is_empty() && self.not_replayable.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(crate::common::FAILED)
        }
    }
}

pub(crate) fn progress(len: Option<u64>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    let template = if len.is_some() {
        "{spinner} replaying [{bar:30}] {pos}/{len} {msg}"
    } else {
        "{spinner} replaying {pos} rows {msg}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

async fn replay_rows(args: &ReplayArgs) -> Outcome {
    let db = connect(&args.db).await?;
    let queue = args.queue.queue().await?;
    let db = db.as_ref();
    let mut summary = Summary::default();
    let result = match args.status {
        None => replay_ids(db, &queue, &args.ids, &mut summary).await,
        Some(status) => {
            replay_status(
                db,
                &queue,
                status.into(),
                args.partner.as_deref(),
                args.batch_size,
                &mut summary,
            )
            .await
        }
    };
    summary.print();
    result?;
    Ok(summary.exit_code())
}

async fn replay_one(
    db: &dyn Executor,
    queue: &hookbox::queue::sqs::SqsQueue,
    id: Uuid,
    summary: &mut Summary,
) -> Result<(), Failure> {
    let outcome = replay(db, queue, &SystemClock, id)
        .await
        .or_failed(format!("cannot replay inbox row {id}"))?;
    summary.record(outcome);
    Ok(())
}

async fn replay_ids(
    db: &dyn Executor,
    queue: &hookbox::queue::sqs::SqsQueue,
    ids: &[Uuid],
    summary: &mut Summary,
) -> Result<(), Failure> {
    let bar = progress(Some(ids.len() as u64));
    for id in ids {
        let done = replay_one(db, queue, *id, summary).await;
        bar.inc(1);
        if let Err(e) = done {
            bar.abandon();
            return Err(e);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// Every `status` row (of `partner`), one bounded page of ids at a time:
/// never more than `batch` ids in memory.
async fn replay_status(
    db: &dyn Executor,
    queue: &hookbox::queue::sqs::SqsQueue,
    status: AttentionStatus,
    partner: Option<&str>,
    batch: i64,
    summary: &mut Summary,
) -> Result<(), Failure> {
    // the count is an upper bound for the bar (exact without --partner)
    let total = match partner {
        Some(_) => None,
        None => inbox::counts_by_status(db)
            .await
            .or_failed("cannot count inbox rows")?
            .get(&status.status())
            .and_then(|n| u64::try_from(*n).ok()),
    };
    let bar = progress(total);
    let mut after = InboxCursor::start();
    loop {
        let page = match admin::inbox_attention_ids(db, status, partner, after, batch).await {
            Ok(page) => page,
            Err(e) => {
                bar.abandon();
                return Err(e).or_failed(format!("cannot list {} inbox rows", status.status()));
            }
        };
        let Some(last) = page.last() else { break };
        after = *last;
        for cursor in &page {
            let done = replay_one(db, queue, cursor.id, summary).await;
            bar.inc(1);
            if let Err(e) = done {
                bar.abandon();
                return Err(e);
            }
        }
    }
    bar.finish_and_clear();
    Ok(())
}
