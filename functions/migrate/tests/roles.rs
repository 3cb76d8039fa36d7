//! Least privilege inside the database (shared/migrations/0009), against
//! real PostgreSQL: after the migrations each function's role can run the
//! statements of its own use case (the library's own code, connected as
//! that role) and is refused everything else: other tables, writes it has
//! no business making, the schema, the migrations' record, the password
//! function.

use std::sync::Arc;

use chrono::Utc;
use hookbox::inbox::{Body, NewInboxEvent, Retention};
use hookbox::params;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};

const SET_PASSWORD: Statement = Statement::new(
    "test.set_role_password",
    "SELECT hookbox_set_role_password(:role, :password)",
);
use hookbox_testkit::TestDb;

const ROLES: [&str; 3] = ["hookbox_ingest", "hookbox_processor", "hookbox_relay"];

/// A migrated database whose function roles may log in (trust auth here;
/// in AWS migrate sets each password from the function's secret).
async fn migrated() -> (TestDb, Arc<dyn Database>) {
    let db = TestDb::create().await;
    let owner: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(owner.as_ref())
        .await
        .expect("migrate");
    for role in ROLES {
        owner
            .execute(
                &SET_PASSWORD,
                &params! { "role" => role, "password" => "a-test-password-of-some-length" },
            )
            .await
            .expect("set the role's password");
    }
    (db, owner)
}

/// `postgres://user@host:port/db` with another user.
fn url_as(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    format!("{scheme}://{role}@{rest}")
}

async fn connect_as(db: &TestDb, role: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&url_as(db.url(), role), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("{role} logs in: {e}"));
    tokio::spawn(conn);
    client
}

async fn refused(client: &tokio_postgres::Client, role: &str, sql: &str) {
    let err = client
        .batch_execute(sql)
        .await
        .expect_err(&format!("{role} must be refused: {sql}"));
    let code = err.code().map(|c| c.code().to_string());
    assert_eq!(
        code.as_deref(),
        Some("42501"),
        "{role}: {sql}: expected insufficient_privilege, got {err:?}"
    );
}

fn event(id: &str) -> NewInboxEvent {
    NewInboxEvent {
        partner: "demo".into(),
        event_id: id.into(),
        event_id_derived: false,
        event_type: Some("order.created".into()),
        ordering_key: None,
        body: Body::Inline(b"{}".to_vec()),
        headers: serde_json::json!({}),
        signature_verified: true,
    }
}

#[tokio::test]
async fn ingest_may_insert_and_read_the_inbox_and_nothing_else() {
    let (db, _owner) = migrated().await;
    let as_ingest = PgDatabase::connect(&url_as(db.url(), "hookbox_ingest"), &PgOptions::default())
        .expect("pool");
    let first = hookbox::inbox::insert_if_new(&as_ingest, &event("e1"), Utc::now())
        .await
        .expect("ingest's insert-if-new");
    let again = hookbox::inbox::insert_if_new(&as_ingest, &event("e1"), Utc::now())
        .await
        .expect("ingest's insert-if-new, duplicate");
    assert_eq!(first.id(), again.id());
    let c = connect_as(&db, "hookbox_ingest").await;
    for sql in [
        "UPDATE inbox SET attempts = attempts + 1",
        "DELETE FROM inbox",
        "SELECT * FROM outbox",
        "SELECT * FROM example_orders",
        "SELECT * FROM inbox_archive",
        "SELECT * FROM schema_migrations",
        "CREATE TABLE ingest_was_here (x int)",
        "DROP TABLE inbox",
        "SELECT hookbox_set_role_password('hookbox_ingest', 'another-password-of-length')",
        "SELECT * FROM outbox_claim_due(now(), now(), 'w', 1, '[]'::jsonb, 1000)",
    ] {
        refused(&c, "hookbox_ingest", sql).await;
    }
}

#[tokio::test]
async fn the_processor_may_not_deliver_purge_or_change_the_schema() {
    let (db, _owner) = migrated().await;
    let c = connect_as(&db, "hookbox_processor").await;
    // what it does: inbox rows, outbox rows, the business tables
    c.batch_execute(
        "SELECT count(*) FROM inbox; SELECT count(*) FROM outbox; \
         SELECT count(*) FROM example_orders; SELECT count(*) FROM example_order_transitions",
    )
    .await
    .expect("the processor reads its tables");
    for sql in [
        "DELETE FROM inbox",
        "UPDATE outbox SET attempts = 0",
        "DELETE FROM outbox",
        "SELECT * FROM outbox_archive",
        "SELECT * FROM blob_deletions",
        "SELECT * FROM schema_migrations",
        "CREATE TABLE processor_was_here (x int)",
        "ALTER TABLE inbox ADD COLUMN x int",
        "SELECT * FROM outbox_claim_due(now(), now(), 'w', 1, '[]'::jsonb, 1000)",
        "SELECT hookbox_set_role_password('hookbox_ingest', 'another-password-of-length')",
    ] {
        refused(&c, "hookbox_processor", sql).await;
    }
}

#[tokio::test]
async fn the_relay_claims_sweeps_and_purges_but_never_touches_business_tables() {
    let (db, owner) = migrated().await;
    hookbox::inbox::insert_if_new(owner.as_ref(), &event("stranded"), Utc::now())
        .await
        .expect("a row to sweep");
    let as_relay = PgDatabase::connect(&url_as(db.url(), "hookbox_relay"), &PgOptions::default())
        .expect("pool");
    let now = Utc::now();
    hookbox::outbox::claim_due(
        &as_relay,
        hookbox::outbox::ClaimRequest {
            worker: "relay-test",
            now,
            lease_until: now + chrono::Duration::seconds(30),
            limit: 10,
            ordered_destinations: &[],
        },
    )
    .await
    .expect("the relay's claim");
    let swept = hookbox::inbox::sweep_stranded(
        &as_relay,
        now + chrono::Duration::hours(1),
        chrono::Duration::seconds(1),
        10,
    )
    .await
    .expect("the relay's sweep");
    assert_eq!(swept.len(), 1);
    for mode in [Retention::Archive, Retention::Delete] {
        hookbox::inbox::purge_finished(&as_relay, now, 10, mode)
            .await
            .expect("inbox retention");
        hookbox::outbox::purge_finished(&as_relay, now, 10, mode)
            .await
            .expect("outbox retention");
    }
    let c = connect_as(&db, "hookbox_relay").await;
    // the archives' own retention
    c.batch_execute(
        "DELETE FROM inbox_archive WHERE received_at < now() - interval '1 year'; \
         DELETE FROM outbox_archive WHERE created_at < now() - interval '1 year'",
    )
    .await
    .expect("the relay deletes old archived rows");
    for sql in [
        "INSERT INTO inbox (partner, event_id) VALUES ('x', 'y')",
        "INSERT INTO outbox (aggregate_type) VALUES ('x')",
        "SELECT * FROM example_orders",
        "UPDATE example_orders SET status = status",
        "SELECT * FROM schema_migrations",
        "CREATE TABLE relay_was_here (x int)",
        "TRUNCATE outbox",
        "SELECT hookbox_set_role_password('hookbox_relay', 'another-password-of-length')",
    ] {
        refused(&c, "hookbox_relay", sql).await;
    }
}

#[tokio::test]
async fn only_function_roles_get_passwords_and_the_password_stays_out_of_the_statement() {
    let (_db, owner) = migrated().await;
    let err = owner
        .execute(
            &SET_PASSWORD,
            &params! { "role" => "postgres", "password" => "a-test-password-of-some-length" },
        )
        .await
        .expect_err("not a function role");
    assert!(
        err.to_string().contains("not a hookbox function role"),
        "{err}"
    );
    let err = owner
        .execute(
            &SET_PASSWORD,
            &params! { "role" => "hookbox_relay", "password" => "short" },
        )
        .await
        .expect_err("too short");
    assert!(
        !err.to_string().contains("short'"),
        "the password is not echoed: {err}"
    );
}
