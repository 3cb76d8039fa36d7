//! The migrate custom resource, driven by the sample events in `events/`
//! with a local HTTP server standing in for CloudFormation's ResponseURL.

use std::sync::Arc;
use std::time::Duration;

use hookbox::migrate::{MIGRATIONS, Migration, Migrator};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Executor, Statement, fetch_one};
use hookbox_migrate::{HandlerError, Migrate, PHYSICAL_RESOURCE_ID};
use hookbox_testkit::TestDb;
use hookbox_testkit::http_sink::HttpSink;
use lambda_runtime::{Context, LambdaEvent};

fn event(kind: &str, response_url: &str) -> LambdaEvent<serde_json::Value> {
    let path = format!(
        "{}/../../events/cfn-migrate-{kind}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("event JSON");
    json["ResponseURL"] = response_url.into();
    LambdaEvent::new(json, Context::default())
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

async fn live_db() -> (TestDb, Arc<dyn Database>) {
    let t = TestDb::create().await;
    let db = PgDatabase::connect(t.url(), &PgOptions::default()).expect("pool");
    (t, Arc::new(db))
}

fn dead_db() -> Arc<dyn Database> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let options = PgOptions {
        acquire_timeout: Duration::from_secs(2),
        ..PgOptions::default()
    };
    Arc::new(
        PgDatabase::connect(
            &format!("postgres://hookbox@127.0.0.1:{port}/gone"),
            &options,
        )
        .expect("pool builds lazily"),
    )
}

async fn applied_versions(db: &dyn Executor) -> i64 {
    fetch_one(
        db,
        &Statement::new("test.count", "SELECT count(*) AS n FROM schema_migrations"),
        &hookbox::params! {},
    )
    .await
    .expect("schema_migrations")
    .i64("n")
    .expect("n")
}

#[tokio::test]
async fn create_applies_the_migrations_and_answers_success() {
    let (_t, db) = live_db().await;
    let sink = HttpSink::start().await;
    let handler = Migrate::new(db.clone(), http());
    handler
        .handle(event("create", &sink.url("/cfn?X-Amz-Signature=abc")))
        .await
        .expect("answered");
    let requests = sink.wait_for(1).await;
    assert_eq!(requests.len(), 1);
    let put = &requests[0];
    assert_eq!(put.method, "PUT");
    assert_eq!(put.target, "/cfn?X-Amz-Signature=abc");
    assert_eq!(
        put.header("content-type"),
        Some(""),
        "pre-signed URL: no content type"
    );
    let body = put.json();
    assert_eq!(body["Status"], "SUCCESS");
    assert_eq!(body["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    assert_eq!(
        body["StackId"],
        "arn:aws:cloudformation:eu-west-1:123456789012:stack/hookbox/4b6ff5a0-0000-11ef-9c2a-0a1b2c3d4e5f"
    );
    assert_eq!(body["RequestId"], "6f2c1a4e-c0ea-4f6a-9d2e-3b1c5a7d9e0f");
    assert_eq!(body["LogicalResourceId"], "SchemaMigrations");
    let all: Vec<String> = MIGRATIONS.iter().map(|m| m.version.to_string()).collect();
    assert_eq!(body["Data"]["Applied"], all.join(","));
    assert_eq!(body["Data"]["AlreadyApplied"], "");
    assert_eq!(applied_versions(db.as_ref()).await, MIGRATIONS.len() as i64);
}

#[tokio::test]
async fn update_is_idempotent_and_keeps_the_physical_id() {
    let (_t, db) = live_db().await;
    let sink = HttpSink::start().await;
    let handler = Migrate::new(db.clone(), http());
    handler
        .handle(event("create", &sink.url("/1")))
        .await
        .expect("create");
    handler
        .handle(event("update", &sink.url("/2")))
        .await
        .expect("update");
    let requests = sink.wait_for(2).await;
    let body = requests[1].json();
    assert_eq!(body["Status"], "SUCCESS");
    assert_eq!(body["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    assert_eq!(body["RequestId"], "6f2c1a4e-0bda-4f6a-9d2e-3b1c5a7d9e0f");
    assert_eq!(body["Data"]["Applied"], "");
    assert_eq!(applied_versions(db.as_ref()).await, MIGRATIONS.len() as i64);
}

#[tokio::test]
async fn delete_answers_success_without_touching_the_database() {
    let sink = HttpSink::start().await;
    // the database is unreachable: Delete must not need it
    let handler = Migrate::new(dead_db(), http());
    handler
        .handle(event("delete", &sink.url("/d")))
        .await
        .expect("delete");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "SUCCESS");
    assert_eq!(body["PhysicalResourceId"], "hookbox-schema-migrations");
    assert_eq!(body["RequestId"], "6f2c1a4e-de1e-4f6a-9d2e-3b1c5a7d9e0f");
}

#[tokio::test]
async fn database_down_answers_failed_with_the_reason() {
    let sink = HttpSink::start().await;
    let handler = Migrate::new(dead_db(), http()).with_resume_wait(Duration::ZERO, Duration::ZERO);
    handler
        .handle(event("create", &sink.url("/f")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "FAILED");
    assert_eq!(body["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    let reason = body["Reason"].as_str().expect("a reason");
    assert!(reason.contains("database unavailable"), "{reason}");
    assert!(reason.contains("retry the deployment"), "{reason}");
}

#[tokio::test]
async fn a_failing_migration_answers_failed_naming_it() {
    static BROKEN: &[Migration] = &[Migration {
        version: 1,
        name: "broken",
        sql: "CREATE TABLE ok (x int);\nCREATE TABLE nope (x no_such_type);",
    }];
    let (_t, db) = live_db().await;
    let sink = HttpSink::start().await;
    let handler = Migrate::new(db, http()).with_migrator(Migrator::new(BROKEN));
    handler
        .handle(event("update", &sink.url("/b")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "FAILED");
    let reason = body["Reason"].as_str().expect("a reason");
    assert!(
        reason.contains("migration 1 (broken), statement 2"),
        "{reason}"
    );
    assert!(reason.contains("no_such_type"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_cannot_finish_in_time_answers_failed_before_the_deadline() {
    let (_t, db) = live_db().await;
    // Another runner holds the migration lock and never lets go.
    let blocker = db.begin().await.expect("begin");
    blocker
        .execute(
            &Statement::new(
                "test.lock",
                "SELECT true AS locked FROM (SELECT pg_advisory_xact_lock(:key)) AS l",
            ),
            &hookbox::params! { "key" => 0x0068_6f6f_6b62_6f78_i64 },
        )
        .await
        .expect("hold the migration lock");
    let sink = HttpSink::start().await;
    let handler = Migrate::new(db.clone(), http()).with_default_budget(Duration::from_millis(300));
    handler
        .handle(event("create", &sink.url("/t")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "FAILED");
    assert!(
        body["Reason"]
            .as_str()
            .expect("reason")
            .contains("did not finish"),
        "{body}"
    );
    blocker.rollback().await.expect("release");
}

#[tokio::test]
async fn an_event_without_response_url_is_an_error_not_a_hang() {
    let mut e = event("create", "");
    e.payload
        .as_object_mut()
        .expect("object")
        .remove("ResponseURL");
    let handler = Migrate::new(dead_db(), http());
    let err = handler.handle(e).await.expect_err("nobody to answer");
    assert!(matches!(err, HandlerError::Unanswerable(_)), "{err:?}");
}

#[tokio::test]
async fn a_response_url_that_refuses_is_retried_then_reported() {
    let sink = HttpSink::start().await;
    sink.respond_with(403);
    let handler = Migrate::new(dead_db(), http()).with_response_retry(3, Duration::ZERO);
    let err = handler
        .handle(event("delete", &sink.url("/r")))
        .await
        .expect_err("refused");
    assert_eq!(sink.requests().len(), 3);
    match err {
        HandlerError::ResponseNotDelivered { attempts, last } => {
            assert_eq!(attempts, 3);
            assert!(last.contains("403"), "{last}");
            assert!(
                !last.contains("127.0.0.1"),
                "the URL is a credential: {last}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn data_api_db(endpoint: &str, database: &str) -> Arc<dyn Database> {
    Arc::new(hookbox::store::data_api::DataApiDatabase::local(
        endpoint,
        hookbox::store::data_api::DataApiTarget {
            resource_arn: "arn:aws:rds:eu-west-1:123456789012:cluster:hookbox".into(),
            secret_arn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hookbox".into(),
            database: database.into(),
        },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_through_the_data_api_applies_the_migrations() {
    let t = TestDb::create().await;
    let db = data_api_db(&hookbox_testkit::data_api_endpoint(), t.name());
    let sink = HttpSink::start().await;
    Migrate::new(db.clone(), http())
        .handle(event("create", &sink.url("/api")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "SUCCESS", "{body}");
    assert_eq!(applied_versions(db.as_ref()).await, MIGRATIONS.len() as i64);
    // the direct view agrees
    let direct = PgDatabase::connect(t.url(), &PgOptions::default()).expect("pool");
    assert_eq!(applied_versions(&direct).await, MIGRATIONS.len() as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aurora_down_behind_the_data_api_answers_failed_with_the_reason() {
    let cluster = hookbox_testkit::PrivateCluster::start();
    let server = hookbox_testkit::start_data_api(cluster.url());
    let db = data_api_db(&server.endpoint_url(), "postgres");
    cluster.kill().expect("kill PostgreSQL");
    let sink = HttpSink::start().await;
    // a database that stays down: a short wait, then FAILED with the reason
    Migrate::new(db, http())
        .with_resume_wait(Duration::from_millis(300), Duration::from_millis(100))
        .handle(event("update", &sink.url("/down")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "FAILED");
    assert_eq!(body["PhysicalResourceId"], PHYSICAL_RESOURCE_ID);
    let reason = body["Reason"].as_str().expect("reason");
    assert!(reason.contains("DatabaseUnavailableException"), "{reason}");
    assert!(reason.contains("retry the deployment"), "{reason}");
}

/// Fails every call with the Data API's `DatabaseResumingException` until
/// `resumes_after` calls have been refused, then passes them through.
#[derive(Debug)]
struct Resuming {
    inner: Arc<dyn Database>,
    refused: std::sync::atomic::AtomicU32,
    resumes_after: u32,
}

impl Resuming {
    fn refuse(&self) -> Result<(), hookbox::store::DbError> {
        use std::sync::atomic::Ordering;
        if self.refused.load(Ordering::SeqCst) < self.resumes_after {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(hookbox::store::DbError::Unavailable {
                statement: "begin",
                reason: "DatabaseResumingException: The Aurora DB instance is resuming after \
                         being auto-paused. Please wait a few seconds and try again."
                    .into(),
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl hookbox::store::Executor for Resuming {
    async fn execute(
        &self,
        statement: &hookbox::store::Statement,
        params: &hookbox::store::Params,
    ) -> Result<hookbox::store::Rows, hookbox::store::DbError> {
        self.refuse()?;
        self.inner.execute(statement, params).await
    }
}

#[async_trait::async_trait]
impl Database for Resuming {
    async fn begin(&self) -> Result<Box<dyn hookbox::store::Transaction>, hookbox::store::DbError> {
        self.refuse()?;
        self.inner.begin().await
    }
}

#[tokio::test]
async fn a_database_resuming_from_zero_capacity_is_waited_out() {
    let (t, live) = live_db().await;
    let db = Arc::new(Resuming {
        inner: live.clone(),
        refused: std::sync::atomic::AtomicU32::new(0),
        resumes_after: 3,
    });
    let sink = HttpSink::start().await;
    Migrate::new(db.clone(), http())
        .with_resume_wait(Duration::from_secs(60), Duration::from_millis(1))
        .handle(event("create", &sink.url("/r")))
        .await
        .expect("answered");
    let body = sink.wait_for(1).await[0].json();
    assert_eq!(body["Status"], "SUCCESS", "{body}");
    assert_eq!(
        db.refused.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "refused three times, then migrated"
    );
    assert!(applied_versions(live.as_ref()).await > 0);
    drop(t);
}
