//! The Amazon SNS adapter of the notice port: Publish to one topic (the
//! stack's alarm topic), the SDK's standard retries (3 attempts) and short
//! timeouts, so a slow SNS never holds a relay run.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sns::error::ProvideErrorMetadata as _;

use super::{Notifier, NotifyError, check};

/// Publishes to one topic.
#[derive(Debug, Clone)]
pub struct SnsNotifier {
    client: aws_sdk_sns::Client,
    topic_arn: String,
}

impl SnsNotifier {
    /// Publishing to `topic_arn` with `client`.
    pub fn new(client: aws_sdk_sns::Client, topic_arn: impl Into<String>) -> Self {
        Self {
            client,
            topic_arn: topic_arn.into(),
        }
    }

    /// A client from an AWS configuration already loaded (honours
    /// `AWS_ENDPOINT_URL_SNS`), with short timeouts.
    pub fn from_sdk_config(shared: &aws_config::SdkConfig, topic_arn: impl Into<String>) -> Self {
        let config = aws_sdk_sns::config::Builder::from(shared)
            .timeout_config(
                aws_sdk_sns::config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(2))
                    .operation_attempt_timeout(Duration::from_secs(3))
                    .operation_timeout(Duration::from_secs(8))
                    .build(),
            )
            .build();
        Self::new(aws_sdk_sns::Client::from_conf(config), topic_arn)
    }
}

#[async_trait]
impl Notifier for SnsNotifier {
    async fn notify(&self, subject: &str, message: &str) -> Result<(), NotifyError> {
        check(subject, message)?;
        self.client
            .publish()
            .topic_arn(&self.topic_arn)
            .subject(subject)
            .message(message)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                NotifyError::Failed(format!(
                    "SNS Publish to {}: {}{}",
                    self.topic_arn,
                    e.code().map(|c| format!("{c}: ")).unwrap_or_default(),
                    crate::error_chain(&e as &dyn std::error::Error)
                ))
            })
    }
}
