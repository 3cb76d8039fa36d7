//! hookbox core library.
//!
//! Domain code (`inbox`, `outbox`, `processing`, later `signature`) talks
//! to ports only; `store` holds the database port and its adapters.
//! `example` is the example business domain (orders), the part users replace.
//! See `../shared/DESIGN.md` (the team handbook) for the map.

pub mod admin;
pub mod blob;
pub mod clock;
pub mod config;
pub mod delivery;
pub mod example;
pub mod failpoint;
pub mod inbox;
pub mod log_format;
pub mod maintenance;
pub mod management;
pub mod metrics;
pub mod migrate;
pub mod notify;
pub mod outbox;
pub mod processing;
pub mod queue;
pub mod signature;
pub mod startup;
pub mod store;
pub mod subscription;
pub mod tenants;
pub mod vault;

/// An error and its sources, `: `-separated: an AWS SDK error's own text
/// is often only "dispatch failure" or "service error". (The SDKs' errors
/// name no credentials.)
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The relay use case lives with the outbox (`outbox::relay`); this is its
/// short path.
pub use outbox::relay;

#[cfg(test)]
mod test_env;
