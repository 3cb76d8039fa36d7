//! What the processor reports: one outcome per message (acknowledged or
//! retried), the batch's report, its metrics and the `batchItemFailures`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::inbox::InboxStatus;
use crate::metrics::{Metrics, Unit};

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
    /// Per event processed: from its receipt at ingest to the commit of
    /// its processing (`ProcessingLatency`).
    pub processing_latencies: Vec<Duration>,
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
        for latency in &self.processing_latencies {
            m.record(
                "ProcessingLatency",
                Unit::Milliseconds,
                latency.as_secs_f64() * 1000.0,
            );
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
            processing_latencies: vec![Duration::from_millis(1500)],
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
        assert_eq!(m.values("ProcessingLatency"), Some(&[1500.0][..]));
    }
}
