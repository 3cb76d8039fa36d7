//! The inbox's row budget: every inbox, processor and admin statement driven
//! with maximum-size inputs (every column at the largest value ingest lets
//! through, the body at the largest inline threshold, the longest
//! `last_error`), through both adapters. Through the local Data API, which
//! refuses result rows over 64 KB and responses over 1 MiB as the service
//! does, none is refused.

mod common;
mod processing_support;

use common::{Adapter, at, migrated_db};
use hookbox::admin::{self, AttentionStatus, InboxCursor, InboxFilter};
use hookbox::clock::Clock as _;
use hookbox::inbox::body::MAX_INLINE_MAX_BYTES;
use hookbox::inbox::ingest::{
    MAX_EVENT_ID_BYTES, MAX_EVENT_TYPE_BYTES, MAX_ORDERING_KEY_BYTES, MAX_STORED_HEADERS_BYTES,
};
use hookbox::inbox::repo::MAX_LAST_ERROR_BYTES;
use hookbox::inbox::{self, Body, Claim, InboxStatus, NewInboxEvent, Retention};
use hookbox::processing::{self, ReplayOutcome};
use processing_support::Harness;
use uuid::Uuid;

/// `n` bytes of multi-byte text (3-byte characters, then ASCII).
fn text(n: usize) -> String {
    let mut s = "€".repeat(n / 3);
    s.push_str(&"x".repeat(n - s.len()));
    s
}

/// A row at the top of every bound.
fn largest(partner: &str, i: usize) -> NewInboxEvent {
    let mut event_id = text(MAX_EVENT_ID_BYTES - 8);
    event_id.push_str(&format!("{i:08}"));
    // stored headers as ingest builds them, at their budget
    let value = "h".repeat(MAX_STORED_HEADERS_BYTES - 40);
    NewInboxEvent {
        partner: partner.into(),
        event_id,
        event_id_derived: false,
        event_type: Some(text(MAX_EVENT_TYPE_BYTES)),
        ordering_key: Some(text(MAX_ORDERING_KEY_BYTES)),
        body: Body::Inline(vec![b'b'; MAX_INLINE_MAX_BYTES]),
        headers: serde_json::json!({ "user-agent": value }),
        signature_verified: true,
    }
}

async fn every_inbox_statement_takes_the_largest_rows(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let d = db.as_ref();
    let partner = "p".repeat(64);
    let mut ids = Vec::new();
    for i in 0..inbox::MAX_CLAIM_IDS {
        let id = inbox::insert_if_new(d, &largest(&partner, i), at(0))
            .await
            .expect("insert the largest row")
            .id();
        ids.push(id);
    }
    // a duplicate insert returns the existing id
    assert_eq!(
        inbox::insert_if_new(d, &largest(&partner, 0), at(0))
            .await
            .expect("duplicate")
            .id(),
        ids[0]
    );
    let row = inbox::get(d, ids[0]).await.expect("get").expect("row");
    assert_eq!(row.body.len(), MAX_INLINE_MAX_BYTES as u64);

    // a whole batch claimed in one statement, then failed with the longest error
    let error = "e".repeat(3 * MAX_LAST_ERROR_BYTES);
    let claims = inbox::claim(d, &ids, at(1), at(100)).await.expect("claim");
    assert_eq!(claims.len(), ids.len());
    for claim in claims {
        let Claim::Claimed { token, .. } = claim else {
            panic!("claimed: {claim:?}");
        };
        assert!(
            inbox::mark_retry(d, token, at(2), &error)
                .await
                .expect("retry")
        );
    }
    let row = inbox::get(d, ids[0]).await.expect("get").expect("row");
    assert_eq!(
        row.last_error.as_deref().map(str::len),
        Some(MAX_LAST_ERROR_BYTES),
        "cut to the bound"
    );
    // claimed again, now carrying the longest last_error too
    let claims = inbox::claim(d, &ids, at(3), at(100))
        .await
        .expect("claim again");
    let mut tokens = Vec::new();
    for claim in claims {
        let Claim::Claimed { token, .. } = claim else {
            panic!("claimed: {claim:?}");
        };
        tokens.push(token);
    }
    // in the order of `ids`
    tokens.sort_by_key(|t| ids.iter().position(|id| *id == t.id));
    assert!(
        inbox::mark_deferred(d, tokens[0], at(4), at(50), &error)
            .await
            .expect("defer")
    );
    assert!(
        inbox::mark_quarantined(d, tokens[1], at(4), &error)
            .await
            .expect("quarantine")
    );
    assert!(
        inbox::mark_dead(d, tokens[2], at(4), &error)
            .await
            .expect("dead")
    );
    assert!(
        inbox::mark_processed(d, tokens[3], at(4))
            .await
            .expect("processed")
    );
    assert!(
        inbox::quarantine_unreadable(d, ids[4], at(4), &error)
            .await
            .expect("quarantine unreadable")
    );

    // the sweeper, the stats, the operator's statements
    let stranded = inbox::sweep_stranded(d, at(10_000), chrono::Duration::seconds(60), 1_000)
        .await
        .expect("sweep");
    assert!(!stranded.is_empty());
    inbox::counts_by_status(d).await.expect("counts");
    inbox::oldest_active_received_at(d).await.expect("oldest");
    // a full page of the widest listed rows
    d.execute(
        &common::sql(
            "INSERT INTO inbox (id, partner, event_id, event_type, body, headers,
                                signature_verified, status, attempts, last_error,
                                received_at, processed_at)
             SELECT gen_random_uuid(), :partner, :event_id || lpad(CAST(n AS text), 8, '0'), :event_type,
                    '\\x00', '{}', true, 'quarantined', 1, :error,
                    CAST(:at AS timestamptz), CAST(:at AS timestamptz)
               FROM generate_series(1, CAST(:n AS integer)) AS n",
        ),
        &hookbox::params! {
            "partner" => partner.as_str(),
            "event_id" => format!("w{}", text(MAX_EVENT_ID_BYTES - 9)),
            "event_type" => text(MAX_EVENT_TYPE_BYTES),
            "error" => text(MAX_LAST_ERROR_BYTES),
            "at" => at(5),
            "n" => admin::MAX_PAGE,
        },
    )
    .await
    .expect("a page of wide rows");
    let filter = InboxFilter {
        status: InboxStatus::Quarantined,
        partner: Some(partner.clone()),
    };
    let page = admin::list_inbox(d, &filter, InboxCursor::start(), admin::MAX_PAGE)
        .await
        .expect("a full page fits one response");
    assert_eq!(page.len() as i64, admin::MAX_PAGE);
    for status in InboxStatus::ALL {
        let filter = InboxFilter {
            status,
            partner: Some(partner.clone()),
        };
        admin::list_inbox(d, &filter, InboxCursor::start(), admin::MAX_PAGE)
            .await
            .unwrap_or_else(|e| panic!("list {status}: {e}"));
    }
    for status in [AttentionStatus::Quarantined, AttentionStatus::Dead] {
        admin::inbox_attention_ids(
            d,
            status,
            Some(&partner),
            InboxCursor::start(),
            admin::MAX_PAGE,
        )
        .await
        .expect("attention ids");
    }
    assert!(matches!(
        processing::replay(d, &h.memory, h.clock.as_ref(), ids[1])
            .await
            .expect("replay"),
        ReplayOutcome::Enqueued { .. }
    ));

    // the processor over a batch of the largest rows: all claimed at once
    let mut fresh: Vec<Uuid> = Vec::new();
    for i in 100..100 + inbox::MAX_CLAIM_IDS {
        let mut event = largest(&partner, i);
        event.body = Body::Inline(vec![b'{'; 10]); // not an order: a poison pill
        fresh.push(
            inbox::insert_if_new(d, &event, h.clock.now())
                .await
                .expect("insert")
                .id(),
        );
    }
    for id in &fresh {
        h.send(&inbox::InboxMessage::stored(*id, &partner, "x"))
            .await;
    }
    let (_, report) = h.deliver().await;
    assert!(
        report
            .results
            .iter()
            .all(|r| !matches!(r.outcome, processing::MessageOutcome::Failed { .. })),
        "{report:?}"
    );

    // retention of the largest processed rows, both ways
    inbox::purge_finished(d, at(1_000_000), 1_000, Retention::Archive)
        .await
        .expect("archive");
    inbox::purge_finished(d, at(1_000_000), 1_000, Retention::Delete)
        .await
        .expect("delete");
}

/// The largest outbox row business code can write: every text column at its
/// bound, the payload at the inline threshold.
fn largest_outbox(i: usize) -> hookbox::outbox::NewOutboxEvent {
    let mut aggregate_id = text(hookbox::outbox::MAX_AGGREGATE_ID_BYTES - 8);
    aggregate_id.push_str(&format!("{i:08}"));
    let pad = "p".repeat(hookbox::inbox::body::DEFAULT_INLINE_MAX_BYTES - 40);
    hookbox::outbox::NewOutboxEvent {
        aggregate_type: text(hookbox::outbox::MAX_AGGREGATE_TYPE_BYTES),
        aggregate_id,
        event_type: text(hookbox::outbox::MAX_OUTBOX_EVENT_TYPE_BYTES),
        destination: "d".repeat(64),
        payload: serde_json::json!({ "pad": pad }),
    }
}

async fn every_outbox_statement_takes_the_largest_rows(adapter: Adapter) {
    use hookbox::admin::{OutboxCursor, OutboxFilter};
    use hookbox::outbox::{self, ClaimRequest, DeliveryOutcome, DeliveryResult, OutboxStatus};
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let n = 60; // 60 payloads of 32 KiB: about twice what one response carries
    let tx = db.begin().await.expect("begin");
    for i in 0..n {
        outbox::enqueue(tx.as_ref(), &largest_outbox(i), at(0))
            .await
            .expect("enqueue the largest row");
    }
    tx.commit().await.expect("commit");

    // claims stay inside one response, then the longest errors are recorded
    let error = "e".repeat(20_000);
    let mut claimed = 0;
    let mut dead = Vec::new();
    let mut round = 0;
    while claimed < n {
        round += 1;
        let worker = format!("relay-{round}");
        let batch = outbox::claim_batch(
            d,
            ClaimRequest {
                worker: &worker,
                now: at(1),
                lease_until: at(100),
                limit: 1_000,
                ordered_destinations: &[],
                destination_caps: &[],
            },
            outbox::repo::CLAIM_BUDGET_BYTES,
        )
        .await
        .expect("a claim inside the budget");
        assert!(batch.unreadable.is_empty());
        assert!(
            !batch.rows.is_empty() && batch.rows.len() < n,
            "{}",
            batch.rows.len()
        );
        claimed += batch.rows.len();
        let results: Vec<DeliveryResult> = batch
            .rows
            .iter()
            .map(|r| DeliveryResult {
                id: r.id,
                outcome: DeliveryOutcome::Dead,
                status_code: Some(500),
                error: Some(error.clone()),
                attempt: None,
            })
            .collect();
        dead.extend(batch.rows.iter().map(|r| r.id));
        outbox::record_results(d, &worker, at(2), &results)
            .await
            .expect("record the longest errors");
    }
    assert!(round >= 2, "more than one claim");
    let row = outbox::get(d, dead[0]).await.expect("get").expect("row");
    assert_eq!(row.status, OutboxStatus::Dead);

    // the operator's statements: a full page, the retry
    for status in [None, Some(OutboxStatus::Dead)] {
        let page = admin::list_outbox(
            d,
            &OutboxFilter {
                status,
                destination: None,
            },
            OutboxCursor::start(),
            admin::MAX_PAGE,
        )
        .await
        .expect("a page of the widest rows");
        assert_eq!(page.len(), n);
    }
    admin::outbox_dead_ids(d, None, OutboxCursor::start(), admin::MAX_PAGE)
        .await
        .expect("dead ids");
    let retried = admin::retry_dead_outbox(d, &dead, at(3))
        .await
        .expect("retry");
    assert_eq!(retried.len(), n);
    outbox::counts_by_status(d).await.expect("counts");
    outbox::pending_summary(d).await.expect("summary");
}

for_each_adapter!(
    every_inbox_statement_takes_the_largest_rows,
    every_outbox_statement_takes_the_largest_rows,
);
