//! Upkeep of the tables, not outbound work: the inbox sweeper ([`sweep`])
//! and retention of both tables, their archives and their blob objects
//! ([`retention`]). The relay's scheduled run does both (it has the
//! database, the queue and the blob store at hand), so they are methods of
//! [`crate::relay::Relay`]: `relay.sweep()`, `relay.purge()`.

pub mod retention;
mod sweep;

pub use retention::PurgeReport;
pub use sweep::SweepReport;
