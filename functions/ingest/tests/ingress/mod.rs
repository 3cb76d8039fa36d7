//! Two stacks of the authorizer and ingest over the same configuration,
//! each with a database of its own, one sent REST's events and the other
//! HTTP API's (payload 2.0, `corpus/events.rs`): the same requests in the
//! same order must get the same answers from both. Direct PostgreSQL, the
//! in-memory queue and blob store, a fixed clock.
#![allow(dead_code)]

use std::sync::Arc;

use chrono::TimeZone;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::Ingest;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::store::Database;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_authorizer::Authorizer;
use hookbox_ingest::IngestFunction;
use hookbox_testkit::TestDb;

use crate::corpus::call::call;
use crate::corpus::check::Got;
use crate::corpus::events::{Send, Shape, build};
use crate::corpus::model::Request;

/// One stack.
pub struct Rig {
    pub shape: Shape,
    pub authorizer: Authorizer,
    pub ingest: IngestFunction,
    pub db: Arc<dyn Database>,
    pub blobs: Arc<MemoryBlobStore>,
    pub clock: Arc<ManualClock>,
    _t: TestDb,
}

fn at(secs: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.timestamp_opt(secs, 0).single().expect("valid")
}

impl Rig {
    pub async fn new(shape: Shape, config: &serde_json::Value, now: i64) -> Self {
        let t = TestDb::create().await;
        let db: Arc<dyn Database> =
            Arc::new(PgDatabase::connect(t.url(), &PgOptions::default()).expect("pool"));
        hookbox::migrate::migrate(db.as_ref())
            .await
            .expect("migrate");
        let clock = Arc::new(ManualClock::new(at(now)));
        let config = HookboxConfig::parse(&config.to_string(), "test").expect("config");
        let config = Arc::new(ConfigStore::fixed(config, clock.clone()));
        let blobs = Arc::new(MemoryBlobStore::new());
        let queue = Arc::new(MemoryQueue::new(
            MemoryQueueConfig::default(),
            clock.clone(),
        ));
        let ingest = Ingest::new(
            config.clone(),
            db.clone(),
            queue,
            blobs.clone(),
            clock.clone(),
        );
        Self {
            shape,
            authorizer: Authorizer::new(config, clock.clone()),
            ingest: IngestFunction::new(ingest, clock.clone()),
            db,
            blobs,
            clock,
            _t: t,
        }
    }

    /// The authorizer, then (when it allows) ingest.
    pub async fn send(&self, request: &Request, send: &Send<'_>) -> Got {
        let events = build(self.shape, request, send);
        call(self.authorizer.clone(), self.ingest.clone(), events).await
    }

    /// The body stored for an accepted answer.
    pub async fn stored_body(&self, got: &Got) -> Vec<u8> {
        let id: uuid::Uuid = got.body["id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no id in {}", got.body));
        let row = hookbox::inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row");
        hookbox::inbox::body::read(self.db.as_ref(), self.blobs.as_ref(), id, &row.body)
            .await
            .expect("body")
    }
}

/// A REST stack and an HTTP API stack.
pub struct Both {
    pub rest: Rig,
    pub http: Rig,
}

impl Both {
    pub async fn new(config: &serde_json::Value, now: i64) -> Self {
        Self {
            rest: Rig::new(Shape::Rest, config, now).await,
            http: Rig::new(Shape::Http, config, now).await,
        }
    }

    /// Both clocks at `secs`.
    pub fn set_time(&self, secs: i64) {
        self.rest.clock.set(at(secs));
        self.http.clock.set(at(secs));
    }

    /// The request through each: REST's answer, HTTP API's.
    pub async fn send(&self, request: &Request, send: &Send<'_>) -> (Got, Got) {
        (
            self.rest.send(request, send).await,
            self.http.send(request, send).await,
        )
    }
}

/// A request to `partner`: each `(name, value)` a header line (a name given
/// twice: the header sent on two lines), then the body.
pub fn request(partner: &str, lines: &[(&str, &str)], body: &[u8]) -> Request {
    let mut headers: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for (name, value) in lines {
        match headers.iter_mut().find(|(n, _)| n == name) {
            Some((_, values)) => values.push(value.as_bytes().to_vec()),
            None => headers.push((name.to_string(), vec![value.as_bytes().to_vec()])),
        }
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        headers.push((
            "Host".into(),
            vec![crate::corpus::model::HOST.as_bytes().to_vec()],
        ));
    }
    Request {
        partner: partner.into(),
        headers,
        body: body.to_vec(),
    }
}
