//! The hot queries use the partial indexes on active statuses, so they stay
//! O(active rows) however much history the tables hold.
//!
//! Each test loads 20,000 finished rows and a handful of active ones,
//! ANALYZEs, and asserts on the plan PostgreSQL chooses for the repository's
//! own SQL text with real parameter values.

mod common;

use common::{
    Adapter, assert_uses, at, claim, function_settings, inbox_scans, load_history, migrated_db,
    plan, sql,
};
use hookbox::store::{Database, Executor, Params};
use hookbox::{inbox, outbox, params};
use uuid::Uuid;

/// Runs the relay's claim under `EXPLAIN (ANALYZE, BUFFERS)` in a transaction
/// that is rolled back: rows claimed, and buffers the claim touched (its SQL
/// is a function, so its plan is judged by the work it does).
async fn claim_cost(db: &dyn Database, params: &Params) -> (u64, u64) {
    let tx = db.begin().await.expect("begin");
    let explain = sql(&format!(
        "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {}",
        outbox::repo::CLAIM_DUE.sql
    ));
    // first a claim of nothing (due before 2000) compiles and plans the
    // function, whose catalog reads would count as buffers; then measured
    let nothing = params! {
        "now" => chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z")
            .expect("time").to_utc(),
        "lease_until" => chrono::DateTime::parse_from_rfc3339("2000-01-01T00:00:30Z")
            .expect("time").to_utc(),
        "worker" => "warm-up", "limit" => 1_i64, "ordered" => serde_json::json!([]), "caps" => serde_json::json!({}),
    };
    // the relay's budget, unless the test sets one
    let budgeted = |p: &Params| match p.get("budget") {
        Some(_) => p.clone(),
        None => p.clone().with("budget", outbox::repo::CLAIM_BUDGET_BYTES),
    };
    let mut lines = Vec::new();
    for p in [budgeted(&nothing), budgeted(params)] {
        lines = tx
            .execute(&explain, &p)
            .await
            .expect("EXPLAIN ANALYZE claim")
            .rows
            .iter()
            .map(|r| r.text("QUERY PLAN").expect("plan line"))
            .collect();
    }
    tx.rollback().await.expect("rollback");
    let number_after = |line: &str, key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let rows = number_after(&lines[0], "actual rows=");
    let buffers = lines
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers:"))
        .map_or(0, |l| number_after(l, "hit=") + number_after(l, "read="));
    (rows, buffers)
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

    // the claim is a function (migration 0005): judged by what it touches
    for ordered in [serde_json::json!([]), serde_json::json!(["erp"])] {
        let (rows, buffers) = claim_cost(
            d,
            &params! {
                "now" => at(60), "lease_until" => at(90), "worker" => "r", "limit" => 100_i64,
                "ordered" => ordered.clone(), "caps" => serde_json::json!({}),
            },
        )
        .await;
        assert_eq!(rows, 10, "the due rows (ordered: {ordered})");
        assert!(
            buffers < 150,
            "claiming 10 rows among 20,000 finished ones touched {buffers} buffers (ordered: {ordered})"
        );
    }

    let summary = plan(d, &outbox::repo::PENDING_SUMMARY, &params! {}).await;
    assert!(
        !summary.contains("Seq Scan on outbox"),
        "pending summary scans the table:\n{summary}"
    );

    let lag = plan(d, &outbox::repo::OLDEST_PENDING, &params! {}).await;
    assert_uses(&lag, "outbox_pending_created", "outbox");

    // claiming by id goes through the primary key, whatever the history
    // (the claim is a function, migration 0014: judged by what it touches)
    let (claimed, scans) = inbox_claim_cost(d, "status = 'pending'").await;
    assert_eq!(claimed, 10);
    assert_eq!(
        scans,
        (0, 0),
        "(sequential, active-index) scans of the inbox"
    );
}

/// Runs the processor's claim of the first 10 inbox rows matching `filter`
/// in a transaction that is rolled back: rows claimed, and the scans of the
/// inbox it made (sequential, of the active rows' indexes).
async fn inbox_claim_cost(db: &dyn Database, filter: &str) -> (usize, (i64, i64)) {
    let ids: Vec<String> = db
        .execute(
            &sql(&format!(
                "SELECT CAST(id AS text) AS id FROM inbox WHERE {filter} ORDER BY id LIMIT 10"
            )),
            &params! {},
        )
        .await
        .expect("ids")
        .rows
        .iter()
        .map(|r| r.text("id").expect("id"))
        .collect();
    let tx = db.begin().await.expect("begin");
    let before = inbox_scans(tx.as_ref()).await;
    let claimed = inbox::repo::claim(
        tx.as_ref(),
        &ids.iter()
            .map(|i| i.parse().expect("uuid"))
            .collect::<Vec<Uuid>>(),
        at(0),
        at(30),
    )
    .await
    .expect("claim")
    .iter()
    .filter(|c| matches!(c, inbox::repo::Claim::Claimed { .. }))
    .count();
    let after = inbox_scans(tx.as_ref()).await;
    tx.rollback().await.expect("rollback");
    (claimed, (after.0 - before.0, after.1 - before.1))
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
    // no scan of the rows, nor of the active rows' index
    let (claimed, scans) = inbox_claim_cost(d, "status = 'pending'").await;
    assert_eq!(claimed, 10);
    assert_eq!(
        scans,
        (0, 0),
        "(sequential, active-index) scans of the inbox"
    );
}

/// With a large due backlog, the relay's result statement reaches the rows
/// by primary key alone (not a hash join over the whole table, nor the key
/// ANDed with every pending row), also when statistics undercount the
/// backlog; the claim (a function with a pinned plan) takes its whole batch.
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
    let (rows, _) = claim_cost(
        d,
        &params! {
            "now" => at(1_000_000_000), "lease_until" => at(1_000_000_030), "worker" => "r",
            "limit" => 500_i64, "ordered" => serde_json::json!([]), "caps" => serde_json::json!({}),
        },
    )
    .await;
    assert_eq!(rows, 500);
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
            "results" => serde_json::Value::from(results.clone()), "recorded_by" => "r", "now" => at(0),
        },
    )
    .await;
    assert_uses(&record, "outbox_pkey", "outbox");
    only_the_primary_key(&record, "record");

    // statistics taken while almost nothing was pending (autovacuum lags a
    // backlog): the planner undercounts pending rows and is tempted to AND
    // the primary key with a partial index
    for step in [
        "UPDATE outbox SET status = 'delivered' WHERE aggregate_id LIKE 'b-%'",
        "ANALYZE outbox",
        "UPDATE outbox SET status = 'pending' WHERE aggregate_id LIKE 'b-%'",
    ] {
        d.execute(&sql(step), &params! {}).await.expect(step);
    }
    let stale = plan(
        d,
        &outbox::repo::RECORD_RESULTS,
        &params! {
            "results" => serde_json::Value::from(results), "recorded_by" => "r", "now" => at(0),
        },
    )
    .await;
    only_the_primary_key(&stale, "record with stale statistics");
}

/// Reaches outbox rows through the primary key alone: ANDing it with a
/// partial index (a BitmapAnd over every pending row, which the planner picks
/// when its statistics undercount the backlog) makes each batch cost
/// O(pending rows).
fn only_the_primary_key(plan: &str, what: &str) {
    for index in [
        "outbox_pending",
        "outbox_undelivered",
        "outbox_dead",
        "outbox_created",
    ] {
        assert!(
            !plan.contains(index),
            "{what} reaches rows through {index}, not the primary key alone:\n{plan}"
        );
    }
    assert!(!plan.contains("BitmapAnd"), "{what}: {plan}");
}

/// `n` pending rows of ~1 KiB (the relay bench's size), written at `from`
/// and due one millisecond apart from then.
async fn insert_pending_kib_rows(d: &dyn Executor, n: i64, from: chrono::DateTime<chrono::Utc>) {
    insert_pending_kib_rows_of(d, "erp", n, from).await;
}

/// [`insert_pending_kib_rows`] for `destination`.
async fn insert_pending_kib_rows_of(
    d: &dyn Executor,
    destination: &str,
    n: i64,
    from: chrono::DateTime<chrono::Utc>,
) {
    d.execute(
        &sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             SELECT gen_random_uuid(), 'order', 'o-' || g, 'order.paid', :destination,
                    jsonb_build_object('note', repeat('x', 800), 'n', g), 'pending',
                    CAST(:from AS timestamptz) + g * interval '1 millisecond',
                    CAST(:from AS timestamptz)
               FROM generate_series(1, :n) AS g",
        ),
        &params! { "from" => from, "n" => n, "destination" => destination },
    )
    .await
    .expect("pending rows");
}

/// A burst into a table PostgreSQL has not analyzed yet (a new deployment:
/// autovacuum analyzes later) looks like a few rows to the planner: the claim
/// must still walk the due index in order and stop at its limit, not read
/// and sort every due row (tens of milliseconds per batch for a 20k burst).
/// Without migration 0005's pinned plan this touched ~5,600 buffers.
async fn the_claim_walks_the_due_index_when_a_burst_meets_no_statistics(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let burst_at = chrono::DateTime::parse_from_rfc3339("2026-07-01T00:00:00Z")
        .expect("time")
        .to_utc();
    insert_pending_kib_rows(d, 20_000, burst_at).await;
    let (rows, buffers) = claim_cost(
        d,
        &params! {
            "now" => chrono::DateTime::parse_from_rfc3339("2026-07-01T00:01:00Z")
                .expect("time").to_utc(),
            "lease_until" => chrono::DateTime::parse_from_rfc3339("2026-07-01T00:02:00Z")
                .expect("time").to_utc(),
            "worker" => "r", "limit" => 100_i64, "ordered" => serde_json::json!([]), "caps" => serde_json::json!({}),
        },
    )
    .await;
    assert_eq!(rows, 100);
    // walking the index: ~100 rows over ~35 pages, their index entries and
    // the leases; every due row: ~7,000 pages
    assert!(
        buffers < 1_500,
        "claiming 100 of 20,000 due rows touched {buffers} buffers: every due row was read"
    );
}

/// The usual state of a healthy outbox: statistics taken while almost
/// nothing was pending (autovacuum analyzes as rows are delivered). Then one
/// destination builds a backlog. The claim's plan, made from those
/// statistics, must still find the destinations with due rows by one probe
/// each and walk each destination's rows through its own index: claiming
/// the other destination's 10 rows (the backlogged one capped at 0: all its
/// request slots busy) reads none of the backlog. Before migration 16 the
/// plan found the destinations by reading every pending row and walked
/// erp's rows through the due index of all destinations, behind the
/// backlog: 5,121 buffers.
async fn a_backlog_after_the_statistics_never_stands_in_front_of_another_destination(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await; // 20,000 finished, 10 of erp due, then ANALYZE
    let backlog_due = at(-86_400);
    insert_pending_kib_rows_of(d, "slow", 20_000, backlog_due).await;
    let claim = |caps: serde_json::Value| {
        params! {
            "now" => at(60), "lease_until" => at(90), "worker" => "r", "limit" => 100_i64,
            "ordered" => serde_json::json!([]), "caps" => caps,
        }
    };
    let (rows, buffers) = claim_cost(d, &claim(serde_json::json!({ "slow": 0 }))).await;
    assert_eq!(rows, 10, "erp's due rows");
    assert!(
        buffers < 150,
        "claiming erp's 10 rows beside slow's backlog of 20,000 touched {buffers} buffers"
    );
    let (rows, buffers) = claim_cost(d, &claim(serde_json::json!({}))).await;
    assert_eq!(rows, 100, "the oldest due: slow's");
    assert!(
        buffers < 1_500,
        "claiming 100 rows with a backlog of 20,000 touched {buffers} buffers"
    );
}

/// A claim leases a whole batch in one transaction, often every row of a
/// page: each lease must still be written in place (a HOT update, no index
/// entry), which needs room on the page for the batch's new row versions
/// (migration 0004's fillfactor). With ~1 KiB payloads, fillfactor 80 left
/// room for one lease per page.
async fn a_claim_leases_every_row_in_place(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    insert_pending_kib_rows(d, 300, at(-3600)).await;
    let tx = d.begin().await.expect("begin");
    let claimed = outbox::claim_due(tx.as_ref(), claim("r", at(0), at(60), 100))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 100);
    let stats = tx
        .execute(
            &sql(
                "SELECT pg_stat_get_xact_tuples_updated(CAST('outbox' AS regclass)) AS updated,
                        pg_stat_get_xact_tuples_hot_updated(CAST('outbox' AS regclass)) AS hot",
            ),
            &params! {},
        )
        .await
        .expect("stats");
    let row = &stats.rows[0];
    assert_eq!(row.i64("updated").expect("updated"), 100);
    assert_eq!(
        row.i64("hot").expect("hot"),
        100,
        "every lease is a HOT update (no index entries)"
    );
    tx.rollback().await.expect("rollback");
}

/// Retention asks, per queued blob key, whether any row still refers to it:
/// through the partial key indexes of migration 7, whatever the history of
/// the four tables (a scan of each per batch would cost O(history)).
async fn retentions_reference_check_uses_the_key_indexes(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await;
    for step in [
        // some history by reference, and archives as large as the tables
        "UPDATE inbox SET body = NULL, body_key = 'inbox/acme/' || md5(event_id) || md5(event_id),
                body_size = 2, body_sha256 = decode(repeat('ab', 32), 'hex')
          WHERE event_id LIKE 'old-%' AND right(event_id, 1) = '7'",
        "UPDATE outbox SET payload = NULL,
                payload_key = 'outbox/erp/' || md5(aggregate_id) || md5(aggregate_id),
                payload_size = 2, payload_sha256 = decode(repeat('ab', 32), 'hex')
          WHERE aggregate_id LIKE 'o-%' AND right(aggregate_id, 1) = '7'",
        "INSERT INTO inbox_archive SELECT * FROM inbox",
        "INSERT INTO outbox_archive SELECT * FROM outbox",
        "ANALYZE inbox",
        "ANALYZE outbox",
        "ANALYZE inbox_archive",
        "ANALYZE outbox_archive",
    ] {
        d.execute(&sql(step), &params! {}).await.expect(step);
    }
    let keys: Vec<String> = (0..100)
        .map(|i| format!("outbox/erp/{:064x}", i))
        .chain((0..100).map(|i| format!("inbox/acme/{:064x}", i)))
        .collect();
    let check = plan(
        d,
        &outbox::blob_refs::DEQUEUE,
        &params! { "keys" => serde_json::Value::from(keys) },
    )
    .await;
    for (index, table) in [
        ("inbox_body_key", "inbox"),
        ("inbox_archive_body_key", "inbox_archive"),
        ("outbox_payload_key", "outbox"),
        ("outbox_archive_payload_key", "outbox_archive"),
    ] {
        assert_uses(&check, index, table);
    }

    // every retention batch finds its rows by an index and deletes them by
    // primary key (`= ANY (ARRAY(…))`: a join with the batch let PostgreSQL
    // hash-join it against a sequential scan of the whole table); the
    // archive's own retention walks its age index (migration 0010)
    let cutoff = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:01:40Z")
        .expect("cutoff")
        .to_utc();
    let params = params! { "cutoff" => cutoff, "limit" => 1_000_i64 };
    let inbox_purge = plan(d, &inbox::repo::PURGE_ARCHIVED, &params).await;
    assert_uses(&inbox_purge, "inbox_archive_received_at", "inbox_archive");
    let outbox_purge = plan(d, &outbox::repo::PURGE_ARCHIVED, &params).await;
    assert_uses(&outbox_purge, "outbox_archive_created_at", "outbox_archive");
    for (statement, table) in [
        (&inbox::repo::PURGE_DELETE, "inbox"),
        (&inbox::repo::PURGE_ARCHIVE, "inbox"),
        (&outbox::repo::PURGE_DELETE, "outbox"),
        (&outbox::repo::PURGE_ARCHIVE, "outbox"),
    ] {
        // the outbox's also move delivering attempts younger than the log's cutoff
        let params = match table {
            "outbox" => params.clone().with("attempts_after", cutoff),
            _ => params.clone(),
        };
        let purge = plan(d, statement, &params).await;
        assert_uses(&purge, &format!("{table}_pkey"), table);
    }
}

/// The claim's settings (migrations 5, 7 and 14): a generic plan, no bitmap
/// or sequential scans, no sorts where an index walk can do, and no JIT (the disabled
/// sort of its budget window counts as a huge cost, which made PostgreSQL
/// JIT-compile the claim on every call: 300 ms for a sub-millisecond claim).
async fn the_claim_pins_its_plan_and_never_pays_for_jit(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let settings = function_settings(db.as_ref(), "outbox_claim_due").await;
    assert_eq!(
        settings,
        [
            "enable_bitmapscan=off",
            "enable_seqscan=off",
            "enable_sort=off",
            "jit=off",
            "plan_cache_mode=force_generic_plan"
        ],
        "one claim function, with its pinned plan"
    );
}

/// The relay's read of the endpoints its claim did not return probes the
/// primary key with the names it is given: its cost does not grow with
/// the endpoints there are (10,000 here; an `IN (SELECT …)` hashed every
/// one of them). The claims read each batch's endpoints alike. Each reads
/// the document kept on the endpoint's row (migration 33), none of the
/// tables it is written from.
async fn the_directory_reads_a_batchs_endpoints_by_their_key(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    ten_thousand_endpoints(d).await;
    let ids: Vec<String> = (1..=100)
        .map(|e: u32| format!("ep_{:032x}", e * 97))
        .collect();
    let read = plan(
        d,
        &hookbox::tenants::directory::ENDPOINTS,
        &params! { "ids" => serde_json::json!(ids) },
    )
    .await;
    assert_uses(&read, "hookbox_endpoints_pkey", "hookbox_endpoints");
    let claim = plan(
        d,
        &outbox::repo::CLAIM_DUE,
        &params! {
            "now" => at(0), "lease_until" => at(30), "worker" => "r", "limit" => 100_i64,
            "ordered" => serde_json::json!([]), "caps" => serde_json::json!({}),
            "budget" => 1_000_000_i64,
        },
    )
    .await;
    assert_uses(&claim, "hookbox_endpoints_pkey", "hookbox_endpoints");
    for plan in [&read, &claim] {
        for table in [
            "hookbox_endpoint_secrets",
            "hookbox_tenants",
            "outbox_destinations",
        ] {
            assert!(!plan.contains(table), "{table} read:\n{plan}");
        }
    }
}

/// Recording a batch finds which of its destinations were not healthy
/// through the index of those (migration 32), not by reading every
/// destination (10,000 here, statistics taken).
async fn recording_finds_the_unhealthy_destinations_through_their_index(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    ten_thousand_endpoints(d).await;
    let results: Vec<serde_json::Value> = (0..100)
        .map(|_| {
            serde_json::json!({
                "id": Uuid::now_v7(), "status": "delivered", "attempted": true,
                "next_attempt_at": null, "status_code": 200, "error": null,
                "attempted_at": at(0), "latency_ms": 3,
            })
        })
        .collect();
    let results = serde_json::Value::from(results);
    let recording = params! { "results" => results.clone(), "recorded_by" => "r", "now" => at(0) };
    let and_claiming = params! {
        "results" => results, "recorded_by" => "r", "now" => at(0), "worker" => "r",
        "lease_until" => at(30), "limit" => 100_i64, "ordered" => serde_json::json!([]),
        "caps" => serde_json::json!({}), "budget" => 1_000_000_i64,
    };
    for (what, statement, params) in [
        ("record", &outbox::repo::RECORD_RESULTS, &recording),
        (
            "record and claim",
            &outbox::repo::RECORD_AND_CLAIM,
            &and_claiming,
        ),
    ] {
        let record = plan(d, statement, params).await;
        assert!(
            record.contains("outbox_destinations_unhealthy")
                && !record.contains("Seq Scan on outbox_destinations "),
            "{what}: expected the index of unhealthy destinations, no scan of them all:\n{record}"
        );
    }
}

/// 100 tenants with 10,000 endpoints, statistics taken.
async fn ten_thousand_endpoints(d: &dyn Executor) {
    for step in [
        "INSERT INTO hookbox_tenants (id, uid, name, created_at, updated_at)
         SELECT 'app_' || lpad(to_hex(g), 32, '0'), 't-' || g, 'tenant', now(), now()
           FROM generate_series(1, 100) AS g",
        "INSERT INTO outbox_destinations (name, tenant_id, event_types, event_like, synced_at)
         SELECT 'ep_' || lpad(to_hex(e), 32, '0'), 'app_' || lpad(to_hex(e % 100 + 1), 32, '0'),
                '{*}', '{%}', now()
           FROM generate_series(1, 10000) AS e",
        "INSERT INTO hookbox_endpoints (id, tenant_id, url, created_at, updated_at)
         SELECT name, tenant_id, 'https://example.com/in', now(), now()
           FROM outbox_destinations WHERE name LIKE 'ep\\_%'",
        "ANALYZE",
    ] {
        d.execute(&sql(step), &params! {}).await.expect(step);
    }
}

for_each_adapter!(
    a_backlog_after_the_statistics_never_stands_in_front_of_another_destination,
    the_claim_pins_its_plan_and_never_pays_for_jit,
    retentions_reference_check_uses_the_key_indexes,
    a_claim_leases_every_row_in_place,
    the_claim_walks_the_due_index_when_a_burst_meets_no_statistics,
    relay_statements_use_the_primary_key_with_a_large_due_backlog,
    claim_by_id_uses_the_primary_key_with_a_large_backlog,
    hot_queries_use_the_partial_indexes,
    the_directory_reads_a_batchs_endpoints_by_their_key,
    recording_finds_the_unhealthy_destinations_through_their_index,
);
