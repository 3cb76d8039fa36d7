//! Transactions: isolation, commit, rollback, unknown ids, aborted
//! transactions, idle expiry with the manual clock, serialised calls.

use std::time::Duration;

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use aws_sdk_rdsdata::types::Field;

use crate::support::{RESOURCE_ARN, SECRET_ARN, Server, only_long, param, start, start_with};

async fn commit(
    s: &Server,
    tx: &str,
) -> Result<String, aws_sdk_rdsdata::operation::commit_transaction::CommitTransactionError> {
    s.client
        .commit_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .transaction_id(tx)
        .send()
        .await
        .map(|out| out.transaction_status().unwrap_or_default().to_string())
        .map_err(|e| e.into_service_error())
}

async fn rollback(
    s: &Server,
    tx: &str,
) -> Result<String, aws_sdk_rdsdata::operation::rollback_transaction::RollbackTransactionError> {
    s.client
        .rollback_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .transaction_id(tx)
        .send()
        .await
        .map(|out| out.transaction_status().unwrap_or_default().to_string())
        .map_err(|e| e.into_service_error())
}

async fn with_table() -> Server {
    let s = start().await;
    s.run("CREATE TABLE t (id bigint PRIMARY KEY)").await;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_is_invisible_to_other_connections_until_commit() {
    let s = with_table().await;
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1), (2)").await;

    assert_eq!(only_long(&s.run_in(&tx, "SELECT count(*) FROM t").await), 2);
    // Neither a direct connection nor an autocommit call sees it.
    assert_eq!(s.count_directly("t").await, 0);
    assert_eq!(only_long(&s.run("SELECT count(*) FROM t").await), 0);

    assert_eq!(
        commit(&s, &tx).await.expect("commit"),
        "Transaction Committed"
    );
    assert_eq!(s.count_directly("t").await, 2);
    assert_eq!(s.api.open_transactions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_discards_the_transaction() {
    let s = with_table().await;
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1)").await;
    assert_eq!(
        rollback(&s, &tx).await.expect("rollback"),
        "Rollback Complete"
    );
    assert_eq!(s.count_directly("t").await, 0);
    assert_eq!(s.api.open_transactions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_finished_transactions_are_not_found() {
    let s = with_table().await;
    let err = commit(&s, "no-such-transaction")
        .await
        .expect_err("unknown");
    assert!(err.is_not_found_exception(), "{err:?}");
    let err = rollback(&s, "no-such-transaction")
        .await
        .expect_err("unknown");
    assert!(err.is_not_found_exception(), "{err:?}");
    let err = s
        .exec("SELECT 1")
        .transaction_id("no-such-transaction")
        .send()
        .await
        .expect_err("unknown")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("no-such-transaction"),
        "{err:?}"
    );

    let tx = s.begin().await;
    commit(&s, &tx).await.expect("commit");
    let err = commit(&s, &tx).await.expect_err("committed already");
    assert!(err.is_not_found_exception(), "{err:?}");
    let err = rollback(&s, &tx).await.expect_err("committed already");
    assert!(err.is_not_found_exception(), "{err:?}");
    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("committed already")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_statement_aborts_the_transaction_until_rollback() {
    let s = with_table().await;
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1)").await;
    let err = s
        .exec("INSERT INTO t VALUES (1)")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("duplicate")
        .into_service_error();
    assert!(err.is_database_error_exception(), "{err:?}");
    let message = err.message().unwrap_or_default();
    assert!(message.contains("SQLState: 23505"), "{message}");
    assert!(
        message.contains("Detail: Key (id)=(1) already exists."),
        "{message}"
    );

    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("aborted")
        .into_service_error();
    assert!(err.is_database_error_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("SQLState: 25P02"),
        "{err:?}"
    );

    // Committing an aborted transaction must not look like success.
    let err = commit(&s, &tx).await.expect_err("aborted transaction");
    assert!(err.is_database_error_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("SQLState: 25P02"),
        "{err:?}"
    );
    assert_eq!(s.count_directly("t").await, 0);
    let err = rollback(&s, &tx).await.expect_err("gone");
    assert!(err.is_not_found_exception(), "{err:?}");

    // A savepoint makes the transaction usable again, as in PostgreSQL.
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1)").await;
    s.run_in(&tx, "SAVEPOINT before_duplicate").await;
    assert!(
        s.exec("INSERT INTO t VALUES (1)")
            .transaction_id(&tx)
            .send()
            .await
            .is_err()
    );
    s.run_in(&tx, "ROLLBACK TO SAVEPOINT before_duplicate")
        .await;
    s.run_in(&tx, "INSERT INTO t VALUES (2)").await;
    assert_eq!(
        commit(&s, &tx).await.expect("commit"),
        "Transaction Committed"
    );
    assert_eq!(s.count_directly("t").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_transaction_expires_after_three_minutes() {
    let s = with_table().await;
    let tx = s.begin().await;
    s.run_in(&tx, "INSERT INTO t VALUES (1)").await;

    // Just under the timeout: still there, and the use restarts the clock.
    s.clock.advance(chrono::Duration::seconds(179));
    s.run_in(&tx, "INSERT INTO t VALUES (2)").await;
    s.clock.advance(chrono::Duration::seconds(179));
    assert_eq!(only_long(&s.run_in(&tx, "SELECT count(*) FROM t").await), 2);

    s.clock.advance(chrono::Duration::seconds(181));
    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("expired")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");
    let err = commit(&s, &tx).await.expect_err("expired");
    assert!(err.is_not_found_exception(), "{err:?}");
    assert_eq!(s.count_directly("t").await, 0);
    assert_eq!(s.api.open_transactions(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_rolls_back_idle_transactions_and_frees_their_locks() {
    let s = with_table().await;
    s.run("INSERT INTO t VALUES (1), (2)").await;
    let old = s.begin().await;
    s.run_in(&old, "SELECT id FROM t WHERE id = 1 FOR UPDATE")
        .await;
    s.clock.advance(chrono::Duration::seconds(100));
    let young = s.begin().await;
    s.run_in(&young, "DELETE FROM t WHERE id = 2").await;
    s.clock.advance(chrono::Duration::seconds(100));

    // `old` has been idle 200 s, `young` 100 s.
    assert_eq!(s.api.reap_idle_transactions().await, 1);
    assert_eq!(s.api.open_transactions(), 1);
    // The row lock of `old` is gone.
    let pg = s.pg().await;
    pg.batch_execute("SET lock_timeout = '2s'; UPDATE t SET id = 10 WHERE id = 1")
        .await
        .expect("row 1 is no longer locked");
    // `young` goes on.
    assert_eq!(
        commit(&s, &young).await.expect("commit"),
        "Transaction Committed"
    );
    assert_eq!(s.count_directly("t").await, 1);
    let err = commit(&s, &old).await.expect_err("reaped");
    assert!(err.is_not_found_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idle_timeout_is_configurable() {
    let s = start_with(|c| local_data_api::Config {
        transaction_idle_timeout: Duration::from_secs(10),
        ..c
    })
    .await;
    let tx = s.begin().await;
    s.clock.advance(chrono::Duration::seconds(11));
    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("expired after 10 s")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_transaction_are_serialised() {
    let s = with_table().await;
    let tx = s.begin().await;
    let calls = (1..=20).map(|id| {
        s.exec("INSERT INTO t VALUES (:id)")
            .transaction_id(&tx)
            .parameters(param("id", Field::LongValue(id)))
            .send()
    });
    for result in futures::future::join_all(calls).await {
        result.expect("concurrent insert");
    }
    // A commit racing with statements: each statement either ran before
    // it (and is committed) or finds the transaction gone.
    let late = s
        .exec("INSERT INTO t VALUES (100)")
        .transaction_id(&tx)
        .send();
    let (committed, late) = tokio::join!(commit(&s, &tx), late);
    assert_eq!(committed.expect("commit"), "Transaction Committed");
    let expected = match late {
        Ok(_) => 21,
        Err(e) => {
            let e = e.into_service_error();
            assert!(e.is_transaction_not_found_exception(), "{e:?}");
            20
        }
    };
    assert_eq!(s.count_directly("t").await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_cancelled_by_the_timeout_is_a_statement_timeout() {
    let s = start().await;
    let tx = s.begin().await;
    s.run_in(&tx, "SET LOCAL statement_timeout = '50ms'").await;
    let err = s
        .exec("SELECT pg_sleep(30)")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("cancelled")
        .into_service_error();
    assert!(err.is_statement_timeout_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("SQLState: 57014"),
        "{err:?}"
    );
    assert_eq!(
        rollback(&s, &tx).await.expect("rollback"),
        "Rollback Complete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn begin_transaction_uses_the_requested_database() {
    let s = start().await;
    let other = hookbox_testkit::TestDb::create().await;
    let out = s
        .client
        .begin_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .database(other.name())
        .send()
        .await
        .expect("begin");
    let tx = out.transaction_id().expect("id").to_string();
    let name = s.run_in(&tx, "SELECT current_database()").await;
    assert_eq!(crate::support::only_string(&name), other.name());
    rollback(&s, &tx).await.expect("rollback");
}
