//! One batch of queue messages through the business handler.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use futures::FutureExt as _;
use tracing::Instrument as _;
use tracing::field::Empty;
use uuid::Uuid;

use super::clip;
use super::config::ProcessorConfig;
use super::handler::{BusinessHandler, InboxEvent, Outcome};
pub use super::outcome::{BatchReport, MessageOutcome, MessageResult};
use crate::blob::BlobStore;
use crate::clock::Clock;
use crate::inbox::body;
use crate::inbox::{self, ClaimToken, InboxRow};
use crate::outbox::Origin;
use crate::queue::{Queue, Received};
use crate::store::{Database, Transaction, WithOrigin};

/// Partner name under which the processor keeps queue messages it cannot
/// read (not an inbox message at all, or a spooled event whose body is not
/// base64): stored as `quarantined` rows, never dropped. Ingest never uses
/// this name (partner names come from configuration).
pub const UNREADABLE_PARTNER: &str = "_hookbox_unreadable";

/// How long a spooled event (the database was down at ingest) keeps being
/// sent again while the database stays unavailable. Past it the message
/// takes the usual path (its receives run out and SQS moves it, event
/// included, to the DLQ, which keeps it 14 days for `dlq redrive`). The
/// `SpooledAgeSeconds` metric (and its alarm, at one hour) tells long before.
pub const MAX_SPOOL_AGE: Duration = Duration::from_secs(3 * 24 * 60 * 60);

/// The processor use case over its ports.
#[derive(Debug, Clone, Copy)]
pub struct Processor<'a> {
    /// The database (inbox, business tables, outbox).
    pub db: &'a dyn Database,
    /// The queue the messages came from (for `change_visibility`).
    pub queue: &'a dyn Queue,
    /// Where bodies above the inline threshold are (read and checked
    /// before the handler runs).
    pub blobs: &'a dyn BlobStore,
    /// Time.
    pub clock: &'a dyn Clock,
    /// The business logic.
    pub handler: &'a dyn BusinessHandler,
    /// Backoff, receive limit, deferral age, lease.
    pub config: &'a ProcessorConfig,
}

/// The state of one message while the batch runs.
pub(super) struct Slot<'m> {
    pub(super) msg: &'m Received,
    pub(super) span: tracing::Span,
    pub(super) inbox_id: Option<Uuid>,
    pub(super) claimed: Option<(Box<InboxRow>, ClaimToken)>,
    /// The claimed row's body, once read (kept across deferral passes).
    pub(super) body: Option<Vec<u8>>,
    /// Set when a spooled event was sent again (the database unavailable).
    pub(super) spooled_age: Option<Duration>,
    /// Set when it was processed: from its receipt at ingest to the commit.
    pub(super) processed_after: Option<Duration>,
    pub(super) run: Option<Run>,
    pub(super) outcome: Option<MessageOutcome>,
}

/// What running the handler came to, before it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Run {
    Committed,
    Defer(String),
    Retry(String),
    Quarantine(String),
    LeaseLost,
}

pub(super) fn after(now: DateTime<Utc>, delay: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(delay)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(now + TimeDelta::hours(12))
}

/// Rolls back, logging a failure (the adapter then discards the connection).
async fn rollback(tx: Box<dyn Transaction>) {
    if let Err(e) = tx.rollback().await {
        tracing::warn!(error = %e, "rollback failed; the connection is discarded");
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The origin of every outbox row written while `row` is processed (the
/// trail, [`crate::outbox::origin`]): the row, and the trace of the ingest
/// that sent `msg` (its `AWSTraceHeader`), else this invocation's.
fn origin_of(row: &InboxRow, msg: &Received) -> Origin {
    Origin {
        inbox_id: row.id,
        partner: Some(row.partner.clone()),
        event_id: Some(row.event_id.clone()),
        received_at: Some(row.received_at),
        trace_id: msg
            .trace_header
            .as_deref()
            .map(crate::log_format::trace_root)
            .or_else(crate::inbox::routed::invocation_trace_id),
    }
}

impl Processor<'_> {
    /// Processes one batch (what the Lambda event source delivers) and says,
    /// per message, whether to acknowledge or retry it. Never fails as a
    /// whole: every error is an outcome of the message it concerns.
    ///
    /// `deadline` is the invocation's deadline, when known: messages not
    /// started [`ProcessorConfig::deadline_margin`] before it are released
    /// and retried, and the lease lasts at least until it.
    pub async fn process_batch(
        &self,
        messages: &[Received],
        deadline: Option<DateTime<Utc>>,
    ) -> BatchReport {
        let mut latencies = Vec::new();
        let mut slots: Vec<Slot<'_>> = messages
            .iter()
            .map(|msg| Slot {
                msg,
                span: tracing::info_span!(
                    "message",
                    message_id = %msg.message_id,
                    receive_count = msg.receive_count,
                    inbox_id = Empty,
                    partner = Empty,
                    event_id = Empty,
                    // the sender's trace (AWSTraceHeader): this message's
                    // lines name it (crate::log_format)
                    xray_trace_id = msg
                        .trace_header
                        .as_deref()
                        .map(crate::log_format::trace_root),
                ),
                inbox_id: None,
                claimed: None,
                body: None,
                spooled_age: None,
                processed_after: None,
                run: None,
                outcome: None,
            })
            .collect();

        // 1. Read every message; store spooled events and unreadable messages.
        for slot in &mut slots {
            let span = slot.span.clone();
            self.read(slot).instrument(span).await;
        }

        // 2. Claim every row of the batch in one statement.
        self.claim(&mut slots, deadline).await;

        // 3. Run the handler for each claimed row, in batch order.
        let mut committed = false;
        for slot in &mut slots {
            let span = slot.span.clone();
            self.run(slot, deadline, &mut latencies)
                .instrument(span)
                .await;
            committed |= slot.run == Some(Run::Committed);
        }
        // A deferred event's prerequisite may have been processed later in
        // the same batch (paid, shipped, delivered arriving together in any
        // order): while a pass commits something, deferred rows get another
        // try now instead of a backoff later. Each extra pass commits at
        // least one row, so there are fewer passes than messages.
        while committed && !self.near_deadline(deadline) {
            committed = false;
            for slot in &mut slots {
                if matches!(slot.run, Some(Run::Defer(_))) {
                    let span = slot.span.clone();
                    self.run(slot, deadline, &mut latencies)
                        .instrument(span)
                        .await;
                    committed |= slot.run == Some(Run::Committed);
                }
            }
        }

        // 4. Record every outcome that is not committed yet.
        for slot in &mut slots {
            let span = slot.span.clone();
            self.settle(slot).instrument(span).await;
        }

        let spooled_ages = slots
            .iter()
            .filter(|s| matches!(s.outcome, Some(MessageOutcome::Requeued { .. })))
            .filter_map(|s| s.spooled_age)
            .collect();
        let processing_latencies = slots
            .iter()
            .filter(|s| matches!(s.outcome, Some(MessageOutcome::Processed)))
            .filter_map(|s| s.processed_after)
            .collect();
        BatchReport {
            spooled_ages,
            processing_latencies,
            results: slots
                .into_iter()
                .map(|s| MessageResult {
                    message_id: s.msg.message_id.clone(),
                    inbox_id: s.inbox_id,
                    outcome: s.outcome.unwrap_or(MessageOutcome::Failed {
                        error: "no outcome recorded (bug)".into(),
                        delay: None,
                    }),
                })
                .collect(),
            handler_latencies: latencies,
        }
    }

    /// Runs the business handler for a claimed slot, in one transaction.
    async fn run(
        &self,
        slot: &mut Slot<'_>,
        deadline: Option<DateTime<Utc>>,
        latencies: &mut Vec<Duration>,
    ) {
        let Some((row, token)) = &slot.claimed else {
            return;
        };
        if self.near_deadline(deadline) {
            tracing::warn!("not started before the invocation's deadline: released");
            let released = inbox::mark_retry(
                self.db,
                *token,
                self.clock.now(),
                "not started before the invocation's deadline",
            )
            .await;
            if let Err(e) = released {
                tracing::warn!(error = %e, "releasing the row failed; its lease will expire");
            }
            slot.claimed = None;
            slot.run = None;
            slot.outcome = Some(MessageOutcome::NotStarted);
            return;
        }
        if row.partner == UNREADABLE_PARTNER {
            slot.run = Some(Run::Quarantine(
                "unreadable queue message kept by the processor: inspect its body; \
                 replaying it cannot succeed"
                    .into(),
            ));
            return;
        }
        if slot.body.is_none() {
            match body::read(self.db, self.blobs, row.id, &row.body).await {
                Ok(bytes) => slot.body = Some(bytes),
                Err(e) if e.is_lost() => {
                    slot.run = Some(Run::Quarantine(format!(
                        "the body cannot be processed: {e} (restore the object, then replay)"
                    )));
                    return;
                }
                Err(e) => {
                    slot.run = Some(Run::Retry(e.to_string()));
                    return;
                }
            }
        }
        let body = slot.body.as_deref().unwrap_or_default();
        let now = self.clock.now();
        let event = InboxEvent {
            row,
            body,
            now,
            blobs: self.blobs,
            receive_count: slot.msg.receive_count,
        };
        let tx = match self.db.begin().await {
            // every outbox row written while processing it names the row
            Ok(tx) => Box::new(WithOrigin::new(tx, origin_of(row, slot.msg).to_json()))
                as Box<dyn Transaction>,
            Err(e) => {
                slot.run = Some(Run::Retry(format!("opening the transaction failed: {e}")));
                return;
            }
        };
        let started = Instant::now();
        let result = AssertUnwindSafe(self.handler.handle(&event, tx.as_ref()))
            .catch_unwind()
            .await;
        latencies.push(started.elapsed());
        let decided = match result {
            Err(panic) => Outcome::Retry(format!(
                "business handler panicked: {}",
                panic_message(panic.as_ref())
            )),
            Ok(Ok(outcome)) => outcome,
            Ok(Err(e)) => Outcome::from(e),
        };
        let run = match decided {
            Outcome::Processed => match inbox::mark_processed(tx.as_ref(), *token, now).await {
                Ok(true) => match tx.commit().await {
                    Ok(()) => {
                        crate::failpoint::hit!(crate::failpoint::PROCESSOR_AFTER_COMMIT);
                        Run::Committed
                    }
                    Err(e) => Run::Retry(format!("commit failed (outcome unknown): {e}")),
                },
                Ok(false) => {
                    rollback(tx).await;
                    Run::LeaseLost
                }
                Err(e) => {
                    rollback(tx).await;
                    Run::Retry(format!("marking the row processed failed: {e}"))
                }
            },
            Outcome::Defer(reason) => {
                rollback(tx).await;
                Run::Defer(reason)
            }
            Outcome::Retry(error) => {
                rollback(tx).await;
                Run::Retry(error)
            }
            Outcome::Quarantine(reason) => {
                rollback(tx).await;
                Run::Quarantine(reason)
            }
        };
        if run == Run::Committed {
            let after = (self.clock.now() - row.received_at)
                .to_std()
                .unwrap_or_default();
            slot.processed_after = Some(after);
            tracing::info!(
                processing_latency_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                "processed"
            );
        }
        slot.run = Some(run);
    }

    /// True when `deadline` is closer than the configured margin.
    fn near_deadline(&self, deadline: Option<DateTime<Utc>>) -> bool {
        deadline.is_some_and(|d| after(self.clock.now(), self.config.deadline_margin) >= d)
    }

    /// Records the outcome of a slot's run (status change, visibility).
    async fn settle(&self, slot: &mut Slot<'_>) {
        if slot.outcome.is_some() {
            return;
        }
        let (Some((row, token)), Some(run)) = (slot.claimed.take(), slot.run.take()) else {
            slot.outcome = Some(MessageOutcome::Failed {
                error: "claimed row without a run (bug)".into(),
                delay: None,
            });
            return;
        };
        let now = self.clock.now();
        let msg = slot.msg;
        let outcome = match run {
            Run::Committed => MessageOutcome::Processed,
            Run::LeaseLost => {
                tracing::warn!("lease lost to another worker: nothing committed, retried later");
                MessageOutcome::LeaseLost
            }
            Run::Quarantine(reason) => self.quarantine(msg, token, now, clip(&reason)).await,
            Run::Retry(error) => self.retry(msg, token, now, clip(&error)).await,
            Run::Defer(reason) => {
                let max_age =
                    TimeDelta::from_std(self.config.max_deferral_age).unwrap_or(TimeDelta::MAX);
                match row.deferred_since {
                    Some(since) if now.signed_duration_since(since) >= max_age => {
                        let reason = clip(&format!(
                            "prerequisite never arrived (deferred since {}): {reason}",
                            since.to_rfc3339()
                        ));
                        self.quarantine(msg, token, now, reason).await
                    }
                    _ => self.defer(msg, token, now, clip(&reason)).await,
                }
            }
        };
        slot.outcome = Some(outcome);
    }

    pub(super) async fn quarantine(
        &self,
        msg: &Received,
        token: ClaimToken,
        now: DateTime<Utc>,
        reason: String,
    ) -> MessageOutcome {
        match inbox::mark_quarantined(self.db, token, now, &reason).await {
            Ok(true) => {
                tracing::warn!(reason = %reason, "quarantined");
                MessageOutcome::Quarantined { reason }
            }
            Ok(false) => MessageOutcome::LeaseLost,
            Err(e) => {
                self.fail(msg, format!("recording the quarantine failed: {e}"))
                    .await
            }
        }
    }

    pub(super) async fn retry(
        &self,
        msg: &Received,
        token: ClaimToken,
        now: DateTime<Utc>,
        error: String,
    ) -> MessageOutcome {
        if self.config.is_last_receive(msg.receive_count) {
            return match inbox::mark_dead(self.db, token, now, &error).await {
                Ok(true) => {
                    tracing::error!(error = %error, "dead: the queue moves the message to its DLQ");
                    MessageOutcome::Dead { error }
                }
                Ok(false) => MessageOutcome::LeaseLost,
                Err(e) => {
                    tracing::error!(
                        error = %error,
                        db_error = %e,
                        "marking the row dead failed; the queue moves the message to its DLQ"
                    );
                    MessageOutcome::Failed {
                        error: format!("{error}; marking the row dead failed: {e}"),
                        delay: None,
                    }
                }
            };
        }
        let delay = self.config.backoff(msg.receive_count);
        match inbox::mark_retry(self.db, token, after(now, delay), &error).await {
            Ok(true) => {
                tracing::warn!(error = %error, delay_s = delay.as_secs(), "retried later");
                self.set_visibility(msg, delay).await;
                MessageOutcome::Retried { error, delay }
            }
            Ok(false) => MessageOutcome::LeaseLost,
            Err(e) => {
                self.fail(msg, format!("{error}; recording the retry failed: {e}"))
                    .await
            }
        }
    }

    async fn defer(
        &self,
        msg: &Received,
        token: ClaimToken,
        now: DateTime<Utc>,
        reason: String,
    ) -> MessageOutcome {
        let delay = self.config.backoff(msg.receive_count);
        let next_attempt_at = after(now, delay);
        match inbox::mark_deferred(self.db, token, now, next_attempt_at, &reason).await {
            Ok(true) if self.config.is_last_receive(msg.receive_count) => {
                tracing::info!(
                    reason = %reason,
                    %next_attempt_at,
                    "deferred on the last receive: acknowledged, the sweeper enqueues it when due"
                );
                MessageOutcome::DeferredToSweeper {
                    reason,
                    next_attempt_at,
                }
            }
            Ok(true) => {
                tracing::info!(reason = %reason, delay_s = delay.as_secs(), "deferred");
                self.set_visibility(msg, delay).await;
                MessageOutcome::Deferred { reason, delay }
            }
            Ok(false) => MessageOutcome::LeaseLost,
            Err(e) => {
                self.fail(msg, format!("recording the deferral failed: {e}"))
                    .await
            }
        }
    }

    /// The database was unavailable before anything happened to the event:
    /// send the message again as a fresh one (its receive count starts
    /// over) after the backoff, and acknowledge this one. A spooled event
    /// older than [`MAX_SPOOL_AGE`], or a queue that refuses the new
    /// message, takes the usual path ([`Processor::fail`]).
    pub(super) async fn requeue(
        &self,
        msg: &Received,
        error: String,
        spooled_age: Option<Duration>,
    ) -> MessageOutcome {
        let error = clip(&error);
        if spooled_age.is_some_and(|age| age > MAX_SPOOL_AGE) {
            tracing::error!(error = %error, "spooled event older than the maximum spool age: left to the queue's receives and DLQ");
            return self.fail(msg, error).await;
        }
        let delay = self.config.backoff(1).min(crate::queue::MAX_DELAY);
        match self.queue.send_delayed(&msg.body, delay).await {
            Ok(_) => {
                tracing::warn!(error = %error, delay_s = delay.as_secs(), "database unavailable: sent again as a fresh message");
                MessageOutcome::Requeued { error, delay }
            }
            Err(e) => {
                self.fail(msg, format!("{error}; sending it again failed: {e}"))
                    .await
            }
        }
    }

    /// A failure outside the handler: back off and retry the message.
    pub(super) async fn fail(&self, msg: &Received, error: String) -> MessageOutcome {
        let error = clip(&error);
        let last = self.config.is_last_receive(msg.receive_count);
        tracing::error!(error = %error, last_receive = last, "failed; retried later");
        if last {
            // The queue moves the message to its DLQ; the row (if any) keeps
            // its status and the sweeper enqueues it again.
            return MessageOutcome::Failed { error, delay: None };
        }
        let delay = self.config.backoff(msg.receive_count);
        let set = self.set_visibility(msg, delay).await;
        MessageOutcome::Failed {
            error,
            delay: set.then_some(delay),
        }
    }

    /// Makes the message invisible for `delay`; true when it worked. A
    /// failure is logged: the queue's own visibility timeout then applies.
    async fn set_visibility(&self, msg: &Received, delay: Duration) -> bool {
        if msg.receipt_handle.is_empty() {
            tracing::warn!("message without a receipt handle: visibility unchanged");
            return false;
        }
        match self
            .queue
            .change_visibility(&msg.receipt_handle, delay)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "changing the visibility failed; the queue's default applies");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_str_and_string_payloads() {
        let s: Box<dyn Any + Send> = Box::new("static");
        assert_eq!(panic_message(s.as_ref()), "static");
        let s: Box<dyn Any + Send> = Box::new(String::from("owned"));
        assert_eq!(panic_message(s.as_ref()), "owned");
        let s: Box<dyn Any + Send> = Box::new(7_u8);
        assert_eq!(panic_message(s.as_ref()), "a panic without a message");
    }

    #[test]
    fn after_never_overflows() {
        let now = Utc::now();
        assert_eq!(
            after(now, Duration::from_secs(60)),
            now + TimeDelta::seconds(60)
        );
        assert_eq!(after(now, Duration::MAX), now + TimeDelta::hours(12));
    }
}
