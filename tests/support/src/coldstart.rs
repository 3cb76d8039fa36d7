//! Cold start of each function's binary against a hello-world
//! `lambda_runtime` binary built the same way: the time from exec to the
//! first `GET /2018-06-01/runtime/invocation/next` on the Runtime API
//! emulator ([`crate::runtime_api`]), median of N starts interleaved (so the
//! machine's load falls on every binary alike), with the environment the
//! template gives (Data API, SQS, S3; endpoints never called at init); and
//! the binaries' sizes. Used by `tools/dev deploy coldstart` (the
//! `coldstart` example) and `hookbox-bench --coldstart`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::runtime_api::{Function, Init};
use crate::smoke;

/// The binaries measured; the first is the baseline.
pub const FUNCTIONS: [&str; 6] = [
    "hello",
    "authorizer",
    "ingest",
    "processor",
    "relay",
    "migrate",
];

/// What function `name` gets at start, as the template gives it.
pub fn env(name: &str) -> Vec<(&'static str, String)> {
    let mut env = smoke::aws_env();
    let unused = "http://127.0.0.1:9".to_string(); // discard: nothing is sent at init
    if !matches!(name, "hello" | "migrate" | "processor") {
        env.push((
            "HOOKBOX_CONFIG",
            smoke::events_dir()
                .join("partners-test.json")
                .display()
                .to_string(),
        ));
    }
    if !matches!(name, "hello" | "authorizer") {
        env.extend([
            ("HOOKBOX_DB", "data-api".to_string()),
            (
                "DB_CLUSTER_ARN",
                "arn:aws:rds:us-east-1:123456789012:cluster:hookbox".into(),
            ),
            (
                "DB_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf".into(),
            ),
            ("DB_NAME", "hookbox".into()),
            ("AWS_ENDPOINT_URL_RDS_DATA", unused.clone()),
        ]);
    }
    if matches!(name, "ingest" | "processor" | "relay") {
        env.extend([
            ("HOOKBOX_QUEUE_URL", format!("{unused}/123456789012/inbox")),
            ("AWS_ENDPOINT_URL_SQS", unused.clone()),
            ("HOOKBOX_BLOB_BUCKET", "hookbox-blobs".into()),
            ("AWS_ENDPOINT_URL_S3", unused),
        ]);
    }
    env
}

/// `DIR/<name>/bootstrap` (cargo-lambda's layout), else `DIR/<name>`
/// (cargo's own, e.g. target/release).
pub fn binary(dir: &Path, name: &str) -> PathBuf {
    let lambda = dir.join(name).join("bootstrap");
    if lambda.is_file() {
        lambda
    } else {
        dir.join(name)
    }
}

/// One binary's figures.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Its name (one of [`FUNCTIONS`]).
    pub name: &'static str,
    /// Its size, bytes (`None`: unreadable).
    pub size: Option<u64>,
    /// Median time to its first `/runtime/invocation/next`.
    pub median: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Starts every binary of `dir` `runs` times, interleaved; the figures in
/// [`FUNCTIONS`] order. `Err` names a binary that is missing or did not
/// start.
pub async fn measure(dir: &Path, runs: usize) -> Result<Vec<Measured>, String> {
    for name in FUNCTIONS {
        let b = binary(dir, name);
        if !b.is_file() {
            return Err(format!(
                "{} is missing: build the functions first",
                b.display()
            ));
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); FUNCTIONS.len()];
    for _ in 0..runs.max(1) {
        for (i, name) in FUNCTIONS.iter().enumerate() {
            let mut f = Function::spawn(&binary(dir, name), name, &env(name)).await;
            let init = f.init(Duration::from_secs(10)).await;
            f.kill().await;
            match init {
                Init::Ready(d) => times[i].push(d),
                other => return Err(format!("{name} did not start: {other:?}")),
            }
        }
    }
    Ok(FUNCTIONS
        .iter()
        .zip(times)
        .map(|(name, t)| Measured {
            name,
            size: std::fs::metadata(binary(dir, name)).ok().map(|m| m.len()),
            median: median(t),
        })
        .collect())
}
