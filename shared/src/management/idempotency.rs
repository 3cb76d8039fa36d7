//! `Idempotency-Key` on POST (as Svix's API and SDKs use it: the SDKs send
//! one with every POST and the same one when they retry).
//!
//! The key is claimed in the transaction that runs the request, and the
//! answer is stored in it before it commits: a request and its stored
//! answer commit together or not at all. A second request with the same key
//! (from the same principal) waits for the first's transaction, then:
//! - the same request (method, path, query and body): the stored answer,
//!   with `idempotent-replayed: true`;
//! - another request: refused (409) naming the header.
//!
//! Keys expire after 24 hours (the injected clock's): an older one is
//! claimed again as new. Only a success is stored; a refusal rolls back with
//! its transaction, so the same request is checked again when retried.

use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use super::{ApiRequest, ApiResponse, error::ApiError};
use crate::params;
use crate::store::{Executor, Statement, fetch_optional};

/// The header (lower case).
pub const HEADER: &str = "idempotency-key";

/// How long a key is remembered.
pub const TTL: Duration = Duration::hours(24);

/// Longest key accepted.
const MAX_KEY: usize = 256;

/// Expired rows removed per request (the table stays small without a job).
const PURGE: i64 = 20;

const CLAIM: Statement = Statement::new(
    "management.idempotency_claim",
    "INSERT INTO hookbox_api_idempotency AS i
            (principal, key, request, request_sha256, created_at)
     VALUES (:principal, :key, :request, :hash, CAST(:now AS timestamptz))
     ON CONFLICT (principal, key) DO UPDATE
        SET request = EXCLUDED.request, request_sha256 = EXCLUDED.request_sha256,
            status = NULL, response = NULL, created_at = EXCLUDED.created_at
      WHERE i.created_at <= CAST(:expired_before AS timestamptz)
     RETURNING true AS claimed",
);

const STORED: Statement = Statement::new(
    "management.idempotency_stored",
    "SELECT request, request_sha256, status, response FROM hookbox_api_idempotency
      WHERE principal = :principal AND key = :key",
);

const STORE: Statement = Statement::new(
    "management.idempotency_store",
    "UPDATE hookbox_api_idempotency SET status = CAST(:status AS integer), response = :response
      WHERE principal = :principal AND key = :key",
);

const PURGE_EXPIRED: Statement = Statement::new(
    "management.idempotency_purge",
    "DELETE FROM hookbox_api_idempotency
      WHERE ctid = ANY (ARRAY(SELECT ctid FROM hookbox_api_idempotency
                               WHERE created_at <= CAST(:expired_before AS timestamptz)
                               ORDER BY created_at LIMIT CAST(:limit AS integer)
                                 FOR UPDATE SKIP LOCKED))",
);

/// One request's key, claimed or answered.
#[derive(Debug)]
pub(crate) struct Key {
    principal: String,
    key: String,
}

/// What claiming a key found.
#[derive(Debug)]
pub(crate) enum Claim {
    /// New (or expired): run the request, then [`store`].
    Claimed(Key),
    /// The same request was answered: this is its answer.
    Replay(ApiResponse),
}

/// The request's key, when it sends one (refused when empty or too long).
pub(crate) fn key_of(req: &ApiRequest) -> Result<Option<String>, ApiError> {
    match req.header(HEADER) {
        None => Ok(None),
        Some(k) if k.is_empty() || k.len() > MAX_KEY => Err(ApiError::header(
            HEADER,
            format!("Idempotency-Key must be 1 to {MAX_KEY} bytes"),
        )),
        Some(k) => Ok(Some(k.to_string())),
    }
}

/// What the key binds: method, path, query and body.
fn request_hash(req: &ApiRequest) -> String {
    let mut h = Sha256::new();
    h.update(req.method.to_ascii_uppercase().as_bytes());
    h.update(b"\n");
    h.update(req.path.as_bytes());
    h.update(b"\n");
    for (k, v) in &req.query {
        h.update(k.as_bytes());
        h.update(b"=");
        h.update(v.as_bytes());
        h.update(b"&");
    }
    h.update(b"\n");
    h.update(&req.body);
    hex::encode(h.finalize())
}

/// Claims `key` for `req` in the transaction `tx` at `now`.
pub(crate) async fn claim(
    tx: &dyn Executor,
    principal: &str,
    key: &str,
    req: &ApiRequest,
    now: DateTime<Utc>,
) -> Result<Claim, ApiError> {
    let expired_before = now - TTL;
    tx.execute(
        &PURGE_EXPIRED,
        &params! { "expired_before" => expired_before, "limit" => PURGE },
    )
    .await?;
    let request = format!("{} {}", req.method.to_ascii_uppercase(), req.path);
    let hash = request_hash(req);
    let claimed = fetch_optional(
        tx,
        &CLAIM,
        &params! {
            "principal" => principal,
            "key" => key,
            "request" => request.as_str(),
            "hash" => hash.as_str(),
            "now" => now,
            "expired_before" => expired_before,
        },
    )
    .await?;
    let key_ = || Key {
        principal: principal.to_string(),
        key: key.to_string(),
    };
    if claimed.is_some() {
        return Ok(Claim::Claimed(key_()));
    }
    let Some(row) = fetch_optional(
        tx,
        &STORED,
        &params! { "principal" => principal, "key" => key },
    )
    .await?
    else {
        // gone between the two statements (purged as it expired): new
        return Ok(Claim::Claimed(key_()));
    };
    let (first, first_hash) = (row.text("request")?, row.text("request_sha256")?);
    if first_hash != hash {
        let detail = if first == request {
            format!(
                "the Idempotency-Key header {key:?} was used within 24 hours for another \
                 {first} (another query or body): send a new key for a new request"
            )
        } else {
            format!(
                "the Idempotency-Key header {key:?} was used within 24 hours for {first}, \
                 not {request}: send a new key for a new request"
            )
        };
        return Err(ApiError::Conflict {
            code: "idempotency_conflict",
            detail,
        });
    }
    match (row.opt_i64("status")?, row.opt_text("response")?) {
        (Some(status), response) => {
            let status = u16::try_from(status).unwrap_or(500);
            let body = response.unwrap_or_default();
            let mut answer = if body.is_empty() {
                ApiResponse::empty(status)
            } else {
                ApiResponse {
                    status,
                    headers: vec![("content-type".into(), "application/json".into())],
                    body: body.into(),
                }
            };
            answer
                .headers
                .push(("idempotent-replayed".into(), "true".into()));
            Ok(Claim::Replay(answer))
        }
        (None, _) => Err(ApiError::Conflict {
            code: "idempotency_conflict",
            detail: format!(
                "the request with Idempotency-Key {key:?} is still being answered: retry later"
            ),
        }),
    }
}

/// Stores `answer` as the answer to `key`, in the claiming transaction.
pub(crate) async fn store(
    tx: &dyn Executor,
    key: &Key,
    answer: &ApiResponse,
) -> Result<(), ApiError> {
    tx.execute(
        &STORE,
        &params! {
            "status" => i64::from(answer.status),
            "response" => String::from_utf8_lossy(&answer.body).into_owned(),
            "principal" => key.principal.as_str(),
            "key" => key.key.as_str(),
        },
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_binds_method_path_query_and_body() {
        let req = |method: &str, path: &str, q: &[(&str, &str)], body: &str| ApiRequest {
            method: method.into(),
            path: path.into(),
            query: q
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.to_string().into(),
            ..ApiRequest::default()
        };
        let base = request_hash(&req("POST", "/api/v1/app", &[], "{}"));
        assert_eq!(base, request_hash(&req("post", "/api/v1/app", &[], "{}")));
        for other in [
            req("POST", "/api/v1/app/x/endpoint", &[], "{}"),
            req("POST", "/api/v1/app", &[("get_if_exists", "true")], "{}"),
            req("POST", "/api/v1/app", &[], "{\"name\":\"a\"}"),
        ] {
            assert_ne!(base, request_hash(&other));
        }
    }
}
