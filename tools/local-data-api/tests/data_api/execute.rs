//! ExecuteStatement and BatchExecuteStatement: counts, metadata, JSON
//! records, result set options, database selection, request checks.

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use aws_sdk_rdsdata::types::{
    DecimalReturnType, Field, LongReturnType, RecordsFormatType, ResultSetOptions,
};
use hookbox_testkit::TestDb;

use crate::support::{RESOURCE_ARN, SECRET_ARN, only_long, only_string, param, start, string};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_updated_counts_rows_of_statements_without_a_result_set() {
    let s = start().await;
    let created = s
        .run("CREATE TABLE t (id bigint PRIMARY KEY, name text)")
        .await;
    assert_eq!(created.number_of_records_updated(), 0);
    assert!(created.records().is_empty());

    let inserted = s
        .run("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        .await;
    assert_eq!(inserted.number_of_records_updated(), 3);
    assert!(inserted.records().is_empty());
    assert!(inserted.generated_fields().is_empty());

    let updated = s.run("UPDATE t SET name = 'x' WHERE id >= 2").await;
    assert_eq!(updated.number_of_records_updated(), 2);

    let with_insert = s
        .run(
            "WITH src AS (SELECT g FROM generate_series(10, 14) AS g) \
             INSERT INTO t SELECT g, 'g' FROM src",
        )
        .await;
    assert_eq!(with_insert.number_of_records_updated(), 5);

    let deleted = s.run("DELETE FROM t WHERE id >= 10").await;
    assert_eq!(deleted.number_of_records_updated(), 5);

    let selected = s.run("SELECT id FROM t ORDER BY id").await;
    assert_eq!(selected.number_of_records_updated(), 0);
    assert_eq!(selected.records().len(), 3);

    let returning = s
        .run("INSERT INTO t VALUES (4, 'd') RETURNING id, name")
        .await;
    assert_eq!(returning.number_of_records_updated(), 0);
    assert_eq!(
        returning.records(),
        &[vec![Field::LongValue(4), string("d")]]
    );

    // A trailing semicolon is harmless.
    let semicolon = s.run("SELECT count(*) FROM t;").await;
    assert_eq!(only_long(&semicolon), 4);

    let empty = s.run("SELECT id FROM t WHERE false").await;
    assert!(empty.records().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_metadata_is_sent_only_when_asked_for() {
    let s = start().await;
    s.run(
        "CREATE TABLE t (seq bigint GENERATED ALWAYS AS IDENTITY, id uuid NOT NULL, \
                         at timestamptz, amount numeric(12, 2), label varchar(20))",
    )
    .await;
    let without = s.run("SELECT seq, id, at FROM t").await;
    assert!(without.column_metadata().is_empty());

    let with = s
        .exec("SELECT seq, id, at, amount, label, 1 AS one FROM t")
        .include_result_metadata(true)
        .send()
        .await
        .expect("metadata");
    let meta = with.column_metadata();
    let summary: Vec<(&str, &str, i32, i32, bool)> = meta
        .iter()
        .map(|m| {
            (
                m.name().unwrap_or_default(),
                m.type_name().unwrap_or_default(),
                m.r#type(),
                m.nullable(),
                m.is_auto_increment(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("seq", "int8", -5, 0, true),
            ("id", "uuid", 1111, 0, false),
            ("at", "timestamptz", 93, 1, false),
            ("amount", "numeric", 2, 1, false),
            ("label", "varchar", 12, 1, false),
            ("one", "int4", 4, 1, false),
        ]
    );
    assert_eq!(meta[3].precision(), 12);
    assert_eq!(meta[3].scale(), 2);
    assert_eq!(meta[4].precision(), 20);
    assert_eq!(meta[0].label(), Some("seq"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_can_be_formatted_as_json() {
    let s = start().await;
    let out = s
        .exec(
            "SELECT * FROM (VALUES (1, CAST('a' AS text), CAST(NULL AS text), true, \
                                    CAST(1.5 AS float8), CAST(2.50 AS numeric)), \
                                   (2, 'b', 'z', false, 0.25, 3)) \
                     AS t(id, name, note, ok, x, amount) ORDER BY id",
        )
        .format_records_as(RecordsFormatType::Json)
        .send()
        .await
        .expect("json records");
    assert!(out.records().is_empty());
    let json: serde_json::Value =
        serde_json::from_str(out.formatted_records().expect("formattedRecords")).expect("json");
    assert_eq!(
        json,
        serde_json::json!([
            {"id": 1, "name": "a", "note": null, "ok": true, "x": 1.5, "amount": "2.50"},
            {"id": 2, "name": "b", "note": "z", "ok": false, "x": 0.25, "amount": "3"},
        ])
    );
    let none = s
        .exec("SELECT 1 WHERE false")
        .format_records_as(RecordsFormatType::Json)
        .send()
        .await
        .expect("empty json");
    assert_eq!(none.formatted_records(), Some("[]"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_set_options_change_long_and_decimal_members() {
    let s = start().await;
    let out = s
        .exec("SELECT CAST(9007199254740993 AS int8), CAST(12 AS numeric), CAST(1.25 AS numeric)")
        .result_set_options(
            ResultSetOptions::builder()
                .long_return_type(LongReturnType::String)
                .decimal_return_type(DecimalReturnType::DoubleOrLong)
                .build(),
        )
        .send()
        .await
        .expect("options");
    assert_eq!(
        out.records()[0],
        vec![
            string("9007199254740993"),
            Field::LongValue(12),
            Field::DoubleValue(1.25)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_member_selects_the_database() {
    let s = start().await;
    let other = TestDb::create().await;
    let default = s.run("SELECT current_database()").await;
    assert_eq!(only_string(&default), s.db.name());
    let chosen = s
        .exec("SELECT current_database()")
        .database(other.name())
        .send()
        .await
        .expect("other database");
    assert_eq!(only_string(&chosen), other.name());

    let err = s
        .exec("SELECT 1")
        .database("no_such_database")
        .send()
        .await
        .expect_err("unknown database")
        .into_service_error();
    assert!(err.is_database_error_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("SQLState: 3D000"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_members_must_be_present() {
    let s = start().await;
    for request in [
        s.exec(""),
        s.client
            .execute_statement()
            .resource_arn("")
            .secret_arn(SECRET_ARN)
            .sql("SELECT 1"),
        s.client
            .execute_statement()
            .resource_arn(RESOURCE_ARN)
            .secret_arn("")
            .sql("SELECT 1"),
    ] {
        let err = request
            .send()
            .await
            .expect_err("missing member")
            .into_service_error();
        assert!(err.is_bad_request_exception(), "{err:?}");
    }
    let err = s
        .client
        .commit_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .transaction_id("")
        .send()
        .await
        .expect_err("missing transaction id")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autocommit_calls_do_not_share_session_state() {
    let s = start().await;
    // A BEGIN or SET left behind by one call must not leak into the next
    // (on the service, consecutive calls may use different connections).
    s.run("CREATE TABLE t (id int)").await;
    s.run("BEGIN").await;
    s.run("INSERT INTO t VALUES (1)").await;
    s.run("SET TimeZone = 'Europe/Paris'").await;
    assert_eq!(s.count_directly("t").await, 1);
    let tz = s.run("SELECT current_setting('TimeZone')").await;
    assert_eq!(only_string(&tz), "UTC");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_execute_runs_once_per_parameter_set() {
    let s = start().await;
    s.run("CREATE TABLE t (id bigint PRIMARY KEY, name text)")
        .await;
    let batch = |sets: Vec<Vec<aws_sdk_rdsdata::types::SqlParameter>>| {
        let mut request = s
            .client
            .batch_execute_statement()
            .resource_arn(RESOURCE_ARN)
            .secret_arn(SECRET_ARN)
            .sql("INSERT INTO t VALUES (:id, :name)");
        for set in sets {
            request = request.parameter_sets(set);
        }
        request
    };
    let set = |id: i64, name: &str| {
        vec![
            param("id", Field::LongValue(id)),
            param("name", string(name)),
        ]
    };

    let out = batch(vec![set(1, "a"), set(2, "b"), set(3, "c")])
        .send()
        .await
        .expect("batch");
    assert_eq!(out.update_results().len(), 3);
    assert_eq!(s.count_directly("t").await, 3);

    // One failing set: nothing of the batch is kept.
    let err = batch(vec![set(4, "d"), set(1, "duplicate")])
        .send()
        .await
        .expect_err("duplicate key")
        .into_service_error();
    assert!(err.is_database_error_exception(), "{err:?}");
    assert!(
        err.message()
            .unwrap_or_default()
            .contains("SQLState: 23505"),
        "{err:?}"
    );
    assert_eq!(s.count_directly("t").await, 3);

    // A bad parameter set is refused before anything runs.
    let err = batch(vec![set(5, "e"), vec![param("id", Field::LongValue(6))]])
        .send()
        .await
        .expect_err("missing :name")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert_eq!(s.count_directly("t").await, 3);

    // No parameter sets: runs zero times.
    let out = batch(vec![]).send().await.expect("empty batch");
    assert!(out.update_results().is_empty());

    // In a transaction: invisible until commit.
    let tx = s.begin().await;
    let out = batch(vec![set(7, "g"), set(8, "h")])
        .transaction_id(&tx)
        .send()
        .await
        .expect("batch in transaction");
    assert_eq!(out.update_results().len(), 2);
    assert_eq!(s.count_directly("t").await, 3);
    let in_tx = s.run_in(&tx, "SELECT count(*) FROM t").await;
    assert_eq!(only_long(&in_tx), 5);
    s.client
        .commit_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .transaction_id(&tx)
        .send()
        .await
        .expect("commit");
    assert_eq!(s.count_directly("t").await, 5);

    let err = batch(vec![set(9, "i")])
        .transaction_id("no-such-transaction")
        .send()
        .await
        .expect_err("unknown transaction")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");
}
