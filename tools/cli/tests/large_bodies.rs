//! A signed 4 MB webhook on the production path, through both database
//! adapters (direct PostgreSQL and the RDS Data API, the production one) with
//! S3 and SQS served by moto: the ingest function stores it by reference
//! (sent twice: one row, one object), the processor function hands the exact
//! bytes to the business handler, `hookbox inbox show` prints them (sha256
//! checked) and `hookbox inbox replay` brings a quarantined one back.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use aws_lambda_events::apigw::ApiGatewayProxyRequest;
use aws_lambda_events::http::{HeaderMap, HeaderValue};
use base64::Engine as _;
use chrono::{TimeZone, Utc};
use hookbox::blob::s3::S3BlobStore;
use hookbox::blob::sha256;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::Ingest;
use hookbox::inbox::{self, InboxStatus};
use hookbox::processing::{BusinessHandler, HandlerError, InboxEvent, Outcome, ProcessorConfig};
use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{QueueConsumer, Received};
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Transaction};
use hookbox_ingest::IngestFunction;
use hookbox_processor::{ProcessorFunction, sqs_event};
use hookbox_testkit::{TestDb, moto};
use lambda_runtime::{Context, LambdaEvent};
use uuid::Uuid;

const BIN: &str = env!("CARGO_BIN_EXE_hookbox");
const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    Postgres,
    DataApi,
}

/// Quarantines the first time it sees an event, processes it afterwards;
/// records the sha256 of every body it was given.
#[derive(Debug, Default)]
struct QuarantineOnce {
    seen: Mutex<Vec<(String, [u8; 32])>>,
}

#[async_trait]
impl BusinessHandler for QuarantineOnce {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        _tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        let mut seen = self.seen.lock().expect("lock");
        let first = !seen.iter().any(|(id, _)| *id == event.row.event_id);
        seen.push((event.row.event_id.clone(), sha256(event.body)));
        Ok(if first {
            Outcome::Quarantine("held back once by the test".into())
        } else {
            Outcome::Processed
        })
    }
}

fn request(body: &[u8], id: &str, at: chrono::DateTime<Utc>) -> ApiGatewayProxyRequest {
    let signed = sign_standard_webhooks(id, at, body, &[Secret::new(SECRET)]).expect("sign");
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("webhook-id", signed.id),
        ("webhook-timestamp", signed.timestamp),
        ("webhook-signature", signed.signature),
        ("content-type", "application/json".to_string()),
    ] {
        headers.insert(name, HeaderValue::from_str(&value).expect("header"));
    }
    let mut event = ApiGatewayProxyRequest::default();
    event.http_method = aws_lambda_events::http::Method::POST;
    event.path = Some("/webhooks/big".into());
    event.path_parameters.insert("partner".into(), "big".into());
    event.headers = headers;
    // API Gateway with the binary media type */*: the body arrives base64
    event.body = Some(base64::engine::general_purpose::STANDARD.encode(body));
    event.is_base64_encoded = true;
    event
}

/// Runs the CLI with `env` as its only configuration (off the runtime).
async fn hookbox(args: Vec<String>, env: Vec<(String, String)>) -> Output {
    let mut command = Command::new(BIN);
    command.args(&args);
    for name in [
        "DATABASE_URL",
        "HOOKBOX_DB",
        "HOOKBOX_QUEUE_URL",
        "HOOKBOX_BLOB_BUCKET",
        "HOOKBOX_BLOB_DIR",
    ] {
        command.env_remove(name);
    }
    command.envs(env);
    tokio::task::spawn_blocking(move || command.output().expect("the binary runs"))
        .await
        .expect("join")
}

async fn a_4_mb_webhook_is_stored_by_reference_processed_shown_and_replayed(adapter: Adapter) {
    let test_db = TestDb::create().await;
    let pg: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(pg.as_ref())
        .await
        .expect("migrate");
    let data_api_endpoint = hookbox_testkit::data_api_endpoint();
    let target = DataApiTarget {
        resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-test".into(),
        secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-test".into(),
        database: test_db.name().into(),
    };
    let db: Arc<dyn Database> = match adapter {
        Adapter::Postgres => pg.clone(),
        Adapter::DataApi => Arc::new(DataApiDatabase::local(&data_api_endpoint, target.clone())),
    };
    let endpoint = moto::endpoint();
    let names = moto::create_queue(&endpoint, &moto::unique_name("big"), 0, 4).await;
    let sqs = SqsQueue::new(SqsQueue::local_client(&endpoint), names.url.clone());
    let (s3, bucket) = hookbox_testkit::s3::bucket().await;
    let blobs = Arc::new(S3BlobStore::new(s3.clone(), bucket.clone()));
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
            .single()
            .expect("valid"),
    ));
    let config = serde_json::json!({"partners": {"big": {
        "signature": {"scheme": "standard-webhooks"},
        "secrets": [SECRET],
        "event_id": {"header": "webhook-id"},
        "event_type": "/type"
    }}})
    .to_string();
    let config = Arc::new(ConfigStore::fixed(
        HookboxConfig::parse(&config, "test").expect("config"),
        clock.clone(),
    ));
    let ingest = IngestFunction::new(
        Ingest::new(
            config,
            db.clone(),
            Arc::new(sqs.clone()),
            blobs.clone(),
            clock.clone(),
        ),
        clock.clone(),
    );
    let handler = Arc::new(QuarantineOnce::default());
    let processor = ProcessorFunction::new(
        db.clone(),
        Arc::new(sqs.clone()),
        blobs.clone(),
        clock.clone(),
        handler.clone(),
        ProcessorConfig::default(),
    );
    let process = || async {
        let got: Vec<Received> = sqs.receive(10).await.expect("receive");
        let (response, report) = processor
            .handle_with_report(LambdaEvent::new(sqs_event(&got), Context::default()))
            .await;
        assert!(response.batch_item_failures.is_empty(), "{report:?}");
        for m in &got {
            sqs.delete(&m.receipt_handle).await.expect("delete");
        }
        report
    };

    // the default max_body_bytes (4 MiB) takes a 4 MB body
    let pad = "p".repeat(4_000_000);
    let body = serde_json::json!({"type": "catalog.exported", "pad": pad}).to_string();
    let digest = sha256(body.as_bytes());
    let response = ingest
        .handle(request(body.as_bytes(), "msg_big", clock.now()))
        .await;
    assert_eq!(response.status_code, 200, "{response:?}");
    let again = ingest
        .handle(request(body.as_bytes(), "msg_big", clock.now()))
        .await;
    let answer = |r: &aws_lambda_events::apigw::ApiGatewayProxyResponse| -> serde_json::Value {
        match &r.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => {
                serde_json::from_str(t).expect("json")
            }
            other => panic!("unexpected body {other:?}"),
        }
    };
    assert_eq!(answer(&again)["status"], "duplicate");
    let id: Uuid = answer(&response)["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let objects = s3
        .list_objects_v2()
        .bucket(&bucket)
        .send()
        .await
        .expect("list");
    let keys: Vec<String> = objects
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_string))
        .collect();
    assert_eq!(
        keys,
        [format!("inbox/big/{}", hex::encode(digest))],
        "one object"
    );
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.body.blob().map(|r| r.sha256),
        Some(digest),
        "by reference"
    );

    // first pass: the handler gets the exact bytes (and quarantines)
    let report = process().await;
    assert_eq!(report.results.len(), 1, "one message for two sends");
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, InboxStatus::Quarantined);

    // the CLI shows it, through the same adapter, the body read from S3
    let mut env: Vec<(String, String)> = vec![
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ENDPOINT_URL_S3".into(), endpoint.clone()),
        ("HOOKBOX_BLOB_BUCKET".into(), bucket.clone()),
        ("HOOKBOX_QUEUE_URL".into(), names.url.clone()),
    ];
    match adapter {
        Adapter::Postgres => env.push(("DATABASE_URL".into(), test_db.url().into())),
        Adapter::DataApi => env.extend([
            ("HOOKBOX_DB".into(), "data-api".into()),
            ("DB_CLUSTER_ARN".into(), target.resource_arn.clone()),
            ("DB_SECRET_ARN".into(), target.secret_arn.clone()),
            ("DB_NAME".into(), target.database.clone()),
            (
                "AWS_ENDPOINT_URL_RDS_DATA".into(),
                data_api_endpoint.clone(),
            ),
        ]),
    }
    let out = hookbox(
        vec!["inbox".into(), "show".into(), id.to_string()],
        env.clone(),
    )
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "body_ref:           inbox/big/{} ({} bytes, sha256 {})",
            hex::encode(digest),
            body.len(),
            hex::encode(digest)
        )),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(
        text.contains(&format!("body (utf-8, {} bytes):\n{body}", body.len())),
        "the whole body"
    );
    // without a blob store configured: the reference, and how to see it
    let no_blobs: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k != "HOOKBOX_BLOB_BUCKET")
        .cloned()
        .collect();
    let out = hookbox(
        vec!["inbox".into(), "show".into(), id.to_string()],
        no_blobs,
    )
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("body: in the blob store; pass --blob-bucket"),
        "{text}"
    );

    // replayed by the CLI: processed with the same bytes
    let out = hookbox(
        vec![
            "inbox".into(),
            "replay".into(),
            id.to_string(),
            "--sqs-endpoint".into(),
            endpoint.clone(),
        ],
        env,
    )
    .await;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = process().await;
    assert_eq!(report.results.len(), 1);
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, InboxStatus::Processed);
    let seen = handler.seen.lock().expect("lock").clone();
    assert_eq!(
        seen,
        [
            ("msg_big".to_string(), digest),
            ("msg_big".to_string(), digest)
        ],
        "the exact bytes, both times"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_4_mb_webhook_is_stored_by_reference_processed_shown_and_replayed() {
    a_4_mb_webhook_is_stored_by_reference_processed_shown_and_replayed(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_api_a_4_mb_webhook_is_stored_by_reference_processed_shown_and_replayed() {
    a_4_mb_webhook_is_stored_by_reference_processed_shown_and_replayed(Adapter::DataApi).await;
}
