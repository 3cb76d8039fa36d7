//! Fairness between destinations within one relay: which destinations a
//! claim caps, and by how much.
//!
//! A lane does not wait for a slow destination: it records what finished
//! and claims again every `idle` while rows are still in flight (see
//! `lanes`). A destination is *prompt* until rows of it are still in flight
//! at such a statement (stragglers), and prompt again once one of its
//! attempts is answered before its lane's next statement. A prompt
//! destination is not capped, so a batch of it is as large as before (the
//! relay's throughput does not change). A slow one is capped at its free
//! request slots (`max_in_flight` less the rows this relay holds for it, in
//! any lane), and when it turns slow its rows still waiting for a slot give
//! their place in the lane back at once (unattempted, due again): a
//! destination that hangs every request keeps `max_in_flight` rows, and
//! every other destination's rows are claimed at the next statement.
//!
//! Tenants' endpoints (not in the configuration) found slow are capped the
//! same way, at their free slots of the default `max_in_flight`, and all of
//! them together at [`MAX_SLOW_ENDPOINT_REQUESTS`] requests (handed round,
//! claim after claim, so each gets its turn); and a slow
//! destination's rows in flight hold neither their lane's room nor its next
//! statement (`flights`), so one tenant's many hanging endpoints never stall
//! a lane. Fairness between tenants within a claim is the claim's own
//! (migration 24: each tenant one share, split among its endpoints).
//!
//! A tenant's endpoint is known to the relay only once a claim took a row
//! of it (the directory resolves it then, naming its tenant and limits).
//! Once one endpoint of a tenant is slow, the tenant's endpoints that have
//! not delivered yet in this process are *suspect*: treated as slow (capped,
//! holding no lane) until one of their attempts is delivered. So a tenant
//! whose 100 endpoints hang costs a lane one idle second to find out, not
//! one per endpoint.
//!
//! A destination with `rate_limit_per_sec` is also capped by a token
//! bucket (one second's worth, refilled on the relay's clock): a claim
//! takes at most the whole tokens left, and spends one per row it claimed.
//! An endpoint's limit (its own, or its tenant's) is learnt when it is
//! resolved; its rows spend their tokens then ([`Fairness::admit`]), and
//! those over the rate go back unattempted, due when a token will be there,
//! so no claim, however early or concurrent, exceeds it.

use foldhash::{HashMap, HashMapExt as _, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::config::{DEFAULT_MAX_IN_FLIGHT, Destination, HookboxConfig};
use crate::outbox::OutboxRow;

/// Most requests one relay keeps open to tenants' endpoints that are slow
/// or suspect, all of them together. Each such endpoint is capped at its
/// free slots (10 by default), so without this bound 100 hanging endpoints
/// would hold 1,000 connections until their timeout: near a Lambda
/// function's 1,024 file descriptors, past which no connection to any
/// endpoint could be opened. The slots within the bound go round the slow
/// endpoints claim after claim, so a suspect endpoint always gets its turn
/// to show it answers.
pub const MAX_SLOW_ENDPOINT_REQUESTS: usize = 200;

/// What one relay holds per destination, and which tenants have a slow
/// endpoint.
#[derive(Debug, Default)]
pub(crate) struct Fairness {
    state: Mutex<State>,
    /// Counts the changes of what is slow (a lane counts what holds it
    /// again only after one, or after a destination's last row landed).
    generation: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    held: HashMap<String, Holding>,
    /// Per tenant, its endpoints known to be slow (none: not listed).
    slow_endpoints: HashMap<Arc<str>, usize>,
    /// Per tenant, its endpoints the relay has resolved.
    endpoints: HashMap<Arc<str>, Vec<String>>,
    /// Destinations a claim may cap: slow, or rate-limited endpoints (with
    /// the slow tenants' endpoints, what `caps` looks at, never every
    /// destination held).
    watched: HashSet<String>,
    /// What is slow changed.
    changed: bool,
    /// Claims that capped slow endpoints so far: where the next one starts
    /// handing out the slots within [`MAX_SLOW_ENDPOINT_REQUESTS`].
    turn: usize,
}

#[derive(Debug)]
struct Holding {
    /// Rows claimed and not finished (in any lane).
    rows: usize,
    /// No straggler since the last attempt that ended before its lane's
    /// next statement: not capped.
    prompt: bool,
    /// Notified when it turns slow (rows waiting for a slot give up, and
    /// requests out give their host's slot back); made when a row first
    /// waits for a slot or takes one of its host's.
    slowed: Option<Arc<Notify>>,
    /// Rate limit: tokens left, and when they were counted.
    tokens: f64,
    counted_at: Option<DateTime<Utc>>,
    /// A tenant's endpoint, as last resolved: its tenant and rate limit.
    endpoint: Option<(Arc<str>, Option<u32>)>,
    /// One of its attempts was delivered (in this process).
    delivered: bool,
}

impl Default for Holding {
    fn default() -> Self {
        Self {
            rows: 0,
            prompt: true,
            slowed: None,
            tokens: 0.0,
            counted_at: None,
            endpoint: None,
            delivered: false,
        }
    }
}

impl Holding {
    fn tenant(&self) -> Option<&Arc<str>> {
        self.endpoint.as_ref().map(|(tenant, _)| tenant)
    }

    /// Tokens refilled up to `now` at `rate` per second (at most a
    /// second's worth; a full bucket the first time).
    fn refill(&mut self, rate: u32, now: DateTime<Utc>) {
        let rate = f64::from(rate);
        let elapsed = self.counted_at.map_or(1.0, |at| {
            (now - at).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
        });
        self.tokens = (self.tokens + elapsed.max(0.0) * rate).min(rate);
        self.counted_at = Some(now);
    }
}

impl State {
    /// Slow, or a tenant's endpoint not delivered yet while another
    /// endpoint of its tenant is slow (suspect).
    fn is_slow(&self, h: &Holding) -> bool {
        !h.prompt
            || (!h.delivered
                && h.tenant()
                    .is_some_and(|t| self.slow_endpoints.contains_key(t)))
    }

    /// [`State::is_slow`] of `destination` (one the relay holds nothing
    /// of is not).
    fn is_slow_name(&self, destination: &str) -> bool {
        self.held.get(destination).is_some_and(|h| self.is_slow(h))
    }

    /// What tells `destination`'s waiting rows and requests out that it
    /// turned slow (made the first time it is asked for).
    fn slowed(&mut self, destination: &str) -> Arc<Notify> {
        self.update(destination, |h| h.slowed.get_or_insert_default().clone())
    }

    /// `f` of `destination`'s holding (its name is allocated only the
    /// first time: this runs for every row).
    fn update<T>(&mut self, destination: &str, f: impl FnOnce(&mut Holding) -> T) -> T {
        if let Some(h) = self.held.get_mut(destination) {
            return f(h);
        }
        f(self.held.entry(destination.to_string()).or_default())
    }

    /// `destination` turns slow (`prompt` false) or prompt: its tenant's
    /// count follows.
    fn set_prompt(&mut self, destination: &str, prompt: bool) {
        let changed = self.update(destination, |h| {
            if h.prompt == prompt {
                return None;
            }
            h.prompt = prompt;
            if let Some(slowed) = h.slowed.as_ref().filter(|_| !prompt) {
                slowed.notify_waiters();
            }
            let limited = h.endpoint.as_ref().is_some_and(|e| e.1.is_some());
            Some((h.tenant().cloned(), limited))
        });
        let Some((tenant, limited)) = changed else {
            return;
        };
        self.changed = true;
        if !prompt {
            self.watched.insert(destination.to_string());
        } else if !limited {
            self.watched.remove(destination);
        }
        if let Some(tenant) = tenant {
            self.count_slow(tenant, prompt);
        }
    }

    /// The destinations a claim may cap or an admission may hold back:
    /// those watched (slow, or rate-limited endpoints) and every resolved
    /// endpoint of a tenant with a slow one (suspect), each once.
    fn watched_and_suspects(&self) -> HashSet<&String> {
        let suspects = self
            .slow_endpoints
            .keys()
            .filter_map(|t| self.endpoints.get(t))
            .flatten();
        self.watched.iter().chain(suspects).collect()
    }

    /// The rows of `rows` (the newest first) whose endpoints are slow or
    /// suspect, taken out while those endpoints hold more than
    /// [`MAX_SLOW_ENDPOINT_REQUESTS`] rows: a claim caps only the endpoints
    /// it knows, and one of a slow tenant's endpoints met for the first time
    /// is suspect only once resolved. They go back unattempted, due `now`
    /// (the next claim caps their endpoints).
    fn beyond_the_bound(
        &mut self,
        rows: &mut Vec<OutboxRow>,
        now: DateTime<Utc>,
    ) -> Vec<(OutboxRow, DateTime<Utc>)> {
        // (every batch comes here: with no tenant's endpoint slow, no row
        // can be beyond the bound, and nothing needs counting)
        if self.slow_endpoints.is_empty() {
            return Vec::new();
        }
        let slow_endpoint = |state: &State, name: &str| {
            state
                .held
                .get(name)
                .is_some_and(|h| h.endpoint.is_some() && state.is_slow(h))
        };
        let held: usize = self
            .watched_and_suspects()
            .into_iter()
            .filter(|name| slow_endpoint(self, name))
            .filter_map(|name| self.held.get(name))
            .map(|h| h.rows)
            .sum();
        let mut excess = held.saturating_sub(MAX_SLOW_ENDPOINT_REQUESTS);
        if excess == 0 {
            return Vec::new();
        }
        let mut released = Vec::new();
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows.drain(..).rev() {
            if excess > 0 && slow_endpoint(self, &row.destination) {
                if let Some(h) = self.held.get_mut(&row.destination) {
                    h.rows = h.rows.saturating_sub(1);
                }
                excess -= 1;
                released.push((row, now));
            } else {
                kept.push(row);
            }
        }
        kept.reverse();
        *rows = kept;
        released
    }

    fn count_slow(&mut self, tenant: Arc<str>, prompt: bool) {
        if prompt {
            if let Some(n) = self.slow_endpoints.get_mut(&tenant) {
                *n -= 1;
                if *n == 0 {
                    self.slow_endpoints.remove(&tenant);
                }
            }
        } else {
            *self.slow_endpoints.entry(tenant).or_default() += 1;
        }
    }
}

/// What a claim reserved per destination: (name, slots, tokens), given
/// back when it returns, less what it claimed. Reserving keeps lanes that
/// claim at the same time from each taking the same free slots.
#[derive(Debug, Default)]
pub(crate) struct Reserved(Vec<(String, usize, i64)>);

impl Fairness {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let out = f(&mut state);
        if std::mem::take(&mut state.changed) {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        out
    }

    /// Changes so far of what is slow (compare two readings).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The claim's per-destination caps (those not known to be prompt: their
    /// free slots; rate limited ones: their whole tokens), both reserved
    /// until [`Fairness::claimed`] (a tenant's endpoint's tokens are spent
    /// by [`Fairness::admit`] instead).
    /// `limit`: the most rows the claim takes in all (nothing beyond it is
    /// reserved).
    pub(crate) fn caps(
        &self,
        config: &HookboxConfig,
        now: DateTime<Utc>,
        limit: i64,
    ) -> (Vec<(String, i64)>, Reserved) {
        self.with(|state| {
            let mut caps = Vec::new();
            let mut reserved = Vec::new();
            // tenants' endpoints (not configured: they have the default
            // slots) found slow or suspect are capped as configured
            // destinations are; rate-limited ones at their whole tokens
            let mut endpoints: Vec<(String, bool)> = state
                .watched_and_suspects()
                .into_iter()
                .filter_map(|name| Some((name, state.held.get(name)?)))
                .filter(|(name, h)| {
                    (state.is_slow(h) || h.endpoint.as_ref().is_some_and(|e| e.1.is_some()))
                        && config.destination(name).is_none()
                })
                .map(|(name, h)| (name.clone(), state.is_slow(h)))
                .collect();
            endpoints.sort();
            // the slow ones' requests, all together, within the bound: the
            // slots left are handed out from a point that moves each claim
            let mut left = MAX_SLOW_ENDPOINT_REQUESTS.saturating_sub(
                endpoints
                    .iter()
                    .filter(|(_, slow)| *slow)
                    .filter_map(|(name, _)| state.held.get(name))
                    .map(|h| h.rows)
                    .sum(),
            );
            let start = state.turn % endpoints.len().max(1);
            endpoints.rotate_left(start);
            let mut cut_short = None;
            for (i, (name, slow)) in endpoints.iter().enumerate() {
                let Some(h) = state.held.get_mut(name) else {
                    continue;
                };
                let mut cap = limit;
                let mut slots = 0;
                if *slow {
                    let wanted = DEFAULT_MAX_IN_FLIGHT.saturating_sub(h.rows);
                    let free = wanted.min(left);
                    left -= free;
                    if free < wanted && cut_short.is_none() {
                        // the next claim starts with this one
                        cut_short = Some(i);
                    }
                    cap = i64::try_from(free).unwrap_or(i64::MAX).min(limit);
                    slots = usize::try_from(cap).unwrap_or(0);
                    h.rows += slots;
                }
                if let Some(rate) = h.endpoint.as_ref().and_then(|e| e.1) {
                    h.refill(rate, now);
                    cap = cap.min(h.tokens.floor() as i64).max(0);
                }
                reserved.push((name.clone(), slots, 0));
                caps.push((name.clone(), cap));
            }
            if let Some(i) = cut_short {
                state.turn = start + i;
            }
            for d in config.destinations() {
                let holding = state.held.entry(d.name.clone()).or_default();
                let free = d.max_in_flight.saturating_sub(holding.rows);
                let mut cap: Option<i64> =
                    (!holding.prompt).then(|| i64::try_from(free).unwrap_or(i64::MAX).min(limit));
                let mut tokens = 0;
                if let Some(rate) = d.rate_limit_per_sec {
                    holding.refill(rate, now);
                    let whole = holding.tokens.floor() as i64;
                    let take = cap.map_or(whole, |c| c.min(whole)).max(0);
                    holding.tokens -= take as f64;
                    tokens = take;
                    cap = Some(take);
                }
                if let Some(cap) = cap {
                    let slots = if holding.prompt {
                        0
                    } else {
                        usize::try_from(cap).unwrap_or(0)
                    };
                    holding.rows += slots;
                    reserved.push((d.name.clone(), slots, tokens));
                    caps.push((d.name.clone(), cap));
                }
            }
            (caps, Reserved(reserved))
        })
    }

    /// A claim took `rows` (a destination name per row): they are held,
    /// and what it reserved is given back (the tokens less those used).
    pub(crate) fn claimed<'a>(&self, reserved: Reserved, rows: impl Iterator<Item = &'a str>) {
        self.with(|state| {
            let mut taken: HashMap<&str, i64> = HashMap::with_capacity(128);
            for destination in rows {
                *taken.entry(destination).or_default() += 1;
            }
            for (destination, n) in &taken {
                state.update(destination, |h| h.rows += usize::try_from(*n).unwrap_or(0));
            }
            for (name, slots, tokens) in &reserved.0 {
                let used = taken.get(name.as_str()).copied().unwrap_or(0);
                if let Some(h) = state.held.get_mut(name) {
                    h.rows = h.rows.saturating_sub(*slots);
                    h.tokens += (tokens - used).max(0) as f64;
                }
            }
        });
    }

    /// The tenants' endpoints a claim's rows go to, as resolved: their
    /// tenants and rate limits are known from now on. Rows of slow or
    /// suspect endpoints beyond [`MAX_SLOW_ENDPOINT_REQUESTS`] are taken out
    /// (due now). Then the rows of a
    /// rate-limited endpoint spend its tokens in order; those without one
    /// are taken out of `rows` and returned with when a token will be there
    /// (they go back unattempted, due then, and are no longer held).
    pub(crate) fn admit(
        &self,
        endpoints: &[&Destination],
        rows: &mut Vec<OutboxRow>,
        now: DateTime<Utc>,
    ) -> Vec<(OutboxRow, DateTime<Utc>)> {
        self.with(|state| {
            for d in endpoints {
                let Some(tenant) = &d.tenant else { continue };
                let (known, prompt) = state.update(&d.name, |h| {
                    let known = h.tenant().is_some_and(|t| **t == **tenant);
                    match &mut h.endpoint {
                        // (runs for every endpoint of every batch: the
                        // tenant is allocated only when first learnt)
                        Some((_, rate)) if known => *rate = d.rate_limit_per_sec,
                        _ => h.endpoint = Some((Arc::from(tenant.as_str()), d.rate_limit_per_sec)),
                    }
                    (known, h.prompt)
                });
                if d.rate_limit_per_sec.is_some() {
                    state.watched.insert(d.name.clone());
                }
                if !known {
                    // (an endpoint moves to another tenant only by being
                    // deleted: its name is never reused)
                    let tenant: Arc<str> = Arc::from(tenant.as_str());
                    state
                        .endpoints
                        .entry(tenant.clone())
                        .or_default()
                        .push(d.name.clone());
                    if !prompt {
                        state.count_slow(tenant, false);
                    }
                    state.changed = true;
                }
            }
            let mut released = state.beyond_the_bound(rows, now);
            if !endpoints.iter().any(|d| d.rate_limit_per_sec.is_some()) {
                return released;
            }
            let mut over = Vec::new();
            let mut kept = Vec::with_capacity(rows.len());
            for row in rows.drain(..) {
                let Some(h) = state.held.get_mut(&row.destination) else {
                    kept.push(row);
                    continue;
                };
                let Some(rate) = h.endpoint.as_ref().and_then(|e| e.1) else {
                    kept.push(row);
                    continue;
                };
                h.refill(rate, now);
                if h.tokens >= 1.0 {
                    h.tokens -= 1.0;
                    kept.push(row);
                } else {
                    // a token per 1/rate s: this one's after those owed
                    // (the tokens go below zero until given back below)
                    let wait = (1.0 - h.tokens) / f64::from(rate.max(1));
                    h.tokens -= 1.0;
                    h.rows = h.rows.saturating_sub(1);
                    let due = now + chrono::Duration::microseconds((wait * 1e6).min(3.6e9) as i64);
                    over.push((row, due));
                }
            }
            // the owed tokens are not spent: those rows were not attempted
            for (row, _) in &over {
                if let Some(h) = state.held.get_mut(&row.destination) {
                    h.tokens += 1.0;
                }
            }
            *rows = kept;
            released.extend(over);
            released
        })
    }

    /// Rows of `destination` still in flight when their lane issued its
    /// next statement: the destination is slow (not prompt); its rows
    /// waiting for a slot are told.
    pub(crate) fn straggling(&self, destination: &str) {
        self.with(|state| state.set_prompt(destination, false));
    }

    /// `destination` had rows still in flight at a lane's statement and has
    /// not answered promptly since (or is a suspect endpoint): its rows in
    /// flight hold neither a lane's room nor its next statement.
    #[cfg(test)]
    pub(crate) fn is_slow(&self, destination: &str) -> bool {
        self.with(|state| state.is_slow_name(destination))
    }

    /// Rows held (claimed or reserved, not finished) of `destination`.
    #[cfg(test)]
    pub(crate) fn held(&self, destination: &str) -> usize {
        self.with(|state| state.held.get(destination).map_or(0, |h| h.rows))
    }

    /// The rows of `in_flight` (rows per destination) of destinations not
    /// slow: what holds a lane.
    pub(crate) fn holding(&self, in_flight: &HashMap<String, usize>) -> usize {
        self.with(|state| {
            in_flight
                .iter()
                .filter(|(d, _)| !state.is_slow_name(d))
                .map(|(_, n)| *n)
                .sum()
        })
    }

    /// For a request of `destination` about to take one of its host's
    /// slots: what tells it that the destination turned slow (it gives the
    /// slot back then), or `None` when the destination is slow or suspect
    /// already (its requests are bounded apart and take none).
    pub(crate) fn prompt_watch(&self, destination: &str) -> Option<Arc<Notify>> {
        self.with(|state| (!state.is_slow_name(destination)).then(|| state.slowed(destination)))
    }

    /// What tells `destination`'s rows waiting for a slot that it turned
    /// slow.
    pub(crate) fn slowed(&self, destination: &str) -> Arc<Notify> {
        self.with(|state| state.slowed(destination))
    }

    /// A held row of `destination` finished; `prompt`: its request was
    /// answered before its lane's next statement (the destination is
    /// prompt); `delivered`: it was delivered. True when the destination is
    /// slow (its rows hold no lane).
    pub(crate) fn finished(&self, destination: &str, prompt: bool, delivered: bool) -> bool {
        self.with(|state| {
            let first = state.update(destination, |h| {
                h.rows = h.rows.saturating_sub(1);
                let first = delivered && !h.delivered;
                h.delivered |= delivered;
                first
            });
            // a suspect is no longer
            state.changed |= first;
            if prompt {
                state.set_prompt(destination, true);
            }
            state.is_slow_name(destination)
        })
    }
}

#[cfg(test)]
#[path = "fairness_tests.rs"]
mod tests;
