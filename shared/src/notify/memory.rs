//! A notifier that records what it was given (tests), as strict as SNS.

use std::sync::Mutex;

use async_trait::async_trait;

use super::{Notifier, NotifyError, check};

/// Records notices; can be told to fail.
#[derive(Debug, Default)]
pub struct MemoryNotifier {
    sent: Mutex<Vec<(String, String)>>,
    failing: Mutex<bool>,
}

impl MemoryNotifier {
    /// Every notice sent so far: (subject, message).
    pub fn sent(&self) -> Vec<(String, String)> {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// From now on, every notice fails (`true`) or is sent (`false`).
    pub fn set_failing(&self, failing: bool) {
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = failing;
    }
}

#[async_trait]
impl Notifier for MemoryNotifier {
    async fn notify(&self, subject: &str, message: &str) -> Result<(), NotifyError> {
        check(subject, message)?;
        if *self.failing.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(NotifyError::Failed("memory notifier told to fail".into()));
        }
        self.sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((subject.to_owned(), message.to_owned()));
        Ok(())
    }
}
