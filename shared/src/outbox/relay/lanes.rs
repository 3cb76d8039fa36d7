//! A run: `lanes` concurrent claim loops until the deadline, each
//! recording what its requests came to with its next claim (one statement
//! per batch), the first lane also sweeping; and `drain` for the bench and
//! an operator's flush.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use super::fairness::Reserved;
use super::flights::{Flights, Launch};
use super::report::{BatchReport, RunReport};
use super::{Pause, Relay, chrono_duration, record};
use crate::config::ConfigStore;
use crate::inbox;
use crate::outbox::{self, LeasedResults, Unrecorded};

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
        let by_destination = self.by_destination.take();
        record(&report, |r| r.destinations = by_destination);
        let states = outbox::destinations::state_counts(self.db.as_ref()).await;
        record(&report, |r| match states {
            Ok((tripped, disabled)) => {
                r.destinations_tripped = Some(tripped);
                r.destinations_disabled = Some(disabled);
            }
            Err(e) => r.errors.push(format!("destination health: {e}")),
        });
        if let Some(notifier) = &self.notifier {
            let troubles = self.troubles.take();
            let sent =
                super::notices::send(self.db.as_ref(), notifier.as_ref(), now, troubles).await;
            record(&report, |r| match sent {
                Ok(notices) => r.notices = notices,
                Err(e) => r.errors.push(format!("notices: {e}")),
            });
        }
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
        let by_destination = self.by_destination.take();
        record(&report, |r| r.destinations = by_destination);
        report.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// One lane: claims until `stop_at`; when nothing is due and nothing is
    /// in flight, pauses (or, without `pause`, ends). The lane does not wait
    /// for a whole batch: it issues its next statement when every request
    /// in flight has been answered, or `idle` after its last one, whichever
    /// comes first; each statement records what landed since (from any of
    /// its claims, each under its own token) and claims up to `batch_size`
    /// less the rows still in flight, within the destinations' caps
    /// ([`super::fairness`]): a destination that hangs holds its own
    /// `max_in_flight` rows, never the lane. What landed is recorded on its
    /// own before a sweep and a configuration refresh (either may wait)
    /// and when the lane ends, after its last requests.
    async fn lane(
        &self,
        sweeps: bool,
        config: &ConfigStore,
        stop_at: DateTime<Utc>,
        pause: Option<&dyn Pause>,
        report: &Mutex<RunReport>,
    ) {
        let fairness = self.fairness.as_ref();
        let mut next_sweep = self.clock.now();
        let mut flights = Flights::default();
        // the last claim found nothing: wait for slow destinations too
        let mut found_nothing = false;
        loop {
            // this lane's requests: all answered (but those of destinations
            // known to be slow, unless nothing else is to be done), or `idle`
            // since the last statement (then the others' rows are claimed
            // beside them)
            let idle_passed = flights
                .settle(
                    fairness,
                    Some(Instant::now() + self.settings.idle),
                    found_nothing,
                )
                .await;
            if idle_passed {
                // (not when only slow or suspect rows are left in flight:
                // a suspect endpoint is found slow only by its own idle)
                flights.idle_passed(fairness);
            }
            let now = self.clock.now();
            if sweeps && now >= next_sweep {
                // a sweep can take a while: record what landed first
                let landed = flights.take_landed();
                if !flights
                    .alongside(fairness, self.flush(landed, report))
                    .await
                {
                    return self.land_all(flights, report).await;
                }
                let swept = flights.alongside(fairness, self.sweep()).await;
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
            // landed first, so its lease cannot run out meanwhile
            if config.refresh_due() {
                let landed = flights.take_landed();
                if !flights
                    .alongside(fairness, self.flush(landed, report))
                    .await
                {
                    return self.land_all(flights, report).await;
                }
            }
            let config = flights.alongside(fairness, config.current()).await;
            let now = self.clock.now();
            let left = (stop_at - now).to_std().unwrap_or_default();
            if left < self.settings.min_request_time {
                return self.land_all(flights, report).await;
            }
            // rows of slow destinations (capped at their free slots) leave
            // the lane its room
            let room = self.settings.batch_size - flights.holding(fairness) as i64;
            if room <= 0 {
                // every row of the window in flight: record what landed
                let landed = flights.take_landed();
                if !flights
                    .alongside(fairness, self.flush(landed, report))
                    .await
                {
                    return self.land_all(flights, report).await;
                }
                continue;
            }
            let batch_deadline = now + chrono_duration(self.settings.lease.min(left));
            let (lease, reserved) = self.lease(&config, batch_deadline, room);
            let statement = flights.statement();
            let (landed, landed_report) = flights.take_landed();
            let step = flights
                .alongside(
                    fairness,
                    outbox::record_and_claim(
                        self.db.as_ref(),
                        Unrecorded { leases: &landed },
                        lease.request(room),
                    ),
                )
                .await;
            let claimed = match step {
                Ok((recorded, claimed)) => {
                    fairness.claimed(reserved, claimed.destinations());
                    record(report, |r| {
                        r.batches += 1;
                        r.deliveries.claimed += claimed.len() as u64;
                        r.deliveries
                            .add(&recorded_report(&landed, landed_report, recorded));
                    });
                    claimed
                }
                Err(e) => {
                    fairness.claimed(reserved, std::iter::empty());
                    record(report, |r| {
                        r.batches += 1;
                        r.errors.push(format!("delivery: {e}"));
                    });
                    // the claim half may be what failed: record what landed
                    // on its own (if that fails too, its rows come back
                    // when their lease ends, under the same webhook-ids)
                    let landed = (landed, landed_report);
                    if !flights
                        .alongside(fairness, self.flush(landed, report))
                        .await
                    {
                        return self.land_all(flights, report).await;
                    }
                    if e.is_retryable() {
                        tracing::error!(error = %e, "relay batch failed; stopping this lane");
                        return self.land_all(flights, report).await;
                    }
                    // not retryable: the same claim would fail the same way
                    // (a row it cannot return, a row it cannot decode), and
                    // it may have committed its leases before its answer was
                    // refused: claim again under its token, row by row
                    tracing::error!(error = %e, "relay batch failed; claiming its rows again one by one");
                    match flights.alongside(fairness, self.reclaim(&lease)).await {
                        Ok(claimed) => {
                            fairness.claimed(Reserved::default(), claimed.destinations());
                            record(report, |r| r.deliveries.claimed += claimed.len() as u64);
                            claimed
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "claiming the rows again failed too; stopping this lane");
                            record(report, |r| r.errors.push(format!("delivery: {e}")));
                            return self.land_all(flights, report).await;
                        }
                    }
                }
            };
            found_nothing = claimed.is_empty();
            if claimed.is_empty() && flights.is_idle() {
                let Some(pause) = pause else { return };
                let left = (stop_at - self.clock.now()).to_std().unwrap_or_default();
                pause.pause(self.settings.idle.min(left)).await;
            } else {
                // tenants' endpoints: from the claim's documents (those over
                // its budget in one statement, or the directory's cache),
                // while the requests in flight go on
                let endpoints = flights
                    .alongside(fairness, self.resolve_endpoints(&config, &claimed))
                    .await;
                let mut claimed = claimed;
                let released = self.admit(&endpoints, &mut claimed.rows);
                flights.launch(
                    self,
                    &config,
                    Launch {
                        token: &lease.token,
                        claim: statement,
                        claimed,
                        endpoints,
                        released,
                        batch_deadline,
                    },
                );
            }
        }
    }

    /// A lane's end: waits for its last requests (each ends by its batch's
    /// deadline), then records what landed.
    async fn land_all(&self, mut flights: Flights<'_>, report: &Mutex<RunReport>) {
        let _ = flights.settle(self.fairness.as_ref(), None, true).await;
        self.flush(flights.take_landed(), report).await;
    }

    /// Records what landed on its own; false (and the error in the report)
    /// when the database failed.
    async fn flush(
        &self,
        (landed, landed_report): (Vec<LeasedResults>, BatchReport),
        report: &Mutex<RunReport>,
    ) -> bool {
        if landed.is_empty() {
            return true;
        }
        let recorded = outbox::record_leased(
            self.db.as_ref(),
            self.clock.now(),
            Unrecorded { leases: &landed },
        )
        .await;
        match recorded {
            Ok(n) => {
                record(report, |r| {
                    r.deliveries
                        .add(&recorded_report(&landed, landed_report, n));
                });
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record delivered rows; stopping this lane");
                record(report, |r| r.errors.push(format!("delivery: {e}")));
                false
            }
        }
    }
}

/// The report of landed results once `recorded` rows took them (fewer than
/// the results when a lease had run out and another relay took the row).
fn recorded_report(landed: &[LeasedResults], report: BatchReport, recorded: u64) -> BatchReport {
    let results: usize = landed.iter().map(|l| l.results.len()).sum();
    if recorded < results as u64 {
        tracing::warn!(
            results,
            recorded,
            "some rows were no longer leased to this relay (lease ran out); their results were dropped"
        );
    }
    BatchReport { recorded, ..report }
}
