//! SQS adapter of the queue port (crate `aws-sdk-sqs`).
//!
//! Unlike the Data API client, retries stay on (3 attempts): a retried
//! SendMessage can at worst create a duplicate message, and processing is
//! idempotent (the inbox row is claimed once).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{
    MessageSystemAttributeName, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
    SendMessageBatchRequestEntry,
};
use chrono::{DateTime, Utc};

use super::{
    Queue, QueueConsumer, QueueError, Received, check_batch, check_body, check_visibility,
};

/// The SQS queue.
#[derive(Clone)]
pub struct SqsQueue {
    client: Client,
    queue_url: String,
}

impl fmt::Debug for SqsQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqsQueue")
            .field("queue_url", &self.queue_url)
            .finish_non_exhaustive()
    }
}

fn tune(builder: aws_sdk_sqs::config::Builder) -> aws_sdk_sqs::config::Builder {
    builder
        .timeout_config(
            aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(3))
                .operation_timeout(Duration::from_secs(8))
                .build(),
        )
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::standard().with_max_attempts(3))
}

impl SqsQueue {
    /// A queue reached through `client`.
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// A client from the environment (region, credentials, and
    /// `AWS_ENDPOINT_URL_SQS` when set) with our timeouts.
    pub async fn from_aws_env(queue_url: impl Into<String>) -> Self {
        let shared = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Self::from_sdk_config(&shared, queue_url)
    }

    /// A client from an AWS configuration already loaded (shared with the
    /// function's other clients), with our timeouts.
    pub fn from_sdk_config(shared: &aws_config::SdkConfig, queue_url: impl Into<String>) -> Self {
        let config = tune(aws_sdk_sqs::config::Builder::from(shared)).build();
        Self::new(Client::from_conf(config), queue_url)
    }

    /// A client for an SQS emulator (moto) at `endpoint`, dummy credentials.
    pub fn local_client(endpoint: &str) -> Client {
        let config = tune(
            aws_sdk_sqs::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .endpoint_url(endpoint)
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("local", "local", None, None, "local")),
        )
        .build();
        Client::from_conf(config)
    }

    /// The queue URL.
    pub fn url(&self) -> &str {
        &self.queue_url
    }
}

fn sqs_error<E, R>(operation: &'static str, e: SdkError<E, R>) -> QueueError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    match &e {
        SdkError::ServiceError(ctx) => {
            let code = ctx.err().code().unwrap_or("").to_string();
            let reason = match ctx.err().message() {
                Some(m) => format!("{code}: {m}"),
                None => code.clone(),
            };
            let transient = code.contains("Throttl")
                || code.contains("RequestThrottled")
                || code.contains("ServiceUnavailable")
                || code.contains("InternalError")
                || code.contains("InternalFailure")
                || code.starts_with("Kms");
            if transient {
                QueueError::Unavailable { operation, reason }
            } else {
                QueueError::Rejected { operation, reason }
            }
        }
        SdkError::ConstructionFailure(_) => QueueError::Rejected {
            operation,
            reason: crate::error_chain(&e),
        },
        _ => QueueError::Unavailable {
            operation,
            reason: crate::error_chain(&e),
        },
    }
}

/// The `AWSTraceHeader` of a message sent now: the X-Ray trace header of
/// the invocation under way, when it has a well-formed one
/// ([`crate::log_format::trace_header`]), so the message's
/// processing joins the sender's trace. (It does not count toward the
/// message's size.)
fn trace_attribute() -> Option<MessageSystemAttributeValue> {
    let header = crate::log_format::trace_header()?;
    MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(header)
        .build()
        .ok()
}

#[async_trait]
impl Queue for SqsQueue {
    async fn send(&self, body: &str) -> Result<String, QueueError> {
        self.send_delayed(body, Duration::ZERO).await
    }

    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        check_body(body)?;
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body);
        if let Some(trace) = trace_attribute() {
            request = request.message_system_attributes(
                MessageSystemAttributeNameForSends::AwsTraceHeader,
                trace,
            );
        }
        if !delay.is_zero() {
            let seconds = delay.min(super::MAX_DELAY).as_secs();
            request = request.delay_seconds(i32::try_from(seconds).unwrap_or(900));
        }
        let out = request.send().await.map_err(|e| sqs_error("send", e))?;
        Ok(out.message_id().unwrap_or_default().to_string())
    }

    async fn send_batch(&self, bodies: &[String]) -> Vec<Result<String, QueueError>> {
        let refuse_all = |e: QueueError| bodies.iter().map(|_| Err(e.clone())).collect();
        if let Err(e) = check_batch(bodies) {
            return refuse_all(e);
        }
        // a body SQS would refuse is refused alone; the others go together
        let mut results: Vec<Option<Result<String, QueueError>>> = bodies
            .iter()
            .map(|body| check_body(body).err().map(Err))
            .collect();
        let mut request = self.client.send_message_batch().queue_url(&self.queue_url);
        let trace = trace_attribute();
        let mut entries = 0;
        for (i, body) in bodies.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let mut entry = SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_body(body);
            if let Some(trace) = &trace {
                entry = entry.message_system_attributes(
                    MessageSystemAttributeNameForSends::AwsTraceHeader,
                    trace.clone(),
                );
            }
            match entry.build() {
                Ok(entry) => {
                    request = request.entries(entry);
                    entries += 1;
                }
                Err(e) => {
                    results[i] = Some(Err(QueueError::Rejected {
                        operation: "send_batch",
                        reason: e.to_string(),
                    }));
                }
            }
        }
        if entries > 0 {
            match request.send().await {
                Err(e) => {
                    let e = sqs_error("send_batch", e);
                    for result in results.iter_mut().filter(|r| r.is_none()) {
                        *result = Some(Err(e.clone()));
                    }
                }
                Ok(out) => {
                    for ok in out.successful() {
                        if let Some(slot) = ok
                            .id()
                            .parse::<usize>()
                            .ok()
                            .and_then(|i| results.get_mut(i))
                        {
                            *slot = Some(Ok(ok.message_id().to_string()));
                        }
                    }
                    for failed in out.failed() {
                        let reason = format!(
                            "{}: {}",
                            failed.code(),
                            failed.message().unwrap_or_default()
                        );
                        let e = if failed.sender_fault() {
                            QueueError::Rejected {
                                operation: "send_batch",
                                reason,
                            }
                        } else {
                            QueueError::Unavailable {
                                operation: "send_batch",
                                reason,
                            }
                        };
                        if let Some(slot) = failed
                            .id()
                            .parse::<usize>()
                            .ok()
                            .and_then(|i| results.get_mut(i))
                        {
                            *slot = Some(Err(e));
                        }
                    }
                }
            }
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(QueueError::Unavailable {
                        operation: "send_batch",
                        reason: "SQS answered neither success nor failure for this entry".into(),
                    })
                })
            })
            .collect()
    }

    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        check_visibility("change_visibility", timeout)?;
        let seconds = i32::try_from(timeout.as_secs()).unwrap_or(i32::MAX);
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| sqs_error("change_visibility", e))
    }
}

#[async_trait]
impl QueueConsumer for SqsQueue {
    async fn receive(&self, max: usize) -> Result<Vec<Received>, QueueError> {
        let max = i32::try_from(max.clamp(1, 10)).unwrap_or(10);
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(max)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_system_attribute_names(MessageSystemAttributeName::SentTimestamp)
            .message_system_attribute_names(MessageSystemAttributeName::AwsTraceHeader)
            .send()
            .await
            .map_err(|e| sqs_error("receive", e))?;
        Ok(out
            .messages()
            .iter()
            .map(|m| {
                let attrs = m.attributes();
                let attr = |name: MessageSystemAttributeName| {
                    attrs.and_then(|a| a.get(&name)).map(String::as_str)
                };
                Received {
                    message_id: m.message_id().unwrap_or_default().to_string(),
                    receipt_handle: m.receipt_handle().unwrap_or_default().to_string(),
                    body: m.body().unwrap_or_default().to_string(),
                    receive_count: attr(MessageSystemAttributeName::ApproximateReceiveCount)
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(1),
                    sent_at: attr(MessageSystemAttributeName::SentTimestamp)
                        .and_then(|t| t.parse::<i64>().ok())
                        .and_then(DateTime::<Utc>::from_timestamp_millis)
                        .unwrap_or_default(),
                    trace_header: attr(MessageSystemAttributeName::AwsTraceHeader)
                        .map(str::to_owned),
                }
            })
            .collect())
    }

    async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError> {
        self.client
            .delete_message()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| sqs_error("delete", e))
    }
}
