//! What the relay knows of the endpoints it delivers to: each endpoint is a
//! [`Destination`] like a configured HTTP one (its URL, its secrets opened,
//! its custom headers, the defaults of a configured destination for the
//! rest), read from the database for the endpoints of a claimed batch (one
//! statement for all of them) and kept for a short time (`ttl`), so a
//! changed URL, header or rotation reaches deliveries within it. A rotated
//! secret keeps signing through its grace period, so the cache never signs
//! with a secret the receiver no longer accepts as long as `ttl` is shorter
//! than the grace.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use ipnet::IpNet;
use uuid::Uuid;

use super::secrets::{SealedSecret, SecretKeeper, generate_secret};
use crate::config::{
    DEFAULT_BACKOFF_SECS, DEFAULT_COOL_DOWN, DEFAULT_DESTINATION_TIMEOUT, DEFAULT_MAX_IN_FLIGHT,
    Destination, HttpTarget, Target, is_endpoint,
};
use crate::outbox::relay::{EndpointResolver, Endpoints, Unresolved};
use crate::params;
use crate::store::{DbError, Executor, Statement};

/// Default time an endpoint is kept before it is read again.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// The endpoints named, with what delivering needs and their sealed secrets
/// still valid at `:now`. The names are an array the primary key is probed
/// with (`= ANY (ARRAY(…))`: an `IN (SELECT …)` made a generic plan hash
/// every endpoint, tests/query_plans.rs).
pub const ENDPOINTS: Statement = Statement::new(
    "tenants.endpoints_for_relay",
    "SELECT e.id, e.tenant_id, e.url, e.headers, coalesce(e.rate_limit, t.rate_limit) AS rate_limit,
            d.ordered, d.trip_after, d.cool_down_secs, d.disable_after_secs,
            (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'id', s.id, 'data_key_id', s.data_key_id,
                        'sealed', translate(encode(s.sealed, 'base64'), E'\n', ''),
                        'current', s.expires_at IS NULL)
                    ORDER BY s.created_at, s.id), '[]')
               FROM hookbox_endpoint_secrets AS s
              WHERE s.endpoint_id = e.id
                AND (s.expires_at IS NULL OR s.expires_at > CAST(:now AS timestamptz))) AS secrets
       FROM hookbox_endpoints AS e
       JOIN hookbox_tenants AS t ON t.id = e.tenant_id
       JOIN outbox_destinations AS d ON d.name = e.id
      WHERE e.id = ANY (ARRAY(SELECT jsonb_array_elements_text(CAST(:ids AS jsonb))))",
);

/// Resolves endpoints for the relay.
#[derive(Debug)]
pub struct EndpointDirectory {
    keeper: SecretKeeper,
    allowed_networks: Vec<IpNet>,
    ttl: Duration,
    cache: Mutex<foldhash::HashMap<String, Cached>>,
}

/// An endpoint as read at a time.
type Cached = (DateTime<Utc>, Arc<Destination>);

impl EndpointDirectory {
    /// Endpoints whose secrets `keeper` opens; the SSRF guard lets them
    /// resolve to `allowed_networks` (none in production: public addresses
    /// only; the local stack allows loopback).
    pub fn new(keeper: SecretKeeper, allowed_networks: Vec<IpNet>) -> Self {
        Self {
            keeper,
            allowed_networks,
            ttl: DEFAULT_TTL,
            cache: Mutex::default(),
        }
    }

    /// The same directory keeping endpoints for `ttl`.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Its secret keeper.
    pub fn keeper(&self) -> &SecretKeeper {
        &self.keeper
    }

    /// The endpoints among `names` (configured destinations' names are
    /// ignored): each as a destination, or why it cannot be delivered to
    /// now. One statement for those not cached (or cached over `ttl` ago).
    pub async fn resolve_endpoints(
        &self,
        db: &dyn Executor,
        names: &[&str],
        now: DateTime<Utc>,
    ) -> Endpoints {
        let mut out = Endpoints::with_capacity_and_hasher(names.len(), Default::default());
        let mut wanted = Vec::new();
        {
            // (a batch names each endpoint once per row: a set, not a scan of
            // `wanted`, which cost a batch of 100 endpoints 5,000 comparisons)
            let mut seen =
                foldhash::HashSet::with_capacity_and_hasher(names.len(), Default::default());
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for name in names.iter().copied().filter(|n| is_endpoint(n)) {
                if !seen.insert(name) {
                    continue;
                }
                match cache.get(name) {
                    Some((at, d))
                        if now - *at < crate::outbox::relay::chrono_duration(self.ttl) =>
                    {
                        out.insert(name.to_string(), Ok(d.clone()));
                    }
                    _ => wanted.push(name),
                }
            }
        }
        if wanted.is_empty() {
            return out;
        }
        let rows = match db
            .execute(
                &ENDPOINTS,
                &params! { "ids" => serde_json::json!(wanted), "now" => now },
            )
            .await
        {
            Ok(rows) => rows.rows,
            Err(e) => {
                for name in wanted {
                    out.insert(
                        name.to_string(),
                        Err(Unresolved {
                            reason: format!("cannot read endpoint {name:?}: {e}"),
                            retryable: e.is_retryable(),
                        }),
                    );
                }
                return out;
            }
        };
        for row in &rows {
            let Ok(id) = row.text("id") else { continue };
            let resolved = self.destination(db, row, &id, now).await;
            if let Ok(d) = &resolved {
                self.cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.clone(), (now, d.clone()));
            }
            out.insert(id, resolved);
        }
        for name in wanted {
            out.entry(name.to_string()).or_insert_with(|| {
                Err(Unresolved {
                    reason: format!("endpoint {name:?} does not exist (deleted)"),
                    retryable: false,
                })
            });
        }
        out
    }

    async fn destination(
        &self,
        db: &dyn Executor,
        row: &crate::store::Row,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Arc<Destination>, Unresolved> {
        let fail = |reason: String, retryable: bool| Unresolved { reason, retryable };
        let decode = |e: DbError| fail(format!("cannot read endpoint {id:?}: {e}"), false);
        let url = row.text("url").map_err(decode)?;
        let url = reqwest::Url::parse(&url)
            .map_err(|e| fail(format!("endpoint {id:?} has an unusable url: {e}"), false))?;
        let headers = match row.json("headers").map_err(decode)? {
            serde_json::Value::Object(map) => map
                .into_iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_string())))
                .collect(),
            _ => Vec::new(),
        };
        let mut sealed =
            sealed_secrets(&row.json("secrets").map_err(decode)?).map_err(|detail| {
                fail(
                    format!("cannot read endpoint {id:?}'s secrets: {detail}"),
                    false,
                )
            })?;
        let keeper_error = |e: super::secrets::SecretError| {
            let retryable = e.is_retryable();
            fail(format!("cannot sign for endpoint {id:?}: {e}"), retryable)
        };
        if !sealed.iter().any(|s| s.current) {
            // created or rotated through SQL: hookbox seals its new secret
            let actor = super::Actor::new(super::Face::Relay, "hookbox-relay");
            self.keeper
                .store(
                    db,
                    id,
                    &generate_secret(),
                    Duration::ZERO,
                    true,
                    Some(&actor),
                )
                .await
                .map_err(keeper_error)?;
            sealed = self
                .keeper
                .sealed(db, id, now)
                .await
                .map_err(keeper_error)?;
        }
        let mut secrets = Vec::with_capacity(sealed.len());
        for s in &sealed {
            secrets.push(self.keeper.open(db, id, s).await.map_err(keeper_error)?);
        }
        let int = |column: &str| row.opt_i64(column).ok().flatten();
        let backoff: Vec<Duration> = DEFAULT_BACKOFF_SECS
            .iter()
            .map(|s| Duration::from_secs(*s))
            .collect();
        Ok(Arc::new(Destination {
            name: id.to_string(),
            target: Target::Http(HttpTarget {
                url,
                secrets,
                allowed_networks: self.allowed_networks.clone(),
                headers,
            }),
            timeout: DEFAULT_DESTINATION_TIMEOUT,
            max_attempts: u32::try_from(backoff.len() + 1).unwrap_or(u32::MAX),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            ordered: row.bool("ordered").unwrap_or(false),
            backoff,
            subscription: None,
            trip_after: int("trip_after")
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(crate::config::DEFAULT_TRIP_AFTER),
            cool_down: int("cool_down_secs")
                .and_then(|n| u64::try_from(n).ok())
                .map_or(DEFAULT_COOL_DOWN, Duration::from_secs),
            disable_after: int("disable_after_secs")
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(Duration::from_secs),
            rate_limit_per_sec: int("rate_limit").and_then(|n| u32::try_from(n).ok()),
            tenant: row.text("tenant_id").ok(),
        }))
    }
}

fn sealed_secrets(doc: &serde_json::Value) -> Result<Vec<SealedSecret>, String> {
    let items = doc.as_array().ok_or("not a list")?;
    items
        .iter()
        .map(|s| {
            let uuid = |field: &str| {
                s.get(field)
                    .and_then(|v| v.as_str())
                    .and_then(|v| Uuid::parse_str(v).ok())
                    .ok_or(format!("{field} is not a uuid"))
            };
            Ok(SealedSecret {
                id: uuid("id")?,
                data_key_id: uuid("data_key_id")?,
                sealed: s
                    .get("sealed")
                    .and_then(|v| v.as_str())
                    .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
                    .ok_or("sealed is not base64")?,
                current: s.get("current").and_then(|v| v.as_bool()).unwrap_or(false),
            })
        })
        .collect()
}

#[async_trait::async_trait]
impl EndpointResolver for EndpointDirectory {
    async fn resolve(&self, db: &dyn Executor, names: &[&str], now: DateTime<Utc>) -> Endpoints {
        self.resolve_endpoints(db, names, now).await
    }
}
