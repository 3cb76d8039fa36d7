//! A minimal HTTP/1.1 server on 127.0.0.1 that records every request and
//! answers with a status the test chooses. Stands in for CloudFormation's
//! ResponseURL, webhook receivers and other peers.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One request as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// `GET`, `PUT`, …
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    /// When it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "request body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

#[derive(Debug)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    arrived: Notify,
    status: AtomicU16,
}

/// The recording server. Runs on the runtime of the test that started it.
#[derive(Debug, Clone)]
pub struct HttpSink {
    base: String,
    shared: Arc<Shared>,
}

impl HttpSink {
    /// Binds a free port on 127.0.0.1 and serves until the runtime ends.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> HttpSink {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for the HTTP sink");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            status: AtomicU16::new(200),
        });
        let serving = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = serving.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &shared).await;
                });
            }
        });
        HttpSink {
            base: format!("http://{addr}"),
            shared,
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Status code for the following requests (default 200).
    pub fn respond_with(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    /// Everything received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until at least `n` requests have arrived and returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Recorded> {
        loop {
            let notified = self.shared.arrived.notified();
            let got = self.requests();
            if got.len() >= n {
                return got;
            }
            notified.await;
        }
    }
}

async fn serve(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    loop {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                break end;
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap_or("").split(' ');
        let method = request_line.next().unwrap_or("").to_string();
        let target = request_line.next().unwrap_or("").to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = buf[head_end + 4..].to_vec();
        while body.len() < length {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(length);
        let close = headers
            .iter()
            .any(|(n, v)| n == "connection" && v.eq_ignore_ascii_case("close"));
        shared
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Recorded {
                method,
                target,
                headers,
                body,
            });
        shared.arrived.notify_waiters();
        let status = shared.status.load(Ordering::SeqCst);
        let response = format!("HTTP/1.1 {status} Sink\r\ncontent-length: 0\r\n\r\n");
        stream.write_all(response.as_bytes()).await?;
        if close {
            return Ok(());
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
