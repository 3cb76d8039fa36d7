//! The Data API response decoder: whatever bytes and status the service
//! (or something in its place) answers an `ExecuteStatement` with, through
//! the real `aws-sdk-rdsdata` deserializer and hookbox's adapter
//! (`DataApiDatabase`: records to rows, error shapes to the port's error
//! contract). No panic; an accepted answer is rows whose every column reads
//! back; a refused one names the statement.
//!
//! Input: byte 0 picks the status, byte 1 the `x-amzn-errortype`, the rest
//! is the body.
#![no_main]

use std::sync::{Mutex, OnceLock};

use aws_sdk_rdsdata::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_http_client::test_util::infallible_client_fn;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::{Executor, Statement};
use libfuzzer_sys::fuzz_target;

const STATUSES: [u16; 8] = [200, 200, 200, 400, 403, 404, 500, 504];
const ERROR_TYPES: [&str; 10] = [
    "",
    "BadRequestException",
    "DatabaseErrorException",
    "DatabaseResumingException",
    "StatementTimeoutException",
    "TransactionNotFoundException",
    "NotFoundException",
    "DatabaseUnavailableException",
    "ForbiddenException",
    "UnknownThingException",
];

/// The answer the fake HTTP client gives next.
static ANSWER: Mutex<(u16, &str, Vec<u8>)> = Mutex::new((200, "", Vec::new()));

struct Rig {
    runtime: tokio::runtime::Runtime,
    db: DataApiDatabase,
}

fn rig() -> &'static Rig {
    static RIG: OnceLock<Rig> = OnceLock::new();
    RIG.get_or_init(|| {
        let http = infallible_client_fn(|_request| {
            let (status, error_type, body) = ANSWER
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let mut response = http::Response::builder()
                .status(status)
                .header("content-type", "application/json");
            if !error_type.is_empty() {
                response = response.header("x-amzn-errortype", error_type);
            }
            response.body(body).expect("a response")
        });
        let config = aws_sdk_rdsdata::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("fuzz", "fuzz", None, None, "fuzz"))
            .http_client(http)
            .retry_config(aws_sdk_rdsdata::config::retry::RetryConfig::disabled())
            .build();
        let db = DataApiDatabase::new(
            aws_sdk_rdsdata::Client::from_conf(config),
            DataApiTarget {
                resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:fuzz".into(),
                secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:fuzz".into(),
                database: "postgres".into(),
            },
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Rig { runtime, db }
    })
}

const CLAIM: Statement = Statement::new(
    "fuzz.claim",
    "SELECT id, partner, body, attempts FROM inbox WHERE id = CAST(:id AS uuid)",
);

fuzz_target!(|data: &[u8]| {
    let (status, error_type, body) = match data {
        [s, e, body @ ..] => (
            STATUSES[usize::from(*s) % STATUSES.len()],
            ERROR_TYPES[usize::from(*e) % ERROR_TYPES.len()],
            body.to_vec(),
        ),
        _ => return,
    };
    *ANSWER.lock().unwrap_or_else(|p| p.into_inner()) = (status, error_type, body);
    let rig = rig();
    let params = hookbox::params! { "id" => "9b2f0f3e-7c1a-4c1e-9a53-0d9c1f0e2a11" };
    match rig.runtime.block_on(rig.db.execute(&CLAIM, &params)) {
        Ok(rows) => {
            for row in &rows.rows {
                for column in row.columns() {
                    let value = row.value(column).expect("every column of a row reads back");
                    let _ = value.kind();
                    let _ = row.text(column);
                    let _ = row.i64(column);
                    let _ = row.uuid(column);
                    let _ = row.timestamp(column);
                    let _ = row.json(column);
                    let _ = row.bytes(column);
                }
            }
        }
        Err(e) => {
            assert_eq!(e.statement(), "fuzz.claim", "{e}");
            assert!(!e.to_string().is_empty());
        }
    }
});
