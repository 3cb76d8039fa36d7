//! Auto-pause, simulated: while paused every call is a
//! `DatabaseResumingException` (400), open transactions are gone, bad
//! requests are still bad requests; through hookbox's adapter it is the
//! retryable outage it is.

use std::time::Duration;

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use chrono::TimeDelta;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::{Database, DbError, Executor, Statement};

use crate::support::{RESOURCE_ARN, SECRET_ARN, only_long, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_database_answers_resuming_until_its_resume_time_has_passed() {
    let s = start().await;
    s.run("CREATE TABLE t (id bigint PRIMARY KEY)").await;
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1)").await;

    s.api.pause(Some(Duration::from_secs(15)));
    assert_eq!(
        s.api.open_transactions(),
        0,
        "a paused database has no sessions"
    );

    let err = s
        .exec("SELECT 1")
        .send()
        .await
        .expect_err("paused")
        .into_service_error();
    assert_eq!(err.code(), Some("DatabaseResumingException"), "{err:?}");
    assert!(err.is_database_resuming_exception());

    // a bad request is refused as such, paused or not
    let bad = s
        .client
        .execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .send()
        .await
        .expect_err("no sql")
        .into_service_error();
    assert_eq!(bad.code(), Some("BadRequestException"), "{bad:?}");

    s.clock.advance(TimeDelta::seconds(14));
    assert!(s.exec("SELECT 1").send().await.is_err(), "still resuming");
    s.clock.advance(TimeDelta::seconds(1));
    // awake; the transaction open before the pause was rolled back
    assert_eq!(only_long(&s.run("SELECT count(*) FROM t").await), 0);
    let gone = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("the transaction is gone")
        .into_service_error();
    assert_eq!(
        gone.code(),
        Some("TransactionNotFoundException"),
        "{gone:?}"
    );
    assert!(!s.api.is_paused());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_adapter_resuming_is_a_retryable_outage_on_every_operation() {
    let s = start().await;
    let db = DataApiDatabase::local(
        &s.endpoint,
        DataApiTarget {
            resource_arn: RESOURCE_ARN.into(),
            secret_arn: SECRET_ARN.into(),
            database: String::new(),
        },
    );
    const ONE: Statement = Statement::new("paused.one", "SELECT 1 AS one");
    s.api.pause(None);
    let unavailable = |e: DbError| match e {
        DbError::Unavailable { reason, .. } => {
            assert!(reason.contains("DatabaseResumingException"), "{reason}");
        }
        other => panic!("not an outage: {other:?}"),
    };
    unavailable(
        db.execute(&ONE, &hookbox::params! {})
            .await
            .expect_err("paused"),
    );
    unavailable(db.begin().await.map(drop).expect_err("paused"));
    s.api.resume();
    let rows = db.execute(&ONE, &hookbox::params! {}).await.expect("awake");
    assert_eq!(rows.rows.len(), 1);
}
