//! The database port against real PostgreSQL: typed values both ways, named
//! parameters, transactions, and the error contract.

mod common;

use chrono::Duration;
use common::{Adapter, at, empty_db, sql};
use hookbox::params;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{DbError, Executor, Value, fetch_one};
use uuid::Uuid;

async fn every_value_type_round_trips_through_named_parameters(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    db.execute(
        &sql(
            "CREATE TABLE t (s text, n bigint, i integer, b boolean, at timestamptz,
                              u uuid, j jsonb, raw bytea, nothing text)",
        ),
        &params! {},
    )
    .await
    .expect("create");
    let id = Uuid::now_v7();
    // microseconds survive; PostgreSQL keeps no more than that
    let when = at(0) + Duration::microseconds(123_457);
    let raw: Vec<u8> = (0..=255).collect();
    let inserted = db
        .execute(
            &sql(
                "INSERT INTO t VALUES (:s, :n, :i, :b, CAST(:at AS timestamptz), :u,
                                        CAST(:j AS jsonb), :raw, :nothing)",
            ),
            &params! {
                "s" => "héllo ':not_a_param'", "n" => i64::MAX, "i" => -7_i64, "b" => true,
                "at" => when, "u" => id, "j" => serde_json::json!({"k": [1, "two"]}),
                "raw" => raw.clone(), "nothing" => None::<String>,
            },
        )
        .await
        .expect("insert");
    assert_eq!(inserted.affected, 1);
    let row = fetch_one(db.as_ref(), &sql("SELECT * FROM t"), &params! {})
        .await
        .expect("select");
    assert_eq!(row.text("s").expect("s"), "héllo ':not_a_param'");
    assert_eq!(row.i64("n").expect("n"), i64::MAX);
    assert_eq!(row.i64("i").expect("i"), -7);
    assert!(row.bool("b").expect("b"));
    assert_eq!(row.timestamp("at").expect("at"), when);
    assert_eq!(row.uuid("u").expect("u"), id);
    assert_eq!(
        row.json("j").expect("j"),
        serde_json::json!({"k": [1, "two"]})
    );
    assert_eq!(row.bytes("raw").expect("raw"), raw);
    assert_eq!(row.value("nothing").expect("nothing"), &Value::Null);
}

async fn text_values_are_converted_to_the_type_the_statement_needs(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    let id = Uuid::now_v7();
    let row = fetch_one(
        db.as_ref(),
        &sql(
            "SELECT CAST(:u AS uuid) AS u, CAST(:at AS timestamptz) AS at,
                     CAST(:j AS jsonb) AS j, :n + 1 AS n, :same = :same AS reused",
        ),
        &params! {
            "u" => id.to_string(), "at" => "2026-06-01T12:00:00Z",
            "j" => "{\"a\":1}", "n" => 41_i64, "same" => "x",
        },
    )
    .await
    .expect("select");
    assert_eq!(row.uuid("u").expect("u"), id);
    assert_eq!(row.timestamp("at").expect("at"), at(0));
    assert_eq!(row.json("j").expect("j"), serde_json::json!({"a": 1}));
    assert_eq!(row.i64("n").expect("n"), 42);
    assert!(row.bool("reused").expect("reused"));
}

#[tokio::test]
async fn parameter_mistakes_are_statement_errors_naming_the_parameter() {
    let (_t, db) = empty_db(Adapter::Postgres).await;
    let missing = db
        .execute(&sql("SELECT :a AS a"), &params! {})
        .await
        .expect_err("missing");
    assert!(
        matches!(&missing, DbError::Statement { message, statement: "test.sql" } if message.contains(":a")),
        "{missing}"
    );
    let extra = db
        .execute(&sql("SELECT 1 AS one"), &params! { "typo" => 1_i64 })
        .await
        .expect_err("extra");
    assert!(extra.to_string().contains(":typo is not used"), "{extra}");
    let wrong_type = db
        .execute(
            &sql("SELECT CAST(:u AS uuid) AS u"),
            &params! { "u" => true },
        )
        .await
        .expect_err("bool as uuid");
    assert!(
        matches!(&wrong_type, DbError::Statement { .. })
            && wrong_type.to_string().contains(":u is bool"),
        "{wrong_type}"
    );
    let bad_uuid = db
        .execute(
            &sql("SELECT CAST(:u AS uuid) AS u"),
            &params! { "u" => "nope" },
        )
        .await
        .expect_err("bad uuid text");
    assert!(
        bad_uuid.to_string().contains(":u is not a uuid"),
        "{bad_uuid}"
    );
    let positional = db
        .execute(&sql("SELECT $1"), &params! {})
        .await
        .expect_err("positional");
    assert!(
        positional.to_string().contains("positional placeholder"),
        "{positional}"
    );
}

async fn errors_distinguish_constraint_statement_and_decode(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    db.execute(&sql("CREATE TABLE k (id integer PRIMARY KEY)"), &params! {})
        .await
        .expect("create");
    let insert = sql("INSERT INTO k VALUES (:id)");
    db.execute(&insert, &params! { "id" => 1_i64 })
        .await
        .expect("first");
    let dup = db
        .execute(&insert, &params! { "id" => 1_i64 })
        .await
        .expect_err("duplicate");
    match &dup {
        DbError::Constraint {
            constraint,
            code,
            statement,
            ..
        } => {
            assert_eq!(constraint, "k_pkey");
            assert_eq!(code, "23505");
            assert_eq!(*statement, "test.sql");
        }
        other => panic!("expected a constraint violation, got {other:?}"),
    }
    assert!(!dup.is_retryable());
    let bad = db
        .execute(&sql("SELECT nope FROM k"), &params! {})
        .await
        .expect_err("bad column");
    assert!(matches!(bad, DbError::Statement { .. }), "{bad:?}");
    assert!(bad.to_string().contains("42703"), "{bad}");
    // Columns of a type the port does not carry: the PostgreSQL adapter
    // refuses them, the Data API returns numerics as text (as the service does).
    let decimal = db.execute(&sql("SELECT 1.5 AS x"), &params! {}).await;
    match adapter {
        Adapter::Postgres => assert!(
            matches!(&decimal, Err(DbError::Decode { column, .. }) if column == "x"),
            "{decimal:?}"
        ),
        Adapter::DataApi => assert_eq!(
            decimal.expect("numeric as text").rows[0]
                .text("x")
                .expect("x"),
            "1.5"
        ),
    }
}

#[tokio::test]
async fn a_database_that_cannot_be_reached_is_unavailable_and_retryable() {
    // A port on loopback that nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let db = PgDatabase::connect(
        &format!("postgres://nobody:secret@127.0.0.1:{port}/none"),
        &PgOptions {
            acquire_timeout: std::time::Duration::from_secs(2),
            ..PgOptions::default()
        },
    )
    .expect("pool builds lazily");
    let e = db
        .execute(&sql("SELECT 1 AS one"), &params! {})
        .await
        .expect_err("nothing listens");
    assert!(e.is_retryable(), "{e:?}");
    assert!(
        matches!(
            e,
            DbError::Unavailable {
                statement: "test.sql",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.to_string().contains("secret"), "password leaked: {e}");
    assert!(
        !format!("{db:?}").contains("secret"),
        "password leaked in Debug"
    );
}

async fn transactions_commit_roll_back_and_roll_back_when_dropped(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    db.execute(&sql("CREATE TABLE v (n bigint)"), &params! {})
        .await
        .expect("create");
    let insert = sql("INSERT INTO v VALUES (:n)");
    let count = sql("SELECT count(*) AS n FROM v");

    let tx = db.begin().await.expect("begin");
    tx.execute(&insert, &params! { "n" => 1_i64 })
        .await
        .expect("insert 1");
    // Not visible outside before commit.
    let outside = fetch_one(db.as_ref(), &count, &params! {})
        .await
        .expect("count");
    assert_eq!(outside.i64("n").expect("n"), 0);
    tx.commit().await.expect("commit");

    let tx = db.begin().await.expect("begin");
    tx.execute(&insert, &params! { "n" => 2_i64 })
        .await
        .expect("insert 2");
    tx.rollback().await.expect("rollback");

    {
        let tx = db.begin().await.expect("begin");
        tx.execute(&insert, &params! { "n" => 3_i64 })
            .await
            .expect("insert 3");
        // dropped without commit
    }

    let tx = db.begin().await.expect("begin");
    let failed = tx.execute(&sql("SELECT nope FROM v"), &params! {}).await;
    assert!(failed.is_err());
    tx.rollback().await.expect("rollback after failure");

    let rows = db
        .execute(&sql("SELECT n FROM v ORDER BY n"), &params! {})
        .await
        .expect("select")
        .rows;
    let values: Vec<i64> = rows.iter().map(|r| r.i64("n").expect("n")).collect();
    assert_eq!(values, vec![1]);
}

#[tokio::test]
async fn each_statement_text_is_rewritten_once() {
    let test_db = hookbox_testkit::TestDb::create().await;
    let db = PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool");
    let one = sql("SELECT :x AS x");
    for n in 0..5_i64 {
        let row = fetch_one(&db, &one, &params! { "x" => n })
            .await
            .expect("select");
        assert_eq!(row.text("x").expect("x"), n.to_string());
    }
    assert_eq!(db.cached_statements(), 1);
    fetch_one(&db, &sql("SELECT 2 AS y"), &params! {})
        .await
        .expect("other");
    assert_eq!(db.cached_statements(), 2);
}

for_each_adapter!(
    every_value_type_round_trips_through_named_parameters,
    text_values_are_converted_to_the_type_the_statement_needs,
    transactions_commit_roll_back_and_roll_back_when_dropped,
    errors_distinguish_constraint_statement_and_decode,
);
