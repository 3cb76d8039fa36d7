//! `Idempotency-Key` on POST: the same key and request answer the stored
//! answer (and act once), another request with the key is refused naming
//! the header, keys are the principal's own, and expire after 24 hours of
//! the injected clock.

use hookbox::management::ApiRequest;
use serde_json::json;

use super::common::{self, Adapter, count};
use super::{Harness, TOKEN};
use crate::for_each_adapter;

for_each_adapter!(
    a_key_answers_its_request_once_and_refuses_another,
    keys_are_the_principals_own_and_expire_after_a_day,
    concurrent_requests_with_one_key_act_once,
);

async fn apps(h: &Harness) -> i64 {
    count(h.db.as_ref(), "SELECT count(*) AS n FROM hookbox_tenants").await
}

async fn a_key_answers_its_request_once_and_refuses_another(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let key = [("idempotency-key", "k-1")];
    let body = json!({"name": "Acme"});
    let first = h
        .call_with("POST", "/api/v1/app", Some(body.clone()), &key)
        .await;
    assert_eq!(first.status, 201, "{first:?}");
    let second = h
        .call_with("POST", "/api/v1/app", Some(body.clone()), &key)
        .await;
    assert_eq!((second.status, &second.body), (201, &first.body));
    assert!(
        second
            .response
            .headers
            .contains(&("idempotent-replayed".into(), "true".into()))
    );
    assert_eq!(apps(&h).await, 1, "created once");

    // the same key for another body, query or path: refused, naming it
    for (target, other) in [
        ("/api/v1/app", json!({"name": "Globex"})),
        ("/api/v1/app?get_if_exists=true", body.clone()),
        (
            "/api/v1/event-type",
            json!({"name": "a.b", "description": "d"}),
        ),
    ] {
        let r = h.call_with("POST", target, Some(other), &key).await;
        assert_eq!(r.status, 409, "{target}: {r:?}");
        assert_eq!(r.body["code"], "idempotency_conflict");
        assert!(
            r.body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("Idempotency-Key")),
            "{r:?}"
        );
    }
    assert_eq!(apps(&h).await, 1);

    // endpoint creation and rotation act once too
    let ep_body = json!({"url": "https://a.example/", "uid": "a"});
    let ep_key = [("idempotency-key", "k-ep")];
    let app = first.body["id"].as_str().expect("id");
    let target = format!("/api/v1/app/{app}/endpoint");
    let e1 = h
        .call_with("POST", &target, Some(ep_body.clone()), &ep_key)
        .await;
    let e2 = h
        .call_with("POST", &target, Some(ep_body.clone()), &ep_key)
        .await;
    assert_eq!((e1.status, e2.status), (201, 201), "{e2:?}");
    assert_eq!(e1.body["id"], e2.body["id"]);
    let secret = h
        .call("GET", &format!("{target}/a/secret"), None)
        .await
        .body["key"]
        .clone();
    let rot_key = [("idempotency-key", "k-rot")];
    let rotate = format!("{target}/a/secret/rotate");
    let r1 = h
        .call_with("POST", &rotate, Some(json!({})), &rot_key)
        .await;
    let after_first = h
        .call("GET", &format!("{target}/a/secret"), None)
        .await
        .body["key"]
        .clone();
    let r2 = h
        .call_with("POST", &rotate, Some(json!({})), &rot_key)
        .await;
    let after_second = h
        .call("GET", &format!("{target}/a/secret"), None)
        .await
        .body["key"]
        .clone();
    assert_eq!((r1.status, r2.status), (200, 200));
    assert_ne!(after_first, secret);
    assert_eq!(after_second, after_first, "the replay did not rotate again");
    assert_eq!(
        (&r1.body["key"], &r2.body["key"]),
        (&after_first, &after_first),
        "the replay answers the rotated secret"
    );
    // which is not stored in clear with the key
    let stored = hookbox::store::fetch_one(
        h.db.as_ref(),
        &common::sql(
            "SELECT coalesce(response, '') AS r FROM hookbox_api_idempotency WHERE key = 'k-rot'",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("stored answer")
    .text("r")
    .expect("text");
    let bare = after_first
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("whsec_");
    assert!(
        !stored.contains(bare),
        "the rotated secret is stored with its Idempotency-Key: {stored}"
    );

    // a refusal is not stored: fixed and sent again with the key, it acts
    let k2 = [("idempotency-key", "k-2")];
    let refused = h
        .call_with("POST", "/api/v1/app", Some(json!({"name": ""})), &k2)
        .await;
    assert_eq!(refused.status, 422);
    let fixed = h
        .call_with("POST", "/api/v1/app", Some(json!({"name": "Fixed"})), &k2)
        .await;
    assert_eq!(fixed.status, 201, "{fixed:?}");

    // without a key, each POST acts; a key on GET is ignored as Svix does
    let a = h.call("POST", "/api/v1/app", Some(body.clone())).await;
    let b = h.call("POST", "/api/v1/app", Some(body.clone())).await;
    assert_ne!(a.body["id"], b.body["id"]);
    let long = "k".repeat(300);
    let r = h
        .call_with(
            "POST",
            "/api/v1/app",
            Some(body),
            &[("idempotency-key", long.as_str())],
        )
        .await;
    assert_eq!(super::loc(&r), "header.idempotency-key");
    h.conform();
}

async fn keys_are_the_principals_own_and_expire_after_a_day(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let body = json!({"name": "Acme"});
    let key = [("idempotency-key", "shared-key")];
    let mine = h
        .call_with("POST", "/api/v1/app", Some(body.clone()), &key)
        .await;
    assert_eq!(mine.status, 201);
    // another token's request with the same key is its own
    let theirs = h
        .send(ApiRequest {
            method: "POST".into(),
            path: "/api/v1/app".into(),
            headers: [
                (
                    "authorization".to_string(),
                    "Bearer hb_other_token".to_string(),
                ),
                ("idempotency-key".to_string(), "shared-key".to_string()),
            ]
            .into(),
            body: body.to_string().into(),
            ..ApiRequest::default()
        })
        .await;
    assert_eq!(theirs.status, 201);
    assert_ne!(theirs.body["id"], mine.body["id"]);
    assert_eq!(apps(&h).await, 2);

    // within 24 hours: the stored answer; after: a new request
    h.clock.advance(chrono::Duration::seconds(24 * 3600 - 60));
    let replay = h
        .call_with("POST", "/api/v1/app", Some(body.clone()), &key)
        .await;
    assert_eq!(replay.body["id"], mine.body["id"]);
    h.clock.advance(chrono::Duration::seconds(61));
    let fresh = h
        .call_with("POST", "/api/v1/app", Some(body.clone()), &key)
        .await;
    assert_eq!(fresh.status, 201);
    assert_ne!(fresh.body["id"], mine.body["id"]);
    assert_eq!(apps(&h).await, 3);
    // expired keys are cleared as new ones are stored
    h.clock.advance(chrono::Duration::seconds(25 * 3600));
    let _ = h
        .call_with(
            "POST",
            "/api/v1/app",
            Some(json!({"name": "Later"})),
            &[("idempotency-key", "later")],
        )
        .await;
    assert_eq!(
        count(
            h.db.as_ref(),
            "SELECT count(*) AS n FROM hookbox_api_idempotency"
        )
        .await,
        1
    );
    let _ = (common::t0(), TOKEN);
    h.conform();
}

async fn concurrent_requests_with_one_key_act_once(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let body = json!({"name": "Acme"});
    let key = [("idempotency-key", "race")];
    let (a, b) = tokio::join!(
        h.call_with("POST", "/api/v1/app", Some(body.clone()), &key),
        h.call_with("POST", "/api/v1/app", Some(body.clone()), &key),
    );
    assert_eq!((a.status, b.status), (201, 201), "{a:?} {b:?}");
    assert_eq!(a.body["id"], b.body["id"]);
    assert_eq!(apps(&h).await, 1);
    h.conform();
}
