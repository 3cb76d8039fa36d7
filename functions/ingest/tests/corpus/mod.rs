//! The bad-input corpus's harness, in parts: the corpus and its requests
//! (`model`, also the local stack's), the events of both ingresses
//! (`events`), and what every case must have done (`check`).

pub mod check;
pub mod events;
pub mod model;
