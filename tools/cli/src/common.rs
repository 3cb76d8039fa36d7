//! What the operator commands share: exit codes, the database and queue
//! connections (configured like the functions), and text output helpers.

use std::fmt::Display;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::anyhow;
use chrono::{DateTime, SecondsFormat, Utc};
use clap::Args;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::{ConnectError, Database, connect_from_env};

/// Exit code of a usage or configuration error (the same one clap uses).
pub const USAGE: u8 = 2;
/// Exit code of an operation that ran and failed, or left work undone.
pub const FAILED: u8 = 1;
/// Exit code when standard output closes under the command (its reader,
/// such as `head`, stopped): what a shell reports for a Unix tool killed by
/// SIGPIPE (128 + 13). The command stops at that line: what it committed
/// stays (a replay's pages, each one statement), nothing more is done.
pub const CLOSED_STDOUT: u8 = 141;

/// Makes a closed standard output stop the command quietly with
/// [`CLOSED_STDOUT`] (Rust ignores SIGPIPE, so `println!` panics instead:
/// "failed printing to stdout: Broken pipe"). Every other panic is reported
/// as before.
pub fn stop_when_stdout_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(CLOSED_STDOUT));
        }
        report(info);
    }));
}

/// Why a command stopped, which decides its exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments or configuration: exit 2.
    Usage(anyhow::Error),
    /// The operation ran and failed (database, queue, HTTP): exit 1.
    Failed(anyhow::Error),
}

impl Failure {
    /// A usage error with this message.
    pub fn usage(message: impl Display) -> Self {
        Failure::Usage(anyhow!("{message}"))
    }

    /// A failure with this message.
    pub fn failed(message: impl Display) -> Self {
        Failure::Failed(anyhow!("{message}"))
    }

    /// The exit code, after printing the error on stderr.
    pub fn report(self) -> ExitCode {
        let (code, error) = match self {
            Failure::Usage(e) => (USAGE, e),
            Failure::Failed(e) => (FAILED, e),
        };
        eprintln!("error: {error:#}");
        ExitCode::from(code)
    }
}

/// The result of a command.
pub type Outcome = Result<ExitCode, Failure>;

/// Classifies an error with a message saying what was being done.
pub trait OrFail<T> {
    /// A usage or configuration error (exit 2).
    fn or_usage(self, context: impl Display) -> Result<T, Failure>;
    /// A failed operation (exit 1).
    fn or_failed(self, context: impl Display) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> OrFail<T> for Result<T, E> {
    fn or_usage(self, context: impl Display) -> Result<T, Failure> {
        self.map_err(|e| Failure::Usage(e.into().context(context.to_string())))
    }

    fn or_failed(self, context: impl Display) -> Result<T, Failure> {
        self.map_err(|e| Failure::Failed(e.into().context(context.to_string())))
    }
}

/// Runs an async command on a runtime of its own.
pub fn block_on(command: impl Future<Output = Outcome>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_failed("cannot start the async runtime")?;
    runtime.block_on(command)
}

/// Which database: the same configuration as the functions.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// A PostgreSQL URL (`postgres://user:password@host:port/db`). Default:
    /// DATABASE_URL, or the RDS Data API with HOOKBOX_DB=data-api,
    /// DB_CLUSTER_ARN, DB_SECRET_ARN and DB_NAME. Prefer the variable: a flag
    /// is visible to other users of the machine.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

/// Connects as the functions do (`hookbox::store::connect_from_env`), the
/// flag taking precedence over the environment. Nothing configured is a
/// usage error (exit 2) naming the variables. The pool is lazy: an
/// unreachable server fails the first statement (exit 1). No message ever
/// carries the URL's password.
pub async fn connect(args: &DbArgs) -> Result<Arc<dyn Database>, Failure> {
    let flag = args.database_url.clone();
    let env = move |name: &str| match (name, &flag) {
        ("DATABASE_URL", Some(url)) => Some(url.clone()),
        ("HOOKBOX_DB", Some(_)) => Some("postgres".to_owned()),
        _ => std::env::var(name).ok(),
    };
    connect_from_env(env).await.map_err(|e| match e {
        ConnectError::NotConfigured => Failure::usage(format!("{e}, or pass --database-url")),
        other => Failure::Usage(anyhow::Error::new(other).context("cannot use the database")),
    })
}

/// Where bodies over the inline threshold are: the functions' blob store.
#[derive(Debug, Clone, Args)]
pub struct BlobArgs {
    /// The S3 bucket of large bodies (AWS from the environment;
    /// AWS_ENDPOINT_URL_S3 is honoured).
    #[arg(long, value_name = "BUCKET", env = "HOOKBOX_BLOB_BUCKET")]
    pub blob_bucket: Option<String>,
    /// A directory holding them instead (the local stack's --blob-dir).
    #[arg(
        long,
        value_name = "DIR",
        env = "HOOKBOX_BLOB_DIR",
        conflicts_with = "blob_bucket"
    )]
    pub blob_dir: Option<std::path::PathBuf>,
}

impl BlobArgs {
    /// The blob store, when one is configured.
    pub async fn store(&self) -> Option<Arc<dyn hookbox::blob::BlobStore>> {
        let bucket = self.blob_bucket.clone();
        let dir = self.blob_dir.as_ref().map(|d| d.display().to_string());
        let env = move |name: &str| match name {
            hookbox::blob::BUCKET_VAR => bucket.clone(),
            hookbox::blob::DIR_VAR => dir.clone(),
            _ => std::env::var(name).ok(),
        };
        hookbox::blob::from_env(env).await.ok()
    }
}

/// [`connect`], or `None` when no database is configured at all (for
/// commands where the database only adds information).
pub async fn connect_if_configured(args: &DbArgs) -> Result<Option<Arc<dyn Database>>, Failure> {
    let configured = args.database_url.is_some()
        || ["DATABASE_URL", "HOOKBOX_DB"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()));
    if configured {
        connect(args).await.map(Some)
    } else {
        Ok(None)
    }
}

/// Which queue: the processor's inbox queue.
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
    /// The inbox queue URL.
    #[arg(long, value_name = "URL", env = "HOOKBOX_QUEUE_URL")]
    pub queue_url: Option<String>,
    #[command(flatten)]
    pub sqs: SqsArgs,
}

/// How to reach SQS.
#[derive(Debug, Clone, Args)]
pub struct SqsArgs {
    /// An SQS emulator (moto, the local stack) at this URL, with dummy
    /// credentials. Default: AWS from the environment (AWS_ENDPOINT_URL_SQS
    /// is honoured).
    #[arg(long, value_name = "URL")]
    pub sqs_endpoint: Option<String>,
}

impl SqsArgs {
    /// An SQS client: the emulator's, or AWS's from the environment.
    pub async fn client(&self) -> aws_sdk_sqs::Client {
        match &self.sqs_endpoint {
            Some(endpoint) => SqsQueue::local_client(endpoint),
            None => {
                let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
                    .load()
                    .await;
                aws_sdk_sqs::Client::new(&shared)
            }
        }
    }
}

impl QueueArgs {
    /// The queue the replayed messages go to.
    pub async fn queue(&self) -> Result<SqsQueue, Failure> {
        let url = self
            .queue_url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| {
                Failure::usage("no queue configured: set HOOKBOX_QUEUE_URL or pass --queue-url")
            })?;
        Ok(match &self.sqs.sqs_endpoint {
            Some(endpoint) => SqsQueue::new(SqsQueue::local_client(endpoint), url),
            None => SqsQueue::from_aws_env(url).await,
        })
    }
}

/// A time for humans and scripts alike: RFC 3339, UTC, seconds.
pub fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// An optional time, `-` when absent.
pub fn opt_time(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "-".to_owned(), time)
}

/// One line of at most `max` characters (newlines and tabs become spaces;
/// a cut is marked with `…`).
pub fn shorten(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A duration in seconds, for humans: `1h 02m 03s`.
pub fn age(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m {s:02}s"),
        _ => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// Prints rows under headers, columns aligned (the last one unpadded).
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let pad = widths.get(i).copied().unwrap_or(0);
                out.push_str(&format!("{cell:<pad$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_flattens_and_cuts_on_characters() {
        assert_eq!(shorten("a\nb", 10), "a b");
        assert_eq!(shorten("ünïcödé text", 5), "ünïc…");
        assert_eq!(shorten("exact", 5), "exact");
    }

    #[test]
    fn age_reads_well() {
        assert_eq!(age(5), "5s");
        assert_eq!(age(65), "1m 05s");
        assert_eq!(age(3723), "1h 02m 03s");
    }
}
