//! A run: `lanes` concurrent batch loops until the deadline, each
//! recording a batch's results with the claim of the next (one statement
//! per batch), the first lane also sweeping; and `drain` for the bench and
//! an operator's flush.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

use super::report::{Delivered, RunReport};
use super::{Pause, Relay, chrono_duration, record};
use crate::config::ConfigStore;
use crate::inbox;
use crate::outbox::{self, Unrecorded};

impl Relay {
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
        let states = outbox::destinations::state_counts(self.db.as_ref()).await;
        record(&report, |r| match states {
            Ok((tripped, disabled)) => {
                r.destinations_tripped = Some(tripped);
                r.destinations_disabled = Some(disabled);
            }
            Err(e) => r.errors.push(format!("destination health: {e}")),
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
