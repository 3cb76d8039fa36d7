//! Issue 43, acceptance 1, on the local stack through both database
//! adapters: a routed webhook delivered to one destination and dead at
//! another. The process's log lines (the functions' format, captured) are
//! each one JSON object with `level` and an RFC 3339 `timestamp`; the lines
//! of ingest, the processor and the relay about the webhook share its
//! `inbox_id`; its deliveries (what `hookbox inbox show` lists) are the
//! delivered one and the dead one.
//!
//! Two webhooks, for the two paths a routed webhook takes: a small one is
//! forwarded by ingest in the statement that stores it (the processor never
//! sees it), a large one (its body in the blob store) by the processor.

use std::sync::OnceLock;
use std::time::Duration;

use hookbox::outbox::{self, OutboxStatus, TrailDelivery};
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox_local::{LocalStack, Options};
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::logs::CapturedLogs;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt as _;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// The lines this process writes, in the functions' format (installed
/// once for every test of this binary).
fn logs() -> &'static CapturedLogs {
    static LOGS: OnceLock<CapturedLogs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = CapturedLogs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(hookbox::log_format::layer(move || writer.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        logs
    })
}

fn config(dir: &std::path::Path, ok: &str, gone: &str) -> std::path::PathBuf {
    let destination = |url: &str| {
        json!({
            "url": url,
            "secrets": [SECRET],
            "allowed_networks": ["127.0.0.0/8", "::1/128"],
        })
    };
    let text = json!({
        "partners": {
            "shop": {
                "signature": { "scheme": "standard-webhooks" },
                "secrets": [SECRET],
                "event_id": { "header": "webhook-id" },
                "event_type": "/type",
                "routes": [
                    { "to": "ok", "event_types": ["*"] },
                    { "to": "gone", "event_types": ["*"] },
                ],
            },
        },
        "destinations": { "ok": destination(ok), "gone": destination(gone) },
    });
    let path = dir.join("partners.json");
    std::fs::write(&path, text.to_string()).expect("config");
    path
}

async fn post(stack: &LocalStack, id: &str, body: &[u8]) -> Uuid {
    let signed =
        sign_standard_webhooks(id, chrono::Utc::now(), body, &[Secret::new(SECRET)]).expect("sign");
    let answer = reqwest::Client::new()
        .post(format!("{}/webhooks/shop", stack.url()))
        .header("content-type", "application/json")
        .header("webhook-id", signed.id)
        .header("webhook-timestamp", signed.timestamp)
        .header("webhook-signature", signed.signature)
        .body(body.to_vec())
        .send()
        .await
        .expect("posted");
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.expect("json");
    answer["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an inbox id in {answer}"))
}

/// The webhook's deliveries once both are finished.
async fn finished(stack: &LocalStack, inbox_id: Uuid) -> Vec<TrailDelivery> {
    let db = stack.db();
    let wait = async {
        loop {
            let listed = outbox::deliveries_of(db.as_ref(), inbox_id)
                .await
                .expect("deliveries");
            if listed.len() == 2 && listed.iter().all(|d| d.status != OutboxStatus::Pending) {
                return listed;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .unwrap_or_else(|_| panic!("the deliveries of {inbox_id} did not finish in 60 s"))
}

async fn a_routed_webhook_leaves_one_trail(data_api: bool) {
    let logs = logs();
    let ok = HttpSink::start().await;
    let gone = HttpSink::start().await;
    gone.respond_with(410);
    let dir = tempfile::tempdir().expect("dir");
    let stack = LocalStack::start(Options {
        port: 0,
        data_api,
        config: Some(config(dir.path(), &ok.url("/in"), &gone.url("/in"))),
        ..Options::default()
    })
    .await
    .expect("the local stack starts");

    let tag = if data_api { "data-api" } else { "postgres" };
    let small = post(
        &stack,
        &format!("evt-small-{tag}"),
        br#"{"type":"order.paid","id":1}"#,
    )
    .await;
    let padding = "x".repeat(40 * 1024);
    let large = post(
        &stack,
        &format!("evt-large-{tag}"),
        json!({"type": "order.paid", "padding": padding})
            .to_string()
            .as_bytes(),
    )
    .await;

    for (id, path) in [(small, "ingest"), (large, "processor")] {
        let mut listed = finished(&stack, id).await;
        listed.sort_by(|a, b| a.destination.cmp(&b.destination));
        let outcomes: Vec<_> = listed
            .iter()
            .map(|d| (d.destination.as_str(), d.status, d.last_status_code))
            .collect();
        assert_eq!(
            outcomes,
            [
                ("gone", OutboxStatus::Dead, Some(410)),
                ("ok", OutboxStatus::Delivered, Some(200)),
            ],
            "forwarded by {path}"
        );
    }
    stack.stop().await;

    // every line: one JSON object with a level and an RFC 3339 timestamp
    let lines = logs.json_lines();
    for line in &lines {
        assert!(
            ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
                .contains(&line["level"].as_str().unwrap_or("")),
            "{line}"
        );
        let at = line["timestamp"].as_str().unwrap_or_default();
        assert!(chrono::DateTime::parse_from_rfc3339(at).is_ok(), "{line}");
    }
    // the lines about each webhook, by the module that wrote them
    let about = |id: Uuid| {
        let id = id.to_string();
        lines
            .iter()
            .filter(|l| l["inbox_id"] == id.as_str())
            .collect::<Vec<_>>()
    };
    let from = |lines: &[&Value], module: &str| {
        lines
            .iter()
            .filter(|l| l["target"].as_str().unwrap_or("").starts_with(module))
            .count()
    };
    for (id, through_processor) in [(small, false), (large, true)] {
        let mine = about(id);
        assert!(
            from(&mine, "hookbox::inbox") > 0,
            "ingest's lines about {id}"
        );
        assert_eq!(
            from(&mine, "hookbox::processing") > 0,
            through_processor,
            "the processor's lines about {id}"
        );
        if through_processor {
            let routed = mine
                .iter()
                .find(|l| l["message"] == "routed")
                .unwrap_or_else(|| panic!("the processor's routed line about {id}: {mine:?}"));
            assert_eq!(routed["deliveries"], 2, "{routed}");
            assert_eq!(routed["partner"], "shop");
        }
        let relay: Vec<_> = mine
            .iter()
            .filter(|l| {
                l["target"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("hookbox::outbox::relay")
            })
            .collect();
        let delivered = relay
            .iter()
            .find(|l| l["message"] == "delivered")
            .unwrap_or_else(|| panic!("the relay's delivered line about {id}: {mine:?}"));
        assert_eq!(delivered["destination"], "ok");
        assert_eq!(delivered["partner"], "shop");
        assert!(delivered["delivery_id"].is_string(), "{delivered}");
        assert!(delivered["end_to_end_latency_ms"].is_u64(), "{delivered}");
        assert!(
            relay
                .iter()
                .any(|l| l["destination"] == "gone" && l["level"] == "WARN"),
            "the relay's line about the dead delivery of {id}: {relay:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_webhook_leaves_one_trail_through_postgres() {
    a_routed_webhook_leaves_one_trail(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_webhook_leaves_one_trail_through_the_data_api() {
    a_routed_webhook_leaves_one_trail(true).await;
}
