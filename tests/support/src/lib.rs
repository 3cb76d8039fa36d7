//! Test support for hookbox: a throwaway PostgreSQL cluster per test process
//! and a fresh database per test, so tests run in parallel and stay fast.
//!
//! How a test finds PostgreSQL:
//! - `DATABASE_URL` set: that server is used; each test still gets its own
//!   database on it (the role needs `CREATEDB`).
//! - otherwise a cluster is started once per test process, lazily, from the
//!   installed binaries (`HOOKBOX_PG_BINDIR`, `pg_config --bindir`, or the
//!   newest `/usr/lib/postgresql/*/bin`), in a temporary directory, on a free
//!   port of 127.0.0.1, with `fsync=off`. When the caller is root it runs as
//!   the `postgres` user (initdb refuses root). A watchdog process removes the
//!   cluster when the test process exits, however it exits.
//! - no PostgreSQL found: the test fails with a message that says how to
//!   install it. Tests never skip.

pub mod coldstart;
pub mod fault_proxy;
pub mod http_sink;
pub mod logs;
pub mod moto;
pub mod python;
pub mod receivers;
pub mod runtime_api;
pub mod s3;
pub mod sam;
pub mod smoke;

use std::fmt;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Why the throwaway cluster could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// No PostgreSQL server binaries were found on this machine.
    #[error(
        "no PostgreSQL server binaries found (looked at HOOKBOX_PG_BINDIR, `pg_config --bindir` \
         and /usr/lib/postgresql/*/bin). Install them with `apt-get install postgresql` \
         (Debian/Ubuntu) or point DATABASE_URL at a server whose role may CREATE DATABASE"
    )]
    NoPostgres,
    /// A command of the harness failed.
    #[error("{what} failed: {detail}")]
    Command {
        /// What was being run.
        what: String,
        /// Its output or error.
        detail: String,
    },
    /// Talking to the server failed.
    #[error("PostgreSQL at {url_redacted} refused {what}: {detail}")]
    Sql {
        /// The server URL with any password removed.
        url_redacted: String,
        /// What was being done.
        what: String,
        /// The server's message (or the driver's, when there was none).
        detail: String,
    },
}

/// A running server the tests can create databases on.
struct Server {
    /// URL of the maintenance database (`postgres`), used to create test databases.
    admin_url: String,
    /// The throwaway cluster, when we started one (kept for the whole process).
    _cluster: Option<Cluster>,
}

/// A cluster this process started. Its watchdog's stdin is kept open for the
/// cluster's life: when it closes (drop, or process exit however it happens)
/// the watchdog stops the cluster and deletes its directory.
struct Cluster {
    admin_url: String,
    bindir: PathBuf,
    data: PathBuf,
    /// `pg_ctl start -o` options (port, sockets, durability) and the log,
    /// so a killed cluster can start again as it was.
    options: String,
    log: PathBuf,
    as_postgres: bool,
    _watchdog: Mutex<(Child, ChildStdin)>,
}

/// A throwaway cluster of its own, for tests that stop PostgreSQL on purpose
/// (fault tests). Removed when dropped.
pub struct PrivateCluster {
    cluster: Cluster,
}

impl fmt::Debug for PrivateCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateCluster")
            .field("admin_url", &self.cluster.admin_url)
            .finish_non_exhaustive()
    }
}

impl PrivateCluster {
    /// Starts a new cluster (about a second).
    ///
    /// # Panics
    /// When no PostgreSQL can be found or started.
    pub fn start() -> PrivateCluster {
        match start_cluster(false) {
            Ok(cluster) => PrivateCluster { cluster },
            Err(e) => panic!("cannot start a private PostgreSQL cluster: {e}"),
        }
    }

    /// Starts a cluster with durable commits (fsync, synchronous_commit and
    /// full_page_writes on), for benchmarks that must pay what production pays.
    ///
    /// # Panics
    /// When no PostgreSQL can be found or started.
    pub fn start_durable() -> PrivateCluster {
        match start_cluster(true) {
            Ok(cluster) => PrivateCluster { cluster },
            Err(e) => panic!("cannot start a private PostgreSQL cluster: {e}"),
        }
    }

    /// URL of its `postgres` database.
    pub fn url(&self) -> &str {
        &self.cluster.admin_url
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`), as a crash would.
    pub fn kill(&self) -> Result<(), HarnessError> {
        run(
            "pg_ctl stop",
            as_pg_user(
                self.cluster.as_postgres,
                &self.cluster.bindir.join("pg_ctl"),
            )
            .args(["stop", "-m", "immediate", "-s", "-w"])
            .arg("-D")
            .arg(&self.cluster.data),
        )
    }

    /// Starts a killed cluster again, on the same port with the same data
    /// (after crash recovery: what was committed is there).
    pub fn restart(&self) -> Result<(), HarnessError> {
        run(
            "pg_ctl start",
            as_pg_user(
                self.cluster.as_postgres,
                &self.cluster.bindir.join("pg_ctl"),
            )
            .args(["start", "-w", "-t", "60", "-s"])
            .arg("-D")
            .arg(&self.cluster.data)
            .arg("-l")
            .arg(&self.cluster.log)
            .arg("-o")
            .arg(&self.cluster.options),
        )
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("admin_url", &redact(&self.admin_url))
            .finish_non_exhaustive()
    }
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static DATA_API: OnceLock<Result<Mutex<local_data_api::BackgroundServer>, String>> =
    OnceLock::new();
static NEXT_DB: AtomicU64 = AtomicU64::new(0);

/// A fresh, empty database for one test. Dropping it does not delete it: the
/// whole throwaway cluster goes away when the test process ends (and with
/// `DATABASE_URL` the databases are named `hookbox_test_*` for easy cleanup).
#[derive(Debug)]
pub struct TestDb {
    url: String,
    name: String,
}

impl TestDb {
    /// Creates a new, empty database and returns its connection URL.
    ///
    /// # Panics
    /// When no PostgreSQL can be found or started: tests must fail, not skip.
    pub async fn create() -> TestDb {
        match Self::try_create().await {
            Ok(db) => db,
            Err(e) => panic!("hookbox test database unavailable: {e}"),
        }
    }

    /// Like [`TestDb::create`], returning the error instead of panicking.
    pub async fn try_create() -> Result<TestDb, HarnessError> {
        let server = server()?;
        let name = format!(
            "hookbox_test_{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::Relaxed)
        );
        let (client, conn) = tokio_postgres::connect(&server.admin_url, tokio_postgres::NoTls)
            .await
            .map_err(|e| HarnessError::Sql {
                url_redacted: redact(&server.admin_url),
                what: "a connection".into(),
                detail: pg_detail(&e),
            })?;
        let conn = tokio::spawn(conn);
        // A leftover from an earlier run against the same DATABASE_URL would
        // make CREATE fail; names include the pid, so this is rare.
        let mut result = Ok(());
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            result = client
                .batch_execute(&sql)
                .await
                .map_err(|e| HarnessError::Sql {
                    url_redacted: redact(&server.admin_url),
                    what: sql.clone(),
                    detail: pg_detail(&e),
                });
            if result.is_err() {
                break;
            }
        }
        drop(client);
        let _ = conn.await;
        result?;
        Ok(TestDb {
            url: with_dbname(&server.admin_url, &name),
            name,
        })
    }

    /// Connection URL of this database (`postgres://…`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Endpoint (`http://127.0.0.1:PORT`) of a local RDS Data API server
/// (`tools/local-data-api`) in front of the shared test server, started once
/// per test process on a background thread. The Data API request's
/// `database` member selects the test's database.
///
/// # Panics
/// When the server cannot be started: tests must fail, not skip.
pub fn data_api_endpoint() -> String {
    let server = DATA_API.get_or_init(|| {
        let url = admin_url().map_err(|e| e.to_string())?;
        local_data_api::spawn_background(local_data_api::Config::new(url))
            .map(Mutex::new)
            .map_err(|e| e.to_string())
    });
    match server {
        Ok(server) => server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .endpoint_url(),
        Err(e) => panic!("local Data API server unavailable: {e}"),
    }
}

/// A local Data API server of its own in front of `database_url` (for fault
/// tests that stop the database under it). Stops when dropped.
///
/// # Panics
/// When it cannot be started.
pub fn start_data_api(database_url: &str) -> local_data_api::BackgroundServer {
    local_data_api::spawn_background(local_data_api::Config::new(database_url))
        .unwrap_or_else(|e| panic!("cannot start a local Data API server: {e}"))
}

/// The URL of the maintenance database of the shared test server, starting
/// the throwaway cluster if needed. For tools (the local stack) that want the
/// same server the tests use.
pub fn admin_url() -> Result<String, HarnessError> {
    server().map(|s| s.admin_url.clone())
}

fn server() -> Result<&'static Server, HarnessError> {
    let server = SERVER.get_or_init(|| match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Ok(Server {
            admin_url: url,
            _cluster: None,
        }),
        _ => start_cluster(false)
            .map(|cluster| Server {
                admin_url: cluster.admin_url.clone(),
                _cluster: Some(cluster),
            })
            .map_err(|e| e.to_string()),
    });
    server.as_ref().map_err(|detail| HarnessError::Command {
        what: "starting the throwaway PostgreSQL cluster".into(),
        detail: detail.clone(),
    })
}

/// Replaces the database name of a `postgres://` URL.
fn with_dbname(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    // postgres://user@host:port/dbname: the path starts at the first '/'
    // after the authority.
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(slash) => &base[..after_scheme + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// The server's own message when there is one (the driver's Display says only
/// "db error").
fn pg_detail(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Removes a password from a URL for messages.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}:***{}", &url[..scheme_end], user, &rest[at..])
        }
        None => url.to_string(),
    }
}

/// Where the PostgreSQL server binaries are.
pub fn find_bindir() -> Result<PathBuf, HarnessError> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Ok(dir) = std::env::var("HOOKBOX_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        if has_server(&dir) {
            return Ok(dir);
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        if out.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if has_server(&dir) {
                return Ok(dir);
            }
        }
    }
    let mut candidates: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .collect();
    candidates.sort();
    candidates
        .pop()
        .map(|(_, dir)| dir)
        .ok_or(HarnessError::NoPostgres)
}

fn run(what: &str, cmd: &mut Command) -> Result<(), HarnessError> {
    let out = cmd.output().map_err(|e| HarnessError::Command {
        what: what.into(),
        detail: e.to_string(),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(HarnessError::Command {
            what: what.into(),
            detail: format!(
                "{}\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        })
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Builds a command that runs `program` as the `postgres` user when we are
/// root (initdb and postgres refuse to run as root), else as ourselves.
fn as_pg_user(as_postgres: bool, program: &Path) -> Command {
    if as_postgres {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn free_port() -> Result<u16, HarnessError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| HarnessError::Command {
            what: "finding a free port on 127.0.0.1".into(),
            detail: e.to_string(),
        })
}

fn start_cluster(durable: bool) -> Result<Cluster, HarnessError> {
    let bindir = find_bindir()?;
    let as_postgres = is_root();
    let dir = tempfile::Builder::new()
        .prefix("hookbox-pg-")
        .tempdir()
        .map_err(|e| HarnessError::Command {
            what: "creating a temporary directory".into(),
            detail: e.to_string(),
        })?
        .keep();
    let data = dir.join("data");
    if as_postgres {
        run(
            "chown of the cluster directory to postgres",
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir),
        )?;
    }
    run(
        "initdb",
        as_pg_user(as_postgres, &bindir.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .arg("-D")
            .arg(&data),
    )?;

    // The port is free now but could be taken before postgres binds it: retry.
    let mut last_error = None;
    for _ in 0..5 {
        let port = free_port()?;
        let log = dir.join("postgres.log");
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='{}' \
             {durability} \
             -c max_connections=300 -c shared_buffers=64MB {extra}",
            dir.display(),
            // a diagnostic's settings, e.g. the bench's statement report:
            // `-c shared_preload_libraries=pg_stat_statements`
            extra = std::env::var("HOOKBOX_PG_OPTIONS").unwrap_or_default(),
            durability = if durable {
                "-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
            } else {
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            }
        );
        let started = run(
            "pg_ctl start",
            as_pg_user(as_postgres, &bindir.join("pg_ctl"))
                .args(["start", "-w", "-t", "60", "-s"])
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .arg("-o")
                .arg(&options),
        );
        match started {
            Ok(()) => {
                let watchdog = spawn_watchdog(&bindir, as_postgres, &dir, &data)?;
                return Ok(Cluster {
                    admin_url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                    bindir,
                    data,
                    options,
                    log,
                    as_postgres,
                    _watchdog: Mutex::new(watchdog),
                });
            }
            Err(e) => {
                let log_text = std::fs::read_to_string(&log).unwrap_or_default();
                last_error = Some(format!("{e}\n{log_text}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Err(HarnessError::Command {
        what: "pg_ctl start".into(),
        detail: last_error.unwrap_or_default(),
    })
}

/// A shell that waits for its stdin to close (our process exiting, by any
/// means: normal exit, panic, kill -9) and then stops the cluster at once
/// and deletes its directory.
fn spawn_watchdog(
    bindir: &Path,
    as_postgres: bool,
    dir: &Path,
    data: &Path,
) -> Result<(Child, ChildStdin), HarnessError> {
    let pg_ctl = bindir.join("pg_ctl");
    let stop = if as_postgres {
        format!(
            "runuser -u postgres -- '{}' stop -m immediate -s -D '{}'",
            pg_ctl.display(),
            data.display()
        )
    } else {
        format!(
            "'{}' stop -m immediate -s -D '{}'",
            pg_ctl.display(),
            data.display()
        )
    };
    let script = format!(
        "cat >/dev/null; {stop} >/dev/null 2>&1; rm -rf '{}'",
        dir.display()
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| HarnessError::Command {
            what: "starting the cluster watchdog".into(),
            detail: e.to_string(),
        })?;
    let mut stdin = child.stdin.take().ok_or_else(|| HarnessError::Command {
        what: "starting the cluster watchdog".into(),
        detail: "no stdin pipe".into(),
    })?;
    // Nothing is ever written; a flush proves the pipe is open.
    stdin.flush().map_err(|e| HarnessError::Command {
        what: "starting the cluster watchdog".into(),
        detail: e.to_string(),
    })?;
    Ok((child, stdin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_dbname_replaces_only_the_path() {
        assert_eq!(
            with_dbname("postgres://u:p@127.0.0.1:5432/postgres", "t1"),
            "postgres://u:p@127.0.0.1:5432/t1"
        );
        assert_eq!(
            with_dbname("postgres://u@h:1/postgres?sslmode=disable", "t2"),
            "postgres://u@h:1/t2?sslmode=disable"
        );
        assert_eq!(with_dbname("postgres://h:1", "t3"), "postgres://h:1/t3");
    }

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(
            redact("postgres://u:secret@h:1/db"),
            "postgres://u:***@h:1/db"
        );
        assert_eq!(redact("postgres://u@h:1/db"), "postgres://u:***@h:1/db");
        assert_eq!(redact("postgres://h:1/db"), "postgres://h:1/db");
    }

    #[tokio::test]
    async fn a_private_cluster_can_be_killed_and_is_removed_when_dropped() {
        let cluster = PrivateCluster::start();
        let data = cluster.cluster.data.clone();
        let (client, conn) = tokio_postgres::connect(cluster.url(), tokio_postgres::NoTls)
            .await
            .expect("connect to the private cluster");
        let conn = tokio::spawn(conn);
        client.simple_query("SELECT 1").await.expect("query");
        cluster.kill().expect("kill");
        assert!(
            client.simple_query("SELECT 1").await.is_err(),
            "server is gone"
        );
        let _ = conn.await;
        assert!(
            tokio_postgres::connect(cluster.url(), tokio_postgres::NoTls)
                .await
                .is_err(),
            "no new connections either"
        );
        // restarted: the same URL answers again
        cluster.restart().expect("restart");
        let (client, conn) = tokio_postgres::connect(cluster.url(), tokio_postgres::NoTls)
            .await
            .expect("connect after the restart");
        let conn = tokio::spawn(conn);
        client.simple_query("SELECT 1").await.expect("query");
        drop(client);
        let _ = conn.await;
        cluster.kill().expect("kill again");
        drop(cluster);
        // The watchdog removes the directory once its stdin closes; wait for
        // that event (bounded), not for a fixed time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while data.exists() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(!data.exists(), "cluster directory removed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_test_gets_its_own_working_database() {
        let a = TestDb::create().await;
        let b = TestDb::create().await;
        assert_ne!(a.name(), b.name());
        for db in [&a, &b] {
            let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
                .await
                .expect("connect to the test database");
            tokio::spawn(conn);
            let row = client
                .query_one("SELECT current_database()", &[])
                .await
                .expect("query");
            let name: String = row.get(0);
            assert_eq!(name, db.name());
        }
    }
}
