//! The hot queries use the partial indexes on active statuses, so they stay
//! O(active rows) however much history the tables hold.
//!
//! Each test loads 20,000 finished rows and a handful of active ones,
//! ANALYZEs, and asserts on the plan PostgreSQL chooses for the repository's
//! own SQL text with real parameter values.

mod common;

use common::{Adapter, at, load_history, migrated_db, sql};
use hookbox::store::{Executor, Params, Statement};
use hookbox::{inbox, outbox, params};
use uuid::Uuid;

async fn plan(db: &dyn Executor, statement: &Statement, params: &Params) -> String {
    let explain = sql(&format!("EXPLAIN {}", statement.sql));
    db.execute(&explain, params)
        .await
        .unwrap_or_else(|e| panic!("EXPLAIN {}: {e}", statement.name))
        .rows
        .iter()
        .map(|r| r.text("QUERY PLAN").expect("plan line"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_uses(plan: &str, index: &str, table: &str) {
    assert!(plan.contains(index), "expected {index} in:\n{plan}");
    assert!(
        !plan.contains(&format!("Seq Scan on {table}")),
        "unexpected sequential scan of {table}:\n{plan}"
    );
}

async fn hot_queries_use_the_partial_indexes(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await;

    let sweep = plan(
        d,
        &inbox::repo::SWEEP_STRANDED,
        &params! { "now" => at(3600), "cutoff" => at(3300), "limit" => 100_i64 },
    )
    .await;
    assert_uses(&sweep, "inbox_active_due", "inbox");

    let oldest = plan(d, &inbox::repo::OLDEST_ACTIVE, &params! {}).await;
    assert_uses(&oldest, "inbox_active_received", "inbox");

    let due = plan(
        d,
        &outbox::repo::CLAIM_DUE,
        &params! {
            "now" => at(60), "lease_until" => at(90), "worker" => "r", "limit" => 100_i64,
            "ordered" => serde_json::json!([]),
        },
    )
    .await;
    assert_uses(&due, "outbox_pending_due", "outbox");

    // an ordered destination asks for older undelivered rows of each aggregate
    let ordered = plan(
        d,
        &outbox::repo::CLAIM_DUE,
        &params! {
            "now" => at(60), "lease_until" => at(90), "worker" => "r", "limit" => 100_i64,
            "ordered" => serde_json::json!(["erp"]),
        },
    )
    .await;
    assert_uses(&ordered, "outbox_pending_due", "outbox");
    assert_uses(&ordered, "outbox_undelivered_aggregate", "outbox");

    let summary = plan(d, &outbox::repo::PENDING_SUMMARY, &params! {}).await;
    assert!(
        !summary.contains("Seq Scan on outbox"),
        "pending summary scans the table:\n{summary}"
    );

    let lag = plan(d, &outbox::repo::OLDEST_PENDING, &params! {}).await;
    assert_uses(&lag, "outbox_pending_created", "outbox");

    // claiming by id goes through the primary key, whatever the history
    let ids = serde_json::json!([Uuid::now_v7().to_string(), Uuid::now_v7().to_string()]);
    let claim = plan(
        d,
        &inbox::repo::CLAIM,
        &params! { "ids" => ids, "now" => at(0), "lease_until" => at(30) },
    )
    .await;
    // (the status of rows we could not claim is looked up by key too)
    assert_uses(&claim, "inbox_pkey", "inbox");
}

/// With a large backlog of active rows (and statistics not yet updated),
/// claiming a batch by id still goes through the primary key.
async fn claim_by_id_uses_the_primary_key_with_a_large_backlog(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    d.execute(
        &sql(
            "INSERT INTO inbox (id, partner, event_id, body, signature_verified, status,
                                received_at, next_attempt_at)
             SELECT gen_random_uuid(), 'acme', 'backlog-' || g, convert_to('{}', 'UTF8'), true,
                    'pending', timestamptz '2026-06-01', timestamptz '2026-06-01'
               FROM generate_series(1, 20000) AS g",
        ),
        &params! {},
    )
    .await
    .expect("backlog");
    let ids = serde_json::json!([Uuid::now_v7().to_string(), Uuid::now_v7().to_string()]);
    let claim = plan(
        d,
        &inbox::repo::CLAIM,
        &params! { "ids" => ids, "now" => at(0), "lease_until" => at(30) },
    )
    .await;
    assert!(claim.contains("inbox_pkey"), "{claim}");
    assert!(
        !claim.contains("inbox_active"),
        "no scan of the active rows: {claim}"
    );
    assert!(!claim.contains("Seq Scan on inbox"), "{claim}");
}

/// With a large due backlog, the relay's claim and result statements reach
/// the rows by primary key (not a hash join over the whole table, which the
/// planner picks for a few hundred rows when the UPDATE joins its CTE).
async fn relay_statements_use_the_primary_key_with_a_large_due_backlog(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await;
    d.execute(
        &sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             SELECT gen_random_uuid(), 'order', 'b-' || g, 'order.paid', 'erp', '{}', 'pending',
                    timestamptz '2026-06-01', timestamptz '2026-06-01'
               FROM generate_series(1, 5000) AS g",
        ),
        &params! {},
    )
    .await
    .expect("backlog");
    d.execute(&sql("ANALYZE outbox"), &params! {})
        .await
        .expect("analyze");
    let claim = plan(
        d,
        &outbox::repo::CLAIM_DUE,
        &params! {
            "now" => at(1_000_000_000), "lease_until" => at(1_000_000_030), "worker" => "r",
            "limit" => 500_i64, "ordered" => serde_json::json!([]),
        },
    )
    .await;
    assert_uses(&claim, "outbox_pkey", "outbox");
    let results: Vec<serde_json::Value> = (0..500)
        .map(|_| {
            serde_json::json!({
                "id": Uuid::now_v7(), "status": "delivered", "attempted": true,
                "next_attempt_at": null, "status_code": 200, "error": null,
            })
        })
        .collect();
    let record = plan(
        d,
        &outbox::repo::RECORD_RESULTS,
        &params! {
            "results" => serde_json::Value::from(results), "worker" => "r", "now" => at(0),
        },
    )
    .await;
    assert_uses(&record, "outbox_pkey", "outbox");
}

for_each_adapter!(
    relay_statements_use_the_primary_key_with_a_large_due_backlog,
    claim_by_id_uses_the_primary_key_with_a_large_backlog,
    hot_queries_use_the_partial_indexes,
);
