//! The clock port: domain code never calls `Utc::now()` itself, so tests
//! control time (lease expiry, backoff, tolerance windows) without sleeping.

use std::fmt;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// A source of "now". Implementations must be cheap and never fail.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. For tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward (or back, with a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now = at;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A Lambda invocation's deadline (`Context::deadline`: milliseconds since
/// the epoch, 0 when unknown, as in `Context::default()`).
pub fn lambda_deadline(deadline_ms: u64) -> Option<DateTime<Utc>> {
    if deadline_ms == 0 {
        return None;
    }
    i64::try_from(deadline_ms)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Utc
            .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .single()
            .expect("valid date");
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::seconds(90));
        assert_eq!(clock.now(), start + Duration::seconds(90));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }

    #[test]
    fn an_unknown_lambda_deadline_is_none() {
        assert_eq!(lambda_deadline(0), None);
        assert_eq!(
            lambda_deadline(1_780_315_200_000).map(|d| d.timestamp_millis()),
            Some(1_780_315_200_000)
        );
    }
}
