//! Helpers for the end-to-end tests: a local stack on a fresh database,
//! signed sends over real HTTP, and waiting for the asynchronous parts
//! (processor, relay) to get somewhere.

use std::future::Future;
use std::time::{Duration, Instant};

use hookbox::params;
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox::store::{Executor, Statement, fetch_one};
use hookbox_local::{DEMO_SECRET, LocalStack, Options};
use hookbox_testkit::TestDb;

/// How long anything asynchronous may take before a test gives up.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A stack on `db` (port 0, a 1 s processor backoff so deferrals retry
/// quickly), with `tweak` applied to the options.
///
/// # Panics
/// When the stack cannot start.
pub async fn stack(db: &TestDb, tweak: impl FnOnce(&mut Options)) -> LocalStack {
    let mut options = Options {
        port: 0,
        database_url: Some(db.url().to_string()),
        retry_schedule: vec![Duration::from_secs(1)],
        ..Options::default()
    };
    tweak(&mut options);
    LocalStack::start(options)
        .await
        .expect("local stack starts")
}

/// A webhook from the demo partner, signed now.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// `webhook-id` (the event id).
    pub id: String,
    /// The JSON body.
    pub body: String,
}

impl Webhook {
    /// A demo event with a fresh id.
    pub fn demo(body: serde_json::Value) -> Self {
        Self {
            id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
            body: body.to_string(),
        }
    }

    /// POSTs it to the stack's `/webhooks/demo`; returns the status and the
    /// JSON answer.
    ///
    /// # Panics
    /// When the request fails.
    pub async fn send(&self, stack: &LocalStack) -> (u16, serde_json::Value) {
        let signed = sign_standard_webhooks(
            &self.id,
            chrono::Utc::now(),
            self.body.as_bytes(),
            &[Secret::new(DEMO_SECRET)],
        )
        .expect("sign");
        let response = reqwest::Client::new()
            .post(format!("{}/webhooks/demo", stack.url()))
            .header("content-type", "application/json")
            .header("webhook-id", &signed.id)
            .header("webhook-timestamp", &signed.timestamp)
            .header("webhook-signature", &signed.signature)
            .body(self.body.clone())
            .send()
            .await
            .expect("POST to the local stack");
        let status = response.status().as_u16();
        let json = response.json().await.unwrap_or(serde_json::Value::Null);
        (status, json)
    }
}

/// Polls `check` (every 50 ms) until it returns `Some`, for at most
/// [`PATIENCE`].
///
/// # Panics
/// When it never does, naming `what`.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "gave up after {PATIENCE:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One number from `sql` (a query returning a column `n`).
///
/// # Panics
/// On a database error.
pub async fn number(db: &dyn Executor, sql: &'static str) -> i64 {
    fetch_one(db, &Statement::new("e2e.number", sql), &params! {})
        .await
        .expect("query")
        .i64("n")
        .expect("n")
}

/// One text from `sql` with one `:p` parameter (a query returning `t`), or
/// `None` when no row.
///
/// # Panics
/// On a database error.
pub async fn text(db: &dyn Executor, sql: &'static str, p: &str) -> Option<String> {
    hookbox::store::fetch_optional(db, &Statement::new("e2e.text", sql), &params! { "p" => p })
        .await
        .expect("query")
        .map(|row| row.text("t").expect("t"))
}

/// The workspace's root directory.
pub fn workspace_root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Runs `node tests/e2e/browser/<script> <args>` (off the async runtime)
/// and answers its last JSON line, after asserting it exited 0 with
/// `{"ok": true, …}` (the drivers' contract, tests/e2e/browser/README.md).
pub async fn browser_driver(script: &str, args: Vec<String>) -> serde_json::Value {
    let path = workspace_root().join("tests/e2e/browser").join(script);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .arg(path)
            .args(&args)
            .output()
    })
    .await
    .expect("join")
    .expect("run node (Node.js >= 20: `tools/dev setup test` installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(stdout.lines().rfind(|l| !l.is_empty()).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{script} prints a JSON line ({e}): {stdout}"));
    assert_eq!(report["ok"], true, "{report}");
    report
}

/// Runs `node tests/e2e/browser/<runner>` (a page's checks against the mock
/// of its API) and asserts it passed them all, printing `summary`.
pub fn assert_mock_checks_pass(runner: &str, summary: &str) {
    let script = workspace_root().join("tests/e2e/browser").join(runner);
    let out = std::process::Command::new("node")
        .arg(&script)
        .output()
        .expect("run node (Node.js >= 20: `tools/dev setup test` installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(summary),
        "{} failed ({}):\n{stdout}{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
