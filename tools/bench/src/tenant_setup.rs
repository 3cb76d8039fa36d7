//! What the tenants section (`tenants`) runs on: tenants, endpoints and
//! due rows seeded with set-based SQL, the endpoints of a batch as the
//! relay's directory reads them (one bench secret), and a loopback receiver
//! that records when a quiet tenant's events arrive.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hookbox::clock::SystemClock;
use hookbox::config::{
    ConfigStore, DEFAULT_BACKOFF_SECS, DEFAULT_COOL_DOWN, DEFAULT_DESTINATION_TIMEOUT,
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_TRIP_AFTER, Destination, HookboxConfig, HttpTarget, Target,
};
use hookbox::relay::{EndpointResolver, Endpoints, HttpSender, Relay, Unresolved, WebhookSender};
use hookbox::signature::Secret;
use hookbox::store::{Database, Executor, Statement};

use crate::relay::{self, SECRET};

pub(crate) async fn exec(db: &dyn Executor, sql: String) -> anyhow::Result<()> {
    let sql: &'static str = Box::leak(sql.into_boxed_str());
    db.execute(&Statement::new("bench.tenants", sql), &hookbox::params! {})
        .await?;
    Ok(())
}

/// Tenants `1..=tenants` of seed `tag` (`app_` ids from the tag and their
/// numbers, uids `t{tag}-{n}`) and endpoints `1..=endpoints` spread over them
/// round robin (as ids in creation order spread a tenant's endpoints over
/// the name space), all at `url`.
pub(crate) async fn seed_endpoints(
    db: &dyn Executor,
    tag: u32,
    tenants: u64,
    endpoints: u64,
    url: &str,
) -> anyhow::Result<()> {
    exec(
        db,
        format!(
            "INSERT INTO hookbox_tenants (id, uid, name, created_at, updated_at)
             SELECT 'app_' || lpad(to_hex({tag}), 8, '0') || lpad(to_hex(g), 24, '0'),
                    't{tag}-' || g, 'tenant ' || g, now(), now()
               FROM generate_series(1, {tenants}) AS g"
        ),
    )
    .await?;
    exec(
        db,
        format!(
            "INSERT INTO outbox_destinations (name, tenant_id, event_types, event_like, synced_at)
             SELECT 'ep_' || lpad(to_hex({tag}), 8, '0') || lpad(to_hex(e), 24, '0'),
                    'app_' || lpad(to_hex({tag}), 8, '0') || lpad(to_hex(e % {tenants} + 1), 24, '0'),
                    '{{*}}', '{{%}}', now()
               FROM generate_series(1, {endpoints}) AS e"
        ),
    )
    .await?;
    exec(
        db,
        format!(
            "INSERT INTO hookbox_endpoints (id, tenant_id, url, created_at, updated_at)
             SELECT d.name, d.tenant_id, '{url}', now(), now()
               FROM outbox_destinations AS d
              WHERE d.name LIKE 'ep\\_' || lpad(to_hex({tag}), 8, '0') || '%'"
        ),
    )
    .await
}

/// `rows` due rows over endpoints `1..=endpoints` of seed `tag`, round robin.
pub(crate) async fn seed_rows(
    db: &dyn Executor,
    tag: u32,
    endpoints: u64,
    rows: u64,
) -> anyhow::Result<()> {
    exec(
        db,
        format!(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             SELECT gen_random_uuid(), 'message', 'm-{tag}-' || g, 'order.paid',
                    'ep_' || lpad(to_hex({tag}), 8, '0') || lpad(to_hex(g % {endpoints} + 1), 24, '0'),
                    jsonb_build_object('n', g, 'note', repeat('x', 200)), 'pending', now(), now()
               FROM generate_series(1, {rows}) AS g"
        ),
    )
    .await?;
    exec(db, "ANALYZE outbox".into()).await?;
    exec(db, "ANALYZE outbox_destinations".into()).await
}

/// The endpoints of a batch as the production directory has them: from the
/// documents the claim returned (reused while unchanged), the others read
/// with its statement (cached 10 s); signing with the bench secret.
#[derive(Debug, Default)]
struct BenchEndpoints {
    cache: Mutex<foldhash::HashMap<String, Cached>>,
    /// Diagnostic: every endpoint at this URL, never read from the database
    /// (what the directory's read costs the relay).
    known_at: Option<String>,
}

/// An endpoint as read at a time, and the document it was built from.
type Cached = (DateTime<Utc>, Arc<Destination>, serde_json::Value);

/// Endpoint `id` from its document (as claims return it).
fn from_doc(id: &str, doc: &serde_json::Value) -> anyhow::Result<Destination> {
    let url = doc
        .get("url")
        .and_then(|u| u.as_str())
        .ok_or_else(|| anyhow::anyhow!("endpoint {id:?} has no url"))?;
    let tenant = doc
        .get("tenant_id")
        .and_then(|t| t.as_str())
        .map(str::to_string);
    endpoint(id, url, tenant)
}

fn endpoint(id: &str, url: &str, tenant: Option<String>) -> anyhow::Result<Destination> {
    Ok(Destination {
        name: id.to_string(),
        target: Target::Http(HttpTarget {
            url: reqwest::Url::parse(url)?,
            secrets: vec![Secret::new(SECRET)],
            allowed_networks: vec!["127.0.0.0/8".parse()?],
            headers: Vec::new(),
        }),
        timeout: DEFAULT_DESTINATION_TIMEOUT,
        max_attempts: u32::try_from(DEFAULT_BACKOFF_SECS.len() + 1)?,
        max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        ordered: false,
        backoff: DEFAULT_BACKOFF_SECS
            .iter()
            .map(|s| Duration::from_secs(*s))
            .collect(),
        subscription: None,
        trip_after: DEFAULT_TRIP_AFTER,
        cool_down: DEFAULT_COOL_DOWN,
        disable_after: None,
        rate_limit_per_sec: None,
        tenant,
    })
}

#[async_trait::async_trait]
impl EndpointResolver for BenchEndpoints {
    async fn resolve(
        &self,
        db: &dyn Executor,
        names: &[&str],
        supplied: &[(String, serde_json::Value)],
        now: DateTime<Utc>,
    ) -> Endpoints {
        let mut out = Endpoints::with_capacity_and_hasher(names.len(), Default::default());
        if let Some(url) = &self.known_at {
            for name in names {
                match endpoint(name, url, None) {
                    Ok(d) => out.insert(name.to_string(), Ok(Arc::new(d))),
                    Err(e) => out.insert(
                        name.to_string(),
                        Err(Unresolved {
                            reason: format!("bench endpoint: {e:#}"),
                            retryable: false,
                        }),
                    ),
                };
            }
            return out;
        }
        let supplied: foldhash::HashMap<&str, &serde_json::Value> =
            supplied.iter().map(|(n, d)| (n.as_str(), d)).collect();
        let mut wanted: Vec<&str> = Vec::new();
        let mut docs: Vec<(String, serde_json::Value)> = Vec::new();
        {
            // (as the directory: each name once, through a set)
            let mut seen =
                foldhash::HashSet::with_capacity_and_hasher(names.len(), Default::default());
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for name in names.iter().filter(|n| seen.insert(**n)) {
                match (supplied.get(*name), cache.get_mut(*name)) {
                    (Some(doc), Some((at, d, was))) if *doc == was => {
                        *at = now;
                        out.insert(name.to_string(), Ok(d.clone()));
                    }
                    (Some(doc), _) => docs.push((name.to_string(), (*doc).clone())),
                    (None, Some((at, d, _))) if now - *at < chrono::Duration::seconds(10) => {
                        out.insert(name.to_string(), Ok(d.clone()));
                    }
                    (None, _) => wanted.push(name),
                }
            }
        }
        if !wanted.is_empty() {
            let read = db
                .execute(
                    &hookbox::tenants::directory::ENDPOINTS,
                    &hookbox::params! { "ids" => serde_json::json!(wanted) },
                )
                .await;
            match read {
                Ok(rows) => {
                    for row in &rows.rows {
                        match (row.text("id"), row.opt_json("endpoint")) {
                            (Ok(id), Ok(Some(doc))) => docs.push((id, doc)),
                            (Ok(_), Ok(None)) => {}
                            (Err(e), _) | (_, Err(e)) => {
                                fail_unresolved(&mut out, &wanted, e.into());
                                return out;
                            }
                        }
                    }
                }
                Err(e) => {
                    for name in wanted {
                        out.insert(
                            name.to_string(),
                            Err(Unresolved {
                                reason: e.to_string(),
                                retryable: true,
                            }),
                        );
                    }
                    return out;
                }
            }
        }
        for (id, doc) in docs {
            match from_doc(&id, &doc) {
                Ok(d) => {
                    let d = Arc::new(d);
                    self.cache
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(id.clone(), (now, d.clone(), doc));
                    out.insert(id, Ok(d));
                }
                Err(e) => {
                    out.insert(
                        id,
                        Err(Unresolved {
                            reason: format!("bench endpoint: {e:#}"),
                            retryable: false,
                        }),
                    );
                }
            }
        }
        out
    }
}

/// A row the bench cannot read fails every name still unresolved.
fn fail_unresolved(out: &mut Endpoints, wanted: &[&str], e: anyhow::Error) {
    for name in wanted {
        out.entry(name.to_string()).or_insert_with(|| {
            Err(Unresolved {
                reason: format!("bench endpoint: {e:#}"),
                retryable: false,
            })
        });
    }
}

/// A receiver on 127.0.0.1 answering 200 at once to every POST, counting
/// them; a POST to `/quiet` records when it arrived, by the `n` of its
/// payload.
#[derive(Clone, Default)]
pub(crate) struct Sink {
    hits: Arc<AtomicU64>,
    pub(crate) quiet: Arc<Mutex<HashMap<u64, Instant>>>,
}

impl Sink {
    pub(crate) async fn start() -> anyhow::Result<(String, Sink)> {
        let sink = Sink::default();
        let state = sink.clone();
        let app = axum::Router::new().fallback(axum::routing::post(
            move |uri: axum::http::Uri, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    if uri.path() == "/quiet" {
                        let n = serde_json::from_slice::<serde_json::Value>(&body)
                            .ok()
                            .and_then(|v| v.get("n").and_then(|n| n.as_u64()));
                        if let Some(n) = n {
                            state
                                .quiet
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .entry(n)
                                .or_insert_with(Instant::now);
                        }
                    }
                    state.hits.fetch_add(1, Ordering::Relaxed);
                    axum::http::StatusCode::OK
                }
            },
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok((format!("http://{addr}"), sink))
    }

    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    pub(crate) async fn wait_for(&self, n: u64, within: Duration) -> anyhow::Result<()> {
        let until = Instant::now() + within;
        while self.hits() < n {
            anyhow::ensure!(
                Instant::now() < until,
                "the sink got {} of {n} requests in {within:?}",
                self.hits()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

pub(crate) fn tenant_relay(db: Arc<dyn Database>, worker: &str) -> Relay {
    let sender: Arc<dyn WebhookSender> = Arc::new(HttpSender::default());
    relay::relay(db, sender, worker).with_endpoints(Arc::new(BenchEndpoints::default()))
}

/// [`tenant_relay`] answering every request 200 at once, in process
/// (diagnostic: the relay and the database alone).
pub(crate) fn tenant_relay_without_http(db: Arc<dyn Database>, worker: &str) -> Relay {
    let sender: Arc<dyn WebhookSender> = Arc::new(relay::NullSender(Arc::default()));
    relay::relay(db, sender, worker).with_endpoints(Arc::new(BenchEndpoints::default()))
}

/// The relay with every endpoint known (diagnostic: no directory read).
pub(crate) fn known_endpoints_relay(db: Arc<dyn Database>, worker: &str, url: &str) -> Relay {
    let sender: Arc<dyn WebhookSender> = Arc::new(HttpSender::default());
    relay::relay(db, sender, worker).with_endpoints(Arc::new(BenchEndpoints {
        known_at: Some(url.to_string()),
        ..BenchEndpoints::default()
    }))
}

pub(crate) fn empty_config() -> anyhow::Result<ConfigStore> {
    Ok(ConfigStore::fixed(
        HookboxConfig::parse("{}", "bench")?,
        Arc::new(SystemClock),
    ))
}
