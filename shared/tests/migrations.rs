//! The migration runner: idempotent, safe against concurrent runners, and
//! refusing edited migrations.

mod common;

use std::collections::BTreeSet;

use common::{Adapter, empty_db, sql};
use hookbox::migrate::{MIGRATIONS, MigrateError, Migration, Migrator, migrate};
use hookbox::params;
use hookbox::store::Database;

async fn recorded(db: &dyn Database) -> Vec<(i64, String)> {
    db.execute(
        &sql("SELECT version, checksum FROM schema_migrations ORDER BY version"),
        &params! {},
    )
    .await
    .expect("schema_migrations")
    .rows
    .iter()
    .map(|r| {
        (
            r.i64("version").expect("version"),
            r.text("checksum").expect("checksum"),
        )
    })
    .collect()
}

async fn applies_every_migration_once_and_a_second_run_is_a_no_op(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    let first = migrate(db.as_ref()).await.expect("first run");
    let all: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(first.applied, all);
    assert!(first.already_applied.is_empty());

    let second = migrate(db.as_ref()).await.expect("second run");
    assert!(second.applied.is_empty(), "{second:?}");
    assert_eq!(second.already_applied, all);

    let expected: Vec<(i64, String)> = MIGRATIONS
        .iter()
        .map(|m| (m.version, m.checksum()))
        .collect();
    assert_eq!(recorded(db.as_ref()).await, expected);
    // the schema is really there
    for table in ["inbox", "outbox", "inbox_archive", "outbox_archive"] {
        db.execute(
            &sql(&format!("SELECT count(*) AS n FROM {table}")),
            &params! {},
        )
        .await
        .unwrap_or_else(|e| panic!("{table}: {e}"));
    }
}

async fn concurrent_runners_apply_each_migration_exactly_once(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    let runners: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { migrate(db.as_ref()).await })
        })
        .collect();
    let mut applied_by_all = Vec::new();
    for r in runners {
        let report = r.await.expect("join").expect("runner succeeds");
        applied_by_all.extend(report.applied);
    }
    applied_by_all.sort_unstable();
    let all: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
    assert_eq!(
        applied_by_all, all,
        "each migration applied by exactly one runner"
    );
    assert_eq!(recorded(db.as_ref()).await.len(), MIGRATIONS.len());
}

static V1: &[Migration] = &[Migration {
    version: 1,
    name: "one",
    sql: "CREATE TABLE one (x int);",
}];
static V1_EDITED: &[Migration] = &[Migration {
    version: 1,
    name: "one",
    sql: "CREATE TABLE one (x bigint);",
}];
static V1_V2: &[Migration] = &[
    Migration {
        version: 1,
        name: "one",
        sql: "CREATE TABLE one (x int);",
    },
    Migration {
        version: 2,
        name: "two",
        sql: "CREATE TABLE two (y text DEFAULT ';');\nINSERT INTO one VALUES (2);",
    },
];

async fn an_edited_applied_migration_is_refused_with_a_clear_error(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    Migrator::new(V1).run(db.as_ref()).await.expect("v1");
    let err = Migrator::new(V1_EDITED)
        .run(db.as_ref())
        .await
        .expect_err("edited migration must be refused");
    match &err {
        MigrateError::ChecksumMismatch {
            version,
            name,
            applied,
            expected,
        } => {
            assert_eq!(*version, 1);
            assert_eq!(*name, "one");
            assert_eq!(applied, &V1[0].checksum());
            assert_eq!(expected, &V1_EDITED[0].checksum());
        }
        other => panic!("expected ChecksumMismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("migration 1 (one)") && text.contains("never be edited"),
        "{text}"
    );
}

async fn later_migrations_apply_on_top_and_a_failing_one_leaves_nothing_behind(adapter: Adapter) {
    let (_t, db) = empty_db(adapter).await;
    Migrator::new(V1).run(db.as_ref()).await.expect("v1");
    let report = Migrator::new(V1_V2).run(db.as_ref()).await.expect("v2");
    assert_eq!(report.applied, vec![2]);
    assert_eq!(report.already_applied, vec![1]);

    static BROKEN: &[Migration] = &[Migration {
        version: 3,
        name: "broken",
        sql: "CREATE TABLE three (z int);\nSELECT nope FROM three;",
    }];
    let err = Migrator::new(BROKEN)
        .run(db.as_ref())
        .await
        .expect_err("broken migration");
    assert!(
        matches!(
            err,
            MigrateError::Failed {
                version: 3,
                index: 2,
                ..
            }
        ),
        "{err:?}"
    );
    // the first statement of the failed migration was rolled back with it
    let exists = db
        .execute(
            &sql("SELECT to_regclass('three') IS NOT NULL AS present"),
            &params! {},
        )
        .await
        .expect("query")
        .rows[0]
        .bool("present")
        .expect("present");
    assert!(!exists);
    assert_eq!(recorded(db.as_ref()).await.len(), 2);
}

async fn unordered_migration_lists_are_rejected_before_touching_the_database(adapter: Adapter) {
    static UNORDERED: &[Migration] = &[
        Migration {
            version: 2,
            name: "b",
            sql: "SELECT 1",
        },
        Migration {
            version: 1,
            name: "a",
            sql: "SELECT 1",
        },
    ];
    let (_t, db) = empty_db(adapter).await;
    let err = Migrator::new(UNORDERED)
        .run(db.as_ref())
        .await
        .expect_err("unordered");
    assert!(matches!(err, MigrateError::Invalid(_)), "{err:?}");
    let table = db
        .execute(
            &sql("SELECT to_regclass('schema_migrations') IS NOT NULL AS present"),
            &params! {},
        )
        .await
        .expect("query")
        .rows[0]
        .bool("present")
        .expect("present");
    assert!(!table);
}

#[test]
fn the_embedded_list_matches_the_migrations_folder() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
    let on_disk: BTreeSet<(i64, String)> = std::fs::read_dir(dir)
        .expect("migrations dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".sql"))
        .map(|name| {
            let stem = name.trim_end_matches(".sql");
            let (number, rest) = stem.split_once('_').expect("NNNN_name.sql");
            (number.parse().expect("numbered"), rest.to_string())
        })
        .collect();
    let embedded: BTreeSet<(i64, String)> = MIGRATIONS
        .iter()
        .map(|m| (m.version, m.name.to_string()))
        .collect();
    assert_eq!(embedded, on_disk);
    for m in MIGRATIONS {
        let path = format!("{dir}/{:04}_{}.sql", m.version, m.name);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(text, m.sql, "{path} differs from the embedded text");
    }
}

for_each_adapter!(
    applies_every_migration_once_and_a_second_run_is_a_no_op,
    concurrent_runners_apply_each_migration_exactly_once,
    an_edited_applied_migration_is_refused_with_a_clear_error,
    later_migrations_apply_on_top_and_a_failing_one_leaves_nothing_behind,
    unordered_migration_lists_are_rejected_before_touching_the_database,
);
