//! The SQS transport: each entry is an [`envelope`](super::envelope) in one
//! message, up to ten per SendMessageBatch (and no more bytes per call than
//! the destination's `max_entry_bytes`, which SQS counts for the batch as
//! for one message).
//!
//! A FIFO queue gets `MessageGroupId` = the aggregate, its type and its id
//! ([`group_id`]: `order/o-1`, `partner:stripe/cus_1`; so one aggregate's
//! messages are read in order, and two aggregate types' `cus_1` are two
//! groups) and `MessageDeduplicationId` = the delivery id, so a retry
//! inside SQS's 5-minute deduplication window is not a second message. A
//! FIFO destination is always `ordered` (config/destination.rs): the relay
//! hands SQS one aggregate's rows one at a time, oldest first, so the
//! group's order is the rows' order.
//!
//! Outcomes: an entry in `Successful` is delivered; one in `Failed` is
//! retried when SQS says the fault is its own or the code is a throttle,
//! else dead with SQS's code and message; a call that fails as a whole
//! (timeout, network, 5xx, access denied) is a retry of each entry.
//! moto accepts what SQS refuses (over-large bodies, any group id), so the
//! limits are enforced here, before the call.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use sha2::{Digest, Sha256};

use super::aws::{self, MAX_BATCH};
use super::{DeliveryRequest, Entry, EntryOutcome, Transport, envelope};
use crate::config::{SqsTarget, Target};

/// Longest FIFO `MessageGroupId` SQS takes.
const MAX_GROUP_ID_CHARS: usize = 128;

/// The SQS transport (behind [`super::Coalescing`] in a relay, so a claim's
/// entries go ten to a call).
#[derive(Debug)]
pub struct SqsTransport {
    service: aws::Service<Client>,
}

impl SqsTransport {
    /// Through `client`; an envelope too large for its destination refers
    /// to its payload's object in `bucket` (the blob store's).
    pub fn new(client: Client, bucket: Option<String>) -> Self {
        Self {
            service: aws::Service::ready("SQS client", client, bucket),
        }
    }

    /// Through the client `make` builds on first use (not at init: cold
    /// start does not pay for it).
    pub fn lazy<F, Fut>(make: F, bucket: Option<String>) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Arc<Client>> + Send + 'static,
    {
        Self {
            service: aws::Service::lazy("SQS client", make, bucket),
        }
    }

    /// A client from an AWS configuration (`AWS_ENDPOINT_URL_SQS` honoured),
    /// two attempts per call at most: the relay's schedule does the rest.
    pub fn client(shared: &aws_config::SdkConfig) -> Client {
        let config = aws_sdk_sqs::config::Builder::from(shared)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::standard().with_max_attempts(2))
            .build();
        Client::from_conf(config)
    }
}

/// The FIFO group of an aggregate: `{aggregate_type}/{aggregate_id}` when
/// SQS takes it as a group id (1 to 128 printable ASCII characters) and the
/// type has no `/` (so the split is unambiguous); else `sha256:` and the
/// hash of both (length-prefixed: no two aggregates share it), the same for
/// every message of that aggregate. The hashed form has no `/`, so it never
/// equals a plain one.
pub fn group_id(aggregate_type: &str, aggregate_id: &str) -> String {
    let plain = format!("{aggregate_type}/{aggregate_id}");
    let fits = !aggregate_type.contains('/')
        && plain.len() <= MAX_GROUP_ID_CHARS
        && plain.bytes().all(|b| b.is_ascii_graphic());
    if fits {
        plain
    } else {
        let mut hash = Sha256::new();
        hash.update(aggregate_type.len().to_string());
        hash.update(":");
        hash.update(aggregate_type);
        hash.update(aggregate_id);
        format!("sha256:{}", hex::encode(hash.finalize()))
    }
}

/// The queue's ARN, for an error naming the permission to grant
/// (`https://sqs.{region}.amazonaws.com/{account}/{name}`), or its URL.
fn queue_arn(queue_url: &str) -> String {
    let parsed = reqwest::Url::parse(queue_url).ok();
    let parts = parsed.as_ref().and_then(|url| {
        let region = url.host_str()?.strip_prefix("sqs.")?.split('.').next()?;
        let mut path = url.path_segments()?;
        let account = path.next()?;
        let name = path.next()?;
        Some(format!("arn:aws:sqs:{region}:{account}:{name}"))
    });
    parts.unwrap_or_else(|| queue_url.to_string())
}

impl SqsTransport {
    /// One SendMessageBatch of `bodies` (`(entry index, body)`), its
    /// outcomes by entry index.
    async fn call(
        &self,
        target: &SqsTarget,
        entries: &[Entry<'_>],
        bodies: &[(usize, String)],
        timeout: Duration,
    ) -> Vec<(usize, EntryOutcome)> {
        let mut batch = Vec::with_capacity(bodies.len());
        for (n, (i, body)) in bodies.iter().enumerate() {
            let entry = &entries[*i];
            let mut message = SendMessageBatchRequestEntry::builder()
                .id(n.to_string())
                .message_body(body);
            if target.fifo {
                message = message
                    .message_group_id(group_id(entry.aggregate_type, entry.aggregate_id))
                    .message_deduplication_id(entry.id.to_string());
            }
            match message.build() {
                Ok(message) => batch.push(message),
                // (only a missing id or body, which are always set)
                Err(e) => {
                    return bodies
                        .iter()
                        .map(|(i, _)| (*i, EntryOutcome::retry(format!("SQS request: {e}"))))
                        .collect();
                }
            }
        }
        let client = self.service.client.get().await;
        let send = client
            .send_message_batch()
            .queue_url(&target.queue_url)
            .set_entries(Some(batch))
            .send();
        let arn = queue_arn(&target.queue_url);
        let failed = |outcome: EntryOutcome| {
            bodies
                .iter()
                .map(|(i, _)| (*i, outcome.clone()))
                .collect::<Vec<_>>()
        };
        let output = match tokio::time::timeout(timeout, send).await {
            Err(_) => {
                return failed(aws::failed_call(
                    "SQS",
                    "SendMessageBatch",
                    None,
                    &format!("no answer within {timeout:?}"),
                    "sqs:SendMessage",
                    &arn,
                ));
            }
            Ok(Err(e)) => {
                let (code, message) = match &e {
                    SdkError::ServiceError(ctx) => (
                        ctx.err().code().map(str::to_string),
                        ctx.err().message().unwrap_or_default().to_string(),
                    ),
                    _ => (None, crate::error_chain(&e)),
                };
                return failed(aws::failed_call(
                    "SQS",
                    "SendMessageBatch",
                    code.as_deref(),
                    &message,
                    "sqs:SendMessage",
                    &arn,
                ));
            }
            Ok(Ok(output)) => output,
        };
        let index = |id: &str| id.parse::<usize>().ok().and_then(|n| bodies.get(n));
        let mut outcomes = Vec::with_capacity(bodies.len());
        for ok in output.successful() {
            if let Some((i, _)) = index(ok.id()) {
                outcomes.push((*i, EntryOutcome::delivered()));
            }
        }
        for refused in output.failed() {
            if let Some((i, _)) = index(refused.id()) {
                outcomes.push((
                    *i,
                    aws::refused_entry(
                        "SQS",
                        refused.code(),
                        refused.message().unwrap_or_default(),
                        refused.sender_fault(),
                    ),
                ));
            }
        }
        outcomes
    }
}

#[async_trait]
impl Transport for SqsTransport {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        let entries = request.entries;
        let Target::Sqs(target) = &request.destination.target else {
            let reason = format!(
                "destination {:?} is not an sqs destination",
                request.destination.name
            );
            return entries
                .iter()
                .map(|_| EntryOutcome::retry(&reason))
                .collect();
        };
        let mut outcomes: Vec<Option<EntryOutcome>> = vec![None; entries.len()];
        let mut bodies = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            match envelope::build(
                entry,
                self.service.bucket.as_deref(),
                target.max_entry_bytes,
            ) {
                Ok(body) => bodies.push((i, body.text)),
                Err(e) => outcomes[i] = Some(EntryOutcome::dead(format!("{e}"))),
            }
        }
        let sizes: Vec<usize> = bodies.iter().map(|(_, b)| b.len()).collect();
        let calls = aws::calls(&sizes, target.max_entry_bytes);
        debug_assert!(calls.iter().all(|c| c.len() <= MAX_BATCH));
        let answers = futures::future::join_all(
            calls
                .into_iter()
                .map(|call| self.call(target, entries, &bodies[call], request.timeout)),
        )
        .await;
        for (i, outcome) in answers.into_iter().flatten() {
            outcomes[i] = Some(outcome);
        }
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| EntryOutcome::retry("SQS gave no result for the entry")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_the_aggregates_type_and_id_or_a_stable_hash_of_both() {
        assert_eq!(group_id("order", "order-17/b:x"), "order/order-17/b:x");
        assert_eq!(group_id("partner:stripe", "cus_1"), "partner:stripe/cus_1");
        // two partners' cus_1 are two groups
        assert_ne!(
            group_id("partner:stripe", "cus_1"),
            group_id("partner:paddle", "cus_1")
        );
        let spaced = group_id("order", "a b");
        assert!(
            spaced.starts_with("sha256:") && spaced.len() == 71,
            "{spaced}"
        );
        assert_eq!(
            spaced,
            group_id("order", "a b"),
            "the same for every message"
        );
        assert_ne!(group_id("order", "é"), group_id("order", "e"));
        assert_eq!(group_id("order", ""), "order/");
        // a type with a slash would make the split ambiguous: hashed, apart
        let (a, b) = (group_id("a/b", "c"), group_id("a", "b/c"));
        assert_eq!(b, "a/b/c");
        assert!(a.starts_with("sha256:"), "{a}");
        assert_ne!(group_id("ab", "c"), group_id("a", "bc"));
        // SQS's 128 characters, the separator included
        assert_eq!(group_id("t", &"x".repeat(126)).len(), 128);
        assert!(group_id("t", &"x".repeat(127)).starts_with("sha256:"));
        for group in [spaced, a, group_id("t", &"x".repeat(500))] {
            assert!(
                group.len() <= MAX_GROUP_ID_CHARS && group.bytes().all(|b| b.is_ascii_graphic())
            );
        }
    }

    #[test]
    fn a_queue_url_names_its_arn_in_a_permission_error() {
        assert_eq!(
            queue_arn("https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo"),
            "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
        );
        assert_eq!(
            queue_arn("http://127.0.0.1:5000/123456789012/q"),
            "http://127.0.0.1:5000/123456789012/q"
        );
    }
}
