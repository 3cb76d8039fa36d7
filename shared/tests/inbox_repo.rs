//! Inbox repository against real PostgreSQL: each function, and the rows it
//! leaves behind.

mod common;

use std::sync::Arc;

use chrono::Duration;
use common::{Adapter, at, migrated_db, migrated_db_with, sql};
use hookbox::inbox::{
    self, Body, Claim, ClaimToken, InboxStatus, Inserted, NewInboxEvent, Retention,
};
use hookbox::params;
use hookbox::store::{Database, Executor, fetch_one};
use tokio::sync::Barrier;
use uuid::Uuid;

fn event(partner: &str, event_id: &str) -> NewInboxEvent {
    NewInboxEvent {
        partner: partner.into(),
        event_id: event_id.into(),
        event_id_derived: false,
        event_type: Some("payment.received".into()),
        ordering_key: Some("order-1".into()),
        // not UTF-8, with a NUL: stored verbatim
        body: Body::Inline(vec![b'{', 0, 0xff, b'}', b'\n']),
        headers: serde_json::json!({"webhook-id": event_id}),
        signature_verified: true,
    }
}

async fn count(db: &dyn Executor, where_clause: &str) -> i64 {
    fetch_one(
        db,
        &sql(&format!(
            "SELECT count(*) AS n FROM inbox WHERE {where_clause}"
        )),
        &params! {},
    )
    .await
    .expect("count")
    .i64("n")
    .expect("n")
}

async fn new_row(db: &dyn Database, event_id: &str, now_s: i64) -> Uuid {
    match inbox::insert_if_new(db, &event("acme", event_id), at(now_s))
        .await
        .expect("insert")
    {
        Inserted::New(id) => id,
        other => panic!("expected new, got {other:?}"),
    }
}

async fn claim_one(db: &dyn Database, id: Uuid, now_s: i64, lease_s: i64) -> ClaimToken {
    match inbox::claim(db, &[id], at(now_s), at(now_s + lease_s))
        .await
        .expect("claim")
        .as_slice()
    {
        [Claim::Claimed { token, .. }] => *token,
        other => panic!("expected one claimed row, got {other:?}"),
    }
}

async fn insert_if_new_stores_the_event_verbatim_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let e = event("acme", "evt_1");
    let first = inbox::insert_if_new(db.as_ref(), &e, at(0))
        .await
        .expect("insert");
    assert!(first.is_new());
    let again = inbox::insert_if_new(db.as_ref(), &e, at(5))
        .await
        .expect("again");
    assert_eq!(again, Inserted::Duplicate(first.id()));
    // same event id from another partner is another event
    let other = inbox::insert_if_new(db.as_ref(), &event("globex", "evt_1"), at(6))
        .await
        .expect("other partner");
    assert!(other.is_new());
    assert_ne!(other.id(), first.id());

    let row = inbox::get(db.as_ref(), first.id())
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.partner, "acme");
    assert_eq!(row.event_id, "evt_1");
    assert_eq!(row.body, e.body);
    assert_eq!(row.headers, e.headers);
    assert_eq!(row.event_type.as_deref(), Some("payment.received"));
    assert_eq!(row.ordering_key.as_deref(), Some("order-1"));
    assert!(row.signature_verified);
    assert!(!row.event_id_derived);
    assert_eq!(row.status, InboxStatus::Pending);
    assert_eq!(row.attempts, 0);
    assert_eq!(
        row.received_at,
        at(0),
        "the duplicate did not touch the row"
    );
    assert_eq!(row.next_attempt_at, Some(at(0)));
    assert_eq!(row.enqueued_at, Some(at(0)));
    assert_eq!(count(db.as_ref(), "true").await, 2);
}

async fn fifty_concurrent_inserts_of_one_event_make_one_row_and_one_new(adapter: Adapter) {
    let (_t, db) = migrated_db_with(adapter, 50).await;
    // open the pool's connections first so the inserts really race (the
    // Data API has no client-side pool: each insert is one HTTPS call)
    if adapter == Adapter::Postgres {
        let warm: Vec<_> = (0..50)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move { db.begin().await.expect("connect") })
            })
            .collect();
        for w in warm {
            w.await.expect("join").rollback().await.expect("rollback");
        }
    }
    let barrier = Arc::new(Barrier::new(50));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let db = db.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                inbox::insert_if_new(db.as_ref(), &event("acme", "evt_race"), at(0)).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("join").expect("insert"));
    }
    let new: Vec<_> = results.iter().filter(|r| r.is_new()).collect();
    assert_eq!(new.len(), 1, "exactly one new: {results:?}");
    assert_eq!(results.iter().filter(|r| !r.is_new()).count(), 49);
    let id = new[0].id();
    assert!(
        results.iter().all(|r| r.id() == id),
        "every caller learns the same id"
    );
    assert_eq!(
        count(db.as_ref(), "partner = 'acme' AND event_id = 'evt_race'").await,
        1
    );
}

async fn claim_leases_active_rows_in_one_statement_and_reports_the_rest(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let pending = new_row(db.as_ref(), "p", 0).await;
    let done = new_row(db.as_ref(), "d", 0).await;
    let token = claim_one(db.as_ref(), done, 1, 30).await;
    assert!(
        inbox::mark_processed(db.as_ref(), token, at(2))
            .await
            .expect("processed")
    );
    let held = new_row(db.as_ref(), "h", 0).await;
    claim_one(db.as_ref(), held, 3, 30).await;
    let missing = Uuid::now_v7();

    // pending asked twice: claimed once
    let claims = inbox::claim(
        db.as_ref(),
        &[pending, done, held, missing, pending],
        at(10),
        at(40),
    )
    .await
    .expect("claim");
    assert_eq!(claims.len(), 4);
    for c in &claims {
        match c {
            Claim::Claimed { row, token } => {
                assert_eq!(row.id, pending);
                assert_eq!(token.id, pending);
                assert_eq!(token.attempt, 1);
                assert_eq!(row.status, InboxStatus::Processing);
                assert_eq!(row.locked_until, Some(at(40)));
                assert_eq!(row.body, event("acme", "p").body);
            }
            Claim::Finished { id, status } => {
                assert_eq!(*id, done);
                assert_eq!(*status, InboxStatus::Processed);
            }
            Claim::Busy { id } => assert_eq!(*id, held),
            Claim::Missing { id } => assert_eq!(*id, missing),
            Claim::Unreadable { error, .. } => panic!("every row is readable: {error}"),
        }
    }
    let row = inbox::get(db.as_ref(), pending)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, InboxStatus::Processing);
    assert_eq!(row.attempts, 1);
    assert_eq!(row.next_attempt_at, Some(at(40)));

    // the held row's lease expires at 33: claimable again, with a new attempt
    let token = claim_one(db.as_ref(), held, 34, 30).await;
    assert_eq!(token.attempt, 2);
    assert!(
        inbox::claim(db.as_ref(), &[], at(0), at(1))
            .await
            .expect("empty")
            .is_empty()
    );
}

async fn status_changes_need_the_current_lease(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let id = new_row(db.as_ref(), "e", 0).await;
    let stale = claim_one(db.as_ref(), id, 0, 30).await;
    let fresh = claim_one(db.as_ref(), id, 31, 30).await; // lease expired, claimed again
    assert!(
        !inbox::mark_processed(db.as_ref(), stale, at(32))
            .await
            .expect("stale")
    );
    assert!(
        !inbox::mark_dead(db.as_ref(), stale, at(32), "x")
            .await
            .expect("stale dead")
    );
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.status,
        InboxStatus::Processing,
        "the stale worker changed nothing"
    );
    assert!(
        inbox::mark_processed(db.as_ref(), fresh, at(33))
            .await
            .expect("fresh")
    );
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, InboxStatus::Processed);
    assert_eq!(row.processed_at, Some(at(33)));
    assert_eq!(row.next_attempt_at, None);
    assert_eq!(row.locked_until, None);
    // finished rows are not claimable
    let claims = inbox::claim(db.as_ref(), &[id], at(100), at(130))
        .await
        .expect("claim");
    assert_eq!(
        claims,
        vec![Claim::Finished {
            id,
            status: InboxStatus::Processed
        }]
    );
}

async fn defer_retry_quarantine_and_dead_leave_the_expected_rows(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();

    // deferred twice: deferred_since keeps the start of the run
    let id = new_row(d, "defer", 0).await;
    let t = claim_one(d, id, 1, 30).await;
    assert!(
        inbox::mark_deferred(d, t, at(2), at(62), "order not paid yet")
            .await
            .expect("defer")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Deferred);
    assert_eq!(row.next_attempt_at, Some(at(62)));
    assert_eq!(row.deferred_since, Some(at(2)));
    assert_eq!(row.last_error.as_deref(), Some("order not paid yet"));
    assert_eq!(row.locked_until, None);
    let t = claim_one(d, id, 62, 30).await;
    assert!(
        inbox::mark_deferred(d, t, at(63), at(363), "still not paid")
            .await
            .expect("defer")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.deferred_since, Some(at(2)));
    assert_eq!(row.attempts, 2);
    let t = claim_one(d, id, 363, 30).await;
    assert!(
        inbox::mark_processed(d, t, at(364))
            .await
            .expect("processed")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.deferred_since, None);
    assert_eq!(row.last_error, None);

    // retry: back to pending with the error and the next attempt time
    let id = new_row(d, "retry", 0).await;
    let t = claim_one(d, id, 1, 30).await;
    assert!(
        inbox::mark_retry(d, t, at(61), "downstream timeout")
            .await
            .expect("retry")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Pending);
    assert_eq!(row.next_attempt_at, Some(at(61)));
    assert_eq!(row.last_error.as_deref(), Some("downstream timeout"));
    assert_eq!(row.locked_until, None);

    // quarantine
    let id = new_row(d, "poison", 0).await;
    let t = claim_one(d, id, 1, 30).await;
    assert!(
        inbox::mark_quarantined(d, t, at(2), "unknown event type")
            .await
            .expect("q")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Quarantined);
    assert_eq!(row.last_error.as_deref(), Some("unknown event type"));
    assert_eq!(row.next_attempt_at, None);
    assert_eq!(row.processed_at, Some(at(2)));

    // dead
    let id = new_row(d, "dead", 0).await;
    let t = claim_one(d, id, 1, 30).await;
    assert!(
        inbox::mark_dead(d, t, at(2), "gave up after 4 receives")
            .await
            .expect("dead")
    );
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Dead);
    assert_eq!(row.last_error.as_deref(), Some("gave up after 4 receives"));
    assert_eq!(row.next_attempt_at, None);
}

async fn sweeper_returns_overdue_rows_once_per_grace_period(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let grace = Duration::seconds(300);
    let old_pending = new_row(d, "old", 0).await;
    let fresh_pending = new_row(d, "fresh", 200).await;
    let expired_lease = new_row(d, "lease", 0).await;
    claim_one(d, expired_lease, 1, 30).await; // lease ends at 31
    let deferred = new_row(d, "deferred", 0).await;
    let t = claim_one(d, deferred, 1, 30).await;
    inbox::mark_deferred(d, t, at(2), at(900), "later")
        .await
        .expect("defer");
    let done = new_row(d, "done", 0).await;
    let t = claim_one(d, done, 1, 30).await;
    inbox::mark_processed(d, t, at(2)).await.expect("processed");

    // at 400: cutoff 100 → the pending row from 0 and the lease that ended at 31
    let swept = inbox::sweep_stranded(d, at(400), grace, 100)
        .await
        .expect("sweep");
    let ids: Vec<Uuid> = swept.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 2, "{swept:?}");
    assert!(ids.contains(&old_pending) && ids.contains(&expired_lease));
    assert!(!ids.contains(&fresh_pending) && !ids.contains(&deferred) && !ids.contains(&done));
    assert_eq!(
        swept
            .iter()
            .find(|r| r.id == old_pending)
            .expect("row")
            .event_id,
        "old"
    );
    for id in [old_pending, expired_lease] {
        let row = inbox::get(d, id).await.expect("get").expect("row");
        assert_eq!(row.enqueued_at, Some(at(400)), "marked as enqueued now");
    }
    // not again within the grace period...
    assert!(
        inbox::sweep_stranded(d, at(450), grace, 100)
            .await
            .expect("sweep")
            .is_empty()
    );
    // ...but again after it, and the deferred row once it is overdue too
    let swept = inbox::sweep_stranded(d, at(1300), grace, 100)
        .await
        .expect("sweep");
    assert_eq!(swept.len(), 4, "{swept:?}");
    // bounded batches (sent at 1300, 1300 s after they came in: again from
    // 2600, not every grace period)
    assert!(
        inbox::sweep_stranded(d, at(2000), grace, 100)
            .await
            .expect("sweep")
            .is_empty()
    );
    let limited = inbox::sweep_stranded(d, at(2600), grace, 1)
        .await
        .expect("sweep");
    assert_eq!(limited.len(), 1);
}

async fn counts_and_oldest_active_reflect_the_rows(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    assert_eq!(
        inbox::oldest_active_received_at(d).await.expect("oldest"),
        None
    );
    let counts = inbox::counts_by_status(d).await.expect("counts");
    assert!(InboxStatus::ALL.iter().all(|s| counts[s] == 0));

    let a = new_row(d, "a", 10).await;
    new_row(d, "b", 20).await;
    new_row(d, "c", 30).await;
    let t = claim_one(d, a, 40, 30).await;
    inbox::mark_quarantined(d, t, at(41), "bad")
        .await
        .expect("q");
    let counts = inbox::counts_by_status(d).await.expect("counts");
    assert_eq!(counts[&InboxStatus::Pending], 2);
    assert_eq!(counts[&InboxStatus::Quarantined], 1);
    assert_eq!(counts[&InboxStatus::Processed], 0);
    assert_eq!(counts.values().sum::<i64>(), 3);
    // the quarantined row from 10 is not active: oldest active is from 20
    assert_eq!(
        inbox::oldest_active_received_at(d).await.expect("oldest"),
        Some(at(20))
    );
}

async fn retention_deletes_or_archives_old_processed_rows_in_bounded_batches(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let day = 86_400;
    let mut processed = Vec::new();
    for i in 0..5 {
        let id = new_row(d, &format!("old{i}"), i).await;
        let t = claim_one(d, id, 100, 30).await;
        inbox::mark_processed(d, t, at(101))
            .await
            .expect("processed");
        processed.push(id);
    }
    let quarantined = new_row(d, "old-q", 0).await;
    let t = claim_one(d, quarantined, 100, 30).await;
    inbox::mark_quarantined(d, t, at(101), "bad")
        .await
        .expect("q");
    let recent = new_row(d, "recent", 20 * day).await;
    let t = claim_one(d, recent, 20 * day, 30).await;
    inbox::mark_processed(d, t, at(20 * day + 1))
        .await
        .expect("processed");

    let cutoff = at(10 * day);
    assert_eq!(
        inbox::purge_finished(d, cutoff, 2, Retention::Archive)
            .await
            .expect("archive"),
        2
    );
    assert_eq!(
        inbox::purge_finished(d, cutoff, 2, Retention::Delete)
            .await
            .expect("delete"),
        2
    );
    assert_eq!(
        inbox::purge_finished(d, cutoff, 2, Retention::Archive)
            .await
            .expect("archive"),
        1
    );
    assert_eq!(
        inbox::purge_finished(d, cutoff, 2, Retention::Delete)
            .await
            .expect("none"),
        0
    );

    // left: the quarantined row and the recent one
    assert_eq!(count(d, "true").await, 2);
    assert!(inbox::get(d, quarantined).await.expect("get").is_some());
    assert!(inbox::get(d, recent).await.expect("get").is_some());
    // archived rows keep every column
    let archived = fetch_one(
        d,
        &sql("SELECT count(*) AS n, min(attempts) AS a, bool_and(status = 'processed') AS all_processed FROM inbox_archive"),
        &params! {},
    )
    .await
    .expect("archive");
    assert_eq!(archived.i64("n").expect("n"), 3);
    assert_eq!(archived.i64("a").expect("a"), 1);
    assert!(archived.bool("all_processed").expect("status"));
}

async fn a_duplicate_racing_an_uncommitted_insert_learns_the_winners_id(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let tx = db.begin().await.expect("begin");
    let winner = inbox::insert_if_new(tx.as_ref(), &event("acme", "evt_slow"), at(0))
        .await
        .expect("insert in tx");
    assert!(winner.is_new());
    // The second insert waits for the first transaction to decide...
    let racer = {
        let db = db.clone();
        tokio::spawn(async move {
            inbox::insert_if_new(db.as_ref(), &event("acme", "evt_slow"), at(1)).await
        })
    };
    // ...which we see in pg_stat_activity (readiness, not a timed sleep).
    let waiting = sql("SELECT count(*) AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'");
    loop {
        let n = fetch_one(db.as_ref(), &waiting, &params! {})
            .await
            .expect("activity")
            .i64("n")
            .expect("n");
        if n > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    tx.commit().await.expect("commit");
    // Its snapshot predates the commit, so the statement alone finds no row;
    // the repository still answers with the winner's id.
    let raced = racer.await.expect("join").expect("insert");
    assert_eq!(raced, Inserted::Duplicate(winner.id()));
    assert_eq!(count(db.as_ref(), "event_id = 'evt_slow'").await, 1);
}

async fn a_row_locked_by_another_transaction_is_busy_and_the_others_are_claimed(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let locked = new_row(db.as_ref(), "locked", 0).await;
    let free = new_row(db.as_ref(), "free", 0).await;
    // another transaction holds the row (a processor committing it, a replay)
    let other = db.begin().await.expect("begin");
    other
        .execute(
            &sql("SELECT id FROM inbox WHERE id = :id FOR UPDATE"),
            &params! { "id" => locked },
        )
        .await
        .expect("lock the row");
    // before: the claim waited for the lock (45 s on the Data API) and held
    // the whole batch; a guard keeps a regression from hanging the suite
    let claims = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        inbox::claim(db.as_ref(), &[locked, free], at(1), at(60)),
    )
    .await
    .expect("the claim does not wait for the lock")
    .expect("claim");
    assert_eq!(claims.len(), 2);
    for claim in &claims {
        match claim {
            Claim::Busy { id } => assert_eq!(*id, locked),
            Claim::Claimed { token, .. } => assert_eq!(token.id, free),
            other => panic!("unexpected {other:?}"),
        }
    }
    other.rollback().await.expect("rollback");
    // once released, it is claimable
    let token = claim_one(db.as_ref(), locked, 2, 60).await;
    assert_eq!(token.attempt, 1);
}

async fn a_row_still_queued_behind_a_backlog_is_swept_at_doubling_intervals(adapter: Adapter) {
    // Its message is on the queue, behind a slow processor: each sweep adds
    // a message. Every 5 minutes for 4 hours would be 48 of them.
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let id = new_row(d, "queued", 0).await;
    let mut sent_at = Vec::new();
    for t in (0..=4 * 3600).step_by(60) {
        let swept = inbox::sweep_stranded(d, at(t), Duration::seconds(300), 100)
            .await
            .expect("sweep");
        if swept.iter().any(|r| r.id == id) {
            sent_at.push(t);
        }
    }
    assert_eq!(sent_at, [300, 600, 1200, 2400, 4800, 8400, 12000]);
}

for_each_adapter!(
    insert_if_new_stores_the_event_verbatim_once,
    fifty_concurrent_inserts_of_one_event_make_one_row_and_one_new,
    claim_leases_active_rows_in_one_statement_and_reports_the_rest,
    status_changes_need_the_current_lease,
    defer_retry_quarantine_and_dead_leave_the_expected_rows,
    sweeper_returns_overdue_rows_once_per_grace_period,
    counts_and_oldest_active_reflect_the_rows,
    retention_deletes_or_archives_old_processed_rows_in_bounded_batches,
    a_duplicate_racing_an_uncommitted_insert_learns_the_winners_id,
    a_row_locked_by_another_transaction_is_busy_and_the_others_are_claimed,
    a_row_still_queued_behind_a_backlog_is_swept_at_doubling_intervals,
);
