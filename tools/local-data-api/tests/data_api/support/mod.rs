//! Shared test setup: a fresh database, the server on the test's runtime
//! with a manual clock, and a real `aws-sdk-rdsdata` client pointed at it.

#![allow(dead_code)]

use std::sync::Arc;

use aws_sdk_rdsdata::Client;
use aws_sdk_rdsdata::config::retry::RetryConfig;
use aws_sdk_rdsdata::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_rdsdata::operation::execute_statement::ExecuteStatementOutput;
use aws_sdk_rdsdata::operation::execute_statement::builders::ExecuteStatementFluentBuilder;
use aws_sdk_rdsdata::types::{Field, SqlParameter, TypeHint};
use chrono::{TimeZone, Utc};
use hookbox::clock::ManualClock;
use hookbox_testkit::TestDb;
use local_data_api::{Config, LocalDataApi};

pub const RESOURCE_ARN: &str = "arn:aws:rds:us-east-1:123456789012:cluster:hookbox";
pub const SECRET_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-db";

/// A server under test.
pub struct Server {
    pub db: TestDb,
    pub api: LocalDataApi,
    pub clock: Arc<ManualClock>,
    pub client: Client,
    pub endpoint: String,
}

/// A server over a fresh database with the default configuration and a
/// manual clock.
pub async fn start() -> Server {
    start_with(|c| c).await
}

/// Like [`start`], with the configuration adjusted.
pub async fn start_with(adjust: impl FnOnce(Config) -> Config) -> Server {
    let db = TestDb::create().await;
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .single()
            .expect("valid start time"),
    ));
    let config = adjust(Config {
        clock: clock.clone(),
        ..Config::new(db.url())
    });
    let (api, endpoint) = serve(config).await;
    let client = sdk_client(&endpoint);
    Server {
        db,
        api,
        clock,
        client,
        endpoint,
    }
}

/// Serves `config` on a free port of 127.0.0.1 on this runtime.
pub async fn serve(config: Config) -> (LocalDataApi, String) {
    let api = LocalDataApi::new(config).expect("valid configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let endpoint = format!("http://{}", listener.local_addr().expect("local addr"));
    tokio::spawn(api.clone().serve(listener, std::future::pending()));
    (api, endpoint)
}

/// The real SDK client, as the adapter builds it, without retries (so
/// error tests see one attempt).
pub fn sdk_client(endpoint: &str) -> Client {
    let config = aws_sdk_rdsdata::Config::builder()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .behavior_version(BehaviorVersion::latest())
        .retry_config(RetryConfig::disabled())
        .build();
    Client::from_conf(config)
}

impl Server {
    /// An ExecuteStatement call with the ARNs set.
    pub fn exec(&self, sql: &str) -> ExecuteStatementFluentBuilder {
        self.client
            .execute_statement()
            .resource_arn(RESOURCE_ARN)
            .secret_arn(SECRET_ARN)
            .sql(sql)
    }

    /// Runs `sql` (autocommit), panicking on error.
    pub async fn run(&self, sql: &str) -> ExecuteStatementOutput {
        match self.exec(sql).send().await {
            Ok(out) => out,
            Err(e) => panic!("{sql}: {:?}", e.into_service_error()),
        }
    }

    /// Runs `sql` inside transaction `tx`, panicking on error.
    pub async fn run_in(&self, tx: &str, sql: &str) -> ExecuteStatementOutput {
        match self.exec(sql).transaction_id(tx).send().await {
            Ok(out) => out,
            Err(e) => panic!("{sql} in {tx}: {:?}", e.into_service_error()),
        }
    }

    /// BeginTransaction, returning the id.
    pub async fn begin(&self) -> String {
        let out = self
            .client
            .begin_transaction()
            .resource_arn(RESOURCE_ARN)
            .secret_arn(SECRET_ARN)
            .send()
            .await
            .map_err(|e| e.into_service_error())
            .expect("begin transaction");
        out.transaction_id().expect("a transaction id").to_string()
    }

    /// A direct PostgreSQL connection to the test database (a "second
    /// connection" for isolation checks).
    pub async fn pg(&self) -> tokio_postgres::Client {
        pg_connect(self.db.url()).await
    }

    /// `SELECT count(*) FROM <table>` over a direct connection.
    pub async fn count_directly(&self, table: &str) -> i64 {
        self.pg()
            .await
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .expect("count")
            .get(0)
    }
}

pub async fn pg_connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("direct connection to the test database");
    tokio::spawn(connection);
    client
}

/// A named parameter.
pub fn param(name: &str, value: Field) -> SqlParameter {
    SqlParameter::builder().name(name).value(value).build()
}

/// A named parameter with a type hint.
pub fn hinted(name: &str, value: Field, hint: TypeHint) -> SqlParameter {
    SqlParameter::builder()
        .name(name)
        .value(value)
        .type_hint(hint)
        .build()
}

pub fn string(s: &str) -> Field {
    Field::StringValue(s.to_string())
}

/// The single value of a one-row, one-column result.
pub fn only(out: &ExecuteStatementOutput) -> &Field {
    let records = out.records();
    assert_eq!(records.len(), 1, "one row expected: {records:?}");
    assert_eq!(records[0].len(), 1, "one column expected: {records:?}");
    &records[0][0]
}

/// The stringValue of a one-row, one-column result.
pub fn only_string(out: &ExecuteStatementOutput) -> String {
    match only(out) {
        Field::StringValue(s) => s.clone(),
        other => panic!("stringValue expected, got {other:?}"),
    }
}

/// The longValue of a one-row, one-column result.
pub fn only_long(out: &ExecuteStatementOutput) -> i64 {
    match only(out) {
        Field::LongValue(n) => *n,
        other => panic!("longValue expected, got {other:?}"),
    }
}
