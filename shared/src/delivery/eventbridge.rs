//! The EventBridge transport: each entry is one event on the destination's
//! bus (`Source` = the destination's `source`, `DetailType` = the event
//! type, `Detail` = the [`envelope`](super::envelope)), up to ten per
//! PutEvents and no more bytes per call than the destination's
//! `max_entry_bytes`. An entry's size is counted as EventBridge counts it
//! (the UTF-8 bytes of `Source`, `DetailType` and `Detail`).
//!
//! Outcomes: a result entry with an `EventId` is delivered; one with an
//! `ErrorCode` is retried for `InternalFailure` and `ThrottlingException`,
//! else dead with the code and message; a call that fails as a whole
//! (timeout, network, 5xx, access denied) is a retry of each entry. An
//! event type longer than a `DetailType` may be (128 characters) is dead
//! before the call. moto accepts what EventBridge refuses (over-large
//! entries, any `Source`), so the limits are enforced here and at start.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use super::aws;
use super::{DeliveryRequest, Entry, EntryOutcome, Transport, envelope};
use crate::config::{EventBridgeTarget, Target};

/// Longest `DetailType` EventBridge takes, in characters.
pub const MAX_DETAIL_TYPE_CHARS: usize = 128;

/// The EventBridge transport (behind [`super::Coalescing`] in a relay, so
/// a claim's entries go ten to a call).
#[derive(Debug)]
pub struct EventBridgeTransport {
    service: aws::Service<Client>,
}

impl EventBridgeTransport {
    /// Through `client`; an envelope too large for its destination refers
    /// to its payload's object in `bucket` (the blob store's).
    pub fn new(client: Client, bucket: Option<String>) -> Self {
        Self {
            service: aws::Service::ready("EventBridge client", client, bucket),
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
            service: aws::Service::lazy("EventBridge client", make, bucket),
        }
    }

    /// A client from an AWS configuration (`AWS_ENDPOINT_URL_EVENTBRIDGE`
    /// honoured), two attempts per call at most.
    pub fn client(shared: &aws_config::SdkConfig) -> Client {
        let config = aws_sdk_eventbridge::config::Builder::from(shared)
            .retry_config(
                aws_sdk_eventbridge::config::retry::RetryConfig::standard().with_max_attempts(2),
            )
            .build();
        Client::from_conf(config)
    }

    /// One PutEvents of `details` (`(entry index, detail)`), its outcomes
    /// by entry index.
    async fn call(
        &self,
        target: &EventBridgeTarget,
        entries: &[Entry<'_>],
        details: &[(usize, String)],
        timeout: Duration,
    ) -> Vec<(usize, EntryOutcome)> {
        let events = details
            .iter()
            .map(|(i, detail)| {
                PutEventsRequestEntry::builder()
                    .event_bus_name(&target.bus)
                    .source(&target.source)
                    .detail_type(entries[*i].event_type)
                    .detail(detail)
                    .build()
            })
            .collect();
        let client = self.service.client.get().await;
        let send = client.put_events().set_entries(Some(events)).send();
        let failed = |outcome: EntryOutcome| {
            details
                .iter()
                .map(|(i, _)| (*i, outcome.clone()))
                .collect::<Vec<_>>()
        };
        let (code, message) = match tokio::time::timeout(timeout, send).await {
            Ok(Ok(output)) => {
                let results = output.entries();
                return details
                    .iter()
                    .enumerate()
                    .map(|(n, (i, _))| {
                        let outcome = match results.get(n) {
                            Some(r) if r.event_id().is_some() && r.error_code().is_none() => {
                                EntryOutcome::delivered()
                            }
                            Some(r) => aws::refused_entry(
                                "EventBridge",
                                r.error_code().unwrap_or("(no error code)"),
                                r.error_message().unwrap_or_default(),
                                true,
                            ),
                            None => EntryOutcome::retry("EventBridge gave no result for the entry"),
                        };
                        (*i, outcome)
                    })
                    .collect();
            }
            Err(_) => (None, format!("no answer within {timeout:?}")),
            Ok(Err(e)) => match &e {
                SdkError::ServiceError(ctx) => (
                    ctx.err().code().map(str::to_string),
                    ctx.err().message().unwrap_or_default().to_string(),
                ),
                _ => (None, crate::error_chain(&e)),
            },
        };
        failed(aws::failed_call(
            "EventBridge",
            "PutEvents",
            code.as_deref(),
            &message,
            "events:PutEvents",
            &bus_arn(&target.bus),
        ))
    }
}

/// The bus as the permission to grant names it: its ARN when configured by
/// ARN, else `event-bus/{name}` (the account and region are the relay's).
fn bus_arn(bus: &str) -> String {
    if bus.starts_with("arn:") {
        bus.to_string()
    } else {
        format!("the bus {bus:?} (arn:aws:events:<region>:<account>:event-bus/{bus})")
    }
}

#[async_trait]
impl Transport for EventBridgeTransport {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        let entries = request.entries;
        let Target::EventBridge(target) = &request.destination.target else {
            let reason = format!(
                "destination {:?} is not an eventbridge destination",
                request.destination.name
            );
            return entries
                .iter()
                .map(|_| EntryOutcome::retry(&reason))
                .collect();
        };
        let mut outcomes: Vec<Option<EntryOutcome>> = vec![None; entries.len()];
        let mut details = Vec::with_capacity(entries.len());
        let mut sizes = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            if entry.event_type.is_empty()
                || entry.event_type.chars().count() > MAX_DETAIL_TYPE_CHARS
            {
                outcomes[i] = Some(EntryOutcome::dead(format!(
                    "event type {:?} cannot be an EventBridge DetailType (1 to \
                     {MAX_DETAIL_TYPE_CHARS} characters)",
                    entry.event_type
                )));
                continue;
            }
            // what the entry costs besides its Detail
            let fixed = target.source.len() + entry.event_type.len();
            let limit = target.max_entry_bytes.saturating_sub(fixed);
            match envelope::build(entry, self.service.bucket.as_deref(), limit) {
                Ok(detail) => {
                    sizes.push(fixed + detail.len());
                    details.push((i, detail));
                }
                Err(e) => outcomes[i] = Some(EntryOutcome::dead(format!("{e}"))),
            }
        }
        let calls = aws::calls(&sizes, target.max_entry_bytes);
        let answers = futures::future::join_all(
            calls
                .into_iter()
                .map(|call| self.call(target, entries, &details[call], request.timeout)),
        )
        .await;
        for (i, outcome) in answers.into_iter().flatten() {
            outcomes[i] = Some(outcome);
        }
        outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| EntryOutcome::retry("EventBridge gave no result for the entry"))
            })
            .collect()
    }
}
