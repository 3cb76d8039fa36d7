//! Filesystem adapter of the blob store port, for the local stack: the
//! object under key `a/b/c` is the file `root/a/b/c`.
//!
//! A put writes a temporary file in the target's directory and renames it
//! into place, so a reader sees the whole object or none (no fsync: this is
//! for local runs, not for durability). Temporary names contain `~`, which no
//! [`BlobKey`] may, so they never collide with an object. A put of a key
//! whose file exists is a success that writes nothing. Keys cannot leave the
//! root: [`BlobKey`] refuses `..`, `.`, empty segments and absolute paths.
//! A delete removes the file (an absent one is a success) and leaves the
//! directories in place.
//!
//! Work runs on tokio's blocking pool (`spawn_blocking`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use super::{BlobError, BlobKey, BlobStore};

/// A directory of objects.
#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    /// Objects under `root` (created on the first put when missing).
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key`.
    pub fn path_of(&self, key: &BlobKey) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(key.segments());
        path
    }
}

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if path.try_exists()? {
        return Ok(());
    }
    let dir = path.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "an object path has no parent")
    })?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        "{name}~tmp-{}-{}",
        std::process::id(),
        NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the file of an object; no file (or a key that runs through a
/// file, or names a directory: no object is stored under it) is a success.
fn remove_if_present(path: &Path) -> io::Result<()> {
    use io::ErrorKind::*;
    match std::fs::remove_file(path) {
        Err(e) if matches!(e.kind(), NotFound | NotADirectory | IsADirectory) => Ok(()),
        other => other,
    }
}

fn io_error(operation: &'static str, key: &BlobKey, e: &io::Error) -> BlobError {
    use io::ErrorKind::*;
    let key = key.to_string();
    match e.kind() {
        // No file, or the key runs through a file or names a directory:
        // either way no object is stored under it.
        NotFound | NotADirectory | IsADirectory if operation == "get" => {
            BlobError::NotFound { key }
        }
        // A root we may not write, or a key that is a directory here or runs
        // through a file: the same request will fail the same way.
        PermissionDenied | ReadOnlyFilesystem | NotADirectory | IsADirectory | InvalidInput => {
            BlobError::Refused {
                operation,
                key,
                reason: e.to_string(),
            }
        }
        _ => BlobError::Unavailable {
            operation,
            key,
            reason: e.to_string(),
        },
    }
}

async fn blocking<T: Send + 'static>(
    operation: &'static str,
    key: &BlobKey,
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, BlobError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(io_error(operation, key, &e)),
        Err(join) => Err(BlobError::Unavailable {
            operation,
            key: key.to_string(),
            reason: format!("the filesystem task failed: {join}"),
        }),
    }
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError> {
        let path = self.path_of(key);
        blocking("put", key, move || write_atomically(&path, &bytes)).await
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let path = self.path_of(key);
        blocking("get", key, move || std::fs::read(&path).map(Bytes::from)).await
    }

    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        let path = self.path_of(key);
        blocking("delete", key, move || remove_if_present(&path)).await
    }
}
