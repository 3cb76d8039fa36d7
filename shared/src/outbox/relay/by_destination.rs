//! Deliveries per destination, for the relay's per-destination metrics,
//! bounded so that many endpoints never mean many metrics: each configured
//! destination counts in a set of its own (at most [`MAX_SETS`]; the rest
//! in [`OTHER`]), and every tenant's endpoint in one set,
//! [`TENANT_ENDPOINTS`]. With 10,000 endpoints a set each would be 40,000
//! CloudWatch metrics; an endpoint's own deliveries are in its attempt log
//! (`hookbox endpoint attempts`, the management API) and in the relay's
//! log lines, which name it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::attempt::Kind;
use crate::metrics::{MAX_VALUES, Metrics, Unit};

/// The set every tenant's endpoint counts in.
pub const TENANT_ENDPOINTS: &str = "tenant-endpoints";

/// The set of configured destinations beyond [`MAX_SETS`].
pub const OTHER: &str = "other";

/// Most sets of one run (configured destinations with a set of their own,
/// the endpoints' and [`OTHER`] aside).
pub const MAX_SETS: usize = 50;

/// What one set's attempts came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DestinationCounts {
    /// Answered 2xx.
    pub delivered: u64,
    /// Failed, another attempt scheduled.
    pub failed: u64,
    /// Given up (its schedule ran out, 410 Gone, or it can never be sent).
    pub dead: u64,
    /// Each delivered attempt's latency, milliseconds (at most
    /// [`MAX_VALUES`] a run: EMF's limit).
    pub latencies_ms: Vec<f64>,
    /// Each delivery of a row written for an inbound webhook: how long
    /// after the webhook was received it was delivered, milliseconds (at
    /// most [`MAX_VALUES`] a run).
    pub end_to_end_ms: Vec<f64>,
}

/// The counts of a relay's attempts since they were last taken.
#[derive(Debug, Default)]
pub(super) struct ByDestination(Mutex<BTreeMap<String, DestinationCounts>>);

impl ByDestination {
    /// One attempt of `destination` (a configured one when `configured`)
    /// came to `kind`, in `latency` when a request was sent, `end_to_end`
    /// after its webhook was received when it was written for one.
    pub(super) fn record(
        &self,
        destination: &str,
        configured: bool,
        kind: &Kind,
        latency: Option<Duration>,
        end_to_end: Option<Duration>,
    ) {
        if matches!(kind, Kind::NotAttempted) {
            return;
        }
        let mut sets = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // (an endpoint needs no look at the sets: it always counts in theirs)
        let set = if !configured {
            TENANT_ENDPOINTS
        } else if sets.contains_key(destination)
            || sets
                .keys()
                .filter(|k| *k != TENANT_ENDPOINTS && *k != OTHER)
                .count()
                < MAX_SETS
        {
            destination
        } else {
            OTHER
        };
        if !sets.contains_key(set) {
            sets.insert(set.to_owned(), DestinationCounts::default());
        }
        let Some(counts) = sets.get_mut(set) else {
            return;
        };
        match kind {
            Kind::Delivered => {
                counts.delivered += 1;
                if let Some(latency) = latency.filter(|_| counts.latencies_ms.len() < MAX_VALUES) {
                    counts.latencies_ms.push(latency.as_secs_f64() * 1000.0);
                }
                if let Some(e2e) = end_to_end.filter(|_| counts.end_to_end_ms.len() < MAX_VALUES) {
                    counts.end_to_end_ms.push(e2e.as_secs_f64() * 1000.0);
                }
            }
            Kind::Retried { .. } => counts.failed += 1,
            Kind::Dead { .. } => counts.dead += 1,
            Kind::NotAttempted => {}
        }
    }

    /// The counts so far, and a fresh start.
    pub(super) fn take(&self) -> BTreeMap<String, DestinationCounts> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// One EMF document per set: `Delivered`, `Failed`, `Dead`,
/// `DeliveryLatency` and `EndToEndLatency` (received to delivered, rows
/// written for an inbound webhook) with the dimensions `Function=relay` and
/// `Destination=<set>` (and the stack's).
pub fn metrics(sets: &BTreeMap<String, DestinationCounts>) -> Vec<Metrics> {
    sets.iter()
        .map(|(name, counts)| {
            let mut m = Metrics::new();
            m.dimension("Function", "relay")
                .dimension("Destination", name)
                .count("Delivered", counts.delivered)
                .count("Failed", counts.failed)
                .count("Dead", counts.dead);
            for latency in &counts.latencies_ms {
                m.record("DeliveryLatency", Unit::Milliseconds, *latency);
            }
            for e2e in &counts.end_to_end_ms {
                m.record("EndToEndLatency", Unit::Milliseconds, *e2e);
            }
            m
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DEAD: Kind = Kind::Dead {
        gone: false,
        refused: false,
        unreadable: false,
    };

    #[test]
    fn configured_destinations_count_alone_and_endpoints_together() {
        let by = ByDestination::default();
        let ms = |n| Some(Duration::from_millis(n));
        by.record("erp", true, &Kind::Delivered, ms(12), ms(900));
        by.record(
            "erp",
            true,
            &Kind::Retried { refused: false },
            ms(30),
            ms(950),
        );
        by.record("erp", true, &DEAD, None, None);
        by.record("ep_1", false, &Kind::Delivered, ms(5), None);
        by.record("ep_2", false, &Kind::Delivered, ms(7), None);
        by.record("ep_2", false, &Kind::NotAttempted, None, None);
        let sets = by.take();
        assert_eq!(
            sets.keys().collect::<Vec<_>>(),
            ["erp", TENANT_ENDPOINTS],
            "no set per endpoint"
        );
        assert_eq!(
            sets["erp"],
            DestinationCounts {
                delivered: 1,
                failed: 1,
                dead: 1,
                latencies_ms: vec![12.0],
                end_to_end_ms: vec![900.0],
            }
        );
        assert_eq!(sets[TENANT_ENDPOINTS].delivered, 2);
        assert_eq!(sets[TENANT_ENDPOINTS].latencies_ms, [5.0, 7.0]);
        assert!(
            sets[TENANT_ENDPOINTS].end_to_end_ms.is_empty(),
            "rows written for no webhook have no end-to-end latency"
        );
        let doc = metrics(&sets)[0].to_emf_of(None, 1_700_000_000_000);
        assert_eq!(doc["EndToEndLatency"], 900.0, "one value");
        assert!(by.take().is_empty(), "taken: a fresh start");
    }

    #[test]
    fn sets_are_bounded_and_each_document_within_emfs_limits() {
        let by = ByDestination::default();
        for i in 0..MAX_SETS + 5 {
            by.record(&format!("d{i:03}"), true, &Kind::Delivered, None, None);
        }
        for _ in 0..150 {
            by.record(
                "d000",
                true,
                &Kind::Delivered,
                Some(Duration::from_millis(3)),
                Some(Duration::from_millis(40)),
            );
        }
        let sets = by.take();
        assert_eq!(sets.len(), MAX_SETS + 1, "the rest in one set");
        assert_eq!(sets[OTHER].delivered, 5);
        let docs = metrics(&sets);
        assert_eq!(docs.len(), MAX_SETS + 1);
        let doc = docs[0].to_emf_of(Some("hookbox-prod"), 1_700_000_000_000);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Stack", "Function", "Destination"]])
        );
        assert_eq!(doc["Destination"], "d000");
        assert_eq!(doc["Delivered"], 151.0);
        assert_eq!(
            doc["DeliveryLatency"].as_array().map(Vec::len),
            Some(MAX_VALUES),
            "at most 100 values a metric"
        );
        assert_eq!(
            doc["EndToEndLatency"].as_array().map(Vec::len),
            Some(MAX_VALUES)
        );
        let definitions = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .map(Vec::len);
        assert_eq!(definitions, Some(5), "well under 100 metrics a document");
    }
}
