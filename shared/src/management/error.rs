//! Refusals of the management API, shaped as Svix's SDKs expect them:
//! `{"code": "…", "detail": "…"}`, and for a validation error (422)
//! `{"detail": [{"loc": [...], "msg": "…", "type": "…"}]}`.

use serde_json::json;

use super::ApiResponse;

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

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::NotSupported { .. } => 404,
            Self::Validation { .. } => 422,
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
            Self::Validation { loc, msg } => json!({"detail": [{
                "loc": loc.split('.').collect::<Vec<_>>(),
                "msg": msg,
                "type": "value_error",
            }]}),
        };
        ApiResponse::json(self.status(), &body)
    }
}
