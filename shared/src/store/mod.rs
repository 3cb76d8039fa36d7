//! The database port and its adapters.
//!
//! Repository code writes ONE SQL text per statement with named parameters
//! (`:name`) and typed [`Value`]s. The same text runs unchanged through every
//! adapter: direct PostgreSQL ([`postgres::PgDatabase`], which rewrites
//! `:name` to `$n` once per statement) and, later, the RDS Data API (which
//! takes `:name` natively). Rules that keep the text portable:
//! - casts are written `CAST(x AS type)`, never `x::type` (the Data API's
//!   parameter parser does not like `::` next to a parameter);
//! - times travel as [`Value::Timestamp`] and are cast in SQL
//!   (`CAST(:now AS timestamptz)`), and are read back through
//!   [`Row::timestamp`], which accepts a native timestamp or text;
//! - lists travel as JSON text (`jsonb_array_elements_text(CAST(:ids AS jsonb))`),
//!   since the Data API has no array parameters.

mod connect;
pub mod data_api;
mod named;
mod origin;
pub mod postgres;
mod retention;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use uuid::Uuid;

pub use connect::{ConnectError, connect_from_env, connect_with_aws, data_api_target};
pub use named::{NamedSql, ParseError, split_statements};
pub use origin::WithOrigin;
pub use retention::Retention;
pub(crate) use retention::{purge_archived_statement, purge_once, purge_with};

/// One SQL statement of a repository: a stable name for errors, logs and
/// metrics, and the SQL text with `:name` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Statement {
    /// Stable, dotted name, e.g. `inbox.insert_if_new`.
    pub name: &'static str,
    /// SQL text with named parameters.
    pub sql: &'static str,
}

impl Statement {
    /// A statement known at compile time.
    pub const fn new(name: &'static str, sql: &'static str) -> Self {
        Self { name, sql }
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A typed value, as a parameter or a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL (of any type).
    Null,
    /// text / varchar.
    Text(String),
    /// bigint (smaller integer columns are read into it too).
    BigInt(i64),
    /// boolean.
    Bool(bool),
    /// timestamptz, always UTC on our side.
    Timestamp(DateTime<Utc>),
    /// uuid.
    Uuid(Uuid),
    /// json / jsonb.
    Json(serde_json::Value),
    /// bytea.
    Bytes(Vec<u8>),
}

impl Value {
    /// The kind of the value, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Text(_) => "text",
            Value::BigInt(_) => "bigint",
            Value::Bool(_) => "bool",
            Value::Timestamp(_) => "timestamptz",
            Value::Uuid(_) => "uuid",
            Value::Json(_) => "json",
            Value::Bytes(_) => "bytes",
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Value::$variant(v.into())
            }
        }
    )*};
}

value_from!(
    String => Text,
    &str => Text,
    i64 => BigInt,
    i32 => BigInt,
    u32 => BigInt,
    bool => Bool,
    DateTime<Utc> => Timestamp,
    Uuid => Uuid,
    serde_json::Value => Json,
    Vec<u8> => Bytes,
    &[u8] => Bytes,
);

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// Named parameters of one execution, in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(Vec<(&'static str, Value)>);

impl Params {
    /// No parameters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `:name = value` (builder style).
    pub fn with(mut self, name: &'static str, value: impl Into<Value>) -> Self {
        self.0.push((name, value.into()));
        self
    }

    /// The value bound to `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// All parameters in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.0.iter().map(|(n, v)| (*n, v))
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Shorthand: `params! { "id" => id, "now" => now }`.
#[macro_export]
macro_rules! params {
    () => { $crate::store::Params::new() };
    ($($name:literal => $value:expr),+ $(,)?) => {
        $crate::store::Params::new()$(.with($name, $value))+
    };
}

/// The result of one statement: its rows (possibly none) and how many rows
/// it changed (for INSERT/UPDATE/DELETE without RETURNING).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// Result rows, in server order.
    pub rows: Vec<Row>,
    /// Rows affected (for statements with RETURNING, the number returned).
    pub affected: u64,
}

/// One result row: column names shared across the result, typed values.
#[derive(Clone, PartialEq)]
pub struct Row {
    statement: &'static str,
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (c, v) in self.columns.iter().zip(&self.values) {
            map.entry(c, v);
        }
        map.finish()
    }
}

impl Row {
    /// Builds a row (adapters and fakes).
    pub fn new(statement: &'static str, columns: Arc<[String]>, values: Vec<Value>) -> Self {
        Self {
            statement,
            columns,
            values,
        }
    }

    /// The statement that produced the row.
    pub fn statement(&self) -> &'static str {
        self.statement
    }

    /// Column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The raw value of a column.
    pub fn value(&self, column: &str) -> Result<&Value, DbError> {
        self.columns
            .iter()
            .position(|c| c == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| self.decode_error(column, "no such column in the result".into()))
    }

    fn decode_error(&self, column: &str, detail: String) -> DbError {
        DbError::Decode {
            statement: self.statement,
            column: column.to_string(),
            detail,
        }
    }

    fn mismatch(&self, column: &str, want: &str, got: &Value) -> DbError {
        self.decode_error(column, format!("expected {want}, found {}", got.kind()))
    }

    /// A non-null text column.
    pub fn text(&self, column: &str) -> Result<String, DbError> {
        self.opt_text(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable text column.
    pub fn opt_text(&self, column: &str) -> Result<Option<String>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            other => Err(self.mismatch(column, "text", other)),
        }
    }

    /// A non-null integer column (bigint, integer, smallint; or its text form).
    pub fn i64(&self, column: &str) -> Result<i64, DbError> {
        self.opt_i64(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable integer column.
    pub fn opt_i64(&self, column: &str) -> Result<Option<i64>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::BigInt(n) => Ok(Some(*n)),
            Value::Text(s) => s
                .parse()
                .map(Some)
                .map_err(|_| self.decode_error(column, format!("{s:?} is not an integer"))),
            other => Err(self.mismatch(column, "bigint", other)),
        }
    }

    /// A non-null boolean column.
    pub fn bool(&self, column: &str) -> Result<bool, DbError> {
        match self.value(column)? {
            Value::Bool(b) => Ok(*b),
            other => Err(self.mismatch(column, "bool", other)),
        }
    }

    /// A non-null uuid column (native, or its text form as the Data API returns it).
    pub fn uuid(&self, column: &str) -> Result<Uuid, DbError> {
        self.opt_uuid(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable uuid column.
    pub fn opt_uuid(&self, column: &str) -> Result<Option<Uuid>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Uuid(u) => Ok(Some(*u)),
            Value::Text(s) => Uuid::parse_str(s)
                .map(Some)
                .map_err(|_| self.decode_error(column, format!("{s:?} is not a uuid"))),
            other => Err(self.mismatch(column, "uuid", other)),
        }
    }

    /// A non-null timestamp column.
    pub fn timestamp(&self, column: &str) -> Result<DateTime<Utc>, DbError> {
        self.opt_timestamp(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable timestamp column: native, or text in RFC 3339 or the Data
    /// API's `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC) form.
    pub fn opt_timestamp(&self, column: &str) -> Result<Option<DateTime<Utc>>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Timestamp(t) => Ok(Some(*t)),
            Value::Text(s) => parse_timestamp(s)
                .map(Some)
                .ok_or_else(|| self.decode_error(column, format!("{s:?} is not a timestamp"))),
            other => Err(self.mismatch(column, "timestamptz", other)),
        }
    }

    /// A non-null json column (native, or its text form).
    pub fn json(&self, column: &str) -> Result<serde_json::Value, DbError> {
        self.opt_json(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable json column (native, or its text form).
    pub fn opt_json(&self, column: &str) -> Result<Option<serde_json::Value>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Json(j) => Ok(Some(j.clone())),
            Value::Text(s) => serde_json::from_str(s)
                .map(Some)
                .map_err(|e| self.decode_error(column, format!("invalid json: {e}"))),
            other => Err(self.mismatch(column, "json", other)),
        }
    }

    /// A non-null bytea column.
    pub fn bytes(&self, column: &str) -> Result<Vec<u8>, DbError> {
        self.opt_bytes(column)?
            .ok_or_else(|| self.decode_error(column, "unexpected NULL".into()))
    }

    /// A nullable bytea column.
    pub fn opt_bytes(&self, column: &str) -> Result<Option<Vec<u8>>, DbError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Bytes(b) => Ok(Some(b.clone())),
            other => Err(self.mismatch(column, "bytes", other)),
        }
    }
}

/// `text` within `max` bytes (cut at a character boundary and ended with
/// `…` when cut): how repositories bound a column partner input or an error
/// message could grow (the row budget of the Data API's 64 KB per row).
pub fn cut_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Parses the text forms of a timestamp the adapters may return.
pub(crate) fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    // PostgreSQL's text output of timestamptz: `2026-01-02 03:04:05.123456+00`.
    for format in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%z"] {
        if let Ok(t) = DateTime::parse_from_str(s, format) {
            return Some(t.with_timezone(&Utc));
        }
    }
    // The Data API's zone-less UTC form.
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// What went wrong with a statement. Every variant names the statement.
///
/// Contract for callers:
/// - [`DbError::Unavailable`] is retryable: the database could not be reached
///   or could not serve the request right now (connection refused or lost,
///   pool or statement timeout, Aurora Serverless resuming, failover,
///   serialization failure or deadlock). Nothing was committed by a failed
///   COMMIT only if the adapter says so; treat the outcome of a write that
///   failed this way as unknown and rely on idempotency.
/// - [`DbError::Constraint`] is a definite rejection of this data.
/// - [`DbError::Statement`] is a bug or a schema mismatch: retrying will not help.
/// - [`DbError::Decode`] means the statement ran but its result did not have
///   the expected shape.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// Retryable: the database cannot be reached or cannot serve us right now.
    #[error("database unavailable while running {statement}: {reason}")]
    Unavailable {
        /// The statement (or `begin`/`commit`/`rollback`/`connect`).
        statement: &'static str,
        /// What the driver or service reported.
        reason: String,
    },
    /// A constraint rejected the data (unique, check, foreign key, not null).
    #[error("{statement} violated constraint {constraint} (SQLSTATE {code}): {message}")]
    Constraint {
        /// The statement.
        statement: &'static str,
        /// The constraint name, when the server gave one.
        constraint: String,
        /// The SQLSTATE code (class 23).
        code: String,
        /// The server's message.
        message: String,
    },
    /// The statement is wrong (syntax, unknown column, bad parameter, type error).
    #[error("{statement} failed: {message}")]
    Statement {
        /// The statement.
        statement: &'static str,
        /// What was wrong, including the SQLSTATE when there is one.
        message: String,
    },
    /// A result column could not be read as the requested type.
    #[error("cannot decode column {column:?} of {statement}: {detail}")]
    Decode {
        /// The statement.
        statement: &'static str,
        /// The column.
        column: String,
        /// What did not fit.
        detail: String,
    },
}

impl DbError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, DbError::Unavailable { .. })
    }

    /// The server's SQLSTATE, when it gave one: a constraint's code, or the
    /// one either adapter writes into a statement error's message (`(SQLSTATE
    /// P0002)` directly, `SQLState: P0002` through the Data API).
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            DbError::Constraint { code, .. } => Some(code),
            DbError::Statement { message, .. } => {
                ["SQLSTATE ", "SQLState: "].iter().find_map(|tag| {
                    let at = message.find(tag)? + tag.len();
                    message
                        .get(at..at + 5)
                        .filter(|c| c.chars().all(|ch| ch.is_ascii_alphanumeric()))
                })
            }
            _ => None,
        }
    }

    /// The statement the error is about.
    pub fn statement(&self) -> &'static str {
        match self {
            DbError::Unavailable { statement, .. }
            | DbError::Constraint { statement, .. }
            | DbError::Statement { statement, .. }
            | DbError::Decode { statement, .. } => statement,
        }
    }
}

/// Runs statements. Implemented by a database (each statement on its own,
/// autocommitted) and by a transaction (statements inside it).
///
/// Error contract: see [`DbError`]. Implementations must not retry a write on
/// their own (a retried write whose first attempt committed would run twice).
#[async_trait]
pub trait Executor: Send + Sync {
    /// Executes `statement` with `params` bound by name. Every `:name` in the
    /// text must have a parameter; extra parameters are an error too (they
    /// are almost always a typo).
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError>;
}

/// A database: runs statements and opens transactions.
#[async_trait]
pub trait Database: Executor + fmt::Debug {
    /// Starts a transaction. Dropping it without commit rolls it back.
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError>;
}

/// An open transaction. Statements run through [`Executor::execute`].
#[async_trait]
pub trait Transaction: Executor + fmt::Debug {
    /// Commits. On [`DbError::Unavailable`] the outcome is unknown.
    async fn commit(self: Box<Self>) -> Result<(), DbError>;
    /// Rolls back.
    async fn rollback(self: Box<Self>) -> Result<(), DbError>;
    /// What this transaction writes on behalf of, as a JSON object's text
    /// (the outbox's `origin`: the inbox row a processor is processing,
    /// [`crate::outbox::Origin`]), recorded on the outbox rows written
    /// through it. `None` for a plain transaction; [`WithOrigin`] gives one.
    fn origin(&self) -> Option<&str> {
        None
    }
}

/// Convenience: executes and returns the single row, or a decode error
/// naming the statement when there is not exactly one.
pub async fn fetch_one(
    db: &dyn Executor,
    statement: &Statement,
    params: &Params,
) -> Result<Row, DbError> {
    let mut rows = db.execute(statement, params).await?.rows;
    match rows.len() {
        1 => Ok(rows.remove(0)),
        n => Err(DbError::Decode {
            statement: statement.name,
            column: "*".into(),
            detail: format!("expected exactly one row, got {n}"),
        }),
    }
}

/// Convenience: executes and returns the first row, if any.
pub async fn fetch_optional(
    db: &dyn Executor,
    statement: &Statement,
    params: &Params,
) -> Result<Option<Row>, DbError> {
    Ok(db.execute(statement, params).await?.rows.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn row(values: Vec<Value>) -> Row {
        let columns: Arc<[String]> = (0..values.len()).map(|i| format!("c{i}")).collect();
        Row::new("test.stmt", columns, values)
    }

    #[test]
    fn getters_accept_native_and_text_forms() {
        let id = Uuid::now_v7();
        let at = Utc
            .with_ymd_and_hms(2026, 3, 4, 5, 6, 7)
            .single()
            .expect("valid")
            + chrono::Duration::microseconds(123_456);
        let r = row(vec![
            Value::Uuid(id),
            Value::Text(id.to_string()),
            Value::Timestamp(at),
            Value::Text("2026-03-04 05:06:07.123456".into()),
            Value::Text("2026-03-04 06:06:07.123456+01".into()),
            Value::Text("2026-03-04T05:06:07.123456Z".into()),
            Value::Text("42".into()),
            Value::Text("{\"a\":1}".into()),
        ]);
        assert_eq!(r.uuid("c0").expect("uuid"), id);
        assert_eq!(r.uuid("c1").expect("uuid text"), id);
        for c in ["c2", "c3", "c4", "c5"] {
            assert_eq!(r.timestamp(c).expect(c), at, "{c}");
        }
        assert_eq!(r.i64("c6").expect("int text"), 42);
        assert_eq!(r.json("c7").expect("json"), serde_json::json!({"a": 1}));
    }

    #[test]
    fn decode_errors_name_statement_column_and_problem() {
        let r = row(vec![Value::Null, Value::Bool(true)]);
        let e = r.text("c0").expect_err("null");
        assert_eq!(
            e.to_string(),
            "cannot decode column \"c0\" of test.stmt: unexpected NULL"
        );
        let e = r.i64("c1").expect_err("bool");
        assert!(e.to_string().contains("expected bigint, found bool"), "{e}");
        let e = r.text("nope").expect_err("missing");
        assert!(e.to_string().contains("no such column"), "{e}");
        assert_eq!(e.statement(), "test.stmt");
    }

    #[test]
    fn params_macro_binds_by_name() {
        let p = crate::params! { "a" => 1_i64, "b" => "x", "c" => None::<String> };
        assert_eq!(p.get("a"), Some(&Value::BigInt(1)));
        assert_eq!(p.get("b"), Some(&Value::Text("x".into())));
        assert_eq!(p.get("c"), Some(&Value::Null));
        assert_eq!(p.len(), 3);
    }
}
