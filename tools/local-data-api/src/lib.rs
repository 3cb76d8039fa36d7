//! A local server that speaks the AWS RDS Data API wire protocol
//! (rest-json, service model `rds-data/2018-08-01`) over a real PostgreSQL,
//! so code using `aws-sdk-rdsdata` is tested without AWS.
//!
//! Operations: `POST /Execute` (ExecuteStatement, with
//! `includeResultMetadata`, `formatRecordsAs: JSON` and `resultSetOptions`),
//! `/BatchExecute`, `/BeginTransaction`, `/CommitTransaction`,
//! `/RollbackTransaction`. Any SigV4 `Authorization` is accepted. Errors are
//! the service's shapes (`x-amzn-errortype` + `{"message": …}`), see
//! [`ServiceError`]. The README next to this crate lists what is faithful to
//! the real service and what is not.
//!
//! # In-process use (tests)
//!
//! On a background thread with its own runtime, bound to a free port of
//! 127.0.0.1 (stops when the handle is dropped):
//!
//! ```no_run
//! # fn demo(database_url: String) -> Result<(), local_data_api::Error> {
//! let server = local_data_api::spawn_background(local_data_api::Config::new(database_url))?;
//! let endpoint = server.endpoint_url(); // "http://127.0.0.1:PORT", for the SDK's endpoint_url
//! # Ok(()) }
//! ```
//!
//! Or on the caller's runtime, with a clock the test controls:
//!
//! ```no_run
//! # async fn demo(database_url: String) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use hookbox::clock::ManualClock;
//! use local_data_api::{Config, LocalDataApi};
//!
//! let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
//! let api = LocalDataApi::new(Config { clock: clock.clone(), ..Config::new(database_url) })?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let endpoint = format!("http://{}", listener.local_addr()?);
//! tokio::spawn(api.clone().serve(listener, std::future::pending()));
//! // … move `clock` past the idle timeout, then:
//! let rolled_back = api.reap_idle_transactions().await;
//! # Ok(()) }
//! ```
//!
//! [`serve`] is the one-call form (what the binary uses), and [`router`]
//! gives the bare axum router (without the periodic reaper: idle
//! transactions then expire when next used).

mod db;
mod error;
mod execute;
mod http;
mod params;
mod pause;
mod service;
mod transactions;
mod values;
mod wire;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hookbox::clock::{Clock, SystemClock};

pub use error::{Error, ServiceError};
pub use execute::{MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, MAX_ROW_BYTES};

use crate::db::{Databases, PoolSettings};
use crate::service::Service;
use crate::transactions::Transactions;

/// The checks the server makes on a request before it touches the
/// database, on the raw body of the operation at `path` (`/Execute`,
/// `/BatchExecute`, `/BeginTransaction`, `/CommitTransaction`,
/// `/RollbackTransaction`): decoding, required members, the SQL's named
/// parameters and every parameter's value and type hint. `Err` is the
/// error the server answers. Never panics, whatever the bytes (the
/// `local_data_api_request` fuzz target holds it to that).
pub fn check_request(path: &str, body: &[u8]) -> Result<(), ServiceError> {
    service::check_request(path, body)
}

/// The service's transaction idle timeout: 3 minutes without a call.
pub const DEFAULT_TRANSACTION_IDLE_TIMEOUT: Duration = Duration::from_secs(3 * 60);
/// The service's maximum transaction lifetime: 24 hours.
pub const DEFAULT_TRANSACTION_MAX_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// The service's statement timeout: 45 seconds.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(45);

/// Server settings. Build with [`Config::new`] and override fields with
/// struct update syntax.
#[derive(Clone)]
pub struct Config {
    /// `postgres://user:password@host:port/dbname`. The dbname is the
    /// default database; a request's `database` swaps it.
    pub database_url: String,
    /// A transaction unused for longer than this is rolled back and
    /// forgotten (default 3 min, as the service).
    pub transaction_idle_timeout: Duration,
    /// A transaction older than this is rolled back (default 24 h).
    pub transaction_max_lifetime: Duration,
    /// Where "now" comes from for the transaction timeouts.
    pub clock: Arc<dyn Clock>,
    /// How often the reaper looks for expired transactions (real time).
    pub reaper_interval: Duration,
    /// PostgreSQL `statement_timeout` of every connection (default 45 s).
    /// A cancelled statement is a StatementTimeoutException.
    pub statement_timeout: Duration,
    /// How long to wait for a new connection (or a free pooled one) before
    /// answering DatabaseUnavailableException (default 5 s).
    pub connect_timeout: Duration,
    /// Pool size per database (default 32). Each open transaction holds one.
    pub max_connections_per_database: usize,
}

impl Config {
    /// The service's defaults, the system clock, and `database_url`.
    pub fn new(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            transaction_idle_timeout: DEFAULT_TRANSACTION_IDLE_TIMEOUT,
            transaction_max_lifetime: DEFAULT_TRANSACTION_MAX_LIFETIME,
            clock: Arc::new(SystemClock),
            reaper_interval: Duration::from_secs(10),
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            connect_timeout: Duration::from_secs(5),
            max_connections_per_database: 32,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("database_url", &"(not shown)")
            .field("transaction_idle_timeout", &self.transaction_idle_timeout)
            .field("transaction_max_lifetime", &self.transaction_max_lifetime)
            .field("clock", &self.clock)
            .field("reaper_interval", &self.reaper_interval)
            .field("statement_timeout", &self.statement_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field(
                "max_connections_per_database",
                &self.max_connections_per_database,
            )
            .finish()
    }
}

/// The server state: connection pools and open transactions. Cheap to
/// clone (shared).
#[derive(Clone)]
pub struct LocalDataApi {
    service: Arc<Service>,
    reaper_interval: Duration,
}

impl fmt::Debug for LocalDataApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalDataApi")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl LocalDataApi {
    /// Reads the configuration. Connects to nothing yet: a PostgreSQL that
    /// is down shows as DatabaseUnavailableException on the calls.
    pub fn new(config: Config) -> Result<Self, Error> {
        let dbs = Databases::new(
            &config.database_url,
            PoolSettings {
                statement_timeout: config.statement_timeout,
                connect_timeout: config.connect_timeout,
                max_connections: config.max_connections_per_database,
            },
        )?;
        let txs = Transactions::new(
            config.clock.clone(),
            config.transaction_idle_timeout,
            config.transaction_max_lifetime,
        );
        Ok(Self {
            service: Arc::new(Service {
                dbs,
                pause: pause::Pause::new(config.clock.clone()),
                txs,
                statement_timeout: config.statement_timeout,
            }),
            reaper_interval: config.reaper_interval.max(Duration::from_millis(10)),
        })
    }

    /// The axum router of the five operations (no reaper task).
    pub fn router(&self) -> axum::Router {
        http::routes(self.service.clone())
    }

    /// Rolls back and forgets every transaction idle for longer than the
    /// idle timeout (or older than the maximum lifetime) by the configured
    /// clock and not in use by a call; returns how many. [`LocalDataApi::serve`]
    /// calls it every `reaper_interval`; tests call it after moving a
    /// [`hookbox::clock::ManualClock`].
    pub async fn reap_idle_transactions(&self) -> usize {
        self.service.txs.reap().await
    }

    /// Pauses the database as Aurora Serverless v2 auto-pause does: open
    /// transactions are gone (their connections closed, PostgreSQL rolls
    /// back) and every call answers `DatabaseResumingException` (400) until
    /// `resume_time` has passed on the configured clock since the first call
    /// after the pause (the call that wakes it), or, with `None`, until
    /// [`LocalDataApi::resume`]. Request checks still come first: a bad
    /// request is a `BadRequestException` either way.
    pub fn pause(&self, resume_time: Option<Duration>) {
        self.service.pause.pause(resume_time);
        let abandoned = self.service.txs.abandon_all();
        tracing::info!(abandoned, ?resume_time, "database paused");
    }

    /// Ends a pause now.
    pub fn resume(&self) {
        self.service.pause.resume();
    }

    /// Whether the database is paused (or still resuming).
    pub fn is_paused(&self) -> bool {
        self.service.pause.is_paused()
    }

    /// Number of open transactions.
    pub fn open_transactions(&self) -> usize {
        self.service.txs.len()
    }

    /// `host:port/dbname` of the default database (no credentials), for logs.
    pub fn database_target(&self) -> String {
        self.service.dbs.target()
    }

    /// Serves on `listener` until `shutdown` completes (then stops
    /// accepting and lets open calls finish), with the reaper running.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let addr = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "(unknown address)".to_string());
        let reaper = tokio::spawn({
            let api = self.clone();
            async move {
                let mut tick = tokio::time::interval(api.reaper_interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let reaped = api.reap_idle_transactions().await;
                    if reaped > 0 {
                        tracing::info!(reaped, "expired transactions rolled back");
                    }
                }
            }
        });
        let result = axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|source| Error::Serve { addr, source });
        reaper.abort();
        result
    }
}

/// Serves the Data API on `listener` with `config`, forever (until the
/// listener fails). What the binary runs.
pub async fn serve(listener: tokio::net::TcpListener, config: Config) -> Result<(), Error> {
    LocalDataApi::new(config)?
        .serve(listener, std::future::pending())
        .await
}

/// The bare axum router for `config`, for embedding in another server.
/// Without the periodic reaper, an idle transaction is rolled back when it
/// is next used (or never, if it never is).
pub fn router(config: Config) -> Result<axum::Router, Error> {
    Ok(LocalDataApi::new(config)?.router())
}

/// A server running on its own thread and runtime; stops when dropped.
pub struct BackgroundServer {
    addr: SocketAddr,
    api: LocalDataApi,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for BackgroundServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackgroundServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl BackgroundServer {
    /// The address it listens on (127.0.0.1, a free port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, for the SDK's `endpoint_url` or
    /// `AWS_ENDPOINT_URL_RDS_DATA`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server state (to reap idle transactions, count open ones).
    pub fn api(&self) -> &LocalDataApi {
        &self.api
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts a server on a free port of 127.0.0.1, on a new thread with its own
/// tokio runtime, so it outlives any test's runtime. Returns once the port
/// is bound (calls can be made at once). Open connections and transactions
/// are closed when the handle is dropped.
pub fn spawn_background(config: Config) -> Result<BackgroundServer, Error> {
    let api = LocalDataApi::new(config)?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| Error::Listen {
        addr: "127.0.0.1:0".into(),
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| Error::Listen {
        addr: "127.0.0.1:0".into(),
        source,
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("local-data-api")
        .enable_all()
        .build()
        .map_err(|e| Error::Background {
            detail: format!("cannot build a tokio runtime: {e}"),
        })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_api = api.clone();
    let thread = std::thread::Builder::new()
        .name(format!("local-data-api-{}", addr.port()))
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(error = %e, "local-data-api: cannot use the listener");
                        return;
                    }
                };
                tokio::select! {
                    result = server_api.serve(listener, std::future::pending()) => {
                        if let Err(e) = result {
                            tracing::error!(error = %e, "local-data-api stopped");
                        }
                    }
                    _ = stopped => {}
                }
            });
            // Do not wait for idle keep-alive connections of clients.
            runtime.shutdown_timeout(Duration::from_secs(1));
        })
        .map_err(|e| Error::Background {
            detail: format!("cannot start a thread: {e}"),
        })?;
    Ok(BackgroundServer {
        addr,
        api,
        stop: Some(stop),
        thread: Some(thread),
    })
}
