//! The inbox statements the processor and the operator CLI added:
//! `insert_quarantined` and `replay`, through both adapters.

mod common;

use std::sync::Arc;

use common::{Adapter, at, migrated_db};
use hookbox::inbox::{self, Claim, InboxStatus, Inserted, NewInboxEvent, Replay};
use hookbox::store::Database;
use tokio::sync::Barrier;
use uuid::Uuid;

fn event(event_id: &str) -> NewInboxEvent {
    NewInboxEvent {
        partner: "_hookbox_unreadable".into(),
        event_id: event_id.into(),
        event_id_derived: true,
        event_type: None,
        ordering_key: None,
        body: hookbox::inbox::Body::Inline(vec![b'x', 0, 0xff]),
        headers: serde_json::json!({"sqs-message-id": "m-1"}),
        signature_verified: false,
    }
}

async fn quarantined_row(db: &dyn Database, event_id: &str) -> Uuid {
    match inbox::insert_quarantined(db, &event(event_id), at(0), "unreadable")
        .await
        .expect("insert")
    {
        Inserted::New(id) => id,
        other => panic!("expected new, got {other:?}"),
    }
}

async fn insert_quarantined_stores_the_row_quarantined_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let id = quarantined_row(db.as_ref(), "sha256:abc").await;
    let again = inbox::insert_quarantined(db.as_ref(), &event("sha256:abc"), at(9), "again")
        .await
        .expect("again");
    assert_eq!(again, Inserted::Duplicate(id));
    let row = inbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.status, InboxStatus::Quarantined);
    assert_eq!(row.attempts, 1);
    assert_eq!(
        row.last_error.as_deref(),
        Some("unreadable"),
        "first one kept"
    );
    assert_eq!(row.body.inline(), Some(&[b'x', 0, 0xff][..]));
    assert_eq!(row.next_attempt_at, None);
    assert_eq!(row.received_at, at(0));
    assert_eq!(row.processed_at, Some(at(0)));
    assert!(!row.signature_verified);
    // an ingested event with the same key is a duplicate of it, not a new row
    let dup = inbox::insert_if_new(db.as_ref(), &event("sha256:abc"), at(10))
        .await
        .expect("insert_if_new");
    assert_eq!(dup, Inserted::Duplicate(id));
}

async fn replay_puts_quarantined_and_dead_rows_back_to_pending_keeping_attempts(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let quarantined = quarantined_row(db.as_ref(), "q").await;
    let dead = match inbox::insert_if_new(db.as_ref(), &event("d"), at(0))
        .await
        .expect("insert")
    {
        Inserted::New(id) => id,
        other => panic!("{other:?}"),
    };
    let token = match inbox::claim(db.as_ref(), &[dead], at(1), at(61))
        .await
        .expect("claim")
        .as_slice()
    {
        [Claim::Claimed { token, .. }] => *token,
        other => panic!("{other:?}"),
    };
    assert!(
        inbox::mark_dead(db.as_ref(), token, at(2), "gave up")
            .await
            .expect("dead")
    );

    for (id, previous) in [
        (quarantined, InboxStatus::Quarantined),
        (dead, InboxStatus::Dead),
    ] {
        let replayed = inbox::replay(db.as_ref(), id, at(100))
            .await
            .expect("replay");
        assert_eq!(
            replayed,
            Replay::Replayed {
                id,
                partner: "_hookbox_unreadable".into(),
                event_id: if id == dead { "d" } else { "q" }.into(),
                previous,
            }
        );
        let row = inbox::get(db.as_ref(), id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(row.status, InboxStatus::Pending);
        assert_eq!(row.attempts, 1, "attempts keep counting");
        assert_eq!(row.next_attempt_at, Some(at(100)));
        assert_eq!(row.enqueued_at, Some(at(100)));
        assert_eq!(row.processed_at, None);
        assert_eq!(row.locked_until, None);
        assert!(row.last_error.is_some(), "kept until processed");
        // and the processor can claim it again, under a new attempt
        match inbox::claim(db.as_ref(), &[id], at(101), at(161))
            .await
            .expect("claim")
            .as_slice()
        {
            [Claim::Claimed { token, .. }] => assert_eq!(token.attempt, 2),
            other => panic!("{other:?}"),
        }
    }
    // the old token of the dead row cannot touch the replayed row
    assert!(
        !inbox::mark_processed(db.as_ref(), token, at(102))
            .await
            .expect("stale token")
    );
}

async fn replay_refuses_active_and_processed_rows_and_reports_missing_ones(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let pending = match inbox::insert_if_new(db.as_ref(), &event("p"), at(0))
        .await
        .expect("insert")
    {
        Inserted::New(id) => id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        inbox::replay(db.as_ref(), pending, at(1))
            .await
            .expect("replay"),
        Replay::NotReplayable {
            id: pending,
            status: InboxStatus::Pending
        }
    );
    let row = inbox::get(db.as_ref(), pending)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.enqueued_at, Some(at(0)), "untouched");
    let missing = Uuid::now_v7();
    assert_eq!(
        inbox::replay(db.as_ref(), missing, at(1))
            .await
            .expect("replay"),
        Replay::Missing { id: missing }
    );
}

async fn of_concurrent_replays_of_one_row_exactly_one_replays_it(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let id = quarantined_row(db.as_ref(), "race").await;
    let barrier = Arc::new(Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                inbox::replay(db.as_ref(), id, at(5)).await.expect("replay")
            })
        })
        .collect();
    let mut replayed = 0;
    for t in tasks {
        match t.await.expect("join") {
            Replay::Replayed { .. } => replayed += 1,
            Replay::NotReplayable { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(replayed, 1);
}

for_each_adapter!(
    insert_quarantined_stores_the_row_quarantined_once,
    replay_puts_quarantined_and_dead_rows_back_to_pending_keeping_attempts,
    replay_refuses_active_and_processed_rows_and_reports_missing_ones,
    of_concurrent_replays_of_one_row_exactly_one_replays_it,
);
