//! Event types: create, get, list (archived and schemas on request),
//! PUT, PATCH, archive and unarchive, expunge; refusals; hookbox's
//! `enforceSchema` (a message whose payload the schema refuses is a 422).

use serde_json::json;

use super::common::{self, Adapter};
use super::{Harness, loc};
use crate::for_each_adapter;

for_each_adapter!(
    event_types_are_a_catalogue_as_svix_keeps_it,
    a_type_may_enforce_its_schema_on_what_is_published,
);

async fn event_types_are_a_catalogue_as_svix_keeps_it(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let schema = json!({"1": {"type": "object", "properties": {"id": {"type": "string"}}}});
    let created = h
        .call(
            "POST",
            "/api/v1/event-type",
            Some(
                json!({"name": "order.paid", "description": "An order was paid",
                        "schemas": schema, "featureFlag": "beta"}),
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["name"], "order.paid");
    assert_eq!(created.body["archived"], false);
    assert_eq!(created.body["deprecated"], false);
    assert_eq!(created.body["schemas"], schema);
    let twice = h
        .call(
            "POST",
            "/api/v1/event-type",
            Some(json!({"name": "order.paid", "description": "again"})),
        )
        .await;
    assert_eq!(
        (twice.status, twice.body["code"].as_str()),
        (409, Some("event_type_exists"))
    );
    let got = h.call("GET", "/api/v1/event-type/order.paid", None).await;
    assert_eq!((got.status, &got.body), (200, &created.body));

    let put_new = h
        .call(
            "PUT",
            "/api/v1/event-type/user.signup",
            Some(json!({"description": "A user signed up"})),
        )
        .await;
    assert_eq!(put_new.status, 201, "{put_new:?}");
    let put = h
        .call(
            "PUT",
            "/api/v1/event-type/user.signup",
            Some(json!({"description": "Signed up", "deprecated": true})),
        )
        .await;
    assert_eq!((put.status, &put.body["deprecated"]), (200, &json!(true)));
    let patched = h
        .call(
            "PATCH",
            "/api/v1/event-type/order.paid",
            Some(json!({"deprecated": true})),
        )
        .await;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.body["description"], "An order was paid");
    assert_eq!(patched.body["schemas"], schema);
    assert_eq!(patched.body["featureFlag"], "beta");

    // lists in name order; schemas only with with_content
    let list = h.call("GET", "/api/v1/event-type?limit=1", None).await;
    assert_eq!(list.body["data"][0]["name"], "order.paid");
    assert_eq!(list.body["data"][0]["schemas"], json!(null));
    assert_eq!(list.body["done"], false);
    let next = h
        .call(
            "GET",
            &format!(
                "/api/v1/event-type?limit=1&iterator={}",
                list.body["iterator"].as_str().expect("iterator")
            ),
            None,
        )
        .await;
    assert_eq!(next.body["data"][0]["name"], "user.signup");
    assert_eq!(next.body["done"], true);
    let full = h
        .call("GET", "/api/v1/event-type?with_content=true", None)
        .await;
    assert_eq!(full.body["data"][0]["schemas"], schema);

    // delete archives; listed again with include_archived; create unarchives
    let archived = h
        .call("DELETE", "/api/v1/event-type/order.paid", None)
        .await;
    assert_eq!(archived.status, 204);
    let names = |v: &serde_json::Value| {
        v["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    let visible = h.call("GET", "/api/v1/event-type", None).await;
    assert_eq!(names(&visible.body), ["user.signup"]);
    let all = h
        .call("GET", "/api/v1/event-type?include_archived=true", None)
        .await;
    assert_eq!(names(&all.body), ["order.paid", "user.signup"]);
    let back = h
        .call(
            "POST",
            "/api/v1/event-type",
            Some(json!({"name": "order.paid", "description": "Paid"})),
        )
        .await;
    assert_eq!((back.status, &back.body["archived"]), (201, &json!(false)));
    assert_eq!(back.body["description"], "Paid");
    let expunged = h
        .call("DELETE", "/api/v1/event-type/order.paid?expunge=true", None)
        .await;
    assert_eq!(expunged.status, 204);
    assert_eq!(
        h.call("GET", "/api/v1/event-type/order.paid", None)
            .await
            .status,
        404
    );
    assert_eq!(
        h.call("DELETE", "/api/v1/event-type/order.paid", None)
            .await
            .status,
        404
    );

    for (body, field) in [
        (json!({"description": "x"}), "body.name"),
        (json!({"name": "a b", "description": "x"}), "body.name"),
        (json!({"name": "a"}), "body.description"),
        (
            json!({"name": "a", "description": "x", "schemas": {"1": 5}}),
            "body.schemas",
        ),
        (
            json!({"name": "a", "description": "x", "featureFlag": "a b"}),
            "body.featureFlag",
        ),
        (
            json!({"name": "a", "description": "x", "groupName": "g"}),
            "body.groupName",
        ),
    ] {
        let r = h
            .call("POST", "/api/v1/event-type", Some(body.clone()))
            .await;
        assert_eq!(loc(&r), field, "{body}: {r:?}");
    }
    let r = h
        .call("GET", "/api/v1/event-type?include_archived=maybe", None)
        .await;
    assert_eq!(loc(&r), "query.include_archived");
    let _ = common::t0();
    h.conform();
}

async fn a_type_may_enforce_its_schema_on_what_is_published(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let schema = json!({"type": "object", "required": ["id"],
                        "properties": {"id": {"type": "string"}}});
    // a keyword enforcement does not know: refused naming schemas
    let r = h
        .call(
            "POST",
            "/api/v1/event-type",
            Some(
                json!({"name": "order.paid", "description": "paid", "enforceSchema": true,
                        "schemas": {"1": {"$ref": "#/x"}}}),
            ),
        )
        .await;
    assert_eq!(loc(&r), "body.schemas", "{r:?}");
    assert!(
        r.body["detail"][0]["msg"]
            .as_str()
            .is_some_and(|m| m.contains("$ref")),
        "{r:?}"
    );
    let created = h
        .call(
            "POST",
            "/api/v1/event-type",
            Some(
                json!({"name": "order.paid", "description": "paid", "enforceSchema": true,
                        "schemas": {"1": schema}}),
            ),
        )
        .await;
    assert_eq!(
        (created.status, &created.body["enforceSchema"]),
        (201, &json!(true))
    );
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
    let refused = h
        .call(
            "POST",
            "/api/v1/app/acme/msg",
            Some(json!({"eventType": "order.paid", "payload": {"id": 7}})),
        )
        .await;
    assert_eq!(loc(&refused), "body.payload", "{refused:?}");
    assert!(
        refused.body["detail"][0]["msg"]
            .as_str()
            .is_some_and(|m| m.contains("$.id: expected string, got number")),
        "{refused:?}"
    );
    let accepted = h
        .call(
            "POST",
            "/api/v1/app/acme/msg",
            Some(json!({"eventType": "order.paid", "payload": {"id": "o-1"}})),
        )
        .await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    // turned off by a patch: the same payload goes
    let patched = h
        .call(
            "PATCH",
            "/api/v1/event-type/order.paid",
            Some(json!({"enforceSchema": false})),
        )
        .await;
    assert_eq!(patched.body["enforceSchema"], false, "{patched:?}");
    let now_accepted = h
        .call(
            "POST",
            "/api/v1/app/acme/msg",
            Some(json!({"eventType": "order.paid", "payload": {"id": 7}})),
        )
        .await;
    assert_eq!(now_accepted.status, 202);
    h.conform();
}
