//! The faults: crashes at the failpoints (armed from the scenario's seed),
//! and the outages the scenario switches on and off: a database that
//! answers "unavailable" (as Aurora resuming or failing over does) and a
//! queue whose sends fail (SQS throttling or unreachable). Both wrap the
//! real adapter.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookbox::queue::{Queue, QueueError};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};

/// An outage switch: down (`true`) or up.
#[derive(Debug, Default)]
pub struct Switch(AtomicBool);

impl Switch {
    /// Down (`true`) or up.
    pub fn set_down(&self, down: bool) {
        self.0.store(down, Ordering::SeqCst);
    }

    /// Whether it is down.
    pub fn is_down(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A database the scenario can take down: every call fails retryably while
/// it is down (a transaction begun before keeps working, as an open
/// connection may).
#[derive(Debug)]
pub struct FlakyDb {
    inner: Arc<dyn Database>,
    /// Its outage.
    pub outage: Switch,
}

impl FlakyDb {
    /// Up, in front of `inner`.
    pub fn new(inner: Arc<dyn Database>) -> Self {
        Self {
            inner,
            outage: Switch::default(),
        }
    }

    fn unavailable(&self, statement: &'static str) -> Result<(), DbError> {
        if self.outage.is_down() {
            return Err(DbError::Unavailable {
                statement,
                reason: "DatabaseResumingException: the torture run took the database down".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl Executor for FlakyDb {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.unavailable(statement.name)?;
        self.inner.execute(statement, params).await
    }
}

#[async_trait]
impl Database for FlakyDb {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.unavailable("begin")?;
        self.inner.begin().await
    }
}

/// A queue whose sends fail while it is down (the runner stops the event
/// source's receives too).
#[derive(Debug)]
pub struct FlakyQueue<Q> {
    inner: Q,
    /// Its outage.
    pub outage: Switch,
}

impl<Q> FlakyQueue<Q> {
    /// Up, in front of `inner`.
    pub fn new(inner: Q) -> Self {
        Self {
            inner,
            outage: Switch::default(),
        }
    }

    fn unavailable(&self, operation: &'static str) -> Result<(), QueueError> {
        if self.outage.is_down() {
            return Err(QueueError::Unavailable {
                operation,
                reason: "the torture run took the queue down".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl<Q: Queue> Queue for FlakyQueue<Q> {
    async fn send(&self, body: &str) -> Result<String, QueueError> {
        self.unavailable("send")?;
        self.inner.send(body).await
    }

    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        self.unavailable("send")?;
        self.inner.send_delayed(body, delay).await
    }

    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        self.unavailable("change_visibility")?;
        self.inner.change_visibility(receipt_handle, timeout).await
    }
}

/// Arms every failpoint: each hit crashes (panics) with `chance`, drawn
/// from the scenario's generator, and is counted.
pub(crate) fn arm_failpoints(
    chance: f64,
    rng: Arc<Mutex<fastrand::Rng>>,
    crashes: Arc<Mutex<BTreeMap<String, u64>>>,
) {
    for name in hookbox::failpoint::ALL {
        let rng = rng.clone();
        let crashes = crashes.clone();
        let name: &'static str = name;
        let armed = fail::cfg_callback(name, move || {
            let roll = rng.lock().unwrap_or_else(|p| p.into_inner()).f64();
            if roll < chance {
                *crashes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(name.to_owned())
                    .or_default() += 1;
                std::panic::panic_any(Crash);
            }
        });
        if let Err(e) = armed {
            panic!("arming failpoint {name}: {e}");
        }
    }
}

pub(crate) fn disarm_failpoints() {
    for name in hookbox::failpoint::ALL {
        fail::remove(name);
    }
}

/// The panic payload of an injected crash (the panic hook stays quiet).
#[derive(Debug)]
struct Crash;

/// Silences the panic messages of injected crashes; other panics print.
pub fn quiet_injected_crashes() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<Crash>().is_none() {
            previous(info);
        }
    }));
}
