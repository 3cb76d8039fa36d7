//! The generic plans of the hot inbox statements.
//!
//! A pooled direct connection runs each statement prepared: after five
//! executions PostgreSQL keeps one generic plan for it (parameters
//! unknown), made with the table's size and statistics of that moment and
//! planned again only when the statistics change (an ANALYZE), not when
//! the table grows. These tests make that plan at once (`plan_cache_mode =
//! force_generic_plan`, `PREPARE`), then judge what `EXECUTE` does with it.
//! Through the Data API every statement runs unprepared (planned for its
//! parameters, every time), so only the SQL is judged there, the same way.

mod common;

use common::{Adapter, function_settings, inbox_scans, load_history, migrated_db, sql};
use hookbox::store::{Executor, NamedSql, Statement};
use hookbox::{inbox, outbox};
use uuid::Uuid;

/// A transaction whose prepared statements get their generic plan at once
/// (what a connection's plan cache holds after five executions).
async fn generic_plans_tx(
    db: &dyn hookbox::store::Database,
) -> Box<dyn hookbox::store::Transaction> {
    let tx = db.begin().await.expect("begin");
    tx.execute(
        &sql("SET LOCAL plan_cache_mode = force_generic_plan"),
        &hookbox::params! {},
    )
    .await
    .expect("generic plans");
    tx
}

/// The statement prepared under `name` as the PostgreSQL adapter prepares
/// it (`:name` → `$n`), with its parameters' names in `$n` order.
async fn prepare(tx: &dyn Executor, name: &str, statement: &Statement) -> Vec<String> {
    let named = NamedSql::parse(statement.sql).expect("named SQL");
    assert!(!named.sql.contains("$prepared$"), "{}", named.sql);
    // the port refuses `$n` in a statement's text; inside a dollar-quoted
    // string it is only text, which PL/pgSQL then runs
    tx.execute(
        &sql(&format!(
            "DO $do$ BEGIN EXECUTE $prepared$PREPARE {name} AS {}$prepared$; END $do$",
            named.sql
        )),
        &hookbox::params! {},
    )
    .await
    .unwrap_or_else(|e| panic!("PREPARE {}: {e}", statement.name));
    named.names
}

/// `EXPLAIN ANALYZE` of `EXECUTE name(args)`, the arguments as
/// SQL literals in `$n` order; the plan's lines.
async fn explain_execute(tx: &dyn Executor, name: &str, args: &[String]) -> Vec<String> {
    tx.execute(
        &sql(&format!(
            "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) EXECUTE {name}({})",
            args.join(", ")
        )),
        &hookbox::params! {},
    )
    .await
    .unwrap_or_else(|e| panic!("EXPLAIN EXECUTE {name}: {e}"))
    .rows
    .iter()
    .map(|r| r.text("QUERY PLAN").expect("plan line"))
    .collect()
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn id(n: u32) -> Uuid {
    Uuid::from_u128(u128::from(n))
}

/// The claim's plan, made while the inbox held 30 rows, still finds a batch
/// by primary key after 30,000 more rows arrived: a sequential scan (what
/// the planner prefers for a small table) would read every page of them.
async fn the_claims_generic_plan_made_on_a_small_inbox_stays_a_key_lookup(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    db.execute(
        &sql(
            "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                                received_at, next_attempt_at)
             SELECT CAST(lpad(to_hex(g), 32, '0') AS uuid), 'acme', 'e-' || g,
                    convert_to('{}', 'UTF8'), true, 'pending', now(), now()
               FROM generate_series(1, 30) AS g",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("small inbox");
    db.execute(&sql("ANALYZE inbox"), &hookbox::params! {})
        .await
        .expect("analyze");

    let tx = generic_plans_tx(db.as_ref()).await;
    let t = tx.as_ref();
    let names = prepare(t, "generic_claim", &inbox::repo::CLAIM).await;
    let args = |ids: &[Uuid]| -> Vec<String> {
        let ids = serde_json::Value::from(ids.iter().map(Uuid::to_string).collect::<Vec<_>>());
        names
            .iter()
            .map(|n| match n.as_str() {
                "ids" => literal(&ids.to_string()),
                "now" => literal("2026-06-01T00:00:00Z"),
                "lease_until" => literal("2026-06-01T00:02:00Z"),
                "claimer" => literal(&Uuid::nil().to_string()),
                other => panic!("unexpected parameter {other}"),
            })
            .collect()
    };
    // the first execution makes the generic plan, on 30 rows
    let first = explain_execute(t, "generic_claim", &args(&[id(1), id(2)])).await;
    assert_eq!(
        first
            .iter()
            .filter(|l| l.contains("Seq Scan on inbox"))
            .count(),
        0,
        "{}",
        first.join("\n")
    );
    t.execute(
        &sql(
            "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                                received_at, processed_at, attempts)
             SELECT gen_random_uuid(), 'acme', 'old-' || g, convert_to('{}', 'UTF8'), true,
                    'processed', now(), now(), 1
               FROM generate_series(1, 30000) AS g",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("history");
    let ids: Vec<Uuid> = (11..21).map(id).collect();
    let before = inbox_scans(t).await;
    let plan = explain_execute(t, "generic_claim", &args(&ids)).await;
    let after = inbox_scans(t).await;
    let text = plan.join("\n");
    assert!(!text.contains("Seq Scan on inbox"), "{text}");
    assert!(text.contains("actual rows=10 "), "one row per id: {text}");
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (0, 0),
        "(sequential, active-index) scans of the inbox by the claim of 10 rows among \
         30,030:\n{text}"
    );
    t.execute(&sql("DEALLOCATE generic_claim"), &hookbox::params! {})
        .await
        .expect("deallocate");
    tx.rollback().await.expect("rollback");
}

/// insert-if-new: the generic plan of a new webhook reads no inbox index
/// beyond the insert's own, and a duplicate is one probe of the unique key
/// (an OR of the two keys was a BitmapOr over both indexes, every time).
async fn the_generic_plan_of_insert_if_new_probes_one_key(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    load_history(db.as_ref()).await;
    let tx = generic_plans_tx(db.as_ref()).await;
    let t = tx.as_ref();
    let names = prepare(t, "generic_insert", &inbox::repo::INSERT_IF_NEW).await;
    let args = |event_id: &str| -> Vec<String> {
        names
            .iter()
            .map(|n| match n.as_str() {
                "id" => literal(&Uuid::now_v7().to_string()),
                "partner" => literal("acme"),
                "event_id" => literal(event_id),
                "event_id_derived" | "signature_verified" => "true".into(),
                "body" => literal("\\x7b7d"),
                "headers" => literal("{}"),
                "now" => literal("2026-06-01T00:00:00Z"),
                _ => "NULL".into(),
            })
            .collect()
    };
    let new = explain_execute(t, "generic_insert", &args("brand-new")).await;
    let text = new.join("\n");
    assert!(!text.contains("Seq Scan on inbox"), "{text}");
    let lookups: Vec<&String> = new
        .iter()
        .filter(|l| l.contains("Scan using inbox_partner") || l.contains("Scan on inbox"))
        .collect();
    assert!(!lookups.is_empty(), "{text}");
    assert!(
        lookups.iter().all(|l| l.contains("(never executed)")),
        "a new webhook looked for a duplicate:\n{text}"
    );

    let duplicate = explain_execute(t, "generic_insert", &args("old-7")).await;
    let text = duplicate.join("\n");
    assert!(
        text.contains("Index Scan using inbox_partner_event_id_key"),
        "{text}"
    );
    assert!(!text.contains("BitmapOr"), "{text}");
    assert!(!text.contains("Seq Scan on inbox"), "{text}");
    t.execute(&sql("DEALLOCATE generic_insert"), &hookbox::params! {})
        .await
        .expect("deallocate");
    tx.rollback().await.expect("rollback");
}

/// Forwarding at ingest under generic plans: a new webhook with an
/// ordering key asks the active rows of its key (the partial index of
/// migration 18), never the table; a duplicate scans no table and forwards
/// nothing.
async fn the_generic_plan_of_the_forwarding_insert_asks_only_active_rows(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    load_history(db.as_ref()).await;
    let tx = generic_plans_tx(db.as_ref()).await;
    let t = tx.as_ref();
    let names = prepare(t, "generic_forward", &inbox::routed::INSERT_FORWARDED).await;
    let args = |event_id: &str| -> Vec<String> {
        names
            .iter()
            .map(|n| match n.as_str() {
                "id" => literal(&Uuid::now_v7().to_string()),
                "partner" => literal("acme"),
                "event_id" => literal(event_id),
                "event_id_derived" | "signature_verified" => "true".into(),
                "body" => literal("\\x7b7d"),
                "headers" | "payload" => literal("{}"),
                "now" => literal("2026-06-01T00:00:00Z"),
                "ordering_key" | "aggregate_id" => literal("k-1"),
                "status" => literal("processed"),
                "destinations" => literal("[\"billing\"]"),
                "out_event_type" => literal("order.paid"),
                "aggregate_type" => literal("partner:acme"),
                _ => "NULL".into(),
            })
            .collect()
    };
    // the statement is one call of hookbox_ingest_store (migration 19):
    // its own statements' plans are not in the call's EXPLAIN, so what they
    // scan is read from the transaction's statistics
    t.execute(
        &sql(
            "INSERT INTO outbox_destinations (name, routed_from, synced_at)
             VALUES ('billing', '{acme}', now())",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("acme's route, as synced");
    let active = "inbox_active_ordering_key";
    let (seq_before, active_before) = (seq_scans(t, "inbox").await, index_scans(t, active).await);
    explain_execute(t, "generic_forward", &args("brand-new")).await;
    assert_eq!(
        seq_scans(t, "inbox").await,
        seq_before,
        "no scan of the inbox table"
    );
    assert_eq!(
        index_scans(t, active).await,
        active_before + 1,
        "the earlier-event question asks the active rows of the key"
    );
    let seq_before = seq_scans(t, "inbox").await;
    explain_execute(t, "generic_forward", &args("old-7")).await;
    assert_eq!(
        seq_scans(t, "inbox").await,
        seq_before,
        "a duplicate scans no table"
    );
    assert_eq!(
        common::count(
            t,
            "SELECT count(*) AS n FROM outbox WHERE aggregate_id = 'k-1'"
        )
        .await,
        1,
        "one delivery, for the new webhook only"
    );
    t.execute(&sql("DEALLOCATE generic_forward"), &hookbox::params! {})
        .await
        .expect("deallocate");
    tx.rollback().await.expect("rollback");
}

/// Scans of index `index` so far in the current transaction of `tx`.
async fn index_scans(tx: &dyn Executor, index: &str) -> i64 {
    tx.execute(
        &sql(&format!(
            "SELECT pg_stat_get_xact_numscans('{index}'::regclass) AS n"
        )),
        &hookbox::params! {},
    )
    .await
    .expect("index scans")
    .rows[0]
        .i64("n")
        .expect("n")
}

/// Sequential scans of `table` so far in the current transaction of `tx`.
async fn seq_scans(tx: &dyn Executor, table: &str) -> i64 {
    tx.execute(
        &sql(&format!(
            "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = '{table}'"
        )),
        &hookbox::params! {},
    )
    .await
    .expect("seq_scan")
    .rows[0]
        .i64("seq_scan")
        .expect("seq_scan")
}

/// The relay's claim (a function with a pinned generic plan) planned on an
/// empty outbox, as a fresh deployment's first claim is, then run on 30,000
/// rows: it walks its indexes instead of scanning the table.
async fn the_relays_claim_planned_on_an_empty_outbox_scans_no_table(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let tx = db.begin().await.expect("begin");
    let t = tx.as_ref();
    let claim = |at: &str| {
        let at = chrono::DateTime::parse_from_rfc3339(at)
            .expect("time")
            .to_utc();
        hookbox::params! {
            "now" => at, "lease_until" => at + chrono::Duration::seconds(30), "worker" => "w",
            "limit" => 100_i64, "ordered" => serde_json::json!(["erp"]),
            "caps" => serde_json::json!({}), "budget" => outbox::repo::CLAIM_BUDGET_BYTES,
        }
    };
    let first = t
        .execute(&outbox::repo::CLAIM_DUE, &claim("2026-06-01T00:00:00Z"))
        .await
        .expect("first claim");
    assert!(first.rows.is_empty());
    t.execute(
        &sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at, processed_at)
             SELECT gen_random_uuid(), 'order', 'o-' || g, 'order.paid', 'erp', '{}',
                    CASE WHEN g > 29990 THEN 'pending' ELSE 'delivered' END,
                    timestamptz '2026-05-01', timestamptz '2026-05-01',
                    CASE WHEN g > 29990 THEN NULL ELSE timestamptz '2026-05-01' END
               FROM generate_series(1, 30000) AS g",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("outbox rows");
    let before = seq_scans(t, "outbox").await;
    let claimed = t
        .execute(&outbox::repo::CLAIM_DUE, &claim("2026-06-01T00:01:00Z"))
        .await
        .expect("claim");
    let after = seq_scans(t, "outbox").await;
    assert_eq!(claimed.rows.len(), 10, "the pending rows");
    assert_eq!(
        after - before,
        0,
        "sequential scans of the outbox by one claim"
    );
    tx.rollback().await.expect("rollback");
}

/// The claim function's pinned settings (migration 14).
async fn the_inbox_claim_pins_its_plan(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let settings = function_settings(db.as_ref(), "inbox_claim").await;
    assert_eq!(
        settings,
        ["enable_seqscan=off", "plan_cache_mode=force_generic_plan"]
    );
}

for_each_adapter!(
    the_claims_generic_plan_made_on_a_small_inbox_stays_a_key_lookup,
    the_generic_plan_of_insert_if_new_probes_one_key,
    the_generic_plan_of_the_forwarding_insert_asks_only_active_rows,
    the_inbox_claim_pins_its_plan,
    the_relays_claim_planned_on_an_empty_outbox_scans_no_table,
);
