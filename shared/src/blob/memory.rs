//! An in-memory blob store for tests: the port's semantics (keys validated
//! by [`BlobKey`], a second put of a key keeps the first object, absent keys
//! are [`BlobError::NotFound`], deleting an absent key succeeds) plus hooks
//! a test needs: call counts, corrupting or removing an object, failing the
//! next call, or being down.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;

use super::{BlobError, BlobKey, BlobStore};

#[derive(Debug, Default)]
struct State {
    objects: BTreeMap<BlobKey, Bytes>,
    puts: u64,
    gets: u64,
    deletes: u64,
    fail_next: Option<BlobError>,
    unavailable: bool,
}

/// The in-memory store. Clones share the same objects.
#[derive(Clone, Default)]
pub struct MemoryBlobStore {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for MemoryBlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryBlobStore")
            .field("objects", &state.objects.len())
            .field("puts", &state.puts)
            .field("gets", &state.gets)
            .field("deletes", &state.deletes)
            .field("unavailable", &state.unavailable)
            .finish_non_exhaustive()
    }
}

impl MemoryBlobStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.lock().objects.len()
    }

    /// True when no object is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored keys, in order.
    pub fn keys(&self) -> Vec<BlobKey> {
        self.lock().objects.keys().cloned().collect()
    }

    /// True when an object is stored under `key`.
    pub fn contains(&self, key: &BlobKey) -> bool {
        self.lock().objects.contains_key(key)
    }

    /// Calls of `put` so far (failed ones included).
    pub fn puts(&self) -> u64 {
        self.lock().puts
    }

    /// Calls of `get` so far (failed ones included).
    pub fn gets(&self) -> u64 {
        self.lock().gets
    }

    /// Calls of `delete` so far (failed ones included).
    pub fn deletes(&self) -> u64 {
        self.lock().deletes
    }

    /// Damages the object under `key`: flips the bits of its first byte, or
    /// gives an empty object one byte. False when there is no such object.
    pub fn corrupt(&self, key: &BlobKey) -> bool {
        let mut state = self.lock();
        let Some(bytes) = state.objects.get_mut(key) else {
            return false;
        };
        let mut damaged = bytes.to_vec();
        match damaged.first_mut() {
            Some(b) => *b = !*b,
            None => damaged.push(0),
        }
        *bytes = Bytes::from(damaged);
        true
    }

    /// Deletes the object under `key` (as a lifecycle rule or an operator
    /// would). False when there was none.
    pub fn remove(&self, key: &BlobKey) -> bool {
        self.lock().objects.remove(key).is_some()
    }

    /// The next call (`put`, `get` or `delete`) fails with `error`, doing nothing.
    pub fn fail_next(&self, error: BlobError) {
        self.lock().fail_next = Some(error);
    }

    /// While `down`, every call fails with [`BlobError::Unavailable`].
    pub fn set_unavailable(&self, down: bool) {
        self.lock().unavailable = down;
    }

    fn injected(state: &mut State, operation: &'static str, key: &BlobKey) -> Option<BlobError> {
        if let Some(e) = state.fail_next.take() {
            return Some(e);
        }
        state.unavailable.then(|| BlobError::Unavailable {
            operation,
            key: key.to_string(),
            reason: "the in-memory store is switched off (set_unavailable)".into(),
        })
    }
}

#[async_trait]
impl BlobStore for MemoryBlobStore {
    async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError> {
        let mut state = self.lock();
        state.puts += 1;
        if let Some(e) = Self::injected(&mut state, "put", key) {
            return Err(e);
        }
        state.objects.entry(key.clone()).or_insert(bytes);
        Ok(())
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let mut state = self.lock();
        state.gets += 1;
        if let Some(e) = Self::injected(&mut state, "get", key) {
            return Err(e);
        }
        state
            .objects
            .get(key)
            .cloned()
            .ok_or_else(|| BlobError::NotFound {
                key: key.to_string(),
            })
    }

    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        let mut state = self.lock();
        state.deletes += 1;
        if let Some(e) = Self::injected(&mut state, "delete", key) {
            return Err(e);
        }
        state.objects.remove(key);
        Ok(())
    }
}
