//! Outbox repository against real PostgreSQL: each function, and the rows it
//! leaves behind.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{Adapter, at, migrated_db, sql};
use hookbox::outbox::{
    self, DeliveryOutcome, DeliveryResult, NewOutboxEvent, OutboxStatus, Retention,
};
use hookbox::params;
use hookbox::store::{Database, Executor, fetch_one};
use tokio::sync::Barrier;
use uuid::Uuid;

fn event(aggregate_id: &str) -> NewOutboxEvent {
    NewOutboxEvent {
        aggregate_type: "order".into(),
        aggregate_id: aggregate_id.into(),
        event_type: "order.paid".into(),
        destination: "erp".into(),
        payload: serde_json::json!({"order_id": aggregate_id, "amount": 1250, "note": "ünïcode"}),
    }
}

/// `id` delivered (200), with no attempt detail.
fn delivered(id: Uuid) -> DeliveryResult {
    DeliveryResult {
        id,
        outcome: DeliveryOutcome::Delivered,
        status_code: Some(200),
        error: None,
        attempt: None,
    }
}

/// Enqueues `n` events in one transaction at `now_s`.
async fn enqueue_n(db: &dyn Database, n: usize, now_s: i64) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(
            outbox::enqueue(tx.as_ref(), &event(&format!("o-{i}")), at(now_s))
                .await
                .expect("enqueue"),
        );
    }
    tx.commit().await.expect("commit");
    ids
}

async fn count(db: &dyn Executor, table: &str) -> i64 {
    fetch_one(
        db,
        &sql(&format!("SELECT count(*) AS n FROM {table}")),
        &params! {},
    )
    .await
    .expect("count")
    .i64("n")
    .expect("n")
}

async fn enqueue_writes_inside_the_callers_transaction_only(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let tx = db.begin().await.expect("begin");
    let kept = outbox::enqueue(tx.as_ref(), &event("o-1"), at(0))
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    let tx = db.begin().await.expect("begin");
    let rolled_back = outbox::enqueue(tx.as_ref(), &event("o-2"), at(0))
        .await
        .expect("enqueue");
    tx.rollback().await.expect("rollback");

    assert!(
        outbox::get(db.as_ref(), rolled_back)
            .await
            .expect("get")
            .is_none()
    );
    let row = outbox::get(db.as_ref(), kept)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, OutboxStatus::Pending);
    assert_eq!(row.aggregate_type, "order");
    assert_eq!(row.aggregate_id, "o-1");
    assert_eq!(row.event_type, "order.paid");
    assert_eq!(row.destination, "erp");
    let payload: serde_json::Value = serde_json::from_str(&row.payload).expect("json text");
    assert_eq!(payload, event("o-1").payload);
    assert_eq!(row.attempts, 0);
    assert_eq!(row.next_attempt_at, at(0), "due at once");
    assert_eq!(row.created_at, at(0));
    assert_eq!((row.locked_until, row.locked_by.clone()), (None, None));
    assert_eq!(count(db.as_ref(), "outbox").await, 1);
}

async fn claim_due_leases_due_rows_in_order_and_hides_them_until_the_lease_ends(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let ids = enqueue_n(d, 3, 0).await;
    let later = enqueue_n(d, 1, 100).await; // not due before 100

    let claimed = outbox::claim_due(d, common::claim("relay-a", at(10), at(40), 10))
        .await
        .expect("claim");
    assert_eq!(
        claimed.iter().map(|r| r.id).collect::<Vec<_>>(),
        ids,
        "insertion order"
    );
    for r in &claimed {
        assert_eq!(r.locked_by.as_deref(), Some("relay-a"));
        assert_eq!(r.locked_until, Some(at(40)));
        assert_eq!(
            r.next_attempt_at,
            at(0),
            "the due time stays; the lease is locked_until"
        );
        assert_eq!(r.status, OutboxStatus::Pending);
    }
    let stored = outbox::get(d, ids[0]).await.expect("get").expect("row");
    assert_eq!(stored.locked_by.as_deref(), Some("relay-a"));
    // leased rows are not due for anyone else
    assert!(
        outbox::claim_due(d, common::claim("relay-b", at(20), at(50), 10))
            .await
            .expect("claim")
            .is_empty()
    );
    // after the lease they are due again (the relay crashed)
    let again = outbox::claim_due(d, common::claim("relay-b", at(41), at(141), 2))
        .await
        .expect("claim");
    assert_eq!(again.len(), 2, "limit respected");
    assert!(
        again
            .iter()
            .all(|r| r.locked_by.as_deref() == Some("relay-b"))
    );
    let left_over = ids
        .iter()
        .find(|id| !again.iter().any(|r| r.id == **id))
        .expect("one old row not claimed again");
    let rest = outbox::claim_due(d, common::claim("relay-c", at(100), at(130), 10))
        .await
        .expect("claim");
    let rest_ids: HashSet<Uuid> = rest.iter().map(|r| r.id).collect();
    assert_eq!(rest_ids, HashSet::from([*left_over, later[0]]));
}

async fn two_concurrent_claimers_never_receive_the_same_row(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let ids: HashSet<Uuid> = enqueue_n(db.as_ref(), 1000, 0).await.into_iter().collect();
    let barrier = Arc::new(Barrier::new(2));
    let claimers: Vec<_> = ["relay-a", "relay-b"]
        .into_iter()
        .map(|worker| {
            let db = db.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut mine = Vec::new();
                loop {
                    // a token per claim, as the relay's batches have
                    let token = format!("{worker}/{}", mine.len());
                    let batch =
                        outbox::claim_due(db.as_ref(), common::claim(&token, at(1), at(600), 25))
                            .await
                            .expect("claim");
                    if batch.is_empty() {
                        return mine;
                    }
                    mine.extend(batch.into_iter().map(|r| r.id));
                }
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut per_worker = Vec::new();
    for c in claimers {
        let mine = c.await.expect("join");
        per_worker.push(mine.len());
        for id in mine {
            assert!(seen.insert(id), "row {id} was claimed twice");
        }
    }
    assert_eq!(seen, ids, "every row claimed exactly once");
    assert_eq!(per_worker.iter().sum::<usize>(), 1000);
    // a row whose lease expired is claimable again
    let again = outbox::claim_due(
        db.as_ref(),
        common::claim("relay-c", at(601), at(700), 2000),
    )
    .await
    .expect("claim after lease");
    assert_eq!(again.len(), 1000);
}

async fn record_results_updates_the_whole_batch_in_one_statement(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let ids = enqueue_n(d, 4, 0).await;
    outbox::claim_due(d, common::claim("relay-a", at(1), at(31), 10))
        .await
        .expect("claim");
    let results = vec![
        DeliveryResult {
            id: ids[0],
            outcome: DeliveryOutcome::Delivered,
            status_code: Some(204),
            error: None,
            attempt: None,
        },
        DeliveryResult {
            id: ids[1],
            outcome: DeliveryOutcome::Retry {
                next_attempt_at: at(6),
            },
            status_code: Some(503),
            error: Some("503 Service Unavailable".into()),
            attempt: None,
        },
        DeliveryResult {
            id: ids[2],
            outcome: DeliveryOutcome::Dead,
            status_code: Some(410),
            error: Some("410 Gone".into()),
            attempt: None,
        },
        DeliveryResult {
            id: ids[3],
            outcome: DeliveryOutcome::Retry {
                next_attempt_at: at(7),
            },
            status_code: None,
            error: Some("connection refused".into()),
            attempt: None,
        },
    ];
    // a relay that does not hold the lease records nothing
    assert_eq!(
        outbox::record_results(d, "relay-z", at(2), &results)
            .await
            .expect("other"),
        0
    );
    assert_eq!(
        outbox::record_results(d, "relay-a", at(2), &results)
            .await
            .expect("record"),
        4
    );

    let delivered = outbox::get(d, ids[0]).await.expect("get").expect("row");
    assert_eq!(delivered.status, OutboxStatus::Delivered);
    assert_eq!(delivered.attempts, 1);
    assert_eq!(delivered.last_status_code, Some(204));
    assert_eq!(delivered.processed_at, Some(at(2)));
    assert_eq!((delivered.locked_by, delivered.locked_until), (None, None));

    let retry = outbox::get(d, ids[1]).await.expect("get").expect("row");
    assert_eq!(retry.status, OutboxStatus::Pending);
    assert_eq!(retry.attempts, 1);
    assert_eq!(retry.next_attempt_at, at(6));
    assert_eq!(retry.last_error.as_deref(), Some("503 Service Unavailable"));
    assert_eq!(retry.processed_at, None);

    let dead = outbox::get(d, ids[2]).await.expect("get").expect("row");
    assert_eq!(dead.status, OutboxStatus::Dead);
    assert_eq!(dead.last_status_code, Some(410));
    assert_eq!(dead.processed_at, Some(at(2)));

    let no_response = outbox::get(d, ids[3]).await.expect("get").expect("row");
    assert_eq!(no_response.last_status_code, None);
    assert_eq!(no_response.next_attempt_at, at(7));

    // recorded results are final for that claim: recording again changes nothing
    assert_eq!(
        outbox::record_results(d, "relay-a", at(3), &results)
            .await
            .expect("again"),
        0
    );
    // and the retried rows come back when due
    let due = outbox::claim_due(d, common::claim("relay-b", at(7), at(37), 10))
        .await
        .expect("claim");
    assert_eq!(
        due.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![ids[1], ids[3]]
    );
    assert_eq!(
        outbox::record_results(d, "relay-b", at(8), &[])
            .await
            .expect("empty"),
        0
    );
}

async fn counts_oldest_pending_and_retention(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    assert_eq!(
        outbox::oldest_pending_created_at(d).await.expect("oldest"),
        None
    );
    let day = 86_400;
    let old = enqueue_n(d, 3, 0).await;
    let recent = enqueue_n(d, 1, 20 * day).await;
    outbox::claim_due(d, common::claim("r", at(1), at(31), 2))
        .await
        .expect("claim");
    let results: Vec<DeliveryResult> = old[..2]
        .iter()
        .map(|id| DeliveryResult {
            id: *id,
            outcome: DeliveryOutcome::Delivered,
            status_code: Some(200),
            error: None,
            attempt: None,
        })
        .collect();
    outbox::record_results(d, "r", at(2), &results)
        .await
        .expect("record");

    let counts = outbox::counts_by_status(d).await.expect("counts");
    assert_eq!(counts[&OutboxStatus::Delivered], 2);
    assert_eq!(counts[&OutboxStatus::Pending], 2);
    assert_eq!(counts[&OutboxStatus::Dead], 0);
    assert_eq!(
        outbox::oldest_pending_created_at(d).await.expect("oldest"),
        Some(at(0))
    );

    let cutoff = at(10 * day);
    assert_eq!(
        outbox::purge_finished(d, cutoff, None, 1, Retention::Archive)
            .await
            .expect("archive"),
        1
    );
    assert_eq!(
        outbox::purge_finished(d, cutoff, None, 5, Retention::Delete)
            .await
            .expect("delete"),
        1
    );
    assert_eq!(
        outbox::purge_finished(d, cutoff, None, 5, Retention::Delete)
            .await
            .expect("none"),
        0
    );
    assert_eq!(count(d, "outbox").await, 2, "pending rows are kept");
    assert_eq!(count(d, "outbox_archive").await, 1);
    assert!(outbox::get(d, old[2]).await.expect("get").is_some());
    assert!(outbox::get(d, recent[0]).await.expect("get").is_some());
}

/// One lane step for the ordered destination "erp": record `previous`
/// (token, results) and claim for `worker` at second `now` (lease 30 s).
async fn step(
    d: &dyn Executor,
    previous: (&str, &[DeliveryResult]),
    worker: &str,
    now: i64,
) -> (u64, Vec<outbox::OutboxRow>) {
    let ordered = ["erp".to_string()];
    let leases = [outbox::LeasedResults {
        token: previous.0.to_string(),
        results: previous.1.to_vec(),
    }];
    outbox::record_and_claim(
        d,
        outbox::Unrecorded { leases: &leases },
        outbox::ClaimRequest {
            worker,
            now: at(now),
            lease_until: at(now + 30),
            limit: 10,
            ordered_destinations: &ordered,
            destination_caps: &[],
        },
    )
    .await
    .map(|(recorded, claimed)| {
        assert_eq!(claimed.unreadable, [], "every claimed row decodes");
        (recorded, claimed.rows)
    })
    .unwrap_or_else(|e| panic!("step of {worker} at {now}: {e}"))
}

/// A relay lane's step: the previous batch's results and the next claim in
/// one statement. The claim sees what was just recorded: the next row of an
/// ordered aggregate is claimable in the same statement that records its
/// predecessor delivered.
async fn record_and_claim_records_the_last_batch_and_claims_the_next(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    // one aggregate, three rows, for an ordered destination ("erp")
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            outbox::enqueue(tx.as_ref(), &event("o-1"), at(0))
                .await
                .expect("enqueue"),
        );
    }
    tx.commit().await.expect("commit");

    // nothing to record yet: the head of the aggregate only
    let (recorded, first) = step(d, ("", &[]), "lane/1", 1).await;
    assert_eq!(recorded, 0);
    assert_eq!(first.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[0]]);
    assert_eq!(first[0].locked_by.as_deref(), Some("lane/1"));

    // a token that does not hold the lease records nothing, and the head
    // still blocks its aggregate; the count comes back with no row claimed
    let foreign = [delivered(ids[0])];
    let (recorded, none) = step(d, ("lane/other", &foreign), "lane/2", 2).await;
    assert_eq!((recorded, none.len()), (0, 0));
    assert_eq!(
        outbox::get(d, ids[0])
            .await
            .expect("get")
            .expect("row")
            .status,
        OutboxStatus::Pending
    );

    // recorded by its own batch: delivered, and the next row is claimed by
    // the same statement
    let (recorded, second) = step(d, ("lane/1", &foreign), "lane/3", 3).await;
    assert_eq!(recorded, 1);
    assert_eq!(second.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[1]]);
    let head = outbox::get(d, ids[0]).await.expect("get").expect("row");
    assert_eq!(
        (
            head.status,
            head.attempts,
            head.locked_by,
            head.processed_at
        ),
        (OutboxStatus::Delivered, 1, None, Some(at(3)))
    );
    assert_eq!(second[0].locked_by.as_deref(), Some("lane/3"));

    // released unattempted and due at once: the same statement records it
    // and claims it again (a row updated twice in one statement, by the
    // recording and then by the claim), the attempt not counted
    let released = [DeliveryResult {
        id: ids[1],
        outcome: DeliveryOutcome::NotAttempted {
            next_attempt_at: at(4),
        },
        status_code: None,
        error: None,
        attempt: None,
    }];
    let (recorded, again) = step(d, ("lane/3", &released), "lane/4", 4).await;
    assert_eq!(recorded, 1);
    assert_eq!(again.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[1]]);
    assert_eq!(
        (again[0].locked_by.as_deref(), again[0].attempts),
        (Some("lane/4"), 0)
    );
}

/// A lease is only ever on a pending row (the result statement counts on
/// it): a status change that keeps the lease is refused.
/// A lane records, in one statement, results of rows claimed by several of
/// its claims: each under its own claim's token (the most common one sent
/// once), and a result whose token no longer holds its row changes nothing.
async fn one_statement_records_results_of_several_claims_each_under_its_token(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let ids = enqueue_n(db.as_ref(), 4, 0).await;
    let lease = |worker: &'static str, n: i64| outbox::ClaimRequest {
        worker,
        now: at(1),
        lease_until: at(31),
        limit: n,
        ordered_destinations: &[],
        destination_caps: &[],
    };
    let first = outbox::claim_due(d, lease("lane/a", 1))
        .await
        .expect("claim");
    let second = outbox::claim_due(d, lease("lane/b", 2))
        .await
        .expect("claim");
    let third = outbox::claim_due(d, lease("lane/c", 1))
        .await
        .expect("claim");
    assert_eq!((first.len(), second.len(), third.len()), (1, 2, 1));
    let leases = [
        outbox::LeasedResults {
            token: "lane/a".into(),
            results: vec![delivered(first[0].id)],
        },
        outbox::LeasedResults {
            token: "lane/b".into(),
            results: second.iter().map(|r| delivered(r.id)).collect(),
        },
        // not lane/c's token: its row stays leased to lane/c
        outbox::LeasedResults {
            token: "lane/stale".into(),
            results: vec![delivered(third[0].id)],
        },
    ];
    let recorded = outbox::record_leased(d, at(2), outbox::Unrecorded { leases: &leases })
        .await
        .expect("record");
    assert_eq!(recorded, 3);
    for id in &ids {
        let row = outbox::get(d, *id).await.expect("get").expect("row");
        if *id == third[0].id {
            assert_eq!(
                (row.status, row.locked_by.as_deref()),
                (OutboxStatus::Pending, Some("lane/c"))
            );
        } else {
            assert_eq!((row.status, row.locked_by), (OutboxStatus::Delivered, None));
        }
    }
}

async fn only_pending_rows_can_be_leased(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let ids = enqueue_n(d, 1, 0).await;
    outbox::claim_due(d, common::claim("relay-a", at(1), at(31), 10))
        .await
        .expect("claim");
    let err = d
        .execute(
            &sql("UPDATE outbox SET status = 'delivered' WHERE id = CAST(:id AS uuid)"),
            &params! { "id" => ids[0] },
        )
        .await
        .expect_err("a leased row cannot leave pending with its lease");
    assert!(
        err.to_string().contains("outbox_lease_only_pending"),
        "{err}"
    );
    d.execute(
        &sql(
            "UPDATE outbox SET status = 'delivered', locked_by = NULL, locked_until = NULL
              WHERE id = CAST(:id AS uuid)",
        ),
        &params! { "id" => ids[0] },
    )
    .await
    .expect("with the lease cleared");
}

async fn fields_over_their_bound_are_refused_as_poison_pills(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let tx = db.begin().await.expect("begin");
    let long_id = event(&"o".repeat(outbox::MAX_AGGREGATE_ID_BYTES + 1));
    let e = outbox::enqueue(tx.as_ref(), &long_id, at(0))
        .await
        .expect_err("over the bound");
    assert!(!e.is_retryable());
    assert!(
        e.to_string()
            .starts_with("the outbox event's aggregate_id is 513 bytes, over the 512-byte limit"),
        "{e}"
    );
    assert!(matches!(
        hookbox::processing::HandlerError::from(e),
        hookbox::processing::HandlerError::Poison(_)
    ));
    let mut at_limits = event(&"o".repeat(outbox::MAX_AGGREGATE_ID_BYTES));
    at_limits.aggregate_type = "t".repeat(outbox::MAX_AGGREGATE_TYPE_BYTES);
    at_limits.event_type = "e".repeat(outbox::MAX_OUTBOX_EVENT_TYPE_BYTES);
    outbox::enqueue(tx.as_ref(), &at_limits, at(0))
        .await
        .expect("at the limits");
    tx.commit().await.expect("commit");
    assert_eq!(count(db.as_ref(), "outbox").await, 1);
}

for_each_adapter!(
    record_and_claim_records_the_last_batch_and_claims_the_next,
    one_statement_records_results_of_several_claims_each_under_its_token,
    only_pending_rows_can_be_leased,
    enqueue_writes_inside_the_callers_transaction_only,
    claim_due_leases_due_rows_in_order_and_hides_them_until_the_lease_ends,
    two_concurrent_claimers_never_receive_the_same_row,
    record_results_updates_the_whole_batch_in_one_statement,
    counts_oldest_pending_and_retention,
    fields_over_their_bound_are_refused_as_poison_pills,
);
