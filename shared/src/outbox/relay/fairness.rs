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
//! same way, at their free slots of the default `max_in_flight`; and a slow
//! destination's rows in flight hold neither their lane's room nor its next
//! statement (`flights`), so one tenant's many hanging endpoints never stall
//! a lane. Fairness between tenants within a claim is the claim's own
//! (migration 24: each tenant one share, split among its endpoints).
//!
//! A destination with `rate_limit_per_sec` is also capped by a token
//! bucket (one second's worth, refilled on the relay's clock): a claim
//! takes at most the whole tokens left, and spends one per row it claimed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::config::{DEFAULT_MAX_IN_FLIGHT, HookboxConfig};

/// What one relay holds per destination.
#[derive(Debug, Default)]
pub(crate) struct Fairness(Mutex<HashMap<String, Holding>>);

#[derive(Debug)]
struct Holding {
    /// Rows claimed and not finished (in any lane).
    rows: usize,
    /// No straggler since the last attempt that ended before its lane's
    /// next statement: not capped.
    prompt: bool,
    /// Notified when it turns slow (rows waiting for a slot give up).
    slowed: Arc<Notify>,
    /// Rate limit: tokens left, and when they were counted.
    tokens: f64,
    counted_at: Option<DateTime<Utc>>,
}

impl Default for Holding {
    fn default() -> Self {
        Self {
            rows: 0,
            prompt: true,
            slowed: Arc::default(),
            tokens: 0.0,
            counted_at: None,
        }
    }
}

/// What a claim reserved per destination: (name, slots, tokens), given
/// back when it returns, less what it claimed. Reserving keeps lanes that
/// claim at the same time from each taking the same free slots.
#[derive(Debug, Default)]
pub(crate) struct Reserved(Vec<(String, usize, i64)>);

impl Fairness {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Holding>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The claim's per-destination caps (those not known to be prompt: their
    /// free slots; rate limited ones: their whole tokens), both reserved
    /// until [`Fairness::claimed`].
    /// `limit`: the most rows the claim takes in all (nothing beyond it is
    /// reserved).
    pub(crate) fn caps(
        &self,
        config: &HookboxConfig,
        now: DateTime<Utc>,
        limit: i64,
    ) -> (Vec<(String, i64)>, Reserved) {
        self.with(|held| {
            let mut caps = Vec::new();
            let mut reserved = Vec::new();
            // tenants' endpoints (not configured: they have the default
            // slots) found slow are capped as configured destinations are
            let endpoints: Vec<String> = held
                .iter()
                .filter(|(name, h)| !h.prompt && config.destination(name).is_none())
                .map(|(name, _)| name.clone())
                .collect();
            for name in &endpoints {
                let Some(h) = held.get_mut(name) else {
                    continue;
                };
                let free = DEFAULT_MAX_IN_FLIGHT.saturating_sub(h.rows);
                let cap = i64::try_from(free).unwrap_or(i64::MAX).min(limit);
                let slots = usize::try_from(cap).unwrap_or(0);
                h.rows += slots;
                reserved.push((name.clone(), slots, 0));
                caps.push((name.clone(), cap));
            }
            for d in config.destinations() {
                let holding = held.entry(d.name.clone()).or_default();
                let free = d.max_in_flight.saturating_sub(holding.rows);
                let mut cap: Option<i64> =
                    (!holding.prompt).then(|| i64::try_from(free).unwrap_or(i64::MAX).min(limit));
                let mut tokens = 0;
                if let Some(rate) = d.rate_limit_per_sec {
                    let rate = f64::from(rate);
                    let elapsed = holding.counted_at.map_or(1.0, |at| {
                        (now - at).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
                    });
                    holding.tokens = (holding.tokens + elapsed.max(0.0) * rate).min(rate);
                    holding.counted_at = Some(now);
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
        self.with(|held| {
            let mut taken: HashMap<&str, i64> = HashMap::new();
            for destination in rows {
                *taken.entry(destination).or_default() += 1;
            }
            for (destination, n) in &taken {
                update(held, destination, |h| {
                    h.rows += usize::try_from(*n).unwrap_or(0)
                });
            }
            for (name, slots, tokens) in &reserved.0 {
                let used = taken.get(name.as_str()).copied().unwrap_or(0);
                if let Some(h) = held.get_mut(name) {
                    h.rows = h.rows.saturating_sub(*slots);
                    h.tokens += (tokens - used).max(0) as f64;
                }
            }
        });
    }

    /// Rows of `destination` still in flight when their lane issued its
    /// next statement: the destination is slow (not prompt); its rows
    /// waiting for a slot are told.
    pub(crate) fn straggling(&self, destination: &str) {
        self.with(|held| {
            update(held, destination, |h| {
                if h.prompt {
                    h.prompt = false;
                    h.slowed.notify_waiters();
                }
            })
        });
    }

    /// `destination` had rows still in flight at a lane's statement and has
    /// not answered promptly since: its rows in flight hold neither a lane's
    /// room nor its next statement.
    pub(crate) fn is_slow(&self, destination: &str) -> bool {
        self.with(|held| held.get(destination).is_some_and(|h| !h.prompt))
    }

    /// What tells `destination`'s rows waiting for a slot that it turned
    /// slow.
    pub(crate) fn slowed(&self, destination: &str) -> Arc<Notify> {
        self.with(|held| update(held, destination, |h| h.slowed.clone()))
    }

    /// A held row of `destination` finished; `prompt`: its request was
    /// answered before its lane's next statement (the destination is
    /// prompt).
    pub(crate) fn finished(&self, destination: &str, prompt: bool) {
        self.with(|held| {
            update(held, destination, |h| {
                h.rows = h.rows.saturating_sub(1);
                if prompt {
                    h.prompt = true;
                }
            })
        });
    }
}

/// `f` of `destination`'s holding (its name is allocated only the first
/// time: this runs for every row).
fn update<T>(
    held: &mut HashMap<String, Holding>,
    destination: &str,
    f: impl FnOnce(&mut Holding) -> T,
) -> T {
    if let Some(h) = held.get_mut(destination) {
        return f(h);
    }
    f(held.entry(destination.to_string()).or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rate: Option<u32>) -> HookboxConfig {
        let mut a = serde_json::json!({ "url": "http://127.0.0.1:9/a",
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="], "max_in_flight": 3 });
        if let Some(rate) = rate {
            a["rate_limit_per_sec"] = rate.into();
        }
        let text = serde_json::json!({ "destinations": { "a": a, "b": {
            "url": "http://127.0.0.1:9/b",
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="] } } });
        HookboxConfig::parse(&text.to_string(), "test").expect("config")
    }

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + ms).expect("time")
    }

    /// The caps a claim would get now (it claims nothing).
    fn caps(f: &Fairness, cfg: &HookboxConfig) -> Vec<(String, i64)> {
        let (caps, reserved) = f.caps(cfg, at(0), 50);
        f.claimed(reserved, std::iter::empty());
        caps
    }

    #[test]
    fn a_slow_destination_is_capped_at_its_free_slots_until_an_attempt_ends_promptly() {
        let f = Fairness::default();
        let cfg = config(None);
        assert_eq!(caps(&f, &cfg), [], "prompt until found slow");
        f.claimed(Reserved::default(), ["a"; 40].into_iter());
        assert_eq!(caps(&f, &cfg), [], "a prompt destination holds any number");
        f.straggling("a");
        assert_eq!(
            caps(&f, &cfg),
            [("a".to_string(), 0)],
            "a straggler: capped (40 held of 3)"
        );
        for _ in 0..38 {
            f.finished("a", false);
        }
        let (first, r) = f.caps(&cfg, at(0), 50);
        assert_eq!(first, [("a".to_string(), 1)], "2 held of 3");
        let (second, r2) = f.caps(&cfg, at(0), 50);
        assert_eq!(
            second,
            [("a".to_string(), 0)],
            "a claim at the same time: the first one reserved the free slot"
        );
        f.claimed(r2, std::iter::empty());
        f.claimed(r, std::iter::empty());
        assert_eq!(caps(&f, &cfg), [("a".to_string(), 1)], "given back");
        f.finished("a", true);
        assert_eq!(caps(&f, &cfg), [], "answered promptly");
    }

    #[test]
    fn a_slow_endpoint_is_capped_at_the_default_slots_and_holds_no_lane() {
        let f = Fairness::default();
        let cfg = config(None);
        let endpoint = "ep_0123456789abcdef0123456789abcdef";
        f.claimed(Reserved::default(), [endpoint; 4].into_iter());
        assert_eq!(caps(&f, &cfg), [], "prompt until found slow");
        assert!(!f.is_slow(endpoint));
        f.straggling(endpoint);
        assert!(f.is_slow(endpoint), "its rows no longer hold a lane");
        assert_eq!(
            caps(&f, &cfg),
            [(endpoint.to_string(), 6)],
            "the default 10 slots, 4 held"
        );
        f.finished(endpoint, true);
        assert!(!f.is_slow(endpoint));
        assert_eq!(caps(&f, &cfg), [], "answered promptly");
    }

    #[tokio::test]
    async fn turning_slow_tells_the_rows_waiting_for_a_slot() {
        let f = Fairness::default();
        let slowed = f.slowed("a");
        let waiting = slowed.notified();
        tokio::pin!(waiting);
        waiting.as_mut().enable();
        f.straggling("b");
        assert!(
            futures::poll!(waiting.as_mut()).is_pending(),
            "another destination"
        );
        f.straggling("a");
        assert!(futures::poll!(waiting.as_mut()).is_ready());
    }

    #[test]
    fn a_rate_limit_caps_claims_by_the_tokens_left_and_refills_on_the_clock() {
        let f = Fairness::default();
        let cfg = config(Some(4));
        let (caps, r) = f.caps(&cfg, at(0), 50);
        assert_eq!(caps, [("a".to_string(), 4)], "one second's worth to start");
        f.claimed(r, ["a", "a", "a"].into_iter());
        let (caps, r) = f.caps(&cfg, at(0), 50);
        assert_eq!(caps, [("a".to_string(), 1)], "the unused token came back");
        f.claimed(r, ["a"].into_iter());
        let (caps, r) = f.caps(&cfg, at(0), 50);
        assert_eq!(caps, [("a".to_string(), 0)]);
        f.claimed(r, std::iter::empty());
        let (caps, r) = f.caps(&cfg, at(500), 50);
        assert_eq!(caps, [("a".to_string(), 2)], "half a second: two more");
        f.claimed(r, std::iter::empty());
        assert_eq!(
            f.caps(&cfg, at(60_000), 50).0,
            [("a".to_string(), 4)],
            "never more than a second's worth"
        );
    }
}
