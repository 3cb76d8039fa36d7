//! Relay settings, from the environment (`std::env::var` in the function, a
//! map in tests). Destinations themselves are configuration
//! ([`crate::config::Destination`]), next to the partners.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `HOOKBOX_RELAY_BATCH_SIZE` | `50` | rows claimed per batch (a lane records one batch and claims the next in one statement); lanes x batch size at most [`MAX_ROWS_IN_FLIGHT`] |
//! | `HOOKBOX_RELAY_LANES` | `4` | batches in flight at once (while one lane waits for its slowest receiver or the database, the others deliver); `max_in_flight` per destination holds across lanes |
//! | `HOOKBOX_RELAY_REQUESTS_PER_HOST` | `100` | most requests at once to one host (scheme, host and port) of HTTP destinations and tenants' endpoints, however many of them it serves; a slow destination's requests do not count (they are bounded apart); at most [`MAX_ROWS_IN_FLIGHT`] |
//! | `HOOKBOX_RELAY_LEASE_SECONDS` | `30` | longest a batch may take; its requests are cut off by then (each also by its destination's timeout) |
//! | `HOOKBOX_RELAY_IDLE_MILLIS` | `1000` | pause when nothing is due, so delivery latency is about this; with requests in flight, a lane records and claims again this long after its last statement (a slow destination never holds it longer) |
//! | `HOOKBOX_RELAY_STOP_MARGIN_SECONDS` | `5` | stop claiming this long before the invocation's deadline |
//! | `HOOKBOX_SWEEP_AFTER_SECONDS` | `300` | an inbox row overdue by this long is sent to the queue again |
//! | `HOOKBOX_RETENTION_DAYS` | `30` | finished rows older than this are purged (`0`: never; otherwise at least 17, see [`MIN_RETENTION_DAYS`]) |
//! | `HOOKBOX_RETENTION_MODE` | `delete` | `delete`, or `archive` (moved to `inbox_archive`/`outbox_archive`) |
//! | `HOOKBOX_ARCHIVE_RETENTION_DAYS` | `0` | archived rows older than this (counted from when they were received or created) are deleted, with their blob objects (`0`: kept); more than `HOOKBOX_RETENTION_DAYS` |

use std::time::Duration;

use crate::store::Retention;

/// How the relay loops, sweeps and purges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaySettings {
    /// Who holds the leases (`locked_by`): unique per relay instance.
    pub worker: String,
    /// Rows per claim.
    pub batch_size: i64,
    /// Batch loops running at once.
    pub lanes: usize,
    /// Most requests at once to one host (scheme, host and port), whichever
    /// destinations or endpoints they are for; those of a destination found
    /// slow do not count.
    pub requests_per_host: usize,
    /// Longest a batch may take.
    pub lease: Duration,
    /// Extra lease after the batch deadline, so the results are recorded
    /// before another relay may claim the rows.
    pub lease_slack: Duration,
    /// Pause when nothing is due; with requests in flight, how long after
    /// its last statement a lane issues the next one.
    pub idle: Duration,
    /// Stop claiming this long before the deadline.
    pub stop_margin: Duration,
    /// A row not started this long before its batch's deadline is released
    /// unattempted (a request needs some time to be worth starting).
    pub min_request_time: Duration,
    /// Longest a row waits for one of its destination's slots before it is
    /// released unattempted (due again after the same delay): a destination
    /// with hanging requests holds its own rows back, not the batch.
    pub slot_wait: Duration,
    /// Sweeper: inbox rows overdue by this long are enqueued again.
    pub sweep_after: Duration,
    /// Sweeper: how often within one run.
    pub sweep_every: Duration,
    /// Sweeper: rows per sweep statement, and at most 10 statements a sweep.
    pub sweep_batch: i64,
    /// Retention: finished rows older than this are purged; `None`: never.
    pub retention: Option<Duration>,
    /// Retention: delete or archive.
    pub retention_mode: Retention,
    /// Retention of the archive tables: archived rows older than this are
    /// deleted; `None`: kept.
    pub archive_retention: Option<Duration>,
    /// Retention of the attempt log (`outbox_attempts`): attempts older
    /// than this are deleted, whatever became of their rows; `None`: kept.
    pub attempt_retention: Option<Duration>,
    /// Retention: rows per purge statement.
    pub purge_batch: i64,
    /// Retention: purge statements per table per run (bounds the work).
    pub purge_max_batches: u32,
}

impl RelaySettings {
    /// Defaults for a relay called `worker`.
    pub fn new(worker: impl Into<String>) -> Self {
        Self {
            worker: worker.into(),
            batch_size: 50,
            lanes: 4,
            requests_per_host: DEFAULT_REQUESTS_PER_HOST,
            lease: Duration::from_secs(30),
            lease_slack: Duration::from_secs(5),
            idle: Duration::from_secs(1),
            stop_margin: Duration::from_secs(5),
            min_request_time: Duration::from_millis(500),
            slot_wait: Duration::from_secs(2),
            sweep_after: Duration::from_secs(300),
            sweep_every: Duration::from_secs(60),
            sweep_batch: 100,
            retention: Some(Duration::from_secs(30 * 86_400)),
            retention_mode: Retention::Delete,
            archive_retention: None,
            attempt_retention: Some(Duration::from_secs(30 * 86_400)),
            purge_batch: 1_000,
            purge_max_batches: 10,
        }
    }

    /// Reads the `HOOKBOX_*` variables of the table above; unset or blank
    /// variables keep their defaults.
    pub fn from_env(
        worker: impl Into<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingsError> {
        let mut s = Self::new(worker);
        let var = |name: &'static str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(|v| (name, v))
        };
        let number = |(variable, value): (&'static str, String), min: u64, max: u64| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .ok_or(SettingsError {
                    variable,
                    value,
                    reason: format!("expected a whole number in {min}..={max}"),
                })
        };
        let batch_size = var("HOOKBOX_RELAY_BATCH_SIZE");
        if let Some(v) = batch_size.clone() {
            s.batch_size = number(v, 1, 1_000)? as i64;
        }
        let lanes = var("HOOKBOX_RELAY_LANES");
        if let Some(v) = lanes.clone() {
            s.lanes = number(v, 1, 64)? as usize;
        }
        let rows = s.lanes as u64 * s.batch_size.unsigned_abs();
        if rows > MAX_ROWS_IN_FLIGHT {
            // name the variable that was set (the batch size if both were)
            let (variable, value) = batch_size.or(lanes).unwrap_or_default();
            return Err(SettingsError {
                variable,
                value,
                reason: format!(
                    "{} lanes of {} rows put up to {rows} rows in flight at once, and each \
                     request to a tenant's endpoint holds a connection (a file descriptor) of \
                     its own: over {MAX_ROWS_IN_FLIGHT}, they with the slow endpoints' \
                     requests and the idle connections kept for reuse could reach a Lambda \
                     function's 1,024 file descriptors, past which no connection opens; keep \
                     HOOKBOX_RELAY_LANES x HOOKBOX_RELAY_BATCH_SIZE at most {MAX_ROWS_IN_FLIGHT}",
                    s.lanes, s.batch_size
                ),
            });
        }
        if let Some(v) = var("HOOKBOX_RELAY_REQUESTS_PER_HOST") {
            s.requests_per_host = number(v, 1, MAX_ROWS_IN_FLIGHT)? as usize;
        }
        if let Some(v) = var("HOOKBOX_RELAY_LEASE_SECONDS") {
            s.lease = Duration::from_secs(number(v, 2, 900)?);
        }
        if let Some(v) = var("HOOKBOX_RELAY_IDLE_MILLIS") {
            s.idle = Duration::from_millis(number(v, 10, 60_000)?);
        }
        if let Some(v) = var("HOOKBOX_RELAY_STOP_MARGIN_SECONDS") {
            s.stop_margin = Duration::from_secs(number(v, 1, 300)?);
        }
        if let Some(v) = var("HOOKBOX_SWEEP_AFTER_SECONDS") {
            s.sweep_after = Duration::from_secs(number(v, 1, 7 * 86_400)?);
        }
        if let Some((variable, value)) = var("HOOKBOX_RETENTION_DAYS") {
            let days = number((variable, value.clone()), 0, 36_500)?;
            if (1..MIN_RETENTION_DAYS).contains(&days) {
                return Err(SettingsError {
                    variable,
                    value,
                    reason: format!(
                        "a processed row is its event's dedupe key: purged before a redrive \
                         from the DLQ (which keeps messages {DLQ_RETENTION_DAYS} days) or a \
                         partner's last retry (up to {PARTNER_RETRY_DAYS} days) it would let \
                         that event in again, processed twice; use at least \
                         {MIN_RETENTION_DAYS} (or 0 to keep rows)"
                    ),
                });
            }
            s.retention = (days > 0).then(|| Duration::from_secs(days * 86_400));
        }
        if let Some((variable, value)) = var("HOOKBOX_RETENTION_MODE") {
            s.retention_mode = match value.as_str() {
                "delete" => Retention::Delete,
                "archive" => Retention::Archive,
                _ => {
                    return Err(SettingsError {
                        variable,
                        value,
                        reason: "expected delete or archive".into(),
                    });
                }
            };
        }
        if let Some((variable, value)) = var("HOOKBOX_ARCHIVE_RETENTION_DAYS") {
            let days = number((variable, value.clone()), 0, 36_500)?;
            let live_days = s.retention.map_or(0, |r| r.as_secs() / 86_400);
            if days > 0 && days <= live_days {
                return Err(SettingsError {
                    variable,
                    value,
                    reason: format!(
                        "rows reach the archive when they are HOOKBOX_RETENTION_DAYS \
                         ({live_days}) days old, so an archive retention of {days} days would \
                         delete them as soon as they arrive; use more than {live_days} (or 0 \
                         to keep archived rows)"
                    ),
                });
            }
            s.archive_retention = (days > 0).then(|| Duration::from_secs(days * 86_400));
        }
        if let Some(v) = var("HOOKBOX_ATTEMPT_RETENTION_DAYS") {
            let days = number(v, 0, 36_500)?;
            s.attempt_retention = (days > 0).then(|| Duration::from_secs(days * 86_400));
        }
        Ok(s)
    }
}

/// Most rows the relay's lanes may have in flight together
/// (`HOOKBOX_RELAY_LANES` x `HOOKBOX_RELAY_BATCH_SIZE`). A Lambda function
/// has 1,024 file descriptors and each request to a tenant's endpoint holds
/// a connection, so these rows, the slow endpoints' requests
/// ([`super::MAX_SLOW_ENDPOINT_REQUESTS`]), the idle connections kept for
/// reuse (of [`crate::delivery::http::MAX_POOLED_RECEIVERS`] receivers) and
/// the database's and AWS clients' connections must stay under it.
pub const MAX_ROWS_IN_FLIGHT: u64 = 500;

/// Most requests one relay sends at once to one host by default
/// (`HOOKBOX_RELAY_REQUESTS_PER_HOST`). Tenants' endpoints often share a
/// host (an integration platform, a SaaS's customers' shared receiver): each
/// endpoint's own `max_in_flight` (10) does not bound what 10,000 of them
/// send there together, which without this is every row in flight (up to
/// [`MAX_ROWS_IN_FLIGHT`]). As many as ten destinations' slots; the
/// destinations found slow are bounded apart
/// ([`super::MAX_SLOW_ENDPOINT_REQUESTS`]).
pub const DEFAULT_REQUESTS_PER_HOST: usize = 100;

/// How long the dead-letter queue keeps a message (the template's
/// `MessageRetentionPeriod`): a redrive can bring one back until then.
pub const DLQ_RETENTION_DAYS: u64 = 14;

/// The longest a partner keeps retrying a webhook (Stripe: 3 days).
pub const PARTNER_RETRY_DAYS: u64 = 3;

/// The shortest retention accepted: a processed row (its dedupe key) must
/// outlive every copy of its event that a redrive or a retry can still bring.
pub const MIN_RETENTION_DAYS: u64 = DLQ_RETENTION_DAYS + PARTNER_RETRY_DAYS;

/// A relay setting is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is invalid: {reason}")]
pub struct SettingsError {
    /// The environment variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What is expected.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        assert_eq!(
            RelaySettings::from_env("r", env(&[])),
            Ok(RelaySettings::new("r"))
        );
    }

    #[test]
    fn variables_override_and_bad_values_name_the_variable() {
        let s = RelaySettings::from_env(
            "r",
            env(&[
                ("HOOKBOX_RELAY_BATCH_SIZE", "20"),
                ("HOOKBOX_SWEEP_AFTER_SECONDS", "60"),
                ("HOOKBOX_RETENTION_DAYS", "0"),
                ("HOOKBOX_RETENTION_MODE", "archive"),
            ]),
        )
        .expect("valid");
        assert_eq!(s.batch_size, 20);
        assert_eq!(s.sweep_after, Duration::from_secs(60));
        assert_eq!(s.retention, None);
        assert_eq!(s.retention_mode, Retention::Archive);
        let e = RelaySettings::from_env("r", env(&[("HOOKBOX_RELAY_BATCH_SIZE", "0")]))
            .expect_err("zero");
        assert_eq!(e.variable, "HOOKBOX_RELAY_BATCH_SIZE");
        let e = RelaySettings::from_env("r", env(&[("HOOKBOX_RETENTION_MODE", "shred")]))
            .expect_err("mode");
        assert!(e.to_string().contains("delete or archive"), "{e}");
    }

    #[test]
    fn the_archive_keeps_rows_unless_told_and_never_less_than_the_live_tables() {
        assert_eq!(RelaySettings::new("r").archive_retention, None);
        let s = RelaySettings::from_env(
            "r",
            env(&[
                ("HOOKBOX_RETENTION_DAYS", "30"),
                ("HOOKBOX_ARCHIVE_RETENTION_DAYS", "365"),
            ]),
        )
        .expect("valid");
        assert_eq!(s.archive_retention, Some(Duration::from_secs(365 * 86_400)));
        let e = RelaySettings::from_env("r", env(&[("HOOKBOX_ARCHIVE_RETENTION_DAYS", "30")]))
            .expect_err("not more than the default 30");
        assert_eq!(e.variable, "HOOKBOX_ARCHIVE_RETENTION_DAYS");
        assert!(e.to_string().contains("use more than 30"), "{e}");
        // with live retention off, any archive retention holds
        let s = RelaySettings::from_env(
            "r",
            env(&[
                ("HOOKBOX_RETENTION_DAYS", "0"),
                ("HOOKBOX_ARCHIVE_RETENTION_DAYS", "1"),
            ]),
        )
        .expect("valid");
        assert_eq!(s.archive_retention, Some(Duration::from_secs(86_400)));
    }

    #[test]
    fn lanes_times_batch_size_stays_within_the_functions_file_descriptors() {
        let s = RelaySettings::from_env(
            "r",
            env(&[
                ("HOOKBOX_RELAY_LANES", "4"),
                ("HOOKBOX_RELAY_BATCH_SIZE", "125"),
            ]),
        )
        .expect("500 rows in flight");
        assert_eq!((s.lanes, s.batch_size), (4, 125));
        let e = RelaySettings::from_env(
            "r",
            env(&[
                ("HOOKBOX_RELAY_LANES", "4"),
                ("HOOKBOX_RELAY_BATCH_SIZE", "126"),
            ]),
        )
        .expect_err("504 rows");
        assert_eq!(
            (e.variable, e.value.as_str()),
            ("HOOKBOX_RELAY_BATCH_SIZE", "126")
        );
        let text = e.to_string();
        assert!(
            text.contains("504 rows") && text.contains("1,024 file descriptors"),
            "{text}"
        );
        // lanes alone, with the default batch size of 50
        let e = RelaySettings::from_env("r", env(&[("HOOKBOX_RELAY_LANES", "11")]))
            .expect_err("550 rows");
        assert_eq!(
            (e.variable, e.value.as_str()),
            ("HOOKBOX_RELAY_LANES", "11")
        );
    }

    #[test]
    fn requests_per_host_is_read_and_bounded_by_the_rows_in_flight() {
        assert_eq!(
            RelaySettings::new("r").requests_per_host,
            DEFAULT_REQUESTS_PER_HOST
        );
        let s = RelaySettings::from_env("r", env(&[("HOOKBOX_RELAY_REQUESTS_PER_HOST", "500")]))
            .expect("at most the rows in flight");
        assert_eq!(s.requests_per_host, 500);
        for bad in ["0", "501", "ten"] {
            let e = RelaySettings::from_env("r", env(&[("HOOKBOX_RELAY_REQUESTS_PER_HOST", bad)]))
                .expect_err(bad);
            assert_eq!(
                (e.variable, e.value.as_str()),
                ("HOOKBOX_RELAY_REQUESTS_PER_HOST", bad)
            );
            assert!(e.to_string().contains("1..=500"), "{e}");
        }
    }

    #[test]
    fn retention_never_drops_a_dedupe_key_a_redrive_or_retry_can_still_bring() {
        let e = RelaySettings::from_env("r", env(&[("HOOKBOX_RETENTION_DAYS", "7")]))
            .expect_err("below the DLQ's retention");
        assert_eq!(e.variable, "HOOKBOX_RETENTION_DAYS");
        assert!(e.to_string().contains("use at least 17"), "{e}");
        let s = RelaySettings::from_env("r", env(&[("HOOKBOX_RETENTION_DAYS", "17")]))
            .expect("the minimum");
        assert_eq!(s.retention, Some(Duration::from_secs(17 * 86_400)));
    }
}
