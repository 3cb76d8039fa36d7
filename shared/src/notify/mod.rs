//! The notice port: short messages to the operators' alarm topic, what the
//! relay sends when a destination trips, is disabled or a delivery dies
//! ([`crate::outbox::relay::notices`] decides what and how often).
//!
//! Adapters: Amazon SNS ([`sns::SnsNotifier`], Publish to one topic), the
//! log ([`LogNotifier`]: the local stack, a stack without a topic) and a
//! recording fake ([`memory::MemoryNotifier`], tests). Every adapter takes
//! only what SNS takes ([`check`]): a subject of 1 to 100 printable ASCII
//! characters, a message of at most 256 KiB.

pub mod memory;
pub mod sns;

use std::fmt;

use async_trait::async_trait;

/// SNS's longest subject, characters.
pub const MAX_SUBJECT_CHARS: usize = 100;
/// SNS's largest message, bytes.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Why a notice was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// The notice is not one the service takes (never sent; a bug in the
    /// caller): which field, and why.
    #[error("notice refused before sending: {0}")]
    Invalid(String),
    /// The service refused or could not be reached (names the topic and
    /// the service's reason).
    #[error("notice not sent: {0}")]
    Failed(String),
}

/// Sends notices.
///
/// Error contract: [`NotifyError::Invalid`] for a notice the service would
/// refuse (checked before any call), [`NotifyError::Failed`] when the
/// service refused it or did not answer; a notice is sent at most once (no
/// retry beyond the client's own), and a failure is the caller's to log.
#[async_trait]
pub trait Notifier: Send + Sync + fmt::Debug {
    /// Publishes `message` (JSON text) under `subject`.
    async fn notify(&self, subject: &str, message: &str) -> Result<(), NotifyError>;
}

/// Checks a notice against SNS's limits.
pub fn check(subject: &str, message: &str) -> Result<(), NotifyError> {
    let chars = subject.chars().count();
    if chars == 0 || chars > MAX_SUBJECT_CHARS {
        return Err(NotifyError::Invalid(format!(
            "the subject is {chars} characters; SNS takes 1 to {MAX_SUBJECT_CHARS}"
        )));
    }
    if let Some(c) = subject.chars().find(|c| !(' '..='~').contains(c)) {
        return Err(NotifyError::Invalid(format!(
            "the subject holds {c:?}; SNS takes printable ASCII only"
        )));
    }
    if message.is_empty() || message.len() > MAX_MESSAGE_BYTES {
        return Err(NotifyError::Invalid(format!(
            "the message is {} bytes; SNS takes 1 to {MAX_MESSAGE_BYTES}",
            message.len()
        )));
    }
    Ok(())
}

/// Notices as log lines (WARN, `notice` and `subject` fields): the local
/// stack's, and a relay's without a topic.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogNotifier;

#[async_trait]
impl Notifier for LogNotifier {
    async fn notify(&self, subject: &str, message: &str) -> Result<(), NotifyError> {
        check(subject, message)?;
        tracing::warn!(subject, notice = message, "notice");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_checked_against_snss_limits() {
        assert!(check("hookbox: billing tripped", "{}").is_ok());
        let long = "x".repeat(MAX_SUBJECT_CHARS + 1);
        assert!(
            matches!(check(&long, "{}"), Err(NotifyError::Invalid(m)) if m.contains("101 characters"))
        );
        assert!(matches!(check("", "{}"), Err(NotifyError::Invalid(_))));
        assert!(
            matches!(check("tripped\n", "{}"), Err(NotifyError::Invalid(m)) if m.contains("'\\n'"))
        );
        assert!(matches!(check("é", "{}"), Err(NotifyError::Invalid(m)) if m.contains("ASCII")));
        let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(
            matches!(check("s", &big), Err(NotifyError::Invalid(m)) if m.contains("262145 bytes"))
        );
        assert!(matches!(check("s", ""), Err(NotifyError::Invalid(_))));
    }
}
