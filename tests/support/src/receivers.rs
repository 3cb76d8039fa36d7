//! Two receivers on 127.0.0.1 for relay tests and benchmarks: a tarpit that
//! reads every request and never answers (only the client's timeout ends a
//! request), and a counting sink that answers 200 after a fixed latency and
//! records nothing (the benchmarks' receiver).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("the tarpit: bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the tarpit's address: {e}"));
        let tarpit = Tarpit {
            base: format!("http://{addr}"),
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
