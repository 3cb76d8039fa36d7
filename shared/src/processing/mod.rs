//! The processor use case: inbox rows in, business changes out.
//!
//! ```text
//! SQS batch ──▶ read each message ─┬─ stored  {inbox_id} ────────────────┐
//!                                  ├─ spooled {event} ─ insert_if_new ────┤
//!                                  └─ unreadable ─ insert as quarantined  │
//!                                                                         ▼
//!               claim every row of the batch in ONE statement (lease)
//!                 finished ─▶ acknowledge      busy ─▶ retry later      missing ─▶ acknowledge
//!                 claimed  ─▶ BEGIN; business handler; mark_processed; COMMIT
//!                               Processed  ─▶ acknowledge
//!                               Defer      ─▶ deferred, visibility = backoff, retry
//!                                             (older than the max deferral age: quarantined)
//!                               Retry/panic ─▶ pending, visibility = backoff, retry
//!                                             (last receive: dead, the queue moves it to the DLQ)
//!                               Quarantine ─▶ quarantined, acknowledge
//! ```
//!
//! Talks to ports only: [`crate::store::Database`], [`crate::queue::Queue`]
//! (for `change_visibility`), [`crate::clock::Clock`] and the
//! [`BusinessHandler`] users implement (see [`crate::example`] for one).
//! The Lambda wiring (SQS event shapes, `batchItemFailures`) lives in
//! `functions/processor`.

pub mod config;
pub mod handler;
mod intake;
pub mod outcome;
pub mod processor;
pub mod replay;
pub mod routing;

pub use config::{ConfigError, ProcessorConfig};
pub use handler::{BusinessHandler, HandlerError, InboxEvent, Outcome, PoisonPill};
pub use processor::{BatchReport, MessageOutcome, MessageResult, Processor, UNREADABLE_PARTNER};
pub use replay::{ReplayOutcome, replay};
pub use routing::RoutingHandler;

/// Longest error or reason text stored in `last_error` or logged.
pub const MAX_ERROR_CHARS: usize = 2000;

/// `text`, cut to [`MAX_ERROR_CHARS`] characters.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A JSON error that is safe to log: serde's "invalid type/value" messages
/// quote the offending value, which may be personal data from a body, so
/// those are replaced by their position.
pub(crate) fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if e.is_data() && (text.starts_with("invalid type") || text.starts_with("invalid value")) {
        format!(
            "a value has the wrong type or is out of range at line {} column {}",
            e.line(),
            e.column()
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_long_text_on_a_char_boundary() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(MAX_ERROR_CHARS + 10);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), MAX_ERROR_CHARS + 1);
        assert!(clipped.ends_with('…'));
    }

    #[test]
    fn json_errors_never_quote_values() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Card {
            number: u64,
        }
        let e = serde_json::from_str::<Card>(r#"{"number":"4111 1111 1111 1111"}"#)
            .expect_err("string for a number");
        let shown = json_error(&e);
        assert!(!shown.contains("4111"), "{shown}");
        assert!(shown.contains("line 1"), "{shown}");
        let e = serde_json::from_str::<Card>("{").expect_err("truncated");
        assert!(json_error(&e).contains("EOF"), "{}", json_error(&e));
        let e = serde_json::from_str::<Card>("{}").expect_err("missing");
        assert!(json_error(&e).contains("missing field `number`"));
    }
}
