//! The ingest Lambda with the sample events in `events/`, real PostgreSQL and
//! moto SQS.

use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayProxyResponse};
use aws_lambda_events::encodings::Body;
use chrono::TimeZone;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigSource, ConfigStore};
use hookbox::inbox::InboxMessage;
use hookbox::inbox::ingest::Ingest;
use hookbox::queue::QueueConsumer;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::Database;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_ingest::IngestFunction;
use hookbox_testkit::{TestDb, moto};

const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
const T: i64 = 1_780_000_000;

struct Rig {
    function: IngestFunction,
    db: Arc<dyn Database>,
    queue: SqsQueue,
    _t: TestDb,
}

async fn rig() -> Rig {
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
    let ingest = Ingest::new(
        Arc::new(config),
        db.clone(),
        Arc::new(queue.clone()),
        clock.clone(),
    );
    Rig {
        function: IngestFunction::new(ingest, clock),
        db,
        queue,
        _t: t,
    }
}

fn event(name: &str) -> ApiGatewayProxyRequest {
    let path = format!("{EVENTS}/{name}");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn body(r: &ApiGatewayProxyResponse) -> serde_json::Value {
    match &r.body {
        Some(Body::Text(t)) => serde_json::from_str(t).expect("JSON body"),
        other => panic!("unexpected body {other:?}"),
    }
}

async fn count(db: &dyn Database) -> i64 {
    hookbox::inbox::counts_by_status(db)
        .await
        .expect("counts")
        .values()
        .sum()
}

async fn messages(queue: &SqsQueue) -> Vec<InboxMessage> {
    let mut out = Vec::new();
    loop {
        let got = queue.receive(10).await.expect("receive");
        if got.is_empty() {
            return out;
        }
        for m in got {
            out.push(InboxMessage::from_body(&m.body).expect("message"));
            queue.delete(&m.receipt_handle).await.expect("delete");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_events_are_stored_and_enqueued_and_replays_are_duplicates() {
    let rig = rig().await;
    let r = rig.function.handle(event("apigw-ingest-valid.json")).await;
    assert_eq!(r.status_code, 200, "{r:?}");
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let b = body(&r);
    assert_eq!(b["status"], "accepted");
    let id: uuid::Uuid = b["id"].as_str().expect("id").parse().expect("uuid");
    assert_eq!(count(rig.db.as_ref()).await, 1);
    assert_eq!(
        messages(&rig.queue).await,
        vec![InboxMessage::stored(id, "demo", "msg_1001")]
    );

    let again = rig.function.handle(event("apigw-ingest-valid.json")).await;
    assert_eq!(again.status_code, 200);
    assert_eq!(
        body(&again),
        serde_json::json!({"status": "duplicate", "id": id})
    );
    assert!(messages(&rig.queue).await.is_empty());

    // a base64-encoded body is verified and stored as the decoded bytes
    let b64 = rig.function.handle(event("apigw-ingest-base64.json")).await;
    assert_eq!(b64.status_code, 200, "{b64:?}");
    let id: uuid::Uuid = body(&b64)["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.body,
        br#"{"type":"payment.received","order_id":"ord_1001","amount":42.5}"#
    );
    assert_eq!(row.ordering_key.as_deref(), Some("ord_1001"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_events_store_nothing() {
    let rig = rig().await;
    for (name, status, code) in [
        ("apigw-ingest-bad-signature.json", 401, "invalid_signature"),
        ("apigw-ingest-stale.json", 401, "timestamp_too_old"),
        ("apigw-ingest-future.json", 401, "timestamp_in_future"),
        ("apigw-ingest-oversize.json", 413, "body_too_large"),
    ] {
        let r = rig.function.handle(event(name)).await;
        assert_eq!(r.status_code, status, "{name}: {r:?}");
        assert_eq!(body(&r)["error"], code, "{name}");
    }
    let mut not_base64 = event("apigw-ingest-base64.json");
    not_base64.body = Some("*** not base64 ***".into());
    let r = rig.function.handle(not_base64).await;
    assert_eq!(r.status_code, 400);
    assert_eq!(body(&r)["error"], "body_not_base64");
    let r = rig.function.handle(ApiGatewayProxyRequest::default()).await;
    assert_eq!(r.status_code, 404, "no partner in the path");
    assert_eq!(count(rig.db.as_ref()).await, 0);
    assert!(messages(&rig.queue).await.is_empty());
}
