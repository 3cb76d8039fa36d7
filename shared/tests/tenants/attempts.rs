//! Attempts and recover (migration 22, `hookbox::tenants::messages`): the
//! attempts of a receiver that fails then succeeds, with stable ids; recover
//! sending again exactly an endpoint's failed and dead deliveries of a time
//! range; messages deleted with their tenant and by the outbox's retention,
//! and those no delivery names by the relay's retention (migration 26).

use chrono::Duration;
use hookbox::admin::{ReplayRange, plan_replay, replay_page};
use hookbox::clock::Clock;
use hookbox::outbox::{self, OutboxStatus, Retention};
use hookbox::tenants::messages::{
    self, AttemptFilter, AttemptStatus, DeliveryStatus, MessageFilter,
};
use hookbox::tenants::{Actor, Face, ManageError, manage};
use serde_json::json;
use uuid::Uuid;

use super::common::{self, Adapter, sql};
use crate::for_each_adapter;
use crate::messages::setup;

for_each_adapter!(
    attempts_show_a_receiver_that_fails_then_succeeds,
    recover_sends_again_exactly_the_failed_and_dead_deliveries_of_its_range,
    messages_go_with_their_tenant_and_with_their_last_delivery_at_retention,
    only_tenants_deliveries_have_an_entry_in_the_message_index,
    retention_deletes_old_messages_that_no_delivery_names,
);

async fn attempts_show_a_receiver_that_fails_then_succeeds(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let ep = s
        .endpoint(json!({"url": s.sink.url("/a"), "uid": "main"}))
        .await;
    s.sink.respond_with_body(500, "down for maintenance");
    let m = s
        .create(json!({"event_type": "order.paid", "payload": {"n": 1}, "event_id": "e-1"}))
        .await
        .message;
    // the message is due at the database's time; the relay's clock follows
    s.clock.advance(Duration::seconds(2));
    s.relay.drain(&s.store).await;
    assert_eq!(s.sink.requests().len(), 1);
    s.sink.respond_with_body(200, "thanks");
    s.clock.advance(Duration::seconds(6));
    s.relay.drain(&s.store).await;
    assert_eq!(s.sink.requests().len(), 2);

    let page = messages::list_attempts_by_message(
        db,
        "acme",
        "e-1",
        None,
        &AttemptFilter::default(),
        None,
        50,
    )
    .await
    .expect("attempts");
    assert!(page.done);
    let [failed, ok] = &page.data[..] else {
        panic!("two attempts: {:?}", page.data)
    };
    assert_eq!(
        (failed.attempt, failed.status, failed.status_code),
        (1, AttemptStatus::Failed, Some(500))
    );
    assert_eq!(failed.response.as_deref(), Some("down for maintenance"));
    assert_eq!(
        (ok.attempt, ok.status, ok.status_code),
        (2, AttemptStatus::Success, Some(200))
    );
    assert_eq!(ok.response.as_deref(), Some("thanks"));
    for a in [failed, ok] {
        assert_eq!(a.message_id.as_deref(), Some(m.id.as_str()));
        assert_eq!(a.endpoint_id, ep);
        assert_eq!(a.url.as_deref(), Some(s.sink.url("/a").as_str()));
        assert_eq!(a.delivery_status, DeliveryStatus::Delivered);
        assert!(a.id.starts_with("atmpt_") && a.id.len() == 54, "{}", a.id);
        assert_eq!(
            s.sink.requests()[0].header("webhook-id"),
            Some(a.delivery_id.to_string().as_str())
        );
    }
    assert!(failed.id < ok.id && failed.timestamp < ok.timestamp);
    assert_eq!(
        (
            AttemptStatus::Success.svix_code(),
            failed.status.svix_code()
        ),
        (0, 2)
    );

    // the endpoint's list: the same attempts, in pages, filtered by status
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = messages::list_attempts_by_endpoint(
            db,
            "acme",
            "main",
            &AttemptFilter::default(),
            after.as_deref(),
            1,
        )
        .await
        .expect("page");
        seen.extend(page.data.iter().map(|a| a.id.clone()));
        if page.done {
            break;
        }
        after = page.iterator;
    }
    assert_eq!(seen, [failed.id.clone(), ok.id.clone()]);
    let successes = AttemptFilter {
        status: Some(AttemptStatus::Success),
        ..AttemptFilter::default()
    };
    let page = messages::list_attempts_by_endpoint(db, "acme", &ep, &successes, None, 50)
        .await
        .expect("page");
    assert_eq!(page.data.len(), 1);
    assert_eq!(page.data[0].id, ok.id);
    let after_first = messages::list_attempts_by_message(
        db,
        "acme",
        &m.id,
        Some(&ep),
        &AttemptFilter::default(),
        Some(&failed.id),
        50,
    )
    .await
    .expect("page");
    assert_eq!(after_first.data.len(), 1);
    assert_eq!(after_first.data[0].id, ok.id);
    let one = messages::get_attempt(db, "acme", &failed.id)
        .await
        .expect("get");
    assert_eq!(&one, failed);
    manage::create_tenant(db, &json!({"uid": "other", "name": "Other"}), None)
        .await
        .expect("other");
    for (tenant, attempt, expected) in [
        ("other", failed.id.as_str(), "has no attempt"),
        ("acme", "atmpt_x", "is not an attempt id"),
    ] {
        match messages::get_attempt(db, tenant, attempt).await {
            Err(ManageError::NotFound(m) | ManageError::Invalid(m)) => {
                assert!(m.contains(expected), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    // an operator's replay moves the delivering attempt into the attempt
    // log: the attempts keep their ids, the delivery is pending again
    let range = ReplayRange {
        destination: ep.clone(),
        since: s.clock.now() - Duration::hours(1),
        until: None,
        statuses: vec![OutboxStatus::Delivered],
    };
    let walk = plan_replay(db, &range)
        .await
        .expect("plan")
        .walk
        .expect("rows");
    let replayed = replay_page(db, &range, walk, 100, s.clock.now() + Duration::hours(1))
        .await
        .expect("replay");
    assert_eq!(replayed.replayed, 1);
    let page =
        messages::list_attempts_by_endpoint(db, "acme", &ep, &AttemptFilter::default(), None, 50)
            .await
            .expect("page");
    let ids: Vec<&str> = page.data.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, [failed.id.as_str(), ok.id.as_str()]);
    assert!(
        page.data
            .iter()
            .all(|a| a.delivery_status == DeliveryStatus::Pending)
    );
    assert_eq!(page.data[1].status, AttemptStatus::Success);

    match messages::list_attempts_by_endpoint(
        db,
        "acme",
        "nope",
        &AttemptFilter::default(),
        None,
        5,
    )
    .await
    {
        Err(ManageError::NotFound(m)) => assert!(m.contains("has no endpoint 'nope'"), "{m}"),
        other => panic!("{other:?}"),
    }
    let bad = messages::list_attempts_by_endpoint(
        db,
        "acme",
        &ep,
        &AttemptFilter::default(),
        Some("garbage"),
        5,
    )
    .await;
    assert!(
        matches!(bad, Err(ManageError::Invalid(ref m)) if m.contains("not an iterator")),
        "{bad:?}"
    );
}

async fn recover_sends_again_exactly_the_failed_and_dead_deliveries_of_its_range(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let ep = s.endpoint(json!({"url": s.sink.url("/r")})).await;
    let now = s.clock.now();
    let old = s.publish_at(0, now - Duration::hours(1)).await[0];
    let dead = s.publish_at(1, now).await[0];
    let failing = s.publish_at(2, now).await[0];
    let delivered = s.publish_at(3, now).await[0];
    for (id, status) in [(old, 410), (dead, 410), (failing, 503), (delivered, 200)] {
        s.sink
            .respond_to("webhook-id", &id.to_string(), status, &[]);
    }
    s.relay.drain(&s.store).await;
    // published after the run, due later: never attempted
    let waiting = s.publish_at(4, now + Duration::hours(1)).await[0];
    let before: Vec<(OutboxStatus, i64)> = {
        let mut out = Vec::new();
        for id in [old, dead, failing, delivered, waiting] {
            let r = s.row(id).await;
            out.push((r.status, r.attempts));
        }
        out
    };
    assert_eq!(
        before,
        [
            (OutboxStatus::Dead, 1),
            (OutboxStatus::Dead, 1),
            (OutboxStatus::Pending, 1),
            (OutboxStatus::Delivered, 1),
            (OutboxStatus::Pending, 0),
        ]
    );
    let waiting_due = s.row(waiting).await.next_attempt_at;

    let cli = Actor::new(Face::Cli, "ann");
    let since = now - Duration::minutes(10);
    let done = messages::recover_endpoint(db, "acme", &ep, since, None, Some(&cli))
        .await
        .expect("recover");
    assert_eq!((done.recovered, done.dead, done.failed), (2, 1, 1));
    for id in [dead, failing] {
        let r = s.row(id).await;
        assert_eq!((r.status, r.attempts), (OutboxStatus::Pending, 0), "{id}");
    }
    assert_eq!(
        s.row(old).await.status,
        OutboxStatus::Dead,
        "older than since"
    );
    assert_eq!(s.row(delivered).await.status, OutboxStatus::Delivered);
    let w = s.row(waiting).await;
    assert_eq!(
        (w.attempts, w.next_attempt_at),
        (0, waiting_due),
        "never attempted"
    );

    // until bounds the range: the older one alone
    let older =
        messages::recover_endpoint(db, "acme", &ep, now - Duration::hours(2), Some(since), None)
            .await
            .expect("recover");
    assert_eq!((older.recovered, older.dead, older.failed), (1, 1, 0));

    // the receiver is back: each goes out again under its own webhook-id
    s.sink.clear_rules();
    s.clock.advance(Duration::seconds(5));
    let sent_before = s.sink.requests().len();
    s.relay.drain(&s.store).await;
    let mut again: Vec<String> = s.sink.requests()[sent_before..]
        .iter()
        .filter_map(|r| r.header("webhook-id").map(str::to_owned))
        .collect();
    again.sort();
    let mut expected: Vec<String> = [old, dead, failing].iter().map(Uuid::to_string).collect();
    expected.sort();
    assert_eq!(again, expected);
    for id in [old, dead, failing] {
        assert_eq!(s.row(id).await.status, OutboxStatus::Delivered);
    }

    let trail = manage::audit(db, "acme", None, 100).await.expect("audit");
    let recovered: Vec<_> = trail
        .data
        .iter()
        .filter(|a| a.action == "endpoint.recovered")
        .collect();
    assert_eq!(recovered.len(), 2);
    assert_eq!(recovered[0].endpoint_id.as_deref(), Some(ep.as_str()));
    assert_eq!(recovered[0].changes["recovered"], 2);

    for (since, until, expected) in [
        (now, Some(now), "must be after since"),
        (now, Some(now - Duration::seconds(1)), "must be after since"),
    ] {
        match messages::recover_endpoint(db, "acme", &ep, since, until, None).await {
            Err(ManageError::Invalid(m)) => assert!(m.contains(expected), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    match messages::recover_endpoint(db, "acme", "ep_nope", now, None, None).await {
        Err(ManageError::NotFound(m)) => assert!(m.contains("'ep_nope'"), "{m}"),
        other => panic!("{other:?}"),
    }
}

async fn messages_go_with_their_tenant_and_with_their_last_delivery_at_retention(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    s.endpoint(json!({"url": s.sink.url("/a"), "filter_types": ["order.*"]}))
        .await;
    s.endpoint(json!({"url": s.sink.url("/b"), "filter_types": ["order.paid"]}))
        .await;
    let now = s.clock.now();
    // an hour ago: one message with no delivery, one delivered to both, one
    // delivered to one endpoint and dead at the other
    let lonely = s
        .create(json!({"event_type": "invoice.sent", "payload": {}}))
        .await
        .message
        .id;
    s.db.execute(
        &sql("UPDATE hookbox_messages SET created_at = CAST(:at AS timestamptz) WHERE id = :id"),
        &hookbox::params! { "at" => now - Duration::hours(1), "id" => lonely.as_str() },
    )
    .await
    .expect("age it");
    let both = s.publish_at(1, now - Duration::minutes(30)).await;
    let split = s.publish_at(2, now - Duration::minutes(30)).await;
    s.sink
        .respond_to("webhook-id", &split[1].to_string(), 410, &[]);
    s.relay.drain(&s.store).await;
    assert_eq!(s.row(split[1]).await.status, OutboxStatus::Dead);
    let message_of = |id: Uuid| {
        let db = s.db.clone();
        async move {
            hookbox::store::fetch_one(
                db.as_ref(),
                &sql("SELECT message_id FROM outbox WHERE id = :id"),
                &hookbox::params! { "id" => id },
            )
            .await
            .expect("row")
            .text("message_id")
            .expect("message_id")
        }
    };
    let (both_m, split_m) = (message_of(both[0]).await, message_of(split[0]).await);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM hookbox_messages").await,
        3
    );

    // retention deletes the delivered rows older than its cutoff: a message
    // goes with its last delivery, and the older childless one with it; the
    // one with a dead delivery left stays
    let purged = outbox::purge_finished(db, now, None, 100, Retention::Delete)
        .await
        .expect("purge");
    assert_eq!(purged, 3);
    let left = |id: String| format!("SELECT count(*) AS n FROM hookbox_messages WHERE id = '{id}'");
    assert_eq!(s.count(&left(both_m)).await, 0);
    assert_eq!(s.count(&left(lonely)).await, 0);
    assert_eq!(s.count(&left(split_m.clone())).await, 1);

    // another tenant's messages stay when acme goes with its own
    manage::create_tenant(db, &json!({"uid": "beta", "name": "Beta"}), None)
        .await
        .expect("beta");
    messages::create_message(db, "beta", &json!({"event_type": "x", "payload": 1}), None)
        .await
        .expect("beta's");
    s.create(json!({"event_type": "order.paid", "payload": 3}))
        .await;
    let deleted = manage::delete_tenant(db, "acme", None)
        .await
        .expect("delete");
    assert_eq!(deleted.messages, Some(2));
    assert_eq!(deleted.undelivered, 2);
    assert_eq!(
        s.count("SELECT count(*) AS n FROM hookbox_messages").await,
        1
    );
    assert_eq!(
        messages::list_messages(db, "beta", &MessageFilter::default(), None, 10)
            .await
            .expect("beta's")
            .data
            .len(),
        1
    );
}

async fn only_tenants_deliveries_have_an_entry_in_the_message_index(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let def = hookbox::store::fetch_one(
        db,
        &sql("SELECT indexdef FROM pg_indexes WHERE indexname = 'outbox_message'"),
        &hookbox::params! {},
    )
    .await
    .expect("index")
    .text("indexdef")
    .expect("indexdef");
    assert!(def.ends_with("WHERE (message_id IS NOT NULL)"), "{def}");
    // a message's deliveries are found through it
    let tx = db.begin().await.expect("begin");
    tx.execute(&sql("SET LOCAL enable_seqscan = off"), &hookbox::params! {})
        .await
        .expect("set");
    let lookup = sql("SELECT o.id FROM outbox AS o WHERE o.message_id = :m");
    let plan = common::plan(tx.as_ref(), &lookup, &hookbox::params! { "m" => "msg_x" }).await;
    tx.rollback().await.expect("rollback");
    common::assert_uses(&plan, "outbox_message", "outbox");
}

async fn retention_deletes_old_messages_that_no_delivery_names(adapter: Adapter) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let now = s.clock.now();
    let age = |id: String, days: i64| {
        let db = s.db.clone();
        async move {
            db.execute(
                &sql(
                    "UPDATE hookbox_messages SET created_at = CAST(:at AS timestamptz) \
                      WHERE id = :id",
                ),
                &hookbox::params! { "at" => now - Duration::days(days), "id" => id.as_str() },
            )
            .await
            .expect("age it");
            id
        }
    };
    // acme has no endpoint yet: its messages have no delivery
    let mut lonely = Vec::new();
    for (n, days) in [(1, 40), (2, 31), (3, 1)] {
        let id = s
            .create(json!({"event_type": "order.paid", "payload": n}))
            .await
            .message
            .id;
        lonely.push(age(id, days).await);
    }
    // an old message whose delivery still waits is not the retention's
    s.endpoint(json!({"url": s.sink.url("/a"), "filter_types": ["nothing.*"]}))
        .await;
    s.endpoint(json!({"url": s.sink.url("/b"), "disabled": true}))
        .await;
    let waiting = s
        .create(json!({"event_type": "order.paid", "payload": 4}))
        .await
        .message
        .id;
    let waiting = age(waiting, 50).await;

    // the relay's retention (30 days): the two older lonely ones go
    let report = s.relay.purge().await.expect("purge");
    assert_eq!(report.messages_deleted, 2, "{report:?}");
    let left = |id: &str| format!("SELECT count(*) AS n FROM hookbox_messages WHERE id = '{id}'");
    assert_eq!(s.count(&left(&lonely[0])).await, 0);
    assert_eq!(s.count(&left(&lonely[1])).await, 0);
    assert_eq!(
        s.count(&left(&lonely[2])).await,
        1,
        "younger than the retention"
    );
    assert_eq!(s.count(&left(&waiting)).await, 1, "its delivery waits");

    // bounded: one at a time, oldest first
    let young = age(lonely[2].clone(), 60).await;
    let other = s
        .create(json!({"event_type": "invoice.sent", "payload": 5}))
        .await
        .message
        .id;
    let other = age(other, 45).await;
    let n =
        hookbox::maintenance::retention::purge_childless_messages(db, now - Duration::days(30), 1)
            .await
            .expect("purge one");
    assert_eq!(n, 1);
    assert_eq!(s.count(&left(&young)).await, 0, "the oldest first");
    assert_eq!(s.count(&left(&other)).await, 1);
}
