//! Bulk replay (`hookbox::admin::replay_page`) through both adapters: one
//! destination's delivered and dead rows of a time range go back to
//! pending, page by page, pending rows and other destinations untouched,
//! whatever order the rows were written in; and each page walks
//! `outbox_seq_key`, a bounded number of rows.

mod common;

use common::{Adapter, assert_uses, at, load_history, migrated_db, plan, sql};
use hookbox::admin::{self, ReplayRange};
use hookbox::outbox::OutboxStatus;
use hookbox::params;
use hookbox::store::{Executor, fetch_one};
use uuid::Uuid;

/// A row for `destination` created at `at(t)`, left in `status` (a finished
/// one after one attempt).
async fn row(db: &dyn Executor, destination: &str, t: i64, status: &str) -> Uuid {
    let id = fetch_one(
        db,
        &sql(
            "SELECT hookbox_publish('order.paid', jsonb_build_object('t', CAST(:t AS bigint)),
                                     'order', 'o-' || :t, :destination) AS id",
        ),
        &params! { "t" => t, "destination" => destination },
    )
    .await
    .expect("publish")
    .uuid("id")
    .expect("id");
    db.execute(
        &sql("UPDATE outbox SET created_at = :at, next_attempt_at = :at,
                    status = :status,
                    attempts = CASE WHEN :status = 'pending' THEN 0 ELSE 1 END,
                    processed_at = CASE WHEN :status = 'pending' THEN NULL
                                        ELSE CAST(:at AS timestamptz) END
              WHERE id = :id"),
        &params! { "at" => at(t), "status" => status, "id" => id },
    )
    .await
    .expect("set status");
    id
}

async fn state(db: &dyn Executor, id: Uuid) -> (String, i64) {
    let r = fetch_one(
        db,
        &sql("SELECT status, attempts FROM outbox WHERE id = :id"),
        &params! { "id" => id },
    )
    .await
    .expect("row");
    (
        r.text("status").expect("status"),
        r.i64("attempts").expect("attempts"),
    )
}

/// Walks every page of `range` (pages of `limit` rows looked at); returns
/// the rows replayed and the pages walked.
async fn replay_all(db: &dyn Executor, range: &ReplayRange, limit: i64) -> (u64, u32) {
    let (mut replayed, mut pages) = (0, 0);
    let mut walk = admin::plan_replay(db, range).await.expect("plan").walk;
    while let Some(at_) = walk {
        let page = admin::replay_page(db, range, at_, limit, at(1_000))
            .await
            .expect("replay page");
        assert!(
            page.scanned <= u64::try_from(limit).expect("limit"),
            "a page is bounded"
        );
        replayed += page.replayed;
        pages += 1;
        assert!(pages < 100, "the walk ends");
        walk = page.next;
    }
    (replayed, pages)
}

async fn a_replay_takes_one_destinations_rows_of_the_range_page_by_page(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let before = row(d, "crm", 10, "delivered").await;
    let dead = row(d, "crm", 20, "dead").await;
    let delivered = row(d, "crm", 30, "delivered").await;
    let pending = row(d, "crm", 40, "pending").await;
    let dead_later = row(d, "crm", 45, "dead").await;
    let after = row(d, "crm", 50, "delivered").await;
    let other = row(d, "erp", 30, "delivered").await;

    let dead_only = ReplayRange {
        destination: "crm".into(),
        since: at(0),
        until: Some(at(25)),
        statuses: vec![OutboxStatus::Dead],
    };
    assert_eq!(
        admin::count_replayable(d, &dead_only).await.expect("count"),
        1
    );
    assert_eq!(replay_all(d, &dead_only, 100).await.0, 1);
    assert_eq!(state(d, dead).await, ("pending".into(), 0));
    assert_eq!(state(d, before).await, ("delivered".into(), 1), "not dead");

    let range = ReplayRange {
        destination: "crm".into(),
        since: at(15),
        until: Some(at(50)),
        statuses: vec![OutboxStatus::Delivered, OutboxStatus::Dead],
    };
    assert_eq!(admin::count_replayable(d, &range).await.expect("count"), 2);
    // the span of crm's rows in the range, in seq order: 20 (now pending),
    // 30, 40 (pending), 45; pages of 2: [20, 30], [40, 45]
    let (replayed, pages) = replay_all(d, &range, 2).await;
    assert_eq!((replayed, pages), (2, 2));
    for id in [delivered, dead_later] {
        assert_eq!(state(d, id).await, ("pending".into(), 0));
    }
    assert_eq!(state(d, pending).await, ("pending".into(), 0));
    assert_eq!(
        state(d, after).await,
        ("delivered".into(), 1),
        "--until is exclusive"
    );
    assert_eq!(
        state(d, other).await,
        ("delivered".into(), 1),
        "another destination"
    );
    let due = fetch_one(
        d,
        &sql("SELECT count(*) AS n FROM outbox
               WHERE id IN (:a, :b) AND next_attempt_at = :now AND processed_at IS NULL
                 AND locked_by IS NULL"),
        &params! { "a" => delivered, "b" => dead_later, "now" => at(1_000) },
    )
    .await
    .expect("due")
    .i64("n")
    .expect("n");
    assert_eq!(due, 2, "due at once, as new");
    assert_eq!(admin::count_replayable(d, &range).await.expect("count"), 0);
}

/// Rows are not always written in `created_at` order (a publisher's clock,
/// a long transaction): the walk covers the span of `seq` the range's rows
/// have, so a row written late with an early time is replayed, and rows of
/// other destinations inside the span are looked at and left alone.
async fn a_replay_finds_rows_written_out_of_time_order(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let early = row(d, "crm", 100, "delivered").await;
    for t in [110, 120, 130] {
        row(d, "erp", t, "delivered").await;
    }
    let late_but_early = row(d, "crm", 50, "dead").await;
    let outside = row(d, "crm", 10, "delivered").await;
    let range = ReplayRange {
        destination: "crm".into(),
        since: at(40),
        until: Some(at(200)),
        statuses: vec![OutboxStatus::Delivered, OutboxStatus::Dead],
    };
    let plan = admin::plan_replay(d, &range).await.expect("plan");
    assert_eq!(plan.replayable, 2);
    let (replayed, pages) = replay_all(d, &range, 2).await;
    // the span: crm 100, erp 110, 120, 130, crm 50 (written last)
    assert_eq!((replayed, pages), (2, 3));
    for id in [early, late_but_early] {
        assert_eq!(state(d, id).await, ("pending".into(), 0));
    }
    assert_eq!(state(d, outside).await, ("delivered".into(), 1));
    let erp_delivered = common::count(
        d,
        "SELECT count(*) AS n FROM outbox WHERE destination = 'erp' AND status = 'delivered'",
    )
    .await;
    assert_eq!(erp_delivered, 3, "other destinations untouched");
}

/// With 20,000 finished rows a page walks the `seq` index from where the
/// last stopped: no sequential scan, never the whole history per page.
async fn a_replay_page_walks_the_seq_index(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await;
    // the history: 20,000 finished rows of erp
    let since = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let range = ReplayRange {
        destination: "erp".into(),
        since,
        until: None,
        statuses: vec![OutboxStatus::Delivered, OutboxStatus::Dead],
    };
    let p = hookbox::params! {
        "destination" => "erp", "since" => since, "until" => None::<chrono::DateTime<chrono::Utc>>,
        "statuses" => serde_json::json!(["delivered", "dead"]),
        "after_seq" => 0_i64, "last_seq" => i64::MAX,
        "limit" => 100_i64, "now" => at(0),
    };
    let page_plan = plan(d, &admin::OUTBOX_REPLAY_PAGE, &p).await;
    assert_uses(&page_plan, "outbox_seq_key", "outbox");
    let planned = admin::plan_replay(d, &range).await.expect("plan");
    assert_eq!(planned.replayable, 20_000);
    let walk = planned.walk.expect("a walk");
    let page = admin::replay_page(d, &range, walk, 100, at(0))
        .await
        .expect("page");
    assert_eq!((page.scanned, page.seen, page.replayed), (100, 100, 100));
    assert!(page.next.is_some(), "more to walk");
}

for_each_adapter!(
    a_replay_takes_one_destinations_rows_of_the_range_page_by_page,
    a_replay_finds_rows_written_out_of_time_order,
    a_replay_page_walks_the_seq_index,
);
