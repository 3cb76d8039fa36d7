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

// (hookbox_management: the management function's login, migration 25)
const ROLES: [&str; 4] = [
    "hookbox_ingest",
    "hookbox_processor",
    "hookbox_relay",
    "hookbox_management",
];

/// A migrated database whose function roles may log in (trust auth here;
/// in AWS migrate sets each password from the function's secret).
async fn migrated() -> (TestDb, Arc<dyn Database>) {
    let db = TestDb::create().await;
    let owner: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(db.url(), &PgOptions::default()).expect("pool"));
    migrated_in(db, owner).await
}

/// [`migrated`] for a database the test prepared first.
async fn migrated_in(db: TestDb, owner: Arc<dyn Database>) -> (TestDb, Arc<dyn Database>) {
    hookbox::migrate::migrate(owner.as_ref())
        .await
        .expect("migrate");
    for role in ROLES {
        // the tests of this file run at once against one cluster, whose
        // roles they share: PostgreSQL refuses one of two concurrent ALTER
        // ROLEs ("tuple concurrently updated"), so try again
        let params = params! { "role" => role, "password" => "a-test-password-of-some-length" };
        let mut tries = 0;
        while let Err(e) = owner.execute(&SET_PASSWORD, &params).await {
            tries += 1;
            assert!(
                tries < 20 && e.to_string().contains("tuple concurrently updated"),
                "set the role's password: {e}"
            );
        }
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
        "SELECT * FROM outbox_claim_due(now(), now(), 'w', 1, '[]'::jsonb, 1000, '{}'::jsonb)",
    ] {
        refused(&c, "hookbox_ingest", sql).await;
    }
}

async fn owner_exec(owner: &dyn Database, sql: &str) {
    owner
        .execute(
            &Statement::new("test.sql", Box::leak(sql.to_owned().into_boxed_str())),
            &params! {},
        )
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn outbox_rows(owner: &dyn Database) -> Vec<(String, String, String, String, bool)> {
    owner
        .execute(
            &Statement::new(
                "test.outbox",
                "SELECT destination, aggregate_type || '/' || aggregate_id AS aggregate, \
                 event_type, payload::text AS payload, next_attempt_at <= now() AS due \
                 FROM outbox ORDER BY destination, id",
            ),
            &params! {},
        )
        .await
        .expect("outbox rows")
        .rows
        .iter()
        .map(|r| {
            (
                r.text("destination").expect("destination").to_owned(),
                r.text("aggregate").expect("aggregate").to_owned(),
                r.text("event_type").expect("event_type").to_owned(),
                r.text("payload").expect("payload").to_owned(),
                r.bool("due").expect("due"),
            )
        })
        .collect()
}

/// Forwarding at ingest (migrations 18 and 19): ingest's one statement
/// stores the event and writes its deliveries through
/// `hookbox_ingest_store`, which derives every field of a delivery from the
/// row it stored: the payload is the body, the aggregate the partner's, the
/// destinations only those the partner's routes name, due now. That
/// function is all of the outbox ingest's role may touch: not
/// `hookbox_publish_at` (any event, aggregate, destination, blob key or due
/// time), not `hookbox_publish`, not the table.
#[tokio::test]
async fn ingest_forwards_only_the_row_it_stored_to_its_partners_routes() {
    use hookbox::config::route::Deliveries;
    use hookbox::inbox::routed::{AtIngest, Stored, insert_forwarded};

    let (db, owner) = migrated().await;
    // as the relay syncs them: demo routes to billing and audit, hr to payroll
    owner_exec(
        owner.as_ref(),
        "INSERT INTO outbox_destinations (name, routed_from, synced_at) VALUES \
         ('billing', '{demo}', now()), ('audit', '{demo}', now()), ('payroll', '{hr}', now())",
    )
    .await;
    let as_ingest = PgDatabase::connect(&url_as(db.url(), "hookbox_ingest"), &PgOptions::default())
        .expect("pool");
    let deliver = |to: &[&str]| {
        AtIngest::Deliver(Deliveries {
            destinations: to.iter().map(|d| (*d).to_owned()).collect(),
            event_type: "order.created".into(),
            aggregate_type: "partner:demo".into(),
            aggregate_id: "cus_1".into(),
        })
    };
    let mut e1 = event("e1");
    e1.ordering_key = Some("cus_1".into());
    e1.body = Body::Inline(br#"{"id":"e1","n":123456789012345678901234567890}"#.to_vec());
    let stored = insert_forwarded(
        &as_ingest,
        &e1,
        Utc::now(),
        None,
        &deliver(&["billing", "audit"]),
    )
    .await
    .expect("ingest's forwarding insert");
    assert!(
        matches!(stored, Stored::Finished { deliveries: 2, .. }),
        "{stored:?}"
    );
    let rows = outbox_rows(owner.as_ref()).await;
    let payload = r#"{"n": 123456789012345678901234567890, "id": "e1"}"#.to_owned();
    let expected = |to: &str| {
        (
            to.to_owned(),
            "partner:demo/cus_1".to_owned(),
            "order.created".to_owned(),
            payload.clone(),
            true,
        )
    };
    assert_eq!(rows, vec![expected("audit"), expected("billing")]);

    // the same row again: a duplicate writes nothing
    let again = insert_forwarded(&as_ingest, &e1, Utc::now(), None, &deliver(&["billing"]))
        .await
        .expect("duplicate");
    assert!(matches!(again, Stored::Duplicate(_)), "{again:?}");
    // a destination no route of demo names: the row is stored pending for
    // the processor (which forwards by the configuration), nothing written
    let forged = insert_forwarded(
        &as_ingest,
        &event("e2"),
        Utc::now(),
        None,
        &deliver(&["billing", "payroll"]),
    )
    .await
    .expect("stored");
    match &forged {
        Stored::Waiting {
            refusal: Some(why), ..
        } => assert!(
            why.contains("payroll") && why.contains("demo"),
            "names the destination and partner: {why}"
        ),
        other => panic!("expected a pending row with a refusal: {other:?}"),
    }
    // a due time far ahead cannot hold an ordered aggregate up: due now
    let late = insert_forwarded(
        &as_ingest,
        &event("e3"),
        Utc::now() + chrono::Duration::days(365 * 100),
        None,
        &deliver(&["billing"]),
    )
    .await
    .expect("stored");
    assert!(
        matches!(late, Stored::Finished { deliveries: 1, .. }),
        "{late:?}"
    );
    let rows = outbox_rows(owner.as_ref()).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|r| r.4), "every delivery due now: {rows:?}");

    let c = connect_as(&db, "hookbox_ingest").await;
    for sql in [
        "SELECT hookbox_publish_at('order.paid', '{}'::jsonb, 'order', 'o-1', 'billing', \
         'infinity', NULL::text, NULL::bigint, NULL::bytea)",
        "SELECT hookbox_publish('order.paid', '{}'::jsonb, 'order', 'o-1')",
        "SELECT * FROM hookbox_publish_refusal('a', '{}'::jsonb, 'b', 'c', NULL, NULL, NULL)",
        "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination, payload, \
         status, next_attempt_at, created_at) VALUES (gen_random_uuid(), 'a', 'b', 'c', 'd', \
         '{}', 'pending', now(), now())",
        "UPDATE outbox SET attempts = 0",
        "DELETE FROM outbox",
        "SELECT * FROM outbox_destinations",
        "UPDATE outbox_destinations SET routed_from = '{demo}'",
    ] {
        refused(&c, "hookbox_ingest", sql).await;
    }
}

/// No overload hijack on any supported PostgreSQL. 13 and 14 let every
/// role CREATE in schema public: the migrations revoke that where they own
/// the schema, and every call inside a SECURITY DEFINER function (and
/// ingest's statement) names its function's schema and types every
/// argument, so even a role that may still create there (a database whose
/// schema the migrations do not own) cannot plant a better match.
#[tokio::test]
async fn a_planted_overload_is_never_called() {
    use hookbox::config::route::Deliveries;
    use hookbox::inbox::routed::{AtIngest, Stored, insert_forwarded};

    let db = TestDb::create().await;
    let owner: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(db.url(), &PgOptions::default()).expect("pool"));
    // as PostgreSQL 13 and 14 ship
    owner_exec(owner.as_ref(), "GRANT CREATE ON SCHEMA public TO PUBLIC").await;
    let (db, owner) = migrated_in(db, owner).await;
    let granted = owner
        .execute(
            &Statement::new(
                "test.privilege",
                "SELECT has_schema_privilege('hookbox_ingest', 'public', 'CREATE') AS may",
            ),
            &params! {},
        )
        .await
        .expect("privilege")
        .rows[0]
        .bool("may")
        .expect("may");
    assert!(
        !granted,
        "the migrations revoke CREATE on public from PUBLIC"
    );

    // an intruder that may create there all the same
    owner_exec(
        owner.as_ref(),
        "DO $$ BEGIN CREATE ROLE hookbox_test_intruder LOGIN; \
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
    )
    .await;
    owner_exec(
        owner.as_ref(),
        "GRANT CREATE ON SCHEMA public TO hookbox_test_intruder",
    )
    .await;
    let intruder = connect_as(&db, "hookbox_test_intruder").await;
    // better matches for untyped NULLs (text is the preferred type of
    // unknown literals), each one failing loudly if it is ever called
    for signature in [
        "hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, text, text) \
         RETURNS SETOF uuid",
        "hookbox_publish_refusal(text, jsonb, text, text, text, text, text, \
         OUT refusal_code text, OUT refusal text, OUT payload_size bigint)",
        "hookbox_ingest_store(uuid, text, text, boolean, text, text, bytea, bytea, jsonb, \
         boolean, timestamptz, text, text, text) \
         RETURNS TABLE (stored_id uuid, inserted boolean, stored_status text, \
         deliveries bigint, refusal text)",
    ] {
        intruder
            .batch_execute(&format!(
                "CREATE FUNCTION public.{signature} LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'hijacked'; END $$"
            ))
            .await
            .unwrap_or_else(|e| panic!("the intruder plants {signature}: {e}"));
    }

    // a publisher (the processor's role publishes)
    let publisher = connect_as(&db, "hookbox_processor").await;
    publisher
        .batch_execute(
            "SELECT hookbox_publish('order.paid', '{\"id\": 1}'::jsonb, 'order', 'o-1', 'billing')",
        )
        .await
        .expect("hookbox_publish calls the real hookbox_publish_at");
    // ingest's one statement
    owner_exec(
        owner.as_ref(),
        "INSERT INTO outbox_destinations (name, routed_from, synced_at) \
         VALUES ('billing', '{demo}', now())",
    )
    .await;
    let as_ingest = PgDatabase::connect(&url_as(db.url(), "hookbox_ingest"), &PgOptions::default())
        .expect("pool");
    let forward = AtIngest::Deliver(Deliveries {
        destinations: vec!["billing".into()],
        event_type: "order.created".into(),
        aggregate_type: "partner:demo".into(),
        aggregate_id: "e1".into(),
    });
    let stored = insert_forwarded(&as_ingest, &event("e1"), Utc::now(), None, &forward)
        .await
        .expect("ingest's statement calls the real function");
    assert!(
        matches!(stored, Stored::Finished { deliveries: 1, .. }),
        "{stored:?}"
    );
    assert_eq!(outbox_rows(owner.as_ref()).await.len(), 2);
}

/// PostgreSQL's advice for SECURITY DEFINER functions: a search_path with
/// pg_temp last. Without it, pg_temp is searched first and a caller's
/// temporary table named `outbox` takes the rows meant for the real one.
#[tokio::test]
async fn security_definer_functions_search_pg_temp_last() {
    let (db, _owner) = migrated().await;
    let c = connect_as(&db, "hookbox_processor").await;
    let definers = c
        .query(
            "SELECT p.proname::text AS name, array_to_string(p.proconfig, ';') AS config
               FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
              WHERE p.prosecdef AND n.nspname = 'public'",
            &[],
        )
        .await
        .expect("functions");
    assert!(
        definers.len() >= 2,
        "hookbox_publish and hookbox_publish_at"
    );
    for row in &definers {
        let name: String = row.get("name");
        let config: Option<String> = row.get("config");
        let config = config.unwrap_or_default();
        assert!(
            config.contains("search_path=") && config.trim_end().ends_with("pg_temp"),
            "{name}: {config:?}"
        );
    }
    c.batch_execute(
        "CREATE TEMP TABLE outbox (LIKE public.outbox INCLUDING DEFAULTS);
         SELECT hookbox_publish('order.paid', '{}'::jsonb, 'order', 'o-1', 'billing');",
    )
    .await
    .expect("publish beside a temporary table named outbox");
    let real = c
        .query_one("SELECT count(*) AS n FROM public.outbox", &[])
        .await
        .expect("count")
        .get::<_, i64>("n");
    assert_eq!(real, 1, "the row went to the real outbox");
    let shadow = c
        .query_one("SELECT count(*) AS n FROM pg_temp.outbox", &[])
        .await
        .expect("count")
        .get::<_, i64>("n");
    assert_eq!(shadow, 0, "not to the caller's temporary table");
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
        "SELECT * FROM outbox_claim_due(now(), now(), 'w', 1, '[]'::jsonb, 1000, '{}'::jsonb)",
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
            destination_caps: &[],
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
        hookbox::outbox::purge_finished(&as_relay, now, None, 10, mode)
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

/// The processor's role is enough for its real work: batches of stored,
/// spooled (the database was down at ingest), large-bodied (blob store),
/// deferred and unreadable messages, with the example domain writing its
/// tables and the outbox, all connected as `hookbox_processor`.
#[tokio::test]
async fn the_processor_role_runs_real_batches() {
    use hookbox::blob::memory::MemoryBlobStore;
    use hookbox::clock::ManualClock;
    use hookbox::example::OrdersHandler;
    use hookbox::inbox::InboxMessage;
    use hookbox::processing::{MessageOutcome, Processor, ProcessorConfig};
    use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
    use hookbox::queue::{Queue, QueueConsumer};

    let (db, owner) = migrated().await;
    let as_ingest = PgDatabase::connect(&url_as(db.url(), "hookbox_ingest"), &PgOptions::default())
        .expect("pool");
    let as_processor = PgDatabase::connect(
        &url_as(db.url(), "hookbox_processor"),
        &PgOptions::default(),
    )
    .expect("pool");
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
    let blobs = MemoryBlobStore::new();
    let order = |event_type: &str, pad: usize| {
        serde_json::to_vec(&serde_json::json!({
            "type": event_type, "order_id": "o-1", "amount_cents": 100, "pad": "x".repeat(pad),
        }))
        .expect("json")
    };
    let stored = |id: &str, event_type: &str, body: Body| NewInboxEvent {
        event_type: Some(event_type.into()),
        body,
        ..event(id)
    };
    // shipped first (deferred), paid with a 50 KB body (blob store), as ingest stores them
    let big =
        hookbox::inbox::body::store(&blobs, "demo", order("payment.received", 50_000), 32_768)
            .await
            .expect("the body in the blob store");
    for (id, event_type, body) in [
        (
            "ship",
            "order.shipped",
            Body::Inline(order("order.shipped", 0)),
        ),
        ("paid", "payment.received", big),
    ] {
        let row =
            hookbox::inbox::insert_if_new(&as_ingest, &stored(id, event_type, body), Utc::now())
                .await
                .expect("ingest's insert");
        queue
            .send(
                &InboxMessage::stored(row.id(), "demo", id)
                    .to_body()
                    .expect("body"),
            )
            .await
            .expect("send");
    }
    // a spooled event, and a message nobody can read
    let spooled = stored(
        "delivered",
        "order.delivered",
        Body::Inline(order("order.delivered", 0)),
    );
    queue
        .send(
            &InboxMessage::spooled(&spooled, Utc::now())
                .to_body()
                .expect("body"),
        )
        .await
        .expect("send");
    queue.send("{not json").await.expect("send");

    let handler = OrdersHandler::new("erp");
    let config = ProcessorConfig::default();
    let processor = Processor {
        db: &as_processor,
        queue: &queue,
        blobs: &blobs,
        clock: clock.as_ref(),
        handler: &handler,
        config: &config,
    };
    let mut kinds = Vec::new();
    for _ in 0..6 {
        let got = queue.receive(10).await.expect("receive");
        if got.is_empty() {
            clock.advance(chrono::Duration::seconds(900));
            continue;
        }
        let report = processor.process_batch(&got, None).await;
        for r in &report.results {
            assert!(
                !matches!(
                    r.outcome,
                    MessageOutcome::Retried { .. } | MessageOutcome::Requeued { .. }
                ),
                "a statement the processor's role may not run? {:?}",
                r.outcome
            );
            kinds.push(r.outcome.kind());
        }
        let retry = report.retry_message_ids();
        for m in &got {
            if !retry.contains(&m.message_id) {
                queue.delete(&m.receipt_handle).await.expect("delete");
            }
        }
    }
    let status = hookbox::store::fetch_one(
        owner.as_ref(),
        &Statement::new(
            "test.order",
            "SELECT status, (SELECT count(*) FROM outbox) AS outbox,
                    (SELECT count(*) FROM inbox WHERE status = 'quarantined') AS quarantined
               FROM example_orders WHERE order_id = 'o-1'",
        ),
        &params! {},
    )
    .await
    .expect("the order");
    assert_eq!(
        status.text("status").expect("status"),
        "delivered",
        "{kinds:?}"
    );
    assert_eq!(status.i64("outbox").expect("outbox"), 3, "{kinds:?}");
    assert_eq!(
        status.i64("quarantined").expect("quarantined"),
        1,
        "{kinds:?}"
    );
}
