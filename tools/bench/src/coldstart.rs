//! Cold start of each function's binary against a hello-world
//! `lambda_runtime` binary built the same way: the time from exec to the
//! first `GET /2018-06-01/runtime/invocation/next` on the testkit's Runtime
//! API emulator, median of N starts interleaved (so the machine's load falls
//! on every binary alike), with the environment the template gives (Data
//! API, SQS, S3; endpoints never called at init); and the binaries' sizes.
//! The method of tests/support/examples/coldstart.rs (`tools/dev deploy
//! coldstart`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookbox_testkit::runtime_api::{Function, Init};
use hookbox_testkit::smoke;

use crate::report::{Figure, Goal};

pub const SECTION: &str = "Cold start and binary size";

const FUNCTIONS: [&str; 6] = [
    "hello",
    "authorizer",
    "ingest",
    "processor",
    "relay",
    "migrate",
];

fn env(name: &str) -> Vec<(&'static str, String)> {
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

/// `DIR/<name>/bootstrap` (cargo-lambda's layout), else `DIR/<name>`.
fn binary(dir: &Path, name: &str) -> PathBuf {
    let lambda = dir.join(name).join("bootstrap");
    if lambda.is_file() {
        lambda
    } else {
        dir.join(name)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Every cold start and size figure of the binaries in `dir`.
pub async fn run(dir: &Path, runs: usize) -> anyhow::Result<(Vec<Figure>, String)> {
    for name in FUNCTIONS {
        let b = binary(dir, name);
        anyhow::ensure!(
            b.is_file(),
            "{} is missing: build the functions first (tools/dev deploy build, or cargo build \
             --profile bench-quick --bins -p hookbox-hello -p hookbox-authorizer -p hookbox-ingest \
             -p hookbox-processor -p hookbox-relay -p hookbox-migrate)",
            b.display()
        );
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); FUNCTIONS.len()];
    for _ in 0..runs.max(1) {
        for (i, name) in FUNCTIONS.iter().enumerate() {
            let mut f = Function::spawn(&binary(dir, name), name, &env(name)).await;
            match f.init(Duration::from_secs(10)).await {
                Init::Ready(d) => times[i].push(d),
                other => {
                    f.kill().await;
                    anyhow::bail!("{name} did not start: {other:?}");
                }
            }
            f.kill().await;
        }
    }
    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    let sizes: Vec<f64> = FUNCTIONS
        .iter()
        .map(|n| std::fs::metadata(binary(dir, n)).map_or(f64::NAN, |m| m.len() as f64 / 1e6))
        .collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut figures = Vec::new();
    for i in 1..FUNCTIONS.len() {
        figures.push(Figure::ratio(
            SECTION,
            format!("{} cold start", FUNCTIONS[i]),
            "ms",
            ms(medians[i]),
            ("hello-world", ms(medians[0])),
            Goal::None,
        ));
        figures.push(Figure::ratio(
            SECTION,
            format!("{} binary size", FUNCTIONS[i]),
            "MB",
            sizes[i],
            ("hello-world", sizes[0]),
            Goal::None,
        ));
    }
    let note = format!(
        "Binaries of `{}`; exec → first `/runtime/invocation/next` on the testkit's Runtime \
         API emulator, median of {runs} interleaved starts, with the template's environment \
         (no network call at init). Lambda adds its own sandbox start to both sides. The \
         release profile (fat LTO, what `tools/dev deploy build` ships) gives smaller binaries \
         than a bench-quick build.\n",
        dir.display()
    );
    Ok((figures, note))
}
