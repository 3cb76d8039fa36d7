//! The processor use case through both database adapters, the in-memory
//! queue (SQS semantics on a manual clock) and the example orders domain:
//! claims, one transaction per event, backoff, deferral, quarantine, dead
//! rows, panics, leases, spooled and unreadable messages, replay, and what a
//! message costs in statements.

mod common;
mod processing_support;

use std::time::Duration;

use chrono::TimeDelta;
use common::{Adapter, at, count, migrated_db, sql};
use hookbox::clock::Clock;
use hookbox::example::{self, OrderStatus, STATUS_CHANGED};
use hookbox::inbox::{self, InboxMessage, InboxStatus};
use hookbox::outbox;
use hookbox::params;
use hookbox::processing::{self, MessageOutcome, ReplayOutcome, UNREADABLE_PARTNER};
use hookbox::queue::{Queue, QueueConsumer, Received};
use hookbox::store::Executor;
use processing_support::{DESTINATION, Harness, PARTNER, Script, new_event, order_body};
use uuid::Uuid;

async fn outbox_rows(db: &dyn Executor) -> i64 {
    count(db, "SELECT count(*) AS n FROM outbox").await
}

async fn transitions(db: &dyn Executor) -> i64 {
    count(db, "SELECT count(*) AS n FROM example_order_transitions").await
}

async fn row(db: &dyn Executor, id: Uuid) -> inbox::InboxRow {
    inbox::get(db, id).await.expect("get").expect("row")
}

fn outcomes(report: &processing::BatchReport) -> Vec<&'static str> {
    report.results.iter().map(|r| r.outcome.kind()).collect()
}

async fn shipped_before_paid_in_separate_batches_converges_with_one_outbox_row_per_transition(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());

    let shipped = h.ingest_order("evt-ship", "order.shipped", "o-1").await;
    let (_, report) = h.deliver().await;
    assert_eq!(
        report.results[0].outcome,
        MessageOutcome::Deferred {
            reason: "order.shipped for order o-1: the order is not paid yet".into(),
            delay: Duration::from_secs(60),
        }
    );
    assert_eq!(report.retry_message_ids().len(), 1);
    assert_eq!(h.queue.delays(), [60]);
    let deferred = row(db.as_ref(), shipped).await;
    assert_eq!(deferred.status, InboxStatus::Deferred);
    assert_eq!(deferred.deferred_since, Some(at(0)));
    assert_eq!(deferred.next_attempt_at, Some(at(60)));
    assert!(
        example::get_order(db.as_ref(), "o-1")
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        outbox_rows(db.as_ref()).await,
        0,
        "a deferral writes nothing"
    );

    // the missing event arrives; the deferred message is still invisible
    h.advance(10);
    let paid = h.ingest_order("evt-pay", "payment.received", "o-1").await;
    let (got, report) = h.deliver().await;
    assert_eq!(got.len(), 1);
    assert_eq!(outcomes(&report), ["processed"]);
    assert_eq!(
        example::get_order(db.as_ref(), "o-1")
            .await
            .expect("get")
            .map(|o| o.status),
        Some(OrderStatus::Paid)
    );

    // the deferred one comes back after its backoff and converges
    h.advance(50);
    let (got, report) = h.deliver().await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].receive_count, 2);
    assert_eq!(outcomes(&report), ["processed"]);
    let order = example::get_order(db.as_ref(), "o-1")
        .await
        .expect("get")
        .expect("order");
    assert_eq!(order.status, OrderStatus::Shipped);
    assert_eq!(order.amount_cents, Some(1250));
    let history = example::transitions(db.as_ref(), "o-1")
        .await
        .expect("history");
    assert_eq!(
        history
            .iter()
            .map(|t| (t.from, t.to, t.inbox_id))
            .collect::<Vec<_>>(),
        [
            (None, OrderStatus::Paid, paid),
            (Some(OrderStatus::Paid), OrderStatus::Shipped, shipped),
        ]
    );
    let processed = row(db.as_ref(), shipped).await;
    assert_eq!(processed.status, InboxStatus::Processed);
    assert_eq!(processed.deferred_since, None);
    assert_eq!(processed.last_error, None);

    // exactly one outbox row per transition, for the configured destination
    let out = db
        .execute(&sql("SELECT id FROM outbox ORDER BY seq"), &params! {})
        .await
        .expect("outbox")
        .rows;
    assert_eq!(out.len(), 2);
    let mut changes = Vec::new();
    for r in &out {
        let o = outbox::get(db.as_ref(), r.uuid("id").expect("id"))
            .await
            .expect("get")
            .expect("row");
        assert_eq!(o.event_type, STATUS_CHANGED);
        assert_eq!(o.destination, DESTINATION);
        assert_eq!(
            (o.aggregate_type.as_str(), o.aggregate_id.as_str()),
            ("order", "o-1")
        );
        let payload: serde_json::Value = serde_json::from_str(&o.payload).expect("payload");
        changes.push((payload["from"].clone(), payload["to"].clone()));
    }
    assert_eq!(
        changes,
        [
            (serde_json::Value::Null, "paid".into()),
            ("paid".into(), "shipped".into())
        ]
    );

    // redeliveries of both events change nothing
    h.send(&InboxMessage::stored(paid, PARTNER, "evt-pay"))
        .await;
    h.send(&InboxMessage::stored(shipped, PARTNER, "evt-ship"))
        .await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["already_finished", "already_finished"]);
    assert_eq!(outbox_rows(db.as_ref()).await, 2);
    assert_eq!(transitions(db.as_ref()).await, 2);
    assert_eq!(h.handler.calls("evt-pay"), 1);
    assert_eq!(
        h.handler.calls("evt-ship"),
        2,
        "deferred once, processed once"
    );
}

async fn events_out_of_order_in_one_batch_converge_within_the_batch(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    h.ingest_order("evt-del", "order.delivered", "o-2").await;
    h.ingest_order("evt-ship", "order.shipped", "o-2").await;
    h.ingest_order("evt-pay", "payment.received", "o-2").await;
    let (_, report) = h.deliver().await;
    // pass 1: delivered and shipped defer, paid commits; pass 2: delivered
    // still defers, shipped commits; pass 3: delivered commits
    assert_eq!(outcomes(&report), ["processed", "processed", "processed"]);
    assert!(h.queue.changes().is_empty(), "no backoff needed");
    assert_eq!(
        example::get_order(db.as_ref(), "o-2")
            .await
            .expect("get")
            .map(|o| o.status),
        Some(OrderStatus::Delivered)
    );
    assert_eq!(h.handler.calls("evt-del"), 3);
    assert_eq!(h.handler.calls("evt-ship"), 2);
    assert_eq!(h.handler.calls("evt-pay"), 1);
    assert_eq!(outbox_rows(db.as_ref()).await, 3);
    assert_eq!(transitions(db.as_ref()).await, 3);
}

async fn a_processed_message_costs_at_most_four_statements_plus_the_business_ones(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    for i in 0..10 {
        h.ingest_order(&format!("evt-{i}"), "payment.received", &format!("o-{i}"))
            .await;
    }
    h.counting.counts.reset();
    let (_, report) = h.deliver().await;
    assert_eq!(report.count(|o| *o == MessageOutcome::Processed), 10);
    let c = &h.counting.counts;
    let business = c.named("example.") + c.named("outbox.");
    let processor = c.total() - business;
    // one claim for the batch; per message BEGIN, mark_processed, COMMIT
    assert_eq!(c.named("inbox.claim"), 1);
    assert_eq!(c.named("inbox.mark_processed"), 10);
    assert_eq!(
        processor,
        1 + 10 * 3,
        "processor statements for 10 messages"
    );
    assert!(processor as f64 / 10.0 <= 4.0);
    // the example's payment: lock the order, create it with its history row, outbox
    assert_eq!(business, 10 * 3);
}

async fn poison_pills_are_quarantined_at_once_and_the_rest_of_the_batch_is_processed(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let mut good = Vec::new();
    for i in 0..7 {
        good.push(
            h.ingest_order(&format!("evt-{i}"), "payment.received", &format!("o-{i}"))
                .await,
        );
    }
    let not_json = h
        .ingest(
            "evt-garbled",
            "payment.received",
            b"{\"order_id\": \"o-".to_vec(),
        )
        .await;
    let unknown = h
        .ingest(
            "evt-unknown",
            "order.teleported",
            order_body("order.teleported", "o-1"),
        )
        .await;
    h.memory
        .send("{\"kind\":\"from-the-future\"}")
        .await
        .expect("send");
    let (got, report) = h.deliver().await;
    assert_eq!(got.len(), 10);
    assert!(report.retry_message_ids().is_empty(), "{report:?}");
    assert_eq!(report.count(|o| *o == MessageOutcome::Processed), 7);
    assert_eq!(
        report.count(|o| matches!(o, MessageOutcome::Quarantined { .. })),
        3
    );
    assert!(h.queue.changes().is_empty());
    assert!(h.memory.is_empty(), "all ten acknowledged");

    let garbled = row(db.as_ref(), not_json).await;
    assert_eq!(garbled.status, InboxStatus::Quarantined);
    assert_eq!(garbled.attempts, 1);
    let reason = garbled.last_error.expect("reason");
    assert!(
        reason.contains("shop/evt-garbled is not the expected JSON"),
        "{reason}"
    );
    let unknown = row(db.as_ref(), unknown).await;
    assert_eq!(unknown.status, InboxStatus::Quarantined);
    assert_eq!(
        unknown.last_error.as_deref(),
        Some("unknown event type \"order.teleported\" for partner \"shop\"")
    );
    // the unreadable message is kept, verbatim, for an operator
    let kept = report.results[9].inbox_id.expect("stored");
    let kept = row(db.as_ref(), kept).await;
    assert_eq!(kept.partner, UNREADABLE_PARTNER);
    assert_eq!(kept.status, InboxStatus::Quarantined);
    assert_eq!(
        kept.body.inline(),
        Some(&b"{\"kind\":\"from-the-future\"}"[..])
    );
    assert!(!kept.signature_verified);
    assert!(
        kept.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("not an inbox queue message")),
        "{:?}",
        kept.last_error
    );
    for id in good {
        assert_eq!(row(db.as_ref(), id).await.status, InboxStatus::Processed);
    }
    assert_eq!(outbox_rows(db.as_ref()).await, 7);
}

async fn retries_follow_the_schedule_then_the_row_is_dead_and_the_message_dead_lettered(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.handler
        .script("evt-1", Script::Retry("ERP answered 503".into()));
    for (receive, delay) in [(1, 60), (2, 300), (3, 900)] {
        let (got, report) = h.deliver().await;
        assert_eq!(got.len(), 1, "receive {receive}");
        assert_eq!(got[0].receive_count, receive);
        assert_eq!(
            report.results[0].outcome,
            MessageOutcome::Retried {
                error: "ERP answered 503".into(),
                delay: Duration::from_secs(delay),
            }
        );
        let r = row(db.as_ref(), id).await;
        assert_eq!(r.status, InboxStatus::Pending);
        assert_eq!(r.attempts, i64::from(receive));
        assert_eq!(r.last_error.as_deref(), Some("ERP answered 503"));
        // invisible until the backoff is over
        h.advance(delay as i64 - 1);
        assert!(h.memory.receive(10).await.expect("receive").is_empty());
        h.advance(1);
    }
    assert_eq!(h.queue.delays(), [60, 300, 900]);
    let (_, report) = h.deliver().await;
    assert_eq!(
        report.results[0].outcome,
        MessageOutcome::Dead {
            error: "ERP answered 503".into()
        }
    );
    assert_eq!(report.retry_message_ids().len(), 1, "reported failed");
    let dead = row(db.as_ref(), id).await;
    assert_eq!(dead.status, InboxStatus::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("ERP answered 503"));
    assert_eq!(dead.attempts, 4);
    // the queue moves it to the DLQ on the next receive
    h.advance(30);
    assert!(h.memory.receive(10).await.expect("receive").is_empty());
    assert_eq!(h.memory.dead_letters().len(), 1);
    assert_eq!(outbox_rows(db.as_ref()).await, 0);
}

async fn a_panicking_handler_fails_only_its_own_message(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let a = h.ingest_order("evt-a", "payment.received", "o-a").await;
    let b = h.ingest_order("evt-b", "payment.received", "o-b").await;
    let c = h.ingest_order("evt-c", "payment.received", "o-c").await;
    h.handler.script("evt-b", Script::Panic);
    let (got, report) = h.deliver().await;
    assert_eq!(report.retry_message_ids(), [got[1].message_id.clone()]);
    assert_eq!(outcomes(&report), ["processed", "retried", "processed"]);
    assert_eq!(row(db.as_ref(), a).await.status, InboxStatus::Processed);
    assert_eq!(row(db.as_ref(), c).await.status, InboxStatus::Processed);
    let failed = row(db.as_ref(), b).await;
    assert_eq!(failed.status, InboxStatus::Pending);
    assert_eq!(
        failed.last_error.as_deref(),
        Some("business handler panicked: business code bug for evt-b")
    );
    assert!(
        example::get_order(db.as_ref(), "o-b")
            .await
            .expect("get")
            .is_none()
    );
    // fixed: the retry processes it
    h.handler.unscript("evt-b");
    h.advance(60);
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["processed"]);
    assert_eq!(outbox_rows(db.as_ref()).await, 3);
}

async fn a_failure_after_business_writes_rolls_them_all_back(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.handler.script("evt-1", Script::WriteThenFail);
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["retried"]);
    assert!(
        example::get_order(db.as_ref(), "o-1")
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(transitions(db.as_ref()).await, 0);
    assert_eq!(outbox_rows(db.as_ref()).await, 0);
    let r = row(db.as_ref(), id).await;
    assert_eq!(r.status, InboxStatus::Pending);
    assert_eq!(r.last_error.as_deref(), Some("downstream refused"));
}

async fn a_deferral_older_than_the_maximum_age_is_quarantined(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let mut h = Harness::new(db.clone());
    h.config.max_deferral_age = Duration::from_secs(3600);
    let id = h.ingest_order("evt-1", "order.shipped", "o-1").await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["deferred"]);
    h.advance(60);
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["deferred"]);
    assert_eq!(row(db.as_ref(), id).await.deferred_since, Some(at(0)));
    h.advance(3600);
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["quarantined"]);
    assert!(report.retry_message_ids().is_empty());
    let r = row(db.as_ref(), id).await;
    assert_eq!(r.status, InboxStatus::Quarantined);
    let reason = r.last_error.expect("reason");
    assert!(
        reason.starts_with("prerequisite never arrived (deferred since 2026-06-01T12:00:00+00:00)"),
        "{reason}"
    );
    assert!(reason.ends_with("the order is not paid yet"), "{reason}");
    assert!(h.memory.is_empty());
}

async fn a_deferral_on_the_last_receive_is_acknowledged_and_left_to_the_sweeper(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let mut h = Harness::new(db.clone());
    h.config.max_receive_count = 2;
    let id = h.ingest_order("evt-1", "order.delivered", "o-1").await;
    h.deliver().await;
    h.advance(60);
    let (_, report) = h.deliver().await;
    assert_eq!(
        report.results[0].outcome,
        MessageOutcome::DeferredToSweeper {
            reason: "order.delivered for order o-1: the order is not shipped yet".into(),
            next_attempt_at: at(60 + 300),
        }
    );
    assert!(report.retry_message_ids().is_empty());
    assert!(h.memory.is_empty(), "acknowledged, not dead-lettered");
    let r = row(db.as_ref(), id).await;
    assert_eq!(r.status, InboxStatus::Deferred);
    // the sweeper enqueues it once overdue
    let swept = inbox::sweep_stranded(db.as_ref(), at(60 + 300 + 120), TimeDelta::seconds(60), 10)
        .await
        .expect("sweep");
    assert_eq!(swept.iter().map(|s| s.id).collect::<Vec<_>>(), [id]);
}

async fn busy_rows_are_retried_without_a_visibility_change_or_acknowledged_on_the_last_receive(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    // another worker holds it
    inbox::claim(db.as_ref(), &[id], at(0), at(600))
        .await
        .expect("other claim");
    let (_, report) = h.deliver().await;
    assert_eq!(report.results[0].outcome, MessageOutcome::Busy);
    assert_eq!(report.retry_message_ids().len(), 1);
    assert!(
        h.queue.changes().is_empty(),
        "the queue's own timeout applies"
    );
    assert_eq!(h.handler.calls("evt-1"), 0);

    let last = Received {
        message_id: "m-last".into(),
        receipt_handle: "r-last".into(),
        body: InboxMessage::stored(id, PARTNER, "evt-1")
            .to_body()
            .expect("body"),
        receive_count: 4,
        sent_at: at(0),
        trace_header: None,
    };
    let report = h.processor().process_batch(&[last], None).await;
    assert_eq!(report.results[0].outcome, MessageOutcome::BusyOnLastReceive);
    assert!(report.retry_message_ids().is_empty());
}

async fn missing_rows_and_duplicate_messages_are_acknowledged_without_the_handler(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    h.send(&InboxMessage::stored(Uuid::now_v7(), PARTNER, "evt-gone"))
        .await;
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.send(&InboxMessage::stored(id, PARTNER, "evt-1")).await;
    let (_, report) = h.deliver().await;
    assert_eq!(
        outcomes(&report),
        ["missing", "processed", "duplicate_in_batch"]
    );
    assert!(report.retry_message_ids().is_empty());
    assert_eq!(h.handler.calls("evt-1"), 1);
    assert_eq!(h.handler.calls("evt-gone"), 0);
    assert_eq!(transitions(db.as_ref()).await, 1);
}

async fn spooled_events_are_stored_once_then_processed_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let event = new_event(
        "evt-spooled",
        "payment.received",
        order_body("payment.received", "o-7"),
    );
    let spooled = InboxMessage::spooled(&event, at(-5));
    h.send(&spooled).await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["processed"]);
    let id = report.results[0].inbox_id.expect("stored");
    let stored = row(db.as_ref(), id).await;
    assert_eq!(
        (stored.partner.as_str(), stored.event_id.as_str()),
        (PARTNER, "evt-spooled")
    );
    assert_eq!(stored.body, event.body);
    assert_eq!(stored.received_at, at(-5), "as received by ingest");
    assert_eq!(stored.status, InboxStatus::Processed);
    // the partner's retry reached ingest meanwhile, or the message came twice:
    // the UNIQUE key makes it the same row, processed already
    h.send(&spooled).await;
    let (_, report) = h.deliver().await;
    assert_eq!(
        report.results[0].outcome,
        MessageOutcome::AlreadyFinished(InboxStatus::Processed)
    );
    assert_eq!(report.results[0].inbox_id, Some(id));
    assert_eq!(transitions(db.as_ref()).await, 1);
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        1
    );

    // a spooled event whose body is not base64 is kept as unreadable
    let mut bad = InboxMessage::spooled(&new_event("evt-bad", "payment.received", vec![]), at(0));
    if let InboxMessage::Spooled(e) = &mut bad {
        e.body_base64 = "***".into();
    }
    h.send(&bad).await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["quarantined"]);
    let kept = row(db.as_ref(), report.results[0].inbox_id.expect("kept")).await;
    assert_eq!(kept.partner, UNREADABLE_PARTNER);
    assert!(
        kept.last_error
            .as_deref()
            .is_some_and(|e| e.contains("shop/evt-bad") && e.contains("not base64")),
        "{:?}",
        kept.last_error
    );
}

async fn a_lost_lease_commits_nothing_and_the_message_is_retried(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.handler.script("evt-1", Script::StealLease(db.clone()));
    let (_, report) = h.deliver().await;
    assert_eq!(report.results[0].outcome, MessageOutcome::LeaseLost);
    assert_eq!(report.retry_message_ids().len(), 1);
    assert!(
        example::get_order(db.as_ref(), "o-1")
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(outbox_rows(db.as_ref()).await, 0);
    let r = row(db.as_ref(), id).await;
    assert_eq!(
        r.status,
        InboxStatus::Processing,
        "the other worker's claim stands"
    );
    assert_eq!(r.attempts, 2);
}

async fn a_database_outage_retries_every_message_with_backoff(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.send(&InboxMessage::spooled(
        &new_event(
            "evt-2",
            "payment.received",
            order_body("payment.received", "o-2"),
        ),
        at(0),
    ))
    .await;
    let got = h.memory.receive(10).await.expect("receive");
    let processor = processing::Processor {
        db: &common::DownDb,
        ..h.processor()
    };
    let report = processor.process_batch(&got, None).await;
    assert!(
        report.retry_message_ids().is_empty(),
        "acknowledged: sent again"
    );
    for r in &report.results {
        match &r.outcome {
            MessageOutcome::Requeued { error, delay } => {
                assert!(error.contains("connection refused"), "{error}");
                assert_eq!(*delay, Duration::from_secs(60));
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        h.queue.delays().is_empty(),
        "no visibility change: fresh messages"
    );
    // the fresh messages come back after the delay, receive count 1
    for m in &got {
        h.memory.delete(&m.receipt_handle).await.expect("delete");
    }
    assert!(h.memory.receive(10).await.expect("receive").is_empty());
    h.advance(60);
    let again = h.memory.receive(10).await.expect("receive");
    assert_eq!(again.len(), 2);
    assert!(again.iter().all(|m| m.receive_count == 1));
}

/// The database down for two hours while webhooks keep arriving (spooled by
/// ingest): every message keeps circulating as a fresh one, none reaches the
/// DLQ, and once the database is back every event is processed exactly once.
async fn a_two_hour_outage_sends_no_event_to_the_dlq_and_loses_none(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let stored = h
        .ingest_order("evt-stored", "payment.received", "o-stored")
        .await;
    let down = processing::Processor {
        db: &common::DownDb,
        ..h.processor()
    };
    let mut spooled = 0;
    for minute in 0..120 {
        if minute % 10 == 0 {
            let id = format!("evt-spool-{minute}");
            h.send(&InboxMessage::spooled(
                &new_event(&id, "payment.received", order_body("payment.received", &id)),
                h.clock.now(),
            ))
            .await;
            spooled += 1;
        }
        let got = h.memory.receive(10).await.expect("receive");
        let report = down.process_batch(&got, None).await;
        assert!(report.retry_message_ids().is_empty(), "{report:?}");
        for m in &got {
            h.memory.delete(&m.receipt_handle).await.expect("delete");
        }
        h.advance(60);
    }
    assert!(h.memory.dead_letters().is_empty(), "nothing in the DLQ");
    assert_eq!(
        h.memory.len(),
        spooled + 1,
        "one message per event, no more"
    );

    // the database is back
    for _ in 0..5 {
        h.deliver().await;
        h.advance(60);
    }
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status = 'processed'"
        )
        .await,
        spooled as i64 + 1
    );
    assert_eq!(
        row(db.as_ref(), stored).await.attempts,
        1,
        "the outage used no attempt"
    );
    assert_eq!(
        transitions(db.as_ref()).await,
        spooled as i64 + 1,
        "each once"
    );
    assert!(h.memory.dead_letters().is_empty());
    assert!(h.memory.is_empty());
}

async fn messages_not_started_before_the_deadline_are_released_and_retried(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let a = h.ingest_order("evt-a", "payment.received", "o-a").await;
    let b = h.ingest_order("evt-b", "payment.received", "o-b").await;
    let got = h.memory.receive(10).await.expect("receive");
    let deadline = h.clock.now() + TimeDelta::seconds(3); // inside the 5 s margin
    let report = h.processor().process_batch(&got, Some(deadline)).await;
    assert_eq!(outcomes(&report), ["not_started", "not_started"]);
    assert_eq!(report.retry_message_ids().len(), 2);
    assert!(h.queue.changes().is_empty());
    for id in [a, b] {
        let r = row(db.as_ref(), id).await;
        assert_eq!(r.status, InboxStatus::Pending, "released, not left leased");
        assert_eq!(r.locked_until, None);
    }
    assert_eq!(h.handler.calls("evt-a"), 0);
}

async fn a_replayed_quarantined_row_is_processed_exactly_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h.ingest_order("evt-1", "payment.received", "o-1").await;
    h.handler.script(
        "evt-1",
        Script::Quarantine("amount does not match the order".into()),
    );
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["quarantined"]);
    assert_eq!(row(db.as_ref(), id).await.status, InboxStatus::Quarantined);

    // the operator fixes the cause and replays (what the CLI calls)
    h.handler.unscript("evt-1");
    h.advance(600);
    let replayed = processing::replay(db.as_ref(), &h.memory, h.clock.as_ref(), id)
        .await
        .expect("replay");
    assert!(
        matches!(
            replayed,
            ReplayOutcome::Enqueued {
                previous: InboxStatus::Quarantined,
                ..
            }
        ),
        "{replayed:?}"
    );
    // a second replay (double click) does nothing
    let again = processing::replay(db.as_ref(), &h.memory, h.clock.as_ref(), id)
        .await
        .expect("replay");
    assert_eq!(
        again,
        ReplayOutcome::NotReplayable {
            id,
            status: InboxStatus::Pending
        }
    );
    // and a duplicate of the message as well
    h.send(&InboxMessage::stored(id, PARTNER, "evt-1")).await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["processed", "duplicate_in_batch"]);
    h.send(&InboxMessage::stored(id, PARTNER, "evt-1")).await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["already_finished"]);

    assert_eq!(
        h.handler.calls("evt-1"),
        2,
        "quarantined once, processed once"
    );
    assert_eq!(transitions(db.as_ref()).await, 1);
    assert_eq!(outbox_rows(db.as_ref()).await, 1);
    let r = row(db.as_ref(), id).await;
    assert_eq!(r.status, InboxStatus::Processed);
    assert_eq!(r.processed_at, Some(at(600)));
    assert_eq!(
        processing::replay(db.as_ref(), &h.memory, h.clock.as_ref(), id)
            .await
            .expect("replay"),
        ReplayOutcome::NotReplayable {
            id,
            status: InboxStatus::Processed
        }
    );
}

/// A NUL in a business field the handler writes to text is a poison pill
/// at once, not a row retried until it is dead (found by hand on the local
/// stack through the Data API).
async fn a_nul_in_the_order_id_is_quarantined_at_once(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let h = Harness::new(db.clone());
    let id = h
        .ingest_order("evt-nul", "payment.received", "o-\u{0}-1")
        .await;
    let good = h.ingest_order("evt-good", "payment.received", "o-2").await;
    let (_, report) = h.deliver().await;
    assert_eq!(outcomes(&report), ["quarantined", "processed"]);
    let r = row(db.as_ref(), id).await;
    assert_eq!(r.status, InboxStatus::Quarantined);
    assert_eq!(r.attempts, 1);
    assert!(
        r.last_error
            .as_deref()
            .is_some_and(|e| e.contains("U+0000")),
        "{:?}",
        r.last_error
    );
    assert_eq!(row(db.as_ref(), good).await.status, InboxStatus::Processed);
}

for_each_adapter!(
    a_nul_in_the_order_id_is_quarantined_at_once,
    shipped_before_paid_in_separate_batches_converges_with_one_outbox_row_per_transition,
    events_out_of_order_in_one_batch_converge_within_the_batch,
    a_processed_message_costs_at_most_four_statements_plus_the_business_ones,
    poison_pills_are_quarantined_at_once_and_the_rest_of_the_batch_is_processed,
    retries_follow_the_schedule_then_the_row_is_dead_and_the_message_dead_lettered,
    a_panicking_handler_fails_only_its_own_message,
    a_failure_after_business_writes_rolls_them_all_back,
    a_deferral_older_than_the_maximum_age_is_quarantined,
    a_deferral_on_the_last_receive_is_acknowledged_and_left_to_the_sweeper,
    busy_rows_are_retried_without_a_visibility_change_or_acknowledged_on_the_last_receive,
    missing_rows_and_duplicate_messages_are_acknowledged_without_the_handler,
    spooled_events_are_stored_once_then_processed_once,
    a_lost_lease_commits_nothing_and_the_message_is_retried,
    a_database_outage_retries_every_message_with_backoff,
    a_two_hour_outage_sends_no_event_to_the_dlq_and_loses_none,
    messages_not_started_before_the_deadline_are_released_and_retried,
    a_replayed_quarantined_row_is_processed_exactly_once,
);
