//! Publishing to one tenant, in the caller's transaction
//! (`hookbox_publish_to`, migrations 20 and 22): the message is recorded
//! ([`super::messages`]), and one outbox row written per endpoint of that
//! tenant whose subscription matches, each its own delivery with its own
//! `webhook-id`; never a row for another tenant. No matching endpoint: the
//! message alone, no delivery (it is not sent to endpoints added later). A
//! tenant that does not exist is an error.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::outbox::EnqueueError;
use crate::outbox::publish::{MAX_PUBLISHED_PAYLOAD_BYTES, check_fields};
use crate::params;
use crate::store::{Statement, Transaction, Value};

/// An event for one tenant's endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantEvent {
    /// Its type (what endpoints' `filter_types` match).
    pub event_type: String,
    /// The payload, POSTed as it is.
    pub payload: serde_json::Value,
    /// The aggregate (type, id) it belongs to: an `ordered` endpoint gets
    /// one aggregate's events in publish order. `None`: no order between
    /// this and other events.
    pub aggregate: Option<(String, String)>,
    /// Its channels: an endpoint with channels gets it only when one of
    /// them is among these (as Svix's); endpoints without channels get it
    /// whatever its channels. `None`: no channel.
    pub channels: Option<Vec<String>>,
}

/// One delivery written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantDelivery {
    /// The outbox row's id (the `webhook-id`).
    pub id: Uuid,
    /// The endpoint it goes to.
    pub endpoint_id: String,
}

/// `hookbox_publish_to_at`: the rows for one tenant, due at `:now`.
pub const PUBLISH_TO: Statement = Statement::new(
    "tenants.publish_to",
    "SELECT p.id, p.endpoint_id FROM hookbox_publish_to_at(
         CAST(:tenant AS text), CAST(:event_type AS text), CAST(:payload AS jsonb),
         CAST(:aggregate_type AS text), CAST(:aggregate_id AS text),
         ARRAY(SELECT jsonb_array_elements_text(CAST(:channels AS jsonb))),
         CAST(:now AS timestamptz), CAST(:origin AS jsonb)) AS p",
);

/// Publishes `event` to `tenant` (its id or uid) inside `tx`, due at `now`:
/// the deliveries written, none when no endpoint of it matches. The rows
/// exist if and only if `tx` commits.
pub async fn publish_to(
    tx: &dyn Transaction,
    tenant: &str,
    event: &TenantEvent,
    now: DateTime<Utc>,
) -> Result<Vec<TenantDelivery>, EnqueueError> {
    let (aggregate_type, aggregate_id) = match &event.aggregate {
        Some((t, i)) => (Value::from(t.as_str()), Value::from(i.as_str())),
        None => (Value::Null, Value::Null),
    };
    if let Some((t, i)) = &event.aggregate {
        check_fields(t, i, &event.event_type)?;
    } else {
        check_fields("message", "msg", &event.event_type)?;
    }
    let text = event.payload.to_string();
    if text.len() > MAX_PUBLISHED_PAYLOAD_BYTES {
        return Err(EnqueueError::PayloadTooLarge {
            size: text.len(),
            limit: MAX_PUBLISHED_PAYLOAD_BYTES,
        });
    }
    let channels = Value::Json(serde_json::json!(event.channels.as_deref().unwrap_or(&[])));
    let rows = tx
        .execute(
            &PUBLISH_TO,
            &params! {
                "tenant" => tenant,
                "event_type" => event.event_type.as_str(),
                "payload" => text,
                "aggregate_type" => aggregate_type,
                "aggregate_id" => aggregate_id,
                "channels" => channels,
                "now" => now,
                "origin" => tx.origin().map(str::to_owned),
            },
        )
        .await?;
    rows.rows
        .iter()
        .map(|r| {
            Ok(TenantDelivery {
                id: r.uuid("id")?,
                endpoint_id: r.text("endpoint_id")?,
            })
        })
        .collect::<Result<_, crate::store::DbError>>()
        .map_err(EnqueueError::from)
}
