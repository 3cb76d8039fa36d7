//! Tenants and their endpoints (docs/tenants.md) in the run: a few tenants
//! with endpoints created before the first webhook, then, between relay
//! runs, endpoints added, rotated (sealed by hookbox at once, as the CLI
//! does, or through SQL and sealed by the relay before its next delivery),
//! disabled, enabled and deleted. The processed `sw` events of some orders
//! are published to the order's tenant in the processor's transaction
//! ([`publish`]), so every fault of the run (crashes, outages, failing
//! receivers, two relays at once) hits them too.
//!
//! [`Tenants`] is the run's model of what it did, on the run's clock: when
//! each endpoint existed and was disabled, what its deletion counted, and
//! every secret it has had (read back from the database and opened with the
//! key vault, so the relay's own seals are known too), for
//! [`crate::tenant_ledger`] to check against.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::processing::{HandlerError, InboxEvent};
use hookbox::signature::Secret;
use hookbox::store::{Executor, Transaction};
use hookbox::tenants::secrets::SealedSecret;
use hookbox::tenants::{EndpointDirectory, SecretKeeper, TenantEvent, manage, publish_to};
use hookbox::vault::KeyVault;
use hookbox::vault::local::LocalVault;
use serde_json::json;
use uuid::Uuid;

use crate::ledger::statement;

/// Tenants of the run (`t0` … ), each with three endpoints at the start.
pub(crate) const TENANTS: usize = 6;

/// What an endpoint subscribes to: every type, `order.*`, or one type.
const FILTERS: [Option<&str>; 3] = [None, Some("order.*"), Some("payment.received")];

/// Grace of a rotation: longer than the directory's cache (10 s), as
/// docs/tenants.md asks.
const GRACE: Duration = Duration::from_secs(3_600);

/// The tenant an order belongs to, for the orders whose events are
/// published to tenants (numbers ending in 1, 2 or 3: three in ten, to keep
/// the run within its budget).
pub(crate) fn tenant_of(order: Option<&str>) -> Option<usize> {
    let number: usize = order?.rsplit('-').next()?.parse().ok()?;
    matches!(number % 10, 1..=3).then_some(number % TENANTS)
}

pub(crate) fn tenant_uid(tenant: usize) -> String {
    format!("t{tenant}")
}

/// Whether an endpoint subscribed to `filter` gets `event_type`.
pub(crate) fn matches(filter: Option<&str>, event_type: &str) -> bool {
    match filter {
        None => true,
        Some(pattern) => match pattern.strip_suffix('*') {
            Some(prefix) => event_type.starts_with(prefix),
            None => pattern == event_type,
        },
    }
}

/// Publishes a processed event of a tenant's order to that tenant, in the
/// processor's transaction (the order is the aggregate: an `ordered`
/// endpoint gets its events in order). Nothing for other orders.
pub(crate) async fn publish(
    event: &InboxEvent<'_>,
    tx: &dyn Transaction,
) -> Result<(), HandlerError> {
    let order = event.row.ordering_key.as_deref();
    let Some(tenant) = tenant_of(order) else {
        return Ok(());
    };
    let event_type = event.event_type().unwrap_or("unknown");
    let out = TenantEvent {
        event_type: event_type.into(),
        payload: json!({
            "event_id": event.row.event_id,
            "order": order,
            "tenant": tenant_uid(tenant),
            "type": event_type,
            "at": event.now.timestamp(),
        }),
        aggregate: Some(("order".into(), order.unwrap_or_default().into())),
        channels: None,
    };
    publish_to(tx, &tenant_uid(tenant), &out, event.now)
        .await
        .map_err(HandlerError::from)?;
    Ok(())
}

/// A secret an endpoint has had.
#[derive(Debug, Clone)]
pub(crate) struct KnownSecret {
    pub(crate) id: Uuid,
    pub(crate) secret: Secret,
    /// The run's time it was first read (it exists from then on; the
    /// relay's own seals are read right after its run, at the same time).
    pub(crate) first_seen: DateTime<Utc>,
    /// When its grace ends, as the database set it (the relay signs with
    /// it while this is after its "now"); `None` while current.
    pub(crate) expires_at: Option<DateTime<Utc>>,
}

/// One endpoint, as the run made and changed it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) id: String,
    pub(crate) tenant: usize,
    pub(crate) filter: Option<&'static str>,
    pub(crate) ordered: bool,
    pub(crate) created: DateTime<Utc>,
    /// When it was deleted, and how many undelivered deliveries its
    /// deletion counted.
    pub(crate) deleted: Option<(DateTime<Utc>, i64)>,
    /// Disabled from, until (`None`: still disabled).
    pub(crate) disabled: Vec<(DateTime<Utc>, Option<DateTime<Utc>>)>,
    pub(crate) secrets: Vec<KnownSecret>,
}

impl Endpoint {
    /// It existed at `at` (changes at a time come before the publishing
    /// and the relay runs of that time).
    pub(crate) fn existed_at(&self, at: DateTime<Utc>) -> bool {
        self.created <= at && self.deleted.is_none_or(|(gone, _)| gone > at)
    }

    /// It was disabled at `at`.
    pub(crate) fn disabled_at(&self, at: DateTime<Utc>) -> bool {
        self.disabled
            .iter()
            .any(|(from, until)| *from <= at && until.is_none_or(|until| at < until))
    }

    fn is_disabled(&self) -> bool {
        self.disabled
            .last()
            .is_some_and(|(_, until)| until.is_none())
    }
}

/// What the run changed, by kind.
#[derive(Debug, Default, Clone)]
pub(crate) struct Changes {
    pub(crate) added: u64,
    pub(crate) rotated: u64,
    pub(crate) rotated_through_sql: u64,
    pub(crate) disabled: u64,
    pub(crate) enabled: u64,
    pub(crate) deleted: u64,
    /// Undelivered deliveries the deletions counted.
    pub(crate) deleted_undelivered: i64,
}

/// The run's tenants and what it did to their endpoints.
#[derive(Debug)]
pub(crate) struct Tenants {
    vault: Arc<dyn KeyVault>,
    /// The management side's keeper (the CLI's): rotations sealed at once.
    keeper: SecretKeeper,
    rng: fastrand::Rng,
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) changes: Changes,
    /// Management calls made (the first ones go through every kind).
    calls: usize,
    next_uid: usize,
}

/// A change between relay runs.
#[derive(Debug, Clone, Copy)]
enum Change {
    Add,
    Rotate,
    RotateThroughSql,
    Disable,
    Enable,
    Delete,
}

/// The first changes: one of each kind; two endpoints disabled, one
/// deleted with what it held meanwhile, the other enabled (what it missed
/// is sent).
const KINDS: [Change; 11] = [
    Change::Disable,
    Change::Rotate,
    Change::Add,
    Change::Disable,
    Change::RotateThroughSql,
    Change::Rotate,
    Change::Add,
    Change::Rotate,
    Change::Rotate,
    Change::Delete,
    Change::Enable,
];

impl Tenants {
    /// The tenants and their first endpoints, created at `now` (every
    /// endpoint without a secret: the relay seals one before its first
    /// delivery).
    pub(crate) async fn create(
        db: &dyn Executor,
        seed: u64,
        now: DateTime<Utc>,
    ) -> Result<Self, String> {
        let vault: Arc<dyn KeyVault> = Arc::new(LocalVault::random());
        let mut tenants = Self {
            keeper: SecretKeeper::new(vault.clone()),
            vault,
            rng: fastrand::Rng::with_seed(seed ^ 0x7e4a_4175),
            endpoints: Vec::new(),
            changes: Changes::default(),
            calls: 0,
            next_uid: 0,
        };
        for tenant in 0..TENANTS {
            let uid = tenant_uid(tenant);
            manage::create_tenant(db, &json!({"uid": uid, "name": format!("T{tenant}")}), None)
                .await
                .map_err(|e| format!("creating tenant {uid}: {e}"))?;
            for _ in 0..3 {
                tenants.add(db, tenant, now).await?;
            }
        }
        tenants.changes.added = 0;
        Ok(tenants)
    }

    /// A directory for one relay instance (its own keeper, the same key
    /// vault, the default cache time).
    pub(crate) fn directory(&self) -> EndpointDirectory {
        EndpointDirectory::new(SecretKeeper::new(self.vault.clone()), Vec::new())
    }

    async fn add(
        &mut self,
        db: &dyn Executor,
        tenant: usize,
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        self.next_uid += 1;
        let n = self.next_uid;
        let filter = FILTERS[n % FILTERS.len()];
        // one endpoint in two gets an order's events in order
        let ordered = n.is_multiple_of(2);
        let mut spec = json!({
            "uid": format!("e{n}"),
            "url": format!("https://t{tenant}-e{n}.torture.invalid/hooks"),
            "ordered": ordered,
        });
        if let Some(f) = filter {
            spec["filter_types"] = json!([f]);
        }
        let created = manage::create_endpoint(db, &tenant_uid(tenant), &spec, None)
            .await
            .map_err(|e| format!("creating endpoint e{n} of t{tenant}: {e}"))?;
        self.endpoints.push(Endpoint {
            id: created.id,
            tenant,
            filter,
            ordered,
            created: now,
            deleted: None,
            disabled: Vec::new(),
            secrets: Vec::new(),
        });
        self.changes.added += 1;
        Ok(())
    }

    /// One change at `now` (the database is up): the first six calls make
    /// one of each kind, then at random. An endpoint it needs and does not
    /// find (nothing disabled to enable, …) makes it add one instead.
    pub(crate) async fn change(
        &mut self,
        db: &dyn Executor,
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        let kind = if self.calls < KINDS.len() {
            KINDS[self.calls]
        } else {
            match self.rng.u8(0..20) {
                0..=2 => Change::Add,
                3..=7 => Change::Rotate,
                8..=9 => Change::RotateThroughSql,
                10..=13 => Change::Disable,
                14..=17 => Change::Enable,
                _ => Change::Delete,
            }
        };
        self.calls += 1;
        // the secrets the relay sealed so far, before one is rotated or
        // deleted with its endpoint
        self.observe_secrets(db, now).await?;
        let live: Vec<usize> = (0..self.endpoints.len())
            .filter(|i| self.endpoints[*i].deleted.is_none())
            .collect();
        let pick = |rng: &mut fastrand::Rng, want: &dyn Fn(&Endpoint) -> bool| {
            let some: Vec<usize> = live
                .iter()
                .copied()
                .filter(|i| want(&self.endpoints[*i]))
                .collect();
            (!some.is_empty()).then(|| some[rng.usize(..some.len())])
        };
        let chosen = match kind {
            Change::Add => None,
            Change::Enable => pick(&mut self.rng, &|e| e.is_disabled()),
            // a deletion keeps at least two endpoints per tenant; one in
            // two takes a disabled endpoint, whose held deliveries go with it
            Change::Delete => {
                let counts = |tenant: usize| {
                    live.iter()
                        .filter(|i| self.endpoints[**i].tenant == tenant)
                        .count()
                };
                let held = self.calls <= KINDS.len() || self.rng.bool();
                pick(&mut self.rng, &|e| {
                    counts(e.tenant) > 2 && (!held || e.is_disabled())
                })
                .or_else(|| pick(&mut self.rng, &|e| counts(e.tenant) > 2))
            }
            // preferably one that gets every type of its tenant (so it
            // holds something), or that signs already (so a rotation
            // shows as two signatures)
            Change::Disable => pick(&mut self.rng, &|e| !e.is_disabled() && e.filter.is_none())
                .or_else(|| pick(&mut self.rng, &|e| !e.is_disabled())),
            Change::Rotate | Change::RotateThroughSql => pick(&mut self.rng, &|e| {
                !e.secrets.is_empty() && !e.is_disabled()
            })
            .or_else(|| pick(&mut self.rng, &|_| true)),
        };
        let Some(i) = chosen else {
            let tenant = self.rng.usize(..TENANTS);
            return self.add(db, tenant, now).await;
        };
        let (id, tenant) = (
            self.endpoints[i].id.clone(),
            tenant_uid(self.endpoints[i].tenant),
        );
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            format!("{what} endpoint {id} of {tenant}: {e}")
        };
        match kind {
            Change::Add => {}
            Change::Rotate => {
                self.keeper
                    .rotate(db, &id, None, GRACE, None)
                    .await
                    .map_err(|e| failed("rotating", &e))?;
                self.changes.rotated += 1;
            }
            Change::RotateThroughSql => {
                let grace = u32::try_from(GRACE.as_secs()).unwrap_or(u32::MAX);
                manage::rotate_secret_later(db, &tenant, &id, grace, None)
                    .await
                    .map_err(|e| failed("rotating (SQL)", &e))?;
                self.changes.rotated_through_sql += 1;
            }
            Change::Disable | Change::Enable => {
                let disable = matches!(kind, Change::Disable);
                manage::update_endpoint(db, &tenant, &id, &json!({"disabled": disable}), None)
                    .await
                    .map_err(|e| failed("disabling or enabling", &e))?;
                let endpoint = &mut self.endpoints[i];
                if disable {
                    endpoint.disabled.push((now, None));
                    self.changes.disabled += 1;
                } else {
                    if let Some(last) = endpoint.disabled.last_mut() {
                        last.1 = Some(now);
                    }
                    self.changes.enabled += 1;
                }
            }
            Change::Delete => {
                let gone = manage::delete_endpoint(db, &tenant, &id, None)
                    .await
                    .map_err(|e| failed("deleting", &e))?;
                self.endpoints[i].deleted = Some((now, gone.undelivered));
                self.changes.deleted += 1;
                self.changes.deleted_undelivered += gone.undelivered;
            }
        }
        self.observe_secrets(db, now).await
    }

    /// Every disabled endpoint enabled at `now` (before quiescence: what
    /// they missed must reach them).
    pub(crate) async fn enable_all(
        &mut self,
        db: &dyn Executor,
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        for endpoint in &mut self.endpoints {
            if endpoint.deleted.is_none() && endpoint.is_disabled() {
                let tenant = tenant_uid(endpoint.tenant);
                manage::update_endpoint(
                    db,
                    &tenant,
                    &endpoint.id,
                    &json!({"disabled": false}),
                    None,
                )
                .await
                .map_err(|e| format!("enabling endpoint {} of {tenant}: {e}", endpoint.id))?;
                if let Some(last) = endpoint.disabled.last_mut() {
                    last.1 = Some(now);
                }
                self.changes.enabled += 1;
            }
        }
        Ok(())
    }

    /// Reads every endpoint's secrets (those the relay sealed too), opens
    /// the new ones with the key vault, and notes when each was first seen
    /// and when its grace ends.
    pub(crate) async fn observe_secrets(
        &mut self,
        db: &dyn Executor,
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        let rows = db
            .execute(
                &statement(
                    "SELECT endpoint_id, CAST(id AS text) AS id, CAST(data_key_id AS text) AS data_key_id,
                            sealed, CAST(floor(extract(epoch FROM expires_at) * 1000) AS bigint) AS expires_ms
                       FROM hookbox_endpoint_secrets",
                ),
                &hookbox::params! {},
            )
            .await
            .map_err(|e| format!("reading the endpoints' sealed secrets: {e}"))?;
        for row in &rows.rows {
            let (endpoint_id, expires_at, sealed) =
                sealed_row(row).map_err(|e| format!("reading a sealed secret: {e}"))?;
            let Some(endpoint) = self.endpoints.iter_mut().find(|e| e.id == endpoint_id) else {
                continue;
            };
            if let Some(known) = endpoint.secrets.iter_mut().find(|s| s.id == sealed.id) {
                known.expires_at = expires_at;
                continue;
            }
            let secret = self
                .keeper
                .open(db, &endpoint_id, &sealed)
                .await
                .map_err(|e| format!("opening a secret of endpoint {endpoint_id}: {e}"))?;
            endpoint.secrets.push(KnownSecret {
                id: sealed.id,
                secret,
                first_seen: now,
                expires_at,
            });
        }
        Ok(())
    }

    /// Changes made so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls
    }

    /// The endpoint named `id`.
    pub(crate) fn endpoint(&self, id: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.id == id)
    }
}

/// One row of `hookbox_endpoint_secrets`: its endpoint, when its grace
/// ends, and the sealed secret.
fn sealed_row(
    row: &hookbox::store::Row,
) -> Result<(String, Option<DateTime<Utc>>, SealedSecret), hookbox::store::DbError> {
    let expires_at = row
        .opt_i64("expires_ms")?
        .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
    Ok((
        row.text("endpoint_id")?,
        expires_at,
        SealedSecret {
            id: row.uuid("id")?,
            data_key_id: row.uuid("data_key_id")?,
            sealed: row.bytes("sealed")?,
            current: expires_at.is_none(),
        },
    ))
}
