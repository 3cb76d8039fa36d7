//! Connections: one deadpool pool per PostgreSQL database, made lazily from
//! `DATABASE_URL` with the database name swapped. Every connection runs with
//! `TimeZone=UTC` and the statement timeout, and is cleaned before reuse
//! (an open transaction rolled back, session settings reset), so one call
//! never sees the session state of another, as on the real service where
//! consecutive calls may land on different connections.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};

use crate::error::{Error, ServiceError};

/// Run on a pooled connection before it is handed out again: ends whatever
/// transaction a statement may have left open (`BEGIN` sent through
/// ExecuteStatement), then resets the session like deadpool's `Clean`.
const RECYCLE_SQL: &str = "ROLLBACK; CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; \
                           UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD TEMP; \
                           DISCARD SEQUENCES;";

/// Connection settings shared by all pools.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    pub statement_timeout: Duration,
    pub connect_timeout: Duration,
    pub max_connections: usize,
}

/// The pools, by database name.
pub(crate) struct Databases {
    base: tokio_postgres::Config,
    default_database: String,
    settings: PoolSettings,
    pools: Mutex<HashMap<String, Pool>>,
}

impl fmt::Debug for Databases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Databases")
            .field("target", &describe(&self.base))
            .field("default_database", &self.default_database)
            .finish_non_exhaustive()
    }
}

/// `host:port` for logs and messages, never credentials.
pub(crate) fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

impl Databases {
    /// Reads `url`; connects to nothing yet.
    pub(crate) fn new(url: &str, settings: PoolSettings) -> Result<Self, Error> {
        let mut base =
            tokio_postgres::Config::from_str(url).map_err(|e| Error::InvalidDatabaseUrl {
                detail: e.to_string(),
            })?;
        // PostgreSQL's own default database is the user name.
        let default_database = base
            .get_dbname()
            .or(base.get_user())
            .unwrap_or("postgres")
            .to_string();
        let mut options = base.get_options().unwrap_or("").to_string();
        if !options.is_empty() {
            options.push(' ');
        }
        options.push_str(&format!(
            "-c TimeZone=UTC -c statement_timeout={}",
            settings.statement_timeout.as_millis()
        ));
        base.options(options);
        base.connect_timeout(settings.connect_timeout);
        if base.get_application_name().is_none() {
            base.application_name("local-data-api");
        }
        Ok(Self {
            base,
            default_database,
            settings,
            pools: Mutex::default(),
        })
    }

    /// Where the server is, for the startup log line.
    pub(crate) fn target(&self) -> String {
        format!("{}/{}", describe(&self.base), self.default_database)
    }

    /// The database a request names, or the URL's one when it names none.
    pub(crate) fn resolve<'a>(&'a self, database: Option<&'a str>) -> &'a str {
        match database {
            Some(name) if !name.is_empty() => name,
            _ => &self.default_database,
        }
    }

    fn pool(&self, database: &str) -> Result<Pool, ServiceError> {
        let mut pools = self
            .pools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(pool) = pools.get(database) {
            return Ok(pool.clone());
        }
        let mut config = self.base.clone();
        config.dbname(database);
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Custom(RECYCLE_SQL.to_string()),
            },
        );
        let timeout = Some(self.settings.connect_timeout);
        let pool = Pool::builder(manager)
            .max_size(self.settings.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(timeout)
            .create_timeout(timeout)
            .recycle_timeout(timeout)
            .build()
            .map_err(|e| {
                ServiceError::InternalServerError(
                    Error::Pool {
                        database: database.to_string(),
                        detail: e.to_string(),
                    }
                    .to_string(),
                )
            })?;
        pools.insert(database.to_string(), pool.clone());
        Ok(pool)
    }

    /// A connection to `database` (already resolved).
    pub(crate) async fn connection(&self, database: &str) -> Result<Object, ServiceError> {
        let pool = self.pool(database)?;
        pool.get()
            .await
            .map_err(|e| ServiceError::from_pool(database, &e))
    }
}

/// Closes a connection instead of returning it to the pool: used when its
/// state is unknown (a call on it never finished, or ending its transaction
/// failed).
pub(crate) fn discard(connection: Object) {
    drop(Object::take(connection));
}
