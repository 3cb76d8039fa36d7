//! The outbox relay: delivers outbox rows to their destinations as
//! Standard-Webhooks-signed POSTs, at least once, under a stable
//! `webhook-id` (the outbox id), with leases, backoff and dead rows. The
//! same run sweeps stranded inbox rows back onto the queue and purges old
//! finished rows.
//!
//! ```text
//! `lanes` loops, each until the deadline (minus a margin):
//!   record the previous batch's results
//!     + claim ≤ batch_size due rows, leased to this batch,
//!       within the claim's byte budget                    (1 statement)
//!   read payloads stored by reference (blob store, sha256 checked)
//!   POST each, ≤ max_in_flight at once per destination
//!   nothing was due → pause ~1 s
//! every minute: sweep stranded inbox rows → queue
//! once a run:   copy the configured destinations and subscriptions to
//!               the database (publishers evaluate them there), purge
//!               finished rows older than the retention, then the blob
//!               objects no row refers to any more (`retention`)
//! ```
//!
//! A row that can never be delivered as written (its payload object is
//! missing or corrupt, the row cannot be decoded or returned) is dead at once
//! with the reason, alone; a blob store outage is a failed attempt like a
//! failed POST. A claim that fails as a whole, not retryably, is claimed
//! again under its token, row by row ([`Relay::deliver_batch`] and the lanes
//! alike): no lane stops, or claims the same failing rows forever, because
//! of one row.
//!
//! Outcomes: 2xx → delivered. 410 → dead at once, and the destination is
//! reported gone (log + `Gone` metric). Anything else (3xx, 4xx, 5xx, no
//! answer, SSRF refusal) → another attempt after the destination's backoff
//! (±20% jitter; a 429/503 `Retry-After` is honoured within 1×–2× the
//! scheduled delay) until `max_attempts`, then dead with the last status and
//! error. A request's timeout never outlasts its batch, and the lease
//! outlasts the batch, so two relays never deliver the same row at once;
//! results are recorded under the batch's own lease token, so a late batch
//! never overwrites a newer claim; a relay that dies after a POST but before
//! recording it leaves the row to be delivered again, with the same
//! `webhook-id`, when the lease ends.
//! Details and the configuration are in `docs/relay.md`.

mod attempt;
pub mod backoff;
pub mod guard;
pub mod retention;
pub mod sender;
pub mod settings;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;

use crate::blob::BlobStore;
use crate::clock::Clock;
use crate::config::{ConfigStore, Destination, HookboxConfig};
use crate::inbox::{self, InboxMessage};
use crate::metrics::{Metrics, Unit};
use crate::outbox::repo::CLAIM_BUDGET_BYTES;
use crate::outbox::{self, ClaimRequest, Claimed, DeliveryResult, UnreadableRow, Unrecorded};
use crate::queue::Queue;
use crate::store::{Database, DbError};
use attempt::Kind;

pub use backoff::{FixedJitter, Jitter, RandomJitter};
pub use guard::{NetworkGuard, Refused};
pub use retention::PurgeReport;
pub use sender::{HttpSender, OutboundRequest, SendOutcome, WebhookSender};
pub use settings::{RelaySettings, SettingsError};

/// Waits between polls when nothing is due (tokio's sleep in production; a
/// clock-advancing fake in tests).
#[async_trait]
pub trait Pause: Send + Sync + fmt::Debug {
    /// Waits about `duration`.
    async fn pause(&self, duration: Duration);
}

/// [`Pause`] with `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioPause;

#[async_trait]
impl Pause for TokioPause {
    async fn pause(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

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
    fn add(&mut self, other: &BatchReport) {
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

/// What the sweeper did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Rows found stranded and sent to the queue.
    pub swept: u64,
    /// Rows found stranded whose message could not be sent (they are swept
    /// again after another `sweep_after`).
    pub send_failed: u64,
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
    /// Database errors that ended a step (the next run tries again).
    pub errors: Vec<String>,
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
            .count("BlobsDeleted", self.purge.blobs_deleted)
            .count("BlobDeleteFailed", self.purge.blob_delete_failed)
            .count("RelayErrors", self.errors.len() as u64);
        if let Some(pending) = self.pending {
            m.record("OutboxPending", Unit::Count, pending as f64);
        }
        if let Some(lag) = self.lag_seconds {
            m.record("OutboxLagSeconds", Unit::Seconds, lag);
        }
        if let Some(lag) = self.inbox_lag_seconds {
            m.record("InboxLagSeconds", Unit::Seconds, lag);
        }
        m
    }
}

/// Request slots per destination (`max_in_flight`), shared by every batch
/// of one relay, whichever lane runs it.
#[derive(Debug, Default)]
struct Slots(Mutex<HashMap<String, (usize, Arc<Semaphore>)>>);

impl Slots {
    fn of(&self, destination: &Destination) -> Arc<Semaphore> {
        let mut slots = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match slots.get(&destination.name) {
            Some((limit, slot)) if *limit == destination.max_in_flight => slot.clone(),
            _ => {
                let slot = Arc::new(Semaphore::new(destination.max_in_flight));
                slots.insert(
                    destination.name.clone(),
                    (destination.max_in_flight, slot.clone()),
                );
                slot
            }
        }
    }
}

/// The relay use case, over its ports.
#[derive(Debug, Clone)]
pub struct Relay {
    db: Arc<dyn Database>,
    blobs: Arc<dyn BlobStore>,
    sender: Arc<dyn WebhookSender>,
    queue: Option<Arc<dyn Queue>>,
    clock: Arc<dyn Clock>,
    jitter: Arc<dyn Jitter>,
    settings: RelaySettings,
    slots: Arc<Slots>,
}

impl Relay {
    /// A relay; `blobs` holds the payloads stored by reference (read before
    /// they are POSTed) and the objects retention deletes; `queue` is the
    /// inbox queue for the sweeper (`None`: no sweeping).
    pub fn new(
        db: Arc<dyn Database>,
        blobs: Arc<dyn BlobStore>,
        sender: Arc<dyn WebhookSender>,
        queue: Option<Arc<dyn Queue>>,
        clock: Arc<dyn Clock>,
        settings: RelaySettings,
    ) -> Self {
        Self {
            db,
            blobs,
            sender,
            queue,
            clock,
            jitter: Arc::new(RandomJitter),
            settings,
            slots: Arc::default(),
        }
    }

    /// The same relay with another jitter source (tests).
    pub fn with_jitter(mut self, jitter: Arc<dyn Jitter>) -> Self {
        self.jitter = jitter;
        self
    }

    /// Its settings.
    pub fn settings(&self) -> &RelaySettings {
        &self.settings
    }

    /// One batch: claim due rows (one statement), deliver them, record every
    /// result (one statement). A row that waited `slot_wait` for one of its
    /// destination's `max_in_flight` slots, or would start too close to
    /// `batch_deadline`, is released unattempted; no request outlives the
    /// deadline. A claim that fails as a whole, not retryably, is claimed
    /// again row by row ([`Relay::reclaim`]). (A lane of [`Relay::run`]
    /// records each batch together with its next claim instead: one
    /// statement per batch.)
    pub async fn deliver_batch(
        &self,
        config: &HookboxConfig,
        batch_deadline: DateTime<Utc>,
    ) -> Result<BatchReport, DbError> {
        let lease = self.lease(config, batch_deadline);
        let request = lease.request(self.settings.batch_size);
        let claimed = match outbox::claim_batch(self.db.as_ref(), request, CLAIM_BUDGET_BYTES).await
        {
            Ok(claimed) => claimed,
            Err(e) if !e.is_retryable() => {
                tracing::error!(error = %e, "the claim failed; claiming its rows again one by one");
                self.reclaim(&lease).await?
            }
            Err(e) => return Err(e),
        };
        if claimed.is_empty() {
            return Ok(BatchReport::default());
        }
        let delivered = self
            .deliver(config, lease.token, claimed, batch_deadline)
            .await;
        let recorded = outbox::record_results(
            self.db.as_ref(),
            &delivered.token,
            self.clock.now(),
            &delivered.results,
        )
        .await?;
        Ok(delivered.recorded(recorded))
    }

    /// The terms of the next claim: now, a lease outlasting `batch_deadline`,
    /// a token naming the batch, the ordered destinations.
    fn lease(&self, config: &HookboxConfig, batch_deadline: DateTime<Utc>) -> Lease {
        let now = self.clock.now();
        Lease {
            now,
            lease_until: batch_deadline.max(now) + chrono_duration(self.settings.lease_slack),
            // `locked_by` names this batch, not just this relay: a lane whose
            // lease ran out must not record over a row another lane (of the
            // same relay) has claimed since
            token: format!("{}/{}", self.settings.worker, uuid::Uuid::new_v4().simple()),
            ordered: config
                .destinations()
                .filter(|d| d.ordered)
                .map(|d| d.name.clone())
                .collect(),
        }
    }

    /// After a claim statement failed as a whole and not retryably (the Data
    /// API refusing an answer it cannot carry, after the statement ran and
    /// committed its leases; a row no statement can decode): claims again
    /// under the same token, ids only, which takes that claim's leases back
    /// first (they are the oldest due rows), then reads each row on its own.
    /// A row that cannot be read on its own either is returned as
    /// unreadable (the caller records it dead with the reason); the others
    /// are delivered as usual. A retryable error while reading ends it.
    async fn reclaim(&self, lease: &Lease) -> Result<Claimed, DbError> {
        let ids =
            outbox::claim_ids(self.db.as_ref(), lease.request(self.settings.batch_size)).await?;
        let mut claimed = Claimed::default();
        for id in ids {
            match outbox::get(self.db.as_ref(), id).await {
                Ok(Some(row)) => claimed.rows.push(row),
                // (deleted meanwhile: nothing to deliver)
                Ok(None) => {}
                Err(e) if e.is_retryable() => return Err(e),
                Err(e) => claimed.unreadable.push(UnreadableRow {
                    id,
                    error: e.to_string(),
                }),
            }
        }
        claimed.rows.sort_by_key(|r| r.seq);
        Ok(claimed)
    }

    /// Delivers claimed rows (each destination's slots shared with every
    /// lane); the results are not recorded yet. Rows the claim could not
    /// decode are dead, with the reason.
    async fn deliver(
        &self,
        config: &HookboxConfig,
        token: String,
        claimed: Claimed,
        batch_deadline: DateTime<Utc>,
    ) -> Delivered {
        let mut report = BatchReport {
            claimed: claimed.len() as u64,
            ..BatchReport::default()
        };
        let attempts = claimed.rows.iter().map(|row| {
            let destination = config.destination(&row.destination);
            let slot = destination.map(|d| self.slots.of(d));
            self.attempt(row, destination, slot, batch_deadline)
        });
        let mut outcomes = futures::future::join_all(attempts).await;
        outcomes.extend(claimed.unreadable.into_iter().map(|bad| {
            attempt::dead_unreadable(
                bad.id,
                None,
                format!(
                    "the row cannot be read: {}; it can never be delivered as written \
                     (fix the row, then `hookbox outbox retry`)",
                    bad.error
                ),
            )
        }));
        let mut results = Vec::with_capacity(outcomes.len());
        for (result, kind) in outcomes {
            match kind {
                Kind::Delivered => report.delivered += 1,
                Kind::Retried { refused } => {
                    report.retried += 1;
                    report.refused += u64::from(refused);
                }
                Kind::Dead {
                    gone,
                    refused,
                    unreadable,
                } => {
                    report.dead += 1;
                    report.gone += u64::from(gone);
                    report.refused += u64::from(refused);
                    report.unreadable += u64::from(unreadable);
                }
                Kind::NotAttempted => report.not_attempted += 1,
            }
            results.push(result);
        }
        Delivered {
            token,
            results,
            report,
        }
    }

    /// Sends inbox rows overdue by more than `sweep_after` to the queue
    /// again (processing is idempotent, so a duplicate message is
    /// harmless), marking when. At most 10 sweep statements.
    pub async fn sweep(&self) -> Result<SweepReport, DbError> {
        let mut report = SweepReport::default();
        let Some(queue) = &self.queue else {
            return Ok(report);
        };
        let grace = chrono_duration(self.settings.sweep_after);
        for _ in 0..10 {
            let stranded = inbox::sweep_stranded(
                self.db.as_ref(),
                self.clock.now(),
                grace,
                self.settings.sweep_batch,
            )
            .await?;
            if !stranded.is_empty() {
                crate::failpoint::hit!(crate::failpoint::SWEEPER_BEFORE_SEND);
            }
            for row in &stranded {
                let body = InboxMessage::stored(row.id, &row.partner, &row.event_id).to_body();
                let sent = match body {
                    Ok(body) => queue.send(&body).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match sent {
                    Ok(_) => {
                        report.swept += 1;
                        tracing::info!(inbox_id = %row.id, partner = %row.partner, "swept a stranded inbox row back onto the queue");
                    }
                    Err(error) => {
                        report.send_failed += 1;
                        tracing::warn!(inbox_id = %row.id, error = %error, "cannot enqueue a stranded inbox row; the next sweep tries again");
                    }
                }
            }
            if (stranded.len() as i64) < self.settings.sweep_batch {
                break;
            }
        }
        Ok(report)
    }

    /// One invocation: retention once, then `lanes` concurrent batch loops
    /// until `deadline` minus the stop margin (the first lane also sweeps
    /// every `sweep_every`), each pausing `idle` when nothing is due;
    /// finally the pending count and lag. A retryable database error ends
    /// its lane (the next invocation starts over); a claim that fails
    /// otherwise is claimed again row by row and the lane goes on, unless
    /// that fails too. Every such error is in the report.
    pub async fn run(
        &self,
        config: &ConfigStore,
        deadline: DateTime<Utc>,
        pause: &dyn Pause,
    ) -> RunReport {
        let report = Mutex::new(RunReport::default());
        // publishers evaluate subscriptions against the database's copy
        let synced = outbox::destinations::sync(
            self.db.as_ref(),
            config.current().await.as_ref(),
            self.clock.now(),
        )
        .await;
        record(&report, |r| match synced {
            Ok(changed) => {
                if changed > 0 {
                    tracing::info!(
                        changed,
                        "destinations and subscriptions synced from the configuration"
                    );
                }
            }
            Err(e) => r.errors.push(format!("syncing destinations: {e}")),
        });
        let purged = self.purge().await;
        record(&report, |r| match purged {
            Ok(p) => r.purge = p,
            Err(e) => r.errors.push(format!("retention: {e}")),
        });
        let stop_at = deadline - chrono_duration(self.settings.stop_margin);
        let lanes = (0..self.settings.lanes.max(1))
            .map(|lane| self.lane(lane == 0, config, stop_at, Some(pause), &report));
        futures::future::join_all(lanes).await;
        let summary = outbox::pending_summary(self.db.as_ref()).await;
        let now = self.clock.now();
        record(&report, |r| match summary {
            Ok(summary) => {
                r.pending = Some(summary.pending);
                r.lag_seconds = Some(summary.oldest_created_at.map_or(0.0, |oldest| {
                    (now - oldest).num_milliseconds().max(0) as f64 / 1000.0
                }));
            }
            Err(e) => r.errors.push(format!("pending summary: {e}")),
        });
        let oldest_inbox = inbox::oldest_active_received_at(self.db.as_ref()).await;
        record(&report, |r| match oldest_inbox {
            Ok(oldest) => {
                r.inbox_lag_seconds = Some(oldest.map_or(0.0, |oldest| {
                    (now - oldest).num_milliseconds().max(0) as f64 / 1000.0
                }));
            }
            Err(e) => r.errors.push(format!("inbox lag: {e}")),
        });
        report.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Delivers until nothing is due, `lanes` batches at a time, without
    /// sweeping, purging or pausing (the bench; an operator's "flush").
    pub async fn drain(&self, config: &ConfigStore) -> RunReport {
        let report = Mutex::new(RunReport::default());
        let far = self.clock.now() + chrono::Duration::days(1);
        let lanes =
            (0..self.settings.lanes.max(1)).map(|_| self.lane(false, config, far, None, &report));
        futures::future::join_all(lanes).await;
        report.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// One lane: batches until `stop_at`; when nothing is due, pauses (or,
    /// without `pause`, ends). Each batch's results are recorded by the
    /// statement that claims the next batch (one statement per batch); they
    /// are recorded on their own before a sweep, before a configuration
    /// refresh (either may wait) and when the lane ends.
    async fn lane(
        &self,
        sweeps: bool,
        config: &ConfigStore,
        stop_at: DateTime<Utc>,
        pause: Option<&dyn Pause>,
        report: &Mutex<RunReport>,
    ) {
        let mut next_sweep = self.clock.now();
        let mut unrecorded: Option<Delivered> = None;
        loop {
            let now = self.clock.now();
            if sweeps && now >= next_sweep {
                // a sweep can take a while: record what was delivered first
                if !self.flush(unrecorded.take(), report).await {
                    return;
                }
                let swept = self.sweep().await;
                record(report, |r| match swept {
                    Ok(s) => {
                        r.sweep.swept += s.swept;
                        r.sweep.send_failed += s.send_failed;
                    }
                    Err(e) => r.errors.push(format!("sweeper: {e}")),
                });
                next_sweep = now + chrono_duration(self.settings.sweep_every);
            }
            // a configuration refresh may wait for its source: record what
            // was delivered first, so its lease cannot run out meanwhile
            if config.refresh_due() && !self.flush(unrecorded.take(), report).await {
                return;
            }
            let config = config.current().await;
            let now = self.clock.now();
            let left = (stop_at - now).to_std().unwrap_or_default();
            if left < self.settings.min_request_time {
                self.flush(unrecorded.take(), report).await;
                return;
            }
            let batch_deadline = now + chrono_duration(self.settings.lease.min(left));
            let lease = self.lease(&config, batch_deadline);
            let previous = unrecorded.take();
            let step = outbox::record_and_claim(
                self.db.as_ref(),
                Unrecorded {
                    recorded_by: previous.as_ref().map_or("", |p| p.token.as_str()),
                    results: previous.as_ref().map_or(&[], |p| p.results.as_slice()),
                },
                lease.request(self.settings.batch_size),
            )
            .await;
            let claimed = match step {
                Ok((recorded, claimed)) => {
                    record(report, |r| {
                        r.batches += 1;
                        if let Some(previous) = previous {
                            r.deliveries.add(&previous.recorded(recorded));
                        }
                    });
                    claimed
                }
                Err(e) => {
                    record(report, |r| {
                        r.batches += 1;
                        r.errors.push(format!("delivery: {e}"));
                    });
                    // the claim half may be what failed: record the previous
                    // batch on its own (if that fails too, its rows come back
                    // when their lease ends, under the same webhook-ids)
                    if !self.flush(previous, report).await {
                        return;
                    }
                    if e.is_retryable() {
                        tracing::error!(error = %e, "relay batch failed; stopping this lane");
                        return;
                    }
                    // not retryable: the same claim would fail the same way
                    // (a row it cannot return, a row it cannot decode), and
                    // it may have committed its leases before its answer was
                    // refused: claim again under its token, row by row
                    tracing::error!(error = %e, "relay batch failed; claiming its rows again one by one");
                    match self.reclaim(&lease).await {
                        Ok(claimed) => claimed,
                        Err(e) => {
                            tracing::error!(error = %e, "claiming the rows again failed too; stopping this lane");
                            record(report, |r| r.errors.push(format!("delivery: {e}")));
                            return;
                        }
                    }
                }
            };
            if claimed.is_empty() {
                let Some(pause) = pause else { return };
                let left = (stop_at - self.clock.now()).to_std().unwrap_or_default();
                pause.pause(self.settings.idle.min(left)).await;
            } else {
                unrecorded = Some(
                    self.deliver(&config, lease.token, claimed, batch_deadline)
                        .await,
                );
            }
        }
    }

    /// Records a delivered batch on its own; false (and the error in the
    /// report) when the database failed.
    async fn flush(&self, delivered: Option<Delivered>, report: &Mutex<RunReport>) -> bool {
        let Some(delivered) = delivered else {
            return true;
        };
        let recorded = outbox::record_results(
            self.db.as_ref(),
            &delivered.token,
            self.clock.now(),
            &delivered.results,
        )
        .await;
        match recorded {
            Ok(n) => {
                record(report, |r| r.deliveries.add(&delivered.recorded(n)));
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record a delivered batch; stopping this lane");
                record(report, |r| r.errors.push(format!("delivery: {e}")));
                false
            }
        }
    }
}

/// The terms of one claim.
#[derive(Debug)]
struct Lease {
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
    token: String,
    ordered: Vec<String>,
}

impl Lease {
    fn request(&self, limit: i64) -> ClaimRequest<'_> {
        ClaimRequest {
            worker: &self.token,
            now: self.now,
            lease_until: self.lease_until,
            limit,
            ordered_destinations: &self.ordered,
        }
    }
}

/// A delivered batch whose results are not recorded yet.
#[derive(Debug)]
struct Delivered {
    token: String,
    results: Vec<DeliveryResult>,
    report: BatchReport,
}

impl Delivered {
    /// Its report once `recorded` rows took its results (fewer than the
    /// results when a lease had run out and another relay took the row).
    fn recorded(self, recorded: u64) -> BatchReport {
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

fn record(report: &Mutex<RunReport>, f: impl FnOnce(&mut RunReport)) {
    f(&mut report.lock().unwrap_or_else(|p| p.into_inner()));
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}
