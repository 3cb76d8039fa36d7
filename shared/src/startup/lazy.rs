//! Ports whose AWS client is built on first use, not at init: building an
//! SDK client loads the AWS configuration and the system's TLS roots (the
//! SDK reads every certificate of the trust store when a client is
//! constructed), a few milliseconds of every cold start that the first
//! invocation can pay instead, once per sandbox. What can be refused
//! (a missing variable) is still checked at init; only the client waits.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::blob::{BlobError, BlobKey, BlobStore};
use crate::config::SecretStore;
use crate::notify::{Notifier, NotifyError};
use crate::queue::{Queue, QueueError};
use crate::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use crate::vault::{DataKey, KeyVault, NewDataKey, VaultError};

type Make<T> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Arc<T>> + Send>> + Send + Sync>;

/// A `T` built by `make` the first time it is used.
pub(crate) struct Lazy<T: ?Sized> {
    what: &'static str,
    cell: OnceCell<Arc<T>>,
    make: Make<T>,
}

impl<T: ?Sized> Lazy<T> {
    pub(crate) fn new<F, Fut>(what: &'static str, make: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Arc<T>> + Send + 'static,
    {
        Self {
            what,
            cell: OnceCell::new(),
            make: Box::new(move || Box::pin(make())),
        }
    }

    pub(crate) async fn get(&self) -> &Arc<T> {
        self.cell.get_or_init(|| (self.make)()).await
    }
}

impl<T: ?Sized> fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lazy")
            .field("what", &self.what)
            .field("built", &self.cell.initialized())
            .finish()
    }
}

#[async_trait]
impl Notifier for Lazy<dyn Notifier> {
    async fn notify(&self, subject: &str, message: &str) -> Result<(), NotifyError> {
        self.get().await.notify(subject, message).await
    }
}

#[async_trait]
impl Queue for Lazy<dyn Queue> {
    async fn send(&self, body: &str) -> Result<String, QueueError> {
        self.get().await.send(body).await
    }

    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        self.get().await.send_delayed(body, delay).await
    }

    async fn send_batch(&self, bodies: &[String]) -> Vec<Result<String, QueueError>> {
        self.get().await.send_batch(bodies).await
    }

    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        self.get()
            .await
            .change_visibility(receipt_handle, timeout)
            .await
    }
}

#[async_trait]
impl Executor for Lazy<dyn Database> {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.get().await.execute(statement, params).await
    }
}

#[async_trait]
impl Database for Lazy<dyn Database> {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.get().await.begin().await
    }
}

#[async_trait]
impl BlobStore for Lazy<dyn BlobStore> {
    async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError> {
        self.get().await.put(key, bytes).await
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        Lazy::get(self).await.get(key).await
    }

    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        self.get().await.delete(key).await
    }
}

#[async_trait]
impl SecretStore for Lazy<dyn SecretStore> {
    async fn secret_string(&self, arn: &str) -> Result<String, String> {
        self.get().await.secret_string(arn).await
    }
}

/// A key vault whose client is built on first use; which key wraps is known
/// at init.
#[derive(Debug)]
pub(crate) struct LazyVault {
    pub(crate) wrapped_by: String,
    pub(crate) inner: Lazy<dyn KeyVault>,
}

#[async_trait]
impl KeyVault for LazyVault {
    fn wrapped_by(&self) -> &str {
        &self.wrapped_by
    }

    async fn generate(&self) -> Result<NewDataKey, VaultError> {
        self.inner.get().await.generate().await
    }

    async fn unwrap(&self, wrapped: &[u8]) -> Result<DataKey, VaultError> {
        self.inner.get().await.unwrap(wrapped).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::blob::memory::MemoryBlobStore;

    #[tokio::test]
    async fn the_inner_store_is_built_once_on_first_use() {
        let built = Arc::new(AtomicUsize::new(0));
        let counter = built.clone();
        let lazy: Lazy<dyn BlobStore> = Lazy::new("blobs", move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Arc::new(MemoryBlobStore::new()) as Arc<dyn BlobStore> }
        });
        assert!(format!("{lazy:?}").contains("built: false"));
        assert_eq!(built.load(Ordering::SeqCst), 0, "nothing at construction");
        let key = BlobKey::content("inbox", "demo", &[7; 32]).expect("key");
        lazy.put(&key, Bytes::from_static(b"x")).await.expect("put");
        assert_eq!(&BlobStore::get(&lazy, &key).await.expect("get")[..], b"x");
        lazy.delete(&key).await.expect("delete");
        assert!(format!("{lazy:?}").contains("built: true"));
        assert_eq!(built.load(Ordering::SeqCst), 1, "built once");
    }
}
