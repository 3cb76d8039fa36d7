//! Messages through Svix's routes: create (202; a repeated eventId 409),
//! get, list; the relay delivers; attempts by message, by endpoint and by
//! id; recover; refusals naming the field.

use std::sync::Arc;
use std::time::Duration;

use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::relay::RelaySettings;
use hookbox::tenants::EndpointDirectory;
use hookbox_testkit::http_sink::HttpSink;
use serde_json::json;

use super::common::{self, Adapter};
use super::{Harness, loc};
use crate::for_each_adapter;

for_each_adapter!(messages_are_published_delivered_and_their_attempts_listed);

async fn messages_are_published_delivered_and_their_attempts_listed(adapter: Adapter) {
    let h = Harness::new(adapter).await;
    let sink = HttpSink::start().await;
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
    let ep = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint",
            Some(json!({"url": sink.url("/acme"), "uid": "in", "eventTypes": ["order.paid"]})),
        )
        .await;
    let ep_id = ep.body["id"].as_str().expect("id").to_string();

    let created = h
        .call(
            "POST",
            "/api/v1/app/acme/msg",
            Some(json!({"eventType": "order.paid", "eventId": "order-1",
                        "payload": {"order": 1}, "channels": ["eu"]})),
        )
        .await;
    assert_eq!(created.status, 202, "{created:?}");
    let msg = created.body["id"].as_str().expect("id").to_string();
    assert!(msg.starts_with("msg_"), "{msg}");
    assert_eq!(created.body["payload"], json!({"order": 1}));
    let again = h
        .call(
            "POST",
            "/api/v1/app/acme/msg",
            Some(json!({"eventType": "order.paid", "eventId": "order-1", "payload": {}})),
        )
        .await;
    assert_eq!(
        (again.status, again.body["code"].as_str()),
        (409, Some("conflict"))
    );
    for key in [msg.as_str(), "order-1"] {
        let got = h
            .call("GET", &format!("/api/v1/app/acme/msg/{key}"), None)
            .await;
        assert_eq!((got.status, &got.body["id"]), (200, &json!(msg)));
    }
    let listed = h.call("GET", "/api/v1/app/acme/msg?limit=10", None).await;
    assert_eq!(listed.body["data"][0]["id"], json!(msg));
    let bare = h
        .call("GET", "/api/v1/app/acme/msg?with_content=false", None)
        .await;
    assert_eq!(bare.body["data"][0]["payload"], json!({}));

    // the relay delivers it
    let relay = common::http_relay(
        h.db.clone(),
        h.clock.clone(),
        RelaySettings::new("management-messages"),
    )
    .with_endpoints(Arc::new(
        EndpointDirectory::new(h.keeper.clone(), vec!["127.0.0.0/8".parse().expect("net")])
            .with_ttl(Duration::ZERO),
    ));
    let store = ConfigStore::fixed(
        HookboxConfig::parse("{}", "test").expect("config"),
        h.clock.clone(),
    );
    // due at the database's time, a moment after the clock's start
    h.clock.advance(chrono::Duration::seconds(60));
    relay.drain(&store).await;
    assert_eq!(sink.requests().len(), 1);

    let by_msg = h
        .call("GET", &format!("/api/v1/app/acme/attempt/msg/{msg}"), None)
        .await;
    assert_eq!(by_msg.status, 200, "{by_msg:?}");
    let attempt = by_msg.body["data"][0].clone();
    assert_eq!(attempt["status"], 0);
    assert_eq!(attempt["statusText"], "success");
    assert_eq!(attempt["msgId"], json!(msg));
    assert_eq!(attempt["endpointId"], json!(ep_id));
    let by_ep = h
        .call("GET", "/api/v1/app/acme/attempt/endpoint/in?status=0", None)
        .await;
    assert_eq!(by_ep.body["data"][0]["id"], attempt["id"]);
    let failed = h
        .call("GET", "/api/v1/app/acme/attempt/endpoint/in?status=2", None)
        .await;
    assert_eq!(failed.body["data"], json!([]));
    let one = h
        .call(
            "GET",
            &format!(
                "/api/v1/app/acme/msg/{msg}/attempt/{}",
                attempt["id"].as_str().expect("id")
            ),
            None,
        )
        .await;
    assert_eq!((one.status, &one.body["id"]), (200, &attempt["id"]));

    let recovered = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint/in/recover",
            Some(json!({"since": "2020-01-01T00:00:00Z"})),
        )
        .await;
    assert_eq!(recovered.status, 202, "{recovered:?}");
    assert_eq!(recovered.body["task"], "endpoint.recover");

    for (body, field) in [
        (json!({"payload": {}}), "body.eventType"),
        (json!({"eventType": "a b", "payload": {}}), "body.eventType"),
        (json!({"eventType": "a", "payload": [1]}), "body.payload"),
        (
            json!({"eventType": "a", "payload": {}, "application": {"name": "x"}}),
            "body.application",
        ),
        (
            json!({"eventType": "a", "payload": {}, "channels": ["a", "b", "c", "d", "e", "f"]}),
            "body.channels",
        ),
    ] {
        let r = h
            .call("POST", "/api/v1/app/acme/msg", Some(body.clone()))
            .await;
        assert_eq!(loc(&r), field, "{body}: {r:?}");
    }
    for (target, field) in [
        (
            "/api/v1/app/acme/attempt/endpoint/in?status=1",
            "query.status",
        ),
        ("/api/v1/app/acme/msg?before=yesterday", "query.before"),
        (
            "/api/v1/app/acme/attempt/endpoint/in?status_code_class=200",
            "query.status_code_class",
        ),
    ] {
        let r = h.call("GET", target, None).await;
        assert_eq!(loc(&r), field, "{target}: {r:?}");
    }
    let r = h
        .call(
            "POST",
            "/api/v1/app/acme/endpoint/in/recover",
            Some(json!({})),
        )
        .await;
    assert_eq!(loc(&r), "body.since");
    assert_eq!(
        h.call(
            "POST",
            "/api/v1/app/nobody/msg",
            Some(json!({"eventType": "a", "payload": {}}))
        )
        .await
        .status,
        404
    );
    let ops = h.conform();
    for op in [
        "v1.message.create",
        "v1.message.get",
        "v1.message.list",
        "v1.message-attempt.list-by-msg",
        "v1.message-attempt.list-by-endpoint",
        "v1.message-attempt.get",
        "v1.endpoint.recover",
    ] {
        assert!(ops[op].as_u64() > Some(0), "{op}: {ops}");
    }
}
