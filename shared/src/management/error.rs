//! Refusals of the management API, shaped as Svix's SDKs expect them:
//! `{"code": "…", "detail": "…"}`, and for a validation error (422)
//! `{"detail": [{"loc": [...], "msg": "…", "type": "…"}]}`.

use serde_json::json;

use super::ApiResponse;
use crate::tenants::ManageError;
use crate::tenants::secrets::SecretError;

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No token, or one that is not configured (401).
    #[error("authentication failed: send Authorization: Bearer <token> with a configured token")]
    Unauthorized,
    /// A route hookbox does not serve (404, naming method and path).
    #[error("{method} {path} is not supported by hookbox's management API")]
    NotSupported {
        /// The method.
        method: String,
        /// The path.
        path: String,
    },
    /// A field of the body or query is invalid (422, naming it).
    #[error("{loc}: {msg}")]
    Validation {
        /// Where: `body.url`, `query.limit`.
        loc: String,
        /// What is wrong.
        msg: String,
    },
    /// Authenticated, but not allowed to do that (403).
    #[error("{0}")]
    Forbidden(String),
    /// No such application, endpoint or event type (404).
    #[error("{0}")]
    NotFound(String),
    /// A uid or name already taken, or an idempotency key used for another
    /// request (409).
    #[error("{detail}")]
    Conflict {
        /// Svix's code (`conflict`, `event_type_exists`, `idempotency_conflict`).
        code: &'static str,
        /// What conflicts.
        detail: String,
    },
    /// The database or the key vault cannot serve now; trying again later
    /// may succeed (503).
    #[error("{0}")]
    Unavailable(String),
    /// Anything else (500); the detail names what failed, never a secret.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// A body field `field` is invalid.
    pub fn validation(field: &str, msg: impl Into<String>) -> Self {
        Self::Validation {
            loc: format!("body.{field}"),
            msg: msg.into(),
        }
    }

    /// A query parameter `name` is invalid.
    pub fn query(name: &str, msg: impl Into<String>) -> Self {
        Self::Validation {
            loc: format!("query.{name}"),
            msg: msg.into(),
        }
    }

    /// A request header `name` is invalid.
    pub fn header(name: &str, msg: impl Into<String>) -> Self {
        Self::Validation {
            loc: format!("header.{name}"),
            msg: msg.into(),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::Forbidden(_) => 403,
            Self::NotSupported { .. } | Self::NotFound(_) => 404,
            Self::Conflict { .. } => 409,
            Self::Validation { .. } => 422,
            Self::Internal(_) => 500,
            Self::Unavailable(_) => 503,
        }
    }

    /// The answer.
    pub fn response(&self) -> ApiResponse {
        let body = match self {
            Self::Unauthorized => {
                json!({"code": "authentication_failed", "detail": self.to_string()})
            }
            Self::NotSupported { .. } => {
                json!({"code": "not_supported", "detail": self.to_string()})
            }
            Self::Forbidden(detail) => json!({"code": "forbidden", "detail": detail}),
            Self::NotFound(detail) => json!({"code": "not_found", "detail": detail}),
            Self::Conflict { code, detail } => json!({"code": code, "detail": detail}),
            Self::Unavailable(detail) => json!({"code": "unavailable", "detail": detail}),
            Self::Internal(detail) => json!({"code": "server_error", "detail": detail}),
            Self::Validation { loc, msg } => json!({"detail": [{
                "loc": loc.split('.').collect::<Vec<_>>(),
                "msg": msg,
                "type": "value_error",
            }]}),
        };
        let mut response = ApiResponse::json(self.status(), &body);
        if matches!(self, Self::Unavailable(_)) {
            response.headers.push(("retry-after".into(), "1".into()));
        }
        response
    }

    /// A management function's refusal, its field named by `wire` (the
    /// functions' snake_case field as Svix's camelCase name).
    pub(crate) fn from_manage(e: ManageError, wire: fn(&str) -> Option<&'static str>) -> Self {
        match e {
            ManageError::Invalid(msg) => {
                let field = field_of(&msg, wire);
                Self::Validation {
                    loc: field.map_or_else(|| "body".to_string(), |f| format!("body.{f}")),
                    msg,
                }
            }
            ManageError::NotFound(msg) => Self::NotFound(msg),
            ManageError::Conflict(msg) => Self::Conflict {
                code: "conflict",
                detail: msg,
            },
            ManageError::Db(e) if e.is_retryable() => Self::Unavailable(e.to_string()),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// The wire name of the first field a function's message names (after its
/// `hookbox_…: ` prefix).
fn field_of(msg: &str, wire: fn(&str) -> Option<&'static str>) -> Option<&'static str> {
    let text = msg.split_once(": ").map_or(msg, |(_, rest)| rest);
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .find_map(wire)
}

impl From<crate::store::DbError> for ApiError {
    fn from(e: crate::store::DbError) -> Self {
        if e.is_retryable() {
            Self::Unavailable(e.to_string())
        } else {
            Self::Internal(e.to_string())
        }
    }
}

impl From<SecretError> for ApiError {
    fn from(e: SecretError) -> Self {
        match e {
            SecretError::Invalid(msg) => Self::validation("key", msg),
            SecretError::Db(db) => match ManageError::from(db) {
                ManageError::NotFound(msg) => Self::NotFound(msg),
                ManageError::Db(db) => db.into(),
                other => Self::Internal(other.to_string()),
            },
            other if other.is_retryable() => Self::Unavailable(other.to_string()),
            other => Self::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(f: &str) -> Option<&'static str> {
        match f {
            "url" => Some("url"),
            "rate_limit" => Some("throttleRate"),
            _ => None,
        }
    }

    #[test]
    fn a_functions_refusal_names_the_field_by_its_wire_name() {
        let e = ApiError::from_manage(
            ManageError::Invalid(
                "hookbox_endpoint_create: rate_limit must be a whole number from 1 to 65535, not 0"
                    .into(),
            ),
            wire,
        );
        assert_eq!(e.status(), 422);
        let body = e.response().body_json();
        assert_eq!(body["detail"][0]["loc"], json!(["body", "throttleRate"]));
        assert!(
            body["detail"][0]["msg"]
                .as_str()
                .is_some_and(|m| m.contains("rate_limit must be"))
        );
        let e = ApiError::from_manage(ManageError::Invalid("hookbox_x: odd".into()), wire);
        assert_eq!(
            e.response().body_json()["detail"][0]["loc"],
            json!(["body"])
        );
    }

    #[test]
    fn errors_are_shaped_as_svix_shapes_them() {
        let r = ApiError::NotFound("no tenant 'x'".into()).response();
        assert_eq!(r.status, 404);
        assert_eq!(r.body_json()["code"], "not_found");
        let r = ApiError::Conflict {
            code: "conflict",
            detail: "taken".into(),
        }
        .response();
        assert_eq!(
            (r.status, r.body_json()["code"].clone()),
            (409, json!("conflict"))
        );
        let r = ApiError::Unavailable("db".into()).response();
        assert_eq!(r.status, 503);
        assert!(r.headers.iter().any(|(n, _)| n == "retry-after"));
    }
}
