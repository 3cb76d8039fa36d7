//! A database port wrapper that counts the calls reaching the adapter:
//! statements, BEGIN, COMMIT, ROLLBACK. On the Data API each is one HTTPS
//! request (ExecuteStatement, BeginTransaction, CommitTransaction,
//! RollbackTransaction), so these counts are its calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};

/// Calls counted so far.
#[derive(Debug, Default)]
pub struct Counts {
    calls: AtomicU64,
}

impl Counts {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Every call (statements and transaction control).
    pub fn total(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

/// A database that counts what goes through it.
#[derive(Debug, Clone)]
pub struct CountingDb {
    inner: Arc<dyn Database>,
    pub counts: Arc<Counts>,
}

impl CountingDb {
    pub fn new(inner: Arc<dyn Database>) -> Self {
        Self {
            inner,
            counts: Arc::default(),
        }
    }
}

#[async_trait]
impl Executor for CountingDb {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.counts.count();
        self.inner.execute(statement, params).await
    }
}

#[async_trait]
impl Database for CountingDb {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.counts.count();
        Ok(Box::new(CountingTx {
            inner: self.inner.begin().await?,
            counts: self.counts.clone(),
        }))
    }
}

#[derive(Debug)]
struct CountingTx {
    inner: Box<dyn Transaction>,
    counts: Arc<Counts>,
}

#[async_trait]
impl Executor for CountingTx {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.counts.count();
        self.inner.execute(statement, params).await
    }
}

#[async_trait]
impl Transaction for CountingTx {
    async fn commit(self: Box<Self>) -> Result<(), DbError> {
        self.counts.count();
        self.inner.commit().await
    }

    async fn rollback(self: Box<Self>) -> Result<(), DbError> {
        self.counts.count();
        self.inner.rollback().await
    }
}
