//! Direct PostgreSQL adapter of the database port: tokio-postgres behind a
//! deadpool pool. Used for local runs, tests, and RDS Proxy users.
//!
//! Each statement's `:name` text is rewritten to `$n` once and cached; the
//! prepared statement is cached per connection by the pool.

use std::error::Error as StdError;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::BytesMut;
use chrono::{DateTime, NaiveDateTime, Utc};
use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use futures::TryStreamExt;
use postgres_types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::error::SqlState;
use uuid::Uuid;

use super::named::StatementCache;
use super::{
    Database, DbError, Executor, NamedSql, Params, Row, Rows, Statement, Transaction, Value,
    parse_timestamp,
};

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Maximum connections in the pool.
    pub max_connections: usize,
    /// How long to wait for a free connection or a new one before reporting
    /// the database unavailable.
    pub acquire_timeout: Duration,
    /// Server-side statement timeout (0 = none).
    pub statement_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// The PostgreSQL database.
#[derive(Clone)]
pub struct PgDatabase {
    pool: Pool,
    rewrites: Arc<StatementCache>,
    target: String,
}

impl fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgDatabase")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl PgDatabase {
    /// A pool for `url` (`postgres://user:password@host:port/db?…`). No
    /// connection is made until the first statement.
    pub fn connect(url: &str, options: &PgOptions) -> Result<Self, DbError> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| DbError::Statement {
            statement: "connect",
            message: format!("invalid DATABASE_URL (password not shown): {e}"),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.acquire_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("hookbox");
        }
        if !options.statement_timeout.is_zero() {
            config.options(format!(
                "-c statement_timeout={}",
                options.statement_timeout.as_millis()
            ));
        }
        let target = describe(&config);
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.acquire_timeout))
            .create_timeout(Some(options.acquire_timeout))
            .recycle_timeout(Some(options.acquire_timeout))
            .build()
            .map_err(|e| DbError::Statement {
                statement: "connect",
                message: format!("cannot build the connection pool: {e}"),
            })?;
        Ok(Self {
            pool,
            rewrites: Arc::default(),
            target,
        })
    }

    async fn object(&self, statement: &'static str) -> Result<Object, DbError> {
        self.pool.get().await.map_err(|e| pool_error(statement, e))
    }

    fn rewrite(&self, statement: &Statement) -> Result<Arc<NamedSql>, DbError> {
        self.rewrites.get(statement)
    }

    /// Number of distinct statement texts rewritten so far (for tests of the cache).
    pub fn cached_statements(&self) -> usize {
        self.rewrites.len()
    }
}

/// `host:port/db` for messages, without credentials.
fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or(""))
}

async fn run(
    client: &tokio_postgres::Client,
    named: &NamedSql,
    statement: &Statement,
    params: &Params,
) -> Result<Rows, DbError> {
    let bound = bind(named, statement, params)?;
    let prepared = client
        .prepare(&named.sql)
        .await
        .map_err(|e| pg_error(statement.name, &e))?;
    run_prepared(client, &prepared, statement, &bound).await
}

async fn run_cached(
    client: &deadpool_postgres::Client,
    named: &NamedSql,
    statement: &Statement,
    params: &Params,
) -> Result<Rows, DbError> {
    let bound = bind(named, statement, params)?;
    let prepared = client
        .prepare_cached(&named.sql)
        .await
        .map_err(|e| pg_error(statement.name, &e))?;
    run_prepared(client, &prepared, statement, &bound).await
}

/// Orders the named parameters as `$1..$n`, refusing missing and unused names.
fn bind<'p>(
    named: &'p NamedSql,
    statement: &Statement,
    params: &'p Params,
) -> Result<Vec<PgParam<'p>>, DbError> {
    named.check(statement, params)?;
    Ok(named
        .names
        .iter()
        .filter_map(|name| params.get(name).map(|value| PgParam { name, value }))
        .collect())
}

async fn run_prepared(
    client: &tokio_postgres::Client,
    prepared: &tokio_postgres::Statement,
    statement: &Statement,
    bound: &[PgParam<'_>],
) -> Result<Rows, DbError> {
    let stream = client
        .query_raw(prepared, bound.iter().map(|p| p as &(dyn ToSql + Sync)))
        .await
        .map_err(|e| pg_error(statement.name, &e))?;
    futures::pin_mut!(stream);
    let columns: Arc<[String]> = prepared
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut rows = Vec::new();
    while let Some(row) = stream
        .try_next()
        .await
        .map_err(|e| pg_error(statement.name, &e))?
    {
        rows.push(decode_row(statement.name, &columns, &row)?);
    }
    let affected = stream.rows_affected().unwrap_or(rows.len() as u64);
    Ok(Rows { rows, affected })
}

fn decode_row(
    statement: &'static str,
    columns: &Arc<[String]>,
    row: &tokio_postgres::Row,
) -> Result<Row, DbError> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        values.push(decode_value(statement, row, i, column.type_())?);
    }
    Ok(Row::new(statement, columns.clone(), values))
}

fn decode_value(
    statement: &'static str,
    row: &tokio_postgres::Row,
    i: usize,
    ty: &Type,
) -> Result<Value, DbError> {
    fn get<'a, T: postgres_types::FromSql<'a>>(
        statement: &'static str,
        row: &'a tokio_postgres::Row,
        i: usize,
    ) -> Result<Option<T>, DbError> {
        row.try_get::<_, Option<T>>(i).map_err(|e| DbError::Decode {
            statement,
            column: row.columns()[i].name().to_string(),
            detail: e.to_string(),
        })
    }
    let value = match *ty {
        Type::BOOL => get::<bool>(statement, row, i)?.map(Value::Bool),
        Type::INT2 => get::<i16>(statement, row, i)?.map(|n| Value::BigInt(n.into())),
        Type::INT4 => get::<i32>(statement, row, i)?.map(|n| Value::BigInt(n.into())),
        Type::INT8 => get::<i64>(statement, row, i)?.map(Value::BigInt),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get::<String>(statement, row, i)?.map(Value::Text)
        }
        Type::TIMESTAMPTZ => get::<DateTime<Utc>>(statement, row, i)?.map(Value::Timestamp),
        Type::TIMESTAMP => {
            get::<NaiveDateTime>(statement, row, i)?.map(|t| Value::Timestamp(t.and_utc()))
        }
        Type::UUID => get::<Uuid>(statement, row, i)?.map(Value::Uuid),
        Type::JSON | Type::JSONB => get::<serde_json::Value>(statement, row, i)?.map(Value::Json),
        Type::BYTEA => get::<Vec<u8>>(statement, row, i)?.map(Value::Bytes),
        _ => {
            return Err(DbError::Decode {
                statement,
                column: row.columns()[i].name().to_string(),
                detail: format!(
                    "type {ty} is not carried by the database port; CAST it to bigint or text in SQL"
                ),
            });
        }
    };
    Ok(value.unwrap_or(Value::Null))
}

/// One parameter on its way to PostgreSQL. The server decides the type of
/// each `$n` when the statement is prepared; this converts our value to it
/// (text to uuid/json/timestamptz, bigint to integer, …) or refuses with an
/// error naming the parameter.
#[derive(Debug)]
struct PgParam<'a> {
    name: &'a str,
    value: &'a Value,
}

type BoxError = Box<dyn StdError + Sync + Send>;

impl PgParam<'_> {
    fn refuse(&self, ty: &Type) -> BoxError {
        format!(
            "parameter :{} is {} but the statement needs {ty}",
            self.name,
            self.value.kind()
        )
        .into()
    }

    fn bad(&self, what: &str) -> BoxError {
        format!("parameter :{} is not {what}", self.name).into()
    }
}

impl ToSql for PgParam<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let is_text = matches!(
            *ty,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
        );
        match self.value {
            Value::Null => Ok(IsNull::Yes),
            Value::Text(s) => match *ty {
                _ if is_text => s.as_str().to_sql(ty, out),
                Type::JSON => {
                    serde_json::from_str::<serde_json::Value>(s).map_err(|_| self.bad("json"))?;
                    out.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                Type::JSONB => {
                    serde_json::from_str::<serde_json::Value>(s).map_err(|_| self.bad("json"))?;
                    out.extend_from_slice(&[1]);
                    out.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                Type::UUID => Uuid::parse_str(s)
                    .map_err(|_| self.bad("a uuid"))?
                    .to_sql(ty, out),
                Type::TIMESTAMPTZ => parse_timestamp(s)
                    .ok_or_else(|| self.bad("a timestamp"))?
                    .to_sql(ty, out),
                Type::INT8 => s
                    .parse::<i64>()
                    .map_err(|_| self.bad("an integer"))?
                    .to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::BigInt(n) => match *ty {
                Type::INT8 => n.to_sql(ty, out),
                Type::INT4 => i32::try_from(*n)
                    .map_err(|_| self.bad("in the integer range"))?
                    .to_sql(ty, out),
                Type::INT2 => i16::try_from(*n)
                    .map_err(|_| self.bad("in the smallint range"))?
                    .to_sql(ty, out),
                Type::FLOAT8 => (*n as f64).to_sql(ty, out),
                _ if is_text => n.to_string().as_str().to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::Timestamp(t) => match *ty {
                Type::TIMESTAMPTZ => t.to_sql(ty, out),
                Type::TIMESTAMP => t.naive_utc().to_sql(ty, out),
                _ if is_text => t
                    .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                    .as_str()
                    .to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::Uuid(u) => match *ty {
                Type::UUID => u.to_sql(ty, out),
                _ if is_text => u.to_string().as_str().to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::Json(j) => match *ty {
                Type::JSON | Type::JSONB => j.to_sql(ty, out),
                _ if is_text => j.to_string().as_str().to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
            Value::Bytes(b) => match *ty {
                Type::BYTEA => b.as_slice().to_sql(ty, out),
                _ => Err(self.refuse(ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn pool_error(statement: &'static str, e: PoolError) -> DbError {
    match e {
        PoolError::Backend(e) => pg_error(statement, &e),
        other => DbError::Unavailable {
            statement,
            reason: format!("connection pool: {other}"),
        },
    }
}

/// Maps a driver error onto the port's error contract.
fn pg_error(statement: &'static str, e: &tokio_postgres::Error) -> DbError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let class = &code.code()[..2];
        let message = format!("{} (SQLSTATE {})", db.message(), code.code());
        let transient = [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::QUERY_CANCELED,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::READ_ONLY_SQL_TRANSACTION, // failover: writer became a reader
        ];
        return if class == "08" || class == "53" || transient.contains(code) {
            DbError::Unavailable {
                statement,
                reason: message,
            }
        } else if class == "23" {
            DbError::Constraint {
                statement,
                constraint: db.constraint().unwrap_or("").to_string(),
                code: code.code().to_string(),
                message: db.message().to_string(),
            }
        } else {
            let detail = db.detail().map(|d| format!("; {d}")).unwrap_or_default();
            DbError::Statement {
                statement,
                message: format!("{message}{detail}"),
            }
        };
    }
    let mut message = e.to_string();
    let mut source = e.source();
    let mut io = false;
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        io |= s.is::<std::io::Error>();
        source = s.source();
    }
    if e.is_closed() || io || message.contains("timed out") || message.contains("connection") {
        DbError::Unavailable {
            statement,
            reason: message,
        }
    } else {
        DbError::Statement { statement, message }
    }
}

#[async_trait]
impl Executor for PgDatabase {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        let named = self.rewrite(statement)?;
        let client = self.object(statement.name).await?;
        run_cached(&client, &named, statement, params).await
    }
}

#[async_trait]
impl Database for PgDatabase {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        let client = self.object("begin").await?;
        client
            .batch_execute("BEGIN")
            .await
            .map_err(|e| pg_error("begin", &e))?;
        Ok(Box::new(PgTransaction {
            db: self.clone(),
            client: Some(client),
        }))
    }
}

/// A transaction on one pooled connection. Dropped without commit or
/// rollback, the connection is taken out of the pool and closed, which makes
/// the server roll the transaction back.
struct PgTransaction {
    db: PgDatabase,
    client: Option<Object>,
}

impl fmt::Debug for PgTransaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgTransaction")
            .field("db", &self.db)
            .field("open", &self.client.is_some())
            .finish()
    }
}

impl PgTransaction {
    fn client(&self, statement: &'static str) -> Result<&Object, DbError> {
        self.client.as_ref().ok_or(DbError::Statement {
            statement,
            message: "transaction already finished".into(),
        })
    }

    async fn finish(mut self: Box<Self>, sql: &'static str) -> Result<(), DbError> {
        let statement = if sql == "COMMIT" {
            "commit"
        } else {
            "rollback"
        };
        let client = self.client.take().ok_or(DbError::Statement {
            statement,
            message: "transaction already finished".into(),
        })?;
        match client.batch_execute(sql).await {
            Ok(()) => Ok(()),
            Err(e) => {
                // The connection's state is unknown: do not give it back.
                drop(Object::take(client));
                Err(pg_error(statement, &e))
            }
        }
    }
}

impl Drop for PgTransaction {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

#[async_trait]
impl Executor for PgTransaction {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        let named = self.db.rewrite(statement)?;
        let client = self.client(statement.name)?;
        // Inside a transaction a failed statement aborts the transaction;
        // the caller must roll back, which the error makes clear enough.
        if named.names.is_empty() && params.is_empty() && is_utility(&named.sql) {
            // DDL (migrations) cannot always be prepared with parameters and
            // gains nothing from caching.
            return run(client, &named, statement, params).await;
        }
        run_cached(client, &named, statement, params).await
    }
}

/// Statements whose plans are not worth caching per connection.
fn is_utility(sql: &str) -> bool {
    let head = sql
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    matches!(
        head.as_str(),
        "CREATE" | "ALTER" | "DROP" | "COMMENT" | "GRANT" | "REVOKE" | "TRUNCATE" | "DO"
    )
}

#[async_trait]
impl Transaction for PgTransaction {
    async fn commit(self: Box<Self>) -> Result<(), DbError> {
        self.finish("COMMIT").await
    }

    async fn rollback(self: Box<Self>) -> Result<(), DbError> {
        self.finish("ROLLBACK").await
    }
}
