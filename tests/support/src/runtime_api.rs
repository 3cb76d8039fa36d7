//! A Lambda Runtime API emulator on 127.0.0.1, for running the real
//! `bootstrap` binaries in tests: it speaks the four calls a runtime makes
//! (`GET …/invocation/next`, `POST …/invocation/{id}/response`,
//! `POST …/invocation/{id}/error`, `POST …/init/error`), hands out the
//! events a test invokes one at a time, and records when the runtime first
//! asked for work (the end of its init: cold start is exec → that moment).
//!
//! [`Function::spawn`] starts a binary against a fresh emulator with a
//! clean environment (only the variables the test gives, plus what Lambda
//! itself sets), so nothing of the developer's machine leaks in.

use std::collections::HashMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, mpsc, oneshot};

/// What a function answered to one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `POST …/response`: the handler's result.
    Response(serde_json::Value),
    /// `POST …/error`: the runtime's error report (`errorType`, `errorMessage`).
    Error(serde_json::Value),
}

struct Invocation {
    id: String,
    payload: Vec<u8>,
    deadline_ms: u128,
}

struct Shared {
    /// Invocations not yet handed out; `next` takes them one at a time.
    queue: tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    first_next: OnceLock<Instant>,
    next_asked: Notify,
    init_error: Mutex<Option<(String, serde_json::Value)>>,
}

/// The emulator. Serves on the runtime of the test that started it.
#[derive(Clone)]
pub struct RuntimeApi {
    address: String,
    shared: Arc<Shared>,
    sender: mpsc::UnboundedSender<Invocation>,
}

impl std::fmt::Debug for RuntimeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeApi")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

const BASE: &str = "/2018-06-01/runtime";

impl RuntimeApi {
    /// Binds a free port of 127.0.0.1.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> RuntimeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for the Runtime API emulator");
        let address = listener.local_addr().expect("local address").to_string();
        let (sender, receiver) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            queue: tokio::sync::Mutex::new(receiver),
            waiting: Mutex::default(),
            first_next: OnceLock::new(),
            next_asked: Notify::new(),
            init_error: Mutex::default(),
        });
        let app = Router::new()
            .route(&format!("{BASE}/invocation/next"), get(next))
            .route(
                &format!("{BASE}/invocation/{{id}}/response"),
                post(response),
            )
            .route(&format!("{BASE}/invocation/{{id}}/error"), post(error))
            .route(&format!("{BASE}/init/error"), post(init_error))
            .with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        RuntimeApi {
            address,
            shared,
            sender,
        }
    }

    /// `127.0.0.1:PORT`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// When the runtime first asked for an invocation, once it has.
    pub async fn ready(&self) -> Instant {
        loop {
            let notified = self.shared.next_asked.notified();
            if let Some(at) = self.shared.first_next.get() {
                return *at;
            }
            notified.await;
        }
    }

    /// The init error the runtime reported, if any: the
    /// `Lambda-Runtime-Function-Error-Type` header and the JSON body.
    pub fn init_error(&self) -> Option<(String, serde_json::Value)> {
        lock(&self.shared.init_error).clone()
    }

    /// Invokes the function with `payload` (deadline `timeout` from now) and
    /// waits for its answer.
    ///
    /// # Panics
    /// When no answer comes within `timeout` plus 10 s.
    pub async fn invoke(&self, payload: &serde_json::Value, timeout: Duration) -> Outcome {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = format!(
            "req-{}",
            NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let deadline_ms = (SystemTime::now() + timeout)
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis();
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.waiting).insert(id.clone(), tx);
        self.sender
            .send(Invocation {
                id: id.clone(),
                payload: serde_json::to_vec(payload).expect("payload serialises"),
                deadline_ms,
            })
            .expect("the emulator is running");
        match tokio::time::timeout(timeout + Duration::from_secs(10), rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => panic!("invocation {id}: the emulator dropped it"),
            Err(_) => panic!("invocation {id}: no answer within {timeout:?} + 10 s"),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn next(State(shared): State<Arc<Shared>>) -> Response {
    let now = Instant::now();
    if shared.first_next.set(now).is_ok() {
        shared.next_asked.notify_waiters();
    }
    let Some(invocation) = shared.queue.lock().await.recv().await else {
        return StatusCode::GONE.into_response();
    };
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    set("lambda-runtime-aws-request-id", invocation.id);
    set(
        "lambda-runtime-deadline-ms",
        invocation.deadline_ms.to_string(),
    );
    set(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:us-east-1:123456789012:function:hookbox-test".into(),
    );
    set(
        "lambda-runtime-trace-id",
        "Root=1-00000000-000000000000000000000000;Sampled=0".into(),
    );
    set("content-type", "application/json".into());
    (StatusCode::OK, headers, invocation.payload).into_response()
}

fn finish(shared: &Shared, id: &str, outcome: Outcome) -> StatusCode {
    match lock(&shared.waiting).remove(id) {
        Some(tx) => {
            let _ = tx.send(outcome);
            StatusCode::ACCEPTED
        }
        None => StatusCode::BAD_REQUEST,
    }
}

fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(body).into_owned()))
}

async fn response(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    finish(&shared, &id, Outcome::Response(json(&body)))
}

async fn error(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    finish(&shared, &id, Outcome::Error(json(&body)))
}

async fn init_error(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let kind = headers
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    *lock(&shared.init_error) = Some((kind, json(&body)));
    StatusCode::ACCEPTED
}

/// How a function's init ended.
#[derive(Debug)]
pub enum Init {
    /// It asked for its first invocation, this long after exec.
    Ready(Duration),
    /// It exited before asking; what it reported to `/init/error`, if anything.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The init error it posted (header, body).
        init_error: Option<(String, serde_json::Value)>,
        /// What it wrote to stdout and stderr.
        output: String,
    },
}

/// The variables Lambda sets for function `name` on an OS-only runtime
/// (`provided.al2023`), as its documentation lists them ("Defined runtime
/// environment variables"), but the Runtime API's address, the region and
/// the credentials (the caller's `env` gives those). A function started
/// with these and its own variables sees what it sees on Lambda, not a
/// developer's shell (`AWS_CA_BUNDLE`, `SSL_CERT_FILE`, `RUST_LOG`, …).
pub fn lambda_env(name: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", "/usr/local/bin:/usr/bin/:/bin:/opt/bin".into()),
        (
            "LD_LIBRARY_PATH",
            "/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib".into(),
        ),
        ("LANG", "en_US.UTF-8".into()),
        ("TZ", ":UTC".into()),
        ("LAMBDA_TASK_ROOT", "/var/task".into()),
        ("LAMBDA_RUNTIME_DIR", "/var/runtime".into()),
        ("_HANDLER", "bootstrap".into()),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into()),
        ("AWS_LAMBDA_FUNCTION_NAME", name.into()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}")),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "test".into()),
    ]
}

/// A `bootstrap` running against its own [`RuntimeApi`]. Killed when dropped.
#[derive(Debug)]
pub struct Function {
    /// Its Runtime API.
    pub api: RuntimeApi,
    child: Child,
    started: Instant,
    output: Arc<Mutex<Vec<u8>>>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl Function {
    /// Starts `binary` with only `env` plus what Lambda's `provided.al2023`
    /// runtime sets ([`lambda_env`]); nothing of the caller's environment.
    ///
    /// # Panics
    /// When the binary cannot be started.
    pub async fn spawn(binary: &Path, name: &str, env: &[(&str, String)]) -> Function {
        let api = RuntimeApi::start().await;
        let mut command = Command::new(binary);
        command
            .env_clear()
            .envs(lambda_env(name))
            .env("AWS_LAMBDA_RUNTIME_API", api.address())
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut drains = Vec::new();
        for pipe in [
            child.stdout.take().map(|p| Box::new(p) as Box<dyn Pipe>),
            child.stderr.take().map(|p| Box::new(p) as Box<dyn Pipe>),
        ]
        .into_iter()
        .flatten()
        {
            let output = output.clone();
            drains.push(tokio::spawn(drain(pipe, output)));
        }
        Function {
            api,
            child,
            started,
            output,
            drains,
        }
    }

    /// Waits (up to `limit`) until the runtime asks for work or exits.
    ///
    /// # Panics
    /// When neither happens within `limit`.
    pub async fn init(&mut self, limit: Duration) -> Init {
        let outcome = tokio::time::timeout(limit, async {
            tokio::select! {
                at = self.api.ready() => Ok(at),
                status = self.child.wait() => Err(status),
            }
        })
        .await;
        match outcome {
            Ok(Ok(at)) => Init::Ready(at.duration_since(self.started)),
            Ok(Err(status)) => {
                let status = status.expect("wait for the function");
                // the pipes close with the process: read what is left
                for drain in self.drains.drain(..) {
                    let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
                }
                Init::Exited {
                    status,
                    init_error: self.api.init_error(),
                    output: self.output(),
                }
            }
            Err(_) => panic!(
                "the function neither asked for work nor exited within {limit:?}; output:\n{}",
                self.output()
            ),
        }
    }

    /// What it wrote to stdout and stderr so far.
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&lock(&self.output)).into_owned()
    }

    /// Stops it now.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

trait Pipe: tokio::io::AsyncRead + Unpin + Send {}
impl<T: tokio::io::AsyncRead + Unpin + Send> Pipe for T {}

async fn drain(mut pipe: Box<dyn Pipe>, output: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        lock(&output).extend_from_slice(&buf[..n]);
    }
}
