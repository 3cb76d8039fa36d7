//! Outages the scenario switches on and off: a database that answers
//! "unavailable" (as Aurora resuming or failing over does) and a queue whose
//! sends fail (SQS throttling or unreachable). Both wrap the real adapter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
