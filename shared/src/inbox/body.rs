//! Where an inbox body lives, and reading it back.
//!
//! The RDS Data API returns at most 64 KB per result row and 1 MiB per
//! response. A body up to the inline threshold ([`DEFAULT_INLINE_MAX_BYTES`],
//! 32 KiB) stays in the row; a larger one is put in the blob store under its
//! content-addressed key `inbox/{partner}/{sha256}` BEFORE the row is
//! inserted, and the row keeps the reference (key, size, sha256). The same
//! body twice is one object. Readers go through [`read`], which checks a
//! referenced body's size and sha256, so the processor, the CLI and the admin
//! page see the exact bytes whichever way they were stored.
//!
//! Why 32 KiB: a claimed row carries the body next to the other columns,
//! each bounded when written (event id 512 B, event type and ordering key,
//! stored headers, last error); 32 KiB leaves the row well under 64 KB and
//! a claim of 10 rows (an SQS batch) well under 1 MiB.

use std::fmt;

use bytes::Bytes;
use uuid::Uuid;

use crate::blob::{self, BlobError, BlobRef, BlobStore, INBOX_PREFIX};
use crate::params;
use crate::store::{DbError, Executor, Statement, fetch_optional};

/// Default inline threshold: bodies up to this many bytes stay in the row.
pub const DEFAULT_INLINE_MAX_BYTES: usize = 32 * 1024;

/// Largest inline threshold accepted: above it a claimed row could pass the
/// Data API's 64 KB per row once the other columns are added.
pub const MAX_INLINE_MAX_BYTES: usize = 40 * 1024;

/// Statements return an inline body only up to this size; a larger one (a
/// row written before bodies went to the blob store) is read in pieces of
/// this size by [`read`].
pub const READ_CHUNK_BYTES: usize = MAX_INLINE_MAX_BYTES;

/// The variable that sets the inline threshold (bytes).
pub const INLINE_MAX_VAR: &str = "HOOKBOX_INLINE_BODY_MAX_BYTES";

/// [`INLINE_MAX_VAR`] holds something other than 0..=[`MAX_INLINE_MAX_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "HOOKBOX_INLINE_BODY_MAX_BYTES={0:?} is not a number of bytes in 0..=40960 \
     (a larger inline body could pass the Data API's 64 KB per row)"
)]
pub struct InlineMaxError(pub String);

/// The inline threshold from [`INLINE_MAX_VAR`], else
/// [`DEFAULT_INLINE_MAX_BYTES`].
pub fn inline_max_from_env(env: impl Fn(&str) -> Option<String>) -> Result<usize, InlineMaxError> {
    match env(INLINE_MAX_VAR).filter(|v| !v.trim().is_empty()) {
        None => Ok(DEFAULT_INLINE_MAX_BYTES),
        Some(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= MAX_INLINE_MAX_BYTES)
            .ok_or(InlineMaxError(v)),
    }
}

/// An inbox body: in the row, or in the blob store by reference.
#[derive(Clone, PartialEq, Eq)]
pub enum Body {
    /// The bytes, in the row.
    Inline(Vec<u8>),
    /// In the blob store; the row keeps the reference.
    Blob(BlobRef),
    /// In the row, but larger than a statement returns
    /// ([`READ_CHUNK_BYTES`]): [`read`] fetches it in pieces.
    InlineUnread {
        /// Its size in bytes.
        size: u64,
    },
}

impl Body {
    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Body::Inline(b) => b.len() as u64,
            Body::Blob(r) => r.size,
            Body::InlineUnread { size } => *size,
        }
    }

    /// True for an empty body.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when they are at hand (inline and returned).
    pub fn inline(&self) -> Option<&[u8]> {
        match self {
            Body::Inline(b) => Some(b),
            _ => None,
        }
    }

    /// The blob reference, for a body stored by reference.
    pub fn blob(&self) -> Option<&BlobRef> {
        match self {
            Body::Blob(r) => Some(r),
            _ => None,
        }
    }

    /// Where it is: `inline` or `blob`, for logs and the operator views.
    pub fn location(&self) -> &'static str {
        match self {
            Body::Inline(_) | Body::InlineUnread { .. } => "inline",
            Body::Blob(_) => "blob",
        }
    }
}

impl fmt::Debug for Body {
    // Bodies may carry personal data: sizes and references only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Inline(b) => write!(f, "Inline({} bytes)", b.len()),
            Body::Blob(r) => write!(f, "Blob({}, {} bytes)", r.key, r.size),
            Body::InlineUnread { size } => write!(f, "InlineUnread({size} bytes)"),
        }
    }
}

/// Puts `bytes` where they belong: in the row up to `inline_max` bytes,
/// else in the blob store under `inbox/{partner}/{sha256}` (this call puts
/// it, so call it before the insert).
pub async fn store(
    blobs: &dyn BlobStore,
    partner: &str,
    bytes: Vec<u8>,
    inline_max: usize,
) -> Result<Body, BlobError> {
    if bytes.len() <= inline_max {
        return Ok(Body::Inline(bytes));
    }
    let reference = blob::put_content(blobs, INBOX_PREFIX, partner, Bytes::from(bytes)).await?;
    crate::failpoint::hit!(crate::failpoint::BLOB_AFTER_PUT);
    Ok(Body::Blob(reference))
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The blob store failed, or the object is missing or corrupt.
    #[error("reading the body from the blob store failed: {0}")]
    Blob(#[from] BlobError),
    /// The database failed reading an inline body in pieces.
    #[error("reading the body from the database failed: {0}")]
    Db(#[from] DbError),
    /// The row changed while its body was read in pieces.
    #[error("the body of inbox row {id} changed or vanished while it was read")]
    Changed {
        /// The row.
        id: Uuid,
    },
}

impl BodyError {
    /// True when trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            BodyError::Blob(e) => e.is_retryable(),
            BodyError::Db(e) => e.is_retryable(),
            BodyError::Changed { .. } => true,
        }
    }

    /// True when the body is gone or is not what was stored (a missing or
    /// corrupt object): the row can never be processed as it is.
    pub fn is_lost(&self) -> bool {
        matches!(
            self,
            BodyError::Blob(BlobError::NotFound { .. } | BlobError::Corrupt { .. })
        )
    }
}

pub const BODY_CHUNK: Statement = Statement::new(
    "inbox.body_chunk",
    "SELECT substring(body FROM CAST(:from AS integer) FOR CAST(:len AS integer)) AS chunk,
            octet_length(body) AS size
       FROM inbox WHERE id = :id",
);

/// The bytes of the body of row `id`, whichever way it is stored; a body
/// by reference is checked against its size and sha256.
pub async fn read(
    db: &dyn Executor,
    blobs: &dyn BlobStore,
    id: Uuid,
    body: &Body,
) -> Result<Vec<u8>, BodyError> {
    match body {
        Body::Inline(b) => Ok(b.clone()),
        Body::Blob(reference) => {
            crate::failpoint::hit!(crate::failpoint::BLOB_BEFORE_GET);
            Ok(blob::get_verified(blobs, reference).await?.to_vec())
        }
        Body::InlineUnread { size } => read_in_pieces(db, id, *size).await,
    }
}

async fn read_in_pieces(db: &dyn Executor, id: Uuid, size: u64) -> Result<Vec<u8>, BodyError> {
    let size = usize::try_from(size).map_err(|_| BodyError::Changed { id })?;
    let mut out = Vec::with_capacity(size);
    while out.len() < size {
        let row = fetch_optional(
            db,
            &BODY_CHUNK,
            &params! {
                "id" => id,
                // substring counts from 1
                "from" => (out.len() + 1) as i64,
                "len" => READ_CHUNK_BYTES as i64,
            },
        )
        .await?
        .ok_or(BodyError::Changed { id })?;
        let now_size = row.opt_i64("size")?;
        let chunk = row.opt_bytes("chunk")?.unwrap_or_default();
        if now_size != Some(size as i64) || chunk.is_empty() {
            return Err(BodyError::Changed { id });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::memory::MemoryBlobStore;

    #[test]
    fn the_threshold_comes_from_the_environment_within_the_row_budget() {
        let none = |_: &str| None;
        assert_eq!(inline_max_from_env(none), Ok(DEFAULT_INLINE_MAX_BYTES));
        let set = |v: &'static str| move |k: &str| (k == INLINE_MAX_VAR).then(|| v.to_string());
        assert_eq!(inline_max_from_env(set("1024")), Ok(1024));
        assert_eq!(inline_max_from_env(set("0")), Ok(0));
        let e = inline_max_from_env(set("65536")).expect_err("over the row budget");
        assert!(
            e.to_string()
                .contains("HOOKBOX_INLINE_BODY_MAX_BYTES=\"65536\""),
            "{e}"
        );
        assert!(inline_max_from_env(set("32k")).is_err());
    }

    #[tokio::test]
    async fn bodies_over_the_threshold_go_to_the_blob_store_once() {
        let blobs = MemoryBlobStore::new();
        let small = store(&blobs, "acme", vec![b'x'; 10], 10)
            .await
            .expect("small");
        assert_eq!(small, Body::Inline(vec![b'x'; 10]));
        assert!(blobs.is_empty());
        let big = store(&blobs, "acme", vec![b'y'; 11], 10)
            .await
            .expect("big");
        let reference = big.blob().expect("by reference").clone();
        assert_eq!(reference.size, 11);
        assert!(reference.key.as_str().starts_with("inbox/acme/"));
        let again = store(&blobs, "acme", vec![b'y'; 11], 10)
            .await
            .expect("again");
        assert_eq!(again, big, "content-addressed: the same reference");
        assert_eq!(blobs.len(), 1, "one object");
        assert_eq!(
            format!("{big:?}"),
            format!("Blob({}, 11 bytes)", reference.key)
        );
    }
}
