//! Transactions held per transactionId: one dedicated connection in `BEGIN`
//! each. Calls on one transaction are serialised (a per-transaction async
//! mutex). A transaction not used for longer than the idle timeout, or older
//! than the maximum lifetime (24 h, as the service), is rolled back and
//! forgotten: checked on every access and by a periodic reaper. Time comes
//! from the injected [`Clock`], so tests move it instead of sleeping.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use chrono::{DateTime, Utc};
use deadpool_postgres::Object;
use hookbox::clock::Clock;
use tokio::sync::OwnedMutexGuard;

use crate::db::discard;

/// How long ending a transaction (ROLLBACK on expiry) may take before the
/// connection is closed instead.
const END_TIMEOUT: Duration = Duration::from_secs(5);

/// What a transaction holds while it is open.
#[derive(Debug)]
pub(crate) struct TxState {
    /// `None` once the transaction has ended (calls waiting for it then see
    /// an unknown transaction).
    pub connection: Option<Object>,
    /// The last statement failed inside PostgreSQL, so the transaction is
    /// aborted until a ROLLBACK (TO SAVEPOINT) succeeds.
    pub aborted: bool,
}

#[derive(Debug)]
struct Tx {
    started: DateTime<Utc>,
    last_used: Mutex<DateTime<Utc>>,
    state: Arc<tokio::sync::Mutex<TxState>>,
}

/// The open transactions.
pub(crate) struct Transactions {
    open: Mutex<HashMap<String, Arc<Tx>>>,
    clock: Arc<dyn Clock>,
    idle_timeout: chrono::Duration,
    max_lifetime: chrono::Duration,
}

impl fmt::Debug for Transactions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transactions")
            .field("open", &self.len())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

/// Exclusive use of one open transaction for the length of a call.
pub(crate) struct TxGuard {
    id: String,
    tx: Arc<Tx>,
    state: OwnedMutexGuard<TxState>,
}

impl fmt::Debug for TxGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxGuard").field("id", &self.id).finish()
    }
}

impl TxGuard {
    /// The transaction's connection (always present while a guard exists).
    pub(crate) fn connection(&self) -> Option<&Object> {
        self.state.connection.as_ref()
    }

    /// Whether the last statement failed inside PostgreSQL.
    pub(crate) fn aborted(&self) -> bool {
        self.state.aborted
    }

    /// Records the outcome of a statement.
    pub(crate) fn set_aborted(&mut self, aborted: bool) {
        self.state.aborted = aborted;
    }
}

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Transactions {
    pub(crate) fn new(
        clock: Arc<dyn Clock>,
        idle_timeout: Duration,
        max_lifetime: Duration,
    ) -> Self {
        Self {
            open: Mutex::default(),
            clock,
            idle_timeout: to_chrono(idle_timeout),
            max_lifetime: to_chrono(max_lifetime),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Tx>>> {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Number of open transactions.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Registers a connection already in `BEGIN`; returns its new id.
    pub(crate) fn insert(&self, connection: Object) -> String {
        let id = new_id();
        let now = self.clock.now();
        let tx = Arc::new(Tx {
            started: now,
            last_used: Mutex::new(now),
            state: Arc::new(tokio::sync::Mutex::new(TxState {
                connection: Some(connection),
                aborted: false,
            })),
        });
        self.map().insert(id.clone(), tx);
        id
    }

    fn expired(&self, tx: &Tx, now: DateTime<Utc>) -> bool {
        let last_used = *tx
            .last_used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        now - last_used > self.idle_timeout || now - tx.started > self.max_lifetime
    }

    /// Waits for exclusive use of transaction `id`. `None` when it is
    /// unknown, has ended, or has expired (an expired one is rolled back
    /// and forgotten here).
    pub(crate) async fn acquire(&self, id: &str) -> Option<TxGuard> {
        let tx = self.map().get(id).cloned()?;
        let state = tx.state.clone().lock_owned().await;
        let mut guard = TxGuard {
            id: id.to_string(),
            tx,
            state,
        };
        guard.state.connection.as_ref()?;
        if self.expired(&guard.tx, self.clock.now()) {
            tracing::info!(transaction = %id, "transaction expired (idle or too old): rolled back");
            self.end(&mut guard, "ROLLBACK").await.ok();
            return None;
        }
        Some(guard)
    }

    /// Marks the transaction used now (the idle time restarts).
    pub(crate) fn touch(&self, guard: &TxGuard) {
        *guard
            .tx
            .last_used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = self.clock.now();
    }

    /// Ends the transaction with `sql` (COMMIT or ROLLBACK) and forgets it.
    /// The connection goes back to the pool when the statement succeeded or
    /// failed inside PostgreSQL (a failed COMMIT ends the transaction too),
    /// and is closed when the connection failed or did not answer in time.
    pub(crate) async fn end(
        &self,
        guard: &mut TxGuard,
        sql: &str,
    ) -> Result<(), crate::error::ServiceError> {
        self.map().remove(&guard.id);
        let Some(connection) = guard.state.connection.take() else {
            return Ok(());
        };
        match tokio::time::timeout(END_TIMEOUT, connection.batch_execute(sql)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                let error = crate::error::ServiceError::from_pg(&e);
                if error.connection_is_lost() || e.as_db_error().is_none() {
                    discard(connection);
                }
                Err(error)
            }
            Err(_) => {
                discard(connection);
                Err(crate::error::ServiceError::DatabaseUnavailable(format!(
                    "the database did not answer {sql} within {END_TIMEOUT:?}"
                )))
            }
        }
    }

    /// Forgets the transaction and closes its connection (PostgreSQL rolls
    /// back): for a connection whose state is unknown.
    pub(crate) fn abandon(&self, guard: &mut TxGuard) {
        self.map().remove(&guard.id);
        if let Some(connection) = guard.state.connection.take() {
            discard(connection);
        }
    }

    /// Forgets every open transaction and closes its connection (PostgreSQL
    /// rolls back), as a database that stops takes its sessions with it; a
    /// call still running on one finishes first. Returns how many.
    pub(crate) fn abandon_all(&self) -> usize {
        let all: Vec<Arc<Tx>> = self.map().drain().map(|(_, tx)| tx).collect();
        let count = all.len();
        for tx in all {
            match tx.state.clone().try_lock_owned() {
                Ok(mut state) => {
                    if let Some(connection) = state.connection.take() {
                        discard(connection);
                    }
                }
                Err(_) => {
                    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                        runtime.spawn(async move {
                            let mut state = tx.state.clone().lock_owned().await;
                            if let Some(connection) = state.connection.take() {
                                discard(connection);
                            }
                        });
                    }
                }
            }
        }
        count
    }

    /// Rolls back and forgets every expired transaction that no call is
    /// using right now; returns how many.
    pub(crate) async fn reap(&self) -> usize {
        let now = self.clock.now();
        let candidates: Vec<(String, Arc<Tx>)> = self
            .map()
            .iter()
            .filter(|(_, tx)| self.expired(tx, now))
            .map(|(id, tx)| (id.clone(), tx.clone()))
            .collect();
        let mut reaped = 0;
        for (id, tx) in candidates {
            // In use: the call's own access check decides.
            let Ok(state) = tx.state.clone().try_lock_owned() else {
                continue;
            };
            let mut guard = TxGuard { id, tx, state };
            if guard.state.connection.is_none() || !self.expired(&guard.tx, self.clock.now()) {
                continue;
            }
            tracing::info!(transaction = %guard.id, "reaper: transaction expired: rolled back");
            self.end(&mut guard, "ROLLBACK").await.ok();
            reaped += 1;
        }
        reaped
    }
}

/// An opaque, unguessable id (like the service's, a base64 string).
fn new_id() -> String {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
