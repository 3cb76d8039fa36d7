//! The ingest Lambda with the sample events in `events/`, real PostgreSQL and
//! moto SQS.

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayProxyResponse};
use aws_lambda_events::encodings::Body;
use hookbox::inbox::InboxMessage;
use hookbox::queue::QueueConsumer;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::Database;

mod common;

use common::{event, rig};

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
        row.body.inline(),
        Some(&br#"{"type":"payment.received","order_id":"ord_1001","amount":42.5}"#[..])
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
