//! A lane's requests in flight, and the results that landed since its last
//! statement (recorded by the next one, each under its own claim's token).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::FutureExt as _;
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;

use super::Relay;
use super::attempt::Kind;
use super::batch::Endpoints;
use super::fairness::Fairness;
use super::report::BatchReport;
use crate::config::HookboxConfig;
use crate::outbox::{Claimed, DeliveryResult, LeasedResults};

/// A claimed batch to start.
pub(super) struct Launch<'t> {
    /// The claim's lease token.
    pub token: &'t str,
    /// The statement that claimed it (this lane's count).
    pub claim: u64,
    /// Its rows.
    pub claimed: Claimed,
    /// The tenants' endpoints among its destinations.
    pub endpoints: Endpoints,
    /// Its rows given back unattempted (over their endpoint's rate).
    pub released: Vec<(DeliveryResult, Kind)>,
    /// When its requests must end.
    pub batch_deadline: DateTime<Utc>,
}

/// One attempt's end.
pub(super) struct Landed {
    token: Arc<str>,
    destination: String,
    claim: u64,
    result: DeliveryResult,
    kind: Kind,
}

type Flight<'a> = Pin<Box<dyn Future<Output = Landed> + Send + 'a>>;

/// What a lane has in flight and has not recorded.
#[derive(Default)]
pub(super) struct Flights<'a> {
    flying: FuturesUnordered<Flight<'a>>,
    /// Rows in flight per destination.
    destinations: foldhash::HashMap<String, usize>,
    /// Landed, not recorded: grouped by lease token.
    landed: Vec<LeasedResults>,
    /// What the landed attempts came to.
    landed_report: BatchReport,
    /// This lane's statements and idle polls, counted (a flight still up
    /// at a later one than its claim's statement was not answered
    /// promptly).
    polls: u64,
}

impl<'a> Flights<'a> {
    /// Rows in flight of destinations not known to be slow: what holds a
    /// lane's room and its next statement (a slow destination's rows are
    /// bounded by its own slots instead: they never stall the lane).
    pub(super) fn holding(&self, fairness: &Fairness) -> usize {
        fairness.holding(&self.destinations)
    }

    pub(super) fn is_idle(&self) -> bool {
        self.flying.is_empty() && self.landed.is_empty()
    }

    /// The lane's `idle` passed with requests still in flight: they are
    /// stragglers (their destinations are slow, and their rows waiting for a
    /// slot give their place back); lands what that released.
    pub(super) fn idle_passed(&mut self, fairness: &Fairness) {
        if self.flying.is_empty() {
            return;
        }
        for destination in self.destinations.keys() {
            fairness.straggling(destination);
        }
        self.polls += 1;
        while let Some(Some(landed)) = self.flying.next().now_or_never() {
            self.land(landed, fairness);
        }
    }

    /// A statement is about to be issued: its number (a flight still up at
    /// a later one than its claim's was not answered promptly).
    pub(super) fn statement(&mut self) -> u64 {
        self.polls += 1;
        self.polls
    }

    /// Starts the claimed rows' attempts; rows the claim could not decode
    /// land at once, dead.
    pub(super) fn launch(&mut self, relay: &'a Relay, config: &Arc<HookboxConfig>, batch: Launch) {
        let Launch {
            token,
            claim,
            claimed,
            endpoints,
            released,
            batch_deadline,
        } = batch;
        let endpoints = Arc::new(endpoints);
        let token: Arc<str> = token.into();
        for bad in claimed.unreadable {
            let (result, kind) = super::batch::unreadable(bad);
            self.push(token.clone(), result, kind);
        }
        for (result, kind) in released {
            self.push(token.clone(), result, kind);
        }
        for row in claimed.rows {
            match self.destinations.get_mut(&row.destination) {
                Some(n) => *n += 1,
                None => {
                    self.destinations.insert(row.destination.clone(), 1);
                }
            }
            let config = config.clone();
            let token = token.clone();
            let endpoints = endpoints.clone();
            self.flying.push(Box::pin(async move {
                let (result, kind) = relay
                    .attempt_resolved(&config, &endpoints, &row, batch_deadline)
                    .await;
                Landed {
                    token,
                    destination: row.destination,
                    claim,
                    result,
                    kind,
                }
            }));
        }
    }

    /// Lands one attempt; true when its destination is slow (the row did
    /// not hold the lane).
    fn land(&mut self, landed: Landed, fairness: &Fairness) -> bool {
        let prompt = landed.claim == self.polls && !matches!(landed.kind, Kind::NotAttempted);
        let slow = fairness.finished(
            &landed.destination,
            prompt,
            matches!(landed.kind, Kind::Delivered),
        );
        if let Some(n) = self.destinations.get_mut(&landed.destination) {
            *n -= 1;
            if *n == 0 {
                self.destinations.remove(&landed.destination);
            }
        }
        self.push(landed.token, landed.result, landed.kind);
        slow
    }

    fn push(&mut self, token: Arc<str>, result: DeliveryResult, kind: Kind) {
        super::batch::count(&mut self.landed_report, kind);
        match self
            .landed
            .iter_mut()
            .rev()
            .find(|l| l.token.as_str() == &*token)
        {
            Some(group) => group.results.push(result),
            None => self.landed.push(LeasedResults {
                token: token.to_string(),
                results: vec![result],
            }),
        }
    }

    /// What landed since the last statement, and what it came to.
    pub(super) fn take_landed(&mut self) -> (Vec<LeasedResults>, BatchReport) {
        (
            std::mem::take(&mut self.landed),
            std::mem::take(&mut self.landed_report),
        )
    }

    /// Awaits `work` while the requests in flight go on (and land).
    pub(super) async fn alongside<T>(
        &mut self,
        fairness: &Fairness,
        work: impl Future<Output = T>,
    ) -> T {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                Some(landed) = self.flying.next(), if !self.flying.is_empty() => {
                    self.land(landed, fairness);
                }
            }
        }
    }

    /// Waits until every request in flight has landed, or `until` (none:
    /// no limit). With `until` and not `all`, requests of destinations
    /// known to be slow are not waited for: the lane claims again beside
    /// them (their rows are capped at their free slots); and a destination
    /// whose requests are still unanswered at `until` is found slow then.
    /// True when it returned at `until` with requests still in flight.
    pub(super) async fn settle(
        &mut self,
        fairness: &Fairness,
        until: Option<tokio::time::Instant>,
        all: bool,
    ) -> bool {
        let Some(until) = until else {
            while let Some(landed) = self.flying.next().await {
                self.land(landed, fairness);
            }
            return false;
        };
        // (a destination is found slow at `until`, the lane's idle: an
        // earlier mark, a quarter of it, made timing-sensitive tests flaky
        // on a loaded machine; issue 41 keeps the faster mark open)
        let straggle_at = until;
        let deadline = std::pin::pin!(tokio::time::sleep_until(if all {
            until
        } else {
            straggle_at
        }));
        let mut deadline = deadline;
        let mut straggled = all;
        // what holds the lane: counted once, then less each row landed of a
        // destination not slow, counted again only when what is slow changed
        // (not at every answer: with a hundred destinations in flight that
        // is a hundred lookups per answer)
        let mut counted: Option<(u64, usize)> = None;
        let land = |flights: &mut Self, landed: Landed, counted: &mut Option<(u64, usize)>| {
            if !flights.land(landed, fairness) {
                if let Some((_, holding)) = counted.as_mut() {
                    *holding = holding.saturating_sub(1);
                }
            }
        };
        while !self.flying.is_empty() {
            // what has landed already, without a timer or a select per row
            while let Some(Some(landed)) = self.flying.next().now_or_never() {
                land(self, landed, &mut counted);
            }
            if self.flying.is_empty() {
                return false;
            }
            if !all {
                let generation = fairness.generation();
                let holding = match counted {
                    Some((seen, holding)) if seen == generation => holding,
                    _ => self.holding(fairness),
                };
                counted = Some((generation, holding));
                if holding == 0 {
                    return false;
                }
            }
            tokio::select! {
                biased;
                landed = self.flying.next() => match landed {
                    Some(landed) => land(self, landed, &mut counted),
                    None => return false,
                },
                () = &mut deadline => {
                    if straggled {
                        return true;
                    }
                    // the requests still unanswered: their destinations are
                    // slow; then up to `until` for the others, if any
                    straggled = true;
                    for destination in self.destinations.keys() {
                        fairness.straggling(destination);
                    }
                    deadline.set(tokio::time::sleep_until(until));
                }
            }
        }
        false
    }
}
