//! Managing tenants and endpoints from Rust: each call is one statement
//! running one of the SQL functions of migration 21 (so the SQL face, the
//! CLI and the HTTP API share one model, one set of checks and one audit
//! trail), inside the caller's transaction or on its own.

use serde::de::DeserializeOwned;

use super::{AuditEntry, Deleted, Endpoint, Page, Tenant};
use crate::params;
use crate::store::{DbError, Executor, Statement, Value, fetch_one};

/// The face a change came through, for the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// SQL, called directly.
    Sql,
    /// The HTTP management API.
    Api,
    /// The operator CLI.
    Cli,
    /// The customer portal.
    Portal,
    /// The relay (sealing a secret).
    Relay,
}

impl Face {
    /// Its name in the audit trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sql => "sql",
            Self::Api => "api",
            Self::Cli => "cli",
            Self::Portal => "portal",
            Self::Relay => "relay",
        }
    }
}

/// Who makes a change. The database records it only when the session's
/// role may speak for another face (`hookbox_management`); otherwise it
/// records the SQL face and the session's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// Through which face.
    pub face: Face,
    /// Who (a token's name, an IAM principal, an operator).
    pub principal: String,
}

impl Actor {
    /// `principal` through `face`.
    pub fn new(face: Face, principal: impl Into<String>) -> Self {
        Self {
            face,
            principal: principal.into(),
        }
    }

    pub(super) fn json(actor: Option<&Actor>) -> Value {
        actor.map_or(Value::Null, |a| {
            Value::Json(serde_json::json!({"face": a.face.as_str(), "principal": a.principal}))
        })
    }
}

/// Why a management call failed.
#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    /// A field is wrong; the message names it and the value (SQLSTATE 22023).
    #[error("{0}")]
    Invalid(String),
    /// No such tenant or endpoint (SQLSTATE P0002).
    #[error("{0}")]
    NotFound(String),
    /// A uid already taken (SQLSTATE 23505).
    #[error("{0}")]
    Conflict(String),
    /// The database failed otherwise (see [`DbError`]'s contract).
    #[error(transparent)]
    Db(DbError),
    /// A document the function returned does not have the expected shape.
    #[error("cannot read what {statement} returned: {detail}")]
    Decode {
        /// The statement.
        statement: &'static str,
        /// What did not fit.
        detail: String,
    },
}

impl ManageError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Db(e) if e.is_retryable())
    }
}

/// The function's own message in a server error (from `hookbox_` to the
/// end of its sentence), without what the adapter wrapped around it.
fn function_message(text: &str) -> Option<String> {
    let at = text.find("hookbox_")?;
    let rest = &text[at..];
    let end = [" (SQLSTATE", "; SQLState", "\n", "\"}"]
        .iter()
        .filter_map(|stop| rest.find(stop))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches(['.', ';', ' ']).to_string())
}

impl From<DbError> for ManageError {
    fn from(e: DbError) -> Self {
        let (code, message) = match &e {
            DbError::Constraint { code, message, .. } => (Some(code.as_str()), message.as_str()),
            DbError::Statement { message, .. } => (e.sqlstate(), message.as_str()),
            _ => (None, ""),
        };
        match (code, function_message(message)) {
            (Some("22023" | "22001"), Some(m)) => Self::Invalid(m),
            (Some("P0002"), Some(m)) => Self::NotFound(m),
            (Some("23505"), Some(m)) => Self::Conflict(m),
            _ => Self::Db(e),
        }
    }
}

/// Runs `statement` (one function call answering a document as `doc`) and
/// reads the document.
pub(super) async fn call<T: DeserializeOwned>(
    db: &dyn Executor,
    statement: &'static Statement,
    params: crate::store::Params,
) -> Result<T, ManageError> {
    let row = fetch_one(db, statement, &params).await?;
    let doc = row.json("doc")?;
    serde_json::from_value(doc).map_err(|e| ManageError::Decode {
        statement: statement.name,
        detail: e.to_string(),
    })
}

macro_rules! statements {
    ($($name:ident = $sql_name:literal, $sql:literal;)*) => {
        $(
            #[doc = concat!("`", $sql, "`")]
            pub const $name: Statement = Statement::new($sql_name, $sql);
        )*
    };
}

statements! {
    TENANT_CREATE = "tenants.create",
        "SELECT hookbox_tenant_create(CAST(:spec AS jsonb), CAST(:actor AS jsonb)) AS doc";
    TENANT_GET = "tenants.get", "SELECT hookbox_tenant_get(CAST(:tenant AS text)) AS doc";
    TENANT_LIST = "tenants.list",
        "SELECT hookbox_tenant_list(CAST(:after AS text), CAST(:limit AS integer)) AS doc";
    TENANT_UPDATE = "tenants.update",
        "SELECT hookbox_tenant_update(CAST(:tenant AS text), CAST(:changes AS jsonb),
                                      CAST(:actor AS jsonb)) AS doc";
    TENANT_SET_DISABLED = "tenants.set_disabled",
        "SELECT hookbox_tenant_set_disabled(CAST(:tenant AS text), CAST(:disabled AS boolean),
                                            CAST(:actor AS jsonb)) AS doc";
    TENANT_DELETE = "tenants.delete",
        "SELECT hookbox_tenant_delete(CAST(:tenant AS text), CAST(:actor AS jsonb)) AS doc";
    ENDPOINT_CREATE = "endpoints.create",
        "SELECT hookbox_endpoint_create(CAST(:tenant AS text), CAST(:spec AS jsonb),
                                        CAST(:actor AS jsonb)) AS doc";
    ENDPOINT_GET = "endpoints.get",
        "SELECT hookbox_endpoint_get(CAST(:tenant AS text), CAST(:endpoint AS text)) AS doc";
    ENDPOINT_LIST = "endpoints.list",
        "SELECT hookbox_endpoint_list(CAST(:tenant AS text), CAST(:after AS text),
                                      CAST(:limit AS integer)) AS doc";
    ENDPOINT_UPDATE = "endpoints.update",
        "SELECT hookbox_endpoint_update(CAST(:tenant AS text), CAST(:endpoint AS text),
                                        CAST(:changes AS jsonb), CAST(:actor AS jsonb)) AS doc";
    ENDPOINT_DELETE = "endpoints.delete",
        "SELECT hookbox_endpoint_delete(CAST(:tenant AS text), CAST(:endpoint AS text),
                                        CAST(:actor AS jsonb)) AS doc";
    ENDPOINT_ROTATE = "endpoints.rotate_secret",
        "SELECT hookbox_endpoint_rotate_secret(CAST(:tenant AS text), CAST(:endpoint AS text),
                                               CAST(:grace_secs AS integer),
                                               CAST(:actor AS jsonb)) AS doc";
    AUDIT_LIST = "tenants.audit",
        "SELECT hookbox_audit_list(CAST(:tenant AS text), CAST(:after AS bigint),
                                   CAST(:limit AS integer)) AS doc";
}

/// Creates a tenant from `spec` (`name` required; `uid`, `metadata`,
/// `rate_limit`).
pub async fn create_tenant(
    db: &dyn Executor,
    spec: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<Tenant, ManageError> {
    call(
        db,
        &TENANT_CREATE,
        params! { "spec" => spec.clone(), "actor" => Actor::json(actor) },
    )
    .await
}

/// The tenant `tenant` names (its id or uid).
pub async fn get_tenant(db: &dyn Executor, tenant: &str) -> Result<Tenant, ManageError> {
    call(db, &TENANT_GET, params! { "tenant" => tenant }).await
}

/// A page of tenants after `after` (an iterator of the previous page).
pub async fn list_tenants(
    db: &dyn Executor,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<Tenant>, ManageError> {
    call(
        db,
        &TENANT_LIST,
        params! { "after" => after.map_or(Value::Null, Value::from), "limit" => i64::from(limit) },
    )
    .await
}

/// Changes the fields `changes` names (uid, name, metadata, rate_limit).
pub async fn update_tenant(
    db: &dyn Executor,
    tenant: &str,
    changes: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<Tenant, ManageError> {
    call(
        db,
        &TENANT_UPDATE,
        params! { "tenant" => tenant, "changes" => changes.clone(), "actor" => Actor::json(actor) },
    )
    .await
}

/// Disables a tenant (every endpoint of it is held) or enables it.
pub async fn set_tenant_disabled(
    db: &dyn Executor,
    tenant: &str,
    disabled: bool,
    actor: Option<&Actor>,
) -> Result<Tenant, ManageError> {
    call(
        db,
        &TENANT_SET_DISABLED,
        params! { "tenant" => tenant, "disabled" => disabled, "actor" => Actor::json(actor) },
    )
    .await
}

/// Deletes a tenant, its endpoints, their secrets and undelivered rows.
pub async fn delete_tenant(
    db: &dyn Executor,
    tenant: &str,
    actor: Option<&Actor>,
) -> Result<Deleted, ManageError> {
    call(
        db,
        &TENANT_DELETE,
        params! { "tenant" => tenant, "actor" => Actor::json(actor) },
    )
    .await
}

/// Creates an endpoint of `tenant` from `spec` (`url` required; `uid`,
/// `description`, `version`, `disabled`, `filter_types`, `channels`,
/// `headers`, `metadata`, `rate_limit`, `ordered`). It has no secret until
/// one is sealed ([`super::SecretKeeper`]).
pub async fn create_endpoint(
    db: &dyn Executor,
    tenant: &str,
    spec: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<Endpoint, ManageError> {
    call(
        db,
        &ENDPOINT_CREATE,
        params! { "tenant" => tenant, "spec" => spec.clone(), "actor" => Actor::json(actor) },
    )
    .await
}

/// The endpoint `endpoint` (id or uid) of `tenant`.
pub async fn get_endpoint(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
) -> Result<Endpoint, ManageError> {
    call(
        db,
        &ENDPOINT_GET,
        params! { "tenant" => tenant, "endpoint" => endpoint },
    )
    .await
}

/// A page of `tenant`'s endpoints after `after`.
pub async fn list_endpoints(
    db: &dyn Executor,
    tenant: &str,
    after: Option<&str>,
    limit: u32,
) -> Result<Page<Endpoint>, ManageError> {
    call(
        db,
        &ENDPOINT_LIST,
        params! {
            "tenant" => tenant,
            "after" => after.map_or(Value::Null, Value::from),
            "limit" => i64::from(limit),
        },
    )
    .await
}

/// Changes the fields `changes` names (`disabled`: false enables it again,
/// also after continuous failure disabled it).
pub async fn update_endpoint(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    changes: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<Endpoint, ManageError> {
    call(
        db,
        &ENDPOINT_UPDATE,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "changes" => changes.clone(),
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// Deletes an endpoint, its secrets and its undelivered rows.
pub async fn delete_endpoint(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    actor: Option<&Actor>,
) -> Result<Deleted, ManageError> {
    call(
        db,
        &ENDPOINT_DELETE,
        params! { "tenant" => tenant, "endpoint" => endpoint, "actor" => Actor::json(actor) },
    )
    .await
}

/// What a rotation through SQL answers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Rotation {
    /// The endpoint.
    pub id: String,
    /// The previous secret signs until then.
    pub previous_valid_until: chrono::DateTime<chrono::Utc>,
}

/// Retires the current secret after `grace_secs` (0 to 7 days) and leaves
/// the new one to be sealed by hookbox's code before the next delivery
/// (what the SQL face does; [`super::SecretKeeper::rotate`] seals one at
/// once).
pub async fn rotate_secret_later(
    db: &dyn Executor,
    tenant: &str,
    endpoint: &str,
    grace_secs: u32,
    actor: Option<&Actor>,
) -> Result<Rotation, ManageError> {
    call(
        db,
        &ENDPOINT_ROTATE,
        params! {
            "tenant" => tenant,
            "endpoint" => endpoint,
            "grace_secs" => i64::from(grace_secs),
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// A page of `tenant`'s audit trail, oldest first, after `after` (a seq).
pub async fn audit(
    db: &dyn Executor,
    tenant: &str,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<AuditEntry>, ManageError> {
    call(
        db,
        &AUDIT_LIST,
        params! {
            "tenant" => tenant,
            "after" => after.map_or(Value::Null, Value::BigInt),
            "limit" => i64::from(limit),
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_message_is_cut_from_what_the_adapters_wrap_around_it() {
        assert_eq!(
            function_message("hookbox_endpoint_create: url is required (SQLSTATE 22023)")
                .as_deref(),
            Some("hookbox_endpoint_create: url is required")
        );
        assert_eq!(
            function_message(
                "DatabaseErrorException: ERROR: hookbox_tenant_get: no tenant 'x'; SQLState: P0002"
            )
            .as_deref(),
            Some("hookbox_tenant_get: no tenant 'x'")
        );
        assert_eq!(function_message("syntax error"), None);
    }
}
