//! What is specific to the RDS Data API adapter, against the local Data API
//! server over real PostgreSQL: transaction isolation, "unavailable" when the
//! database dies under the service, and the number of Data API calls each
//! repository operation costs.

mod common;

use std::time::Duration;

use chrono::Duration as Span;
use common::{at, data_api, sql};
use hookbox::inbox::{self, NewInboxEvent, Retention};
use hookbox::outbox::{self, DeliveryOutcome, DeliveryResult, NewOutboxEvent};
use hookbox::params;
use hookbox::store::data_api::{Calls, DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, DbError, Executor, fetch_one};
use hookbox_testkit::{PrivateCluster, TestDb, start_data_api};

async fn count(db: &dyn Executor) -> i64 {
    common::count(db, "SELECT count(*) AS n FROM t").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_api_transaction_is_isolated_until_commit_and_rollback_discards_it() {
    let test_db = TestDb::create().await;
    let api = data_api(&test_db);
    // a second, independent connection: direct PostgreSQL
    let direct = PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool");
    api.execute(&sql("CREATE TABLE t (n bigint)"), &params! {})
        .await
        .expect("create");
    let insert = sql("INSERT INTO t VALUES (:n)");

    let tx = api.begin().await.expect("begin");
    tx.execute(&insert, &params! { "n" => 1_i64 })
        .await
        .expect("insert");
    assert_eq!(
        count(tx.as_ref()).await,
        1,
        "visible inside the transaction"
    );
    assert_eq!(count(&direct).await, 0, "invisible to another connection");
    assert_eq!(count(&api).await, 0, "invisible to another Data API call");
    tx.commit().await.expect("commit");
    assert_eq!(count(&direct).await, 1, "visible after commit");

    let tx = api.begin().await.expect("begin");
    tx.execute(&insert, &params! { "n" => 2_i64 })
        .await
        .expect("insert");
    tx.rollback().await.expect("rollback");
    assert_eq!(count(&direct).await, 1, "rollback discarded the insert");

    // dropped without commit: rolled back in the background
    let before = api.calls();
    {
        let tx = api.begin().await.expect("begin");
        tx.execute(&insert, &params! { "n" => 3_i64 })
            .await
            .expect("insert");
    }
    while api.calls().since(before).rollback == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(count(&direct).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_dying_under_the_data_api_is_reported_unavailable() {
    let cluster = PrivateCluster::start();
    let server = start_data_api(cluster.url());
    let db = DataApiDatabase::local(
        &server.endpoint_url(),
        DataApiTarget {
            resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:dying".into(),
            secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:dying".into(),
            database: "postgres".into(),
        },
    );
    let one = sql("SELECT 1 AS one");
    assert_eq!(
        fetch_one(&db, &one, &params! {})
            .await
            .expect("alive")
            .i64("one")
            .expect("one"),
        1
    );
    let tx = db.begin().await.expect("begin while alive");

    cluster.kill().expect("kill PostgreSQL");

    let e = db
        .execute(&one, &params! {})
        .await
        .expect_err("database is gone");
    assert!(e.is_retryable(), "{e:?}");
    assert!(
        matches!(&e, DbError::Unavailable { statement: "test.sql", reason } if reason.contains("DatabaseUnavailableException")),
        "{e:?}"
    );
    let in_tx = tx
        .execute(&one, &params! {})
        .await
        .expect_err("its transaction is gone too");
    assert!(in_tx.is_retryable(), "{in_tx:?}");
    let begin = db.begin().await.expect_err("no new transaction");
    assert!(
        matches!(
            begin,
            DbError::Unavailable {
                statement: "begin",
                ..
            }
        ),
        "{begin:?}"
    );
    // and a Data API endpoint that is not even there
    drop(server);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let nowhere = DataApiDatabase::local(
        &format!("http://127.0.0.1:{port}"),
        DataApiTarget {
            resource_arn: "arn".into(),
            secret_arn: "arn".into(),
            database: "postgres".into(),
        },
    );
    let e = nowhere
        .execute(&one, &params! {})
        .await
        .expect_err("no endpoint");
    assert!(matches!(e, DbError::Unavailable { .. }), "{e:?}");
    // tokio would complain if the transaction's background rollback outlived
    // the runtime without a chance to run: give it one.
    drop(tx);
    tokio::time::timeout(Duration::from_secs(5), tokio::task::yield_now())
        .await
        .expect("yield");
}

fn event(id: &str) -> NewInboxEvent {
    NewInboxEvent {
        partner: "acme".into(),
        event_id: id.into(),
        event_id_derived: false,
        event_type: Some("payment.received".into()),
        ordering_key: None,
        body: hookbox::inbox::Body::Inline(b"{}".to_vec()),
        headers: serde_json::json!({}),
        signature_verified: true,
    }
}

/// Runs `op` and returns the Data API calls it made.
async fn cost<F, Fut, T>(db: &DataApiDatabase, op: F) -> (T, Calls)
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let before = db.calls();
    let out = op().await;
    (out, db.calls().since(before))
}

fn calls(execute: u64, begin: u64, commit: u64, rollback: u64) -> Calls {
    Calls {
        execute,
        begin,
        commit,
        rollback,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_repository_operation_costs_one_data_api_call() {
    let test_db = TestDb::create().await;
    let db = data_api(&test_db);
    let d = &db;

    let (report, migrate_calls) = cost(d, || hookbox::migrate::migrate(d)).await;
    report.expect("migrate");
    // bootstrap (begin, lock, create table, commit), per migration (begin,
    // lock, applied list, its statements, record, commit), final check
    // (begin, lock, applied list, commit)
    let statements: u64 = hookbox::migrate::MIGRATIONS
        .iter()
        .map(|m| {
            hookbox::store::split_statements(m.sql)
                .expect("split")
                .len() as u64
        })
        .sum();
    let n = hookbox::migrate::MIGRATIONS.len() as u64;
    assert_eq!(
        migrate_calls,
        calls(4 + 3 * n + statements, 2 + n, 2 + n, 0),
        "migrate"
    );

    let e1 = event("e1");
    let (inserted, c) = cost(d, || inbox::insert_if_new(d, &e1, at(0))).await;
    let id = inserted.expect("insert").id();
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.insert_if_new (new)");
    let (_, c) = cost(d, || inbox::insert_if_new(d, &e1, at(1))).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.insert_if_new (duplicate)");

    let ids: Vec<_> = (2..12)
        .map(|i| async move { inbox::insert_if_new(d, &event(&format!("e{i}")), at(0)).await })
        .collect();
    let mut batch = vec![id];
    for f in ids {
        batch.push(f.await.expect("insert").id());
    }
    let (claims, c) = cost(d, || inbox::claim(d, &batch, at(2), at(32))).await;
    let claims = claims.expect("claim");
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.claim of 11 ids");
    let tokens: Vec<_> = claims
        .iter()
        .map(|claim| match claim {
            inbox::Claim::Claimed { token, .. } => *token,
            other => panic!("{other:?}"),
        })
        .collect();

    let (_, c) = cost(d, || inbox::mark_processed(d, tokens[0], at(3))).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.mark_processed");
    let (_, c) = cost(d, || {
        inbox::mark_deferred(d, tokens[1], at(3), at(63), "later")
    })
    .await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.mark_deferred");
    let (_, c) = cost(d, || inbox::mark_retry(d, tokens[2], at(63), "oops")).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.mark_retry");
    let (_, c) = cost(d, || inbox::mark_quarantined(d, tokens[3], at(3), "bad")).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.mark_quarantined");
    let (_, c) = cost(d, || inbox::mark_dead(d, tokens[4], at(3), "gone")).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.mark_dead");
    let (_, c) = cost(d, || {
        inbox::sweep_stranded(d, at(1000), Span::seconds(300), 100)
    })
    .await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.sweep_stranded");
    let (_, c) = cost(d, || inbox::counts_by_status(d)).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.counts_by_status");
    let (_, c) = cost(d, || inbox::oldest_active_received_at(d)).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.oldest_active_received_at");
    let (_, c) = cost(d, || {
        inbox::purge_finished(d, at(100), 500, Retention::Archive)
    })
    .await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.purge_finished");
    let (_, c) = cost(d, || inbox::get(d, id)).await;
    assert_eq!(c, calls(1, 0, 0, 0), "inbox.get");

    // outbox: enqueue lives in the business transaction (begin + 1 per event + commit)
    let (ids, c) = cost(d, || async {
        let tx = d.begin().await.expect("begin");
        let mut ids = Vec::new();
        for i in 0..3 {
            let e = NewOutboxEvent {
                aggregate_type: "order".into(),
                aggregate_id: format!("o{i}"),
                event_type: "order.paid".into(),
                destination: "erp".into(),
                payload: serde_json::json!({"i": i}),
            };
            ids.push(
                outbox::enqueue(tx.as_ref(), &e, at(0))
                    .await
                    .expect("enqueue"),
            );
        }
        tx.commit().await.expect("commit");
        ids
    })
    .await;
    assert_eq!(
        c,
        calls(3, 1, 1, 0),
        "3 × outbox.enqueue in one transaction"
    );
    let (claimed, c) = cost(d, || {
        outbox::claim_due(d, common::claim("relay", at(1), at(31), 100))
    })
    .await;
    assert_eq!(claimed.expect("claim").len(), 3);
    assert_eq!(c, calls(1, 0, 0, 0), "outbox.claim_due");
    let results: Vec<DeliveryResult> = ids
        .iter()
        .map(|id| DeliveryResult {
            id: *id,
            outcome: DeliveryOutcome::Delivered,
            status_code: Some(200),
            error: None,
            attempt: None,
        })
        .collect();
    let (recorded, c) = cost(d, || outbox::record_results(d, "relay", at(2), &results)).await;
    assert_eq!(recorded.expect("record"), 3);
    assert_eq!(
        c,
        calls(1, 0, 0, 0),
        "outbox.record_results of a batch of 3"
    );
    let (_, c) = cost(d, || outbox::counts_by_status(d)).await;
    assert_eq!(c, calls(1, 0, 0, 0), "outbox.counts_by_status");
    let (_, c) = cost(d, || outbox::oldest_pending_created_at(d)).await;
    assert_eq!(c, calls(1, 0, 0, 0), "outbox.oldest_pending_created_at");
    let (_, c) = cost(d, || {
        outbox::purge_finished(d, at(100), None, 500, Retention::Delete)
    })
    .await;
    assert_eq!(c, calls(1, 0, 0, 0), "outbox.purge_finished");
}
