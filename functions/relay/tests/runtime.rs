//! The real `relay` binary under a Lambda Runtime API (the testkit's
//! emulator), with the local Data API over PostgreSQL and moto's SQS behind
//! it: one scheduled invocation delivers a pending outbox row, signed, to a
//! local sink; a missing queue URL is an init error naming the variable.

use std::time::Duration;

use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::{TestDb, moto, smoke};

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("relay", env!("CARGO_BIN_EXE_relay"))
}

fn env(
    db: &TestDb,
    sink: &HttpSink,
    queue_url: Option<&str>,
    blob_dir: &std::path::Path,
) -> Vec<(&'static str, String)> {
    let mut env = smoke::function_env(db.name(), queue_url, blob_dir);
    let config = serde_json::json!({ "destinations": { "erp": {
        "url": sink.url("/erp"),
        "secrets": [smoke::DEMO_SECRET],
        "allowed_networks": ["127.0.0.0/8"],
    }}});
    env.push(("HOOKBOX_PARTNERS", config.to_string()));
    // a short invocation: stop claiming 1 s before the deadline
    env.push(("HOOKBOX_RELAY_STOP_MARGIN_SECONDS", "1".into()));
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_scheduled_run_of_the_binary_delivers_a_pending_outbox_row() {
    let db = TestDb::create().await;
    let pg =
        hookbox::store::postgres::PgDatabase::connect(db.url(), &Default::default()).expect("pool");
    hookbox::migrate::migrate(&pg).await.expect("migrate");
    {
        use hookbox::store::Database as _;
        let tx = pg.begin().await.expect("begin");
        let event = hookbox::outbox::NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "o-1".into(),
            event_type: "order.paid".into(),
            destination: "erp".into(),
            payload: serde_json::json!({"order_id": "o-1"}),
        };
        hookbox::outbox::enqueue(tx.as_ref(), &event, chrono::Utc::now())
            .await
            .expect("enqueue");
        tx.commit().await.expect("commit");
    }
    let sink = HttpSink::start().await;
    let queue = moto::create_queue(&moto::endpoint(), &moto::unique_name("relay-rt"), 30, 4).await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(
        &binary(),
        "relay",
        &env(&db, &sink, Some(&queue.url), blobs.path()),
    )
    .await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");

    let schedule = smoke::event("eventbridge-schedule.json");
    let outcome = f.api.invoke(&schedule, Duration::from_secs(3)).await;
    assert!(
        matches!(outcome, Outcome::Response(_)),
        "{outcome:?}\n{}",
        f.output()
    );
    let delivered = sink.requests();
    assert_eq!(delivered.len(), 1, "{delivered:?}\n{}", f.output());
    assert_eq!(delivered[0].method, "POST");
    assert_eq!(delivered[0].json(), serde_json::json!({"order_id": "o-1"}));
    assert!(
        delivered[0]
            .header("webhook-signature")
            .is_some_and(|s| s.starts_with("v1,")),
        "{:?}",
        delivered[0].headers
    );
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let row = client
        .query_one("SELECT status FROM outbox WHERE aggregate_id = 'o-1'", &[])
        .await
        .expect("the row");
    assert_eq!(row.get::<_, String>(0), "delivered");
}

#[tokio::test]
async fn without_a_queue_url_the_init_error_names_the_variable() {
    let db = TestDb::create().await;
    let sink = HttpSink::start().await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(&binary(), "relay", &env(&db, &sink, None, blobs.path())).await;
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
