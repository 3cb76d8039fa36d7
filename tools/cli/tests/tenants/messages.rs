//! `hookbox message create|get|list|attempts` and `hookbox endpoint
//! attempts|recover|drop-held` through the built binary, both adapters: an
//! event id publishing once, pages, the attempts of a receiver that fails
//! then succeeds (the real relay, on a clock the test moves), recover
//! sending the failed deliveries again, a held endpoint's deliveries dropped
//! and counted, refusals (exit 1) and usage errors (exit 2).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::ManualClock;
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::relay::{FixedJitter, HttpSender, Relay, RelaySettings};
use hookbox::tenants::{EndpointDirectory, SecretKeeper};
use hookbox::vault::local::LocalVault;
use hookbox_testkit::http_sink::HttpSink;
use serde_json::Value;

use super::support::{Adapter, setup, str_of};

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|item| str_of(item, "id").to_owned())
        .collect()
}

async fn messages_attempts_and_recover_through_the_cli(adapter: Adapter) {
    let (_test_db, db, mut cli) = setup(adapter).await;
    let sink = HttpSink::start().await;
    // moved ahead of the database's clock before each run: what the CLI
    // published meanwhile is due
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory = EndpointDirectory::new(keeper, vec!["127.0.0.0/8".parse().expect("net")])
        .with_ttl(Duration::from_secs(10));
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        RelaySettings::new("cli-messages"),
    )
    .with_jitter(Arc::new(FixedJitter(0.0)))
    .with_endpoints(Arc::new(directory));
    let store = ConfigStore::fixed(
        HookboxConfig::parse("{}", "test").expect("config"),
        clock.clone(),
    );

    cli.ok(&["tenant", "create", "--name", "Acme", "--uid", "acme"])
        .await;
    let ep = cli
        .ok(&[
            "endpoint",
            "create",
            "acme",
            "--uid",
            "main",
            "--url",
            &sink.url("/hook"),
            "--filter-type",
            "order.*",
        ])
        .await;
    let ep_id = str_of(&ep, "id").to_owned();

    // published once per event id
    let create = [
        "message",
        "create",
        "acme",
        "--event-type",
        "order.paid",
        "--payload",
        r#"{"n": 1}"#,
        "--event-id",
        "evt-1",
        "--channel",
        "eu",
    ];
    let first = cli.ok(&create).await;
    assert!(str_of(&first, "id").starts_with("msg_"), "{first}");
    assert_eq!(
        (
            &first["written"],
            &first["duplicate"],
            &first["payload"]["n"]
        ),
        (&Value::from(1), &Value::Bool(false), &Value::from(1))
    );
    let again = cli.ok(&create).await;
    assert_eq!(
        (&again["id"], &again["written"], &again["duplicate"]),
        (&first["id"], &Value::from(0), &Value::Bool(true))
    );
    let second = cli
        .ok(&[
            "message",
            "create",
            "acme",
            "--event-type",
            "order.sent",
            "--payload",
            "[2]",
        ])
        .await;
    let unmatched = cli
        .ok(&[
            "message",
            "create",
            "acme",
            "--event-type",
            "user.new",
            "--payload",
            "3",
        ])
        .await;
    assert_eq!(unmatched["written"], 0, "recorded, not delivered");
    let err = cli
        .fails(
            &[
                "message",
                "create",
                "acme",
                "--event-type",
                "a",
                "--payload",
                "{nope",
            ],
            2,
            &[],
        )
        .await;
    assert!(err.contains("--payload is not JSON"), "{err}");
    let err = cli
        .fails(
            &[
                "message",
                "create",
                "nobody",
                "--event-type",
                "a",
                "--payload",
                "1",
            ],
            1,
            &[],
        )
        .await;
    assert!(err.contains("no tenant 'nobody'"), "{err}");

    // read, listed in pages, filtered
    let got = cli.ok(&["message", "get", "acme", "evt-1"]).await;
    assert_eq!(got["id"], first["id"]);
    assert_eq!(got["channels"], serde_json::json!(["eu"]));
    let page = cli.ok(&["message", "list", "acme", "--limit", "2"]).await;
    assert_eq!(page["done"], false);
    let next = cli
        .ok(&[
            "message",
            "list",
            "acme",
            "--after",
            str_of(&page, "iterator"),
        ])
        .await;
    let mut all = ids(&page);
    all.extend(ids(&next));
    let expected: Vec<String> = [&first, &second, &unmatched]
        .iter()
        .map(|m| str_of(m, "id").to_owned())
        .collect();
    assert_eq!(all, expected);
    let sent = cli
        .ok(&[
            "message",
            "list",
            "acme",
            "--event-type",
            "order.sent",
            "--since",
            "1h",
        ])
        .await;
    assert_eq!(ids(&sent), [str_of(&second, "id")]);

    // the receiver fails: both deliveries have a failed attempt
    sink.respond_with_body(503, "try later");
    clock.advance(chrono::Duration::seconds(60));
    relay.drain(&store).await;
    assert_eq!(sink.requests().len(), 2);
    let attempts = cli.ok(&["endpoint", "attempts", "acme", "main"]).await;
    let data = attempts["data"].as_array().expect("data");
    assert_eq!(data.len(), 2, "{attempts}");
    for a in data {
        assert_eq!(
            (&a["status"], &a["status_code"], &a["response"]),
            (
                &Value::from("failed"),
                &Value::from(503),
                &Value::from("try later")
            )
        );
        assert_eq!(a["endpoint_id"], ep_id.as_str());
    }
    let of_first = cli.ok(&["message", "attempts", "acme", "evt-1"]).await;
    assert_eq!(of_first["data"].as_array().expect("data").len(), 1);
    assert_eq!(of_first["data"][0]["message_id"], first["id"]);
    let none = cli
        .ok(&[
            "endpoint", "attempts", "acme", "main", "--status", "success",
        ])
        .await;
    assert_eq!(ids(&none).len(), 0);
    cli.fails(
        &["endpoint", "attempts", "acme", "main", "--status", "maybe"],
        2,
        &[],
    )
    .await;

    // recover: both failed deliveries are due now; the receiver is back
    let err = cli
        .fails(
            &[
                "endpoint", "recover", "acme", "main", "--since", "1h", "--until", "2h",
            ],
            2,
            &[],
        )
        .await;
    assert!(err.contains("must come after --since"), "{err}");
    let recovered = cli
        .ok(&["endpoint", "recover", "acme", "main", "--since", "1h"])
        .await;
    assert_eq!(
        (
            &recovered["recovered"],
            &recovered["failed"],
            &recovered["dead"]
        ),
        (&Value::from(2), &Value::from(2), &Value::from(0))
    );
    sink.respond_with_body(200, "ok");
    clock.advance(chrono::Duration::seconds(60));
    relay.drain(&store).await;
    assert_eq!(sink.requests().len(), 4);
    let ok = cli
        .ok(&[
            "endpoint", "attempts", "acme", &ep_id, "--status", "success",
        ])
        .await;
    assert_eq!(ids(&ok).len(), 2);
    assert!(
        ok["data"]
            .as_array()
            .expect("data")
            .iter()
            .all(|a| a["delivery_status"] == "delivered" && a["attempt"] == 1),
        "{ok}"
    );

    let trail = cli
        .ok(&["tenant", "audit", "acme", "--limit", "1000"])
        .await;
    let entry = trail["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|e| e["action"] == "endpoint.recovered")
        .unwrap_or_else(|| panic!("recovered in {trail}"));
    assert_eq!(
        (&entry["face"], &entry["principal"]),
        (&Value::from("cli"), &Value::from("operator-ann"))
    );

    // drop-held: refused while the endpoint is enabled; once disabled, what
    // waits is dropped and counted
    let err = cli
        .fails(&["endpoint", "drop-held", "acme", "main"], 1, &[])
        .await;
    assert!(err.contains("is not held"), "{err}");
    cli.ok(&["endpoint", "disable", "acme", "main"]).await;
    cli.ok(&[
        "message",
        "create",
        "acme",
        "--event-type",
        "order.paid",
        "--payload",
        "{}",
    ])
    .await;
    let dropped = cli.ok(&["endpoint", "drop-held", "acme", "main"]).await;
    assert_eq!(
        (&dropped["id"], &dropped["dropped"]),
        (&Value::from(ep_id.as_str()), &Value::from(1))
    );

    let gone = cli.ok(&["tenant", "delete", "acme"]).await;
    assert_eq!(gone["messages"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_messages_attempts_and_recover_through_the_cli() {
    messages_attempts_and_recover_through_the_cli(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_api_messages_attempts_and_recover_through_the_cli() {
    messages_attempts_and_recover_through_the_cli(Adapter::DataApi).await;
}
