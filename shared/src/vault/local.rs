//! The local key vault: data keys wrapped with AES-256-GCM under one key
//! held by the process (the local stack, tests). As strict as KMS: a
//! wrapped key altered by one bit, cut short, or wrapped under another key
//! is refused.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use async_trait::async_trait;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{DATA_KEY_BYTES, DataKey, KeyVault, NewDataKey, VaultError};

/// Bound into every wrapped key (the additional data): a key wrapped for
/// another purpose does not unwrap here.
const CONTEXT: &[u8] = b"hookbox data key v1";

const NONCE_BYTES: usize = 12;

/// Wraps data keys under a local key.
#[derive(Debug)]
pub struct LocalVault {
    key: DataKey,
    wrapped_by: String,
}

impl LocalVault {
    /// A vault over `key`.
    pub fn new(key: DataKey) -> Self {
        let fingerprint = Sha256::digest(key.expose());
        Self {
            wrapped_by: format!("local:{}", hex::encode(&fingerprint[..8])),
            key,
        }
    }

    /// A vault over a fresh random key (tests; what it wrapped is lost with
    /// it).
    pub fn random() -> Self {
        Self::new(DataKey::random())
    }

    /// A vault over the key `text` holds: 32 bytes, base64.
    pub fn from_base64(text: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("the local vault key is not base64: {e}"))?;
        let key = DataKey::from_slice(&bytes).ok_or_else(|| {
            format!(
                "the local vault key is {} bytes, not {DATA_KEY_BYTES}",
                bytes.len()
            )
        })?;
        Ok(Self::new(key))
    }

    /// Its key (to hand to another process of the same local stack).
    pub fn key(&self) -> &DataKey {
        &self.key
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(self.key.expose().into())
    }
}

fn refused(reason: impl Into<String>) -> VaultError {
    VaultError::Refused {
        service: "local",
        reason: reason.into(),
    }
}

#[async_trait]
impl KeyVault for LocalVault {
    fn wrapped_by(&self) -> &str {
        &self.wrapped_by
    }

    async fn generate(&self) -> Result<NewDataKey, VaultError> {
        let key = DataKey::random();
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: key.expose(),
                    aad: CONTEXT,
                },
            )
            .map_err(|_| refused("cannot wrap a data key"))?;
        let mut wrapped = nonce.to_vec();
        wrapped.extend_from_slice(&sealed);
        Ok(NewDataKey { key, wrapped })
    }

    async fn unwrap(&self, wrapped: &[u8]) -> Result<DataKey, VaultError> {
        if wrapped.len() <= NONCE_BYTES {
            return Err(refused(format!(
                "a wrapped data key of {} bytes is too short",
                wrapped.len()
            )));
        }
        let (nonce, sealed) = wrapped.split_at(NONCE_BYTES);
        let plain = zeroize::Zeroizing::new(
            self.cipher()
                .decrypt(
                    Nonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: CONTEXT,
                    },
                )
                .map_err(|_| {
                    refused(format!(
                        "the data key does not open under {} (altered, or wrapped under another key)",
                        self.wrapped_by
                    ))
                })?,
        );
        DataKey::from_slice(&plain).ok_or_else(|| refused("a wrapped data key of the wrong length"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wrapped_key_unwraps_and_nothing_else_does() {
        let vault = LocalVault::random();
        let new = vault.generate().await.expect("generate");
        let back = vault.unwrap(&new.wrapped).await.expect("unwrap");
        assert_eq!(back.expose(), new.key.expose());

        let mut altered = new.wrapped.clone();
        let last = altered.len() - 1;
        altered[last] ^= 1;
        let err = vault.unwrap(&altered).await.expect_err("altered");
        assert!(!err.is_retryable(), "{err}");
        assert!(err.to_string().contains("does not open"), "{err}");

        let other = LocalVault::random();
        assert!(other.unwrap(&new.wrapped).await.is_err());
        assert!(vault.unwrap(&new.wrapped[..10]).await.is_err());
    }

    #[test]
    fn a_key_is_never_printed_and_must_be_32_bytes() {
        let key = DataKey::from_slice(&[7u8; 32]).expect("32 bytes");
        assert_eq!(format!("{key:?}"), "DataKey([redacted])");
        assert!(DataKey::from_slice(&[7u8; 31]).is_none());
        assert!(LocalVault::from_base64("AAAA").is_err());
        let b64 = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let vault = LocalVault::from_base64(&b64).expect("key");
        assert!(vault.wrapped_by().starts_with("local:"));
        assert_eq!(
            vault.wrapped_by(),
            LocalVault::from_base64(&b64).expect("key").wrapped_by()
        );
    }
}
