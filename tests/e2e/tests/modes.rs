//! The local stack's other modes: the Data API adapter (through
//! tools/local-data-api), a real SQS API (moto), and a restart on a database
//! with rows left pending by a previous run.

use hookbox::inbox::{self, NewInboxEvent};
use hookbox_e2e::{Webhook, eventually, number, stack, text};
use hookbox_local::QueueChoice;
use hookbox_testkit::{TestDb, moto};
use serde_json::json;

const ORDER_STATUS: &str = "SELECT status AS t FROM example_orders WHERE order_id = :p";

async fn paid(stack: &hookbox_local::LocalStack, order_id: &str) {
    let db = stack.db();
    let payment =
        Webhook::demo(json!({"type": "payment.received", "order_id": order_id, "amount": 1}));
    let (status, body) = payment.send(stack).await;
    assert_eq!(status, 200, "{body}");
    eventually("the payment processed", || async {
        (text(db.as_ref(), ORDER_STATUS, order_id).await.as_deref() == Some("paid")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_data_api() {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |o| o.data_api = true).await;
    paid(&stack, "o-api").await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_kb_webhook_through_the_data_api_is_processed_and_its_outbound_webhook_delivered() {
    // Before bodies went to the blob store, the claim of its batch failed on
    // the Data API ("a result row is 100383 bytes") and the whole batch
    // stayed `processing`.
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |o| o.data_api = true).await;
    let db = stack.db();
    let small =
        Webhook::demo(json!({"type": "payment.received", "order_id": "o-small", "amount": 1}));
    let big = Webhook::demo(json!({
        "type": "payment.received", "order_id": "o-100k", "amount": 2, "pad": "p".repeat(100_000)
    }));
    assert_eq!(big.send(&stack).await.0, 200);
    assert_eq!(small.send(&stack).await.0, 200);
    for order in ["o-100k", "o-small"] {
        eventually("both orders paid", || async {
            (text(db.as_ref(), ORDER_STATUS, order).await.as_deref() == Some("paid")).then_some(())
        })
        .await;
    }
    // the body is in the blob directory, not in the row
    let key = text(
        db.as_ref(),
        "SELECT body_key AS t FROM inbox WHERE event_id = :p AND body IS NULL",
        &big.id,
    )
    .await
    .expect("stored by reference");
    assert!(stack.blob_dir().join(&key).is_file(), "{key}");
    // its outbound webhook came back in through the stack's own inbox
    eventually("the outbound webhook of o-100k delivered", || async {
        (number(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE aggregate_id = 'o-100k' AND status = 'delivered'",
        )
        .await
            == 1)
            .then_some(())
    })
    .await;
    eventually("nothing left active", || async {
        (number(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status NOT IN ('processed')",
        )
        .await
            == 0)
            .then_some(())
    })
    .await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_real_sqs_api() {
    let test_db = TestDb::create().await;
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("local"), 30, 4).await;
    let stack = stack(&test_db, |o| {
        o.queue = QueueChoice::Sqs {
            endpoint: endpoint.clone(),
            queue_url: queue.url.clone(),
        };
    })
    .await;
    paid(&stack, "o-sqs").await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_picks_up_rows_a_previous_run_left_pending() {
    let test_db = TestDb::create().await;
    // a first run that stored an event and died before its message was processed
    let first = stack(&test_db, |_| {}).await;
    let db = first.db();
    first.stop().await;
    let body = json!({"type": "payment.received", "order_id": "o-left", "amount": 2}).to_string();
    inbox::insert_if_new(
        db.as_ref(),
        &NewInboxEvent {
            partner: "demo".into(),
            event_id: "msg_left_behind".into(),
            event_id_derived: false,
            event_type: Some("payment.received".into()),
            ordering_key: Some("o-left".into()),
            body: hookbox::inbox::Body::Inline(body.into_bytes()),
            headers: json!({}),
            signature_verified: true,
        },
        chrono::Utc::now(),
    )
    .await
    .expect("insert");

    let second = stack(&test_db, |_| {}).await;
    let db = second.db();
    eventually("the left-behind payment processed", || async {
        (text(db.as_ref(), ORDER_STATUS, "o-left").await.as_deref() == Some("paid")).then_some(())
    })
    .await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_answers_only_this_machines_own_pages() {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |_| {}).await;
    let client = reqwest::Client::new();
    let redrive = format!("{}/admin/api/dlq/redrive", stack.url());
    // a tool (no Origin) and the page itself (same origin) may
    let ok = client.post(&redrive).send().await.expect("post");
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.json::<serde_json::Value>().await.expect("json"),
        json!({ "moved": 0 })
    );
    let same = client
        .post(&redrive)
        .header("origin", stack.url())
        .send()
        .await
        .expect("post");
    assert_eq!(same.status(), 200);
    // another site's page may not, nor a DNS-rebinding name
    let cross = client
        .post(&redrive)
        .header("origin", "http://attacker.example")
        .send()
        .await
        .expect("post");
    assert_eq!(cross.status(), 403);
    let port = stack.url().rsplit(':').next().expect("port").to_string();
    let rebound = client
        .get(format!("{}/admin/api/stats", stack.url()))
        .header("host", format!("attacker.example:{port}"))
        .send()
        .await
        .expect("get");
    assert_eq!(rebound.status(), 403);
    // webhooks are not affected (partners are elsewhere)
    let stats = client
        .get(format!("{}/admin/api/stats", stack.url()))
        .send()
        .await
        .expect("get");
    assert_eq!(stats.status(), 200);
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_aws_endpoint_an_sqs_destination_receives_the_envelope_on_moto() {
    let test_db = TestDb::create().await;
    let endpoint = moto::endpoint();
    // the demo's outbound destination as an SQS queue of moto
    let queue = moto::create_queue(&endpoint, &moto::unique_name("downstream"), 30, 4).await;
    let mut config: serde_json::Value =
        serde_json::from_str(&hookbox_local::demo_config(0)).expect("demo config");
    config["destinations"][hookbox_local::DOWNSTREAM] =
        json!({ "type": "sqs", "queue_url": queue.url });
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookbox.json");
    std::fs::write(&path, config.to_string()).expect("write config");
    let stack = stack(&test_db, |o| {
        o.config = Some(path.clone());
        o.aws_endpoint = Some(endpoint.clone());
    })
    .await;
    paid(&stack, "o-aws").await;
    let sqs = moto::client(&endpoint);
    let envelope = eventually("the envelope on the queue", || async {
        let got = sqs
            .receive_message()
            .queue_url(&queue.url)
            .send()
            .await
            .expect("receive");
        got.messages()
            .first()
            .and_then(|m| m.body())
            .map(|b| serde_json::from_str::<serde_json::Value>(b).expect("JSON"))
    })
    .await;
    assert_eq!(envelope["version"], 1);
    assert_eq!(envelope["type"], "order.status_changed");
    assert_eq!(envelope["aggregate"]["id"], "o-aws");
    assert_eq!(envelope["payload"]["to"], "paid");
    stack.stop().await;
}

/// Issue #27 on the local stack, through the Data API (the production
/// path): a partner with routes (from `--config`) is forwarded as the
/// template forwards it: stored and forwarded by ingest before its 200, then
/// delivered by the relay to an SQS queue of moto, in the envelope; an event
/// no route matches is quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partner_with_routes_is_forwarded_at_ingest_to_its_destination() {
    let test_db = TestDb::create().await;
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("billing"), 30, 4).await;
    let mut config: serde_json::Value =
        serde_json::from_str(&hookbox_local::demo_config(0)).expect("demo config");
    config["partners"]["shop"] = json!({
        "signature": {"scheme": "standard-webhooks"},
        "secrets": [hookbox_local::DEMO_SECRET],
        "event_id": {"header": "webhook-id"},
        "event_type": "/type",
        "ordering_key": "/customer",
        "routes": [{"to": "billing", "event_types": ["invoice.*"]}],
    });
    config["destinations"]["billing"] = json!({ "type": "sqs", "queue_url": queue.url });
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookbox.json");
    std::fs::write(&path, config.to_string()).expect("write config");
    let stack = stack(&test_db, |o| {
        o.config = Some(path.clone());
        o.aws_endpoint = Some(endpoint.clone());
        o.data_api = true;
    })
    .await;
    let post = |id: &'static str, event_type: &'static str| {
        let body = json!({"id": id, "type": event_type, "customer": "cus_1"});
        post_signed(&stack, "shop", id, body)
    };
    let db = stack.db();
    const STATUS: &str = "SELECT status AS t FROM inbox WHERE event_id = :p";
    assert_eq!(post("evt_paid", "invoice.paid").await, 200);
    // finished before the answer: ingest stored and forwarded it
    assert_eq!(
        text(db.as_ref(), STATUS, "evt_paid").await.as_deref(),
        Some("processed")
    );
    assert_eq!(post("evt_other", "customer.created").await, 200);
    assert_eq!(
        text(db.as_ref(), STATUS, "evt_other").await.as_deref(),
        Some("quarantined")
    );
    let sqs = moto::client(&endpoint);
    let envelope = eventually("the forwarded event on the queue", || async {
        let got = sqs
            .receive_message()
            .queue_url(&queue.url)
            .send()
            .await
            .expect("receive");
        got.messages()
            .first()
            .and_then(|m| m.body())
            .map(|b| serde_json::from_str::<serde_json::Value>(b).expect("JSON"))
    })
    .await;
    assert_eq!(envelope["type"], "invoice.paid", "{envelope}");
    assert_eq!(envelope["aggregate"]["type"], "partner:shop", "{envelope}");
    assert_eq!(envelope["aggregate"]["id"], "cus_1", "{envelope}");
    assert_eq!(envelope["payload"]["id"], "evt_paid", "{envelope}");
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE destination = 'billing'"
        )
        .await,
        1
    );
    stack.stop().await;
}

/// A demo webhook of exactly `size` bytes (JSON, padded), signed now.
fn padded(order_id: &str, size: usize) -> Webhook {
    let mut hook = Webhook::demo(json!({
        "type": "payment.received", "order_id": order_id, "amount": 1, "pad": "",
    }));
    let pad = size - hook.body.len();
    hook.body = hook
        .body
        .replace(r#""pad":"""#, &format!(r#""pad":"{}""#, "p".repeat(pad)));
    assert_eq!(hook.body.len(), size);
    hook
}

/// Issue #28, acceptance 7 (and item 6): the local gateway takes what API
/// Gateway REST takes (10 MB, not axum's default 2 MiB): signed 3 MB and
/// 4 MiB webhooks are stored and processed, through PostgreSQL and through
/// the Data API, and 4 MiB + 1 byte gets ingest's own 413.
async fn large_webhooks(data_api: bool) {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |o| o.data_api = data_api).await;
    let db = stack.db();
    for (order, size) in [("o-3mb", 3_000_000), ("o-4mib", 4 * 1024 * 1024)] {
        let (status, body) = padded(order, size).send(&stack).await;
        assert_eq!(status, 200, "{size} bytes: {body}");
        eventually("the large payment processed", || async {
            (text(db.as_ref(), ORDER_STATUS, order).await.as_deref() == Some("paid")).then_some(())
        })
        .await;
    }
    let (status, body) = padded("o-over", 4 * 1024 * 1024 + 1).send(&stack).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"], "body_too_large", "{body}");
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE ordering_key = 'o-over'"
        )
        .await,
        0
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_of_3_mb_and_4_mib_are_stored_and_processed_through_postgres() {
    large_webhooks(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_of_3_mb_and_4_mib_are_stored_and_processed_through_the_data_api() {
    large_webhooks(true).await;
}

/// POSTs `body` to the stack's `/webhooks/{partner}`, signed now with the
/// demo secret under event id `id`: the status.
async fn post_signed(
    stack: &hookbox_local::LocalStack,
    partner: &str,
    id: &str,
    body: serde_json::Value,
) -> u16 {
    use hookbox::signature::{Secret, sign_standard_webhooks};

    let body = body.to_string();
    let signed = sign_standard_webhooks(
        id,
        chrono::Utc::now(),
        body.as_bytes(),
        &[Secret::new(hookbox_local::DEMO_SECRET)],
    )
    .expect("sign");
    reqwest::Client::new()
        .post(format!("{}/webhooks/{partner}", stack.url()))
        .header("content-type", "application/json")
        .header("webhook-id", &signed.id)
        .header("webhook-timestamp", &signed.timestamp)
        .header("webhook-signature", &signed.signature)
        .body(body)
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

/// Issue #27, item 7: the demo configuration forwards a partner by routes
/// with no flag: `demo-forwarded`'s webhook is forwarded at ingest to the
/// stack's own receiver, which records it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_forwards_its_routed_partner_to_the_stacks_own_receiver() {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |_| {}).await;
    let db = stack.db();
    let body = json!({"type": "invoice.paid", "order_id": "o-fwd", "amount": 1});
    assert_eq!(
        post_signed(&stack, hookbox_local::FORWARDED_PARTNER, "msg_fwd_1", body).await,
        200
    );
    eventually("the forwarded webhook recorded downstream", || async {
        (number(
            db.as_ref(),
            "SELECT count(*) AS n FROM local_downstream_received WHERE payload->>'order_id' = 'o-fwd'",
        )
        .await
            == 1)
            .then_some(())
    })
    .await;
    assert_eq!(
        text(
            db.as_ref(),
            "SELECT status AS t FROM inbox WHERE event_id = :p",
            "msg_fwd_1"
        )
        .await
        .as_deref(),
        Some("processed")
    );
    assert_eq!(
        number(db.as_ref(), "SELECT count(*) AS n FROM example_orders").await,
        0,
        "the orders domain never saw it"
    );
    stack.stop().await;
}
