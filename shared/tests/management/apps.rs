//! Applications: Svix's create (with uid, `get_if_exists`), get by id or
//! uid, list pages, PUT (replace or create), PATCH, DELETE; refusals naming
//! the field; tokens and a verified identity; the audit trail.

use hookbox::management::ApiRequest;
use hookbox::tenants::manage;
use serde_json::json;

use super::common::{self, Adapter};
use super::{Harness, loc};
use crate::for_each_adapter;

for_each_adapter!(
    applications_are_managed_as_svix_manages_them,
    refusals_name_the_field_and_unsupported_routes_name_themselves,
    requests_need_a_configured_token_or_a_verified_identity,
);

async fn applications_are_managed_as_svix_manages_them(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let created = h
        .call(
            "POST",
            "/api/v1/app",
            Some(
                json!({"name": "Acme", "uid": "acme", "metadata": {"plan": "pro"},
                        "throttleRate": 20}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.body["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("app_"), "{id}");
    assert_eq!(created.body["uid"], "acme");
    assert_eq!(created.body["metadata"], json!({"plan": "pro"}));
    assert_eq!(created.body["throttleRate"], 20);

    // by id and by uid alike
    for key in [id.as_str(), "acme"] {
        let got = h.call("GET", &format!("/api/v1/app/{key}"), None).await;
        assert_eq!((got.status, &got.body), (200, &created.body));
    }
    // a uid is one application's: 409, or the existing one when asked
    let again = json!({"name": "Acme again", "uid": "acme"});
    let taken = h.call("POST", "/api/v1/app", Some(again.clone())).await;
    assert_eq!(
        (taken.status, taken.body["code"].as_str()),
        (409, Some("conflict"))
    );
    let existing = h
        .call("POST", "/api/v1/app?get_if_exists=true", Some(again))
        .await;
    assert_eq!((existing.status, &existing.body["id"]), (200, &json!(id)));

    // pages in creation order, Svix's ListResponse
    for n in 0..3 {
        let r = h
            .call(
                "POST",
                "/api/v1/app",
                Some(json!({"name": format!("T{n}")})),
            )
            .await;
        assert_eq!(r.status, 201);
    }
    let mut seen = Vec::new();
    let mut target = "/api/v1/app?limit=3".to_string();
    loop {
        let page = h.call("GET", &target, None).await;
        assert_eq!(page.status, 200, "{page:?}");
        assert_eq!(page.body["prevIterator"], json!(null));
        for app in page.body["data"].as_array().expect("data") {
            seen.push(app["name"].as_str().expect("name").to_string());
        }
        if page.body["done"] == json!(true) {
            break;
        }
        target = format!(
            "/api/v1/app?limit=3&iterator={}",
            page.body["iterator"].as_str().expect("iterator")
        );
    }
    assert_eq!(seen, ["Acme", "T0", "T1", "T2"]);

    // PUT replaces every field (what it leaves out takes its default) …
    let put = h
        .call(
            "PUT",
            "/api/v1/app/acme",
            Some(json!({"name": "Acme Inc", "uid": "acme"})),
        )
        .await;
    assert_eq!(put.status, 200, "{put:?}");
    assert_eq!(put.body["id"], json!(id));
    assert_eq!(put.body["metadata"], json!({}));
    assert_eq!(put.body["throttleRate"], json!(null));
    // … or creates (Svix's upsert)
    let upserted = h
        .call(
            "PUT",
            "/api/v1/app/globex",
            Some(json!({"name": "Globex", "uid": "globex"})),
        )
        .await;
    assert_eq!(
        (upserted.status, &upserted.body["uid"]),
        (201, &json!("globex"))
    );

    // PATCH changes what it names; null clears
    let patched = h
        .call(
            "PATCH",
            "/api/v1/app/acme",
            Some(json!({"throttleRate": 5, "metadata": {"tier": "gold"}})),
        )
        .await;
    assert_eq!(patched.status, 200, "{patched:?}");
    assert_eq!(patched.body["name"], "Acme Inc");
    assert_eq!(patched.body["throttleRate"], 5);
    assert_eq!(patched.body["metadata"], json!({"tier": "gold"}));
    let cleared = h
        .call(
            "PATCH",
            &format!("/api/v1/app/{id}"),
            Some(json!({"throttleRate": null})),
        )
        .await;
    assert_eq!(cleared.body["throttleRate"], json!(null));

    // every change through the API is in the audit trail as face api, by
    // the token's name
    let trail = manage::audit(h.db.as_ref(), &id, None, 100)
        .await
        .expect("audit");
    let actions: Vec<(&str, &str, &str)> = trail
        .data
        .iter()
        .map(|e| (e.action.as_str(), e.face.as_str(), e.principal.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("tenant.created", "api", "ci"),
            ("tenant.updated", "api", "ci"),
            ("tenant.updated", "api", "ci"),
            ("tenant.updated", "api", "ci"),
        ]
    );

    // DELETE: 204, then 404 as Svix shapes it
    let deleted = h.call("DELETE", "/api/v1/app/acme", None).await;
    assert_eq!((deleted.status, &deleted.body), (204, &json!(null)));
    let gone = h.call("GET", &format!("/api/v1/app/{id}"), None).await;
    assert_eq!(
        (gone.status, gone.body["code"].as_str()),
        (404, Some("not_found"))
    );
    let trail = manage::audit(h.db.as_ref(), &id, None, 100)
        .await
        .expect("audit");
    assert_eq!(
        trail
            .data
            .last()
            .map(|e| (e.action.as_str(), e.face.as_str())),
        Some(("tenant.deleted", "api"))
    );
    h.conform();
}

async fn refusals_name_the_field_and_unsupported_routes_name_themselves(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    for (body, field) in [
        (json!({"uid": "x"}), "body.name"),
        (json!({"name": ""}), "body.name"),
        (json!({"name": "n", "uid": "a b"}), "body.uid"),
        (json!({"name": "n", "uid": "app_x"}), "body.uid"),
        (json!({"name": "n", "throttleRate": 0}), "body.throttleRate"),
        (
            json!({"name": "n", "throttleRate": 70000}),
            "body.throttleRate",
        ),
        (json!({"name": "n", "metadata": {"a": 1}}), "body.metadata"),
        (json!({"name": "n", "colour": "red"}), "body.colour"),
        (json!(["not", "an", "object"]), "body"),
    ] {
        let r = h.call("POST", "/api/v1/app", Some(body.clone())).await;
        assert_eq!(loc(&r), field, "{body}: {r:?}");
        let msg = r.body["detail"][0]["msg"].as_str().unwrap_or_default();
        assert!(!msg.is_empty(), "{r:?}");
    }
    let r = h
        .call(
            "POST",
            "/api/v1/app",
            Some(json!({"name": "n", "colour": "red"})),
        )
        .await;
    assert!(
        r.body["detail"][0]["msg"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field colour")),
        "{r:?}"
    );
    for (target, field) in [
        ("/api/v1/app?limit=0", "query.limit"),
        ("/api/v1/app?limit=500", "query.limit"),
        ("/api/v1/app?order=descending", "query.order"),
        ("/api/v1/app?iterator=-app_1", "query.iterator"),
        ("/api/v1/app?before=2026-01-01", "query.before"),
    ] {
        let r = h.call("GET", target, None).await;
        assert_eq!(loc(&r), field, "{target}: {r:?}");
    }
    // Svix's routes hookbox does not serve answer 404 naming the route
    for (method, target) in [
        ("POST", "/api/v1/app/acme/msg/m1/endpoint/ep_1/resend"),
        ("GET", "/api/v1/app/acme/endpoint/ep_1/stats"),
        ("GET", "/api/v1/app/acme/endpoint/ep_1/headers"),
        ("DELETE", "/api/v1/app"),
    ] {
        let r = h.call(method, target, Some(json!({}))).await;
        assert_eq!(r.status, 404, "{method} {target}: {r:?}");
        assert_eq!(r.body["code"], "not_supported");
        assert!(
            r.body["detail"]
                .as_str()
                .is_some_and(|d| d.contains(&format!("{method} {target}"))),
            "{r:?}"
        );
    }
    assert_eq!(h.call("GET", "/api/v1/app/nobody", None).await.status, 404);
    assert_eq!(
        h.call("PATCH", "/api/v1/app/nobody", Some(json!({"name": "x"})))
            .await
            .status,
        404
    );
    h.conform();
}

async fn requests_need_a_configured_token_or_a_verified_identity(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let request = |auth: Option<&str>, principal: Option<&str>| {
        let mut headers = std::collections::BTreeMap::new();
        if let Some(a) = auth {
            headers.insert("authorization".to_string(), a.to_string());
        }
        ApiRequest {
            method: "POST".into(),
            path: "/api/v1/app".into(),
            headers,
            body: json!({"name": "X", "uid": "x"}).to_string().into(),
            verified_principal: principal.map(String::from),
            base_url: None,
            ..ApiRequest::default()
        }
    };
    for auth in [None, Some("Bearer wrong"), Some("hb_test_token")] {
        let r = h.send(request(auth, None)).await;
        assert_eq!(r.status, 401, "{auth:?}");
        assert_eq!(r.body["code"], "authentication_failed");
    }
    // an identity the edge verified (SigV4) needs no token
    let arn = "arn:aws:iam::123456789012:role/saas-backend";
    let r = h.send(request(None, Some(arn))).await;
    assert_eq!(r.status, 201, "{r:?}");
    let trail = hookbox::tenants::manage::audit(h.db.as_ref(), "x", None, 10)
        .await
        .expect("audit");
    assert_eq!(
        (
            trail.data[0].face.as_str(),
            trail.data[0].principal.as_str()
        ),
        ("api", arn)
    );
    // health needs nothing
    let health = h
        .send(ApiRequest {
            method: "GET".into(),
            path: "/api/v1/health".into(),
            ..ApiRequest::default()
        })
        .await;
    assert_eq!(health.status, 204);
    let _ = common::t0();
    h.conform();
}
