//! The operator page (`/admin`, docs/portal.md "The operator page") as the
//! management function serves it, through both database adapters: nothing
//! without an operator's link; a customer's portal link opens nothing here
//! (and an operator's link no portal); only `hookbox_management` mints
//! one; signed in, the page's API reads counts, rows, destinations and
//! tenants, and replays, retries and enables, each write with the
//! anti-forgery token; expired and logged-out links stop; the local
//! stack's vouched-for pages need no link.

use std::sync::Arc;

use hookbox::clock::Clock as _;
use hookbox::inbox::{self, NewInboxEvent};
use hookbox::management::operator::OperatorPorts;
use hookbox::management::{ApiRequest, ApiResponse, ManagementApi};
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::tenants::links;
use serde_json::{Value, json};

use super::Harness;
use super::common::{self, Adapter, sql};
use crate::for_each_adapter;

for_each_adapter!(
    the_operator_page_opens_with_an_operator_link_only,
    signed_in_the_operator_replays_retries_and_enables,
);

async fn call(
    api: &ManagementApi,
    method: &str,
    target: &str,
    body: Option<Value>,
    headers: &[(&str, String)],
) -> (u16, Value, ApiResponse) {
    let response = super::raw(api, method, target, body, headers).await;
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body, response)
}

/// Signs in with `key`: the cookie and the anti-forgery token.
async fn sign_in(api: &ManagementApi, key: &str) -> Option<(String, String)> {
    let (status, body, response) = call(
        api,
        "POST",
        "/admin/api/session",
        Some(json!({"key": key})),
        &[],
    )
    .await;
    if status != 200 {
        return None;
    }
    let cookie = response
        .headers
        .iter()
        .find(|(n, _)| n == "set-cookie")
        .map(|(_, v)| v.clone())
        .expect("a cookie");
    assert!(
        cookie.starts_with("hookbox_admin=") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let cookie = cookie.split(';').next().expect("pair").to_string();
    Some((cookie, body["csrf"].as_str().expect("csrf").to_string()))
}

async fn the_operator_page_opens_with_an_operator_link_only(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let api = &h.api;
    let (status, _, page) = call(api, "GET", "/admin/", None, &[]).await;
    assert_eq!(status, 200);
    assert!(
        page.headers
            .iter()
            .any(|(n, v)| n == "content-security-policy"
                && v.starts_with("default-src 'none'; script-src 'self'"))
    );
    let (status, body, _) = call(api, "GET", "/admin/api/stats", None, &[]).await;
    assert_eq!(
        (status, &body["code"]),
        (401, &json!("unauthorized")),
        "{body}"
    );

    // a customer's link opens its portal, not this page; and the reverse
    assert_eq!(
        h.call(
            "POST",
            "/api/v1/app",
            Some(json!({"name": "Acme", "uid": "acme"}))
        )
        .await
        .status,
        201
    );
    let customer = h
        .call(
            "POST",
            "/api/v1/auth/app-portal-access/acme",
            Some(json!({})),
        )
        .await
        .body["token"]
        .as_str()
        .expect("token")
        .to_string();
    assert!(sign_in(api, &customer).await.is_none());
    let (status, _, _) = call(
        api,
        "GET",
        "/admin/api/stats",
        None,
        &[("cookie", format!("hookbox_admin={customer}"))],
    )
    .await;
    assert_eq!(status, 401);
    let operator = links::mint_operator_link(h.db.as_ref(), 3600, "alice")
        .await
        .expect("mint");
    let (status, _, _) = call(
        api,
        "POST",
        "/portal/api/session",
        Some(json!({"key": operator.key.expose()})),
        &[],
    )
    .await;
    assert_eq!(status, 401, "an operator's link opens no portal");

    // only hookbox_management's members mint one: not a SaaS's backend
    let tx = h.db.begin().await.expect("begin");
    hookbox::store::fetch_one(
        tx.as_ref(),
        &sql("SET LOCAL ROLE hookbox_manager"),
        &hookbox::params! {},
    )
    .await
    .ok();
    let refused = hookbox::store::fetch_one(
        tx.as_ref(),
        &sql("SELECT hookbox_operator_link_create(3600, 'mallory') AS doc"),
        &hookbox::params! {},
    )
    .await
    .expect_err("hookbox_manager may not mint an operator's link");
    assert_eq!(refused.sqlstate(), Some("42501"), "{refused}");
    let _ = tx.rollback().await;
    let bad = links::mint_operator_link(h.db.as_ref(), 10 * 86_400, "alice")
        .await
        .expect_err("too long");
    assert!(
        bad.to_string()
            .contains("expiry must be 300 to 86400 seconds"),
        "{bad}"
    );

    // signed in: the session, then expired an hour and a second later
    let (cookie, csrf) = sign_in(api, operator.key.expose())
        .await
        .expect("signed in");
    let (status, session, _) = call(
        api,
        "GET",
        "/admin/api/session",
        None,
        &[("cookie", cookie.clone())],
    )
    .await;
    assert_eq!((status, &session["operator"]), (200, &json!("alice")));
    assert_eq!(session["csrf"], json!(csrf));
    h.clock.advance(chrono::Duration::seconds(3601));
    let (status, _, _) = call(
        api,
        "GET",
        "/admin/api/stats",
        None,
        &[("cookie", cookie.clone())],
    )
    .await;
    assert_eq!(status, 401);
    h.clock.advance(chrono::Duration::seconds(-3601));
    // logged out: the key opens nothing any more
    let (status, _, _) = call(
        api,
        "DELETE",
        "/admin/api/session",
        None,
        &[("cookie", cookie.clone()), ("x-hookbox-csrf", csrf.clone())],
    )
    .await;
    assert_eq!(status, 204);
    assert!(sign_in(api, operator.key.expose()).await.is_none());

    // the local stack's own pages, vouched for by the edge
    let response = api
        .handle(ApiRequest {
            method: "GET".into(),
            path: "/admin/api/session".into(),
            verified_principal: Some("local (loopback)".into()),
            ..ApiRequest::default()
        })
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&response.body).expect("json")["csrf"],
        Value::Null
    );
    let revoked = links::revoke_operator_links(h.db.as_ref())
        .await
        .expect("revoke");
    assert_eq!(revoked, 0, "the one minted is logged out already");
}

async fn signed_in_the_operator_replays_retries_and_enables(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let queue = Arc::new(MemoryQueue::new(
        MemoryQueueConfig::default(),
        h.clock.clone(),
    ));
    let api = h.api.clone().with_operator(OperatorPorts {
        queue: Some(queue.clone()),
        ..OperatorPorts::default()
    });
    let db = h.db.as_ref();
    // a quarantined inbox row, a dead delivery, a disabled destination, a tenant
    let now = h.clock.now();
    let id = inbox::insert_if_new(
        db,
        &NewInboxEvent {
            partner: "stripe".into(),
            event_id: "evt_1".into(),
            event_id_derived: false,
            event_type: Some("payment.received".into()),
            ordering_key: None,
            body: inbox::Body::Inline(br#"{"a":1}"#.to_vec()),
            headers: json!({}),
            signature_verified: true,
        },
        now,
    )
    .await
    .expect("insert")
    .id();
    common::count(
        db,
        &format!("WITH q AS (UPDATE inbox SET status = 'quarantined' WHERE id = '{id}' RETURNING 1) SELECT count(*) AS n FROM q"),
    )
    .await;
    assert_eq!(
        h.call(
            "POST",
            "/api/v1/app",
            Some(json!({"name": "Acme <b>", "uid": "acme"}))
        )
        .await
        .status,
        201
    );
    let operator = links::mint_operator_link(db, 3600, "alice")
        .await
        .expect("mint");
    let (cookie, csrf) = sign_in(&api, operator.key.expose())
        .await
        .expect("signed in");
    let with = |extra: Option<&str>| {
        let mut headers = vec![("cookie", cookie.clone())];
        if let Some(t) = extra {
            headers.push(("x-hookbox-csrf", t.to_string()));
        }
        headers
    };

    let (status, stats, _) = call(&api, "GET", "/admin/api/stats", None, &with(None)).await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["inbox"]["quarantined"], 1, "{stats}");
    assert_eq!(stats["history"], json!([]));
    let (_, rows, _) = call(
        &api,
        "GET",
        "/admin/api/inbox?status=quarantined",
        None,
        &with(None),
    )
    .await;
    assert_eq!(rows["rows"][0]["id"], json!(id.to_string()));
    let (status, tenants, _) = call(&api, "GET", "/admin/api/tenants", None, &with(None)).await;
    assert_eq!(status, 200);
    assert_eq!(tenants["data"][0]["name"], "Acme <b>");
    assert_eq!(tenants["data"][0]["endpoints"], 0);

    // a write without the token is refused and changes nothing
    let replay = format!("/admin/api/inbox/{id}/replay");
    let (status, body, _) = call(&api, "POST", &replay, None, &with(None)).await;
    assert_eq!((status, &body["code"]), (403, &json!("csrf")), "{body}");
    assert!(queue.is_empty());
    let (status, body, _) = call(&api, "POST", &replay, None, &with(Some(&csrf))).await;
    assert_eq!(
        (status, &body["outcome"]),
        (200, &json!("enqueued")),
        "{body}"
    );
    assert_eq!(queue.len(), 1);
    let (status, body, _) = call(
        &api,
        "POST",
        &format!("/admin/api/outbox/{}/retry", uuid::Uuid::now_v7()),
        None,
        &with(Some(&csrf)),
    )
    .await;
    assert_eq!(
        (status, &body["outcome"]),
        (200, &json!("missing")),
        "{body}"
    );
    let (status, body, _) = call(
        &api,
        "POST",
        "/admin/api/destinations/nowhere/enable",
        None,
        &with(Some(&csrf)),
    )
    .await;
    assert_eq!(
        (status, &body["outcome"]),
        (200, &json!("missing")),
        "{body}"
    );
    let (status, body, _) = call(
        &api,
        "POST",
        "/admin/api/dlq/redrive",
        None,
        &with(Some(&csrf)),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let (status, _, _) = call(
        &api,
        "POST",
        "/admin/api/inbox/not-a-uuid/replay",
        None,
        &with(Some(&csrf)),
    )
    .await;
    assert_eq!(status, 400);
    // the function without a queue refuses a replay, saying why
    let (status, body, _) = call(&h.api, "POST", &replay, None, &with(Some(&csrf))).await;
    assert_eq!(status, 409, "{body}");
}
