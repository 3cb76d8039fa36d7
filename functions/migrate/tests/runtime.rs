//! The real `migrate` binary under a Lambda Runtime API (the testkit's
//! emulator), migrating through the local Data API: a CloudFormation Create
//! event applies the schema and PUTs SUCCESS to a local ResponseURL; an
//! incomplete Data API configuration is an init error naming the variable.

use std::time::Duration;

use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::{TestDb, smoke};

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("migrate", env!("CARGO_BIN_EXE_migrate"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_event_migrates_and_answers_success_to_the_response_url() {
    let db = TestDb::create().await;
    let sink = HttpSink::start().await;
    let mut env = smoke::aws_env();
    env.extend(smoke::data_api_env(db.name()));
    let mut f = Function::spawn(&binary(), "migrate", &env).await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");

    let mut event = smoke::event("cfn-migrate-create.json");
    event["ResponseURL"] = sink.url("/cfn-response").into();
    let outcome = f.api.invoke(&event, Duration::from_secs(60)).await;
    assert!(
        matches!(outcome, Outcome::Response(_)),
        "{outcome:?}\n{}",
        f.output()
    );
    let put = &sink.wait_for(1).await[0];
    assert_eq!(put.method, "PUT");
    let body = put.json();
    assert_eq!(body["Status"], "SUCCESS", "{body}");
    assert_eq!(body["PhysicalResourceId"], "hookbox-schema-migrations");

    let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let tables = client
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('inbox', 'outbox')",
            &[],
        )
        .await
        .expect("tables");
    assert_eq!(tables.get::<_, i64>(0), 2);
}

#[tokio::test]
async fn an_incomplete_data_api_configuration_is_an_init_error_naming_the_variable() {
    let mut env = smoke::aws_env();
    env.extend(
        smoke::data_api_env("hookbox")
            .into_iter()
            .filter(|(name, _)| *name != "DB_SECRET_ARN"),
    );
    let mut f = Function::spawn(&binary(), "migrate", &env).await;
    match f.init(Duration::from_secs(30)).await {
        Init::Exited {
            init_error: Some((_, body)),
            ..
        } => {
            let message = body["errorMessage"].as_str().unwrap_or_default();
            assert!(message.contains("DB_SECRET_ARN"), "{message:?}");
        }
        other => panic!("expected an init error, got {other:?}"),
    }
}

#[test]
fn the_bootstrap_leaves_the_loader_no_relative_relocations() {
    // linked non-PIE (functions/link.rs): nothing of its own to relocate at cold start
    hookbox_testkit::coldstart::assert_no_relative_relocations(&binary());
}
