//! One batch: the claim (with its lease), the deliveries within each
//! destination's slots, and a failed claim taken again row by row.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;
use tracing::Instrument as _;

use super::attempt::{self, Kind};
use super::fairness::Reserved;
use super::report::{BatchReport, Delivered};
use super::{Lease, Relay, chrono_duration};
use crate::config::{Destination, HookboxConfig};
use crate::outbox::repo::CLAIM_BUDGET_BYTES;
use crate::outbox::{self, Claimed, DeliveryResult, OutboxRow, UnreadableRow};

pub(super) use super::Endpoints;
use crate::store::DbError;

/// A claimed row the claim could not decode: dead, with the reason.
pub(super) fn unreadable(bad: UnreadableRow) -> (DeliveryResult, Kind) {
    attempt::dead_unreadable(
        bad.id,
        None,
        format!(
            "the row cannot be read: {}; it can never be delivered as written \
             (fix the row, then `hookbox outbox retry`)",
            bad.error
        ),
    )
}

/// Counts what an attempt came to.
pub(super) fn count(report: &mut BatchReport, kind: Kind) {
    match kind {
        Kind::Delivered => report.delivered += 1,
        Kind::Retried { refused } => {
            report.retried += 1;
            report.refused += u64::from(refused);
        }
        Kind::Dead {
            gone,
            refused,
            unreadable,
        } => {
            report.dead += 1;
            report.gone += u64::from(gone);
            report.refused += u64::from(refused);
            report.unreadable += u64::from(unreadable);
        }
        Kind::NotAttempted => report.not_attempted += 1,
    }
}

/// Request slots per destination (`max_in_flight`) and per host (scheme,
/// host and port: `RelaySettings::requests_per_host`), shared by every
/// batch of one relay, whichever lane runs it.
#[derive(Debug)]
pub(crate) struct Slots {
    per_host: usize,
    /// Hashes hosts, seeded per process (a host name chosen to collide with
    /// another's would otherwise share its slots).
    hasher: foldhash::fast::RandomState,
    held: Mutex<SlotMaps>,
}

#[derive(Debug, Default)]
struct SlotMaps {
    /// Each destination's slots (and the `max_in_flight` they were made
    /// for), with its host's (HTTP destinations: which host, and its slots).
    destinations: foldhash::HashMap<String, DestinationSlots>,
    /// Each host's slots, by the hash of its scheme, host and port.
    hosts: foldhash::HashMap<u64, Arc<Semaphore>>,
}

#[derive(Debug)]
struct DestinationSlots {
    limit: usize,
    slot: Arc<Semaphore>,
    host: Option<(u64, Arc<Semaphore>)>,
}

/// Which host an HTTP destination's requests go to: its URL's scheme, host
/// and port, hashed with `hasher` (as the HTTP adapter's connection pools
/// count receivers).
fn host_of(hasher: &foldhash::fast::RandomState, destination: &Destination) -> Option<u64> {
    use std::hash::BuildHasher as _;
    match &destination.target {
        crate::config::Target::Http(http) => Some(hasher.hash_one((
            http.url.scheme(),
            http.url.host_str(),
            http.url.port_or_known_default(),
        ))),
        _ => None,
    }
}

impl Slots {
    /// Slots for a relay sending at most `per_host` requests at once to one
    /// host.
    pub(crate) fn new(per_host: usize) -> Self {
        Self {
            per_host: per_host.max(1),
            hasher: foldhash::fast::RandomState::default(),
            held: Mutex::default(),
        }
    }

    /// `destination`'s slots, and its host's (HTTP destinations only).
    pub(crate) fn of(&self, destination: &Destination) -> (Arc<Semaphore>, Option<Arc<Semaphore>>) {
        let host = host_of(&self.hasher, destination);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = held.destinations.get(&destination.name) {
            if d.limit == destination.max_in_flight && d.host.as_ref().map(|h| h.0) == host {
                return (d.slot.clone(), d.host.as_ref().map(|h| h.1.clone()));
            }
        }
        let per_host = self.per_host;
        let host = host.map(|h| {
            let slots = held
                .hosts
                .entry(h)
                .or_insert_with(|| Arc::new(Semaphore::new(per_host)))
                .clone();
            (h, slots)
        });
        let slot = match held.destinations.get(&destination.name) {
            // (its host changed: the same slots, the requests in flight
            // hold them)
            Some(d) if d.limit == destination.max_in_flight => d.slot.clone(),
            _ => Arc::new(Semaphore::new(destination.max_in_flight)),
        };
        let host_slot = host.as_ref().map(|h| h.1.clone());
        held.destinations.insert(
            destination.name.clone(),
            DestinationSlots {
                limit: destination.max_in_flight,
                slot: slot.clone(),
                host,
            },
        );
        (slot, host_slot)
    }
}

impl Relay {
    /// One batch: claim due rows (one statement), deliver them, record every
    /// result (one statement). A row that waited `slot_wait` for one of its
    /// destination's `max_in_flight` slots, or would start too close to
    /// `batch_deadline`, is released unattempted; no request outlives the
    /// deadline. A claim that fails as a whole, not retryably, is claimed
    /// again row by row ([`Relay::reclaim`]). (A lane of [`Relay::run`]
    /// records each batch together with its next claim instead: one
    /// statement per batch.)
    pub async fn deliver_batch(
        &self,
        config: &HookboxConfig,
        batch_deadline: DateTime<Utc>,
    ) -> Result<BatchReport, DbError> {
        let (lease, reserved) = self.lease(config, batch_deadline, self.settings.batch_size);
        let request = lease.request(self.settings.batch_size);
        let claimed = match outbox::claim_batch(self.db.as_ref(), request, CLAIM_BUDGET_BYTES).await
        {
            Ok(claimed) => {
                self.fairness.claimed(reserved, claimed.destinations());
                claimed
            }
            Err(e) if !e.is_retryable() => {
                tracing::error!(error = %e, "the claim failed; claiming its rows again one by one");
                self.fairness.claimed(reserved, std::iter::empty());
                let claimed = self.reclaim(&lease).await?;
                self.fairness
                    .claimed(Reserved::default(), claimed.destinations());
                claimed
            }
            Err(e) => {
                self.fairness.claimed(reserved, std::iter::empty());
                return Err(e);
            }
        };
        if claimed.is_empty() {
            return Ok(BatchReport::default());
        }
        let delivered = self
            .deliver(config, lease.token, claimed, batch_deadline)
            .await;
        let recorded = outbox::record_results(
            self.db.as_ref(),
            &delivered.token,
            self.clock.now(),
            &delivered.results,
        )
        .await?;
        Ok(delivered.recorded(recorded))
    }

    /// The terms of the next claim: now, a lease outlasting `batch_deadline`,
    /// a token naming the batch, the ordered destinations.
    ///
    /// The terms of the next claim, with the destinations' caps
    /// ([`super::fairness`]) and the rate-limit tokens they reserved (give
    /// them to `Fairness::claimed` with what was claimed).
    pub(super) fn lease(
        &self,
        config: &HookboxConfig,
        batch_deadline: DateTime<Utc>,
        limit: i64,
    ) -> (Lease, Reserved) {
        let now = self.clock.now();
        let (caps, reserved) = self.fairness.caps(config, now, limit);
        let lease = Lease {
            now,
            lease_until: batch_deadline.max(now) + chrono_duration(self.settings.lease_slack),
            // `locked_by` names this batch, not just this relay: a lane whose
            // lease ran out must not record over a row another lane (of the
            // same relay) has claimed since
            token: format!("{}/{}", self.settings.worker, uuid::Uuid::new_v4().simple()),
            ordered: config
                .destinations()
                .filter(|d| d.ordered)
                .map(|d| d.name.clone())
                .collect(),
            caps,
        };
        (lease, reserved)
    }

    /// After a claim statement failed as a whole and not retryably (the Data
    /// API refusing an answer it cannot carry, after the statement ran and
    /// committed its leases; a row no statement can decode): claims again
    /// under the same token, ids only, which takes that claim's leases back
    /// first (they are the oldest due rows), then reads each row on its own.
    /// A row that cannot be read on its own either is returned as
    /// unreadable (the caller records it dead with the reason); the others
    /// are delivered as usual. A retryable error while reading ends it.
    pub(super) async fn reclaim(&self, lease: &Lease) -> Result<Claimed, DbError> {
        let ids =
            outbox::claim_ids(self.db.as_ref(), lease.request(self.settings.batch_size)).await?;
        let mut claimed = Claimed::default();
        for id in ids {
            match outbox::get(self.db.as_ref(), id).await {
                Ok(Some(row)) => claimed.rows.push(row),
                // (deleted meanwhile: nothing to deliver)
                Ok(None) => {}
                Err(e) if e.is_retryable() => return Err(e),
                Err(e) => claimed.unreadable.push(UnreadableRow {
                    id,
                    error: e.to_string(),
                }),
            }
        }
        claimed.rows.sort_by_key(|r| r.seq);
        Ok(claimed)
    }

    /// The tenants' endpoints among the claimed rows' destinations (those
    /// the configuration does not name), from the documents the claim
    /// returned, the others read in one statement (or from the directory's
    /// cache); none without a directory.
    pub(super) async fn resolve_endpoints(
        &self,
        config: &HookboxConfig,
        claimed: &Claimed,
    ) -> Endpoints {
        let Some(directory) = &self.endpoints else {
            return Endpoints::default();
        };
        let names: Vec<&str> = claimed
            .destinations()
            .filter(|n| config.destination(n).is_none())
            .collect();
        directory
            .resolve(
                self.db.as_ref(),
                &names,
                &claimed.endpoints,
                self.clock.now(),
            )
            .await
    }

    /// The claimed rows' endpoints made known to the relay's fairness
    /// (their tenants and rate limits); the rows over their endpoint's rate
    /// are taken out, not attempted, due when a token will be there, and so
    /// are rows of slow or suspect endpoints beyond the bound on their
    /// requests (due now: the next claim caps them).
    pub(super) fn admit(
        &self,
        endpoints: &Endpoints,
        rows: &mut Vec<OutboxRow>,
    ) -> Vec<(DeliveryResult, Kind)> {
        let resolved: Vec<&Destination> = endpoints
            .values()
            .filter_map(|d| d.as_ref().ok().map(AsRef::as_ref))
            .collect();
        self.fairness
            .admit(&resolved, rows, self.clock.now())
            .into_iter()
            .map(|(row, due)| attempt::released(&row, due))
            .collect()
    }

    /// One attempt of `row`, to its configured destination or its tenant's
    /// endpoint (as resolved in `endpoints`).
    pub(super) async fn attempt_resolved(
        &self,
        config: &HookboxConfig,
        endpoints: &Endpoints,
        row: &OutboxRow,
        batch_deadline: DateTime<Utc>,
    ) -> (DeliveryResult, Kind) {
        let (result, kind) = self
            .attempt_of(config, endpoints, row, batch_deadline)
            .instrument(attempt::delivery_span(row))
            .await;
        let configured = config.destination(&row.destination).is_some();
        self.by_destination.record(
            &row.destination,
            configured,
            &kind,
            result.attempt.as_ref().map(|a| a.latency),
            self.end_to_end(row),
        );
        if configured && self.notifier.is_some() {
            self.troubles.record(row, &kind, &result);
        }
        (result, kind)
    }

    async fn attempt_of(
        &self,
        config: &HookboxConfig,
        endpoints: &Endpoints,
        row: &OutboxRow,
        batch_deadline: DateTime<Utc>,
    ) -> (DeliveryResult, Kind) {
        let destination = match (
            config.destination(&row.destination),
            endpoints.get(&row.destination),
        ) {
            (Some(d), _) => Some(d),
            (None, Some(Ok(d))) => Some(d.as_ref()),
            (None, Some(Err(why))) => {
                return self.unresolved(row, why.reason.clone(), why.retryable);
            }
            (None, None) => None,
        };
        let slots = destination.map(|d| self.slots.of(d));
        self.attempt(row, destination, slots, batch_deadline).await
    }

    /// Delivers claimed rows (each destination's slots shared with every
    /// lane); the results are not recorded yet. Rows the claim could not
    /// decode are dead, with the reason.
    pub(super) async fn deliver(
        &self,
        config: &HookboxConfig,
        token: String,
        claimed: Claimed,
        batch_deadline: DateTime<Utc>,
    ) -> Delivered {
        let mut report = BatchReport {
            claimed: claimed.len() as u64,
            ..BatchReport::default()
        };
        let mut claimed = claimed;
        let endpoints = self.resolve_endpoints(config, &claimed).await;
        let released = self.admit(&endpoints, &mut claimed.rows);
        let endpoints = &endpoints;
        let attempts = claimed.rows.iter().map(|row| async move {
            let done = self
                .attempt_resolved(config, endpoints, row, batch_deadline)
                .await;
            // the whole batch is awaited: every answer is prompt
            self.fairness.finished(
                &row.destination,
                !matches!(done.1, Kind::NotAttempted),
                matches!(done.1, Kind::Delivered),
            );
            done
        });
        let mut outcomes = futures::future::join_all(attempts).await;
        outcomes.extend(released);
        outcomes.extend(claimed.unreadable.into_iter().map(unreadable));
        let mut results = Vec::with_capacity(outcomes.len());
        for (result, kind) in outcomes {
            count(&mut report, kind);
            results.push(result);
        }
        Delivered {
            token,
            results,
            report,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

    fn config() -> HookboxConfig {
        HookboxConfig::parse(
            &serde_json::json!({ "destinations": {
                "a": { "url": "https://hooks.example.com/a", "secrets": [SECRET] },
                "b": { "url": "https://hooks.example.com:443/b?x=1", "secrets": [SECRET] },
                "c": { "url": "https://hooks.example.com:8443/c", "secrets": [SECRET] },
                "d": { "url": "http://hooks.example.com/d", "secrets": [SECRET] },
                "e": { "url": "https://other.example.com/e", "secrets": [SECRET] },
            }})
            .to_string(),
            "test",
        )
        .expect("config")
    }

    #[test]
    fn destinations_on_one_scheme_host_and_port_share_its_slots() {
        let cfg = config();
        let slots = Slots::new(3);
        let host = |name: &str| {
            let d = cfg.destination(name).expect("configured");
            slots
                .of(d)
                .1
                .expect("an HTTP destination has its host's slots")
        };
        let a = host("a");
        assert_eq!(a.available_permits(), 3);
        assert!(
            Arc::ptr_eq(&a, &host("b")),
            "the same host, port 443 spelt out"
        );
        for other in ["c", "d", "e"] {
            assert!(!Arc::ptr_eq(&a, &host(other)), "{other} is another host");
        }
        // a destination's own slots stay its own
        let (own_a, _) = slots.of(cfg.destination("a").expect("a"));
        let (own_b, _) = slots.of(cfg.destination("b").expect("b"));
        assert!(!Arc::ptr_eq(&own_a, &own_b));
        assert_eq!(own_a.available_permits(), 10);
    }

    #[test]
    fn a_destination_moved_to_another_host_takes_that_hosts_slots() {
        let cfg = config();
        let slots = Slots::new(3);
        let a = cfg.destination("a").expect("a").clone();
        let (own, before) = slots.of(&a);
        let mut moved = a.clone();
        if let crate::config::Target::Http(http) = &mut moved.target {
            http.url = reqwest::Url::parse("https://other.example.com/a").expect("url");
        }
        let (own_after, after) = slots.of(&moved);
        let e = slots.of(cfg.destination("e").expect("e")).1;
        assert!(
            Arc::ptr_eq(&own, &own_after),
            "its own slots, held by its requests"
        );
        assert!(!Arc::ptr_eq(
            &before.expect("a's host"),
            after.as_ref().expect("its new host")
        ));
        assert!(Arc::ptr_eq(
            &after.expect("its new host"),
            &e.expect("e's host")
        ));
    }
}
