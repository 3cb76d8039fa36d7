//! The trail from webhook to delivery (migration 29): every outbox row
//! written for an inbound webhook records the inbox row it came from,
//! `inbox_id` and [`Origin`], whether ingest forwarded it in the statement
//! that stored the webhook or the processor wrote it (routes, a business
//! handler, through [`crate::store::WithOrigin`]). The relay's lines about
//! the delivery name the webhook from it, and [`deliveries_of`] lists an
//! inbox row's deliveries (`hookbox inbox show`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::OutboxStatus;
use crate::params;
use crate::store::{DbError, Executor, Row, Statement};

/// The inbound webhook an outbox row was written for (the row's `origin`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The inbox row.
    pub inbox_id: Uuid,
    /// Its partner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partner: Option<String>,
    /// The partner's event id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// When ingest received it: where end-to-end latency starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at: Option<DateTime<Utc>>,
    /// The X-Ray trace id of its ingest (or of the processing that wrote
    /// the row, when the queue message carried no trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl Origin {
    /// The JSON text the database functions take (`p_origin`).
    pub fn to_json(&self) -> String {
        // a struct of strings, a uuid and a timestamp always serializes
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The `origin` column of `row`, if any.
    pub fn from_row(row: &Row) -> Result<Option<Self>, DbError> {
        row.opt_json("origin")?
            .map(|v| {
                serde_json::from_value(v).map_err(|e| DbError::Decode {
                    statement: row.statement(),
                    column: "origin".into(),
                    detail: format!("not an origin: {e}"),
                })
            })
            .transpose()
    }
}

/// One delivery of an inbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailDelivery {
    /// The outbox row's id (the delivery id, `webhook-id`).
    pub id: Uuid,
    /// Where it goes.
    pub destination: String,
    /// Its status.
    pub status: OutboxStatus,
    /// Attempts so far.
    pub attempts: i64,
    /// The last HTTP status received.
    pub last_status_code: Option<i64>,
    /// The last failure.
    pub last_error: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When it was delivered or given up.
    pub processed_at: Option<DateTime<Utc>>,
    /// True when retention moved it to `outbox_archive`.
    pub archived: bool,
}

pub const DELIVERIES_OF: Statement = Statement::new(
    "outbox.deliveries_of",
    "SELECT id, destination, status, attempts, last_status_code, last_error, created_at,
            processed_at, false AS archived
       FROM outbox WHERE inbox_id = CAST(:inbox_id AS uuid)
     UNION ALL
     SELECT id, destination, status, attempts, last_status_code, last_error, created_at,
            processed_at, true AS archived
       FROM outbox_archive WHERE inbox_id = CAST(:inbox_id AS uuid)
     ORDER BY created_at, id
     LIMIT 1000",
);

/// The deliveries written for inbox row `inbox_id` (at most 1,000, oldest
/// first), from the outbox and its archive.
pub async fn deliveries_of(
    db: &dyn Executor,
    inbox_id: Uuid,
) -> Result<Vec<TrailDelivery>, DbError> {
    let rows = db
        .execute(&DELIVERIES_OF, &params! { "inbox_id" => inbox_id })
        .await?;
    rows.rows
        .iter()
        .map(|r| {
            let status = r.text("status")?;
            Ok(TrailDelivery {
                id: r.uuid("id")?,
                destination: r.text("destination")?,
                status: status
                    .parse()
                    .map_err(|e: super::UnknownStatus| DbError::Decode {
                        statement: DELIVERIES_OF.name,
                        column: "status".into(),
                        detail: e.to_string(),
                    })?,
                attempts: r.i64("attempts")?,
                last_status_code: r.opt_i64("last_status_code")?,
                last_error: r.opt_text("last_error")?,
                created_at: r.timestamp("created_at")?,
                processed_at: r.opt_timestamp("processed_at")?,
                archived: r.bool("archived")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_the_json_the_database_checks_and_reads_back() {
        let origin = Origin {
            inbox_id: Uuid::nil(),
            partner: Some("stripe".into()),
            event_id: Some("evt_1".into()),
            received_at: None,
            trace_id: None,
        };
        let text = origin.to_json();
        assert_eq!(
            text,
            r#"{"inbox_id":"00000000-0000-0000-0000-000000000000","partner":"stripe","event_id":"evt_1"}"#
        );
        let back: Origin = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, origin);
    }
}
