//! The AWS KMS adapter of the key vault: GenerateDataKey (AES_256) and
//! Decrypt under one key, each with the encryption context
//! `{"purpose": "hookbox-endpoint-secrets"}`, so a data key wrapped for
//! hookbox is refused to any call that does not name that purpose (and the
//! context is in CloudTrail's record of each call).

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_kms::error::{ProvideErrorMetadata as _, SdkError};
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;

use super::{DataKey, KeyVault, NewDataKey, VaultError};

const PURPOSE: (&str, &str) = ("purpose", "hookbox-endpoint-secrets");

/// KMS errors that trying again may fix (the others are refusals: a
/// disabled or missing key, access denied, an altered ciphertext).
const RETRYABLE: &[&str] = &[
    "DependencyTimeoutException",
    "KMSInternalException",
    "ThrottlingException",
    "LimitExceededException",
    "KeyUnavailableException",
];

/// Wraps data keys under a KMS key.
#[derive(Debug, Clone)]
pub struct KmsVault {
    client: aws_sdk_kms::Client,
    key_id: String,
}

impl KmsVault {
    /// Over the key `key_id` (an id, ARN or alias) with `client`.
    pub fn new(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self {
            client,
            key_id: key_id.into(),
        }
    }

    /// A client from an AWS configuration already loaded (honours
    /// `AWS_ENDPOINT_URL_KMS`).
    pub fn from_sdk_config(shared: &aws_config::SdkConfig, key_id: impl Into<String>) -> Self {
        Self::new(aws_sdk_kms::Client::new(shared), key_id)
    }

    fn context() -> HashMap<String, String> {
        HashMap::from([(PURPOSE.0.to_string(), PURPOSE.1.to_string())])
    }
}

fn vault_error<E, R>(call: &str, e: SdkError<E, R>) -> VaultError
where
    E: aws_sdk_kms::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = e.code().map(str::to_string);
    let reason = format!(
        "{call}: {}",
        crate::error_chain(&e as &dyn std::error::Error)
    );
    match (&e, code.as_deref()) {
        (SdkError::ServiceError(_), Some(code)) if !RETRYABLE.contains(&code) => {
            VaultError::Refused {
                service: "kms",
                reason,
            }
        }
        _ => VaultError::Unavailable {
            service: "kms",
            reason,
        },
    }
}

#[async_trait]
impl KeyVault for KmsVault {
    fn wrapped_by(&self) -> &str {
        &self.key_id
    }

    async fn generate(&self) -> Result<NewDataKey, VaultError> {
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .set_encryption_context(Some(Self::context()))
            .send()
            .await
            .map_err(|e| vault_error("GenerateDataKey", e))?;
        let key = out
            .plaintext()
            .and_then(|p| DataKey::from_slice(p.as_ref()))
            .ok_or_else(|| VaultError::Refused {
                service: "kms",
                reason: "GenerateDataKey returned no 32-byte plaintext".into(),
            })?;
        let wrapped = out
            .ciphertext_blob()
            .map(|b| b.as_ref().to_vec())
            .ok_or_else(|| VaultError::Refused {
                service: "kms",
                reason: "GenerateDataKey returned no ciphertext".into(),
            })?;
        Ok(NewDataKey { key, wrapped })
    }

    async fn unwrap(&self, wrapped: &[u8]) -> Result<DataKey, VaultError> {
        let out = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(wrapped))
            .set_encryption_context(Some(Self::context()))
            .send()
            .await
            .map_err(|e| vault_error("Decrypt", e))?;
        out.plaintext()
            .and_then(|p| DataKey::from_slice(p.as_ref()))
            .ok_or_else(|| VaultError::Refused {
                service: "kms",
                reason: "Decrypt returned no 32-byte plaintext".into(),
            })
    }
}
