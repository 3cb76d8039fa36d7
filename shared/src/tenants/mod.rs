//! Tenants and their endpoints: webhooks to a SaaS's customers
//! (docs/tenants.md).
//!
//! A tenant is one customer of the SaaS (Svix's application): hookbox's id
//! (`app_…`) and the SaaS's own (`uid`). An endpoint belongs to one tenant:
//! a URL, what it subscribes to, sealed signing secrets, custom headers,
//! metadata, `disabled`. They are data in the database (migrations 20 and
//! 21), managed through SQL functions, which [`manage`] calls for the Rust
//! faces (the CLI, the HTTP API); every endpoint is also a row of
//! `outbox_destinations`, so the relay claims, delivers and keeps the health
//! of its deliveries as it does a configured destination's.
//!
//! - [`manage`]: create, read, list, update, disable, enable and delete
//!   tenants and endpoints; rotation; the audit trail.
//! - [`publish`]: an event to one tenant's matching endpoints, in the
//!   caller's transaction (recorded as a message).
//! - [`messages`]: messages (with the caller's `event_id`, deduplicated),
//!   their deliveries' attempts, and recovering an endpoint's failed
//!   deliveries (migration 22).
//! - [`secrets`]: generating, sealing and opening endpoints' signing secrets
//!   (envelope encryption under the [`crate::vault`]).
//! - [`directory`]: what the relay knows of an endpoint it delivers to,
//!   resolved from the database and cached briefly.
//! - [`links`]: portal links for one tenant (migration 30): minted,
//!   expiring, read-only or not, revoked; the session a key opens.
//! - [`catalog`]: the event type catalog (its schemas, examples, and
//!   whether publishing enforces them).
//! - [`deliveries`]: one endpoint's deliveries as its owner sees them:
//!   resend one, send an example, attempts newest first, counts by hour.

pub mod catalog;
pub mod deliveries;
pub mod directory;
pub mod links;
pub mod manage;
pub mod messages;
pub mod publish;
pub mod secrets;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use directory::EndpointDirectory;
pub use manage::{Actor, Face, ManageError};
pub use messages::{Attempt, AttemptStatus, CreatedMessage, DeliveryStatus, Message, Recovered};
pub use publish::{TenantDelivery, TenantEvent, publish_to};
pub use secrets::SecretKeeper;

/// A tenant, as the management functions return it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    /// hookbox's id (`app_…`).
    pub id: String,
    /// The SaaS's own id for it.
    pub uid: Option<String>,
    /// Its name.
    pub name: String,
    /// The SaaS's own key-value pairs.
    pub metadata: BTreeMap<String, String>,
    /// Most requests per second to each of its endpoints that sets none.
    pub rate_limit: Option<u32>,
    /// Disabled: every endpoint of it is held.
    pub disabled: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// An endpoint's health, as the relay last recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointHealth {
    /// Failed attempts in a row.
    pub consecutive_failures: i64,
    /// Failing since then.
    pub failing_since: Option<DateTime<Utc>>,
    /// The breaker is open until then.
    pub open_until: Option<DateTime<Utc>>,
}

/// An endpoint, as the management functions return it. Never its secrets,
/// nor its headers' values (which may be credentials).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// hookbox's id (`ep_…`): also the `destination` of its outbox rows.
    pub id: String,
    /// Its tenant's id.
    pub tenant_id: String,
    /// The SaaS's own id for it (unique within the tenant).
    pub uid: Option<String>,
    /// Where its deliveries are POSTed.
    pub url: String,
    /// A description.
    pub description: String,
    /// The SaaS's version number for it.
    pub version: i64,
    /// Disabled: by its owner, or by continuous failure.
    pub disabled: bool,
    /// Why, when disabled.
    pub disabled_reason: Option<String>,
    /// Held: its deliveries wait (it, or its tenant, is disabled).
    pub held: bool,
    /// The event types (or `*` patterns) it gets; `None`: every type.
    pub filter_types: Option<Vec<String>>,
    /// The channels it gets; `None`: every message.
    pub channels: Option<Vec<String>>,
    /// The names of its custom headers.
    pub header_names: Vec<String>,
    /// The SaaS's own key-value pairs.
    pub metadata: BTreeMap<String, String>,
    /// Most requests per second to it.
    pub rate_limit: Option<u32>,
    /// One aggregate's deliveries in publish order.
    pub ordered: bool,
    /// Its health.
    pub health: EndpointHealth,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// One page of a list, in id order (ids grow with creation time, to the
/// millisecond).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    /// The items.
    pub data: Vec<T>,
    /// Where the next page starts (pass it as `after`).
    pub iterator: Option<String>,
    /// No item after this page.
    pub done: bool,
}

/// What deleting a tenant or an endpoint removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deleted {
    /// The id of what was deleted.
    pub id: String,
    /// Its uid.
    pub uid: Option<String>,
    /// Endpoints deleted (a tenant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<i64>,
    /// Sealed secrets deleted.
    pub secrets: i64,
    /// Deliveries deleted before they were delivered.
    pub undelivered: i64,
    /// Messages deleted (a tenant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<i64>,
}

/// One entry of the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Its place in the trail.
    pub seq: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// The tenant.
    pub tenant_id: String,
    /// The endpoint, when about one.
    pub endpoint_id: Option<String>,
    /// What happened (`endpoint.updated`, `endpoint.secret_rotated`, …).
    pub action: String,
    /// Through which face (sql, api, cli, portal, relay).
    pub face: String,
    /// By whom.
    pub principal: String,
    /// What changed (`{"field": {"from": …, "to": …}}`; never a secret).
    pub changes: serde_json::Value,
}
