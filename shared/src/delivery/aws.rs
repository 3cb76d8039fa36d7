//! What the AWS transports (SQS, EventBridge) share: splitting a request
//! into calls the service accepts, and what a refused entry or a failed
//! call comes to.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use super::EntryOutcome;
use crate::startup::lazy::Lazy;

/// What an AWS transport works with: its SDK client, built on first use
/// (not at init: cold start does not pay for it), and the blob bucket an
/// over-large envelope refers to.
pub(crate) struct Service<C> {
    pub(crate) client: Lazy<C>,
    pub(crate) bucket: Option<String>,
}

impl<C: Send + Sync + 'static> Service<C> {
    /// Through the client `make` builds on first use.
    pub(crate) fn lazy<F, Fut>(what: &'static str, make: F, bucket: Option<String>) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Arc<C>> + Send + 'static,
    {
        Self {
            client: Lazy::new(what, make),
            bucket,
        }
    }

    /// Through `client`, built already.
    pub(crate) fn ready(what: &'static str, client: C, bucket: Option<String>) -> Self
    where
        C: Clone,
    {
        Self::lazy(
            what,
            move || {
                let client = client.clone();
                async move { Arc::new(client) }
            },
            bucket,
        )
    }
}

impl<C> fmt::Debug for Service<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("client", &self.client)
            .field("bucket", &self.bucket)
            .finish()
    }
}

/// An AWS configuration for a local emulator (moto) at `endpoint`:
/// region `us-east-1`, dummy credentials. The SQS and EventBridge clients
/// made from it ([`super::SqsTransport::client`],
/// [`super::EventBridgeTransport::client`]) send everything there.
pub fn local_config(endpoint: &str) -> aws_config::SdkConfig {
    use aws_sdk_sqs::config::{Credentials, SharedCredentialsProvider};
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "local", "local", None, None, "local",
        )))
        .build()
}

/// Entries per call: SendMessageBatch and PutEvents take ten.
pub const MAX_BATCH: usize = 10;

/// Longest error text kept as an attempt's `response_excerpt`.
const EXCERPT_CHARS: usize = 1024;

/// Error codes of a refused entry that another attempt may get through
/// (the rest are dead with the service's code and message).
const RETRIED_CODES: &[&str] = &[
    "InternalFailure",
    "InternalError",
    "ServiceUnavailable",
    "ThrottlingException",
    "Throttling",
    "RequestThrottled",
    "KmsThrottled",
    "KMS.ThrottlingException",
];

/// Consecutive ranges of `sizes` (each at most `max_bytes`) with at most
/// [`MAX_BATCH`] entries and `max_bytes` in all: one call each (both
/// services count a request's entries together against the same limit as
/// one entry).
pub(crate) fn calls(sizes: &[usize], max_bytes: usize) -> Vec<Range<usize>> {
    let mut calls = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, &size) in sizes.iter().enumerate() {
        if i > start && (i - start == MAX_BATCH || bytes + size > max_bytes) {
            calls.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < sizes.len() {
        calls.push(start..sizes.len());
    }
    calls
}

/// `said` cut to [`EXCERPT_CHARS`].
fn excerpt(said: &str) -> String {
    match said.char_indices().nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &said[..at]),
        None => said.to_string(),
    }
}

/// An entry the service refused with `code` and `message`: retried when the
/// code is transient (or the service says the fault is its own), else dead
/// with both. The attempt log keeps `code: message` where an HTTP attempt
/// keeps the response body.
pub(crate) fn refused_entry(
    service: &str,
    code: &str,
    message: &str,
    sender_fault: bool,
) -> EntryOutcome {
    let said = if message.is_empty() {
        code.to_string()
    } else {
        format!("{code}: {message}")
    };
    let retried = !sender_fault || RETRIED_CODES.contains(&code);
    let mut outcome = if retried {
        EntryOutcome::retry(format!("{service} did not take the entry: {said}"))
    } else {
        EntryOutcome::dead(format!("{service} refused the entry for good: {said}"))
    };
    outcome.response_excerpt = Some(excerpt(&said));
    outcome
}

/// What a call that failed as a whole comes to for each of its entries: a
/// retry naming the service's code and message, and the permission to
/// grant when access was denied.
pub(crate) fn failed_call(
    service: &str,
    operation: &str,
    code: Option<&str>,
    message: &str,
    permission: &str,
    resource: &str,
) -> EntryOutcome {
    let mut reason = match code {
        Some(code) => format!("{service} {operation} failed: {code}: {message}"),
        None => format!("{service} {operation} failed: {message}"),
    };
    if code.is_some_and(is_access_denied) {
        reason.push_str(&format!(
            "; the relay's role needs {permission} on {resource} (infra/template.yaml's \
             parameters grant it; docs/relay.md, \"Permissions\")"
        ));
    }
    let mut outcome = EntryOutcome::retry(reason);
    outcome.response_excerpt = code.map(|code| excerpt(&format!("{code}: {message}")));
    outcome
}

fn is_access_denied(code: &str) -> bool {
    matches!(
        code,
        "AccessDenied" | "AccessDeniedException" | "AuthorizationError" | "NotAuthorized"
    ) || code.ends_with(".AccessDenied")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::Verdict;

    #[test]
    fn calls_take_ten_entries_and_the_size_limit_at_most() {
        assert_eq!(calls(&[], 100), Vec::<Range<usize>>::new());
        assert_eq!(calls(&[1; 25], 100), vec![0..10, 10..20, 20..25]);
        assert_eq!(
            calls(&[60, 40, 1, 100, 100], 100),
            vec![0..2, 2..3, 3..4, 4..5]
        );
        assert_eq!(calls(&[100], 100), vec![0..1]);
    }

    #[test]
    fn throttled_and_internal_entries_are_retried_the_others_dead_with_the_code() {
        let throttled = refused_entry("SQS", "ThrottlingException", "slow down", true);
        assert!(matches!(throttled.verdict, Verdict::Retry { .. }));
        let internal = refused_entry("EventBridge", "InternalFailure", "", true);
        assert!(matches!(internal.verdict, Verdict::Retry { .. }));
        assert_eq!(
            internal.response_excerpt.as_deref(),
            Some("InternalFailure")
        );
        let theirs = refused_entry("SQS", "SomethingNew", "oops", false);
        assert!(
            matches!(theirs.verdict, Verdict::Retry { .. }),
            "not the sender's fault"
        );
        let dead = refused_entry("SQS", "InvalidParameterValue", "bad group id", true);
        assert_eq!(
            dead.verdict,
            Verdict::Dead {
                reason: "SQS refused the entry for good: InvalidParameterValue: bad group id"
                    .into()
            }
        );
        assert_eq!(
            dead.response_excerpt.as_deref(),
            Some("InvalidParameterValue: bad group id")
        );
    }

    #[test]
    fn a_denied_call_names_the_permission_to_grant() {
        let denied = failed_call(
            "SQS",
            "SendMessageBatch",
            Some("AccessDenied"),
            "not authorized",
            "sqs:SendMessage",
            "arn:aws:sqs:eu-west-1:123456789012:orders",
        );
        let Verdict::Retry { reason, .. } = &denied.verdict else {
            panic!("a failed call is retried: {denied:?}");
        };
        assert!(
            reason.contains("needs sqs:SendMessage on arn:aws:sqs:eu-west-1:123456789012:orders"),
            "{reason}"
        );
        let timeout = failed_call("SQS", "SendMessageBatch", None, "timed out", "-", "-");
        assert!(matches!(timeout.verdict, Verdict::Retry { .. }));
        assert_eq!(timeout.response_excerpt, None);
    }
}
