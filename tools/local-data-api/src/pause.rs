//! Auto-pause, simulated. An Aurora Serverless v2 cluster at zero capacity
//! answers every Data API call with `DatabaseResumingException` (400) while
//! the call it got wakes it; a few seconds later it answers again. Tests and
//! the torture run pause the local server to see that hookbox treats it as
//! the outage it is (retryable), not as a refused statement.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use hookbox::clock::Clock;

use crate::error::ServiceError;

#[derive(Debug, Clone, Copy)]
enum State {
    Awake,
    Paused {
        /// How long it takes to resume once a call wakes it (`None`: until
        /// [`Pause::resume`]).
        resume_time: Option<Duration>,
        /// When the first call after the pause arrived.
        woken_at: Option<DateTime<Utc>>,
    },
}

/// Whether the database is paused, on the server's clock.
#[derive(Debug)]
pub(crate) struct Pause {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl Pause {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            state: Mutex::new(State::Awake),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn pause(&self, resume_time: Option<Duration>) {
        *self.state() = State::Paused {
            resume_time,
            woken_at: None,
        };
    }

    pub(crate) fn resume(&self) {
        *self.state() = State::Awake;
    }

    pub(crate) fn is_paused(&self) -> bool {
        matches!(*self.state(), State::Paused { .. })
    }

    /// `Ok` when awake; the service's error while resuming. The first call
    /// after a pause starts the resume.
    pub(crate) fn check(&self) -> Result<(), ServiceError> {
        let now = self.clock.now();
        let mut state = self.state();
        let State::Paused {
            resume_time,
            woken_at,
        } = *state
        else {
            return Ok(());
        };
        let woken = woken_at.unwrap_or(now);
        if let Some(resume_time) = resume_time {
            let elapsed = (now - woken).to_std().unwrap_or_default();
            if elapsed >= resume_time {
                *state = State::Awake;
                return Ok(());
            }
        }
        *state = State::Paused {
            resume_time,
            woken_at: Some(woken),
        };
        Err(ServiceError::DatabaseResuming(
            "The Aurora DB instance is resuming after being auto-paused. Please wait a few \
             seconds and try again."
                .to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use hookbox::clock::ManualClock;

    #[test]
    fn a_paused_database_resumes_its_resume_time_after_the_call_that_wakes_it() {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let pause = Pause::new(clock.clone());
        assert!(pause.check().is_ok());
        pause.pause(Some(Duration::from_secs(15)));
        // paused for an hour with no call: still paused, nothing woke it
        clock.advance(TimeDelta::hours(1));
        let err = pause.check().expect_err("the waking call is refused");
        assert_eq!(err.name(), "DatabaseResumingException");
        assert_eq!(err.status(), axum::http::StatusCode::BAD_REQUEST);
        clock.advance(TimeDelta::seconds(14));
        assert!(pause.check().is_err(), "still resuming at 14 s");
        clock.advance(TimeDelta::seconds(1));
        assert!(pause.check().is_ok(), "awake at 15 s");
        assert!(!pause.is_paused());
    }

    #[test]
    fn a_pause_without_a_resume_time_lasts_until_resumed() {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let pause = Pause::new(clock.clone());
        pause.pause(None);
        clock.advance(TimeDelta::days(1));
        assert!(pause.check().is_err());
        pause.resume();
        assert!(pause.check().is_ok());
    }
}
