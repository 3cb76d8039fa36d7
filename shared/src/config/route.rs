//! A partner's routes: which destinations receive its events, so a team
//! consumes verified, deduplicated partner webhooks on its own bus, queue
//! or HTTP service without writing a handler.
//!
//! ```json
//! "partners": {"stripe": {
//!   "routes": [
//!     {"to": "billing-bus", "event_types": ["invoice.*", "charge.refunded"]},
//!     {"to": "audit-queue", "event_types": ["*"],
//!      "filters": [{"pointer": "/livemode", "equals": true}]}
//!   ],
//!   "unrouted": "quarantine"
//! }}
//! ```
//!
//! The matcher is the one a destination's `subscribe` uses (event types
//! exact or with `*`, filters on the payload by JSON pointer; see
//! [`crate::outbox::subscription`]). Every route that matches gets one
//! delivery (fan-out); an event no route matches follows `unrouted`:
//! `quarantine` (the default: an operator sees it and can replay it once a
//! route exists) or `drop` (processed, counted, nothing delivered).

use serde::Deserialize;

use crate::outbox::subscription::{RawFilter, RawSubscription, Subscription};

/// Most routes one partner lists.
pub const MAX_ROUTES: usize = 32;

/// One route: the events it takes, and where they go.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The destination's name.
    pub to: String,
    /// Which events (type patterns and payload filters).
    pub matcher: Subscription,
}

/// What happens to an event no route matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unrouted {
    /// Quarantined with the reason (the default): nothing is lost, and
    /// `hookbox inbox replay` routes it again once a route exists.
    #[default]
    Quarantine,
    /// Processed without a delivery, and counted (`unrouted_dropped`).
    Drop,
}

impl Unrouted {
    /// Its configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Quarantine => "quarantine",
            Self::Drop => "drop",
        }
    }
}

/// A route as written in the configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoute {
    to: String,
    event_types: Vec<String>,
    #[serde(default)]
    filters: Vec<RawFilter>,
}

impl RawRoute {
    /// Checked, except that `to` names a destination (the configuration
    /// checks that once every destination is known); `Err` is (field,
    /// reason), the field relative to the partner (`routes[2].to`).
    pub(super) fn validate(self, index: usize) -> Result<Route, (String, String)> {
        let field = format!("routes[{index}]");
        if self.to.trim().is_empty() {
            return Err((format!("{field}.to"), "is empty: name a destination".into()));
        }
        let matcher = RawSubscription {
            event_types: self.event_types,
            filters: self.filters,
        }
        .validate_as(&field)?;
        Ok(Route {
            to: self.to,
            matcher,
        })
    }
}

/// The routes of an event: those of `routes` that match, in order, each
/// destination once.
pub fn matching<'a>(
    routes: &'a [Route],
    event_type: &str,
    payload: &serde_json::Value,
) -> Vec<&'a Route> {
    let mut out: Vec<&Route> = Vec::new();
    for route in routes {
        if route.matcher.matches(event_type, payload) && !out.iter().any(|r| r.to == route.to) {
            out.push(route);
        }
    }
    out
}
