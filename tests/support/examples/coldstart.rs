//! Cold start of each function's `bootstrap` against a hello-world
//! `lambda_runtime` binary built the same way: the time from exec to the
//! first `GET /2018-06-01/runtime/invocation/next` on the testkit's Runtime
//! API emulator, median over N starts (interleaved, so the machine's load
//! falls on every binary alike), with the configuration the template gives
//! (Data API, SQS, S3; endpoints that are never called at init).
//!
//! ```sh
//! tools/dev deploy coldstart        # cargo lambda build --release, then this
//! cargo run -p hookbox-testkit --example coldstart -- target/lambda 25
//! cargo run -p hookbox-testkit --example coldstart -- target/release 25   # cargo's layout
//! ```

use std::path::PathBuf;
use std::time::Duration;

use hookbox_testkit::runtime_api::{Function, Init};
use hookbox_testkit::smoke;

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
    let partners = smoke::events_dir().join("partners-test.json");
    let unused = "http://127.0.0.1:9".to_string(); // discard: nothing is sent at init
    if name != "hello" && name != "migrate" && name != "processor" {
        env.push(("HOOKBOX_CONFIG", partners.display().to_string()));
    }
    if name != "hello" && name != "authorizer" {
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
            ("AWS_ENDPOINT_URL_S3", unused.clone()),
        ]);
    }
    env
}

/// `DIR/<name>/bootstrap` (cargo-lambda's layout), else `DIR/<name>`
/// (cargo's own, e.g. target/release).
fn binary(dir: &std::path::Path, name: &str) -> PathBuf {
    let lambda = dir.join(name).join("bootstrap");
    if lambda.is_file() {
        lambda
    } else {
        dir.join(name)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/lambda".into()));
    let runs: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(25);
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); FUNCTIONS.len()];
    for _ in 0..runs {
        for (i, name) in FUNCTIONS.iter().enumerate() {
            let mut f = Function::spawn(&binary(&dir, name), name, &env(name)).await;
            match f.init(Duration::from_secs(10)).await {
                Init::Ready(d) => times[i].push(d),
                other => panic!("{name} did not start: {other:?}"),
            }
            f.kill().await;
        }
    }
    let hello = median(times[0].clone());
    println!("cold start: exec → first /runtime/invocation/next, median of {runs} starts");
    println!("| binary | size (MB) | median (ms) | × hello |");
    println!("| --- | ---: | ---: | ---: |");
    for (i, name) in FUNCTIONS.iter().enumerate() {
        let size = std::fs::metadata(binary(&dir, name)).map_or(0, |m| m.len());
        let m = median(times[i].clone());
        println!(
            "| {name} | {:.1} | {:.2} | {:.2} |",
            size as f64 / 1e6,
            m.as_secs_f64() * 1e3,
            m.as_secs_f64() / hello.as_secs_f64()
        );
    }
}
