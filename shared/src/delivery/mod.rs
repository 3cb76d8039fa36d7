//! Delivery: the port through which the relay hands an outbox row to its
//! destination, and the adapters beside it (like `store/`, `queue/` and
//! `blob/`).
//!
//! - `http`: signed Standard Webhooks POSTs ([`WebhookSender`], its
//!   reqwest adapter [`HttpSender`]) and the response excerpts the attempt
//!   log keeps;
//! - `guard`: the SSRF guard the HTTP adapter resolves names through.

pub mod guard;
pub mod http;

pub use guard::{NetworkGuard, Refused};
pub use http::{HttpSender, OutboundRequest, SendOutcome, WebhookSender};
