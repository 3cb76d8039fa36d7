//! One batch of queue messages through the business handler.

use std::any::Any;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use futures::FutureExt as _;
use sha2::{Digest, Sha256};
use tracing::Instrument as _;
use tracing::field::Empty;
use uuid::Uuid;

use super::config::ProcessorConfig;
use super::handler::{BusinessHandler, InboxEvent, Outcome};
use super::{clip, json_error};
use crate::blob::BlobStore;
use crate::clock::Clock;
use crate::inbox::body::{self, DEFAULT_INLINE_MAX_BYTES};
use crate::inbox::{self, Claim, ClaimToken, InboxMessage, InboxRow, InboxStatus, NewInboxEvent};
use crate::metrics::{Metrics, Unit};
use crate::queue::{Queue, Received};
use crate::store::{Database, Transaction};

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

/// What happened to one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageOutcome {
    /// The business changes and the `processed` status committed together.
    Processed,
    /// The row was already finished (a redelivery, a duplicate message, a
    /// replay race): acknowledged without running the handler.
    AlreadyFinished(InboxStatus),
    /// An earlier message of the same batch carries the same row: acknowledged.
    DuplicateInBatch,
    /// No such inbox row (deleted by retention?): acknowledged.
    Missing,
    /// Another worker holds the row: retried later (visibility unchanged).
    Busy,
    /// Another worker holds the row and this was the queue's last receive:
    /// acknowledged (rather than sent to the DLQ): the holder finishes the
    /// row, or the sweeper re-enqueues it once its lease has expired.
    BusyOnLastReceive,
    /// An ordering prerequisite is missing: retried after `delay`.
    Deferred {
        /// The handler's reason.
        reason: String,
        /// The visibility timeout set.
        delay: Duration,
    },
    /// Deferred on the queue's last receive: a deferral is not a failure, so
    /// the row stays `deferred` (due at `next_attempt_at`), the message is
    /// acknowledged and the sweeper enqueues the row again when it is due,
    /// until it converges or reaches the maximum deferral age.
    DeferredToSweeper {
        /// The handler's reason.
        reason: String,
        /// When the row is due again.
        next_attempt_at: DateTime<Utc>,
    },
    /// A retryable failure (handler error, panic, failed commit): retried
    /// after `delay`.
    Retried {
        /// What failed.
        error: String,
        /// The visibility timeout set.
        delay: Duration,
    },
    /// A retryable failure on the queue's last receive: the row is `dead`
    /// with this error and the message is reported failed, so the queue
    /// moves it to its dead-letter queue.
    Dead {
        /// The last error.
        error: String,
    },
    /// A poison pill: `quarantined` at once, acknowledged.
    Quarantined {
        /// Why.
        reason: String,
    },
    /// The row was claimed by another worker meanwhile (our lease expired):
    /// nothing of ours committed; retried later (then acknowledged as finished).
    LeaseLost,
    /// Not started before the invocation's deadline: the row was released
    /// and the message is retried (visibility unchanged).
    NotStarted,
    /// The database was unavailable before anything happened to the event
    /// (storing a spooled event, claiming): the message was sent again as a
    /// fresh one, visible after `delay`, and this one is acknowledged, so an
    /// outage never uses up the queue's receives (a spooled event would
    /// otherwise reach the DLQ with no row, a stored one its last receive).
    Requeued {
        /// What failed.
        error: String,
        /// The new message's delay.
        delay: Duration,
    },
    /// The database failed outside the handler (storing a spooled event,
    /// claiming, recording an outcome): retried after `delay`, if the
    /// visibility could be set.
    Failed {
        /// What failed.
        error: String,
        /// The visibility timeout set, if any.
        delay: Option<Duration>,
    },
}

impl MessageOutcome {
    /// True when the message must be reported in `batchItemFailures`
    /// (left on the queue to come back), false when it is acknowledged.
    pub fn is_retry(&self) -> bool {
        matches!(
            self,
            MessageOutcome::Busy
                | MessageOutcome::Deferred { .. }
                | MessageOutcome::Retried { .. }
                | MessageOutcome::Dead { .. }
                | MessageOutcome::LeaseLost
                | MessageOutcome::NotStarted
                | MessageOutcome::Failed { .. }
        )
    }

    /// Short name, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            MessageOutcome::Processed => "processed",
            MessageOutcome::AlreadyFinished(_) => "already_finished",
            MessageOutcome::DuplicateInBatch => "duplicate_in_batch",
            MessageOutcome::Missing => "missing",
            MessageOutcome::Busy => "busy",
            MessageOutcome::BusyOnLastReceive => "busy_on_last_receive",
            MessageOutcome::Deferred { .. } => "deferred",
            MessageOutcome::DeferredToSweeper { .. } => "deferred_to_sweeper",
            MessageOutcome::Retried { .. } => "retried",
            MessageOutcome::Dead { .. } => "dead",
            MessageOutcome::Quarantined { .. } => "quarantined",
            MessageOutcome::LeaseLost => "lease_lost",
            MessageOutcome::NotStarted => "not_started",
            MessageOutcome::Requeued { .. } => "requeued",
            MessageOutcome::Failed { .. } => "failed",
        }
    }
}

/// The outcome of one message of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageResult {
    /// The queue's message id (what `batchItemFailures` names).
    pub message_id: String,
    /// The inbox row, when the message led to one.
    pub inbox_id: Option<Uuid>,
    /// What happened.
    pub outcome: MessageOutcome,
}

/// What a batch did: one result per message, in the batch's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// One per message, same order as the input.
    pub results: Vec<MessageResult>,
    /// Time spent in the business handler, per call.
    pub handler_latencies: Vec<Duration>,
    /// Age of each spooled event sent again because the database was
    /// unavailable (what the `SpooledAgeSeconds` alarm watches).
    pub spooled_ages: Vec<Duration>,
}

impl BatchReport {
    /// The message ids to report in `batchItemFailures`: every message to
    /// retry, once, in batch order. Never an empty id (SQS would fail the
    /// whole batch): a message without an id cannot be named, so it is
    /// acknowledged; its row keeps its status and due time and the sweeper
    /// enqueues it again.
    pub fn retry_message_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.results {
            if r.outcome.is_retry() && !r.message_id.is_empty() && !out.contains(&r.message_id) {
                out.push(r.message_id.clone());
            }
        }
        out
    }

    /// How many results match `pred`.
    pub fn count(&self, pred: impl Fn(&MessageOutcome) -> bool) -> usize {
        self.results.iter().filter(|r| pred(&r.outcome)).count()
    }

    /// The batch's metrics: counts of processed, deferred, retried,
    /// quarantined and dead messages (always present, zeros included),
    /// duplicates, busy and missing, and the handler latencies.
    pub fn metrics(&self) -> Metrics {
        use MessageOutcome as O;
        let mut m = Metrics::new();
        let n = |pred: &dyn Fn(&O) -> bool| self.count(pred) as u64;
        m.count("Processed", n(&|o| matches!(o, O::Processed)));
        m.count(
            "Deferred",
            n(&|o| matches!(o, O::Deferred { .. } | O::DeferredToSweeper { .. })),
        );
        m.count(
            "Retried",
            n(&|o| {
                matches!(
                    o,
                    O::Retried { .. } | O::Failed { .. } | O::LeaseLost | O::NotStarted
                )
            }),
        );
        m.count("Quarantined", n(&|o| matches!(o, O::Quarantined { .. })));
        m.count("Dead", n(&|o| matches!(o, O::Dead { .. })));
        m.count(
            "Duplicates",
            n(&|o| matches!(o, O::AlreadyFinished(_) | O::DuplicateInBatch)),
        );
        m.count("Busy", n(&|o| matches!(o, O::Busy | O::BusyOnLastReceive)));
        m.count("Missing", n(&|o| matches!(o, O::Missing)));
        m.count("Requeued", n(&|o| matches!(o, O::Requeued { .. })));
        for age in &self.spooled_ages {
            m.record("SpooledAgeSeconds", Unit::Seconds, age.as_secs_f64());
        }
        for latency in &self.handler_latencies {
            m.record(
                "HandlerLatency",
                Unit::Milliseconds,
                latency.as_secs_f64() * 1000.0,
            );
        }
        m
    }
}

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
struct Slot<'m> {
    msg: &'m Received,
    span: tracing::Span,
    inbox_id: Option<Uuid>,
    claimed: Option<(Box<InboxRow>, ClaimToken)>,
    /// The claimed row's body, once read (kept across deferral passes).
    body: Option<Vec<u8>>,
    /// Set when a spooled event was sent again (the database unavailable).
    spooled_age: Option<Duration>,
    run: Option<Run>,
    outcome: Option<MessageOutcome>,
}

/// What running the handler came to, before it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Run {
    Committed,
    Defer(String),
    Retry(String),
    Quarantine(String),
    LeaseLost,
}

fn after(now: DateTime<Utc>, delay: Duration) -> DateTime<Utc> {
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
                ),
                inbox_id: None,
                claimed: None,
                body: None,
                spooled_age: None,
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
        BatchReport {
            spooled_ages,
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

    /// Turns the message into an inbox id, or an outcome.
    async fn read(&self, slot: &mut Slot<'_>) {
        let message = match serde_json::from_str::<InboxMessage>(&slot.msg.body) {
            Ok(message) => message,
            Err(e) => {
                let reason = format!("not an inbox queue message: {}", json_error(&e));
                return self.store_unreadable(slot, &reason).await;
            }
        };
        let (partner, event_id) = message.key();
        slot.span.record("partner", partner);
        slot.span.record("event_id", event_id);
        match message {
            InboxMessage::Stored { inbox_id, .. } => {
                slot.span
                    .record("inbox_id", tracing::field::display(inbox_id));
                slot.inbox_id = Some(inbox_id);
            }
            InboxMessage::Spooled(spooled) => {
                let (event, dedupe) = match spooled
                    .to_new_event()
                    .and_then(|event| Ok((event, spooled.dedupe_digest()?)))
                {
                    Ok(pair) => pair,
                    Err(e) => return self.store_unreadable(slot, &e.to_string()).await,
                };
                // Stored as received by ingest (the lag stays honest).
                let received_at = spooled.received_at.min(self.clock.now());
                match inbox::insert_if_new_deduped(self.db, &event, received_at, dedupe).await {
                    Ok(inserted) => {
                        slot.span
                            .record("inbox_id", tracing::field::display(inserted.id()));
                        tracing::info!(new = inserted.is_new(), "spooled event stored");
                        slot.inbox_id = Some(inserted.id());
                    }
                    Err(e) if e.is_retryable() => {
                        let error = format!("storing the spooled event failed: {e}");
                        let age = (self.clock.now() - spooled.received_at)
                            .to_std()
                            .unwrap_or_default();
                        slot.spooled_age = Some(age);
                        slot.outcome = Some(self.requeue(slot.msg, error, Some(age)).await);
                    }
                    Err(e) => {
                        let error = format!("storing the spooled event failed: {e}");
                        slot.outcome = Some(self.fail(slot.msg, error).await);
                    }
                }
            }
        }
    }

    /// Keeps an unreadable message as a quarantined row, acknowledged.
    async fn store_unreadable(&self, slot: &mut Slot<'_>, reason: &str) {
        let body = slot.msg.body.as_bytes();
        // a queue message may be 1 MiB: above the threshold it goes to the
        // blob store like any large body
        let stored = match body::store(
            self.blobs,
            UNREADABLE_PARTNER,
            body.to_vec(),
            DEFAULT_INLINE_MAX_BYTES,
        )
        .await
        {
            Ok(stored) => stored,
            Err(e) => {
                let error = format!("storing an unreadable message's body failed: {e}");
                slot.outcome = Some(self.fail(slot.msg, error).await);
                return;
            }
        };
        let event = NewInboxEvent {
            partner: UNREADABLE_PARTNER.into(),
            event_id: format!("sha256:{}", hex::encode(Sha256::digest(body))),
            event_id_derived: true,
            event_type: None,
            ordering_key: None,
            body: stored,
            headers: serde_json::json!({ "sqs-message-id": slot.msg.message_id }),
            signature_verified: false,
        };
        let reason = clip(reason);
        match inbox::insert_quarantined(self.db, &event, self.clock.now(), &reason).await {
            Ok(inserted) => {
                slot.span
                    .record("inbox_id", tracing::field::display(inserted.id()));
                tracing::warn!(
                    reason = %reason,
                    body_bytes = body.len(),
                    "unreadable queue message quarantined"
                );
                slot.inbox_id = Some(inserted.id());
                slot.outcome = Some(MessageOutcome::Quarantined { reason });
            }
            Err(e) => {
                let error = format!("storing an unreadable message failed: {e}");
                slot.outcome = Some(self.fail(slot.msg, error).await);
            }
        }
    }

    /// Claims the rows of every slot that has one and no outcome yet.
    async fn claim(&self, slots: &mut [Slot<'_>], deadline: Option<DateTime<Utc>>) {
        let mut ids: Vec<Uuid> = Vec::new();
        for slot in slots.iter_mut().filter(|s| s.outcome.is_none()) {
            let Some(id) = slot.inbox_id else { continue };
            if ids.contains(&id) {
                let _enter = slot.span.enter();
                tracing::info!("the same row is in an earlier message of this batch");
                slot.outcome = Some(MessageOutcome::DuplicateInBatch);
            } else {
                ids.push(id);
            }
        }
        if ids.is_empty() {
            return;
        }
        let now = self.clock.now();
        let mut lease_until = after(now, self.config.lease);
        if let Some(deadline) = deadline {
            lease_until = lease_until.max(after(deadline, self.config.deadline_margin));
        }
        // one token for every claim of this batch: a retried claim takes back
        // the leases a failed one committed
        let claimer = Uuid::new_v4();
        let mut by_id: HashMap<Uuid, Claim> = HashMap::new();
        for chunk in ids.chunks(inbox::MAX_CLAIM_IDS) {
            match inbox::claim_as(self.db, claimer, chunk, now, lease_until).await {
                Ok(claims) => by_id.extend(claims.into_iter().map(|c| (c.id(), c))),
                Err(e) if e.is_retryable() => {
                    let error = format!("claiming the batch's rows failed: {e}");
                    for slot in slots.iter_mut().filter(|s| {
                        s.outcome.is_none() && s.inbox_id.is_some_and(|id| chunk.contains(&id))
                    }) {
                        let span = slot.span.clone();
                        let outcome = self
                            .requeue(slot.msg, error.clone(), None)
                            .instrument(span)
                            .await;
                        slot.outcome = Some(outcome);
                    }
                }
                Err(e) => {
                    // One row can make the whole statement fail (the Data API
                    // refusing a row it cannot return, say): claim each row
                    // alone, so that only that row is held up. The same
                    // claimer takes back the leases the failed statement may
                    // have committed.
                    tracing::warn!(error = %e, rows = chunk.len(), "claim failed; claiming the rows one by one");
                    for id in chunk {
                        match inbox::claim_as(self.db, claimer, &[*id], now, lease_until).await {
                            Ok(claims) => by_id.extend(claims.into_iter().map(|c| (c.id(), c))),
                            Err(e) => {
                                // it may have committed a lease it could not
                                // return: give it back, or the row would wait
                                // for the lease to expire on every receive
                                let due = after(now, self.config.backoff(1));
                                if let Err(release) =
                                    inbox::release_lease(self.db, claimer, *id, due).await
                                {
                                    tracing::warn!(error = %release, inbox_id = %id, "releasing the lease of an unreturnable row failed");
                                }
                                by_id.insert(
                                    *id,
                                    Claim::Unreadable {
                                        id: *id,
                                        token: None,
                                        error: format!("claiming the row failed: {e}"),
                                    },
                                );
                            }
                        }
                    }
                }
            }
        }
        for slot in slots.iter_mut().filter(|s| s.outcome.is_none()) {
            let Some(id) = slot.inbox_id else { continue };
            let _enter = slot.span.enter();
            slot.outcome = match by_id.remove(&id) {
                Some(Claim::Claimed { row, token }) => {
                    slot.claimed = Some((row, token));
                    None
                }
                Some(Claim::Finished { status, .. }) => {
                    tracing::info!(%status, "row already finished: acknowledged");
                    Some(MessageOutcome::AlreadyFinished(status))
                }
                Some(Claim::Busy { .. }) if self.config.is_last_receive(slot.msg.receive_count) => {
                    tracing::warn!("row held by another worker on the last receive: acknowledged");
                    Some(MessageOutcome::BusyOnLastReceive)
                }
                Some(Claim::Busy { .. }) => {
                    tracing::info!("row held by another worker: retried later");
                    Some(MessageOutcome::Busy)
                }
                Some(Claim::Missing { .. }) | None => {
                    tracing::warn!("no such inbox row: acknowledged");
                    Some(MessageOutcome::Missing)
                }
                Some(Claim::Unreadable { token, error, .. }) => {
                    drop(_enter);
                    let span = slot.span.clone();
                    Some(
                        self.unreadable_row(slot.msg, id, token, &error)
                            .instrument(span)
                            .await,
                    )
                }
            };
        }
    }

    /// A row the database cannot give us: retried like any failure, and
    /// quarantined with the reason on the queue's last receive (retrying it
    /// for ever would help nobody; an operator replays it once fixed).
    async fn unreadable_row(
        &self,
        msg: &Received,
        id: Uuid,
        token: Option<ClaimToken>,
        error: &str,
    ) -> MessageOutcome {
        let now = self.clock.now();
        let error = clip(&format!("the inbox row cannot be read: {error}"));
        if !self.config.is_last_receive(msg.receive_count) {
            return match token {
                Some(token) => self.retry(msg, token, now, error).await,
                None => self.fail(msg, error).await,
            };
        }
        let quarantined = match token {
            Some(token) => inbox::mark_quarantined(self.db, token, now, &error).await,
            None => inbox::quarantine_unreadable(self.db, id, now, &error).await,
        };
        match quarantined {
            Ok(_) => {
                tracing::warn!(reason = %error, "unreadable row quarantined");
                MessageOutcome::Quarantined { reason: error }
            }
            Err(e) => {
                self.fail(msg, format!("{error}; quarantining it failed: {e}"))
                    .await
            }
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
            Ok(tx) => tx,
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
                    Ok(()) => Run::Committed,
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
            tracing::info!("processed");
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

    async fn quarantine(
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

    async fn retry(
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
    async fn requeue(
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
    async fn fail(&self, msg: &Received, error: String) -> MessageOutcome {
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

    fn result(id: &str, outcome: MessageOutcome) -> MessageResult {
        MessageResult {
            message_id: id.into(),
            inbox_id: None,
            outcome,
        }
    }

    #[test]
    fn retry_ids_are_unique_non_empty_and_in_order() {
        let report = BatchReport {
            results: vec![
                result("a", MessageOutcome::Processed),
                result("b", MessageOutcome::Busy),
                result("", MessageOutcome::LeaseLost),
                result("c", MessageOutcome::Quarantined { reason: "x".into() }),
                result(
                    "d",
                    MessageOutcome::Dead {
                        error: "boom".into(),
                    },
                ),
                result("b", MessageOutcome::NotStarted),
                result("e", MessageOutcome::BusyOnLastReceive),
                result(
                    "f",
                    MessageOutcome::Requeued {
                        error: "down".into(),
                        delay: Duration::from_secs(60),
                    },
                ),
            ],
            handler_latencies: vec![Duration::from_millis(2)],
            spooled_ages: vec![Duration::from_secs(7200)],
        };
        assert_eq!(
            report.retry_message_ids(),
            ["b", "d"],
            "requeued: acknowledged"
        );
        assert_eq!(report.metrics().values("Requeued"), Some(&[1.0][..]));
        assert_eq!(
            report.metrics().values("SpooledAgeSeconds"),
            Some(&[7200.0][..])
        );
        let m = report.metrics();
        assert_eq!(m.values("Processed"), Some(&[1.0][..]));
        assert_eq!(m.values("Quarantined"), Some(&[1.0][..]));
        assert_eq!(m.values("Dead"), Some(&[1.0][..]));
        assert_eq!(m.values("Retried"), Some(&[2.0][..]));
        assert_eq!(m.values("Deferred"), Some(&[0.0][..]));
        assert_eq!(m.values("Busy"), Some(&[2.0][..]));
        assert_eq!(m.values("HandlerLatency"), Some(&[2.0][..]));
    }

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
