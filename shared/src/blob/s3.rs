//! S3 adapter of the blob store port (crate `aws-sdk-s3`).
//!
//! One object per key in one bucket. PutObject sends the length
//! (`Content-Length`) and the SDK's default request checksum (CRC32); the
//! sha256 of the reference is checked on read by
//! [`get_verified`](super::get_verified), so no server-side checksum is
//! asked for. Retries stay on (3 attempts): every operation is safe to
//! repeat, and a content-addressed put writes the same bytes again.
//! DeleteObject of an absent key succeeds (S3 answers 204 either way).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{BlobError, BlobKey, BlobStore};

/// A bucket of S3 (or of an emulator such as moto).
#[derive(Clone)]
pub struct S3BlobStore {
    client: Client,
    bucket: String,
}

impl fmt::Debug for S3BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3BlobStore")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// Our timeouts and retries. An attempt may move a few MiB (Lambda's payload
/// limit is 6 MB), so it gets longer than a queue call; the whole operation
/// stays well inside API Gateway's 29 s.
fn tune(builder: aws_sdk_s3::config::Builder) -> aws_sdk_s3::config::Builder {
    builder
        .timeout_config(
            aws_sdk_s3::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(6))
                .operation_timeout(Duration::from_secs(15))
                .build(),
        )
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::standard().with_max_attempts(3))
}

/// True when S3 requests go to an endpoint other than AWS's: an endpoint URL
/// in `sdk_config` (set in code, or `AWS_ENDPOINT_URL` read by aws-config),
/// or `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` in `env` (unless
/// `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`, as the SDK does).
fn endpoint_overridden(
    sdk_config: &aws_config::SdkConfig,
    env: impl Fn(&str) -> Option<String>,
) -> bool {
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let ignored = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    sdk_config.endpoint_url().is_some()
        || (!ignored && (set("AWS_ENDPOINT_URL_S3") || set("AWS_ENDPOINT_URL")))
}

impl S3BlobStore {
    /// The bucket `bucket` reached through `client`, as configured.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    /// A client from the shared AWS configuration (region, credentials, and
    /// the endpoint: the SDK takes `AWS_ENDPOINT_URL_S3`, then
    /// `AWS_ENDPOINT_URL`, when aws-config loaded them) with our timeouts and
    /// retries. When the endpoint is overridden (see `endpoint_overridden`:
    /// `sdk_config.endpoint_url()`, or either variable in `env`) requests use
    /// path-style addressing (`http://host:port/bucket/key`), which local
    /// endpoints such as moto need; against AWS they stay virtual-hosted.
    ///
    /// `env` reads the environment (`|name| std::env::var(name).ok()` in
    /// production), so tests need not touch the process environment.
    pub fn from_env(
        sdk_config: &aws_config::SdkConfig,
        bucket: impl Into<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let mut builder = tune(aws_sdk_s3::config::Builder::from(sdk_config));
        if endpoint_overridden(sdk_config, env) {
            builder = builder.force_path_style(true);
        }
        Self::new(Client::from_conf(builder.build()), bucket)
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The client (for operators' tools: listing, lifecycle).
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Error codes S3 documents as worth retrying (besides any 5xx).
const TRANSIENT_CODES: &[&str] = &[
    "SlowDown",
    "RequestTimeout",
    "InternalError",
    "ServiceUnavailable",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "OperationAborted",
];

fn s3_error<E>(operation: &'static str, key: &BlobKey, e: SdkError<E, HttpResponse>) -> BlobError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let key = key.to_string();
    match &e {
        SdkError::ServiceError(ctx) => {
            let status = ctx.raw().status().as_u16();
            let code = ctx.err().code().unwrap_or("").to_string();
            let reason = match (code.as_str(), ctx.err().message()) {
                ("", Some(m)) => format!("HTTP {status}: {m}"),
                ("", None) => format!("HTTP {status}"),
                (c, Some(m)) => format!("HTTP {status} {c}: {m}"),
                (c, None) => format!("HTTP {status} {c}"),
            };
            if code == "NoSuchBucket" || code == "InvalidBucketName" {
                BlobError::Refused {
                    operation,
                    key,
                    reason,
                }
            } else if operation == "get" && (code == "NoSuchKey" || status == 404) {
                BlobError::NotFound { key }
            } else if status >= 500 || status == 429 || TRANSIENT_CODES.contains(&code.as_str()) {
                BlobError::Unavailable {
                    operation,
                    key,
                    reason,
                }
            } else {
                // 403 AccessDenied, 400 InvalidArgument, 404 on a put, …
                BlobError::Refused {
                    operation,
                    key,
                    reason,
                }
            }
        }
        SdkError::ConstructionFailure(_) => BlobError::Refused {
            operation,
            key,
            reason: crate::error_chain(&e),
        },
        // TimeoutError, DispatchFailure (connect, DNS, TLS, reset),
        // ResponseError (a reply we could not read).
        _ => BlobError::Unavailable {
            operation,
            key,
            reason: crate::error_chain(&e),
        },
    }
}

#[async_trait]
impl BlobStore for S3BlobStore {
    async fn put(&self, key: &BlobKey, bytes: Bytes) -> Result<(), BlobError> {
        let length = i64::try_from(bytes.len()).map_err(|_| BlobError::Refused {
            operation: "put",
            key: key.to_string(),
            reason: format!("{} bytes do not fit a Content-Length", bytes.len()),
        })?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .content_length(length)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| s3_error("put", key, e))
    }

    async fn get(&self, key: &BlobKey) -> Result<Bytes, BlobError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await
            .map_err(|e| s3_error("get", key, e))?;
        let body = out
            .body
            .collect()
            .await
            .map_err(|e| BlobError::Unavailable {
                operation: "get",
                key: key.to_string(),
                reason: format!("reading the body: {}", crate::error_chain(&e)),
            })?;
        Ok(body.into_bytes())
    }

    async fn delete(&self, key: &BlobKey) -> Result<(), BlobError> {
        let deleted = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(key.as_str())
            .send()
            .await;
        match deleted {
            Ok(_) => Ok(()),
            // S3 answers 204 for an absent key; an emulator may say so
            Err(SdkError::ServiceError(ctx)) if ctx.err().code() == Some("NoSuchKey") => Ok(()),
            Err(e) => Err(s3_error("delete", key, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk(endpoint: Option<&str>) -> aws_config::SdkConfig {
        let mut builder = aws_config::SdkConfig::builder();
        if let Some(url) = endpoint {
            builder = builder.endpoint_url(url);
        }
        builder.build()
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn path_style_only_when_an_endpoint_is_overridden() {
        assert!(!endpoint_overridden(&sdk(None), env(&[])));
        assert!(!endpoint_overridden(
            &sdk(None),
            env(&[("AWS_ENDPOINT_URL_S3", "  ")])
        ));
        assert!(!endpoint_overridden(
            &sdk(None),
            env(&[("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")])
        ));
        assert!(endpoint_overridden(
            &sdk(Some("http://127.0.0.1:1")),
            env(&[])
        ));
        assert!(endpoint_overridden(
            &sdk(None),
            env(&[("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")])
        ));
        assert!(endpoint_overridden(
            &sdk(None),
            env(&[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")])
        ));
        assert!(!endpoint_overridden(
            &sdk(None),
            env(&[
                ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1"),
                ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
            ])
        ));
        // An endpoint set in code is kept even then (as the SDK does).
        assert!(endpoint_overridden(
            &sdk(Some("http://127.0.0.1:1")),
            env(&[("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")])
        ));
    }
}
