//! Receivers on 127.0.0.1 for relay tests and benchmarks: a tarpit that
//! reads every request and never answers (only the client's timeout ends a
//! request), a keep-alive receiver that answers 200 and counts the
//! connections a client keeps open, and a counting sink that answers 200
//! after a fixed latency and records nothing (the benchmarks' receiver).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// A listener on a free port of 127.0.0.1, and its `http://` base URL.
///
/// # Panics
/// When no port can be bound (naming `what`).
async fn bind(what: &str) -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{what}: bind 127.0.0.1:0: {e}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{what}'s address: {e}"));
    (listener, format!("http://{addr}"))
}

/// Reads every request and never answers; counts the connections open at
/// once (each hanging request holds one).
#[derive(Debug, Clone)]
pub struct Tarpit {
    base: String,
    open: Arc<AtomicUsize>,
    most_open: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl Tarpit {
    /// Binds a free port of 127.0.0.1 and listens on the caller's runtime.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> Tarpit {
        let (listener, base) = bind("the tarpit").await;
        let tarpit = Tarpit {
            base,
            open: Arc::default(),
            most_open: Arc::default(),
            changed: Arc::default(),
        };
        let counts = tarpit.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let n = counts.open.fetch_add(1, Ordering::SeqCst) + 1;
                counts.most_open.fetch_max(n, Ordering::SeqCst);
                counts.changed.notify_waiters();
                let counts = counts.clone();
                tokio::spawn(async move {
                    // read until the client gives up; answer nothing
                    let mut buf = vec![0u8; 64 * 1024];
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    counts.open.fetch_sub(1, Ordering::SeqCst);
                    counts.changed.notify_waiters();
                });
            }
        });
        tarpit
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The most connections that were open at once.
    pub fn most_open(&self) -> usize {
        self.most_open.load(Ordering::SeqCst)
    }

    /// Waits until `n` connections are open at once.
    pub async fn wait_for_open(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.open.load(Ordering::SeqCst) >= n {
                return;
            }
            changed.await;
        }
    }
}

/// Answers 200 to every request, keeping the connection open as long as
/// the client does; counts the connections accepted and those open now.
#[derive(Debug, Clone)]
pub struct KeepAlive {
    base: String,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

impl KeepAlive {
    /// Binds a free port of 127.0.0.1 and serves on the caller's runtime.
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start() -> KeepAlive {
        let (listener, base) = bind("the keep-alive receiver").await;
        let receiver = KeepAlive {
            base,
            accepted: Arc::default(),
            open: Arc::default(),
            changed: Arc::default(),
        };
        let app = axum::Router::new().fallback(|| async { axum::http::StatusCode::OK });
        let counting = Counting {
            listener,
            receiver: receiver.clone(),
        };
        tokio::spawn(async move { axum::serve(counting, app).await });
        receiver
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// A future that resolves at the next change of the open count (take it
    /// before reading the counts, then await it).
    pub fn changed(&self) -> impl Future<Output = ()> + '_ {
        self.changed.notified()
    }
}

/// The keep-alive receiver's listener: each connection counted open until
/// its socket is dropped.
struct Counting {
    listener: tokio::net::TcpListener,
    receiver: KeepAlive,
}

impl axum::serve::Listener for Counting {
    type Io = Counted;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Counted, std::net::SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((socket, addr)) => {
                    self.receiver.accepted.fetch_add(1, Ordering::SeqCst);
                    self.receiver.open.fetch_add(1, Ordering::SeqCst);
                    self.receiver.changed.notify_waiters();
                    let receiver = self.receiver.clone();
                    return (Counted { socket, receiver }, addr);
                }
                // out of descriptors, say: not a busy loop while it lasts
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// A connection counted open until dropped.
struct Counted {
    socket: tokio::net::TcpStream,
    receiver: KeepAlive,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.receiver.open.fetch_sub(1, Ordering::SeqCst);
        self.receiver.changed.notify_waiters();
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.socket).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.socket).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

/// A receiver on 127.0.0.1: 200 for every POST to `/in` (after `latency`, a
/// receiver's own work), counted and not recorded. Returns its URL and the
/// count.
///
/// # Errors
/// When no port can be bound.
pub async fn counting_sink(latency: Duration) -> std::io::Result<(String, Arc<AtomicU64>)> {
    let hits = Arc::new(AtomicU64::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/in",
        axum::routing::post(move |_body: axum::body::Bytes| {
            let counter = counter.clone();
            async move {
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
                counter.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((format!("http://{addr}/in"), hits))
}
