//! Shared setup of the repository tests: a fresh, migrated database per test.
//!
//! The tests talk to `dyn Database` only, so the same assertions can run
//! through every adapter of the port.
#![allow(dead_code)]

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_testkit::TestDb;

/// A fresh database (not migrated) and a pool on it.
pub async fn empty_db_with(options: PgOptions) -> (TestDb, Arc<dyn Database>) {
    let test_db = TestDb::create().await;
    let db = PgDatabase::connect(test_db.url(), &options).expect("pool");
    (test_db, Arc::new(db))
}

/// A fresh, empty database.
pub async fn empty_db() -> (TestDb, Arc<dyn Database>) {
    empty_db_with(PgOptions::default()).await
}

/// A fresh database with hookbox's schema.
pub async fn migrated_db_with(options: PgOptions) -> (TestDb, Arc<dyn Database>) {
    let (test_db, db) = empty_db_with(options).await;
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    (test_db, db)
}

/// A fresh database with hookbox's schema.
pub async fn migrated_db() -> (TestDb, Arc<dyn Database>) {
    migrated_db_with(PgOptions::default()).await
}

/// A fixed instant, so tests never depend on the wall clock.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
        .single()
        .expect("valid instant")
}

/// `t0` plus seconds.
pub fn at(seconds: i64) -> DateTime<Utc> {
    t0() + chrono::Duration::seconds(seconds)
}

/// A statement built at run time (test-only SQL).
pub fn sql(text: &str) -> Statement {
    Statement::new("test.sql", Box::leak(text.to_string().into_boxed_str()))
}
