//! When to try a failed delivery again: the destination's schedule, ±20%
//! jitter (so receivers recovering from an outage are not hit by every
//! retry at once), and the receiver's `Retry-After` for 429/503, clamped to
//! between 1× and 2× the scheduled delay.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The jitter applied to each scheduled delay: ±20%.
pub const JITTER: f64 = 0.2;

/// A source of jitter: a value in `[-1.0, 1.0]` per retry.
pub trait Jitter: Send + Sync + fmt::Debug {
    /// The next value in `[-1.0, 1.0]`.
    fn sample(&self) -> f64;
}

/// Uniform random jitter (production).
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn sample(&self) -> f64 {
        fastrand::f64() * 2.0 - 1.0
    }
}

/// The same value every time (tests: `FixedJitter(0.0)` gives the schedule
/// exactly, `1.0` its upper bound, `-1.0` its lower bound).
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub f64);

impl Jitter for FixedJitter {
    fn sample(&self) -> f64 {
        self.0.clamp(-1.0, 1.0)
    }
}

/// The scheduled delay after failed attempt `attempt` (1-based): the
/// schedule's entry, the last one repeating. An empty schedule gives 0.
pub fn scheduled_delay(schedule: &[Duration], attempt: u32) -> Duration {
    let index = usize::try_from(attempt.max(1) - 1).unwrap_or(usize::MAX);
    schedule
        .get(index)
        .or(schedule.last())
        .copied()
        .unwrap_or_default()
}

/// `delay` scaled by `1 + JITTER × sample` (sample clamped to `[-1, 1]`).
pub fn jittered(delay: Duration, sample: f64) -> Duration {
    delay.mul_f64(1.0 + JITTER * sample.clamp(-1.0, 1.0))
}

/// A receiver's `Retry-After`, clamped to between 1× and 2× `scheduled`:
/// never sooner than our own schedule, never more than twice as late.
pub fn clamp_retry_after(retry_after: Duration, scheduled: Duration) -> Duration {
    retry_after.clamp(scheduled, scheduled.saturating_mul(2))
}

/// Parses a `Retry-After` value: delay-seconds or an HTTP-date (RFC 9110
/// §10.2.3), relative to `now`. A date in the past is a zero delay; anything
/// unparseable is `None` (ignored).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let at = DateTime::parse_from_rfc2822(value)
        .ok()?
        .with_timezone(&Utc);
    Some((at - now).to_std().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    const DEFAULT: [u64; 7] = crate::config::DEFAULT_BACKOFF_SECS;

    #[test]
    fn the_schedule_is_followed_and_its_last_step_repeats() {
        let schedule: Vec<Duration> = DEFAULT.iter().map(|s| secs(*s)).collect();
        let got: Vec<u64> = (1..=9)
            .map(|n| scheduled_delay(&schedule, n).as_secs())
            .collect();
        assert_eq!(
            got,
            [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000, 36_000, 36_000]
        );
        assert_eq!(scheduled_delay(&[], 3), Duration::ZERO);
    }

    #[test]
    fn jitter_stays_within_twenty_percent() {
        assert_eq!(jittered(secs(300), 0.0), secs(300));
        assert_eq!(jittered(secs(300), 1.0), secs(360));
        assert_eq!(jittered(secs(300), -1.0), secs(240));
        assert_eq!(jittered(secs(300), 7.0), secs(360), "samples are clamped");
        for _ in 0..1_000 {
            let d = jittered(secs(300), RandomJitter.sample());
            assert!(d >= secs(240) && d <= secs(360), "{d:?}");
        }
    }

    #[test]
    fn retry_after_is_clamped_to_one_to_two_times_the_schedule() {
        assert_eq!(clamp_retry_after(secs(1), secs(300)), secs(300));
        assert_eq!(clamp_retry_after(secs(450), secs(300)), secs(450));
        assert_eq!(clamp_retry_after(secs(86_400), secs(300)), secs(600));
    }

    #[test]
    fn retry_after_parses_seconds_and_http_dates() {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 30, 8, 0, 0)
            .single()
            .expect("date");
        assert_eq!(parse_retry_after("120", now), Some(secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(secs(0)));
        assert_eq!(
            parse_retry_after("Mon, 30 Nov 2026 08:02:00 GMT", now),
            Some(secs(120))
        );
        assert_eq!(
            parse_retry_after("Mon, 30 Nov 2026 07:00:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
    }
}
