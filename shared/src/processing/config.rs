//! Processor settings, from the environment (`std::env::var` in the
//! function, a map in tests).
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `HOOKBOX_RETRY_SCHEDULE` | `60,300,900` | seconds of invisibility after receive 1, 2, 3, … (the last value repeats) |
//! | `HOOKBOX_MAX_RECEIVE_COUNT` | `4` | the queue's redrive `maxReceiveCount`: a retry on this receive marks the row dead |
//! | `HOOKBOX_MAX_DEFERRAL_SECONDS` | `86400` | deferred longer than this → quarantined ("prerequisite never arrived") |
//! | `HOOKBOX_LEASE_SECONDS` | `120` | how long a claim holds the batch's rows (at least until the invocation's deadline) |

use std::time::Duration;

use crate::queue::MAX_VISIBILITY;

/// How the processor retries, defers and leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorConfig {
    /// Visibility timeout set after receive n is `retry_schedule[n - 1]`
    /// (the last entry for later receives). Never empty.
    pub retry_schedule: Vec<Duration>,
    /// The queue's `maxReceiveCount`: the receive on which a retryable
    /// failure marks the row dead (SQS then moves the message to the DLQ).
    pub max_receive_count: u32,
    /// A row deferred for longer than this is quarantined.
    pub max_deferral_age: Duration,
    /// Lease of claimed rows. Must outlast the invocation (it is extended to
    /// the deadline plus [`ProcessorConfig::deadline_margin`] when the
    /// deadline is known) and should be shorter than the queue's visibility
    /// timeout, so a crashed invocation's redelivery finds its rows free.
    pub lease: Duration,
    /// Messages not started this long before the invocation's deadline are
    /// released and retried instead of risking a timeout of the whole batch.
    pub deadline_margin: Duration,
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        Self {
            retry_schedule: vec![
                Duration::from_secs(60),
                Duration::from_secs(300),
                Duration::from_secs(900),
            ],
            max_receive_count: 4,
            max_deferral_age: Duration::from_secs(24 * 60 * 60),
            lease: Duration::from_secs(120),
            deadline_margin: Duration::from_secs(5),
        }
    }
}

/// A processor setting is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is invalid: {reason}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What is expected.
    pub reason: String,
}

impl ProcessorConfig {
    /// Reads the `HOOKBOX_*` variables of the table above; unset or blank
    /// variables keep their defaults.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        let var = |name: &'static str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(|v| (name, v))
        };
        if let Some((variable, value)) = var("HOOKBOX_RETRY_SCHEDULE") {
            let schedule = value
                .split(',')
                .map(|s| s.trim().parse::<u64>().map(Duration::from_secs))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ConfigError {
                    variable,
                    value: value.clone(),
                    reason: format!("expected comma-separated whole seconds ({e})"),
                })?;
            if let Some(too_long) = schedule.iter().find(|d| **d > MAX_VISIBILITY) {
                return Err(ConfigError {
                    variable,
                    value: value.clone(),
                    reason: format!(
                        "{} s is over the queue's 12 h visibility limit",
                        too_long.as_secs()
                    ),
                });
            }
            config.retry_schedule = schedule;
        }
        if let Some((variable, value)) = var("HOOKBOX_MAX_RECEIVE_COUNT") {
            config.max_receive_count = match value.parse::<u32>() {
                Ok(n @ 1..=1000) => n,
                _ => {
                    return Err(ConfigError {
                        variable,
                        value,
                        reason: "expected the queue's maxReceiveCount, 1 to 1000".into(),
                    });
                }
            };
        }
        if let Some((variable, value)) = var("HOOKBOX_MAX_DEFERRAL_SECONDS") {
            config.max_deferral_age = seconds(variable, value)?;
        }
        if let Some((variable, value)) = var("HOOKBOX_LEASE_SECONDS") {
            config.lease = seconds(variable, value)?;
        }
        Ok(config)
    }

    /// The visibility timeout to set after receive `receive_count` (1-based).
    pub fn backoff(&self, receive_count: u32) -> Duration {
        let index = usize::try_from(receive_count.max(1) - 1).unwrap_or(usize::MAX);
        self.retry_schedule
            .get(index)
            .or(self.retry_schedule.last())
            .copied()
            .unwrap_or(Duration::from_secs(60))
    }

    /// True when a retryable failure on this receive must mark the row dead.
    pub fn is_last_receive(&self, receive_count: u32) -> bool {
        receive_count >= self.max_receive_count
    }
}

fn seconds(variable: &'static str, value: String) -> Result<Duration, ConfigError> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Duration::from_secs(n)),
        _ => Err(ConfigError {
            variable,
            value,
            reason: "expected a positive number of seconds".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;

    #[test]
    fn defaults_follow_the_design() {
        let c = ProcessorConfig::from_env(env(&[])).expect("defaults");
        assert_eq!(c, ProcessorConfig::default());
        assert_eq!(c.backoff(1), Duration::from_secs(60));
        assert_eq!(c.backoff(2), Duration::from_secs(300));
        assert_eq!(c.backoff(3), Duration::from_secs(900));
        assert_eq!(c.backoff(4), Duration::from_secs(900), "last repeats");
        assert_eq!(c.backoff(0), Duration::from_secs(60), "0 counts as 1");
        assert!(!c.is_last_receive(3));
        assert!(c.is_last_receive(4));
        assert_eq!(c.max_deferral_age, Duration::from_secs(86_400));
    }

    #[test]
    fn every_setting_can_be_overridden() {
        let c = ProcessorConfig::from_env(env(&[
            ("HOOKBOX_RETRY_SCHEDULE", " 1, 2 ,3,4 "),
            ("HOOKBOX_MAX_RECEIVE_COUNT", "5"),
            ("HOOKBOX_MAX_DEFERRAL_SECONDS", "3600"),
            ("HOOKBOX_LEASE_SECONDS", "45"),
        ]))
        .expect("valid");
        assert_eq!(
            c.retry_schedule,
            [1, 2, 3, 4].map(Duration::from_secs).to_vec()
        );
        assert_eq!(c.max_receive_count, 5);
        assert_eq!(c.max_deferral_age, Duration::from_secs(3600));
        assert_eq!(c.lease, Duration::from_secs(45));
    }

    #[test]
    fn bad_values_name_the_variable_and_the_value() {
        let e = ProcessorConfig::from_env(env(&[("HOOKBOX_RETRY_SCHEDULE", "60,5m")]))
            .expect_err("not seconds");
        assert_eq!(e.variable, "HOOKBOX_RETRY_SCHEDULE");
        assert!(e.to_string().contains("\"60,5m\""), "{e}");
        let e = ProcessorConfig::from_env(env(&[("HOOKBOX_RETRY_SCHEDULE", "60,50000")]))
            .expect_err("over 12 h");
        assert!(e.reason.contains("12 h"), "{e}");
        let e = ProcessorConfig::from_env(env(&[("HOOKBOX_MAX_RECEIVE_COUNT", "0")]))
            .expect_err("zero");
        assert_eq!(e.variable, "HOOKBOX_MAX_RECEIVE_COUNT");
        let e = ProcessorConfig::from_env(env(&[("HOOKBOX_LEASE_SECONDS", "-1")]))
            .expect_err("negative");
        assert_eq!(e.variable, "HOOKBOX_LEASE_SECONDS");
    }
}
