//! The bad-input corpus's harness, in parts: the corpus and its requests
//! (`model`, also the local stack's), the events of both ingresses
//! (`events`), one request through the authorizer and ingest (`call`), and
//! what every case must have done (`check`). Other test binaries use the
//! parts they need.
#![allow(dead_code)]

pub mod call;
pub mod check;
pub mod events;
pub mod model;
