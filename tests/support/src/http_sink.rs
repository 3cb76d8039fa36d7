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

/// A response chosen for requests carrying a header value.
#[derive(Debug, Clone)]
struct Rule {
    header: String,
    value: String,
    status: u16,
    headers: Vec<(String, String)>,
}

#[derive(Debug)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    arrived: Notify,
    status: AtomicU16,
    headers: Mutex<Vec<(String, String)>>,
    body: Mutex<String>,
    rules: Mutex<Vec<Rule>>,
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
        Self::start_on(0).await
    }

    /// A port of 127.0.0.1 that was free a moment ago and on which nothing
    /// listens now: a receiver that is down (connections are refused), until
    /// [`HttpSink::start_on`] that port.
    ///
    /// # Panics
    /// When no port can be bound.
    pub fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind 127.0.0.1:0 to find a free port")
            .port()
    }

    /// Like [`HttpSink::start`], on a given port of 127.0.0.1 (0: any).
    ///
    /// # Panics
    /// When the port cannot be bound.
    pub async fn start_on(port: u16) -> HttpSink {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:{port} for the HTTP sink: {e}"));
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            status: AtomicU16::new(200),
            headers: Mutex::new(Vec::new()),
            body: Mutex::new(String::new()),
            rules: Mutex::new(Vec::new()),
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

    /// Status and response body for the following requests (rules answer
    /// with an empty body).
    pub fn respond_with_body(&self, status: u16, body: &str) {
        self.respond_with(status);
        *self.shared.body.lock().unwrap_or_else(|p| p.into_inner()) = body.to_string();
    }

    /// Status and extra response headers for the following requests (e.g.
    /// `429` with `retry-after`).
    pub fn respond_with_headers(&self, status: u16, headers: &[(&str, &str)]) {
        *self
            .shared
            .headers
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        self.respond_with(status);
    }

    /// Requests whose `header` equals `value` get `status` (and `headers`),
    /// whatever the default; the latest matching rule wins.
    pub fn respond_to(&self, header: &str, value: &str, status: u16, headers: &[(&str, &str)]) {
        self.shared
            .rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Rule {
                header: header.to_ascii_lowercase(),
                value: value.to_string(),
                status,
                headers: headers
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
            });
    }

    /// Removes every [`HttpSink::respond_to`] rule.
    pub fn clear_rules(&self) {
        self.shared
            .rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
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
        let rule = shared
            .rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .rev()
            .find(|r| headers.iter().any(|(n, v)| *n == r.header && *v == r.value))
            .cloned();
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
        let (status, extra, answer) = match rule {
            Some(rule) => (rule.status, rule.headers, String::new()),
            None => (
                shared.status.load(Ordering::SeqCst),
                shared
                    .headers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
                shared
                    .body
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            ),
        };
        let extra: String = extra.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
        let response = format!(
            "HTTP/1.1 {status} Sink\r\n{extra}content-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        stream.write_all(response.as_bytes()).await?;
        if close {
            return Ok(());
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
