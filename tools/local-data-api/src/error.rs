//! Errors: the library's own ([`Error`]: configuration and serving) and the
//! service's ([`ServiceError`]: what a Data API call answers, shaped so the
//! AWS SDK decodes the right error variant).

use std::io;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio_postgres::error::{DbError, ErrorPosition, SqlState};

/// Why the server could not be configured or could not serve.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `DATABASE_URL` could not be read as a PostgreSQL URL. The message never
    /// contains the URL itself (it may hold a password).
    #[error("invalid database URL (not shown, it may hold a password): {detail}")]
    InvalidDatabaseUrl {
        /// What the parser said.
        detail: String,
    },
    /// The connection pool for a database could not be built.
    #[error("cannot build the connection pool for database {database:?}: {detail}")]
    Pool {
        /// The database name.
        database: String,
        /// What deadpool said.
        detail: String,
    },
    /// Binding or reading the listening socket failed.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The HTTP server stopped with an error.
    #[error("the HTTP server on {addr} failed: {source}")]
    Serve {
        /// The address it was serving on.
        addr: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The background server thread could not be started.
    #[error("cannot start the background server: {detail}")]
    Background {
        /// What failed.
        detail: String,
    },
}

/// An error answer of the Data API. Each variant is one of the service
/// model's error shapes, with the model's HTTP status; the response carries
/// `x-amzn-errortype: <Name>` and `{"message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// 400: the request is invalid (missing member, bad parameter, limits).
    #[error("BadRequestException: {0}")]
    BadRequest(String),
    /// 400: PostgreSQL refused the statement. The message ends with
    /// `; SQLState: <code>`.
    #[error("DatabaseErrorException: {0}")]
    DatabaseError(String),
    /// 400: the statement was cancelled (SQLSTATE 57014, e.g. statement_timeout).
    #[error("StatementTimeoutException: {0}")]
    StatementTimeout(String),
    /// 400: a result column has a type the Data API cannot return.
    #[error("UnsupportedResultException: {0}")]
    UnsupportedResult(String),
    /// 404: CommitTransaction / RollbackTransaction on an unknown transaction.
    #[error("NotFoundException: {0}")]
    NotFound(String),
    /// 404: ExecuteStatement / BatchExecuteStatement on an unknown transaction.
    #[error("TransactionNotFoundException: {0}")]
    TransactionNotFound(String),
    /// 400: the database is paused (Aurora Serverless v2 at zero capacity)
    /// and resuming: see [`crate::LocalDataApi::pause`].
    #[error("DatabaseResumingException: {0}")]
    DatabaseResuming(String),
    /// 504: PostgreSQL cannot be reached or the connection was lost.
    #[error("DatabaseUnavailableException: {0}")]
    DatabaseUnavailable(String),
    /// 500: a bug or an unexpected answer from PostgreSQL.
    #[error("InternalServerErrorException: {0}")]
    InternalServerError(String),
    /// 503: the server cannot take the call now.
    #[error("ServiceUnavailableError: {0}")]
    ServiceUnavailable(String),
}

impl ServiceError {
    /// The shape name sent in `x-amzn-errortype`.
    pub fn name(&self) -> &'static str {
        match self {
            ServiceError::BadRequest(_) => "BadRequestException",
            ServiceError::DatabaseError(_) => "DatabaseErrorException",
            ServiceError::StatementTimeout(_) => "StatementTimeoutException",
            ServiceError::UnsupportedResult(_) => "UnsupportedResultException",
            ServiceError::NotFound(_) => "NotFoundException",
            ServiceError::TransactionNotFound(_) => "TransactionNotFoundException",
            ServiceError::DatabaseUnavailable(_) => "DatabaseUnavailableException",
            ServiceError::DatabaseResuming(_) => "DatabaseResumingException",
            ServiceError::InternalServerError(_) => "InternalServerErrorException",
            ServiceError::ServiceUnavailable(_) => "ServiceUnavailableError",
        }
    }

    /// The HTTP status of the shape in the service model.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::BadRequest(_)
            | ServiceError::DatabaseError(_)
            | ServiceError::StatementTimeout(_)
            | ServiceError::UnsupportedResult(_)
            | ServiceError::DatabaseResuming(_) => StatusCode::BAD_REQUEST,
            ServiceError::NotFound(_) | ServiceError::TransactionNotFound(_) => {
                StatusCode::NOT_FOUND
            }
            ServiceError::DatabaseUnavailable(_) => StatusCode::GATEWAY_TIMEOUT,
            ServiceError::InternalServerError(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServiceError::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The message sent in the body.
    pub fn message(&self) -> &str {
        match self {
            ServiceError::BadRequest(m)
            | ServiceError::DatabaseError(m)
            | ServiceError::StatementTimeout(m)
            | ServiceError::UnsupportedResult(m)
            | ServiceError::NotFound(m)
            | ServiceError::TransactionNotFound(m)
            | ServiceError::DatabaseUnavailable(m)
            | ServiceError::DatabaseResuming(m)
            | ServiceError::InternalServerError(m)
            | ServiceError::ServiceUnavailable(m) => m,
        }
    }

    /// True when the connection the call used can no longer be trusted (it
    /// is lost, or a call on it never finished): it must not go back to the
    /// pool, and a transaction on it is gone.
    pub(crate) fn connection_is_lost(&self) -> bool {
        matches!(self, ServiceError::DatabaseUnavailable(_))
    }

    /// Maps an error of tokio-postgres: PostgreSQL's own errors by SQLSTATE,
    /// everything else (I/O, closed connection) as unavailable.
    pub(crate) fn from_pg(e: &tokio_postgres::Error) -> ServiceError {
        if let Some(db) = e.as_db_error() {
            return from_db_error(db);
        }
        if e.is_closed() || has_io_source(e) {
            return ServiceError::DatabaseUnavailable(format!(
                "the connection to the database was lost: {e}"
            ));
        }
        ServiceError::InternalServerError(format!("unexpected database client error: {e}"))
    }

    /// Maps an error of the connection pool (getting a connection).
    pub(crate) fn from_pool(database: &str, e: &deadpool_postgres::PoolError) -> ServiceError {
        use deadpool_postgres::PoolError;
        match e {
            PoolError::Backend(pg) => match pg.as_db_error() {
                // The server answered: e.g. 3D000 "database does not exist",
                // 28P01 bad password. A server that is starting or shutting
                // down (57P03 and friends) is unavailable.
                Some(db) => from_db_error(db),
                None => ServiceError::DatabaseUnavailable(format!(
                    "cannot connect to database {database:?}: {pg}"
                )),
            },
            PoolError::Timeout(kind) => ServiceError::DatabaseUnavailable(format!(
                "timed out getting a connection to database {database:?} ({kind:?})"
            )),
            PoolError::Closed => ServiceError::DatabaseUnavailable(format!(
                "the connection pool of database {database:?} is closed"
            )),
            PoolError::PostCreateHook(hook) => ServiceError::DatabaseUnavailable(format!(
                "cannot prepare a new connection to database {database:?}: {hook}"
            )),
            PoolError::NoRuntimeSpecified => ServiceError::InternalServerError(format!(
                "the connection pool of database {database:?} has no runtime"
            )),
        }
    }
}

fn has_io_source(e: &tokio_postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Maps an error PostgreSQL reported.
pub(crate) fn from_db_error(db: &DbError) -> ServiceError {
    let code = db.code();
    let message = format_db_error(db);
    if *code == SqlState::QUERY_CANCELED {
        ServiceError::StatementTimeout(message)
    } else if code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
    {
        ServiceError::DatabaseUnavailable(message)
    } else {
        ServiceError::DatabaseError(message)
    }
}

/// The message the real service sends for a PostgreSQL error: the JDBC
/// driver's rendering (`ERROR: message` then indented Detail / Hint /
/// Position / Where lines) followed by `; SQLState: <code>`, so a client can
/// find the SQLSTATE with a plain substring search.
pub(crate) fn format_db_error(db: &DbError) -> String {
    let mut out = format!("{}: {}", db.severity(), db.message());
    if let Some(detail) = db.detail() {
        out.push_str("\n  Detail: ");
        out.push_str(detail);
    }
    if let Some(hint) = db.hint() {
        out.push_str("\n  Hint: ");
        out.push_str(hint);
    }
    match db.position() {
        Some(ErrorPosition::Original(p)) => out.push_str(&format!("\n  Position: {p}")),
        Some(ErrorPosition::Internal { position, .. }) => {
            out.push_str(&format!("\n  Internal Position: {position}"));
        }
        None => {}
    }
    if let Some(where_) = db.where_() {
        out.push_str("\n  Where: ");
        out.push_str(where_);
    }
    out.push_str("; SQLState: ");
    out.push_str(db.code().code());
    out
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "message": self.message() }).to_string();
        let mut response = (self.status(), body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert("x-amzn-errortype", HeaderValue::from_static(self.name()));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_statuses_follow_the_service_model() {
        let cases = [
            (ServiceError::BadRequest(String::new()), 400),
            (ServiceError::DatabaseError(String::new()), 400),
            (ServiceError::StatementTimeout(String::new()), 400),
            (ServiceError::UnsupportedResult(String::new()), 400),
            (ServiceError::NotFound(String::new()), 404),
            (ServiceError::TransactionNotFound(String::new()), 404),
            (ServiceError::DatabaseUnavailable(String::new()), 504),
            (ServiceError::InternalServerError(String::new()), 500),
            (ServiceError::ServiceUnavailable(String::new()), 503),
        ];
        for (error, status) in cases {
            assert_eq!(error.status().as_u16(), status, "{}", error.name());
            let response = error.clone().into_response();
            assert_eq!(response.status().as_u16(), status);
            assert_eq!(
                response.headers().get("x-amzn-errortype"),
                Some(&HeaderValue::from_static(error.name()))
            );
        }
    }
}
