//! The rig shared by the ingest function's test binaries: a migrated
//! database, a moto queue, the test partner config and the sample events.
#![allow(dead_code)]

use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayV2httpRequest};
use chrono::TimeZone;
use hookbox::blob::s3::S3BlobStore;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigSource, ConfigStore};
use hookbox::inbox::ingest::Ingest;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::Database;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_ingest::IngestFunction;
use hookbox_testkit::{TestDb, moto};

pub const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
pub const T: i64 = 1_780_000_000;

pub struct Rig {
    pub function: IngestFunction,
    pub db: Arc<dyn Database>,
    pub queue: SqsQueue,
    /// Large bodies: an S3 bucket of moto's.
    pub blobs: Arc<S3BlobStore>,
    _t: TestDb,
}

pub async fn rig() -> Rig {
    let t = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(t.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let endpoint = moto::endpoint();
    let names = moto::create_queue(&endpoint, &moto::unique_name("ingest-fn"), 30, 4).await;
    let queue = SqsQueue::new(SqsQueue::local_client(&endpoint), names.url);
    let clock = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let config = ConfigStore::load(
        ConfigSource::File(format!("{EVENTS}/partners-test.json").into()),
        None,
        clock.clone(),
    )
    .await
    .expect("config");
    let (client, bucket) = hookbox_testkit::s3::bucket().await;
    let blobs = Arc::new(S3BlobStore::new(client, bucket));
    let ingest = Ingest::new(
        Arc::new(config),
        db.clone(),
        Arc::new(queue.clone()),
        blobs.clone(),
        clock.clone(),
    );
    Rig {
        function: IngestFunction::new(ingest, clock),
        db,
        queue,
        blobs,
        _t: t,
    }
}

pub fn event(name: &str) -> ApiGatewayProxyRequest {
    let path = format!("{EVENTS}/{name}");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// An HTTP API (payload 2.0) sample event (`events/httpapi-*.json`).
pub fn http_event(name: &str) -> ApiGatewayV2httpRequest {
    let path = format!("{EVENTS}/{name}");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}
