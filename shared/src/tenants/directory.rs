//! What the relay knows of the endpoints it delivers to: each endpoint is a
//! [`Destination`] like a configured HTTP one (its URL, its secrets opened,
//! its custom headers, the defaults of a configured destination for the
//! rest), built from the document the relay's claim returned with the
//! batch (as of the claim: `crate::outbox::repo`'s `endpoint_doc!`), so
//! a changed URL, header or rotation reaches the next claim's deliveries.
//! An endpoint whose document the claim did not return (over its budget)
//! is read in one statement for all of them and kept for a short time
//! (`ttl`). A rotated secret keeps signing through its grace period and
//! never after it: the document gives each secret's expiry, and an endpoint
//! kept is built again once one of its secrets expires. An endpoint built
//! once is kept with its document and reused while the document is
//! unchanged (its secrets are opened once).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use ipnet::IpNet;
use serde_json::Value;
use uuid::Uuid;

use super::secrets::{SealedSecret, SecretKeeper, generate_secret};
use crate::config::{
    DEFAULT_BACKOFF_SECS, DEFAULT_COOL_DOWN, DEFAULT_DESTINATION_TIMEOUT, DEFAULT_MAX_IN_FLIGHT,
    Destination, HttpTarget, Target, is_endpoint,
};
use crate::outbox::relay::{EndpointResolver, Endpoints, Unresolved};
use crate::params;
use crate::store::{Executor, Statement};

/// Default time an endpoint read on its own is kept before it is read
/// again.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// The endpoints named, each with its document (what delivering needs and
/// its sealed secrets, as the claims return it; NULL for one that does not
/// exist), each probed by its key.
pub const ENDPOINTS: Statement = Statement::new(
    "tenants.endpoints_for_relay",
    concat!(
        "SELECT x.id, (",
        crate::outbox::repo::endpoint_doc!("x.id"),
        ") AS endpoint FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS x(id)"
    ),
);

/// Resolves endpoints for the relay.
#[derive(Debug)]
pub struct EndpointDirectory {
    keeper: SecretKeeper,
    allowed_networks: Vec<IpNet>,
    ttl: Duration,
    cache: Mutex<foldhash::HashMap<String, Cached>>,
}

/// An endpoint as read at a time, and the document it was built from.
#[derive(Debug)]
struct Cached {
    at: DateTime<Utc>,
    built: Arc<Destination>,
    doc: Value,
    /// When the first of the secrets it signs with expires: it is built
    /// again from then (its document may be unchanged).
    until: Option<DateTime<Utc>>,
}

impl Cached {
    fn fresh(&self, now: DateTime<Utc>) -> bool {
        self.until.is_none_or(|until| now < until)
    }
}

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

    /// Endpoint `id` built from `doc` and kept with it.
    async fn remember(
        &self,
        db: &dyn Executor,
        id: &str,
        doc: &Value,
        now: DateTime<Utc>,
    ) -> Result<Arc<Destination>, Unresolved> {
        let (built, until) = self.destination(db, doc, id, now).await?;
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id.to_string(),
            Cached {
                at: now,
                built: built.clone(),
                doc: doc.clone(),
                until,
            },
        );
        Ok(built)
    }

    /// Endpoint `id` built from `doc` at `now`, and when the first of the
    /// secrets it signs with expires.
    async fn destination(
        &self,
        db: &dyn Executor,
        doc: &Value,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<(Arc<Destination>, Option<DateTime<Utc>>), Unresolved> {
        let fail = |reason: String, retryable: bool| Unresolved { reason, retryable };
        let url = doc
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(format!("endpoint {id:?} has no url"), false))?;
        let url = reqwest::Url::parse(url)
            .map_err(|e| fail(format!("endpoint {id:?} has an unusable url: {e}"), false))?;
        let headers = match doc.get("headers") {
            Some(Value::Object(map)) => map
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect(),
            _ => Vec::new(),
        };
        let mut sealed =
            sealed_secrets(doc.get("secrets").unwrap_or(&Value::Null), now).map_err(|detail| {
                fail(
                    format!("cannot read endpoint {id:?}'s secrets: {detail}"),
                    false,
                )
            })?;
        let keeper_error = |e: super::secrets::SecretError| {
            let retryable = e.is_retryable();
            fail(format!("cannot sign for endpoint {id:?}: {e}"), retryable)
        };
        if !sealed.iter().any(|(s, _)| s.current) {
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
                .map_err(keeper_error)?
                .into_iter()
                .map(|s| (s, None))
                .collect();
        }
        let until = sealed.iter().filter_map(|(_, until)| *until).min();
        let mut secrets = Vec::with_capacity(sealed.len());
        for (s, _) in &sealed {
            secrets.push(self.keeper.open(db, id, s).await.map_err(keeper_error)?);
        }
        let int = |field: &str| doc.get(field).and_then(Value::as_i64);
        let backoff: Vec<Duration> = DEFAULT_BACKOFF_SECS
            .iter()
            .map(|s| Duration::from_secs(*s))
            .collect();
        let built = Arc::new(Destination {
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
            ordered: doc.get("ordered").and_then(Value::as_bool).unwrap_or(false),
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
            tenant: doc
                .get("tenant_id")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        Ok((built, until))
    }
}

/// A sealed secret and its expiry (none for the current one).
type Expiring = (SealedSecret, Option<DateTime<Utc>>);

/// The secrets of a document (`doc`'s `secrets`) not expired at `now`.
fn sealed_secrets(doc: &Value, now: DateTime<Utc>) -> Result<Vec<Expiring>, String> {
    let items = doc.as_array().ok_or("not a list")?;
    let mut out = Vec::with_capacity(items.len());
    for s in items {
        let expires_at = match s.get("expires_at") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(|v| DateTime::parse_from_rfc3339(v).ok())
                    .ok_or("expires_at is not a time")?
                    .with_timezone(&Utc),
            ),
        };
        if expires_at.is_some_and(|t| t <= now) {
            continue;
        }
        let secret = {
            let uuid = |field: &str| {
                s.get(field)
                    .and_then(|v| v.as_str())
                    .and_then(|v| Uuid::parse_str(v).ok())
                    .ok_or(format!("{field} is not a uuid"))
            };
            SealedSecret {
                id: uuid("id")?,
                data_key_id: uuid("data_key_id")?,
                sealed: s
                    .get("sealed")
                    .and_then(|v| v.as_str())
                    .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
                    .ok_or("sealed is not base64")?,
                current: expires_at.is_none(),
            }
        };
        out.push((secret, expires_at));
    }
    Ok(out)
}

#[async_trait::async_trait]
impl EndpointResolver for EndpointDirectory {
    /// The endpoints among `names` (configured destinations' names are
    /// ignored): each as a destination, or why it cannot be delivered to
    /// now. Those in `supplied` are built from its document (or reused when
    /// it is the one they were built from); the rest come from the cache
    /// when read within `ttl`, else from one statement for all of them.
    async fn resolve(
        &self,
        db: &dyn Executor,
        names: &[&str],
        supplied: &[(String, Value)],
        now: DateTime<Utc>,
    ) -> Endpoints {
        let mut out = Endpoints::with_capacity_and_hasher(names.len(), Default::default());
        let supplied: foldhash::HashMap<&str, &Value> =
            supplied.iter().map(|(n, d)| (n.as_str(), d)).collect();
        let mut wanted = Vec::new();
        let mut to_build: Vec<(&str, &Value)> = Vec::new();
        {
            // (a batch names each endpoint once per row: a set, not a scan of
            // `wanted`, which cost a batch of 100 endpoints 5,000 comparisons)
            let mut seen =
                foldhash::HashSet::with_capacity_and_hasher(names.len(), Default::default());
            let ttl = crate::outbox::relay::chrono_duration(self.ttl);
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for name in names.iter().copied().filter(|n| is_endpoint(n)) {
                if !seen.insert(name) {
                    continue;
                }
                match (supplied.get(name), cache.get_mut(name)) {
                    (Some(doc), Some(c)) if **doc == c.doc && c.fresh(now) => {
                        c.at = now;
                        out.insert(name.to_string(), Ok(c.built.clone()));
                    }
                    (Some(doc), _) => to_build.push((name, doc)),
                    (None, Some(c)) if now - c.at < ttl && c.fresh(now) => {
                        out.insert(name.to_string(), Ok(c.built.clone()));
                    }
                    (None, _) => wanted.push(name),
                }
            }
        }
        for (name, doc) in to_build {
            let resolved = self.remember(db, name, doc, now).await;
            out.insert(name.to_string(), resolved);
        }
        if wanted.is_empty() {
            return out;
        }
        let rows = match db
            .execute(&ENDPOINTS, &params! { "ids" => serde_json::json!(wanted) })
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
            let resolved = match row.opt_json("endpoint") {
                // (deleted: said below)
                Ok(None) => continue,
                Ok(Some(doc)) => self.remember(db, &id, &doc, now).await,
                Err(e) => Err(Unresolved {
                    reason: format!("cannot read endpoint {id:?}: {e}"),
                    retryable: false,
                }),
            };
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
}
