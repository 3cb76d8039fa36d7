//! A destination: where the relay delivers outbound webhooks (its
//! [`Target`], per transport, in `target`), and its schedule, caps and
//! breaker.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::target::{HttpTarget, RawTarget, Target, TransportKind};
use super::{ConfigError, is_name};
use crate::subscription::{RawSubscription, Subscription};

/// Backoff after failed delivery attempts 1, 2, 3, …: 5 s, 5 min, 30 min,
/// 2 h, 5 h, 10 h, 10 h (the last step repeats if `max_attempts` is larger).
pub const DEFAULT_BACKOFF_SECS: [u64; 7] = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];

/// Destination names starting with this are tenants' endpoints' ids
/// (`ep_…`, migration 20): data, not configuration.
pub const ENDPOINT_PREFIX: &str = "ep_";

/// Whether `name` is a tenant's endpoint's (not a configured destination's).
pub fn is_endpoint(name: &str) -> bool {
    name.starts_with(ENDPOINT_PREFIX)
}

/// Default per-request timeout of a delivery.
pub const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest per-request timeout accepted (a relay run lasts about a minute).
pub const MAX_DESTINATION_TIMEOUT: Duration = Duration::from_secs(50);

/// Default concurrent requests to one destination.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10;

/// One destination of outbound webhooks, validated and ready to use.
#[derive(Clone)]
pub struct Destination {
    /// Name (what `outbox.destination` holds).
    pub name: String,
    /// Where its deliveries go, and how (`"type"`: http, eventbridge, sqs).
    pub target: Target,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Attempts before a row is dead.
    pub max_attempts: u32,
    /// Most concurrent requests to this destination.
    pub max_in_flight: usize,
    /// Deliver rows of one aggregate one at a time, oldest first. Always
    /// true for a FIFO queue: its groups' order is only the rows' order when
    /// the relay hands SQS one row of an aggregate at a time (absent, it is
    /// implied; `"ordered": false` is refused).
    pub ordered: bool,
    /// Delay after failed attempt n is `backoff[n - 1]` (the last repeats), ±20%.
    pub backoff: Vec<Duration>,
    /// The published events it gets (`None`: only those published to it by
    /// name). See [`crate::subscription`].
    pub subscription: Option<Subscription>,
    /// The breaker opens after this many failed attempts in a row.
    pub trip_after: u32,
    /// How long an open breaker stops deliveries before one probe.
    pub cool_down: Duration,
    /// Failing continuously this long disables the destination (`None`:
    /// never).
    pub disable_after: Option<Duration>,
    /// Most requests started per second (`None`: no limit beyond
    /// `max_in_flight`); the relay claims no more of its rows than that.
    pub rate_limit_per_sec: Option<u32>,
    /// The tenant whose endpoint this is (`None`: a configured
    /// destination). One slow endpoint makes the relay wary of its tenant's
    /// others (`outbox::relay::fairness`).
    pub tenant: Option<String>,
}

/// Default failed attempts in a row that open a destination's breaker.
pub const DEFAULT_TRIP_AFTER: u32 = 5;
/// Default cool-down of an open breaker.
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(60);
/// Default time of continuous failure after which a destination is
/// disabled: 5 days.
pub const DEFAULT_DISABLE_AFTER: Duration = Duration::from_secs(5 * 86_400);

impl Destination {
    /// Its transport.
    pub fn kind(&self) -> TransportKind {
        self.target.kind()
    }

    /// Its HTTP endpoint, when it is an HTTP destination.
    pub fn http(&self) -> Option<&HttpTarget> {
        match &self.target {
            Target::Http(http) => Some(http),
            _ => None,
        }
    }
}

impl fmt::Debug for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Destination")
            .field("name", &self.name)
            .field("target", &self.target)
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .field("max_in_flight", &self.max_in_flight)
            .field("ordered", &self.ordered)
            .field("subscription", &self.subscription)
            .field("trip_after", &self.trip_after)
            .field("cool_down", &self.cool_down)
            .field("disable_after", &self.disable_after)
            .field("rate_limit_per_sec", &self.rate_limit_per_sec)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDestination {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    secrets: Option<Vec<String>>,
    #[serde(default)]
    bus: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    queue_url: Option<String>,
    #[serde(default)]
    max_entry_bytes: Option<usize>,
    #[serde(default)]
    timeout_secs: Option<f64>,
    #[serde(default)]
    max_attempts: Option<u32>,
    #[serde(default)]
    max_in_flight: Option<usize>,
    #[serde(default)]
    ordered: Option<bool>,
    #[serde(default)]
    allowed_networks: Option<Vec<String>>,
    #[serde(default)]
    backoff_secs: Option<Vec<f64>>,
    #[serde(default)]
    subscribe: Option<RawSubscription>,
    #[serde(default)]
    trip_after: Option<u32>,
    #[serde(default)]
    cool_down_secs: Option<f64>,
    #[serde(default)]
    disable_after_hours: Option<f64>,
    #[serde(default)]
    rate_limit_per_sec: Option<u32>,
}

fn destination_error(
    destination: &str,
    field: impl Into<String>,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Destination {
        destination: destination.to_string(),
        field: field.into(),
        reason: reason.into(),
    }
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value > 0.0 && value <= 366.0 * 86_400.0)
        .then(|| Duration::from_secs_f64(value))
}

impl RawDestination {
    pub(super) fn validate(self, name: &str) -> Result<Destination, ConfigError> {
        let err = |field: &str, reason: String| destination_error(name, field, reason);
        if !is_name(name) {
            return Err(err(
                "name",
                "destination names are stored in outbox rows: 1 to 64 lower-case letters, digits, \
                 '-' and '_'"
                    .into(),
            ));
        }
        if is_endpoint(name) {
            return Err(err(
                "name",
                "names starting with `ep_` are tenants' endpoints' (docs/tenants.md): choose \
                 another name"
                    .into(),
            ));
        }
        let target = RawTarget {
            kind: self.kind,
            url: self.url,
            secrets: self.secrets,
            allowed_networks: self.allowed_networks,
            bus: self.bus,
            source: self.source,
            queue_url: self.queue_url,
            max_entry_bytes: self.max_entry_bytes,
        }
        .validate()
        .map_err(|(field, reason)| err(&field, reason))?;
        let ordered = match (self.ordered, target.is_fifo()) {
            (Some(false), true) => {
                return Err(err(
                    "ordered",
                    "false, but a FIFO queue (its name ends in .fifo) is delivered in order per \
                     aggregate: leave `ordered` out or set it to true (a standard queue takes \
                     deliveries out of order)"
                        .into(),
                ));
            }
            (Some(ordered), _) => ordered,
            (None, fifo) => fifo,
        };
        let timeout = match self.timeout_secs {
            None => DEFAULT_DESTINATION_TIMEOUT,
            Some(v) => seconds(v)
                .filter(|d| *d <= MAX_DESTINATION_TIMEOUT)
                .ok_or_else(|| {
                    err(
                        "timeout_secs",
                        format!("{v} is outside (0, {}]", MAX_DESTINATION_TIMEOUT.as_secs()),
                    )
                })?,
        };
        let backoff = match self.backoff_secs {
            None => DEFAULT_BACKOFF_SECS
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
            Some(steps) if steps.is_empty() => {
                return Err(err("backoff_secs", "needs at least one delay".into()));
            }
            Some(steps) => steps
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    seconds(*v).ok_or_else(|| {
                        err(
                            &format!("backoff_secs[{i}]"),
                            format!("{v} is not a positive number of seconds (at most a year)"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let max_attempts = match self.max_attempts {
            None => u32::try_from(backoff.len() + 1).unwrap_or(u32::MAX),
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("max_attempts", format!("{n} is outside 1..=1000"))),
        };
        let max_in_flight = match self.max_in_flight {
            None => DEFAULT_MAX_IN_FLIGHT,
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("max_in_flight", format!("{n} is outside 1..=1000"))),
        };
        let subscription = self
            .subscribe
            .map(RawSubscription::validate)
            .transpose()
            .map_err(|(field, reason)| err(&field, reason))?;
        let trip_after = match self.trip_after {
            None => DEFAULT_TRIP_AFTER,
            Some(n) if (1..=1_000).contains(&n) => n,
            Some(n) => return Err(err("trip_after", format!("{n} is outside 1..=1000"))),
        };
        let cool_down = match self.cool_down_secs {
            None => DEFAULT_COOL_DOWN,
            Some(v) => seconds(v)
                .filter(|d| *d >= Duration::from_secs(1) && *d <= Duration::from_secs(86_400))
                .ok_or_else(|| err("cool_down_secs", format!("{v} is outside [1, 86400]")))?,
        };
        let disable_after = match self.disable_after_hours {
            None => Some(DEFAULT_DISABLE_AFTER),
            Some(0.0) => None,
            Some(v) => Some(seconds(v * 3_600.0).ok_or_else(|| {
                err(
                    "disable_after_hours",
                    format!("{v} is not a positive number of hours (at most a year; 0: never)"),
                )
            })?),
        };
        let rate_limit_per_sec = match self.rate_limit_per_sec {
            None => None,
            Some(n) if (1..=100_000).contains(&n) => Some(n),
            Some(n) => {
                return Err(err(
                    "rate_limit_per_sec",
                    format!("{n} is outside 1..=100000 (leave it out for no limit)"),
                ));
            }
        };
        Ok(Destination {
            name: name.to_string(),
            target,
            timeout,
            max_attempts,
            max_in_flight,
            ordered,
            backoff,
            subscription,
            trip_after,
            cool_down,
            disable_after,
            rate_limit_per_sec,
            tenant: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ConfigError, HookboxConfig};

    fn parse(destination: serde_json::Value) -> Result<HookboxConfig, ConfigError> {
        HookboxConfig::parse(
            &serde_json::json!({ "destinations": { "orders": destination } }).to_string(),
            "test",
        )
    }

    const FIFO: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo";
    const STANDARD: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders";

    #[test]
    fn a_fifo_queue_is_ordered_without_saying_so() {
        for ordered in [None, Some(true)] {
            let mut destination = serde_json::json!({ "type": "sqs", "queue_url": FIFO });
            if let Some(ordered) = ordered {
                destination["ordered"] = ordered.into();
            }
            let config = parse(destination).expect("valid");
            assert!(
                config.destination("orders").expect("orders").ordered,
                "ordered: {ordered:?}"
            );
        }
        // a standard queue is ordered only when it says so
        let config =
            parse(serde_json::json!({ "type": "sqs", "queue_url": STANDARD })).expect("valid");
        assert!(!config.destination("orders").expect("orders").ordered);
    }

    #[test]
    fn a_fifo_queue_said_to_be_unordered_is_refused_naming_the_destination() {
        let refused = parse(serde_json::json!({
            "type": "sqs", "queue_url": FIFO, "ordered": false
        }))
        .expect_err("refused");
        let text = refused.to_string();
        assert!(
            text.starts_with("destination \"orders\": ordered: false, but a FIFO queue"),
            "{text}"
        );
        assert!(
            parse(serde_json::json!({ "type": "sqs", "queue_url": STANDARD, "ordered": false }))
                .is_ok()
        );
    }
}
