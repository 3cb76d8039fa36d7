//! The real `ingest` binary under a Lambda Runtime API (the testkit's
//! emulator), with the template's production path behind it: the local
//! Data API over a throwaway PostgreSQL, moto's SQS, a blob directory. The
//! sample events (re-signed now) get 200, 401 and 413 through the runtime,
//! REST's and HTTP API's (payload 2.0) alike;
//! a missing queue URL is an init error naming the variable.

use std::time::Duration;

use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::{TestDb, moto, smoke};

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("ingest", env!("CARGO_BIN_EXE_ingest"))
}

fn env(
    db: &TestDb,
    queue_url: Option<&str>,
    blob_dir: &std::path::Path,
) -> Vec<(&'static str, String)> {
    let mut env = smoke::function_env(db.name(), queue_url, blob_dir);
    let partners = smoke::events_dir().join("partners-test.json");
    env.push(("HOOKBOX_CONFIG", partners.display().to_string()));
    env
}

fn status(outcome: &Outcome) -> u64 {
    match outcome {
        Outcome::Response(r) => r["statusCode"]
            .as_u64()
            .unwrap_or_else(|| panic!("no statusCode in {r}")),
        Outcome::Error(e) => panic!("ingest failed: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_stores_a_valid_webhook_and_refuses_bad_signatures_and_oversize_bodies() {
    let db = TestDb::create().await;
    let pg =
        hookbox::store::postgres::PgDatabase::connect(db.url(), &Default::default()).expect("pool");
    hookbox::migrate::migrate(&pg).await.expect("migrate");
    let queue = moto::create_queue(&moto::endpoint(), &moto::unique_name("ingest-rt"), 30, 4).await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(
        &binary(),
        "ingest",
        &env(&db, Some(&queue.url), blobs.path()),
    )
    .await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");

    let now = smoke::now_secs();
    let mut valid = smoke::event("apigw-ingest-valid.json");
    smoke::resign(&mut valid, now, true);
    let accepted = f.api.invoke(&valid, Duration::from_secs(20)).await;
    assert_eq!(status(&accepted), 200, "{accepted:?}");
    let Outcome::Response(response) = &accepted else {
        unreachable!()
    };
    let body: serde_json::Value =
        serde_json::from_str(response["body"].as_str().expect("body")).expect("json body");
    assert_eq!(body["status"], "accepted", "{body}");
    let again = f.api.invoke(&valid, Duration::from_secs(20)).await;
    assert_eq!(status(&again), 200);
    assert!(format!("{again:?}").contains("duplicate"), "{again:?}");

    let mut bad = smoke::event("apigw-ingest-bad-signature.json");
    smoke::resign(&mut bad, now, false);
    assert_eq!(
        status(&f.api.invoke(&bad, Duration::from_secs(20)).await),
        401
    );
    let mut oversize = smoke::event("apigw-ingest-oversize.json");
    smoke::resign(&mut oversize, now, true);
    assert_eq!(
        status(&f.api.invoke(&oversize, Duration::from_secs(20)).await),
        413
    );

    // the same binary takes HTTP API's payload 2.0 events: the webhook
    // sent as text is the same event (a duplicate), the one sent as
    // application/octet-stream (base64) a new one
    let mut text = smoke::event("httpapi-ingest-valid.json");
    smoke::resign(&mut text, now, true);
    let duplicate = f.api.invoke(&text, Duration::from_secs(20)).await;
    assert_eq!(status(&duplicate), 200, "{duplicate:?}");
    assert!(
        format!("{duplicate:?}").contains("duplicate"),
        "{duplicate:?}"
    );
    let mut binary = smoke::event("httpapi-ingest-base64.json");
    smoke::resign(&mut binary, now, true);
    let stored = f.api.invoke(&binary, Duration::from_secs(20)).await;
    assert_eq!(status(&stored), 200, "{stored:?}");
    assert!(format!("{stored:?}").contains("accepted"), "{stored:?}");
    let mut forged = smoke::event("httpapi-ingest-bad-signature.json");
    smoke::resign(&mut forged, now, false);
    assert_eq!(
        status(&f.api.invoke(&forged, Duration::from_secs(20)).await),
        401
    );

    // two rows, two messages: the valid webhook (stored once, whichever
    // ingress it came through) and the one sent base64
    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let rows = client
        .query_one(
            "SELECT count(*) FROM inbox WHERE partner = 'demo' AND event_id IN ('msg_1001', 'msg_1002')",
            &[],
        )
        .await
        .expect("count");
    assert_eq!(rows.get::<_, i64>(0), 2);
    let messages = moto::client(&moto::endpoint())
        .receive_message()
        .queue_url(&queue.url)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("receive");
    assert_eq!(messages.messages().len(), 2, "{messages:?}");
}

#[tokio::test]
async fn without_a_queue_url_the_init_error_names_the_variable() {
    let db = TestDb::create().await;
    let blobs = tempfile::tempdir().expect("blob dir");
    let mut f = Function::spawn(&binary(), "ingest", &env(&db, None, blobs.path())).await;
    match f.init(Duration::from_secs(30)).await {
        Init::Exited {
            init_error: Some((_, body)),
            output,
            ..
        } => {
            let message = body["errorMessage"].as_str().unwrap_or_default();
            assert!(message.contains("HOOKBOX_QUEUE_URL"), "{message:?}");
            assert!(output.contains("HOOKBOX_QUEUE_URL"), "logged too: {output}");
        }
        other => panic!("expected an init error, got {other:?}"),
    }
}

#[test]
fn the_bootstrap_leaves_the_loader_no_relative_relocations() {
    // linked non-PIE (functions/link.rs): nothing of its own to relocate at cold start
    hookbox_testkit::coldstart::assert_no_relative_relocations(&binary());
}
