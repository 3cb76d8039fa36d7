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
//! [`crate::subscription`]). Every route that matches gets one
//! delivery (fan-out); an event no route matches follows `unrouted`:
//! `quarantine` (the default: an operator sees it and can replay it once a
//! route exists) or `drop` (processed, counted, nothing delivered).

use serde::Deserialize;

use super::Partner;
use crate::subscription::{RawFilter, RawSubscription, Subscription};

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

/// The aggregate type of forwarded events: their aggregate is
/// `partner:<name>` with the ordering key (or event id) as its id.
pub fn aggregate_type(partner: &str) -> String {
    format!("partner:{partner}")
}

/// The event type of a forwarded event whose partner names none (or that
/// carried none): matched by the route pattern `*` only.
pub const UNTYPED: &str = "untyped";

/// What a partner's routes make of one event: the same at ingest (which
/// forwards in the statement that stores the event, `inbox::routed`) and in
/// the processor (`processing::routing::forward`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// One delivery per matched route, all with the same fields.
    Deliver(Deliveries),
    /// No route matched: why (names the partner and the event type).
    Unrouted(String),
}

/// The deliveries of one event: one outbox row per destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deliveries {
    /// The matched routes' destinations, in route order, each once.
    pub destinations: Vec<String>,
    /// The event's type, or [`UNTYPED`].
    pub event_type: String,
    /// `partner:<name>` ([`aggregate_type`]).
    pub aggregate_type: String,
    /// The ordering key, or the event id when the partner has none.
    pub aggregate_id: String,
}

/// Matches `payload` (the event's JSON body) against `partner`'s routes.
pub fn plan(
    partner: &Partner,
    event_id: &str,
    event_type: Option<&str>,
    ordering_key: Option<&str>,
    payload: &serde_json::Value,
) -> Plan {
    let event_type = event_type.unwrap_or(UNTYPED);
    let routes = matching(&partner.routes, event_type, payload);
    if routes.is_empty() {
        return Plan::Unrouted(format!(
            "no route of partner {:?} matches event type {event_type:?} (and its filters)",
            partner.name
        ));
    }
    Plan::Deliver(Deliveries {
        // (every route names a destination of the same configuration:
        // checked when it was parsed)
        destinations: routes.iter().map(|r| r.to.clone()).collect(),
        event_type: event_type.to_owned(),
        aggregate_type: aggregate_type(&partner.name),
        // an empty key is no key (an empty id is no aggregate)
        aggregate_id: ordering_key
            .filter(|k| !k.is_empty())
            .unwrap_or(event_id)
            .to_owned(),
    })
}
