//! The EventBridge transport: each entry is one event on the destination's
//! bus (`Source` = the destination's `source`, `DetailType` = the event
//! type, `Detail` = the [`envelope`](super::envelope)), up to ten per
//! PutEvents. An entry's size is counted as EventBridge counts it (the
//! UTF-8 bytes of `Source`, `DetailType` and `Detail`), and EventBridge
//! takes an entry, and a call's entries together, only when that is *less
//! than* the limit ("the total entry size must be less than 256KB":
//! <https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html>,
//! and the PutEvents API reference): so at most `max_entry_bytes - 1`
//! ([`most_entry_bytes`]).
//!
//! Outcomes: a result entry with an `EventId` is delivered; one with an
//! `ErrorCode` is retried for `InternalFailure` and `ThrottlingException`,
//! else dead with the code and message; a call that fails as a whole
//! (timeout, network, 5xx, access denied) is a retry of each entry. Dead
//! before the call: an event type longer than a `DetailType` may be (128
//! characters), and a payload sent whole whose JSON holds an integer
//! PutEvents refuses (outside the signed 64-bit range; [`super::numbers`]),
//! named by its JSON pointer. moto accepts what EventBridge refuses
//! (over-large entries, any `Source`, any number), so the limits are
//! enforced here and at start.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use super::aws;
use super::envelope::Carried;
use super::{DeliveryRequest, Entry, EntryOutcome, Transport, envelope, numbers};
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

/// The most bytes an entry (and a call's entries together) may have:
/// EventBridge takes only *less than* `max_entry_bytes`.
pub fn most_entry_bytes(target: &EventBridgeTarget) -> usize {
    target.max_entry_bytes.saturating_sub(1)
}

/// The most bytes the `Detail` (the envelope) of an entry of `event_type`
/// may have: [`most_entry_bytes`] less `Source` and `DetailType`.
pub fn detail_limit(target: &EventBridgeTarget, event_type: &str) -> usize {
    most_entry_bytes(target).saturating_sub(target.source.len() + event_type.len())
}

/// A request's entries made ready for PutEvents, before any call.
#[derive(Debug, Default)]
struct Prepared {
    /// The outcomes decided already (dead before the call), by entry index.
    outcomes: Vec<Option<EntryOutcome>>,
    /// `(entry index, Detail)` of the entries to send, in order.
    details: Vec<(usize, String)>,
    /// Each one's size as EventBridge counts it.
    sizes: Vec<usize>,
}

/// Checks `entries` and writes their `Detail`s (by reference to the blob
/// in `bucket` when the envelope would not fit).
fn prepare(target: &EventBridgeTarget, entries: &[Entry<'_>], bucket: Option<&str>) -> Prepared {
    let mut prepared = Prepared {
        outcomes: vec![None; entries.len()],
        ..Prepared::default()
    };
    for (i, entry) in entries.iter().enumerate() {
        if entry.event_type.is_empty() || entry.event_type.chars().count() > MAX_DETAIL_TYPE_CHARS {
            prepared.outcomes[i] = Some(EntryOutcome::dead(format!(
                "event type {:?} cannot be an EventBridge DetailType (1 to \
                 {MAX_DETAIL_TYPE_CHARS} characters)",
                entry.event_type
            )));
            continue;
        }
        let limit = detail_limit(target, entry.event_type);
        let detail = match envelope::build(entry, bucket, limit) {
            Ok(detail) => detail,
            Err(e) => {
                prepared.outcomes[i] = Some(EntryOutcome::dead(format!(
                    "{e}; for EventBridge that is max_entry_bytes {} less Source and \
                     DetailType, and an entry must be under it",
                    target.max_entry_bytes
                )));
                continue;
            }
        };
        if detail.carried == Carried::Json {
            if let Some(found) = numbers::first_integer_outside_i64(entry.payload) {
                prepared.outcomes[i] = Some(EntryOutcome::dead(format!(
                    "the payload's integer at JSON pointer {:?} ({}) is outside the range \
                     EventBridge's PutEvents accepts for a JSON integer ({} to {}); it would \
                     refuse the event",
                    found.pointer,
                    found.shown(),
                    i64::MIN,
                    i64::MAX
                )));
                continue;
            }
        }
        prepared
            .sizes
            .push(target.source.len() + entry.event_type.len() + detail.text.len());
        prepared.details.push((i, detail.text));
    }
    prepared
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
        let Prepared {
            mut outcomes,
            details,
            sizes,
        } = prepare(target, entries, self.service.bucket.as_deref());
        let calls = aws::calls(&sizes, most_entry_bytes(target));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::{BlobKey, BlobRef};
    use crate::delivery::Verdict;
    use uuid::Uuid;

    const MAX: usize = 64 * 1024;

    fn target() -> EventBridgeTarget {
        EventBridgeTarget {
            bus: "orders".into(),
            source: "shop.orders".into(),
            max_entry_bytes: MAX,
        }
    }

    fn entry<'a>(payload: &'a str, blob: Option<&'a BlobRef>) -> Entry<'a> {
        Entry {
            id: Uuid::from_u128(1),
            event_type: "order.paid",
            aggregate_type: "order",
            aggregate_id: "o-1",
            payload,
            blob,
        }
    }

    /// A JSON payload whose entry (Source + DetailType + Detail) is
    /// exactly `size` bytes.
    fn payload_for_entry_of(size: usize) -> String {
        let probe = r#"{"f":""}"#;
        let fixed = target().source.len() + "order.paid".len();
        let base = envelope::whole(&entry(probe, None)).text.len() + fixed;
        format!(r#"{{"f":"{}"}}"#, "x".repeat(size - base))
    }

    #[test]
    fn an_entry_of_exactly_the_limit_is_not_sent_whole_one_byte_less_is() {
        let below = payload_for_entry_of(MAX - 1);
        let prepared = prepare(&target(), &[entry(&below, None)], None);
        assert_eq!(prepared.outcomes, vec![None], "sent");
        assert_eq!(prepared.sizes, vec![MAX - 1]);

        let at = payload_for_entry_of(MAX);
        let prepared = prepare(&target(), &[entry(&at, None)], None);
        let Some(Verdict::Dead { reason }) = prepared.outcomes[0].as_ref().map(|o| &o.verdict)
        else {
            panic!("at the limit, with no blob: dead, {:?}", prepared.outcomes);
        };
        assert!(reason.contains("no blob store is configured"), "{reason}");
        assert!(prepared.details.is_empty());

        // in the blob store: sent by reference, under the limit
        let blob = BlobRef {
            key: BlobKey::content("outbox", "bus", &[7; 32]).expect("key"),
            size: at.len() as u64,
            sha256: [7; 32],
        };
        let prepared = prepare(&target(), &[entry(&at, Some(&blob))], Some("blobs"));
        assert_eq!(prepared.outcomes, vec![None]);
        assert!(prepared.details[0].1.contains("\"payload_ref\""));
        assert!(prepared.sizes[0] < MAX);
    }

    #[test]
    fn a_call_carries_less_than_the_limit_in_all() {
        // two entries of half the limit: together exactly the limit, so two calls
        let half = payload_for_entry_of(MAX / 2);
        let prepared = prepare(&target(), &[entry(&half, None), entry(&half, None)], None);
        assert_eq!(prepared.sizes, vec![MAX / 2, MAX / 2]);
        assert_eq!(
            aws::calls(&prepared.sizes, most_entry_bytes(&target())),
            vec![0..1, 1..2]
        );
        let less = payload_for_entry_of(MAX / 2 - 1);
        let prepared = prepare(&target(), &[entry(&half, None), entry(&less, None)], None);
        assert_eq!(
            aws::calls(&prepared.sizes, most_entry_bytes(&target())),
            vec![0..2]
        );
    }

    #[test]
    fn an_integer_putevents_refuses_is_dead_before_the_call_naming_its_pointer() {
        let payloads = [
            r#"{"amount": 100, "big": 1.5e300}"#.to_string(),
            r#"{"lines": [{"qty": 1}, {"qty": 100000000000000000000}]}"#.to_string(),
            format!(r#"{{"n": 1{}}}"#, "0".repeat(300)),
        ];
        let entries: Vec<Entry<'_>> = payloads.iter().map(|p| entry(p, None)).collect();
        let prepared = prepare(&target(), &entries, None);
        assert_eq!(prepared.outcomes[0], None, "in range: sent");
        assert_eq!(prepared.details.len(), 1);
        let reason = |i: usize| match prepared.outcomes[i].as_ref().map(|o| &o.verdict) {
            Some(Verdict::Dead { reason }) => reason.clone(),
            other => panic!("entry {i}: dead before the call, {other:?}"),
        };
        let first = reason(1);
        assert!(
            first.starts_with(
                "the payload's integer at JSON pointer \"/lines/1/qty\" \
                 (100000000000000000000) is outside the range EventBridge's PutEvents accepts"
            ),
            "{first}"
        );
        assert!(
            first.contains("-9223372036854775808 to 9223372036854775807"),
            "{first}"
        );
        assert!(reason(2).contains("\"/n\" (1000000000"), "{}", reason(2));
        assert!(reason(2).contains("(301 characters)"), "{}", reason(2));
    }

    #[test]
    fn an_integer_in_a_payload_sent_by_reference_is_not_in_the_detail() {
        let payload = format!(
            r#"{{"n": 100000000000000000000, "f": "{}"}}"#,
            "x".repeat(MAX)
        );
        let blob = BlobRef {
            key: BlobKey::content("outbox", "bus", &[9; 32]).expect("key"),
            size: payload.len() as u64,
            sha256: [9; 32],
        };
        let prepared = prepare(&target(), &[entry(&payload, Some(&blob))], Some("blobs"));
        assert_eq!(prepared.outcomes, vec![None], "sent by reference");
    }
}
