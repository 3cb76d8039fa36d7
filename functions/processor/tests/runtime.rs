//! The real `processor` binary under a Lambda Runtime API (the testkit's
//! emulator), with the local Data API over PostgreSQL and moto's SQS behind
//! it: the sample SQS batch answers `batchItemFailures` with exactly the
//! message to retry; a missing queue URL is an init error naming it.

use std::time::Duration;

use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::{TestDb, moto, smoke};

const SHIPPED_MESSAGE_ID: &str = "5f6c1d7e-0000-4000-8000-000000000004";

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("processor", env!("CARGO_BIN_EXE_processor"))
}

fn env(
    db: &TestDb,
    queue_url: Option<&str>,
    blob_dir: &std::path::Path,
) -> Vec<(&'static str, String)> {
    let mut env = smoke::function_env(db.name(), queue_url, blob_dir);
    env.push(("HOOKBOX_MAX_RECEIVE_COUNT", "4".into()));
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_answers_the_sample_batch_with_the_messages_to_retry() {
    let db = TestDb::create().await;
    let pg =
        hookbox::store::postgres::PgDatabase::connect(db.url(), &Default::default()).expect("pool");
    hookbox::migrate::migrate(&pg).await.expect("migrate");
    let queue =
        moto::create_queue(&moto::endpoint(), &moto::unique_name("processor-rt"), 30, 4).await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(
        &binary(),
        "processor",
        &env(&db, Some(&queue.url), blobs.path()),
    )
    .await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");

    // the sample batch: a stored message whose row does not exist
    // (acknowledged), a spooled payment (stored, then processed), an
    // unreadable body (quarantined); plus a spooled shipment of an order
    // not paid yet: deferred, so the one message to retry
    let mut batch = smoke::event("sqs-batch.json");
    let mut shipped = batch["Records"][1].clone();
    let mut body: serde_json::Value =
        serde_json::from_str(shipped["body"].as_str().expect("body")).expect("json");
    body["event_id"] = "evt_shipped_1".into();
    body["event_type"] = "order.shipped".into();
    body["ordering_key"] = "o-2002".into();
    body["body_base64"] = "eyJ0eXBlIjoib3JkZXIuc2hpcHBlZCIsIm9yZGVyX2lkIjoiby0yMDAyIn0=".into();
    shipped["body"] = body.to_string().into();
    shipped["messageId"] = SHIPPED_MESSAGE_ID.into();
    batch["Records"]
        .as_array_mut()
        .expect("records")
        .push(shipped);
    let outcome = f.api.invoke(&batch, Duration::from_secs(30)).await;
    let Outcome::Response(response) = outcome else {
        panic!("the processor failed: {outcome:?}\n{}", f.output())
    };
    let failures: Vec<&str> = response["batchItemFailures"]
        .as_array()
        .unwrap_or_else(|| panic!("no batchItemFailures in {response}"))
        .iter()
        .filter_map(|f| f["itemIdentifier"].as_str())
        .collect();
    assert_eq!(failures, [SHIPPED_MESSAGE_ID], "{response}\n{}", f.output());

    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT status FROM inbox WHERE event_id = 'evt_shipped_1'",
            &[],
        )
        .await
        .expect("the spooled shipment is stored");
    assert_eq!(row.get::<_, String>(0), "deferred");
    let paid = client
        .query_one(
            "SELECT status FROM inbox WHERE event_id = 'evt_spooled_1'",
            &[],
        )
        .await
        .expect("the spooled payment is stored");
    assert_eq!(paid.get::<_, String>(0), "processed");
}

#[tokio::test]
async fn without_a_queue_url_the_init_error_names_the_variable() {
    let db = TestDb::create().await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(&binary(), "processor", &env(&db, None, blobs.path())).await;
    match f.init(Duration::from_secs(30)).await {
        Init::Exited {
            init_error: Some((_, body)),
            ..
        } => {
            let message = body["errorMessage"].as_str().unwrap_or_default();
            assert!(message.contains("HOOKBOX_QUEUE_URL"), "{message:?}");
        }
        other => panic!("expected an init error, got {other:?}"),
    }
}

#[test]
fn the_bootstrap_leaves_the_loader_no_relative_relocations() {
    // linked non-PIE (functions/link.rs): nothing of its own to relocate at cold start
    hookbox_testkit::coldstart::assert_no_relative_relocations(&binary());
}
