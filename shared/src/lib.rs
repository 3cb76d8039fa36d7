//! hookbox core library.
//!
//! Domain code (`inbox`, `outbox`, later `signature` and `processing`) talks
//! to ports only; `store` holds the database port and its adapters.
//! See `../shared/DESIGN.md` (the team handbook) for the map.

pub mod clock;
pub mod config;
pub mod emf;
pub mod inbox;
pub mod migrate;
pub mod outbox;
pub mod queue;
pub mod signature;
pub mod store;
