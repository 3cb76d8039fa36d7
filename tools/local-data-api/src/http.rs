//! The HTTP side: rest-json routes of the service model, request bodies read
//! with the service's 4 MiB limit, JSON answers, error shapes.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ServiceError;
use crate::execute::MAX_REQUEST_BYTES;
use crate::service::Service;

pub(crate) fn routes(service: Arc<Service>) -> Router {
    Router::new()
        .route("/Execute", post(execute_statement))
        .route("/BatchExecute", post(batch_execute_statement))
        .route("/BeginTransaction", post(begin_transaction))
        .route("/CommitTransaction", post(commit_transaction))
        .route("/RollbackTransaction", post(rollback_transaction))
        .fallback(unknown_operation)
        .with_state(service)
}

/// Reads and decodes a request body. SigV4 headers are accepted as they are.
async fn read<T: DeserializeOwned>(body: Body) -> Result<T, ServiceError> {
    let bytes = axum::body::to_bytes(body, MAX_REQUEST_BYTES)
        .await
        .map_err(|e| {
            ServiceError::BadRequest(format!(
                "cannot read the request body (the limit is {MAX_REQUEST_BYTES} bytes): {e}"
            ))
        })?;
    crate::service::decode(&bytes)
}

fn ok<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut response = (StatusCode::OK, body).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => ServiceError::InternalServerError(format!("cannot encode the answer: {e}"))
            .into_response(),
    }
}

/// Logs the outcome of one call (never parameters, never credentials) and
/// turns it into a response.
fn answer<T: Serialize>(
    operation: &str,
    started: Instant,
    result: Result<T, ServiceError>,
) -> Response {
    let elapsed_ms = started.elapsed().as_millis();
    let mut response = match result {
        Ok(value) => {
            tracing::debug!(operation, elapsed_ms, "ok");
            ok(&value)
        }
        Err(e) => {
            match &e {
                ServiceError::InternalServerError(_) | ServiceError::DatabaseUnavailable(_) => {
                    tracing::warn!(
                        operation,
                        elapsed_ms,
                        error = e.name(),
                        message = e.message(),
                        "failed"
                    );
                }
                _ => tracing::debug!(
                    operation,
                    elapsed_ms,
                    error = e.name(),
                    message = e.message(),
                    "failed"
                ),
            }
            e.into_response()
        }
    };
    if let Ok(id) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        response.headers_mut().insert("x-amzn-requestid", id);
    }
    response
}

async fn execute_statement(State(service): State<Arc<Service>>, body: Body) -> Response {
    let started = Instant::now();
    let result = match read(body).await {
        Ok(request) => service.execute_statement(request).await,
        Err(e) => Err(e),
    };
    answer("ExecuteStatement", started, result)
}

async fn batch_execute_statement(State(service): State<Arc<Service>>, body: Body) -> Response {
    let started = Instant::now();
    let result = match read(body).await {
        Ok(request) => service.batch_execute_statement(request).await,
        Err(e) => Err(e),
    };
    answer("BatchExecuteStatement", started, result)
}

async fn begin_transaction(State(service): State<Arc<Service>>, body: Body) -> Response {
    let started = Instant::now();
    let result = match read(body).await {
        Ok(request) => service.begin_transaction(request).await,
        Err(e) => Err(e),
    };
    answer("BeginTransaction", started, result)
}

async fn commit_transaction(State(service): State<Arc<Service>>, body: Body) -> Response {
    let started = Instant::now();
    let result = match read(body).await {
        Ok(request) => service.commit_transaction(request).await,
        Err(e) => Err(e),
    };
    answer("CommitTransaction", started, result)
}

async fn rollback_transaction(State(service): State<Arc<Service>>, body: Body) -> Response {
    let started = Instant::now();
    let result = match read(body).await {
        Ok(request) => service.rollback_transaction(request).await,
        Err(e) => Err(e),
    };
    answer("RollbackTransaction", started, result)
}

async fn unknown_operation(uri: axum::http::Uri) -> Response {
    let body = serde_json::json!({
        "message": format!("no Data API operation at {}", uri.path())
    })
    .to_string();
    let mut response = (StatusCode::NOT_FOUND, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        "x-amzn-errortype",
        HeaderValue::from_static("UnknownOperationException"),
    );
    response
}
