//! What a batch, a sweep and a run did, and a run's metrics.

use std::collections::BTreeMap;

use super::by_destination::{self, DestinationCounts};
use super::notices::NoticeReport;
use crate::metrics::{Metrics, Unit};
use crate::outbox::DeliveryResult;

pub use crate::maintenance::{PurgeReport, SweepReport};

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// Rows claimed.
    pub claimed: u64,
    /// 2xx.
    pub delivered: u64,
    /// Failed, another attempt scheduled.
    pub retried: u64,
    /// Given up (max attempts or 410).
    pub dead: u64,
    /// Of `dead`: 410 Gone.
    pub gone: u64,
    /// Of the failures: refused by the SSRF guard.
    pub refused: u64,
    /// Released unattempted (the batch ran out of time).
    pub not_attempted: u64,
    /// Of `dead`: rows that can never be delivered as written (their
    /// payload object is missing or corrupt, or the row itself cannot be
    /// read or decoded).
    pub unreadable: u64,
    /// Rows the result statement changed (less than the results when a
    /// lease had run out and another relay took the row).
    pub recorded: u64,
}

impl BatchReport {
    pub(crate) fn add(&mut self, other: &BatchReport) {
        self.claimed += other.claimed;
        self.delivered += other.delivered;
        self.retried += other.retried;
        self.dead += other.dead;
        self.gone += other.gone;
        self.refused += other.refused;
        self.not_attempted += other.not_attempted;
        self.unreadable += other.unreadable;
        self.recorded += other.recorded;
    }
}

/// What a whole run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// Batches claimed (including empty ones).
    pub batches: u64,
    /// Totals over the batches.
    pub deliveries: BatchReport,
    /// Sweeps, summed.
    pub sweep: SweepReport,
    /// Retention.
    pub purge: PurgeReport,
    /// Pending outbox rows at the end.
    pub pending: Option<i64>,
    /// Age of the oldest pending outbox row at the end, seconds.
    pub lag_seconds: Option<f64>,
    /// Age of the oldest inbox row not finished (pending, processing or
    /// deferred) at the end, seconds: the inbox lag.
    pub inbox_lag_seconds: Option<f64>,
    /// Destinations whose breaker is open (or probing) at the end.
    pub destinations_tripped: Option<u64>,
    /// Destinations disabled at the end.
    pub destinations_disabled: Option<u64>,
    /// Database errors that ended a step (the next run tries again).
    pub errors: Vec<String>,
    /// Attempts per destination: each configured destination's own, the
    /// tenants' endpoints together ([`by_destination`]).
    pub destinations: BTreeMap<String, DestinationCounts>,
    /// Notices to the alarm topic ([`super::notices`]).
    pub notices: NoticeReport,
}

impl RunReport {
    /// The run's EMF metrics.
    pub fn metrics(&self) -> Metrics {
        let mut m = Metrics::new();
        m.dimension("Function", "relay");
        let d = &self.deliveries;
        m.count("Delivered", d.delivered)
            .count("Failed", d.retried)
            .count("Dead", d.dead)
            .count("Gone", d.gone)
            .count("Refused", d.refused)
            .count("NotAttempted", d.not_attempted)
            .count("Unreadable", d.unreadable)
            .count("Swept", self.sweep.swept)
            .count("SweepSendFailed", self.sweep.send_failed)
            .count("Purged", self.purge.inbox + self.purge.outbox)
            .count("ArchivedPurged", self.purge.archived_deleted)
            .count("AttemptsPurged", self.purge.attempts_deleted)
            .count("BlobsDeleted", self.purge.blobs_deleted)
            .count("BlobDeleteFailed", self.purge.blob_delete_failed)
            .count("RelayErrors", self.errors.len() as u64)
            .count("NoticesSent", self.notices.sent)
            .count("NoticesFailed", self.notices.failed);
        if let Some(pending) = self.pending {
            m.record("OutboxPending", Unit::Count, pending as f64);
        }
        if let Some(lag) = self.lag_seconds {
            m.record("OutboxLagSeconds", Unit::Seconds, lag);
        }
        if let Some(n) = self.destinations_tripped {
            m.record("DestinationsTripped", Unit::Count, n as f64);
        }
        if let Some(n) = self.destinations_disabled {
            m.record("DestinationsDisabled", Unit::Count, n as f64);
        }
        if let Some(lag) = self.inbox_lag_seconds {
            m.record("InboxLagSeconds", Unit::Seconds, lag);
        }
        m
    }

    /// The run's per-destination EMF metrics, one document per set
    /// ([`by_destination::metrics`]).
    pub fn destination_metrics(&self) -> Vec<Metrics> {
        by_destination::metrics(&self.destinations)
    }
}

/// A delivered batch whose results are not recorded yet.
#[derive(Debug)]
pub(crate) struct Delivered {
    pub(crate) token: String,
    pub(crate) results: Vec<DeliveryResult>,
    pub(crate) report: BatchReport,
}

impl Delivered {
    /// Its report once `recorded` rows took its results (fewer than the
    /// results when a lease had run out and another relay took the row).
    pub(crate) fn recorded(self, recorded: u64) -> BatchReport {
        if recorded < self.results.len() as u64 {
            tracing::warn!(
                results = self.results.len(),
                recorded,
                "some rows were no longer leased to this relay (lease ran out); their results were dropped"
            );
        }
        BatchReport {
            recorded,
            ..self.report
        }
    }
}
