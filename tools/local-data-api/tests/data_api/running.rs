//! Ways to run the server: on a background thread (for other crates'
//! tests) and as the `local-data-api` binary.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use aws_sdk_rdsdata::types::Field;
use hookbox_testkit::TestDb;

use crate::support::{RESOURCE_ARN, SECRET_ARN, only, sdk_client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_server_serves_until_dropped() {
    let db = TestDb::create().await;
    let server = local_data_api::spawn_background(local_data_api::Config::new(db.url()))
        .expect("background server");
    assert!(server.addr().ip().is_loopback());
    let client = sdk_client(&server.endpoint_url());
    let out = client
        .execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .sql("SELECT 41 + 1")
        .send()
        .await
        .expect("call");
    assert_eq!(only(&out), &Field::LongValue(42));
    assert_eq!(server.api().open_transactions(), 0);

    let endpoint = server.endpoint_url();
    drop(server);
    let after = sdk_client(&endpoint)
        .execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .sql("SELECT 1")
        .send()
        .await;
    assert!(after.is_err(), "the server should be gone");
}

/// Kills the child when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_prints_its_address_and_serves() {
    let db = TestDb::create().await;
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_local-data-api"))
            .args(["--listen", "127.0.0.1:0"])
            .env("DATABASE_URL", db.url())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start local-data-api"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    })
    .await
    .expect("join")
    .expect("read the first line");
    let endpoint = line
        .trim()
        .strip_prefix("local-data-api listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint}");

    let out = sdk_client(&endpoint)
        .execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .sql("SELECT current_database()")
        .send()
        .await
        .expect("call the binary");
    assert_eq!(only(&out), &Field::StringValue(db.name().to_string()));
}
