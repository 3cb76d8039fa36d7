//! `outbox_destinations`: the configured destinations and what each
//! subscribes to, as the database evaluates them when an event is published
//! without a destination (`hookbox_publish`, migration 11). The relay copies
//! the configuration there at the start of every run ([`sync`]), and so does
//! the local stack when it starts; a configuration change reaches
//! publishers then. Rows already written keep their destinations.

use chrono::{DateTime, Utc};

use super::subscription::like_pattern;
use crate::config::HookboxConfig;
use crate::params;
use crate::store::{DbError, Executor, Statement, fetch_one};

/// Makes `outbox_destinations` what `config` says, in ONE statement:
/// destinations no longer configured are removed, new and changed ones
/// written; unchanged rows are not touched (so a run that changes nothing
/// writes nothing). Returns how many rows changed.
pub const SYNC: Statement = Statement::new(
    "outbox.destinations_sync",
    "WITH desired AS (
         SELECT d.name, d.event_types, d.event_like, d.filters
           FROM jsonb_to_recordset(CAST(:destinations AS jsonb))
                AS d(name text, event_types text[], event_like text[], filters jsonb)),
     gone AS (
         DELETE FROM outbox_destinations AS o
          WHERE NOT EXISTS (SELECT 1 FROM desired AS d WHERE d.name = o.name)
         RETURNING 1),
     changed AS (
         INSERT INTO outbox_destinations AS o (name, event_types, event_like, filters, synced_at)
         SELECT name, event_types, event_like, filters, CAST(:now AS timestamptz) FROM desired
         ON CONFLICT (name) DO UPDATE
            SET event_types = EXCLUDED.event_types, event_like = EXCLUDED.event_like,
                filters = EXCLUDED.filters, synced_at = EXCLUDED.synced_at
          WHERE (o.event_types, o.event_like, o.filters)
                IS DISTINCT FROM (EXCLUDED.event_types, EXCLUDED.event_like, EXCLUDED.filters)
         RETURNING 1)
     SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM changed) AS changed",
);

/// `:destinations` of [`SYNC`] for `config`.
fn desired(config: &HookboxConfig) -> serde_json::Value {
    config
        .destinations()
        .map(|d| {
            let (types, filters) = match &d.subscription {
                Some(s) => (s.event_types.clone(), s.filters_json()),
                None => (Vec::new(), serde_json::json!([])),
            };
            let like: Vec<String> = types.iter().map(|t| like_pattern(t)).collect();
            serde_json::json!({
                "name": d.name,
                "event_types": types,
                "event_like": like,
                "filters": filters,
            })
        })
        .collect()
}

/// Copies `config`'s destinations and subscriptions to the database (see
/// [`SYNC`]); returns how many rows changed.
pub async fn sync(
    db: &dyn Executor,
    config: &HookboxConfig,
    now: DateTime<Utc>,
) -> Result<u64, DbError> {
    let row = fetch_one(
        db,
        &SYNC,
        &params! { "destinations" => desired(config), "now" => now },
    )
    .await?;
    Ok(u64::try_from(row.i64("changed")?).unwrap_or(0))
}
