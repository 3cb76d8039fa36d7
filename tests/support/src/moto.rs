//! An SQS emulator for tests: the `moto` server (`python -m moto.server`, with
//! the interpreter of [`crate::python`]),
//! started once per test process on a free port of 127.0.0.1 (or a private
//! one a test may stop), plus helpers to create queues with a dead-letter
//! queue.
//!
//! moto speaks the SQS JSON protocol the Rust SDK uses, including
//! RedrivePolicy (a message moves to the DLQ on the receive after
//! maxReceiveCount, as in AWS). When moto is missing the tests fail with the
//! install command; they never skip.

use std::fmt;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::HarnessError;

/// A running moto server. Stopped when dropped (and when the process
/// exits, however it exits: a watchdog holds the other end of a pipe).
pub struct Moto {
    endpoint: String,
    child: Mutex<Child>,
    _watchdog: Mutex<(Child, ChildStdin)>,
}

impl fmt::Debug for Moto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Moto")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Moto {
    /// Starts a private moto server (about a second).
    ///
    /// # Panics
    /// When moto is not installed or does not come up.
    pub fn start() -> Moto {
        start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Stops the server now (for tests of "the queue is down").
    pub fn kill(&self) {
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

static SHARED: OnceLock<Result<Moto, String>> = OnceLock::new();

/// Endpoint of the moto server shared by this test process.
///
/// # Panics
/// When moto is not installed or does not come up.
pub fn endpoint() -> String {
    match SHARED.get_or_init(|| start().map_err(|e| e.to_string())) {
        Ok(moto) => moto.endpoint.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn start() -> Result<Moto, HarnessError> {
    let python = crate::python::python();
    let installed = Command::new(&python)
        .args(["-c", "import moto.server, flask"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !installed {
        return Err(HarnessError::Command {
            what: "finding the moto SQS emulator".into(),
            detail: format!(
                "{} cannot import moto.server: {}",
                python.display(),
                crate::python::INSTALL_HINT
            ),
        });
    }
    let mut last = String::new();
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| HarnessError::Command {
                what: "finding a free port".into(),
                detail: e.to_string(),
            })?;
        let mut child = Command::new(&python)
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| HarnessError::Command {
                what: "starting moto".into(),
                detail: e.to_string(),
            })?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut up = false;
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                up = true;
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                last = format!("moto exited with {status}");
                break;
            }
            std::thread::yield_now();
        }
        if up {
            // moto logs every request on stderr: drain it, or the pipe fills
            // after a few hundred requests and moto stops answering
            if let Some(mut stderr) = child.stderr.take() {
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            }
            let watchdog = watchdog(child.id())?;
            return Ok(Moto {
                endpoint: format!("http://{addr}"),
                child: Mutex::new(child),
                _watchdog: Mutex::new(watchdog),
            });
        }
        let _ = child.kill();
        let _ = child.wait();
        if last.is_empty() {
            last = "moto did not listen within 30 s".into();
        }
    }
    Err(HarnessError::Command {
        what: "starting moto".into(),
        detail: last,
    })
}

/// Kills `pid` when our process goes away (its stdin closes).
fn watchdog(pid: u32) -> Result<(Child, ChildStdin), HarnessError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("cat >/dev/null; kill {pid} 2>/dev/null"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| HarnessError::Command {
            what: "starting the moto watchdog".into(),
            detail: e.to_string(),
        })?;
    let mut stdin = child.stdin.take().ok_or_else(|| HarnessError::Command {
        what: "starting the moto watchdog".into(),
        detail: "no stdin pipe".into(),
    })?;
    stdin.flush().map_err(|e| HarnessError::Command {
        what: "starting the moto watchdog".into(),
        detail: e.to_string(),
    })?;
    Ok((child, stdin))
}

/// An SQS client for the emulator at `endpoint` (dummy credentials).
pub fn client(endpoint: &str) -> Client {
    Client::from_conf(
        aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .build(),
    )
}

/// A queue and its dead-letter queue.
#[derive(Debug, Clone)]
pub struct TestQueue {
    /// The queue URL.
    pub url: String,
    /// The dead-letter queue URL.
    pub dlq_url: String,
}

/// Creates `<name>` with a DLQ `<name>-dlq` after `max_receive_count`
/// receives, and the given visibility timeout.
///
/// # Panics
/// When moto refuses.
pub async fn create_queue(
    endpoint: &str,
    name: &str,
    visibility_timeout_s: u32,
    max_receive_count: u32,
) -> TestQueue {
    let sqs = client(endpoint);
    let dlq_url = sqs
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await
        .expect("create DLQ")
        .queue_url()
        .expect("DLQ url")
        .to_string();
    let dlq_arn = sqs
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("DLQ attributes")
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .expect("DLQ arn");
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": max_receive_count.to_string(),
    });
    let url = sqs
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility_timeout_s.to_string(),
        )
        .send()
        .await
        .expect("create queue")
        .queue_url()
        .expect("queue url")
        .to_string();
    TestQueue { url, dlq_url }
}

/// A queue name unique in this process and across runs.
pub fn unique_name(prefix: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
