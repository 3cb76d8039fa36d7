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
//!
//! [`ClockedMoto`] is a private server on the test's clock: its SQS time
//! (delays, visibility timeouts, and so receive counts and redrives) moves
//! only when the test says, so an outage of hours runs in moments.

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
        start(None).unwrap_or_else(|e| panic!("{e}"))
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
    match SHARED.get_or_init(|| start(None).map_err(|e| e.to_string())) {
        Ok(moto) => moto.endpoint.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// Runs moto.server with `moto.core.utils.utcnow` (the time of every SQS
/// delay and visibility timeout) moved forward by the seconds written in the
/// file named by `HOOKBOX_MOTO_CLOCK`, read at each call.
const CLOCKED_SERVER: &str = r#"
import datetime, os, sys
import moto.core.utils as utils
_path = os.environ["HOOKBOX_MOTO_CLOCK"]
_real = utils.utcnow
def _utcnow():
    try:
        with open(_path) as f:
            offset = float(f.read() or "0")
    except (OSError, ValueError):
        offset = 0.0
    return _real() + datetime.timedelta(seconds=offset)
utils.utcnow = _utcnow
from moto.server import main
main(sys.argv[1:])
"#;

/// A private moto server whose clock the test moves with
/// [`ClockedMoto::advance`] (it also runs in real time, which a test of
/// seconds does not notice). Stopped when dropped.
pub struct ClockedMoto {
    moto: Moto,
    offset_file: std::path::PathBuf,
    offset: Mutex<Duration>,
    _dir: tempfile::TempDir,
}

impl fmt::Debug for ClockedMoto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClockedMoto")
            .field("endpoint", &self.moto.endpoint)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl ClockedMoto {
    /// Starts one (about a second).
    ///
    /// # Panics
    /// When moto is not installed or does not come up.
    pub fn start() -> ClockedMoto {
        let dir = tempfile::Builder::new()
            .prefix("hookbox-moto-clock-")
            .tempdir()
            .unwrap_or_else(|e| panic!("a directory for moto's clock: {e}"));
        let offset_file = dir.path().join("offset");
        std::fs::write(&offset_file, "0").unwrap_or_else(|e| panic!("moto's clock file: {e}"));
        let moto = start(Some(&offset_file)).unwrap_or_else(|e| panic!("{e}"));
        ClockedMoto {
            moto,
            offset_file,
            offset: Mutex::new(Duration::ZERO),
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        self.moto.endpoint()
    }

    /// Moves moto's clock forward by `by`.
    ///
    /// # Panics
    /// When the clock file cannot be written.
    pub fn advance(&self, by: Duration) {
        let mut offset = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *offset += by;
        // written whole, then renamed: moto never reads half a number
        let next = self.offset_file.with_extension("next");
        std::fs::write(&next, format!("{}", offset.as_secs_f64()))
            .and_then(|()| std::fs::rename(&next, &self.offset_file))
            .unwrap_or_else(|e| panic!("moving moto's clock: {e}"));
    }

    /// Stops the server now (the queue is down; its queues are gone).
    pub fn kill(&self) {
        self.moto.kill();
    }
}

fn start(clock_file: Option<&std::path::Path>) -> Result<Moto, HarnessError> {
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
        let mut command = Command::new(&python);
        match clock_file {
            None => command.args(["-m", "moto.server"]),
            Some(file) => command
                .args(["-c", CLOCKED_SERVER])
                .env("HOOKBOX_MOTO_CLOCK", file),
        };
        let mut child = command
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clocked_moto_keeps_delays_and_visibility_on_the_tests_clock() {
        let moto = ClockedMoto::start();
        let queue = create_queue(moto.endpoint(), &unique_name("clocked"), 30, 2).await;
        let sqs = client(moto.endpoint());
        let receive = |url: String| {
            let sqs = sqs.clone();
            async move {
                sqs.receive_message()
                    .queue_url(url)
                    .max_number_of_messages(10)
                    .message_system_attribute_names(
                        aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                    )
                    .send()
                    .await
                    .expect("receive")
                    .messages()
                    .to_vec()
            }
        };
        sqs.send_message()
            .queue_url(&queue.url)
            .message_body("later")
            .delay_seconds(900)
            .send()
            .await
            .expect("send");
        assert!(receive(queue.url.clone()).await.is_empty(), "delayed");
        moto.advance(Duration::from_secs(899));
        assert!(receive(queue.url.clone()).await.is_empty(), "still delayed");
        moto.advance(Duration::from_secs(2));
        let got = receive(queue.url.clone()).await;
        assert_eq!(got.len(), 1, "due on the test's clock");
        // not deleted: invisible for 30 s of the test's clock, then back,
        // and after maxReceiveCount receives in the DLQ
        assert!(receive(queue.url.clone()).await.is_empty());
        moto.advance(Duration::from_secs(31));
        assert_eq!(receive(queue.url.clone()).await.len(), 1, "second receive");
        moto.advance(Duration::from_secs(31));
        assert!(
            receive(queue.url.clone()).await.is_empty(),
            "moved on the third"
        );
        let dead = receive(queue.dlq_url.clone()).await;
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].body(), Some("later"));
    }
}
