//! The configuration in use, re-read from its source after a TTL.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::source::fetch;
use super::{ConfigError, ConfigSource, HookboxConfig, SecretStore};
use crate::clock::Clock;

/// The current configuration, re-read from Secrets Manager after its TTL.
/// A failed refresh keeps the last good configuration (and logs why).
#[derive(Debug)]
pub struct ConfigStore {
    source: ConfigSource,
    secrets: Option<Arc<dyn SecretStore>>,
    clock: Arc<dyn Clock>,
    /// The configuration in use and when it was read (held only to copy or
    /// replace it, never across an await).
    current: std::sync::RwLock<(Arc<HookboxConfig>, DateTime<Utc>)>,
    /// Held by the one caller refreshing from the source.
    refreshing: tokio::sync::Mutex<()>,
    /// Refreshes that failed (each also prints the `ConfigRefreshFailed`
    /// metric).
    refresh_failures: std::sync::atomic::AtomicU64,
}

impl ConfigStore {
    /// Loads the configuration once (cold start). Fails on any error: a
    /// function must not start with a broken configuration.
    pub async fn load(
        source: ConfigSource,
        secrets: Option<Arc<dyn SecretStore>>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConfigError> {
        let config = fetch(&source, secrets.as_deref()).await?;
        let now = clock.now();
        Ok(Self {
            source,
            secrets,
            clock,
            current: std::sync::RwLock::new((Arc::new(config), now)),
            refreshing: tokio::sync::Mutex::new(()),
            refresh_failures: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A fixed configuration (tests, local runs).
    pub fn fixed(config: HookboxConfig, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        Self {
            source: ConfigSource::Inline(String::new()),
            secrets: None,
            clock,
            current: std::sync::RwLock::new((Arc::new(config), now)),
            refreshing: tokio::sync::Mutex::new(()),
            refresh_failures: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether [`ConfigStore::current`] would fetch from the source now (a
    /// secret whose TTL ran out), and so may wait for the network.
    pub fn refresh_due(&self) -> bool {
        let ConfigSource::Secret { ttl, .. } = &self.source else {
            return false;
        };
        let ttl = chrono::Duration::from_std(*ttl).unwrap_or(chrono::Duration::MAX);
        self.clock.now() - self.snapshot().1 >= ttl
    }

    /// The configuration to use now. When the secret's TTL has run out, one
    /// caller reads it again (and waits for Secrets Manager); callers
    /// meanwhile get the configuration in use at once, never waiting for
    /// another's refresh (a relay lane must not hold a delivered batch
    /// unrecorded behind another lane's slow read).
    pub async fn current(&self) -> Arc<HookboxConfig> {
        let ConfigSource::Secret { ttl, .. } = &self.source else {
            return self.snapshot().0;
        };
        let ttl = chrono::Duration::from_std(*ttl).unwrap_or(chrono::Duration::MAX);
        let (config, read_at) = self.snapshot();
        if self.clock.now() - read_at < ttl {
            return config;
        }
        let Ok(_refreshing) = self.refreshing.try_lock() else {
            return config;
        };
        // another caller may have refreshed since the snapshot
        let (config, read_at) = self.snapshot();
        if self.clock.now() - read_at < ttl {
            return config;
        }
        let fetched = fetch(&self.source, self.secrets.as_deref()).await;
        let now = self.clock.now();
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        match fetched {
            Ok(config) => *current = (Arc::new(config), now),
            Err(e) => {
                // the error names the source and the position, never secret material
                tracing::warn!(error = %e, "configuration refresh failed; keeping the last good one");
                self.refresh_failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                crate::metrics::Metrics::new()
                    .dimension("Component", "config")
                    .count("ConfigRefreshFailed", 1)
                    .flush(now.timestamp_millis());
                // try again after another TTL, not on every request
                current.1 = now;
            }
        }
        current.0.clone()
    }

    /// How many refreshes have failed so far.
    pub fn refresh_failures(&self) -> u64 {
        self.refresh_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn snapshot(&self) -> (Arc<HookboxConfig>, DateTime<Utc>) {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        (current.0.clone(), current.1)
    }
}
