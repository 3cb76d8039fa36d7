//! The ingest request path, API Gateway event in, response out, as the
//! Lambda runtime hands it over (`event_from_json`, then the handler),
//! with the database down (so verified events are spooled to an in-memory
//! queue with SQS's limits): no panic, and every answer is one the docs
//! list, never a 500 (a verified webhook must never get one).
#![no_main]

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use chrono::TimeZone;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::Ingest;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox_ingest::{IngestFunction, event_from_json};
use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
struct DownDb;

#[async_trait]
impl Executor for DownDb {
    async fn execute(&self, statement: &Statement, _: &Params) -> Result<Rows, DbError> {
        Err(DbError::Unavailable {
            statement: statement.name,
            reason: "down (fuzz)".into(),
        })
    }
}

#[async_trait]
impl Database for DownDb {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        Err(DbError::Unavailable {
            statement: "begin",
            reason: "down (fuzz)".into(),
        })
    }
}

struct Rig {
    runtime: tokio::runtime::Runtime,
    function: IngestFunction,
}

fn rig() -> &'static Rig {
    static RIG: OnceLock<Rig> = OnceLock::new();
    RIG.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        // the fixtures' time, so the signed fixtures verify
        let now = chrono::Utc
            .timestamp_opt(1_780_000_000, 0)
            .single()
            .expect("time");
        let clock = Arc::new(ManualClock::new(now));
        let config = HookboxConfig::parse(include_str!("../../events/partners-test.json"), "fuzz")
            .expect("the test partners");
        let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
        let ingest = Ingest::new(
            Arc::new(ConfigStore::fixed(config, clock.clone())),
            Arc::new(DownDb),
            Arc::new(queue),
            Arc::new(MemoryBlobStore::new()),
            clock.clone(),
        );
        Rig {
            runtime,
            function: IngestFunction::new(ingest, clock),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    // an event the runtime cannot deserialize is an invocation error (API
    // Gateway never sends one): not this target's concern
    let Ok(event) = event_from_json(json) else {
        return;
    };
    let rig = rig();
    let response = rig.runtime.block_on(rig.function.handle(event));
    assert!(
        matches!(
            response.status_code,
            200 | 202 | 400 | 401 | 403 | 404 | 413 | 415 | 503
        ),
        "answered {}: {:?}",
        response.status_code,
        response.body
    );
});
