//! The blob store port and its adapters: S3 ([`s3::S3BlobStore`]), a
//! directory of the filesystem ([`fs::FsBlobStore`], the local stack) and a
//! strict in-memory fake with fault hooks ([`memory::MemoryBlobStore`],
//! tests).
//!
//! Large bodies do not fit a row (the Data API returns at most 64 KB per
//! row), so they are stored here under a content-addressed key and the row
//! keeps a [`BlobRef`]: key, size and sha256. Callers use the two domain
//! helpers, [`put_content`] (hash, key, put, ref) and [`get_verified`] (get,
//! then check size and sha256), rather than the trait directly. Objects are
//! deleted only by retention (see [`BlobStore::delete`]), once no row refers
//! to them.
//!
//! Keys ([`BlobKey`]) are `{prefix}/{owner}/{sha256 hex}`, e.g.
//! `inbox/acme/9f86…` or `outbox/erp/9f86…`. They are validated on every
//! construction, so no key can be misread by a filesystem or by S3 (no empty,
//! `.` or `..` segment, no leading `/`, only `[A-Za-z0-9._-]` in segments).

pub mod fs;
pub mod memory;
pub mod s3;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Prefix of the keys of inbox bodies (`inbox/{partner}/{sha256}`).
pub const INBOX_PREFIX: &str = "inbox";

/// Prefix of the keys of outbox payloads (`outbox/{destination}/{sha256}`).
pub const OUTBOX_PREFIX: &str = "outbox";

/// Longest key, in bytes (S3 allows 1024; this leaves room for a prefix a
/// deployment may add and stays well inside a filesystem's PATH_MAX).
pub const MAX_KEY_BYTES: usize = 512;

/// Longest segment of a key, in bytes (a filesystem's NAME_MAX).
pub const MAX_SEGMENT_BYTES: usize = 255;

/// A key refused by [`BlobKey`]'s validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid blob key {}: {reason}", shown(.key))]
pub struct BlobKeyError {
    /// The offending key, as given.
    pub key: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A key as it appears in error texts: quoted and escaped (it may hold
/// control characters), cut after 100 characters.
fn shown(key: &str) -> String {
    const LIMIT: usize = 100;
    if key.chars().count() <= LIMIT {
        format!("{key:?}")
    } else {
        let head: String = key.chars().take(LIMIT).collect();
        format!("{head:?}… ({} bytes)", key.len())
    }
}

/// A validated key of the blob store: segments separated by `/`, each
/// non-empty, not `.` or `..`, made of `[A-Za-z0-9._-]` only and at most
/// [`MAX_SEGMENT_BYTES`] long; at most [`MAX_KEY_BYTES`] in all. Such a key
/// is a relative path that stays inside any root, and an S3 key that needs no
/// escaping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey(String);

impl BlobKey {
    /// The content-addressed key `{prefix}/{owner}/{sha256 hex}` (lower-case
    /// hex). `prefix` and `owner` must each be one valid segment (no `/`).
    pub fn content(prefix: &str, owner: &str, sha256: &[u8; 32]) -> Result<BlobKey, BlobKeyError> {
        let key = format!("{prefix}/{owner}/{}", hex::encode(sha256));
        if prefix.contains('/') || owner.contains('/') {
            return Err(BlobKeyError {
                key,
                reason: "the prefix and the owner must each be one segment (no '/')",
            });
        }
        Self::parse(&key)
    }

    /// A key read back (from a database row): validated as described on
    /// [`BlobKey`].
    pub fn parse(key: &str) -> Result<BlobKey, BlobKeyError> {
        let refuse = |reason: &'static str| {
            Err(BlobKeyError {
                key: key.to_string(),
                reason,
            })
        };
        if key.is_empty() {
            return refuse("the key is empty");
        }
        if key.len() > MAX_KEY_BYTES {
            return refuse("the key is over 512 bytes");
        }
        if key.starts_with('/') {
            return refuse("the key starts with '/' (absolute)");
        }
        for segment in key.split('/') {
            if segment.is_empty() {
                return refuse("the key has an empty segment");
            }
            if segment == "." || segment == ".." {
                return refuse("the key has a '.' or '..' segment");
            }
            if segment.len() > MAX_SEGMENT_BYTES {
                return refuse("a segment of the key is over 255 bytes");
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return refuse("the key has a character outside [A-Za-z0-9._-] in a segment");
            }
        }
        Ok(BlobKey(key.to_string()))
    }

    /// The key as text (what a row stores).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its segments, in order.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

impl fmt::Display for BlobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for BlobKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for BlobKey {
    type Err = BlobKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// What a row keeps of a stored body: where it is and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobRef {
    /// Its key.
    pub key: BlobKey,
    /// Its size in bytes.
    pub size: u64,
    /// sha256 of its bytes.
    pub sha256: [u8; 32],
}

impl BlobRef {
    /// The sha256, lower-case hex (64 characters).
    pub fn sha256_hex(&self) -> String {
        hex::encode(self.sha256)
    }
}

/// What went wrong storing or reading a blob.
///
/// Contract: [`BlobError::Unavailable`] is retryable (network, timeouts,
/// throttling, 5xx, a full disk); the others are definite: the object is
/// absent ([`BlobError::NotFound`], from reads only: a delete of an absent
/// key succeeds), its bytes are not what the reference says
/// ([`BlobError::Corrupt`]), or the store refused the request
/// ([`BlobError::Refused`]: access denied, no such bucket, invalid key).
/// Texts name the operation and the key, never credentials.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// No object under this key.
    #[error("blob {key} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The object's bytes do not match its reference.
    #[error(
        "blob {key} is corrupt: expected {expected_size} bytes with sha256 {expected_sha256}, \
         read {actual_size} bytes with sha256 {actual_sha256}"
    )]
    Corrupt {
        /// The key.
        key: String,
        /// sha256 the reference holds, hex.
        expected_sha256: String,
        /// sha256 of the bytes read, hex.
        actual_sha256: String,
        /// Size the reference holds.
        expected_size: u64,
        /// Size of the bytes read.
        actual_size: u64,
    },
    /// The store could not be reached or asked to slow down; try later.
    #[error("blob store unavailable during {operation} of {key}: {reason}")]
    Unavailable {
        /// `put`, `get` or `delete`.
        operation: &'static str,
        /// The key.
        key: String,
        /// What the SDK, the service or the filesystem said.
        reason: String,
    },
    /// The store refused the request; trying again will not help.
    #[error("blob store refused {operation} of {key}: {reason}")]
    Refused {
        /// `put`, `get`, `delete` or `key` (validation).
        operation: &'static str,
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl BlobError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, BlobError::Unavailable { .. })
    }
}

impl From<BlobKeyError> for BlobError {
    fn from(e: BlobKeyError) -> Self {
        BlobError::Refused {
            operation: "key",
            reason: e.reason.to_string(),
            key: e.key,
        }
    }
}

/// Stores bytes under keys.
///
/// Error contract: see [`BlobError`]. `put` is idempotent: putting a key
/// that exists succeeds and leaves one object (S3 replaces it, the
/// filesystem and the fake keep the first; with content-addressed keys the
/// bytes are the same). `get` of an absent key is [`BlobError::NotFound`],
/// never an empty body. `delete` is idempotent too: deleting an absent key
/// succeeds (it never returns [`BlobError::NotFound`]), so a retried or
/// repeated delete is harmless. Adapters return the bytes as stored;
/// checking them against a [`BlobRef`] is [`get_verified`]'s job. An adapter
/// may retry internally (every operation is safe to repeat) and reports
/// [`BlobError::Unavailable`] only when its attempts are spent.
///
/// Deleting is retention's job alone (`hookbox::relay::Relay::purge`): an
/// object may be shared by several rows (content addressing), and only
/// retention checks that no row refers to it any more.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Stores `bytes` under `key`.
    async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError>;

    /// The bytes stored under `key`.
    async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError>;

    /// Removes the object under `key`; an absent key is a success.
    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError>;
}

/// sha256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Stores `bytes` under their content-addressed key
/// (`{prefix}/{owner}/{sha256 hex}`) and returns the reference a row keeps.
/// Storing the same bytes again is harmless and returns the same reference.
pub async fn put_content(
    store: &dyn BlobStore,
    prefix: &str,
    owner: &str,
    bytes: Bytes,
) -> Result<BlobRef, BlobError> {
    let digest = sha256(&bytes);
    let key = BlobKey::content(prefix, owner, &digest)?;
    let size = bytes.len() as u64;
    store.put(&key, bytes).await?;
    Ok(BlobRef {
        key,
        size,
        sha256: digest,
    })
}

/// The bytes `blob` refers to, checked: a size or sha256 other than the
/// reference's is [`BlobError::Corrupt`].
pub async fn get_verified(store: &dyn BlobStore, blob: &BlobRef) -> Result<Bytes, BlobError> {
    let bytes = store.get(&blob.key).await?;
    let actual_size = bytes.len() as u64;
    let actual = sha256(&bytes);
    if actual_size != blob.size || actual != blob.sha256 {
        return Err(BlobError::Corrupt {
            key: blob.key.to_string(),
            expected_sha256: blob.sha256_hex(),
            actual_sha256: hex::encode(actual),
            expected_size: blob.size,
            actual_size,
        });
    }
    Ok(bytes)
}

/// The variable naming the S3 bucket of large bodies (deployed functions).
pub const BUCKET_VAR: &str = "HOOKBOX_BLOB_BUCKET";

/// The variable naming a directory to keep large bodies in instead (local
/// runs: the local stack and tests).
pub const DIR_VAR: &str = "HOOKBOX_BLOB_DIR";

/// Neither (or both) of [`BUCKET_VAR`] and [`DIR_VAR`] is set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "set exactly one of HOOKBOX_BLOB_BUCKET (the S3 bucket for bodies over the inline \
     threshold) or HOOKBOX_BLOB_DIR (a directory, for local runs): {0}"
)]
pub struct BlobConfigError(pub &'static str);

/// The blob store a function uses, from its environment: S3 when
/// [`BUCKET_VAR`] is set (with the shared AWS configuration; a set
/// `AWS_ENDPOINT_URL_S3` means a local endpoint, path-style), a directory
/// when [`DIR_VAR`] is set. Exactly one must be set: a function that may
/// receive a large body must know where to put it.
pub async fn from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn BlobStore>, BlobConfigError> {
    from_env_with_aws(env, || {
        aws_config::defaults(aws_config::BehaviorVersion::latest()).load()
    })
    .await
}

/// Like [`from_env`], with the AWS configuration from `aws` (called only
/// when the store is S3, after the variables are checked).
pub async fn from_env_with_aws<F, Fut>(
    env: impl Fn(&str) -> Option<String>,
    aws: F,
) -> Result<Arc<dyn BlobStore>, BlobConfigError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = aws_config::SdkConfig>,
{
    match location_from_env(&env)? {
        Location::Bucket(bucket) => {
            let shared = aws().await;
            Ok(Arc::new(s3::S3BlobStore::from_env(&shared, bucket, env)))
        }
        Location::Dir(dir) => Ok(Arc::new(fs::FsBlobStore::new(dir))),
    }
}

/// Where a function's blob store is (see [`from_env`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An S3 bucket ([`BUCKET_VAR`]).
    Bucket(String),
    /// A directory ([`DIR_VAR`]).
    Dir(PathBuf),
}

/// Reads [`BUCKET_VAR`] and [`DIR_VAR`]: exactly one must be set.
pub fn location_from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Location, BlobConfigError> {
    let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    match (get(BUCKET_VAR), get(DIR_VAR)) {
        (Some(bucket), None) => Ok(Location::Bucket(bucket)),
        (None, Some(dir)) => Ok(Location::Dir(PathBuf::from(dir))),
        (None, None) => Err(BlobConfigError("neither is set")),
        (Some(_), Some(_)) => Err(BlobConfigError("both are set")),
    }
}
