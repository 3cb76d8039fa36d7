//! Named failpoints: the step boundaries where a crash matters, for the
//! torture run (`tests/torture`). Each site is a `fail::fail_point!` that
//! compiles to nothing unless hookbox is built with its `failpoints`
//! feature, so release builds pay nothing.
//!
//! A test configures them with the `fail` crate (`fail::cfg`,
//! `fail::cfg_callback`); a callback that panics is a crash of the
//! invocation at that point (Lambda's sandbox dying mid-step): whatever the
//! step committed stays, the rest never happens.

/// After the inbox insert committed, before the queue message is sent
/// (the row is stranded until the sweeper enqueues it; the partner sees a
/// 5xx and resends: a duplicate).
pub const INGEST_AFTER_INSERT: &str = "ingest.after_insert";
/// After the queue message is sent, before the answer (the partner resends:
/// a duplicate, no second message).
pub const INGEST_AFTER_SEND: &str = "ingest.after_send";
/// After the body object was put, before the row refers to it.
pub const BLOB_AFTER_PUT: &str = "blob.after_put";
/// Before a body object is read for the handler.
pub const BLOB_BEFORE_GET: &str = "blob.before_get";
/// After the rows of a batch are claimed (leased), before any handler runs.
pub const PROCESSOR_AFTER_CLAIM: &str = "processor.after_claim";
/// After an event's business transaction committed, before the batch's
/// answer reaches the queue (the message comes back; the row is finished).
pub const PROCESSOR_AFTER_COMMIT: &str = "processor.after_commit";
/// After an outbound POST returned, before its result is recorded (the
/// delivery happens again: at least once, the same `webhook-id`).
pub const RELAY_AFTER_POST: &str = "relay.after_post";
/// Inside the sweeper: rows stamped enqueued, before their messages are sent.
pub const SWEEPER_BEFORE_SEND: &str = "sweeper.before_send";
/// During retention: rows purged, before the blob objects are deleted.
pub const RETENTION_AFTER_PURGE: &str = "retention.after_purge";
/// During a migration: its statements ran, before its transaction commits.
pub const MIGRATION_BEFORE_COMMIT: &str = "migration.before_commit";

/// Every failpoint, for runners that pick among them.
pub const ALL: &[&str] = &[
    INGEST_AFTER_INSERT,
    INGEST_AFTER_SEND,
    BLOB_AFTER_PUT,
    BLOB_BEFORE_GET,
    PROCESSOR_AFTER_CLAIM,
    PROCESSOR_AFTER_COMMIT,
    RELAY_AFTER_POST,
    SWEEPER_BEFORE_SEND,
    RETENTION_AFTER_PURGE,
    MIGRATION_BEFORE_COMMIT,
];

/// A failpoint site: `hit!(NAME)` is `fail::fail_point!(NAME)`.
macro_rules! hit {
    ($name:expr) => {
        fail::fail_point!($name)
    };
}
pub(crate) use hit;
