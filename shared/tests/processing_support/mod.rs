//! Helpers of the processing tests: a harness that plays the Lambda event
//! source over the in-memory queue (receive → process → delete the
//! successes), a queue that records visibility changes, a database wrapper
//! that counts statements, and a scriptable business handler.
//!
//! Also used by `functions/processor`'s tests and bench (`#[path]`), so it
//! depends on nothing but the `hookbox` crate and common dependencies.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::example::OrdersHandler;
use hookbox::inbox::{self, Body, InboxMessage, NewInboxEvent};
use hookbox::processing::{
    BatchReport, BusinessHandler, HandlerError, InboxEvent, Outcome, Processor, ProcessorConfig,
};
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::queue::{Queue, QueueConsumer, QueueError, Received};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use uuid::Uuid;

pub const PARTNER: &str = "shop";

/// The manual clock's start.
pub fn t0() -> chrono::DateTime<chrono::Utc> {
    chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 6, 1, 12, 0, 0)
        .single()
        .expect("valid instant")
}
pub const DESTINATION: &str = "erp";

/// A partner payload of the example domain.
pub fn order_body(event_type: &str, order_id: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "type": event_type,
        "order_id": order_id,
        "amount_cents": 1250,
        "currency": "EUR",
    }))
    .expect("json")
}

/// The inbox event ingest would store.
pub fn new_event(event_id: &str, event_type: &str, body: Vec<u8>) -> NewInboxEvent {
    NewInboxEvent {
        partner: PARTNER.into(),
        event_id: event_id.into(),
        event_id_derived: false,
        event_type: Some(event_type.into()),
        ordering_key: None,
        body: Body::Inline(body),
        headers: serde_json::json!({}),
        signature_verified: true,
    }
}

// ---------------------------------------------------------------- queue

/// A queue that records every visibility change, then forwards it.
#[derive(Debug)]
pub struct RecordingQueue<Q> {
    pub inner: Q,
    changes: Mutex<Vec<(String, Duration)>>,
}

impl<Q> RecordingQueue<Q> {
    pub fn new(inner: Q) -> Self {
        Self {
            inner,
            changes: Mutex::default(),
        }
    }

    /// (receipt handle, timeout) of every change so far.
    pub fn changes(&self) -> Vec<(String, Duration)> {
        self.changes.lock().expect("lock").clone()
    }

    /// Timeouts set so far, in order.
    pub fn delays(&self) -> Vec<u64> {
        self.changes().iter().map(|(_, d)| d.as_secs()).collect()
    }
}

#[async_trait]
impl<Q: Queue> Queue for RecordingQueue<Q> {
    async fn send(&self, body: &str) -> Result<String, QueueError> {
        self.inner.send(body).await
    }

    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        self.inner.send_delayed(body, delay).await
    }

    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        self.changes
            .lock()
            .expect("lock")
            .push((receipt_handle.to_string(), timeout));
        self.inner.change_visibility(receipt_handle, timeout).await
    }
}

// ---------------------------------------------------------------- database

/// Statements run through a [`CountingDb`], by kind.
#[derive(Debug, Default)]
pub struct Counts {
    pub begin: AtomicU64,
    pub commit: AtomicU64,
    pub rollback: AtomicU64,
    by_name: Mutex<HashMap<&'static str, u64>>,
    time_by_name: Mutex<HashMap<&'static str, Duration>>,
}

impl Counts {
    /// Every round trip: statements plus BEGIN, COMMIT and ROLLBACK.
    pub fn total(&self) -> u64 {
        self.statements()
            + self.begin.load(Ordering::Relaxed)
            + self.commit.load(Ordering::Relaxed)
            + self.rollback.load(Ordering::Relaxed)
    }

    /// Statements (no transaction control).
    pub fn statements(&self) -> u64 {
        self.by_name.lock().expect("lock").values().sum()
    }

    /// Statements whose name starts with `prefix` (e.g. `example.`).
    pub fn named(&self, prefix: &str) -> u64 {
        self.by_name
            .lock()
            .expect("lock")
            .iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|(_, c)| c)
            .sum()
    }

    pub fn reset(&self) {
        self.begin.store(0, Ordering::Relaxed);
        self.commit.store(0, Ordering::Relaxed);
        self.rollback.store(0, Ordering::Relaxed);
        self.by_name.lock().expect("lock").clear();
        self.time_by_name.lock().expect("lock").clear();
    }

    /// (name, count, total time) per statement, BEGIN/COMMIT/ROLLBACK
    /// included as `begin`/`commit`/`rollback`, slowest first.
    pub fn breakdown(&self) -> Vec<(&'static str, u64, Duration)> {
        let counts = self.by_name.lock().expect("lock").clone();
        let times = self.time_by_name.lock().expect("lock").clone();
        let mut out: Vec<_> = times
            .iter()
            .map(|(name, time)| {
                let n = match *name {
                    "begin" => self.begin.load(Ordering::Relaxed),
                    "commit" => self.commit.load(Ordering::Relaxed),
                    "rollback" => self.rollback.load(Ordering::Relaxed),
                    other => counts.get(other).copied().unwrap_or(0),
                };
                (*name, n, *time)
            })
            .collect();
        out.sort_by_key(|entry| std::cmp::Reverse(entry.2));
        out
    }

    fn count(&self, statement: &Statement) {
        *self
            .by_name
            .lock()
            .expect("lock")
            .entry(statement.name)
            .or_default() += 1;
    }

    fn time(&self, name: &'static str, took: Duration) {
        *self
            .time_by_name
            .lock()
            .expect("lock")
            .entry(name)
            .or_default() += took;
    }
}

/// Runs `f`, adding its time to `name`.
async fn timed<T>(
    counts: &Counts,
    name: &'static str,
    f: impl std::future::Future<Output = T>,
) -> T {
    let started = std::time::Instant::now();
    let out = f.await;
    counts.time(name, started.elapsed());
    out
}

/// A database that counts what goes through it.
#[derive(Debug, Clone)]
pub struct CountingDb {
    pub inner: Arc<dyn Database>,
    pub counts: Arc<Counts>,
}

impl CountingDb {
    pub fn new(inner: Arc<dyn Database>) -> Self {
        Self {
            inner,
            counts: Arc::default(),
        }
    }
}

#[async_trait]
impl Executor for CountingDb {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.counts.count(statement);
        timed(
            &self.counts,
            statement.name,
            self.inner.execute(statement, params),
        )
        .await
    }
}

#[async_trait]
impl Database for CountingDb {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.counts.begin.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(CountingTx {
            inner: timed(&self.counts, "begin", self.inner.begin()).await?,
            counts: self.counts.clone(),
        }))
    }
}

#[derive(Debug)]
struct CountingTx {
    inner: Box<dyn Transaction>,
    counts: Arc<Counts>,
}

#[async_trait]
impl Executor for CountingTx {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.counts.count(statement);
        timed(
            &self.counts,
            statement.name,
            self.inner.execute(statement, params),
        )
        .await
    }
}

#[async_trait]
impl Transaction for CountingTx {
    async fn commit(self: Box<Self>) -> Result<(), DbError> {
        self.counts.commit.fetch_add(1, Ordering::Relaxed);
        let counts = self.counts.clone();
        timed(&counts, "commit", self.inner.commit()).await
    }

    async fn rollback(self: Box<Self>) -> Result<(), DbError> {
        self.counts.rollback.fetch_add(1, Ordering::Relaxed);
        let counts = self.counts.clone();
        timed(&counts, "rollback", self.inner.rollback()).await
    }
}

// ---------------------------------------------------------------- handler

/// What the scripted handler does for an event id.
#[derive(Debug, Clone)]
pub enum Script {
    /// Panics.
    Panic,
    /// Returns `Outcome::Retry` with this error.
    Retry(String),
    /// Returns `Outcome::Quarantine` with this reason.
    Quarantine(String),
    /// Writes through the example domain, then returns an error (the
    /// writes must roll back).
    WriteThenFail,
    /// Another worker claims the row (its lease having expired) while the
    /// handler runs; the handler then writes and says processed.
    StealLease(Arc<dyn Database>),
}

/// The example domain, except for the event ids given a script.
#[derive(Debug)]
pub struct ScriptedHandler {
    pub orders: OrdersHandler,
    scripts: Mutex<HashMap<String, Script>>,
    calls: Mutex<HashMap<String, u32>>,
    bodies: Mutex<HashMap<String, [u8; 32]>>,
}

impl Default for ScriptedHandler {
    fn default() -> Self {
        Self {
            orders: OrdersHandler::new(DESTINATION),
            scripts: Mutex::default(),
            calls: Mutex::default(),
            bodies: Mutex::default(),
        }
    }
}

impl ScriptedHandler {
    pub fn script(&self, event_id: &str, script: Script) {
        self.scripts
            .lock()
            .expect("lock")
            .insert(event_id.into(), script);
    }

    pub fn unscript(&self, event_id: &str) {
        self.scripts.lock().expect("lock").remove(event_id);
    }

    /// sha256 of the body the handler last saw for `event_id`.
    pub fn body_sha256(&self, event_id: &str) -> Option<[u8; 32]> {
        self.bodies.lock().expect("lock").get(event_id).copied()
    }

    /// How many times the handler ran for `event_id`.
    pub fn calls(&self, event_id: &str) -> u32 {
        self.calls
            .lock()
            .expect("lock")
            .get(event_id)
            .copied()
            .unwrap_or(0)
    }
}

#[async_trait]
impl BusinessHandler for ScriptedHandler {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        *self
            .calls
            .lock()
            .expect("lock")
            .entry(event.row.event_id.clone())
            .or_default() += 1;
        self.bodies.lock().expect("lock").insert(
            event.row.event_id.clone(),
            hookbox::blob::sha256(event.body),
        );
        let script = self
            .scripts
            .lock()
            .expect("lock")
            .get(&event.row.event_id)
            .cloned();
        match script {
            None => self.orders.handle(event, tx).await,
            Some(Script::Panic) => panic!("business code bug for {}", event.row.event_id),
            Some(Script::Retry(error)) => Ok(Outcome::Retry(error)),
            Some(Script::Quarantine(reason)) => Ok(Outcome::Quarantine(reason)),
            Some(Script::WriteThenFail) => {
                let outcome = self.orders.handle(event, tx).await?;
                assert_eq!(outcome, Outcome::Processed, "the write happened");
                Err(HandlerError::Retryable("downstream refused".into()))
            }
            Some(Script::StealLease(other)) => {
                let later = event.now + chrono::Duration::hours(1);
                let stolen = inbox::claim(
                    other.as_ref(),
                    &[event.row.id],
                    later,
                    later + chrono::Duration::minutes(2),
                )
                .await
                .expect("other worker's claim");
                assert!(
                    matches!(stolen.as_slice(), [inbox::Claim::Claimed { .. }]),
                    "{stolen:?}"
                );
                self.orders.handle(event, tx).await
            }
        }
    }
}

// ---------------------------------------------------------------- harness

/// The processor over a database, the in-memory queue (recording
/// visibility changes) and a manual clock; `deliver` plays the Lambda
/// event source.
pub struct Harness {
    pub db: Arc<dyn Database>,
    pub counting: CountingDb,
    pub clock: Arc<ManualClock>,
    pub memory: MemoryQueue,
    pub queue: RecordingQueue<MemoryQueue>,
    pub handler: ScriptedHandler,
    pub config: ProcessorConfig,
    pub blobs: MemoryBlobStore,
}

impl Harness {
    pub fn new(db: Arc<dyn Database>) -> Self {
        let clock = Arc::new(ManualClock::new(t0()));
        let memory = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: Duration::from_secs(30),
                max_receive_count: 4,
            },
            clock.clone(),
        );
        Self {
            counting: CountingDb::new(db.clone()),
            db,
            clock,
            queue: RecordingQueue::new(memory.clone()),
            memory,
            handler: ScriptedHandler::default(),
            config: ProcessorConfig::default(),
            blobs: MemoryBlobStore::new(),
        }
    }

    pub fn processor(&self) -> Processor<'_> {
        Processor {
            db: &self.counting,
            queue: &self.queue,
            blobs: &self.blobs,
            clock: self.clock.as_ref(),
            handler: &self.handler,
            config: &self.config,
        }
    }

    /// What ingest does: store the event, send its message. Returns the row id.
    pub async fn ingest(&self, event_id: &str, event_type: &str, body: Vec<u8>) -> Uuid {
        let event = new_event(event_id, event_type, body);
        let id = inbox::insert_if_new(self.db.as_ref(), &event, self.clock.now())
            .await
            .expect("insert")
            .id();
        self.send(&InboxMessage::stored(id, PARTNER, event_id))
            .await;
        id
    }

    /// What ingest does with a body of any size: above the inline
    /// threshold it goes to the blob store first. Returns the row id.
    pub async fn ingest_stored(&self, event_id: &str, event_type: &str, body: Vec<u8>) -> Uuid {
        let stored = hookbox::inbox::body::store(
            &self.blobs,
            PARTNER,
            body,
            hookbox::inbox::body::DEFAULT_INLINE_MAX_BYTES,
        )
        .await
        .expect("blob store");
        let mut event = new_event(event_id, event_type, Vec::new());
        event.body = stored;
        let id = inbox::insert_if_new(self.db.as_ref(), &event, self.clock.now())
            .await
            .expect("insert")
            .id();
        self.send(&InboxMessage::stored(id, PARTNER, event_id))
            .await;
        id
    }

    /// An order event of the example domain, ingested.
    pub async fn ingest_order(&self, event_id: &str, event_type: &str, order_id: &str) -> Uuid {
        self.ingest(event_id, event_type, order_body(event_type, order_id))
            .await
    }

    pub async fn send(&self, message: &InboxMessage) {
        self.memory
            .send(&message.to_body().expect("body"))
            .await
            .expect("send");
    }

    /// One invocation: receive up to 10 visible messages, process them,
    /// delete the ones not reported failed. Returns the messages and the report.
    pub async fn deliver(&self) -> (Vec<Received>, BatchReport) {
        let got = self.memory.receive(10).await.expect("receive");
        let report = self.processor().process_batch(&got, None).await;
        let retry = report.retry_message_ids();
        for m in &got {
            if !retry.contains(&m.message_id) {
                self.memory.delete(&m.receipt_handle).await.expect("delete");
            }
        }
        (got, report)
    }

    /// Moves the clock (and so the in-memory queue's visibility) forward.
    pub fn advance(&self, seconds: i64) {
        self.clock.advance(chrono::Duration::seconds(seconds));
    }
}
