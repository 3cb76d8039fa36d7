//! The five operations: request checks, choosing the connection (pooled or
//! the transaction's), time guards, and what happens to the connection when
//! something fails.

use std::future::Future;
use std::time::Duration;

use hookbox::store::NamedSql;

use crate::db::{Databases, discard};
use crate::error::ServiceError;
use crate::execute::{self, ResultOptions};
use crate::params::{self, Bound};
use crate::pause::Pause;
use crate::transactions::{Transactions, TxGuard};
use crate::wire::{
    BatchExecuteStatementRequest, BatchExecuteStatementResponse, BeginTransactionRequest,
    BeginTransactionResponse, EndTransactionRequest, EndTransactionResponse,
    ExecuteStatementRequest, ExecuteStatementResponse, ResultSetOptions, SqlParameter,
    UpdateResult,
};

/// The model's limit on `sql`.
const MAX_SQL_CHARS: usize = 65_536;
/// The model's limit on `database`.
const MAX_DATABASE_CHARS: usize = 64;
/// Added to the statement timeout for the client-side guard: PostgreSQL
/// cancels a slow statement itself; the guard only catches a server that
/// stopped answering.
const GUARD_MARGIN: Duration = Duration::from_secs(5);

/// The operations over the pools and the open transactions.
#[derive(Debug)]
pub(crate) struct Service {
    pub dbs: Databases,
    pub pause: Pause,
    pub txs: Transactions,
    pub statement_timeout: Duration,
}

/// `Some(s)` when the member is present and not empty.
fn present(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|s| !s.is_empty())
}

fn require<'a>(value: Option<&'a String>, member: &str) -> Result<&'a str, ServiceError> {
    present(value).ok_or_else(|| {
        ServiceError::BadRequest(format!("{member} is required and must not be empty"))
    })
}

fn check_common(
    resource_arn: Option<&String>,
    secret_arn: Option<&String>,
    database: Option<&String>,
) -> Result<(), ServiceError> {
    require(resource_arn, "resourceArn")?;
    require(secret_arn, "secretArn")?;
    if let Some(db) = database {
        if db.chars().count() > MAX_DATABASE_CHARS {
            return Err(ServiceError::BadRequest(format!(
                "database {db:?} is longer than {MAX_DATABASE_CHARS} characters"
            )));
        }
    }
    Ok(())
}

fn parse_sql(sql: Option<&String>) -> Result<NamedSql, ServiceError> {
    let sql = require(sql, "sql")?;
    if sql.chars().count() > MAX_SQL_CHARS {
        return Err(ServiceError::BadRequest(format!(
            "sql is longer than {MAX_SQL_CHARS} characters"
        )));
    }
    NamedSql::parse(sql)
        .map_err(|e| ServiceError::BadRequest(format!("cannot read the SQL statement: {e}")))
}

fn transaction_not_found(id: &str) -> ServiceError {
    ServiceError::TransactionNotFound(format!("Transaction {id} is not found"))
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!("Transaction {id} is not found"))
}

/// A two-valued member: absent or `off` is false, `on` is true, anything
/// else is refused naming both.
fn switch(
    member: &str,
    value: Option<&str>,
    (off, on): (&str, &str),
) -> Result<bool, ServiceError> {
    match value {
        None => Ok(false),
        Some(v) if v == off => Ok(false),
        Some(v) if v == on => Ok(true),
        Some(other) => Err(ServiceError::BadRequest(format!(
            "{member} must be {off} or {on}, not {other:?}"
        ))),
    }
}

/// Checks an `ExecuteStatement` request before any connection is used: its
/// members, its SQL (named parameters) and its parameters, bound.
fn prepare_execute(
    request: &ExecuteStatementRequest,
) -> Result<(NamedSql, Bound, ResultOptions), ServiceError> {
    check_common(
        request.resource_arn.as_ref(),
        request.secret_arn.as_ref(),
        request.database.as_ref(),
    )?;
    let named = parse_sql(request.sql.as_ref())?;
    let bound = params::bind(&named, request.parameters.as_deref().unwrap_or_default())?;
    let no_options = ResultSetOptions::default();
    let result_set = request.result_set_options.as_ref().unwrap_or(&no_options);
    let options = ResultOptions {
        include_metadata: request.include_result_metadata.unwrap_or(false),
        json: switch(
            "formatRecordsAs",
            request.format_records_as.as_deref(),
            ("NONE", "JSON"),
        )?,
        long_as_string: switch(
            "longReturnType",
            result_set.long_return_type.as_deref(),
            ("LONG", "STRING"),
        )?,
        decimal_as_number: switch(
            "decimalReturnType",
            result_set.decimal_return_type.as_deref(),
            ("STRING", "DOUBLE_OR_LONG"),
        )?,
    };
    Ok((named, bound, options))
}

/// Checks a `BatchExecuteStatement` request before any connection is used.
fn prepare_batch(
    request: &BatchExecuteStatementRequest,
) -> Result<(NamedSql, Vec<Bound>), ServiceError> {
    check_common(
        request.resource_arn.as_ref(),
        request.secret_arn.as_ref(),
        request.database.as_ref(),
    )?;
    let named = parse_sql(request.sql.as_ref())?;
    let sets: &[Vec<SqlParameter>] = request.parameter_sets.as_deref().unwrap_or_default();
    let bound: Vec<Bound> = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            params::bind(&named, set).map_err(|e| match e {
                ServiceError::BadRequest(m) => {
                    ServiceError::BadRequest(format!("parameter set #{}: {m}", i + 1))
                }
                other => other,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((named, bound))
}

/// The checks a request passes before the database is touched, on the raw
/// body of the operation at `path` (`/Execute`, `/BatchExecute`,
/// `/BeginTransaction`, `/CommitTransaction`, `/RollbackTransaction`):
/// decoding, members, SQL and parameters. What the server answers a bad
/// request comes from here.
pub(crate) fn check_request(path: &str, body: &[u8]) -> Result<(), ServiceError> {
    match path {
        "/Execute" => prepare_execute(&decode::<ExecuteStatementRequest>(body)?).map(drop),
        "/BatchExecute" => prepare_batch(&decode::<BatchExecuteStatementRequest>(body)?).map(drop),
        "/BeginTransaction" => {
            let request: BeginTransactionRequest = decode(body)?;
            check_common(
                request.resource_arn.as_ref(),
                request.secret_arn.as_ref(),
                request.database.as_ref(),
            )
        }
        "/CommitTransaction" | "/RollbackTransaction" => {
            let request: EndTransactionRequest = decode(body)?;
            check_common(
                request.resource_arn.as_ref(),
                request.secret_arn.as_ref(),
                None,
            )?;
            require(request.transaction_id.as_ref(), "transactionId").map(drop)
        }
        other => Err(ServiceError::BadRequest(format!(
            "no Data API operation at {other}"
        ))),
    }
}

/// Decodes a request body (an empty body is an empty request).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ServiceError> {
    if bytes.is_empty() {
        return serde_json::from_slice(b"{}")
            .map_err(|e| ServiceError::BadRequest(format!("empty request body: {e}")));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ServiceError::BadRequest(format!("the request body is not valid: {e}")))
}

impl Service {
    fn guard_timeout(&self) -> Duration {
        self.statement_timeout + GUARD_MARGIN
    }

    /// Runs `work` under the guard timeout; a timeout is reported as the
    /// database being unavailable (the connection is then discarded).
    async fn guarded<T>(
        &self,
        work: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ServiceError> {
        let limit = self.guard_timeout();
        tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
            Err(ServiceError::DatabaseUnavailable(format!(
                "the database did not answer within {limit:?}"
            )))
        })
    }

    /// The connection a call runs on: the transaction's (waiting for
    /// exclusive use of it) or a pooled one of `database` (autocommit).
    async fn connection(
        &self,
        transaction_id: Option<&str>,
        database: Option<&str>,
    ) -> Result<Connection, ServiceError> {
        match transaction_id {
            Some(id) => {
                let guard = self
                    .txs
                    .acquire(id)
                    .await
                    .ok_or_else(|| transaction_not_found(id))?;
                if guard.connection().is_none() {
                    return Err(transaction_not_found(id));
                }
                Ok(Connection::Transaction(guard))
            }
            None => {
                let database = self.dbs.resolve(database).to_string();
                Ok(Connection::Pooled(self.dbs.connection(&database).await?))
            }
        }
    }

    /// Bookkeeping after a call: a lost connection is closed (and its
    /// transaction forgotten); a transaction records whether PostgreSQL
    /// aborted it and when it was last used.
    fn release<T>(&self, connection: Connection, result: &Result<T, ServiceError>) {
        let lost = matches!(result, Err(e) if e.connection_is_lost());
        match connection {
            Connection::Pooled(object) => {
                if lost {
                    discard(object);
                }
            }
            Connection::Transaction(mut guard) => {
                if lost {
                    tracing::warn!("a transaction was lost with its connection");
                    self.txs.abandon(&mut guard);
                    return;
                }
                let aborted = matches!(
                    result,
                    Err(ServiceError::DatabaseError(_) | ServiceError::StatementTimeout(_))
                );
                guard.set_aborted(aborted);
                self.txs.touch(&guard);
            }
        }
    }

    pub(crate) async fn execute_statement(
        &self,
        request: ExecuteStatementRequest,
    ) -> Result<ExecuteStatementResponse, ServiceError> {
        let (named, bound, options) = prepare_execute(&request)?;
        self.pause.check()?;
        let connection = self
            .connection(
                present(request.transaction_id.as_ref()),
                request.database.as_deref(),
            )
            .await?;
        let result = match connection.client() {
            Some(client) => {
                self.guarded(execute::execute(client, &named.sql, &bound, options))
                    .await
            }
            None => Err(ServiceError::InternalServerError(
                "the transaction has no connection".to_string(),
            )),
        };
        self.release(connection, &result);
        result
    }

    pub(crate) async fn batch_execute_statement(
        &self,
        request: BatchExecuteStatementRequest,
    ) -> Result<BatchExecuteStatementResponse, ServiceError> {
        let (named, bound) = prepare_batch(&request)?;
        self.pause.check()?;
        let transaction_id = present(request.transaction_id.as_ref());
        if transaction_id.is_none() && bound.is_empty() {
            return Ok(BatchExecuteStatementResponse::default());
        }
        let connection = self
            .connection(transaction_id, request.database.as_deref())
            .await?;
        let result = match (&connection, connection.client()) {
            (Connection::Transaction(_), Some(client)) => {
                self.guarded(execute::execute_batch(client, &named.sql, &bound))
                    .await
            }
            (Connection::Pooled(_), Some(client)) => {
                self.guarded(batch_in_implicit_transaction(client, &named.sql, &bound))
                    .await
            }
            (_, None) => Err(ServiceError::InternalServerError(
                "the transaction has no connection".to_string(),
            )),
        };
        self.release(connection, &result);
        let count = result?;
        Ok(BatchExecuteStatementResponse {
            update_results: (0..count).map(|_| UpdateResult::default()).collect(),
        })
    }

    pub(crate) async fn begin_transaction(
        &self,
        request: BeginTransactionRequest,
    ) -> Result<BeginTransactionResponse, ServiceError> {
        check_common(
            request.resource_arn.as_ref(),
            request.secret_arn.as_ref(),
            request.database.as_ref(),
        )?;
        self.pause.check()?;
        let database = self.dbs.resolve(request.database.as_deref()).to_string();
        let connection = self.dbs.connection(&database).await?;
        let begun = self
            .guarded(async {
                connection
                    .batch_execute("BEGIN")
                    .await
                    .map_err(|e| ServiceError::from_pg(&e))
            })
            .await;
        if let Err(e) = begun {
            discard(connection);
            return Err(e);
        }
        let id = self.txs.insert(connection);
        tracing::debug!(transaction = %id, database = %database, "transaction begun");
        Ok(BeginTransactionResponse { transaction_id: id })
    }

    pub(crate) async fn commit_transaction(
        &self,
        request: EndTransactionRequest,
    ) -> Result<EndTransactionResponse, ServiceError> {
        check_common(
            request.resource_arn.as_ref(),
            request.secret_arn.as_ref(),
            None,
        )?;
        let id = require(request.transaction_id.as_ref(), "transactionId")?;
        self.pause.check()?;
        let mut guard = self.txs.acquire(id).await.ok_or_else(|| not_found(id))?;
        if guard.aborted() {
            // PostgreSQL would answer COMMIT with ROLLBACK and no error; the
            // caller must not believe its writes were kept.
            self.txs.end(&mut guard, "ROLLBACK").await.ok();
            return Err(ServiceError::DatabaseError(
                "ERROR: the transaction was aborted by an earlier failed statement and has \
                 been rolled back, not committed; SQLState: 25P02"
                    .to_string(),
            ));
        }
        self.txs.end(&mut guard, "COMMIT").await?;
        Ok(EndTransactionResponse {
            transaction_status: "Transaction Committed".to_string(),
        })
    }

    pub(crate) async fn rollback_transaction(
        &self,
        request: EndTransactionRequest,
    ) -> Result<EndTransactionResponse, ServiceError> {
        check_common(
            request.resource_arn.as_ref(),
            request.secret_arn.as_ref(),
            None,
        )?;
        let id = require(request.transaction_id.as_ref(), "transactionId")?;
        self.pause.check()?;
        let mut guard = self.txs.acquire(id).await.ok_or_else(|| not_found(id))?;
        self.txs.end(&mut guard, "ROLLBACK").await?;
        Ok(EndTransactionResponse {
            transaction_status: "Rollback Complete".to_string(),
        })
    }
}

/// What a call runs on.
enum Connection {
    Pooled(deadpool_postgres::Object),
    Transaction(TxGuard),
}

impl Connection {
    fn client(&self) -> Option<&tokio_postgres::Client> {
        match self {
            Connection::Pooled(object) => Some(&***object),
            Connection::Transaction(guard) => guard.connection().map(|o| &***o),
        }
    }
}

/// BatchExecuteStatement without a transactionId: all sets or none.
async fn batch_in_implicit_transaction(
    client: &tokio_postgres::Client,
    sql: &str,
    sets: &[Bound],
) -> Result<usize, ServiceError> {
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| ServiceError::from_pg(&e))?;
    match execute::execute_batch(client, sql, sets).await {
        Ok(count) => {
            client
                .batch_execute("COMMIT")
                .await
                .map_err(|e| ServiceError::from_pg(&e))?;
            Ok(count)
        }
        Err(e) => {
            // The pool's recycling rolls back too; this ends it at once.
            if let Err(rollback) = client.batch_execute("ROLLBACK").await {
                tracing::warn!(error = %rollback, "rollback of a failed batch failed");
            }
            Err(e)
        }
    }
}
