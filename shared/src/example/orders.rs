//! The orders state machine: pure code, no I/O.
//!
//! ```text
//!            order.created      payment.received     order.shipped      order.delivered
//!   (none) ───────────────▶ created ───────────▶ paid ───────────▶ shipped ───────────▶ delivered
//!     │                        │                  ▲ │
//!     └── payment.received ────┼──────────────────┘ │
//!                              └── order.cancelled ─┴─▶ cancelled
//! ```
//! An event whose prerequisite state has not been reached yet is deferred
//! (shipped before paid); an event that comes too late to matter is
//! ignored (paid again, created after paid); an event that contradicts the
//! state is a conflict for a human (shipped after cancelled).

use std::fmt;
use std::str::FromStr;

/// Where an order is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderStatus {
    /// Placed.
    Created,
    /// Payment received.
    Paid,
    /// Handed to the carrier.
    Shipped,
    /// Arrived.
    Delivered,
    /// Cancelled before shipping.
    Cancelled,
}

impl OrderStatus {
    /// Every status.
    pub const ALL: [OrderStatus; 5] = [
        OrderStatus::Created,
        OrderStatus::Paid,
        OrderStatus::Shipped,
        OrderStatus::Delivered,
        OrderStatus::Cancelled,
    ];

    /// The database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Created => "created",
            OrderStatus::Paid => "paid",
            OrderStatus::Shipped => "shipped",
            OrderStatus::Delivered => "delivered",
            OrderStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown order status string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown order status {0:?}")]
pub struct UnknownOrderStatus(pub String);

impl FromStr for OrderStatus {
    type Err = UnknownOrderStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OrderStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownOrderStatus(s.to_string()))
    }
}

/// A partner event about an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderEvent {
    /// `order.created`
    Created,
    /// `payment.received`
    PaymentReceived,
    /// `order.shipped`
    Shipped,
    /// `order.delivered`
    Delivered,
    /// `order.cancelled`
    Cancelled,
}

impl OrderEvent {
    /// Every event.
    pub const ALL: [OrderEvent; 5] = [
        OrderEvent::Created,
        OrderEvent::PaymentReceived,
        OrderEvent::Shipped,
        OrderEvent::Delivered,
        OrderEvent::Cancelled,
    ];

    /// The event type partners send.
    pub fn event_type(self) -> &'static str {
        match self {
            OrderEvent::Created => "order.created",
            OrderEvent::PaymentReceived => "payment.received",
            OrderEvent::Shipped => "order.shipped",
            OrderEvent::Delivered => "order.delivered",
            OrderEvent::Cancelled => "order.cancelled",
        }
    }

    /// The event for a type, if it is one of ours.
    pub fn from_type(event_type: &str) -> Option<Self> {
        OrderEvent::ALL
            .into_iter()
            .find(|e| e.event_type() == event_type)
    }
}

/// What an event does to an order in a given state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Change the state (`from` is `None` when the event creates the order).
    Transition {
        /// Current state.
        from: Option<OrderStatus>,
        /// New state.
        to: OrderStatus,
    },
    /// Nothing to do: the event is stale or repeated. Processed without effect.
    Ignore(String),
    /// A prerequisite is missing: try again later.
    Defer(String),
    /// The event contradicts the order's state: a human must look.
    Conflict(String),
}

/// The state machine: what `event` does to an order currently in `current`
/// (`None`: no such order yet).
pub fn decide(event: OrderEvent, current: Option<OrderStatus>) -> Decision {
    use OrderEvent as E;
    use OrderStatus as S;
    let to = |to| Decision::Transition { from: current, to };
    let ignore = |why: &str| Decision::Ignore(why.to_string());
    let defer = |why: &str| Decision::Defer(why.to_string());
    let conflict = |why: &str| Decision::Conflict(why.to_string());
    match (event, current) {
        (E::Created, None) => to(S::Created),
        (E::Created, Some(_)) => ignore("the order exists already"),

        (E::PaymentReceived, None | Some(S::Created)) => to(S::Paid),
        (E::PaymentReceived, Some(S::Paid | S::Shipped | S::Delivered)) => {
            ignore("the order is paid already")
        }
        (E::PaymentReceived, Some(S::Cancelled)) => {
            conflict("payment received for a cancelled order")
        }

        (E::Shipped, None | Some(S::Created)) => defer("the order is not paid yet"),
        (E::Shipped, Some(S::Paid)) => to(S::Shipped),
        (E::Shipped, Some(S::Shipped | S::Delivered)) => ignore("the order is shipped already"),
        (E::Shipped, Some(S::Cancelled)) => conflict("shipment of a cancelled order"),

        (E::Delivered, None | Some(S::Created | S::Paid)) => defer("the order is not shipped yet"),
        (E::Delivered, Some(S::Shipped)) => to(S::Delivered),
        (E::Delivered, Some(S::Delivered)) => ignore("the order is delivered already"),
        (E::Delivered, Some(S::Cancelled)) => conflict("delivery of a cancelled order"),

        (E::Cancelled, None) => defer("the order is not known yet"),
        (E::Cancelled, Some(S::Created | S::Paid)) => to(S::Cancelled),
        (E::Cancelled, Some(S::Shipped | S::Delivered)) => {
            conflict("cancellation of an order that has shipped")
        }
        (E::Cancelled, Some(S::Cancelled)) => ignore("the order is cancelled already"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrderEvent as E;
    use OrderStatus as S;

    #[test]
    fn the_happy_path_is_one_transition_per_event() {
        let mut state = None;
        for (event, expected) in [
            (E::Created, S::Created),
            (E::PaymentReceived, S::Paid),
            (E::Shipped, S::Shipped),
            (E::Delivered, S::Delivered),
        ] {
            match decide(event, state) {
                Decision::Transition { from, to } => {
                    assert_eq!(from, state);
                    assert_eq!(to, expected);
                    state = Some(to);
                }
                other => panic!("{event:?} in {state:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn payment_for_an_unknown_order_creates_it_paid_in_one_transition() {
        assert_eq!(
            decide(E::PaymentReceived, None),
            Decision::Transition {
                from: None,
                to: S::Paid
            }
        );
        assert!(matches!(
            decide(E::Created, Some(S::Paid)),
            Decision::Ignore(_)
        ));
    }

    #[test]
    fn missing_prerequisites_defer() {
        for (event, state) in [
            (E::Shipped, None),
            (E::Shipped, Some(S::Created)),
            (E::Delivered, None),
            (E::Delivered, Some(S::Paid)),
            (E::Cancelled, None),
        ] {
            assert!(
                matches!(decide(event, state), Decision::Defer(_)),
                "{event:?} in {state:?}"
            );
        }
    }

    #[test]
    fn every_event_in_every_state_has_a_decision_and_repeats_are_ignored() {
        let states = std::iter::once(None).chain(S::ALL.into_iter().map(Some));
        for state in states {
            for event in E::ALL {
                // the second delivery of an event that transitioned is a no-op
                if let Decision::Transition { to, .. } = decide(event, state) {
                    assert!(
                        !matches!(decide(event, Some(to)), Decision::Transition { .. }),
                        "{event:?} twice from {state:?}"
                    );
                }
            }
        }
        assert!(matches!(
            decide(E::Shipped, Some(S::Cancelled)),
            Decision::Conflict(_)
        ));
        assert!(matches!(
            decide(E::Cancelled, Some(S::Shipped)),
            Decision::Conflict(_)
        ));
    }

    #[test]
    fn names_round_trip() {
        for s in S::ALL {
            assert_eq!(s.as_str().parse::<S>(), Ok(s));
        }
        assert!("lost".parse::<S>().is_err());
        for e in E::ALL {
            assert_eq!(E::from_type(e.event_type()), Some(e));
        }
        assert_eq!(E::from_type("order.teleported"), None);
    }
}
