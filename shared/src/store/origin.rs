//! A transaction that says what it writes on behalf of: the processor
//! opens one per inbox row, so every outbox row a route or a business
//! handler writes through it records that row (the trail from webhook to
//! delivery, migration 29), without the handler passing anything.

use async_trait::async_trait;

use super::{DbError, Executor, Params, Rows, Statement, Transaction};

/// `inner`, with [`Transaction::origin`] answering `origin`.
#[derive(Debug)]
pub struct WithOrigin {
    inner: Box<dyn Transaction>,
    origin: String,
}

impl WithOrigin {
    /// `inner`, writing on behalf of `origin` (a JSON object's text).
    pub fn new(inner: Box<dyn Transaction>, origin: String) -> Self {
        Self { inner, origin }
    }
}

#[async_trait]
impl Executor for WithOrigin {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.inner.execute(statement, params).await
    }
}

#[async_trait]
impl Transaction for WithOrigin {
    async fn commit(self: Box<Self>) -> Result<(), DbError> {
        self.inner.commit().await
    }

    async fn rollback(self: Box<Self>) -> Result<(), DbError> {
        self.inner.rollback().await
    }

    fn origin(&self) -> Option<&str> {
        Some(&self.origin)
    }
}
