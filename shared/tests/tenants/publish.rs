//! Publishing to one tenant: its matching endpoints only, never another
//! tenant's, never through `hookbox_publish`.

use std::collections::BTreeSet;

use super::common::{self, Adapter, at, migrated_db};
use crate::for_each_adapter;
use hookbox::outbox::{self, EnqueueError, NewEvent, NewOutboxEvent};
use hookbox::store::Database;
use hookbox::tenants::{TenantEvent, manage, publish_to};
use serde_json::json;

for_each_adapter!(
    an_event_reaches_exactly_the_tenants_matching_endpoints,
    publishing_without_a_tenant_never_reaches_an_endpoint,
    the_sync_from_the_configuration_never_touches_an_endpoint,
);

fn event(event_type: &str, channels: Option<&[&str]>) -> TenantEvent {
    TenantEvent {
        event_type: event_type.into(),
        payload: json!({"n": 1}),
        aggregate: None,
        channels: channels.map(|c| c.iter().map(|s| s.to_string()).collect()),
    }
}

async fn endpoint(db: &dyn Database, tenant: &str, uid: &str, spec: serde_json::Value) -> String {
    let mut spec = spec;
    spec["uid"] = json!(uid);
    spec["url"] = json!(format!("https://{uid}.example/hook"));
    manage::create_endpoint(db, tenant, &spec, None)
        .await
        .expect("endpoint")
        .id
}

async fn published(
    db: &dyn Database,
    tenant: &str,
    e: &TenantEvent,
) -> Result<BTreeSet<String>, EnqueueError> {
    let tx = db.begin().await.expect("begin");
    let out = publish_to(tx.as_ref(), tenant, e, at(0)).await?;
    tx.commit().await.expect("commit");
    Ok(out.into_iter().map(|d| d.endpoint_id).collect())
}

async fn an_event_reaches_exactly_the_tenants_matching_endpoints(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    for (uid, name) in [("acme", "Acme"), ("globex", "Globex")] {
        manage::create_tenant(db, &json!({"uid": uid, "name": name}), None)
            .await
            .expect("tenant");
    }
    let orders = endpoint(db, "acme", "orders", json!({"filter_types": ["order.*"]})).await;
    let invoices = endpoint(
        db,
        "acme",
        "invoices",
        json!({"filter_types": ["invoice.paid"]}),
    )
    .await;
    let eu = endpoint(db, "acme", "eu", json!({"channels": ["eu"]})).await;
    let off = endpoint(
        db,
        "acme",
        "off",
        json!({"filter_types": ["order.*"], "disabled": true}),
    )
    .await;
    let globex_all = endpoint(db, "globex", "all", json!({})).await;

    // types match; an endpoint with channels wants one of them; a disabled
    // endpoint still gets its rows (held)
    assert_eq!(
        published(db, "acme", &event("order.paid", None))
            .await
            .expect("publish"),
        BTreeSet::from([orders.clone(), off.clone()])
    );
    assert_eq!(
        published(db, "acme", &event("invoice.paid", Some(&["eu"])))
            .await
            .expect("publish"),
        BTreeSet::from([invoices.clone(), eu.clone()])
    );
    assert_eq!(
        published(db, "acme", &event("invoice.paid", Some(&["us"])))
            .await
            .expect("publish"),
        BTreeSet::from([invoices.clone()])
    );
    // nothing matches: nothing written, and no error
    assert_eq!(
        published(db, "acme", &event("user.created", None))
            .await
            .expect("publish"),
        BTreeSet::new()
    );
    // by the tenant's id as by its uid; never another tenant's endpoint
    let globex = manage::get_tenant(db, "globex").await.expect("globex");
    assert_eq!(
        published(db, &globex.id, &event("order.paid", None))
            .await
            .expect("publish"),
        BTreeSet::from([globex_all.clone()])
    );
    let rows = common::count(db, "SELECT count(*) AS n FROM outbox").await;
    assert_eq!(rows, 6);

    // a tenant that does not exist is an error, not silence
    let err = published(db, "initech", &event("order.paid", None))
        .await
        .expect_err("no such tenant");
    assert!(err.to_string().contains("no tenant 'initech'"), "{err}");
    // a rolled-back publish wrote nothing
    let tx = db.begin().await.expect("begin");
    publish_to(tx.as_ref(), "acme", &event("order.paid", None), at(0))
        .await
        .expect("publish");
    tx.rollback().await.expect("rollback");
    assert_eq!(
        common::count(db, "SELECT count(*) AS n FROM outbox").await,
        6
    );
}

async fn publishing_without_a_tenant_never_reaches_an_endpoint(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    let all = endpoint(db, "acme", "all", json!({})).await;
    let tx = db.begin().await.expect("begin");
    let ids = outbox::publish(
        tx.as_ref(),
        &NewEvent {
            event_type: "order.paid".into(),
            payload: json!({}),
            aggregate_type: "order".into(),
            aggregate_id: "1".into(),
        },
        at(0),
    )
    .await
    .expect("publish");
    assert!(
        ids.is_empty(),
        "an endpoint subscribes to `*` of its tenant's events only"
    );
    let err = outbox::enqueue(
        tx.as_ref(),
        &NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "1".into(),
            event_type: "order.paid".into(),
            destination: all.clone(),
            payload: json!({}),
        },
        at(0),
    )
    .await
    .expect_err("an endpoint is not a destination to name");
    assert!(err.to_string().contains("is a tenant's endpoint"), "{err}");
}

async fn the_sync_from_the_configuration_never_touches_an_endpoint(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    let ep = endpoint(db, "acme", "all", json!({"filter_types": ["order.*"]})).await;
    // every relay run syncs: with no destination configured, and with one
    let empty = hookbox::config::HookboxConfig::parse("{}", "test").expect("config");
    outbox::destinations::sync(db, &empty, at(0))
        .await
        .expect("sync");
    let one = hookbox::config::HookboxConfig::parse(
        r#"{"destinations": {"crm": {"url": "https://crm.example/in",
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="],
            "subscribe": {"event_types": ["*"]}}}}"#,
        "test",
    )
    .expect("config");
    outbox::destinations::sync(db, &one, at(1))
        .await
        .expect("sync");
    let kept = manage::get_endpoint(db, "acme", &ep)
        .await
        .expect("the endpoint is kept");
    assert_eq!(kept.filter_types, Some(vec!["order.*".to_string()]));
    assert_eq!(
        published(db, "acme", &event("order.paid", None))
            .await
            .expect("publish"),
        BTreeSet::from([ep.clone()])
    );
    // a configured destination may not take an endpoint's name
    let clash = format!(
        r#"{{"destinations": {{"{ep}": {{"url": "https://x.example",
            "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]}}}}}}"#
    );
    let err = hookbox::config::HookboxConfig::parse(&clash, "test").expect_err("refused");
    assert!(err.to_string().contains("`ep_`"), "{err}");
}
