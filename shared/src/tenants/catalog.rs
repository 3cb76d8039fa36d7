//! The event type catalog from Rust (migration 30's functions; the HTTP
//! API's `/api/v1/event-type` keeps the same table): each type's name,
//! description, JSON Schema by version, example, `deprecated`, `archived`
//! and `enforce_schema` (publishing then refuses a payload its latest
//! schema does not accept, naming where it fails).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::Page;
use super::manage::{Actor, ManageError, call};
use crate::params;
use crate::store::{Executor, Statement, Value};

/// An event type of the catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventType {
    /// Its name (`invoice.paid`).
    pub name: String,
    /// What it means.
    pub description: String,
    /// Marked deprecated in the portal.
    pub deprecated: bool,
    /// Hidden from the portal and lists, not enforced.
    pub archived: bool,
    /// Its latest schema.
    pub schema: Option<serde_json::Value>,
    /// Its schemas by version.
    pub schemas: Option<serde_json::Value>,
    /// What an example of it carries (else its schema's first example).
    pub example: Option<serde_json::Value>,
    /// Publishing checks payloads against `schema`.
    pub enforce_schema: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// `hookbox_event_type_put`.
pub const PUT: Statement = Statement::new(
    "event_types.put",
    "SELECT hookbox_event_type_put(CAST(:spec AS jsonb), CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_event_type_get`.
pub const GET: Statement = Statement::new(
    "event_types.get_doc",
    "SELECT hookbox_event_type_get(CAST(:name AS text)) AS doc",
);
/// `hookbox_event_type_list`.
pub const LIST: Statement = Statement::new(
    "event_types.list_docs",
    "SELECT hookbox_event_type_list(CAST(:after AS text), CAST(:limit AS integer),
                                    CAST(:archived AS boolean)) AS doc",
);
/// `hookbox_event_type_delete`.
pub const DELETE: Statement = Statement::new(
    "event_types.delete",
    "SELECT hookbox_event_type_delete(CAST(:name AS text), CAST(:actor AS jsonb)) AS doc",
);

/// Creates or replaces the event type `spec` names (`name`, `description`
/// required; `schema` or `schemas`, `example`, `deprecated`, `archived`,
/// `enforce_schema`).
pub async fn put_event_type(
    db: &dyn Executor,
    spec: &serde_json::Value,
    actor: Option<&Actor>,
) -> Result<EventType, ManageError> {
    call(
        db,
        &PUT,
        params! { "spec" => spec.clone(), "actor" => Actor::json(actor) },
    )
    .await
}

/// The event type `name`.
pub async fn get_event_type(db: &dyn Executor, name: &str) -> Result<EventType, ManageError> {
    call(db, &GET, params! { "name" => name }).await
}

/// A page of the catalog by name after `after` (archived types too when
/// `archived`).
pub async fn list_event_types(
    db: &dyn Executor,
    after: Option<&str>,
    limit: u32,
    archived: bool,
) -> Result<Page<EventType>, ManageError> {
    call(
        db,
        &LIST,
        params! {
            "after" => after.map_or(Value::Null, Value::from),
            "limit" => i64::from(limit),
            "archived" => archived,
        },
    )
    .await
}

/// What deleting an event type answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedEventType {
    /// Its name.
    pub name: String,
    /// Always true.
    pub deleted: bool,
}

/// Deletes the event type `name` from the catalog.
pub async fn delete_event_type(
    db: &dyn Executor,
    name: &str,
    actor: Option<&Actor>,
) -> Result<DeletedEventType, ManageError> {
    call(
        db,
        &DELETE,
        params! { "name" => name, "actor" => Actor::json(actor) },
    )
    .await
}
