//! hookbox core library.
//!
//! Domain code (`inbox`, `outbox`, later `signature` and `processing`) talks
//! to ports only; `store` holds the database port and its adapters.
//! See `../shared/DESIGN.md` (the team handbook) for the map.

pub mod clock;
pub mod signature;
