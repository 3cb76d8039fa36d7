//! [`Coalescing`]: the relay attempts each row on its own (its slot, its
//! schedule, its result), all the rows of a claim at once; a transport
//! whose service takes entries in batches (SendMessageBatch and PutEvents
//! take ten) gets them together instead of one call each.
//!
//! Each single-entry delivery queues its entry under its destination and
//! lets the others started with it join (it yields to the scheduler until
//! no new entry arrived in two passes, a few times at most: the relay
//! starts a claim's attempts in one pass, so they arrive together, and
//! attempts whose slots free up one by one arrive over a few passes). Then, if its entry is
//! still queued, it takes it with up to `max_batch − 1` others and delivers
//! them in one request, handing each its outcome; if another delivery took
//! it, it waits for that one's outcome. Every entry is sent by its own call
//! or by the one that took it, so none is left behind; a delivery cancelled
//! while queued takes its entry back out, and an entry whose batch was
//! abandoned mid-call is a retry, never delivered.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{DeliveryRequest, Entry, EntryOutcome, Transport};
use crate::blob::BlobRef;

/// How many times a delivery yields for others to join its batch, at most.
const MAX_YIELDS: usize = 8;

/// An entry waiting for its batch, owned (it crosses deliveries).
struct Pending {
    ticket: u64,
    id: Uuid,
    event_type: String,
    aggregate_type: String,
    aggregate_id: String,
    payload: String,
    blob: Option<BlobRef>,
    timeout: Duration,
    answer: oneshot::Sender<EntryOutcome>,
}

impl Pending {
    fn entry(&self) -> Entry<'_> {
        Entry {
            id: self.id,
            event_type: &self.event_type,
            aggregate_type: &self.aggregate_type,
            aggregate_id: &self.aggregate_id,
            payload: &self.payload,
            blob: self.blob.as_ref(),
        }
    }
}

/// A transport whose concurrent single-entry deliveries to one destination
/// are sent together, `max_batch` at most per request to `inner` (which
/// still splits a request the service's size limits need split).
#[derive(Debug)]
pub struct Coalescing<T> {
    inner: T,
    max_batch: usize,
    queues: Mutex<HashMap<String, VecDeque<PendingSlot>>>,
    tickets: AtomicU64,
}

/// A queued entry (a newtype so the map can be `Debug` without payloads).
struct PendingSlot(Pending);

impl std::fmt::Debug for PendingSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({})", self.0.id)
    }
}

impl<T: Transport> Coalescing<T> {
    /// `inner`, sent `max_batch` entries at most per request (at least 1).
    pub fn new(inner: T, max_batch: usize) -> Self {
        Self {
            inner,
            max_batch: max_batch.max(1),
            queues: Mutex::new(HashMap::new()),
            tickets: AtomicU64::new(0),
        }
    }

    /// The transport batches are sent through.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<PendingSlot>>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queued(&self, destination: &str) -> usize {
        self.queues().get(destination).map_or(0, VecDeque::len)
    }

    /// Takes `ticket`'s entry and up to `max_batch − 1` others (oldest
    /// first) out of the queue; none if another delivery took it.
    fn take(&self, destination: &str, ticket: u64) -> Vec<Pending> {
        let mut queues = self.queues();
        let Some(queue) = queues.get_mut(destination) else {
            return Vec::new();
        };
        let Some(at) = queue.iter().position(|p| p.0.ticket == ticket) else {
            return Vec::new();
        };
        let mut batch = Vec::with_capacity(self.max_batch);
        if let Some(own) = queue.remove(at) {
            batch.push(own.0);
        }
        while batch.len() < self.max_batch {
            match queue.pop_front() {
                Some(other) => batch.push(other.0),
                None => break,
            }
        }
        if queue.is_empty() {
            queues.remove(destination);
        }
        batch
    }

    /// Takes `ticket`'s entry back out, if it is still queued.
    fn withdraw(&self, destination: &str, ticket: u64) {
        let mut queues = self.queues();
        if let Some(queue) = queues.get_mut(destination) {
            queue.retain(|p| p.0.ticket != ticket);
            if queue.is_empty() {
                queues.remove(destination);
            }
        }
    }
}

/// Withdraws a queued entry when its delivery ends (or is cancelled)
/// before a batch took it.
struct Withdraw<'a, T: Transport> {
    coalescing: &'a Coalescing<T>,
    destination: &'a str,
    ticket: u64,
}

impl<T: Transport> Drop for Withdraw<'_, T> {
    fn drop(&mut self) {
        self.coalescing.withdraw(self.destination, self.ticket);
    }
}

#[async_trait]
impl<T: Transport> Transport for Coalescing<T> {
    async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
        let [entry] = request.entries else {
            // already a batch (or nothing): as it is
            return self.inner.deliver(request).await;
        };
        let destination = request.destination.name.as_str();
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        self.queues()
            .entry(destination.to_string())
            .or_default()
            .push_back(PendingSlot(Pending {
                ticket,
                id: entry.id,
                event_type: entry.event_type.to_string(),
                aggregate_type: entry.aggregate_type.to_string(),
                aggregate_id: entry.aggregate_id.to_string(),
                payload: entry.payload.to_string(),
                blob: entry.blob.cloned(),
                timeout: request.timeout,
                answer,
            }));
        let _withdraw = Withdraw {
            coalescing: self,
            destination,
            ticket,
        };
        // let the deliveries started with this one join it: until the batch
        // is full, or no entry joined in two passes in a row
        let (mut seen, mut still) = (0, 0);
        for _ in 0..MAX_YIELDS {
            let queued = self.queued(destination);
            if queued >= self.max_batch {
                break;
            }
            if queued == seen {
                still += 1;
                if still == 2 {
                    break;
                }
            } else {
                (seen, still) = (queued, 0);
            }
            yield_once().await;
        }
        let batch = self.take(destination, ticket);
        if batch.is_empty() {
            // another delivery took this entry: its outcome comes from there
            return vec![answered.await.unwrap_or_else(|_| {
                EntryOutcome::retry(format!(
                    "the batch entry {} was sent in to destination {destination:?} was \
                     abandoned before its answer",
                    entry.id
                ))
            })];
        }
        let entries: Vec<Entry<'_>> = batch.iter().map(Pending::entry).collect();
        let timeout = batch
            .iter()
            .map(|p| p.timeout)
            .min()
            .unwrap_or(request.timeout);
        let mut outcomes = self
            .inner
            .deliver(DeliveryRequest {
                destination: request.destination,
                entries: &entries,
                started_at: request.started_at,
                timeout,
            })
            .await
            .into_iter();
        drop(entries);
        let mut own = None;
        for pending in batch {
            let outcome = outcomes.next().unwrap_or_else(|| {
                EntryOutcome::retry(format!(
                    "the transport of destination {destination:?} gave no outcome for the entry"
                ))
            });
            if pending.ticket == ticket {
                own = Some(outcome);
            } else {
                // (a delivery that stopped waiting no longer needs it)
                let _ = pending.answer.send(outcome);
            }
        }
        vec![own.unwrap_or_else(|| EntryOutcome::retry("no outcome for the entry"))]
    }
}

/// Returns to the caller once, woken at once: the other futures polled in
/// the same pass (a relay lane's attempts share one task) run before this
/// one resumes. (Not `tokio::task::yield_now`, which defers the wake to the
/// runtime: a lane that polls its attempts with `now_or_never` would lose
/// it and resume them only on its next timer.)
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{DateTime, Utc};

    use super::*;
    use crate::config::HookboxConfig;

    /// Records each request's entry ids; refuses entries whose payload is
    /// `"dead"`.
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<Vec<Uuid>>>);

    #[async_trait]
    impl Transport for Arc<Recorder> {
        async fn deliver(&self, request: DeliveryRequest<'_>) -> Vec<EntryOutcome> {
            self.0
                .lock()
                .expect("lock")
                .push(request.entries.iter().map(|e| e.id).collect());
            request
                .entries
                .iter()
                .map(|e| match e.payload {
                    "\"dead\"" => EntryOutcome::dead(format!("refused {}", e.id)),
                    _ => EntryOutcome::delivered(),
                })
                .collect()
        }
    }

    fn config() -> HookboxConfig {
        HookboxConfig::parse(
            r#"{"destinations": {
                "q": {"type": "sqs", "queue_url": "http://127.0.0.1:1/123/q"},
                "r": {"type": "sqs", "queue_url": "http://127.0.0.1:1/123/r"}}}"#,
            "test",
        )
        .expect("valid")
    }

    async fn one(
        transport: &Coalescing<Arc<Recorder>>,
        config: &HookboxConfig,
        destination: &str,
        n: u128,
        payload: &str,
    ) -> EntryOutcome {
        let entry = Entry {
            id: Uuid::from_u128(n),
            event_type: "t",
            aggregate_type: "a",
            aggregate_id: "1",
            payload,
            blob: None,
        };
        let mut outcomes = transport
            .deliver(DeliveryRequest {
                destination: config.destination(destination).expect("configured"),
                entries: &[entry],
                started_at: DateTime::<Utc>::UNIX_EPOCH,
                timeout: Duration::from_secs(1),
            })
            .await;
        assert_eq!(outcomes.len(), 1);
        outcomes.remove(0)
    }

    #[tokio::test]
    async fn deliveries_started_together_go_ten_to_a_request_per_destination() {
        let recorder = Arc::new(Recorder::default());
        let transport = Coalescing::new(recorder.clone(), 10);
        let config = config();
        let deliveries = (0..25u128).map(|n| {
            let destination = if n < 23 { "q" } else { "r" };
            let payload = if n == 4 { "\"dead\"" } else { "{}" };
            one(&transport, &config, destination, n, payload)
        });
        let outcomes = futures::future::join_all(deliveries).await;
        // each delivery got its own entry's outcome
        for (n, outcome) in outcomes.iter().enumerate() {
            if n == 4 {
                assert_eq!(
                    *outcome,
                    EntryOutcome::dead(format!("refused {}", Uuid::from_u128(4)))
                );
            } else {
                assert_eq!(*outcome, EntryOutcome::delivered(), "entry {n}");
            }
        }
        let requests = recorder.0.lock().expect("lock").clone();
        let mut sizes: Vec<usize> = requests.iter().map(Vec::len).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![2, 3, 10, 10], "{requests:?}");
        // every entry sent exactly once, each request to one destination
        let mut sent: Vec<u128> = requests.iter().flatten().map(|id| id.as_u128()).collect();
        sent.sort_unstable();
        assert_eq!(sent, (0..25).collect::<Vec<_>>());
        for request in &requests {
            let to_r = |id: &Uuid| id.as_u128() >= 23;
            assert!(
                request.iter().all(to_r) || !request.iter().any(to_r),
                "one destination per request: {request:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_lone_delivery_is_sent_at_once_and_a_batch_passes_through() {
        let recorder = Arc::new(Recorder::default());
        let transport = Coalescing::new(recorder.clone(), 10);
        let config = config();
        assert_eq!(
            one(&transport, &config, "q", 1, "{}").await,
            EntryOutcome::delivered()
        );
        let entries: Vec<Entry<'_>> = (0..2u128)
            .map(|n| Entry {
                id: Uuid::from_u128(n),
                event_type: "t",
                aggregate_type: "a",
                aggregate_id: "1",
                payload: "{}",
                blob: None,
            })
            .collect();
        let outcomes = transport
            .deliver(DeliveryRequest {
                destination: config.destination("q").expect("q"),
                entries: &entries,
                started_at: DateTime::<Utc>::UNIX_EPOCH,
                timeout: Duration::from_secs(1),
            })
            .await;
        assert_eq!(outcomes.len(), 2);
        let sizes: Vec<usize> = recorder
            .0
            .lock()
            .expect("lock")
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, vec![1, 2]);
        assert!(transport.queues().is_empty(), "nothing left queued");
    }

    #[tokio::test]
    async fn a_delivery_cancelled_while_queued_takes_its_entry_back() {
        let recorder = Arc::new(Recorder::default());
        let transport = Coalescing::new(recorder.clone(), 10);
        let config = config();
        {
            let pending = std::pin::pin!(one(&transport, &config, "q", 1, "{}"));
            // polled once: queued, yielding for others
            assert!(futures::poll!(pending).is_pending());
            assert_eq!(transport.queued("q"), 1);
        }
        assert_eq!(transport.queued("q"), 0, "dropped: withdrawn");
        assert!(recorder.0.lock().expect("lock").is_empty(), "never sent");
    }
}
