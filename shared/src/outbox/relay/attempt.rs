//! One delivery attempt: the payload read (from the row, in pieces, or from
//! the blob store), moved to the blob store when its envelope is over an
//! SQS or EventBridge destination's `max_entry_bytes` (`spill`), handed to
//! the destination's transport, and what comes of it.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;

use super::{Relay, backoff, chrono_duration};
use crate::config::Destination;
use crate::delivery::{self, DeliveryRequest, Entry, EntryOutcome, Verdict};
use crate::outbox::payload::{self, PayloadStorage};
use crate::outbox::{AttemptDetail, DeliveryOutcome, DeliveryResult, OutboxRow};

/// What an attempt came to, for the batch's report.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Delivered,
    Retried {
        refused: bool,
    },
    Dead {
        gone: bool,
        refused: bool,
        /// The row or its payload cannot be read (a missing or corrupt
        /// object, a row no statement can return or decode).
        unreadable: bool,
    },
    NotAttempted,
}

/// The span of one delivery: every line of its attempt names the delivery
/// (`delivery_id`, `destination`) and, when the row was written for an
/// inbound webhook, that webhook (`inbox_id`, `partner`, `event_id`) and its
/// trace (`event_trace_id`: the X-Ray trace of its ingest, where the
/// delivery's story began; the line's own `xray_trace_id` is the relay's).
pub(super) fn delivery_span(row: &OutboxRow) -> tracing::Span {
    let origin = row.origin.as_ref();
    tracing::info_span!(
        "delivery",
        delivery_id = %row.id,
        destination = %row.destination,
        inbox_id = origin.map(|o| tracing::field::display(o.inbox_id)),
        partner = origin.and_then(|o| o.partner.as_deref()),
        event_id = origin.and_then(|o| o.event_id.as_deref()),
        event_trace_id = origin.and_then(|o| o.trace_id.as_deref()),
    )
}

impl Relay {
    /// How long after its webhook was received `row` is delivered now, when
    /// it was written for one (its origin's `received_at`).
    pub(super) fn end_to_end(&self, row: &OutboxRow) -> Option<Duration> {
        let received_at = row.origin.as_ref()?.received_at?;
        (self.clock.now() - received_at).to_std().ok()
    }

    /// [`Relay::attempt_inner`] with a panic (in the sender, the signer, a
    /// guard) caught: it ends only this delivery, as a failed attempt with
    /// the panic's message (retried, then dead after the destination's
    /// maximum attempts). Without it one row whose delivery panics every
    /// time would stop every relay run: a poison pill for the outbound side.
    pub(super) async fn attempt(
        &self,
        row: &OutboxRow,
        destination: Option<&Destination>,
        slots: Option<(Arc<Semaphore>, Option<Arc<Semaphore>>)>,
        batch_deadline: DateTime<Utc>,
    ) -> (DeliveryResult, Kind) {
        use futures::FutureExt as _;
        let run = std::panic::AssertUnwindSafe(self.attempt_inner(
            row,
            destination,
            slots,
            batch_deadline,
        ))
        .catch_unwind()
        .await;
        match run {
            Ok(done) => done,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                let attempt = u32::try_from(row.attempts.max(0))
                    .unwrap_or(u32::MAX)
                    .saturating_add(1);
                tracing::error!(delivery_id = %row.id, panic = %message, "the delivery panicked");
                self.failure(
                    row,
                    destination,
                    attempt,
                    format!("the delivery panicked: {message}"),
                    None,
                    None,
                    false,
                )
            }
        }
    }

    /// One of `slot`'s permits for `row`, waiting at most `slot_wait` and
    /// not past `batch_deadline` (less the time a request needs); or when
    /// `row` is due again, unattempted: after `slot_wait` when none came
    /// free, at once when its destination was found slow meanwhile (its
    /// requests outlive a lane's statement: the row gives its place in the
    /// lane back, so the lane claims other rows).
    async fn slot_permit(
        &self,
        row: &OutboxRow,
        slot: Arc<Semaphore>,
        batch_deadline: DateTime<Utc>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, DateTime<Utc>> {
        if let Ok(permit) = slot.clone().try_acquire_owned() {
            // a free slot: no wait
            return Ok(permit);
        }
        let left = (batch_deadline - self.clock.now())
            .to_std()
            .unwrap_or_default()
            .saturating_sub(self.settings.min_request_time);
        let wait = self.settings.slot_wait.min(left);
        let slowed = self.fairness.slowed(&row.destination);
        let slowed = slowed.notified();
        tokio::select! {
            acquired = tokio::time::timeout(wait, slot.acquire_owned()) => match acquired {
                Ok(Ok(permit)) => Ok(permit),
                // (a closed semaphore: never; as a slot that did not come free)
                Ok(Err(_)) | Err(_) => Err(self.clock.now() + chrono_duration(self.settings.slot_wait)),
            },
            () = slowed => Err(self.clock.now()),
        }
    }

    async fn attempt_inner(
        &self,
        row: &OutboxRow,
        destination: Option<&Destination>,
        slots: Option<(Arc<Semaphore>, Option<Arc<Semaphore>>)>,
        batch_deadline: DateTime<Utc>,
    ) -> (DeliveryResult, Kind) {
        let attempt = u32::try_from(row.attempts.max(0))
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        let Some(destination) = destination else {
            // a row for a destination no longer (or not yet) configured:
            // keep it, retry on the default schedule, dead eventually
            let error = if crate::config::is_endpoint(&row.destination) && self.endpoints.is_none()
            {
                format!(
                    "destination {:?} is a tenant's endpoint, and this relay has no key vault \
                     to sign for it (set HOOKBOX_KMS_KEY_ID or HOOKBOX_LOCAL_VAULT_KEY)",
                    row.destination
                )
            } else {
                format!(
                    "destination {:?} is not configured (add it to the configuration's \
                     destinations)",
                    row.destination
                )
            };
            tracing::error!(delivery_id = %row.id, destination = %row.destination, "{error}");
            return self.failure(row, None, attempt, error, None, None, false);
        };
        let not_attempted = |next_attempt_at: DateTime<Utc>| {
            (
                DeliveryResult {
                    id: row.id,
                    outcome: DeliveryOutcome::NotAttempted { next_attempt_at },
                    status_code: None,
                    error: None,
                    attempt: None,
                },
                Kind::NotAttempted,
            )
        };
        // the bytes to POST: read (and checked) before waiting for a slot,
        // so no slot is held while the blob store answers, and not past the
        // batch deadline
        let payload: Cow<'_, str> = match &row.payload_storage {
            PayloadStorage::Inline => Cow::Borrowed(row.payload.as_str()),
            storage => {
                let left = (batch_deadline - self.clock.now())
                    .to_std()
                    .unwrap_or_default();
                let read = payload::read(
                    self.db.as_ref(),
                    self.blobs.as_ref(),
                    row.id,
                    &row.payload,
                    storage,
                );
                let Ok(read) = tokio::time::timeout(left, read).await else {
                    return not_attempted(self.clock.now());
                };
                match read {
                    Ok(text) => Cow::Owned(text),
                    Err(e) if e.is_lost() => {
                        let error = format!(
                            "payload lost: {e}; the row can never be delivered as written \
                             (restore the object, then `hookbox outbox retry`)"
                        );
                        return self.unreadable(row, error);
                    }
                    // the blob store or the database is out: an attempt
                    // failed, the schedule decides when the next comes
                    Err(e) => {
                        let error = format!("cannot read the payload: {e}");
                        return self.failure(
                            row,
                            Some(destination),
                            attempt,
                            error,
                            None,
                            None,
                            false,
                        );
                    }
                }
            }
        };
        // an envelope over what an SQS or EventBridge destination takes:
        // its payload moves to the blob store (the row then refers to it),
        // and the transport sends it by reference; before waiting for a
        // slot, as the read above, and not past the batch deadline
        let mut moved = None;
        let stored = row.payload_storage.blob();
        let probe = Entry {
            id: row.id,
            event_type: &row.event_type,
            aggregate_type: &row.aggregate_type,
            aggregate_id: &row.aggregate_id,
            payload: &payload,
            blob: stored,
        };
        if delivery::needs_reference(destination, &probe) {
            let left = (batch_deadline - self.clock.now())
                .to_std()
                .unwrap_or_default();
            match tokio::time::timeout(left, self.move_to_blob(row, &payload)).await {
                Ok(Ok(Some(reference))) => moved = Some(reference),
                // out of time, or the lease is gone: the row is released
                Err(_) | Ok(Ok(None)) => return not_attempted(self.clock.now()),
                Ok(Err(e)) => {
                    let error = format!(
                        "the envelope is over destination {:?}'s max_entry_bytes, and moving \
                         the {}-byte payload to the blob store to send it by reference failed: \
                         {e}",
                        destination.name,
                        payload.len()
                    );
                    return self.failure(row, Some(destination), attempt, error, None, None, false);
                }
            }
        }
        let blob = moved.as_ref().or(stored);
        // wait for one of the destination's slots, then (HTTP) one of its
        // host's, but not past the batch deadline, and not longer than
        // `slot_wait` each: a destination whose slots are all held by
        // hanging requests (of any lane) must not hold this batch, and so
        // every other destination's rows, hostage
        let (slot, host_slot) = slots.unzip();
        let host_slot = host_slot.flatten();
        let _permit = match slot {
            Some(slot) => match self.slot_permit(row, slot, batch_deadline).await {
                Ok(permit) => Some(permit),
                Err(due) => return not_attempted(due),
            },
            None => None,
        };
        // a slow (or suspect) destination's requests do not count against
        // its host: they are bounded apart (`MAX_SLOW_ENDPOINT_REQUESTS`), and
        // a tenant whose endpoints hang must not hold the host's slots that
        // other tenants' endpoints there need
        let watch = host_slot
            .as_ref()
            .and_then(|_| self.fairness.prompt_watch(&row.destination));
        // (listening from now: a turn to slow while this row waits for its
        // host's slot, or takes it, is not missed)
        let turned_slow = watch.as_deref().map(tokio::sync::Notify::notified);
        let mut host_permit = match (host_slot, &watch) {
            (Some(slot), Some(_)) => match self.slot_permit(row, slot, batch_deadline).await {
                Ok(permit) => Some(permit),
                Err(due) => return not_attempted(due),
            },
            _ => None,
        };
        let start = self.clock.now();
        let left = (batch_deadline - start).to_std().unwrap_or_default();
        if left < self.settings.min_request_time {
            return not_attempted(start);
        }
        let timeout = destination.timeout.min(left);
        let entries = [Entry {
            id: row.id,
            event_type: &row.event_type,
            aggregate_type: &row.aggregate_type,
            aggregate_id: &row.aggregate_id,
            payload: &payload,
            blob,
        }];
        let started = std::time::Instant::now();
        let send = self.transports.of(destination).deliver(DeliveryRequest {
            destination,
            entries: &entries,
            started_at: start,
            timeout,
        });
        let outcome = match turned_slow.filter(|_| host_permit.is_some()) {
            None => send.await,
            // the destination found slow while its request is out: the
            // request goes on, and gives its host's slot back
            Some(turned_slow) => {
                let mut send = std::pin::pin!(send);
                tokio::select! {
                    biased;
                    outcome = &mut send => outcome,
                    () = turned_slow => {
                        host_permit = None;
                        send.await
                    }
                }
            }
        };
        drop(host_permit);
        let outcome = outcome.into_iter().next().unwrap_or_else(|| {
            EntryOutcome::retry(format!(
                "the transport of destination {:?} gave no outcome for the entry",
                destination.name
            ))
        });
        crate::failpoint::hit!(crate::failpoint::RELAY_AFTER_POST);
        let detail = AttemptDetail {
            started_at: start,
            latency: started.elapsed(),
            response_excerpt: outcome.response_excerpt.clone(),
        };
        let EntryOutcome {
            verdict,
            status_code,
            gone,
            refused,
            ..
        } = outcome;
        let (mut result, kind) = match verdict {
            Verdict::Delivered => {
                tracing::info!(
                    attempt,
                    status = status_code,
                    latency_ms = u64::try_from(detail.latency.as_millis()).unwrap_or(u64::MAX),
                    end_to_end_latency_ms = self
                        .end_to_end(row)
                        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                    "delivered"
                );
                (
                    DeliveryResult {
                        id: row.id,
                        outcome: DeliveryOutcome::Delivered,
                        status_code,
                        error: None,
                        attempt: None,
                    },
                    Kind::Delivered,
                )
            }
            Verdict::Dead { reason } => {
                if gone {
                    tracing::warn!(
                        delivery_id = %row.id,
                        destination = %destination.name,
                        attempt,
                        "destination is gone (410): the row is dead; later rows will be refused \
                         too until the destination is reconfigured"
                    );
                } else {
                    tracing::warn!(
                        delivery_id = %row.id,
                        destination = %destination.name,
                        attempt,
                        error = %reason,
                        "the destination refused the entry for good: the row is dead"
                    );
                }
                (
                    DeliveryResult {
                        id: row.id,
                        outcome: DeliveryOutcome::Dead,
                        status_code,
                        error: Some(reason),
                        attempt: None,
                    },
                    Kind::Dead {
                        gone,
                        refused,
                        unreadable: false,
                    },
                )
            }
            Verdict::Retry { after, reason } => {
                if refused {
                    tracing::error!(delivery_id = %row.id, destination = %destination.name, "{reason}");
                }
                self.failure(
                    row,
                    Some(destination),
                    attempt,
                    reason,
                    status_code,
                    after,
                    refused,
                )
            }
        };
        result.attempt = Some(detail);
        (result, kind)
    }

    #[allow(clippy::too_many_arguments)]
    fn failure(
        &self,
        row: &OutboxRow,
        destination: Option<&Destination>,
        attempt: u32,
        error: String,
        status_code: Option<u16>,
        retry_after: Option<Duration>,
        refused: bool,
    ) -> (DeliveryResult, Kind) {
        let default_schedule: Vec<Duration>;
        let (schedule, max_attempts): (&[Duration], u32) = match destination {
            Some(d) => (&d.backoff, d.max_attempts),
            None => {
                default_schedule = crate::config::DEFAULT_BACKOFF_SECS
                    .iter()
                    .map(|s| Duration::from_secs(*s))
                    .collect();
                let max = default_schedule.len() as u32 + 1;
                (&default_schedule, max)
            }
        };
        let name = destination.map_or(row.destination.as_str(), |d| d.name.as_str());
        if attempt >= max_attempts {
            tracing::warn!(delivery_id = %row.id, destination = name, attempt, error = %error, "giving up: the row is dead");
            return (
                DeliveryResult {
                    id: row.id,
                    outcome: DeliveryOutcome::Dead,
                    status_code,
                    error: Some(format!("gave up after {attempt} attempts: {error}")),
                    attempt: None,
                },
                Kind::Dead {
                    gone: false,
                    refused,
                    unreadable: false,
                },
            );
        }
        let scheduled = backoff::scheduled_delay(schedule, attempt);
        let delay = match retry_after {
            Some(asked) => backoff::clamp_retry_after(asked, scheduled),
            None => backoff::jittered(scheduled, self.jitter.sample()),
        };
        let next_attempt_at = self.clock.now() + chrono_duration(delay);
        tracing::info!(
            delivery_id = %row.id,
            destination = name,
            attempt,
            error = %error,
            retry_in_secs = delay.as_secs_f64(),
            "delivery failed; will retry"
        );
        (
            DeliveryResult {
                id: row.id,
                outcome: DeliveryOutcome::Retry { next_attempt_at },
                status_code,
                error: Some(error),
                attempt: None,
            },
            Kind::Retried { refused },
        )
    }

    /// A row that can never be delivered as written (its payload object is
    /// missing or corrupt, or the row itself cannot be read or decoded):
    /// dead at once, the reason in `last_error`; an operator retries it
    /// (`hookbox outbox retry`) once the cause is fixed.
    /// A row of a tenant's endpoint the relay cannot resolve now
    /// ([`super::EndpointResolver`]): when the cause may pass (the
    /// database or the key vault), not attempted, due again after the
    /// destination's first backoff step; otherwise a failed attempt with the
    /// reason (retried, then dead), like a row whose destination is not
    /// configured.
    pub(super) fn unresolved(
        &self,
        row: &OutboxRow,
        reason: String,
        retryable: bool,
    ) -> (DeliveryResult, Kind) {
        tracing::error!(delivery_id = %row.id, destination = %row.destination, "{reason}");
        if retryable {
            let next_attempt_at = self.clock.now()
                + chrono_duration(Duration::from_secs(crate::config::DEFAULT_BACKOFF_SECS[0]));
            return (
                DeliveryResult {
                    id: row.id,
                    outcome: DeliveryOutcome::NotAttempted { next_attempt_at },
                    status_code: None,
                    error: Some(reason),
                    attempt: None,
                },
                Kind::NotAttempted,
            );
        }
        let attempt = u32::try_from(row.attempts.max(0))
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        self.failure(row, None, attempt, reason, None, None, false)
    }

    pub(super) fn unreadable(&self, row: &OutboxRow, error: String) -> (DeliveryResult, Kind) {
        dead_unreadable(row.id, Some(&row.destination), error)
    }
}

/// A row given back without an attempt (over its endpoint's rate limit):
/// due again at `next_attempt_at`, its attempts untouched.
pub(super) fn released(row: &OutboxRow, next_attempt_at: DateTime<Utc>) -> (DeliveryResult, Kind) {
    (
        DeliveryResult {
            id: row.id,
            outcome: DeliveryOutcome::NotAttempted { next_attempt_at },
            status_code: None,
            error: None,
            attempt: None,
        },
        Kind::NotAttempted,
    )
}

/// [`Relay::unreadable`] of a row known by its id alone.
pub(super) fn dead_unreadable(
    id: uuid::Uuid,
    destination: Option<&str>,
    error: String,
) -> (DeliveryResult, Kind) {
    tracing::error!(
        delivery_id = %id,
        destination = destination.unwrap_or("(unread)"),
        error = %error,
        "the row cannot be delivered as written: it is dead"
    );
    (
        DeliveryResult {
            id,
            outcome: DeliveryOutcome::Dead,
            status_code: None,
            error: Some(error),
            attempt: None,
        },
        Kind::Dead {
            gone: false,
            refused: false,
            unreadable: true,
        },
    )
}
