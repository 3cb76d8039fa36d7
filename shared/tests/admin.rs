//! Operator statements (`hookbox::admin`) against real PostgreSQL, through
//! both adapters: listings by status with keyset paging, the id pages bulk
//! operations walk, the retry of dead outbox rows, and the indexes each
//! statement uses.

mod common;

use std::collections::HashSet;

use common::{Adapter, assert_uses, at, load_history, migrated_db, plan, sql};
use hookbox::admin::{
    self, AttentionStatus, InboxCursor, InboxFilter, OutboxCursor, OutboxFilter, OutboxRetry,
};
use hookbox::inbox::{self, Claim, InboxStatus, NewInboxEvent};
use hookbox::outbox::{self, DeliveryOutcome, DeliveryResult, NewOutboxEvent, OutboxStatus};
use hookbox::params;
use hookbox::store::{Database, Executor};
use uuid::Uuid;

fn event(partner: &str, event_id: &str) -> NewInboxEvent {
    NewInboxEvent {
        partner: partner.into(),
        event_id: event_id.into(),
        event_id_derived: false,
        event_type: Some("payment.received".into()),
        ordering_key: None,
        body: hookbox::inbox::Body::Inline(br#"{"a":1}"#.to_vec()),
        headers: serde_json::json!({"webhook-id": event_id}),
        signature_verified: true,
    }
}

/// A row received at `at(t)`, then left in `status` (claimed and finished
/// at `at(t + 1)` when it is not pending).
async fn inbox_row(db: &dyn Database, partner: &str, event_id: &str, t: i64, status: &str) -> Uuid {
    let id = inbox::insert_if_new(db, &event(partner, event_id), at(t))
        .await
        .expect("insert")
        .id();
    if status == "pending" {
        return id;
    }
    let token = match inbox::claim(db, &[id], at(t + 1), at(t + 31))
        .await
        .expect("claim")
        .as_slice()
    {
        [Claim::Claimed { token, .. }] => *token,
        other => panic!("expected a claim, got {other:?}"),
    };
    let changed = match status {
        "processing" => Ok(true),
        "processed" => inbox::mark_processed(db, token, at(t + 1)).await,
        "quarantined" => {
            inbox::mark_quarantined(db, token, at(t + 1), &format!("poison {event_id}")).await
        }
        "dead" => inbox::mark_dead(db, token, at(t + 1), &format!("gave up {event_id}")).await,
        other => panic!("no such status {other}"),
    }
    .expect("status change");
    assert!(changed, "{event_id} → {status}");
    id
}

fn outbox_event(destination: &str, aggregate_id: &str) -> NewOutboxEvent {
    NewOutboxEvent {
        aggregate_type: "order".into(),
        aggregate_id: aggregate_id.into(),
        event_type: "order.paid".into(),
        destination: destination.into(),
        payload: serde_json::json!({"order_id": aggregate_id}),
    }
}

/// An outbox row created at `at(t)`; `dead`/`delivered` after one attempt at
/// `at(t + 1)` (dead with a 500 and an error text).
async fn outbox_row(
    db: &dyn Database,
    destination: &str,
    aggregate_id: &str,
    t: i64,
    status: &str,
) -> Uuid {
    let tx = db.begin().await.expect("begin");
    let id = outbox::enqueue(tx.as_ref(), &outbox_event(destination, aggregate_id), at(t))
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    if status == "pending" {
        return id;
    }
    // claim exactly this row: move every other pending row out of the way first
    db.execute(
        &sql(
            "UPDATE outbox SET next_attempt_at = next_attempt_at + interval '100 years'
               WHERE status = 'pending' AND id <> :id",
        ),
        &params! { "id" => id },
    )
    .await
    .expect("park others");
    let claimed = outbox::claim_due(db, common::claim("w", at(t + 1), at(t + 31), 10))
        .await
        .expect("claim");
    assert_eq!(claimed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
    let (outcome, code, error) = match status {
        "dead" => (
            DeliveryOutcome::Dead,
            Some(500),
            Some(format!("HTTP 500 for {aggregate_id}")),
        ),
        "delivered" => (DeliveryOutcome::Delivered, Some(200), None),
        other => panic!("no such status {other}"),
    };
    let n = outbox::record_results(
        db,
        "w",
        at(t + 1),
        &[DeliveryResult {
            id,
            outcome,
            status_code: code,
            error,
            attempt: None,
        }],
    )
    .await
    .expect("record");
    assert_eq!(n, 1);
    db.execute(
        &sql(
            "UPDATE outbox SET next_attempt_at = next_attempt_at - interval '100 years'
               WHERE status = 'pending' AND next_attempt_at > timestamptz '2100-01-01'",
        ),
        &params! {},
    )
    .await
    .expect("unpark others");
    id
}

fn filter(status: InboxStatus, partner: Option<&str>) -> InboxFilter {
    InboxFilter {
        status,
        partner: partner.map(str::to_owned),
    }
}

async fn all_inbox_pages(db: &dyn Executor, f: &InboxFilter, page: i64) -> (Vec<Uuid>, usize) {
    let mut after = InboxCursor::start();
    let mut ids = Vec::new();
    let mut pages = 0;
    loop {
        let rows = admin::list_inbox(db, f, after, page).await.expect("list");
        pages += 1;
        assert!(rows.len() as i64 <= page, "page bounded");
        let Some(last) = rows.last() else { break };
        after = last.cursor();
        ids.extend(rows.iter().map(|r| r.id));
    }
    (ids, pages)
}

async fn inbox_listing_filters_by_status_and_partner_oldest_first(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let q1 = inbox_row(d, "acme", "q1", 10, "quarantined").await;
    let q2 = inbox_row(d, "globex", "q2", 20, "quarantined").await;
    let q3 = inbox_row(d, "acme", "q3", 30, "quarantined").await;
    let dead = inbox_row(d, "acme", "d1", 15, "dead").await;
    let pending = inbox_row(d, "acme", "p1", 5, "pending").await;
    let processing = inbox_row(d, "acme", "w1", 6, "processing").await;
    let processed = inbox_row(d, "acme", "ok1", 7, "processed").await;

    let quarantined = admin::list_inbox(
        d,
        &filter(InboxStatus::Quarantined, None),
        InboxCursor::start(),
        50,
    )
    .await
    .expect("list");
    assert_eq!(
        quarantined.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![q1, q2, q3]
    );
    let first = &quarantined[0];
    assert_eq!(first.partner, "acme");
    assert_eq!(first.event_id, "q1");
    assert_eq!(first.event_type.as_deref(), Some("payment.received"));
    assert_eq!(first.status, InboxStatus::Quarantined);
    assert_eq!(first.attempts, 1);
    assert_eq!(first.received_at, at(10));
    assert_eq!(first.last_error.as_deref(), Some("poison q1"));

    let acme = admin::list_inbox(
        d,
        &filter(InboxStatus::Quarantined, Some("acme")),
        InboxCursor::start(),
        50,
    )
    .await
    .expect("list");
    assert_eq!(acme.iter().map(|r| r.id).collect::<Vec<_>>(), vec![q1, q3]);
    let none = admin::list_inbox(
        d,
        &filter(InboxStatus::Quarantined, Some("nobody")),
        InboxCursor::start(),
        50,
    )
    .await
    .expect("list");
    assert!(none.is_empty());

    for (status, want) in [
        (InboxStatus::Dead, vec![dead]),
        (InboxStatus::Pending, vec![pending]),
        (InboxStatus::Processing, vec![processing]),
        (InboxStatus::Processed, vec![processed]),
        (InboxStatus::Deferred, vec![]),
    ] {
        let got = admin::list_inbox(d, &filter(status, None), InboxCursor::start(), 50)
            .await
            .expect("list");
        assert_eq!(
            got.iter().map(|r| r.id).collect::<Vec<_>>(),
            want,
            "{status}"
        );
        assert!(got.iter().all(|r| r.status == status));
    }
}

async fn inbox_listing_pages_through_every_row_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let mut quarantined = Vec::new();
    let mut processed = Vec::new();
    // several rows share a received_at: the id breaks the tie
    for i in 0..7 {
        quarantined.push(inbox_row(d, "acme", &format!("q{i}"), 100 + i / 3, "quarantined").await);
        processed.push(inbox_row(d, "acme", &format!("p{i}"), 200 + i, "processed").await);
    }
    let (ids, pages) = all_inbox_pages(d, &filter(InboxStatus::Quarantined, None), 3).await;
    assert_eq!(pages, 4, "3 + 3 + 1, then an empty page");
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 7, "no row twice");
    assert_eq!(
        ids.iter().collect::<HashSet<_>>(),
        quarantined.iter().collect::<HashSet<_>>()
    );
    // processed rows page by their time-ordered ids: insertion order
    let (ids, _) = all_inbox_pages(d, &filter(InboxStatus::Processed, None), 2).await;
    assert_eq!(ids, processed);
    // the limit is clamped, never unbounded
    let rows = admin::list_inbox(
        d,
        &filter(InboxStatus::Quarantined, None),
        InboxCursor::start(),
        0,
    )
    .await
    .expect("list");
    assert_eq!(rows.len(), 1);
}

async fn attention_ids_page_by_status_and_partner(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let a1 = inbox_row(d, "acme", "a1", 1, "dead").await;
    let _g1 = inbox_row(d, "globex", "g1", 2, "dead").await;
    let a2 = inbox_row(d, "acme", "a2", 3, "dead").await;
    let _q = inbox_row(d, "acme", "q", 4, "quarantined").await;
    let a3 = inbox_row(d, "acme", "a3", 5, "dead").await;

    let first = admin::inbox_attention_ids(
        d,
        AttentionStatus::Dead,
        Some("acme"),
        InboxCursor::start(),
        2,
    )
    .await
    .expect("page 1");
    assert_eq!(first.iter().map(|c| c.id).collect::<Vec<_>>(), vec![a1, a2]);
    assert_eq!(first[1].received_at, at(3));
    let second = admin::inbox_attention_ids(d, AttentionStatus::Dead, Some("acme"), first[1], 2)
        .await
        .expect("page 2");
    assert_eq!(second.iter().map(|c| c.id).collect::<Vec<_>>(), vec![a3]);
    let third = admin::inbox_attention_ids(d, AttentionStatus::Dead, Some("acme"), second[0], 2)
        .await
        .expect("page 3");
    assert!(third.is_empty());
    let all_dead =
        admin::inbox_attention_ids(d, AttentionStatus::Dead, None, InboxCursor::start(), 10)
            .await
            .expect("all dead");
    assert_eq!(all_dead.len(), 4);
    let quarantined = admin::inbox_attention_ids(
        d,
        AttentionStatus::Quarantined,
        None,
        InboxCursor::start(),
        10,
    )
    .await
    .expect("quarantined");
    assert_eq!(quarantined.len(), 1);
}

async fn outbox_listing_filters_and_pages(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let dead1 = outbox_row(d, "erp", "o1", 10, "dead").await;
    let pending = outbox_row(d, "erp", "o2", 20, "pending").await;
    let dead2 = outbox_row(d, "crm", "o3", 30, "dead").await;
    let delivered = outbox_row(d, "erp", "o4", 40, "delivered").await;
    let dead3 = outbox_row(d, "erp", "o5", 50, "dead").await;

    let list = |status: Option<OutboxStatus>, destination: Option<&str>| OutboxFilter {
        status,
        destination: destination.map(str::to_owned),
    };
    let ids = |rows: Vec<admin::OutboxSummary>| rows.iter().map(|r| r.id).collect::<Vec<_>>();

    let dead = admin::list_outbox(
        d,
        &list(Some(OutboxStatus::Dead), None),
        OutboxCursor::start(),
        50,
    )
    .await
    .expect("dead");
    assert_eq!(dead[0].destination, "erp");
    assert_eq!(dead[0].aggregate_id, "o1");
    assert_eq!(dead[0].attempts, 1);
    assert_eq!(dead[0].last_status_code, Some(500));
    assert_eq!(dead[0].last_error.as_deref(), Some("HTTP 500 for o1"));
    assert_eq!(dead[0].created_at, at(10));
    assert_eq!(ids(dead), vec![dead1, dead2, dead3]);

    let erp_dead = admin::list_outbox(
        d,
        &list(Some(OutboxStatus::Dead), Some("erp")),
        OutboxCursor::start(),
        50,
    )
    .await
    .expect("erp dead");
    assert_eq!(ids(erp_dead), vec![dead1, dead3]);

    let page1 = admin::list_outbox(
        d,
        &list(Some(OutboxStatus::Dead), None),
        OutboxCursor::start(),
        2,
    )
    .await
    .expect("page 1");
    let page2 = admin::list_outbox(
        d,
        &list(Some(OutboxStatus::Dead), None),
        page1[1].cursor(),
        2,
    )
    .await
    .expect("page 2");
    assert_eq!(ids(page1), vec![dead1, dead2]);
    assert_eq!(ids(page2), vec![dead3]);

    for (status, want) in [
        (Some(OutboxStatus::Pending), vec![pending]),
        (Some(OutboxStatus::Delivered), vec![delivered]),
        (None, vec![dead1, pending, dead2, delivered, dead3]),
    ] {
        let got = admin::list_outbox(d, &list(status, None), OutboxCursor::start(), 50)
            .await
            .expect("list");
        assert_eq!(ids(got), want, "{status:?}");
    }
    let all_erp = admin::list_outbox(d, &list(None, Some("erp")), OutboxCursor::start(), 2)
        .await
        .expect("erp page 1");
    let rest = admin::list_outbox(d, &list(None, Some("erp")), all_erp[1].cursor(), 50)
        .await
        .expect("erp rest");
    assert_eq!(ids(all_erp), vec![dead1, pending]);
    assert_eq!(ids(rest), vec![delivered, dead3]);

    let dead_ids = admin::outbox_dead_ids(d, Some("erp"), OutboxCursor::start(), 1)
        .await
        .expect("dead ids");
    assert_eq!(
        dead_ids.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![dead1]
    );
    let next = admin::outbox_dead_ids(d, Some("erp"), dead_ids[0].1, 10)
        .await
        .expect("next dead ids");
    assert_eq!(
        next.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![dead3]
    );
}

async fn retry_puts_only_dead_outbox_rows_back_to_pending(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let dead = outbox_row(d, "erp", "o1", 10, "dead").await;
    let pending = outbox_row(d, "erp", "o2", 20, "pending").await;
    let delivered = outbox_row(d, "erp", "o3", 30, "delivered").await;
    let missing = Uuid::now_v7();
    let before_delivered = outbox::get(d, delivered).await.expect("get").expect("row");

    let outcomes = admin::retry_dead_outbox(d, &[dead, pending, delivered, missing, dead], at(100))
        .await
        .expect("retry");
    assert_eq!(
        outcomes,
        vec![
            OutboxRetry::Retried { id: dead },
            OutboxRetry::NotRetryable {
                id: pending,
                status: OutboxStatus::Pending
            },
            OutboxRetry::NotRetryable {
                id: delivered,
                status: OutboxStatus::Delivered
            },
            OutboxRetry::Missing { id: missing },
        ]
    );
    let row = outbox::get(d, dead).await.expect("get").expect("row");
    assert_eq!(row.status, OutboxStatus::Pending);
    assert_eq!(row.attempts, 0);
    assert_eq!(row.next_attempt_at, at(100));
    assert_eq!(row.processed_at, None);
    assert_eq!(row.locked_by, None);
    assert_eq!(
        row.last_error.as_deref(),
        Some("HTTP 500 for o1"),
        "kept until the next attempt"
    );
    assert_eq!(row.last_status_code, Some(500));
    // only dead rows change
    assert_eq!(
        outbox::get(d, delivered).await.expect("get").expect("row"),
        before_delivered
    );
    assert_eq!(
        outbox::get(d, pending)
            .await
            .expect("get")
            .expect("row")
            .next_attempt_at,
        at(20)
    );

    // the relay picks it up at once; a second retry finds nothing to do
    let due = outbox::claim_due(d, common::claim("w2", at(100), at(130), 10))
        .await
        .expect("claim");
    assert!(due.iter().any(|r| r.id == dead));
    let again = admin::retry_dead_outbox(d, &[dead], at(101))
        .await
        .expect("again");
    assert_eq!(
        again,
        vec![OutboxRetry::NotRetryable {
            id: dead,
            status: OutboxStatus::Pending
        }]
    );
    assert!(
        admin::retry_dead_outbox(d, &[], at(101))
            .await
            .expect("empty")
            .is_empty()
    );
}

/// 20,000 finished rows of history and a few rows of each status, analyzed:
/// every operator statement reads through its index, never the whole table.
async fn admin_statements_use_their_indexes(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    load_history(d).await;
    let start = InboxCursor::start();
    let inbox_page = |status: &'static str| {
        params! {
            "status" => status, "partner" => None::<String>,
            "after_at" => start.received_at, "after_id" => start.id, "limit" => 100_i64,
        }
    };
    for (statement, status, index) in [
        (
            &admin::INBOX_LIST_ATTENTION,
            "quarantined",
            "inbox_attention",
        ),
        (&admin::INBOX_LIST_ATTENTION, "dead", "inbox_attention"),
        (&admin::INBOX_ATTENTION_IDS, "dead", "inbox_attention"),
        (
            &admin::INBOX_LIST_ACTIVE,
            "pending",
            "inbox_active_received",
        ),
    ] {
        let p = plan(d, statement, &inbox_page(status)).await;
        assert_uses(&p, index, "inbox");
    }
    let processed = plan(
        d,
        &admin::INBOX_LIST_PROCESSED,
        &params! { "partner" => None::<String>, "after_id" => Uuid::nil(), "limit" => 100_i64 },
    )
    .await;
    assert_uses(&processed, "inbox_pkey", "inbox");

    let outbox_page = params! {
        "destination" => None::<String>, "after_at" => OutboxCursor::start().created_at,
        "after_seq" => 0_i64, "limit" => 100_i64,
    };
    for (statement, index) in [
        (&admin::OUTBOX_LIST_DEAD, "outbox_dead"),
        (&admin::OUTBOX_DEAD_IDS, "outbox_dead"),
        (&admin::OUTBOX_LIST_PENDING, "outbox_pending_created"),
    ] {
        let p = plan(d, statement, &outbox_page).await;
        assert_uses(&p, index, "outbox");
    }
    let by_seq = plan(
        d,
        &admin::OUTBOX_LIST_BY_SEQ,
        &params! {
            "status" => None::<String>, "destination" => None::<String>,
            "after_seq" => 0_i64, "limit" => 100_i64,
        },
    )
    .await;
    assert_uses(&by_seq, "outbox_seq_key", "outbox");
    let ids = serde_json::json!([Uuid::now_v7().to_string(), Uuid::now_v7().to_string()]);
    let retry = plan(
        d,
        &admin::OUTBOX_RETRY_DEAD,
        &params! { "ids" => ids, "now" => at(0) },
    )
    .await;
    assert_uses(&retry, "outbox_pkey", "outbox");
    assert!(
        !retry.contains("outbox_dead"),
        "retry goes by key, not through every dead row:\n{retry}"
    );
}

for_each_adapter!(
    admin_statements_use_their_indexes,
    attention_ids_page_by_status_and_partner,
    inbox_listing_filters_by_status_and_partner_oldest_first,
    inbox_listing_pages_through_every_row_once,
    outbox_listing_filters_and_pages,
    retry_puts_only_dead_outbox_rows_back_to_pending,
);
