//! The key service port: envelope encryption of what hookbox must keep
//! secret at rest (endpoints' signing secrets, [`crate::tenants::secrets`]).
//! A data key seals the secrets (AES-256-GCM, in hookbox's code); the key
//! service only wraps and unwraps data keys, so one call unwraps a data key
//! that then opens any number of secrets, and the database holds nothing it
//! could open by itself.
//!
//! Adapters: AWS KMS ([`kms::KmsVault`]: GenerateDataKey and Decrypt under a
//! key the stack owns, with an encryption context), and a local key
//! ([`local::LocalVault`]: the local stack and tests; as strict as KMS: a
//! wrapped key altered by one bit, or wrapped under another key, is
//! refused).

pub mod kms;
pub mod local;

use std::fmt;

use async_trait::async_trait;
use zeroize::Zeroizing;

/// Length of a data key: AES-256.
pub const DATA_KEY_BYTES: usize = 32;

/// A data key in clear: wiped on drop, never printed.
#[derive(Clone)]
pub struct DataKey(Zeroizing<[u8; DATA_KEY_BYTES]>);

impl DataKey {
    /// A data key from its bytes; `None` unless exactly [`DATA_KEY_BYTES`].
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        let key: [u8; DATA_KEY_BYTES] = bytes.try_into().ok()?;
        Some(Self(Zeroizing::new(key)))
    }

    /// A fresh random key.
    pub fn random() -> Self {
        use aes_gcm::aead::rand_core::RngCore as _;
        let mut key = Zeroizing::new([0u8; DATA_KEY_BYTES]);
        aes_gcm::aead::OsRng.fill_bytes(key.as_mut());
        Self(key)
    }

    /// Its bytes.
    pub fn expose(&self) -> &[u8; DATA_KEY_BYTES] {
        &self.0
    }
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DataKey([redacted])")
    }
}

/// A new data key, in clear and wrapped.
#[derive(Debug)]
pub struct NewDataKey {
    /// To seal with now.
    pub key: DataKey,
    /// To store (only the key service can unwrap it).
    pub wrapped: Vec<u8>,
}

/// What the key service refused or could not do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    /// The service did not answer, or asked to slow down: try again later
    /// (a delivery is retried, an API call answers 503).
    #[error("the key service {service} is unavailable: {reason}")]
    Unavailable {
        /// Which service (`kms`, `local`).
        service: &'static str,
        /// What happened.
        reason: String,
    },
    /// The service refused: the wrapped key was altered, or wrapped under
    /// another key, or access is denied. Trying again does not help.
    #[error("the key service {service} refused: {reason}")]
    Refused {
        /// Which service.
        service: &'static str,
        /// Why (never a key's bytes).
        reason: String,
    },
}

impl VaultError {
    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}

/// Wraps and unwraps data keys.
///
/// Error contract: [`VaultError::Unavailable`] for what may pass (a network
/// error, throttling, a timeout); [`VaultError::Refused`] for what will not
/// (a wrapped key that was altered or belongs to another key, access
/// denied). Neither ever carries key material.
#[async_trait]
pub trait KeyVault: Send + Sync + fmt::Debug {
    /// Which key wraps new data keys (stored beside each: a KMS key id, or
    /// `local:` and the local key's fingerprint).
    fn wrapped_by(&self) -> &str;

    /// A new data key.
    async fn generate(&self) -> Result<NewDataKey, VaultError>;

    /// The data key `wrapped` holds (wrapped by this vault's key).
    async fn unwrap(&self, wrapped: &[u8]) -> Result<DataKey, VaultError>;
}
