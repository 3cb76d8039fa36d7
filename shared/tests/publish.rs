//! Publishing (`hookbox_publish`, migration 11; `outbox::publish`) through
//! both adapters: subscriptions evaluated at publish, fan-out to every
//! subscribed destination, a rolled-back publish delivered nowhere, one
//! `webhook-id` per delivery stable across retries, the sync from the
//! configuration, and clear refusals.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{Adapter, at, migrated_db, sql};
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, NewEvent, OutboxStatus};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::store::{Database, DbError, Executor, fetch_one};
use hookbox_testkit::http_sink::HttpSink;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// Four destinations on `sink`: `crm` takes every `order.*` event (a
/// wildcard), `erp` takes `order.paid` in EUR, `audit` `order.paid` in USD
/// (filtered out below), `billing` subscribes to nothing.
fn config(sink: &HttpSink) -> HookboxConfig {
    let dest = |name: &str, subscribe: serde_json::Value| {
        let mut d = serde_json::json!({
            "url": sink.url(&format!("/{name}")),
            "secrets": [SECRET],
            "allowed_networks": ["127.0.0.0/8"],
            "backoff_secs": [5],
            "max_attempts": 3,
        });
        if !subscribe.is_null() {
            d["subscribe"] = subscribe;
        }
        d
    };
    let text = serde_json::json!({"destinations": {
        "crm": dest("crm", serde_json::json!({"event_types": ["order.*"]})),
        "erp": dest("erp", serde_json::json!({"event_types": ["order.paid"],
            "filters": [{"pointer": "/currency", "equals": "EUR"}]})),
        "audit": dest("audit", serde_json::json!({"event_types": ["order.paid"],
            "filters": [{"pointer": "/currency", "equals": "USD"}]})),
        "billing": dest("billing", serde_json::Value::Null),
    }})
    .to_string();
    HookboxConfig::parse(&text, "test").expect("valid config")
}

fn paid(order: &str, currency: &str) -> NewEvent {
    NewEvent {
        event_type: "order.paid".into(),
        payload: serde_json::json!({"order_id": order, "currency": currency, "amount_cents": 1250}),
        aggregate_type: "order".into(),
        aggregate_id: order.into(),
    }
}

fn relay(db: Arc<dyn Database>, clock: Arc<ManualClock>) -> Relay {
    common::http_relay(db, clock, RelaySettings::new("publish-test"))
}

async fn publish_in_tx(db: &dyn Database, event: &NewEvent, commit: bool) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let ids = outbox::publish(tx.as_ref(), event, at(0))
        .await
        .expect("publish");
    if commit {
        tx.commit().await.expect("commit");
    } else {
        tx.rollback().await.expect("rollback");
    }
    ids
}

/// destination → ids of its rows.
async fn rows_by_destination(db: &dyn Executor) -> BTreeMap<String, Vec<Uuid>> {
    let rows = db
        .execute(
            &sql("SELECT id, destination FROM outbox ORDER BY seq"),
            &hookbox::params! {},
        )
        .await
        .expect("outbox");
    let mut out: BTreeMap<String, Vec<Uuid>> = BTreeMap::new();
    for r in rows.rows {
        out.entry(r.text("destination").expect("destination"))
            .or_default()
            .push(r.uuid("id").expect("id"));
    }
    out
}

async fn one_event_reaches_every_subscriber_each_under_its_own_stable_webhook_id(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    assert_eq!(
        outbox::destinations::sync(db.as_ref(), &cfg, at(0))
            .await
            .expect("sync"),
        4
    );

    let kept = publish_in_tx(db.as_ref(), &paid("o-1", "EUR"), true).await;
    let rolled_back = publish_in_tx(db.as_ref(), &paid("o-2", "EUR"), false).await;
    assert_eq!(kept.len(), 2, "crm (wildcard) and erp (filter holds)");
    assert_eq!(
        rolled_back.len(),
        2,
        "the rolled-back publish wrote its rows…"
    );
    let by_dest = rows_by_destination(db.as_ref()).await;
    assert_eq!(
        by_dest.keys().collect::<Vec<_>>(),
        ["crm", "erp"],
        "…and nothing of it is left; audit is filtered out, billing subscribes to nothing"
    );
    let mut ids: Vec<Uuid> = by_dest.values().flatten().copied().collect();
    ids.sort();
    let mut expected = kept.clone();
    expected.sort();
    assert_eq!(ids, expected);
    for id in &kept {
        assert_eq!(id.get_version_num(), 7, "{id}: a version 7 UUID");
    }

    // erp fails once: its retry carries the same webhook-id
    sink.respond_to("webhook-id", &by_dest["erp"][0].to_string(), 500, &[]);
    let clock = Arc::new(ManualClock::new(at(1)));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let relay = relay(db.clone(), clock.clone());
    relay.drain(&store).await;
    sink.clear_rules();
    clock.advance(chrono::Duration::seconds(30));
    relay.drain(&store).await;

    let requests = sink.requests();
    let seen: Vec<(String, String)> = requests
        .iter()
        .map(|r| {
            (
                r.target.clone(),
                r.header("webhook-id").unwrap_or_default().to_string(),
            )
        })
        .collect();
    let crm = by_dest["crm"][0].to_string();
    let erp = by_dest["erp"][0].to_string();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.contains(&("/crm".into(), crm.clone())), "{seen:?}");
    assert_eq!(
        seen.iter()
            .filter(|s| **s == ("/erp".to_string(), erp.clone()))
            .count(),
        2,
        "erp's two attempts under one webhook-id: {seen:?}"
    );
    assert_ne!(crm, erp, "each delivery has its own webhook-id");
    for r in &requests {
        assert_eq!(r.json()["order_id"], "o-1");
    }
    for id in &kept {
        let row = outbox::get(db.as_ref(), *id)
            .await
            .expect("get")
            .expect("row");
        assert_eq!(row.status, OutboxStatus::Delivered, "{}", row.destination);
    }
}

async fn publishing_by_name_writes_one_row_subscribed_or_not(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    outbox::destinations::sync(db.as_ref(), &config(&sink), at(0))
        .await
        .expect("sync");
    let tx = db.begin().await.expect("begin");
    let id = outbox::enqueue(
        tx.as_ref(),
        &outbox::NewOutboxEvent {
            aggregate_type: "invoice".into(),
            aggregate_id: "i-1".into(),
            event_type: "invoice.sent".into(),
            destination: "billing".into(),
            payload: serde_json::json!({"invoice": "i-1"}),
        },
        at(0),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    assert_eq!(
        rows_by_destination(db.as_ref()).await,
        BTreeMap::from([("billing".to_string(), vec![id])])
    );
    // an event nobody subscribes to writes nothing
    let tx = db.begin().await.expect("begin");
    let none = outbox::publish(
        tx.as_ref(),
        &NewEvent {
            event_type: "invoice.sent".into(),
            ..paid("o-3", "EUR")
        },
        at(0),
    )
    .await
    .expect("publish");
    tx.commit().await.expect("commit");
    assert!(none.is_empty());
}

async fn the_database_follows_the_configuration(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    assert_eq!(
        outbox::destinations::sync(db.as_ref(), &cfg, at(0))
            .await
            .expect("sync"),
        4
    );
    assert_eq!(
        outbox::destinations::sync(db.as_ref(), &cfg, at(60))
            .await
            .expect("sync"),
        0,
        "an unchanged configuration writes nothing"
    );
    // audit now takes USD and EUR alike; billing is gone
    let text = serde_json::json!({"destinations": {
        "crm": {"url": sink.url("/crm"), "secrets": [SECRET], "subscribe": {"event_types": ["order.*"]}},
        "erp": {"url": sink.url("/erp"), "secrets": [SECRET], "subscribe": {"event_types": ["order.paid"],
            "filters": [{"pointer": "/currency", "equals": "EUR"}]}},
        "audit": {"url": sink.url("/audit"), "secrets": [SECRET], "subscribe": {"event_types": ["*"]}},
    }})
    .to_string();
    let changed = HookboxConfig::parse(&text, "test").expect("valid");
    assert_eq!(
        outbox::destinations::sync(db.as_ref(), &changed, at(120))
            .await
            .expect("sync"),
        2,
        "audit changed, billing removed"
    );
    let names = db
        .execute(
            &sql("SELECT name FROM outbox_destinations ORDER BY name"),
            &hookbox::params! {},
        )
        .await
        .expect("names")
        .rows
        .iter()
        .map(|r| r.text("name").expect("name"))
        .collect::<Vec<_>>();
    assert_eq!(names, ["audit", "crm", "erp"]);
    let ids = publish_in_tx(db.as_ref(), &paid("o-4", "USD"), true).await;
    assert_eq!(ids.len(), 2, "crm and audit");
    assert_eq!(
        rows_by_destination(db.as_ref())
            .await
            .keys()
            .collect::<Vec<_>>(),
        ["audit", "crm"]
    );
}

async fn a_bad_publish_is_refused_with_what_was_wrong(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let refused = |sql_text: &'static str| {
        let db = db.clone();
        async move {
            match db.execute(&sql(sql_text), &hookbox::params! {}).await {
                Err(DbError::Statement { message, .. }) => message,
                other => panic!("{sql_text}: not refused as a statement error: {other:?}"),
            }
        }
    };
    let cases = [
        (
            "SELECT hookbox_publish('', '{}'::jsonb, 'order', 'o-1')",
            "event_type is required",
        ),
        (
            "SELECT hookbox_publish('order.paid', '{}'::jsonb, 'order', NULL)",
            "aggregate_id is required",
        ),
        (
            "SELECT hookbox_publish('order.paid', NULL, 'order', 'o-1')",
            "payload is required",
        ),
        (
            "SELECT hookbox_publish('order.paid', '{}'::jsonb, repeat('t', 129), 'o-1')",
            "aggregate_type is 129 bytes, over the 128-byte limit",
        ),
        (
            "SELECT hookbox_publish('order.paid', jsonb_build_object('pad', repeat('x', 300000)), 'order', 'o-1')",
            "over the 262144-byte limit",
        ),
        (
            "SELECT hookbox_publish('order.paid', '{}'::jsonb, 'order', 'o-1', '')",
            "destination is empty",
        ),
        // the origin the processor passes (migration 29), checked
        (
            "SELECT hookbox_publish_at('order.paid', '{}'::jsonb, 'order', 'o-1', 'crm', now(), \
             NULL, NULL, NULL, '[1]'::jsonb)",
            "hookbox origin: [1] is not an object",
        ),
        (
            "SELECT hookbox_publish_at('order.paid', '{}'::jsonb, 'order', 'o-1', 'crm', now(), \
             NULL, NULL, NULL, '{\"inbox_id\": \"evt_1\"}'::jsonb)",
            "hookbox origin: inbox_id 'evt_1' is not a uuid",
        ),
        (
            "SELECT hookbox_publish_at('order.paid', '{}'::jsonb, 'order', 'o-1', 'crm', now(), \
             NULL, NULL, NULL, jsonb_build_object('inbox_id', gen_random_uuid(), 'secret', 'x'))",
            "hookbox origin: unknown key 'secret'",
        ),
        (
            "SELECT hookbox_publish_at('order.paid', '{}'::jsonb, 'order', 'o-1', 'crm', now(), \
             NULL, NULL, NULL, jsonb_build_object('inbox_id', gen_random_uuid(), 'event_id', \
             repeat('e', 3000)))",
            "over the 2048-byte limit",
        ),
        // set by hand, the transaction's origin is checked as it is used
        (
            "WITH s AS (SELECT set_config('hookbox.origin', '{\"partner\": 7}', true)) \
             SELECT (SELECT 1 FROM s), hookbox_publish('order.paid', '{}'::jsonb, 'order', 'o-1', 'crm')",
            "hookbox origin: partner is not a string",
        ),
    ];
    for (statement, reason) in cases {
        let message = refused(statement).await;
        assert!(message.contains(reason), "{statement}: {message}");
    }
    // the Rust API refuses a too-large payload before any call
    let tx = db.begin().await.expect("begin");
    let big = NewEvent {
        payload: serde_json::json!({"pad": "x".repeat(300_000)}),
        ..paid("o-5", "EUR")
    };
    let err = outbox::publish(tx.as_ref(), &big, at(0))
        .await
        .expect_err("too large");
    assert!(err.to_string().contains("enqueue_with_blobs"), "{err}");
    tx.rollback().await.expect("rollback");
    let n = fetch_one(
        db.as_ref(),
        &sql("SELECT count(*) AS n FROM outbox"),
        &hookbox::params! {},
    )
    .await
    .expect("count")
    .i64("n")
    .expect("n");
    assert_eq!(n, 0);
}

for_each_adapter!(
    one_event_reaches_every_subscriber_each_under_its_own_stable_webhook_id,
    publishing_by_name_writes_one_row_subscribed_or_not,
    the_database_follows_the_configuration,
    a_bad_publish_is_refused_with_what_was_wrong,
);
