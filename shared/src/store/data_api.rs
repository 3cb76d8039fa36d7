//! RDS Data API adapter of the database port (crate `aws-sdk-rdsdata`): the
//! production default. No VPC, no connection pool: every statement is one
//! HTTPS call (`ExecuteStatement`), transactions are `BeginTransaction` /
//! `transactionId` / `CommitTransaction` / `RollbackTransaction`.
//!
//! The SQL text is the same as for direct PostgreSQL: the Data API takes
//! `:name` parameters natively. Values travel as Data API fields with type
//! hints (uuid, json and timestamps as strings with `typeHint`), results come
//! back as strings for uuid/json/timestamps, which the row getters accept.
//!
//! The SDK client is built with retries OFF: a retried `ExecuteStatement`
//! whose first attempt committed would run twice. Callers see
//! [`DbError::Unavailable`] and rely on idempotency, as everywhere.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_rdsdata::Client;
use aws_sdk_rdsdata::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_rdsdata::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_rdsdata::primitives::Blob;
use aws_sdk_rdsdata::types::{Field, SqlParameter, TypeHint};

use super::named::StatementCache;
use super::{Database, DbError, Executor, Params, Row, Rows, Statement, Transaction, Value};

/// Where the database is.
#[derive(Clone, PartialEq, Eq)]
pub struct DataApiTarget {
    /// Aurora cluster ARN (`DB_CLUSTER_ARN`).
    pub resource_arn: String,
    /// Secrets Manager ARN of the database credentials (`DB_SECRET_ARN`).
    pub secret_arn: String,
    /// Database name (`DB_NAME`).
    pub database: String,
}

impl fmt::Debug for DataApiTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ARNs are not secret, but the secret's ARN is only worth its name.
        f.debug_struct("DataApiTarget")
            .field("resource_arn", &self.resource_arn)
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

/// Timeouts of the SDK client. The service cancels a statement after 45 s,
/// so the attempt timeout sits just above it: a client that gives up first
/// would leave the statement running with an unknown outcome.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(50);
/// Connecting to the Data API endpoint.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Data API calls made so far, by operation: the cost of each repository
/// operation is observable (and asserted in tests).
#[derive(Debug, Default)]
pub struct CallCounter {
    execute: AtomicU64,
    begin: AtomicU64,
    commit: AtomicU64,
    rollback: AtomicU64,
}

/// A snapshot of [`CallCounter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Calls {
    /// `ExecuteStatement`.
    pub execute: u64,
    /// `BeginTransaction`.
    pub begin: u64,
    /// `CommitTransaction`.
    pub commit: u64,
    /// `RollbackTransaction`.
    pub rollback: u64,
}

impl Calls {
    /// All calls.
    pub fn total(&self) -> u64 {
        self.execute + self.begin + self.commit + self.rollback
    }

    /// Calls made since `earlier`.
    pub fn since(&self, earlier: Calls) -> Calls {
        Calls {
            execute: self.execute - earlier.execute,
            begin: self.begin - earlier.begin,
            commit: self.commit - earlier.commit,
            rollback: self.rollback - earlier.rollback,
        }
    }
}

impl CallCounter {
    fn snapshot(&self) -> Calls {
        Calls {
            execute: self.execute.load(Ordering::Relaxed),
            begin: self.begin.load(Ordering::Relaxed),
            commit: self.commit.load(Ordering::Relaxed),
            rollback: self.rollback.load(Ordering::Relaxed),
        }
    }
}

struct Inner {
    client: Client,
    target: DataApiTarget,
    statements: StatementCache,
    calls: CallCounter,
}

/// The Data API database.
#[derive(Clone)]
pub struct DataApiDatabase {
    inner: Arc<Inner>,
}

impl fmt::Debug for DataApiDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataApiDatabase")
            .field("target", &self.inner.target)
            .finish_non_exhaustive()
    }
}

/// SDK settings every client of ours uses: our timeouts, no retries.
fn tune(builder: aws_sdk_rdsdata::config::Builder) -> aws_sdk_rdsdata::config::Builder {
    builder
        .timeout_config(
            aws_sdk_rdsdata::config::timeout::TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                .operation_timeout(ATTEMPT_TIMEOUT + Duration::from_secs(5))
                .build(),
        )
        .retry_config(aws_sdk_rdsdata::config::retry::RetryConfig::disabled())
}

impl DataApiDatabase {
    /// A database reached through `client`.
    pub fn new(client: Client, target: DataApiTarget) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                target,
                statements: StatementCache::default(),
                calls: CallCounter::default(),
            }),
        }
    }

    /// A client configured from the environment (region, credentials, and
    /// `AWS_ENDPOINT_URL_RDS_DATA` when set), with our timeouts and no retries.
    pub async fn from_aws_env(target: DataApiTarget) -> Self {
        let shared = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Self::from_sdk_config(&shared, target)
    }

    /// A client from an AWS configuration already loaded (shared with the
    /// function's other clients), with our timeouts and no retries.
    pub fn from_sdk_config(shared: &aws_config::SdkConfig, target: DataApiTarget) -> Self {
        let config = tune(aws_sdk_rdsdata::config::Builder::from(shared)).build();
        Self::new(Client::from_conf(config), target)
    }

    /// A client for a local Data API server (`tools/local-data-api`) at
    /// `endpoint`, with dummy credentials. For tests and the local stack.
    pub fn local(endpoint: &str, target: DataApiTarget) -> Self {
        let config = tune(
            aws_sdk_rdsdata::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .endpoint_url(endpoint)
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("local", "local", None, None, "local")),
        )
        .build();
        Self::new(Client::from_conf(config), target)
    }

    /// Calls made so far.
    pub fn calls(&self) -> Calls {
        self.inner.calls.snapshot()
    }
}

fn timestamp_text(t: &chrono::DateTime<chrono::Utc>) -> String {
    // The TIMESTAMP hint's documented form, in UTC, keeping microseconds.
    t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

fn parameter(name: &str, value: &Value) -> SqlParameter {
    let builder = SqlParameter::builder().name(name);
    let builder = match value {
        Value::Null => builder.value(Field::IsNull(true)),
        Value::Text(s) => builder.value(Field::StringValue(s.clone())),
        Value::BigInt(n) => builder.value(Field::LongValue(*n)),
        Value::Bool(b) => builder.value(Field::BooleanValue(*b)),
        Value::Timestamp(t) => builder
            .value(Field::StringValue(timestamp_text(t)))
            .type_hint(TypeHint::Timestamp),
        Value::Uuid(u) => builder
            .value(Field::StringValue(u.to_string()))
            .type_hint(TypeHint::Uuid),
        Value::Json(j) => builder
            .value(Field::StringValue(j.to_string()))
            .type_hint(TypeHint::Json),
        Value::Bytes(b) => builder.value(Field::BlobValue(Blob::new(b.clone()))),
    };
    builder.build()
}

fn field_value(statement: &'static str, column: &str, field: &Field) -> Result<Value, DbError> {
    let unsupported = |what: &str| DbError::Decode {
        statement,
        column: column.to_string(),
        detail: format!(
            "{what} is not carried by the database port; CAST it to bigint or text in SQL"
        ),
    };
    Ok(match field {
        Field::IsNull(_) => Value::Null,
        Field::BooleanValue(b) => Value::Bool(*b),
        Field::LongValue(n) => Value::BigInt(*n),
        Field::StringValue(s) => Value::Text(s.clone()),
        Field::BlobValue(b) => Value::Bytes(b.clone().into_inner()),
        Field::DoubleValue(_) => return Err(unsupported("a double")),
        Field::ArrayValue(_) => return Err(unsupported("an array")),
        _ => return Err(unsupported("an unknown field kind")),
    })
}

/// The SQLSTATE in a Data API error message (`…; SQLState: 23505`).
fn sqlstate(message: &str) -> Option<&str> {
    let at = message.find("SQLState: ")? + "SQLState: ".len();
    message
        .get(at..at + 5)
        .filter(|c| c.chars().all(|ch| ch.is_ascii_alphanumeric()))
}

/// The constraint name in a PostgreSQL message (`… constraint "inbox_pkey"`).
fn constraint_name(message: &str) -> String {
    message
        .split("constraint \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("")
        .to_string()
}

/// Maps an SDK error onto the port's error contract.
fn sdk_error<E, R>(statement: &'static str, e: SdkError<E, R>) -> DbError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    let unavailable = |reason: String| DbError::Unavailable { statement, reason };
    match &e {
        SdkError::ServiceError(ctx) => {
            let err = ctx.err();
            let code = err.code().unwrap_or("");
            let message = err.message().unwrap_or("").to_string();
            let described = if message.is_empty() {
                code.to_string()
            } else {
                format!("{code}: {message}")
            };
            match code {
                "DatabaseResumingException"
                | "DatabaseUnavailableException"
                | "ServiceUnavailableError"
                | "StatementTimeoutException"
                | "InternalServerErrorException"
                | "ThrottlingException"
                | "TooManyRequestsException"
                // the transaction idled out (3 min) or was lost with its
                // connection: the unit of work can be retried from the start
                | "TransactionNotFoundException"
                | "NotFoundException" => unavailable(described),
                "DatabaseErrorException" | "BadRequestException" => {
                    if message.contains("Communications link failure") {
                        return unavailable(described);
                    }
                    match sqlstate(&message) {
                        Some(code) if code.starts_with("23") => DbError::Constraint {
                            statement,
                            constraint: constraint_name(&message),
                            code: code.to_string(),
                            message,
                        },
                        Some(code)
                            if code.starts_with("08")
                                || code.starts_with("53")
                                || ["40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "25006"]
                                    .contains(&code) =>
                        {
                            unavailable(described)
                        }
                        _ => DbError::Statement {
                            statement,
                            message: described,
                        },
                    }
                }
                _ => DbError::Statement {
                    statement,
                    message: if described.is_empty() {
                        format!("Data API error: {e}")
                    } else {
                        described
                    },
                },
            }
        }
        SdkError::ConstructionFailure(_) => DbError::Statement {
            statement,
            message: format!(
                "cannot build the Data API request: {}",
                crate::error_chain(&e)
            ),
        },
        // timeouts, connection failures, unparseable responses: the outcome
        // of the call is unknown and the service may be fine a moment later
        _ => unavailable(format!("Data API call failed: {}", crate::error_chain(&e))),
    }
}

impl Inner {
    async fn execute(
        &self,
        statement: &Statement,
        params: &Params,
        transaction_id: Option<&str>,
    ) -> Result<Rows, DbError> {
        let named = self.statements.get(statement)?;
        named.check(statement, params)?;
        let parameters: Vec<SqlParameter> =
            params.iter().map(|(name, v)| parameter(name, v)).collect();
        self.calls.execute.fetch_add(1, Ordering::Relaxed);
        let output = self
            .client
            .execute_statement()
            .resource_arn(&self.target.resource_arn)
            .secret_arn(&self.target.secret_arn)
            .database(&self.target.database)
            .sql(statement.sql)
            .set_parameters(Some(parameters))
            .set_transaction_id(transaction_id.map(str::to_string))
            .include_result_metadata(true)
            .send()
            .await
            .map_err(|e| sdk_error(statement.name, e))?;
        let columns: Arc<[String]> = output
            .column_metadata()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.name()
                    .map_or_else(|| format!("column{i}"), str::to_string)
            })
            .collect();
        let mut rows = Vec::with_capacity(output.records().len());
        for record in output.records() {
            let values = record
                .iter()
                .zip(columns.iter())
                .map(|(field, column)| field_value(statement.name, column, field))
                .collect::<Result<Vec<_>, _>>()?;
            if values.len() != columns.len() {
                return Err(DbError::Decode {
                    statement: statement.name,
                    column: "*".into(),
                    detail: format!(
                        "a record has {} fields for {} columns",
                        record.len(),
                        columns.len()
                    ),
                });
            }
            rows.push(Row::new(statement.name, columns.clone(), values));
        }
        // The service reports 0 updated records for statements that return a
        // result set; the port promises the number of rows returned then.
        let affected = if rows.is_empty() && columns.is_empty() {
            u64::try_from(output.number_of_records_updated()).unwrap_or(0)
        } else {
            rows.len() as u64
        };
        Ok(Rows { rows, affected })
    }
}

#[async_trait]
impl Executor for DataApiDatabase {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.inner.execute(statement, params, None).await
    }
}

#[async_trait]
impl Database for DataApiDatabase {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.inner.calls.begin.fetch_add(1, Ordering::Relaxed);
        let output = self
            .inner
            .client
            .begin_transaction()
            .resource_arn(&self.inner.target.resource_arn)
            .secret_arn(&self.inner.target.secret_arn)
            .database(&self.inner.target.database)
            .send()
            .await
            .map_err(|e| sdk_error("begin", e))?;
        let id = output
            .transaction_id()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| DbError::Unavailable {
                statement: "begin",
                reason: "BeginTransaction returned no transaction id".into(),
            })?
            .to_string();
        Ok(Box::new(DataApiTransaction {
            inner: self.inner.clone(),
            id,
            finished: AtomicBool::new(false),
        }))
    }
}

/// A Data API transaction. Dropped without commit or rollback, a rollback is
/// sent in the background (and the service rolls back an idle transaction
/// after 3 minutes anyway).
struct DataApiTransaction {
    inner: Arc<Inner>,
    id: String,
    finished: AtomicBool,
}

impl fmt::Debug for DataApiTransaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataApiTransaction")
            .field("id", &self.id)
            .field("finished", &self.finished.load(Ordering::Relaxed))
            .finish()
    }
}

impl DataApiTransaction {
    fn ensure_open(&self, statement: &'static str) -> Result<(), DbError> {
        if self.finished.load(Ordering::Acquire) {
            Err(DbError::Statement {
                statement,
                message: "transaction already finished".into(),
            })
        } else {
            Ok(())
        }
    }
}

async fn rollback(inner: &Inner, id: &str) -> Result<(), DbError> {
    inner.calls.rollback.fetch_add(1, Ordering::Relaxed);
    inner
        .client
        .rollback_transaction()
        .resource_arn(&inner.target.resource_arn)
        .secret_arn(&inner.target.secret_arn)
        .transaction_id(id)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| sdk_error("rollback", e))
}

#[async_trait]
impl Executor for DataApiTransaction {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.ensure_open(statement.name)?;
        self.inner.execute(statement, params, Some(&self.id)).await
    }
}

#[async_trait]
impl Transaction for DataApiTransaction {
    async fn commit(self: Box<Self>) -> Result<(), DbError> {
        self.ensure_open("commit")?;
        self.finished.store(true, Ordering::Release);
        self.inner.calls.commit.fetch_add(1, Ordering::Relaxed);
        self.inner
            .client
            .commit_transaction()
            .resource_arn(&self.inner.target.resource_arn)
            .secret_arn(&self.inner.target.secret_arn)
            .transaction_id(&self.id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| sdk_error("commit", e))
    }

    async fn rollback(self: Box<Self>) -> Result<(), DbError> {
        self.ensure_open("rollback")?;
        self.finished.store(true, Ordering::Release);
        rollback(&self.inner, &self.id).await
    }
}

impl Drop for DataApiTransaction {
    fn drop(&mut self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            let id = std::mem::take(&mut self.id);
            handle.spawn(async move {
                if let Err(e) = rollback(&inner, &id).await {
                    tracing::warn!(error = %e, "rollback of an abandoned transaction failed; the service rolls it back after its idle timeout");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn timestamps_use_the_hint_format_in_utc_with_microseconds() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 6, 1, 12, 0, 5)
            .single()
            .expect("valid")
            + chrono::Duration::microseconds(7);
        assert_eq!(timestamp_text(&t), "2026-06-01 12:00:05.000007");
        let back = super::super::parse_timestamp(&timestamp_text(&t)).expect("parses");
        assert_eq!(back, t);
    }

    #[test]
    fn sqlstate_and_constraint_are_read_from_service_messages() {
        let m = "ERROR: duplicate key value violates unique constraint \"inbox_partner_event_id_key\"\n  Detail: Key (partner, event_id)=(a, b) already exists.; SQLState: 23505";
        assert_eq!(sqlstate(m), Some("23505"));
        assert_eq!(constraint_name(m), "inbox_partner_event_id_key");
        assert_eq!(sqlstate("no state here"), None);
        assert_eq!(sqlstate("SQLState: 4"), None);
    }
}
