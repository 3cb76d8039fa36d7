//! Where an outbox payload lives, and the bytes the relay POSTs.
//!
//! The RDS Data API returns at most 64 KB per result row and 1 MiB per
//! response. A payload whose JSON text is up to the inline threshold
//! ([`DEFAULT_INLINE_MAX_BYTES`], 32 KiB, the inbox's) stays in the row as
//! jsonb and is POSTed as jsonb's canonical text. A larger one is put in the
//! blob store under `outbox/{destination}/{sha256}` before the row is
//! written ([`super::enqueue_with_blobs`]), as the exact bytes every attempt
//! POSTs (serde_json's compact text), and the row keeps the reference (key,
//! size, sha256). The relay reads it with [`read`], which checks size and
//! sha256, so every attempt sends, and signs, the same bytes.
//!
//! Statements return an inline payload only up to [`READ_CHUNK_BYTES`]; a
//! larger one (written before payloads went to the blob store, or a small
//! JSON text whose canonical form grew: jsonb writes `1e300` out in full)
//! comes back as [`PayloadStorage::InlineUnread`] and [`read`] fetches it in
//! pieces, so no row of any statement passes the Data API's 64 KB.

use bytes::Bytes;
use uuid::Uuid;

use crate::blob::{self, BlobError, BlobRef, BlobStore};
use crate::params;
use crate::store::{DbError, Executor, Statement, fetch_optional};

pub use crate::inbox::body::{DEFAULT_INLINE_MAX_BYTES, MAX_INLINE_MAX_BYTES};

/// Statements return an inline payload's text only up to this many bytes
/// (the same bound as inbox bodies): with the other columns a row stays
/// under the Data API's 64 KB.
pub const READ_CHUNK_BYTES: usize = MAX_INLINE_MAX_BYTES;

/// Characters per piece when a larger inline payload is read in pieces
/// (`substring` of text counts characters; four bytes at most each).
const READ_CHUNK_CHARS: usize = READ_CHUNK_BYTES / 4;
const _: () = assert!(READ_CHUNK_CHARS * 4 <= READ_CHUNK_BYTES);

/// An upper bound of the bytes of `json` (valid JSON text) as PostgreSQL's
/// jsonb writes it out, the size an inline payload has in its row and the
/// size `hookbox_publish_refusal` measures; `usize::MAX` when jsonb cannot
/// hold a number of it at all. jsonb puts a space after every `:` and `,`
/// and writes numbers in plain notation with every digit (`1e300` is 301
/// digits, `1.50e1` is `15.0`, `1e-5` is `0.00001`); strings and numbers
/// without an exponent never grow. A number needing more than 131,072
/// digits before the point or 16,383 after it is refused ("value overflows
/// numeric format"): such a payload can only go to the blob store.
pub fn jsonb_text_bound(json: &str) -> usize {
    let bytes = json.as_bytes();
    let mut extra = 0usize;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match (in_string, bytes[i]) {
            (true, b'\\') => i += 1,
            (_, b'"') => in_string = !in_string,
            (false, b':' | b',') => extra = extra.saturating_add(1),
            (false, b'-' | b'0'..=b'9') => {
                let (end, plain) = number_in_jsonb(bytes, i);
                let Some(plain) = plain else {
                    return usize::MAX;
                };
                extra = extra.saturating_add(plain);
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len().saturating_add(extra)
}

/// The number token starting at `start`: where it ends, and how many bytes
/// jsonb's plain notation may add to it (none without an exponent; with
/// one, at most the whole plain notation; `None` when jsonb's numeric
/// cannot hold it).
fn number_in_jsonb(bytes: &[u8], start: usize) -> (usize, Option<usize>) {
    let digits_from = |mut j: usize| {
        let from = j;
        while bytes.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        (j, j - from)
    };
    let mut j = start + usize::from(bytes[start] == b'-');
    let (after_int, int_digits) = digits_from(j);
    j = after_int;
    let mut frac_digits = 0;
    if bytes.get(j) == Some(&b'.') {
        (j, frac_digits) = digits_from(j + 1);
    }
    let mut exponent: i64 = 0;
    let has_exponent = matches!(bytes.get(j), Some(b'e' | b'E'));
    if has_exponent {
        j += 1;
        let negative = bytes.get(j) == Some(&b'-');
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let (end, _) = digits_from(j);
        let magnitude = std::str::from_utf8(&bytes[j..end])
            .ok()
            .and_then(|d| d.parse::<i64>().ok())
            .unwrap_or(i64::MAX);
        exponent = if negative { -magnitude } else { magnitude };
        j = end;
    }
    // digits before the point and after it, written out in full
    let scale = (frac_digits as i64).saturating_sub(exponent).max(0);
    let weight = (int_digits as i64).saturating_add(exponent);
    if scale > 16_383 || weight > 131_072 {
        return (j, None);
    }
    if !has_exponent {
        // written as it came (`-0` even shrinks to `0`)
        return (j, Some(0));
    }
    let plain = 1 + weight.max(1) + if scale > 0 { 1 + scale } else { 0 };
    (j, usize::try_from(plain).ok())
}

/// Where an outbox row's payload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadStorage {
    /// In the row; its text is [`super::OutboxRow::payload`].
    Inline,
    /// In the row, but larger than a statement returns
    /// ([`READ_CHUNK_BYTES`]): [`read`] fetches it in pieces.
    InlineUnread {
        /// Its text's size in bytes.
        size: u64,
    },
    /// In the blob store: the exact bytes to POST.
    Blob(BlobRef),
}

impl PayloadStorage {
    /// Where it is: `inline` or `blob`, for logs and the operator views.
    pub fn location(&self) -> &'static str {
        match self {
            PayloadStorage::Inline | PayloadStorage::InlineUnread { .. } => "inline",
            PayloadStorage::Blob(_) => "blob",
        }
    }

    /// The blob reference, for a payload stored by reference.
    pub fn blob(&self) -> Option<&BlobRef> {
        match self {
            PayloadStorage::Blob(r) => Some(r),
            _ => None,
        }
    }
}

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// The blob store failed, or the object is missing or corrupt.
    #[error("reading the payload from the blob store failed: {0}")]
    Blob(#[from] BlobError),
    /// The object is intact (size and sha256 match) but is not UTF-8 text,
    /// so it was not written by `enqueue_with_blobs`.
    #[error("payload object {key} is not UTF-8 text (it was not written as a JSON payload)")]
    NotText {
        /// Its key.
        key: String,
    },
    /// The database failed reading an inline payload in pieces.
    #[error("reading the payload from the database failed: {0}")]
    Db(#[from] DbError),
    /// The row changed or vanished while its payload was read in pieces.
    #[error("the payload of outbox row {id} changed or vanished while it was read")]
    Changed {
        /// The row.
        id: Uuid,
    },
}

impl PayloadError {
    /// True when the payload is gone or is not what was stored (a missing
    /// or corrupt object): the row can never be delivered as written.
    pub fn is_lost(&self) -> bool {
        matches!(
            self,
            PayloadError::Blob(BlobError::NotFound { .. } | BlobError::Corrupt { .. })
                | PayloadError::NotText { .. }
        )
    }
}

/// The payload to POST: the text of an inline payload, or the bytes of a
/// referenced one (a blob store outage is retryable, a missing or corrupt
/// object is not, see [`PayloadError::is_lost`]).
pub async fn read(
    db: &dyn Executor,
    blobs: &dyn BlobStore,
    id: Uuid,
    inline: &str,
    storage: &PayloadStorage,
) -> Result<String, PayloadError> {
    match storage {
        PayloadStorage::Inline => Ok(inline.to_string()),
        PayloadStorage::Blob(reference) => {
            let bytes: Bytes = blob::get_verified(blobs, reference).await?;
            String::from_utf8(bytes.to_vec()).map_err(|_| PayloadError::NotText {
                key: reference.key.to_string(),
            })
        }
        PayloadStorage::InlineUnread { size } => read_in_pieces(db, id, *size).await,
    }
}

pub const PAYLOAD_CHUNK: Statement = Statement::new(
    "outbox.payload_chunk",
    "SELECT substring(t.doc FROM CAST(:from AS integer) FOR CAST(:len AS integer)) AS chunk,
            octet_length(t.doc) AS size
       FROM (SELECT CAST(payload AS text) AS doc FROM outbox WHERE id = :id OFFSET 0) AS t",
);

async fn read_in_pieces(db: &dyn Executor, id: Uuid, size: u64) -> Result<String, PayloadError> {
    let size = usize::try_from(size).map_err(|_| PayloadError::Changed { id })?;
    let mut out = String::with_capacity(size);
    let mut chars = 0usize;
    while out.len() < size {
        let row = fetch_optional(
            db,
            &PAYLOAD_CHUNK,
            &params! {
                "id" => id,
                // substring counts characters, from 1
                "from" => (chars + 1) as i64,
                "len" => READ_CHUNK_CHARS as i64,
            },
        )
        .await?
        .ok_or(PayloadError::Changed { id })?;
        let now_size = row.opt_i64("size")?;
        let chunk = row.opt_text("chunk")?.unwrap_or_default();
        if now_size != Some(size as i64) || chunk.is_empty() {
            return Err(PayloadError::Changed { id });
        }
        chars += chunk.chars().count();
        out.push_str(&chunk);
    }
    if out.len() != size {
        return Err(PayloadError::Changed { id });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_payload_too_large_to_return_is_still_inline() {
        assert_eq!(PayloadStorage::Inline.location(), "inline");
        assert_eq!(
            PayloadStorage::InlineUnread { size: 1 }.location(),
            "inline"
        );
    }

    #[test]
    fn the_jsonb_bound_counts_spaces_and_numbers_outside_strings_only() {
        // jsonb: {"a": 1, "b": [true, false], "c": 0}: six spaces; a
        // number without an exponent never grows
        let text = r#"{"a":1,"b":[true,false],"c":-0}"#;
        assert_eq!(jsonb_text_bound(text), text.len() + 6);
        // a 301-digit integer, 15.0 and 0.00001
        assert!(jsonb_text_bound("1e300") >= 301);
        assert!(jsonb_text_bound("[1E+300]") >= 303);
        assert!(jsonb_text_bound("1.50e1") >= 4);
        assert!(jsonb_text_bound("1e-5") >= "0.00001".len());
        // inside strings nothing counts, escaped quotes included
        let s = r#""a:b,c 1e300 \" 2e300""#;
        assert_eq!(jsonb_text_bound(s), s.len());
        // what numeric cannot hold (PostgreSQL 15: 131,072 digits before
        // the point, 16,383 after)
        assert_eq!(jsonb_text_bound("1e131072"), usize::MAX);
        assert_ne!(jsonb_text_bound("1e131071"), usize::MAX);
        assert_eq!(jsonb_text_bound("1e-16384"), usize::MAX);
        assert_eq!(jsonb_text_bound("0.1e-16383"), usize::MAX);
        assert_ne!(jsonb_text_bound("1e-16383"), usize::MAX);
        assert_eq!(jsonb_text_bound("1e99999999999999999999999"), usize::MAX);
        assert_eq!(
            jsonb_text_bound(&format!("0.{}", "1".repeat(16_384))),
            usize::MAX
        );
    }
}
