//! The service's size limits: 64 KB per result row, 1 MiB per response.

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use local_data_api::{MAX_RESPONSE_BYTES, MAX_ROW_BYTES};

use crate::support::{only_string, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_over_64_kb_is_refused() {
    let s = start().await;
    assert_eq!(MAX_ROW_BYTES, 65_536);
    let fits = s.run("SELECT repeat('x', 65536)").await;
    assert_eq!(only_string(&fits).len(), 65_536);

    let err = s
        .exec("SELECT repeat('x', 70000)")
        .send()
        .await
        .expect_err("row too large")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("Packet for query is too large"),
        "{err:?}"
    );

    // Several columns count together.
    let err = s
        .exec("SELECT repeat('x', 40000), repeat('y', 40000)")
        .send()
        .await
        .expect_err("row too large")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_over_1_mib_is_refused() {
    let s = start().await;
    assert_eq!(MAX_RESPONSE_BYTES, 1_048_576);
    let fits = s
        .run("SELECT repeat('x', 1000) FROM generate_series(1, 1000)")
        .await;
    assert_eq!(fits.records().len(), 1000);

    let err = s
        .exec("SELECT repeat('x', 1000) FROM generate_series(1, 1100)")
        .send()
        .await
        .expect_err("response too large")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("Database response exceeded size limit"),
        "{err:?}"
    );

    // The server is fine afterwards.
    let after = s.run("SELECT 'ok'").await;
    assert_eq!(only_string(&after), "ok");
}
