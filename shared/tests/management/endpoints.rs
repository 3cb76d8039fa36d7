//! Endpoints: create (with Svix's names, a uid, a chosen secret), get, list
//! pages, PUT (replace or create), PATCH, DELETE; the secret and its
//! rotation with a grace period; `disabled` holds deliveries (they wait and
//! go out on enable), never drops them; refusals naming the field.

use hookbox::clock::Clock as _;
use hookbox::tenants::{TenantEvent, manage, publish_to};
use serde_json::json;

use super::common::{self, Adapter, count};
use super::{Harness, loc};
use crate::for_each_adapter;

for_each_adapter!(
    endpoints_are_managed_with_svix_names,
    secrets_are_shown_and_rotated_with_a_grace_period,
    disabled_endpoints_hold_their_deliveries_until_enabled,
    endpoint_refusals_name_the_field,
);

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn app(h: &Harness, uid: &str) -> String {
    let r = h
        .call(
            "POST",
            "/api/v1/app",
            Some(json!({"name": uid, "uid": uid})),
        )
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    r.body["id"].as_str().expect("id").to_string()
}

async fn endpoints_are_managed_with_svix_names(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let acme = app(&h, "acme").await;
    app(&h, "globex").await;
    let created = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({
                "url": "https://hooks.acme.example/in",
                "uid": "orders",
                "description": "Orders",
                "eventTypes": ["order.paid", "order.shipped"],
                "channels": ["eu"],
                "metadata": {"team": "ops"},
                "throttleRate": 10,
                "headers": {"X-Tenant": "acme"},
            })),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let ep = created.body["id"].as_str().expect("id").to_string();
    assert!(ep.starts_with("ep_"));
    assert_eq!(created.body["uid"], "orders");
    assert_eq!(
        created.body["eventTypes"],
        json!(["order.paid", "order.shipped"])
    );
    assert_eq!(created.body["channels"], json!(["eu"]));
    assert_eq!(created.body["throttleRate"], 10);
    assert_eq!(created.body["disabled"], false);
    // the custom header is stored (its value is never shown back)
    let stored = manage::get_endpoint(h.db.as_ref(), "acme", "orders")
        .await
        .expect("endpoint");
    assert_eq!(stored.header_names, ["X-Tenant"]);
    assert!(!created.body.to_string().contains("X-Tenant"));

    for (app_key, ep_key) in [("acme", "orders"), (acme.as_str(), ep.as_str())] {
        let got = h
            .call(
                "GET",
                &format!("/api/v1/app/{app_key}/endpoint/{ep_key}"),
                None,
            )
            .await;
        assert_eq!((got.status, &got.body), (200, &created.body));
    }
    // another application's endpoint is not found there
    let elsewhere = h
        .call("GET", &format!("/api/v1/app/globex/endpoint/{ep}"), None)
        .await;
    assert_eq!(elsewhere.status, 404);

    for n in 0..2 {
        let r = h
            .call(
                "POST",
                "/api/v1/app/acme/endpoint",
                Some(json!({"url": format!("https://hooks.acme.example/{n}")})),
            )
            .await;
        assert_eq!(r.status, 201);
        assert_eq!(r.body["eventTypes"], json!(null));
    }
    let first = h
        .call("GET", "/api/v1/app/acme/endpoint?limit=2", None)
        .await;
    assert_eq!(first.body["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(first.body["done"], false);
    let rest = h
        .call(
            "GET",
            &format!(
                "/api/v1/app/acme/endpoint?limit=2&iterator={}",
                first.body["iterator"].as_str().expect("iterator")
            ),
            None,
        )
        .await;
    assert_eq!(rest.body["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(rest.body["done"], true);

    // PUT replaces Svix's fields (eventTypes and channels back to all) …
    let put = h
        .call(
            "PUT",
            "/api/v1/app/acme/endpoint/orders",
            Some(json!({"url": "https://hooks.acme.example/v2", "uid": "orders"})),
        )
        .await;
    assert_eq!(put.status, 200, "{put:?}");
    assert_eq!(put.body["id"], json!(ep));
    assert_eq!(put.body["eventTypes"], json!(null));
    assert_eq!(put.body["channels"], json!(null));
    assert_eq!(put.body["description"], "");
    // … but keeps its custom headers (not Svix's EndpointUpdate's)
    let stored = manage::get_endpoint(h.db.as_ref(), "acme", "orders")
        .await
        .expect("endpoint");
    assert_eq!(stored.header_names, ["X-Tenant"]);
    // … or creates
    let upserted = h
        .call(
            "PUT",
            "/api/v1/app/acme/endpoint/billing",
            Some(json!({"url": "https://hooks.acme.example/billing", "uid": "billing"})),
        )
        .await;
    assert_eq!(upserted.status, 201, "{upserted:?}");

    // PATCH changes what it names
    let patched = h
        .call(
            "PATCH",
            "/api/v1/app/acme/endpoint/orders",
            Some(json!({"filterTypes": ["invoice.paid"], "description": "Invoices"})),
        )
        .await;
    assert_eq!(patched.status, 200, "{patched:?}");
    assert_eq!(patched.body["eventTypes"], json!(["invoice.paid"]));
    assert_eq!(patched.body["url"], "https://hooks.acme.example/v2");

    let deleted = h
        .call("DELETE", "/api/v1/app/acme/endpoint/orders", None)
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(
        h.call("GET", "/api/v1/app/acme/endpoint/orders", None)
            .await
            .status,
        404
    );
    let trail = manage::audit(h.db.as_ref(), "acme", None, 100)
        .await
        .expect("audit");
    let of_ep: Vec<(&str, &str)> = trail
        .data
        .iter()
        .filter(|e| e.endpoint_id.as_deref() == Some(ep.as_str()))
        .map(|e| (e.action.as_str(), e.face.as_str()))
        .collect();
    assert_eq!(
        of_ep,
        [
            ("endpoint.created", "api"),
            ("endpoint.secret_sealed", "api"),
            ("endpoint.updated", "api"),
            ("endpoint.updated", "api"),
            ("endpoint.deleted", "api"),
        ]
    );
    h.conform();
}

async fn secrets_are_shown_and_rotated_with_a_grace_period(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    app(&h, "acme").await;
    let chosen = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://a.example/", "uid": "a", "secret": SECRET})),
        )
        .await;
    assert_eq!(chosen.status, 201, "{chosen:?}");
    assert!(!chosen.body.to_string().contains(SECRET));
    let shown = h
        .call("GET", "/api/v1/app/acme/endpoint/a/secret", None)
        .await;
    assert_eq!((shown.status, &shown.body), (200, &json!({"key": SECRET})));

    // generated when none is given, the same on every read
    let made = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://b.example/", "uid": "b"})),
        )
        .await;
    assert_eq!(made.status, 201);
    let key = h
        .call("GET", "/api/v1/app/acme/endpoint/b/secret", None)
        .await;
    let key = key.body["key"].as_str().expect("key").to_string();
    assert!(key.starts_with("whsec_"), "{key}");
    let again = h
        .call("GET", "/api/v1/app/acme/endpoint/b/secret", None)
        .await;
    assert_eq!(again.body["key"], json!(key));

    // rotation to a chosen key: it is current, the old one signs during
    // the grace period (both are the endpoint's signing secrets)
    let next = "whsec_dGhpcyBpcyB0aGUgbmV4dCBzZWNyZXQga2V5IQ==";
    let rotated = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint/b/secret/rotate",
            Some(json!({"key": next, "gracePeriodSeconds": 3600})),
        )
        .await;
    assert_eq!(
        (rotated.status, &rotated.body),
        (200, &json!({"key": next})),
        "the new secret, as Svix's later SDKs read it"
    );
    let now = h
        .call("GET", "/api/v1/app/acme/endpoint/b/secret", None)
        .await;
    assert_eq!(now.body["key"], next);
    let ep = manage::get_endpoint(h.db.as_ref(), "acme", "b")
        .await
        .expect("endpoint");
    let signing: Vec<String> = h
        .keeper
        .signing_secrets(h.db.as_ref(), &ep.id, h.clock.now())
        .await
        .expect("secrets")
        .iter()
        .map(|s| s.expose_secret().to_string())
        .collect();
    assert_eq!(signing, [key.clone(), next.to_string()]);
    // once the grace period is over, the new one alone
    h.clock.advance(chrono::Duration::seconds(3601));
    let signing = h
        .keeper
        .signing_secrets(h.db.as_ref(), &ep.id, h.clock.now())
        .await
        .expect("secrets");
    assert_eq!(signing.len(), 1);

    // a generated one, immediately (no body at all reads as {})
    let bare = h
        .call_with(
            "POST",
            "/api/v1/app/acme/endpoint/b/secret/rotate",
            None,
            &[],
        )
        .await;
    assert_eq!(bare.status, 200, "{bare:?}");
    let fresh = h
        .call("GET", "/api/v1/app/acme/endpoint/b/secret", None)
        .await;
    assert_ne!(fresh.body["key"], json!(next));
    assert_eq!(bare.body["key"], fresh.body["key"], "the generated one");

    for (body, field) in [
        (
            json!({"gracePeriodSeconds": 604_801}),
            "body.gracePeriodSeconds",
        ),
        (json!({"key": "not a secret"}), "body.key"),
        (json!({"grace": 5}), "body.grace"),
    ] {
        let r = h
            .call(
                "POST",
                "/api/v1/app/acme/endpoint/b/secret/rotate",
                Some(body.clone()),
            )
            .await;
        assert_eq!(loc(&r), field, "{body}");
    }
    let bad = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://c.example/", "secret": "whsec_short"})),
        )
        .await;
    assert_eq!(loc(&bad), "body.secret");
    // nothing of the refused endpoint was kept
    assert_eq!(
        count(h.db.as_ref(), "SELECT count(*) AS n FROM hookbox_endpoints").await,
        2
    );
    assert_eq!(
        h.call("GET", "/api/v1/app/acme/endpoint/nope/secret", None)
            .await
            .status,
        404
    );
    let trail = manage::audit(h.db.as_ref(), "acme", None, 100)
        .await
        .expect("audit");
    assert!(
        trail
            .data
            .iter()
            .filter(|e| e.action == "endpoint.secret_sealed")
            .all(|e| e.face == "api" && e.principal == "ci"),
        "{trail:?}"
    );
    assert!(
        !serde_json::to_string(&trail)
            .expect("json")
            .contains(SECRET)
    );
    h.conform();
}

async fn disabled_endpoints_hold_their_deliveries_until_enabled(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    app(&h, "acme").await;
    let r = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://a.example/", "uid": "a"})),
        )
        .await;
    let ep = r.body["id"].as_str().expect("id").to_string();
    let held = |db: std::sync::Arc<dyn hookbox::store::Database>, ep: String| async move {
        hookbox::store::fetch_one(
            db.as_ref(),
            &common::sql("SELECT held FROM outbox_destinations WHERE name = :name"),
            &hookbox::params! { "name" => ep },
        )
        .await
        .expect("row")
        .bool("held")
        .expect("held")
    };
    let off = h
        .call(
            "PATCH",
            "/api/v1/app/acme/endpoint/a",
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!((off.status, &off.body["disabled"]), (200, &json!(true)));
    assert!(held(h.db.clone(), ep.clone()).await);

    // published while disabled: kept, waiting
    let tx = h.db.begin().await.expect("begin");
    let out = publish_to(
        tx.as_ref(),
        "acme",
        &TenantEvent {
            event_type: "order.paid".into(),
            payload: json!({"n": 1}),
            aggregate: None,
            channels: None,
        },
        h.clock.now(),
    )
    .await
    .expect("publish");
    tx.commit().await.expect("commit");
    assert_eq!(out.len(), 1);

    let on = h
        .call(
            "PATCH",
            "/api/v1/app/acme/endpoint/a",
            Some(json!({"disabled": false})),
        )
        .await;
    assert_eq!((on.status, &on.body["disabled"]), (200, &json!(false)));
    assert!(!held(h.db.clone(), ep.clone()).await);
    assert_eq!(
        count(
            h.db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status = 'pending'"
        )
        .await,
        1,
        "the delivery held while disabled is still there"
    );
    // PUT with disabled: true holds it too; the audit says disabled/enabled
    let put = h
        .call(
            "PUT",
            "/api/v1/app/acme/endpoint/a",
            Some(json!({"url": "https://a.example/", "uid": "a", "disabled": true})),
        )
        .await;
    assert_eq!(put.body["disabled"], true);
    assert!(held(h.db.clone(), ep.clone()).await);
    let trail = manage::audit(h.db.as_ref(), "acme", None, 100)
        .await
        .expect("audit");
    let actions: Vec<&str> = trail.data.iter().map(|e| e.action.as_str()).collect();
    assert!(
        actions.ends_with(&["endpoint.disabled", "endpoint.enabled", "endpoint.disabled"]),
        "{actions:?}"
    );
    h.conform();
}

async fn endpoint_refusals_name_the_field(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    app(&h, "acme").await;
    for (body, field) in [
        (json!({}), "body.url"),
        (json!({"url": "ftp://files.example"}), "body.url"),
        (
            json!({"url": "https://a.example", "eventTypes": []}),
            "body.eventTypes",
        ),
        (
            json!({"url": "https://a.example", "eventTypes": ["order.*"]}),
            "body.eventTypes",
        ),
        (
            json!({"url": "https://a.example", "channels": ["c:1"]}),
            "body.channels",
        ),
        (
            json!({"url": "https://a.example", "channels": ["a b"]}),
            "body.channels",
        ),
        (
            json!({"url": "https://a.example", "uid": "ep_x"}),
            "body.uid",
        ),
        (
            json!({"url": "https://a.example", "throttleRate": 0}),
            "body.throttleRate",
        ),
        (
            json!({"url": "https://a.example", "headers": {"Host": "x"}}),
            "body.headers",
        ),
        (
            json!({"url": "https://a.example", "disabled": "no"}),
            "body.disabled",
        ),
        (
            json!({"url": "https://a.example", "ordered": true}),
            "body.ordered",
        ),
    ] {
        let r = h
            .call("POST", "/api/v1/app/acme/endpoint", Some(body.clone()))
            .await;
        assert_eq!(loc(&r), field, "{body}: {r:?}");
    }
    let r = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://a.example", "uid": "a"})),
        )
        .await;
    assert_eq!(r.status, 201);
    let twice = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": "https://b.example", "uid": "a"})),
        )
        .await;
    assert_eq!(
        (twice.status, twice.body["code"].as_str()),
        (409, Some("conflict"))
    );
    let none = h
        .call(
            "POST",
            "/api/v1/app/nobody/endpoint",
            Some(json!({"url": "https://b.example"})),
        )
        .await;
    assert_eq!(none.status, 404);
    assert_eq!(
        h.call("GET", "/api/v1/app/nobody/endpoint", None)
            .await
            .status,
        404
    );
    assert_eq!(
        count(h.db.as_ref(), "SELECT count(*) AS n FROM hookbox_endpoints").await,
        1
    );
    h.conform();
}
