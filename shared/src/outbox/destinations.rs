//! `outbox_destinations`: the configured destinations and what each
//! subscribes to, as the database evaluates them when an event is published
//! without a destination (`hookbox_publish`, migration 11). The relay copies
//! the configuration there at the start of every run ([`sync`]), and so does
//! the local stack when it starts; a configuration change reaches
//! publishers then. Rows already written keep their destinations. Each row
//! also names the partners whose routes send to it (`routed_from`): the
//! only destinations ingest's role may forward a partner's events to
//! (migration 19), so a route added to the configuration is forwarded at
//! ingest from the next sync on (by the processor until then).

use chrono::{DateTime, Utc};

use crate::config::HookboxConfig;
use crate::params;
use crate::store::{DbError, Executor, Statement, fetch_one};
use crate::subscription::like_pattern;

/// Makes `outbox_destinations` what `config` says, in ONE statement:
/// destinations no longer configured are removed, new and changed ones
/// written; unchanged rows are not touched (so a run that changes nothing
/// writes nothing). Tenants' endpoints (rows with a tenant, migration 20)
/// are never touched: they are data, not configuration. Returns how many
/// rows changed.
pub const SYNC: Statement = Statement::new(
    "outbox.destinations_sync",
    "WITH desired AS (
         SELECT d.name, d.event_types, d.event_like, d.filters, d.trip_after,
                d.cool_down_secs, d.disable_after_secs, d.routed_from
           FROM jsonb_to_recordset(CAST(:destinations AS jsonb))
                AS d(name text, event_types text[], event_like text[], filters jsonb,
                     trip_after integer, cool_down_secs integer, disable_after_secs bigint,
                     routed_from text[])),
     gone AS (
         DELETE FROM outbox_destinations AS o
          WHERE o.tenant_id IS NULL
            AND NOT EXISTS (SELECT 1 FROM desired AS d WHERE d.name = o.name)
         RETURNING 1),
     changed AS (
         INSERT INTO outbox_destinations AS o (name, event_types, event_like, filters, trip_after,
                                               cool_down_secs, disable_after_secs, routed_from,
                                               synced_at)
         SELECT name, event_types, event_like, filters, trip_after, cool_down_secs,
                disable_after_secs, routed_from, CAST(:now AS timestamptz)
           FROM desired
         ON CONFLICT (name) DO UPDATE
            SET event_types = EXCLUDED.event_types, event_like = EXCLUDED.event_like,
                filters = EXCLUDED.filters, trip_after = EXCLUDED.trip_after,
                cool_down_secs = EXCLUDED.cool_down_secs,
                disable_after_secs = EXCLUDED.disable_after_secs,
                routed_from = EXCLUDED.routed_from, synced_at = EXCLUDED.synced_at
          WHERE o.tenant_id IS NULL
            AND (o.event_types, o.event_like, o.filters, o.trip_after, o.cool_down_secs,
                 o.disable_after_secs, o.routed_from)
                IS DISTINCT FROM (EXCLUDED.event_types, EXCLUDED.event_like, EXCLUDED.filters,
                                  EXCLUDED.trip_after, EXCLUDED.cool_down_secs,
                                  EXCLUDED.disable_after_secs, EXCLUDED.routed_from)
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
            // what ingest's role may forward to it (migration 19)
            let routed_from: Vec<&str> = config
                .partners()
                .filter(|p| p.routes.iter().any(|r| r.to == d.name))
                .map(|p| p.name.as_str())
                .collect();
            serde_json::json!({
                "name": d.name,
                "event_types": types,
                "event_like": like,
                "filters": filters,
                "trip_after": d.trip_after,
                "cool_down_secs": d.cool_down.as_secs().max(1),
                "disable_after_secs": d.disable_after.map_or(0, |t| t.as_secs()),
                "routed_from": routed_from,
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

/// A destination's state, as the relay last recorded it (migration 13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationHealth {
    /// Its name.
    pub name: String,
    /// Failed attempts in a row.
    pub consecutive_failures: i64,
    /// Since when it has been failing (its first failure since a success).
    pub failing_since: Option<DateTime<Utc>>,
    /// While set and in the future: the breaker is open (nothing is sent);
    /// set and past: the next claim takes one probe.
    pub open_until: Option<DateTime<Utc>>,
    /// Disabled (by continuous failure, or an operator) since then.
    pub disabled_at: Option<DateTime<Utc>>,
    /// Why.
    pub disabled_reason: Option<String>,
    /// Rows waiting for it.
    pub pending: i64,
}

impl DestinationHealth {
    /// `disabled`, `open` (cool-down), `probing` (cool-down over, one
    /// request allowed), or `healthy`, at `now`.
    pub fn state(&self, now: DateTime<Utc>) -> &'static str {
        match (self.disabled_at, self.open_until) {
            (Some(_), _) => "disabled",
            (None, Some(until)) if until > now => "open",
            (None, Some(_)) => "probing",
            (None, None) => "healthy",
        }
    }
}

/// What [`health`] and [`health_of`] read of a destination.
macro_rules! health_select {
    () => {
        "SELECT d.name, d.consecutive_failures, d.failing_since, d.open_until, d.disabled_at,
                d.disabled_reason,
                (SELECT count(*) FROM outbox AS o
                  WHERE o.destination = d.name AND o.status = 'pending') AS pending
           FROM outbox_destinations AS d"
    };
}

/// A tenant's endpoint that is not healthy (failing, tripped, disabled or
/// held): the endpoints [`health`] lists.
macro_rules! endpoint_not_healthy {
    () => {
        "(d.consecutive_failures > 0 OR d.failing_since IS NOT NULL OR d.open_until IS NOT NULL
          OR d.disabled_at IS NOT NULL OR d.held)"
    };
}

pub const HEALTH: Statement = Statement::new(
    "outbox.destinations_health",
    concat!(
        health_select!(),
        " WHERE d.tenant_id IS NULL OR ",
        endpoint_not_healthy!(),
        " ORDER BY d.name"
    ),
);

pub const HEALTH_OF: Statement = Statement::new(
    "outbox.destination_health_of",
    concat!(health_select!(), " WHERE d.name = :name"),
);

pub const HEALTHY_ENDPOINTS: Statement = Statement::new(
    "outbox.destinations_healthy_endpoints",
    concat!(
        "SELECT count(*) AS n FROM outbox_destinations AS d
          WHERE d.tenant_id IS NOT NULL AND NOT ",
        endpoint_not_healthy!()
    ),
);

fn health_row(r: &crate::store::Row) -> Result<DestinationHealth, DbError> {
    Ok(DestinationHealth {
        name: r.text("name")?,
        consecutive_failures: r.i64("consecutive_failures")?,
        failing_since: r.opt_timestamp("failing_since")?,
        open_until: r.opt_timestamp("open_until")?,
        disabled_at: r.opt_timestamp("disabled_at")?,
        disabled_reason: r.opt_text("disabled_reason")?,
        pending: r.i64("pending")?,
    })
}

/// The health of every configured destination, by name, and of every
/// tenant's endpoint that is not healthy (failing, tripped, disabled or
/// held): with 10,000 endpoints the list stays what an operator looks for.
/// The healthy endpoints are counted by [`healthy_endpoints`], each one's
/// health read by [`health_of`].
pub async fn health(db: &dyn Executor) -> Result<Vec<DestinationHealth>, DbError> {
    db.execute(&HEALTH, &params! {})
        .await?
        .rows
        .iter()
        .map(health_row)
        .collect()
}

/// One synced destination's health (`None`: no such destination).
pub async fn health_of(
    db: &dyn Executor,
    name: &str,
) -> Result<Option<DestinationHealth>, DbError> {
    db.execute(&HEALTH_OF, &params! { "name" => name })
        .await?
        .rows
        .first()
        .map(health_row)
        .transpose()
}

/// How many tenants' endpoints are healthy (those [`health`] leaves out).
pub async fn healthy_endpoints(db: &dyn Executor) -> Result<i64, DbError> {
    fetch_one(db, &HEALTHY_ENDPOINTS, &params! {})
        .await?
        .i64("n")
}

pub const ENABLE: Statement = Statement::new(
    "outbox.destination_enable",
    "UPDATE outbox_destinations
        SET disabled_at = NULL, disabled_reason = NULL, consecutive_failures = 0,
            failing_since = NULL, open_until = NULL
      WHERE name = :name",
);

/// Enables `name` again and closes its breaker: its waiting rows are
/// delivered from the next claim on (none was lost or charged an attempt
/// meanwhile). False when no such destination is synced.
pub async fn enable(db: &dyn Executor, name: &str) -> Result<bool, DbError> {
    Ok(db
        .execute(&ENABLE, &params! { "name" => name })
        .await?
        .affected
        == 1)
}

pub const DISABLE: Statement = Statement::new(
    "outbox.destination_disable",
    "UPDATE outbox_destinations
        SET disabled_at = CAST(:now AS timestamptz), disabled_reason = :reason
      WHERE name = :name",
);

/// Disables `name` (an operator's decision, with `reason`): nothing is
/// claimed for it until [`enable`]. False when no such destination is
/// synced.
pub async fn disable(
    db: &dyn Executor,
    name: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbError> {
    Ok(db
        .execute(
            &DISABLE,
            &params! { "name" => name, "reason" => reason, "now" => now },
        )
        .await?
        .affected
        == 1)
}

pub const STATE_COUNTS: Statement = Statement::new(
    "outbox.destinations_state_counts",
    "SELECT count(*) FILTER (WHERE disabled_at IS NULL AND open_until IS NOT NULL) AS tripped,
            count(*) FILTER (WHERE disabled_at IS NOT NULL) AS disabled
       FROM outbox_destinations",
);

/// How many destinations have their breaker open or probing, and how many
/// are disabled: the relay's metrics at each run's end (the destinations
/// table only, never the outbox).
pub async fn state_counts(db: &dyn Executor) -> Result<(u64, u64), DbError> {
    let row = fetch_one(db, &STATE_COUNTS, &params! {}).await?;
    let n = |c: &str| row.i64(c).map(|v| u64::try_from(v).unwrap_or(0));
    Ok((n("tripped")?, n("disabled")?))
}
