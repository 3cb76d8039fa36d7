//! The whole flow through the local stack over real HTTP: partner →
//! API Gateway (local) → authorizer → ingest → inbox → queue → processor →
//! orders + outbox → relay → the stack's own demo-downstream inbox.

use std::collections::{BTreeMap, HashSet};

use hookbox::inbox::InboxStatus;
use hookbox_e2e::{Webhook, eventually, number, stack, text};
use hookbox_local::DEMO_TYPES;
use hookbox_testkit::TestDb;
use serde_json::json;

const ORDER_STATUS: &str = "SELECT status AS t FROM example_orders WHERE order_id = :p";
const INBOX_STATUS: &str = "SELECT status AS t FROM inbox WHERE partner = 'demo' AND event_id = :p";

async fn status_of(db: &dyn hookbox::store::Executor, event_id: &str) -> Option<String> {
    text(db, INBOX_STATUS, event_id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_is_effectively_once_end_to_end_and_nothing_is_lost() {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |_| {}).await;
    let db = stack.db();
    let mut accepted: HashSet<String> = HashSet::new();

    // 1. the same signed webhook, ten times: one row, one business effect
    let payment =
        Webhook::demo(json!({"type": "payment.received", "order_id": "o-1", "amount": 12.5}));
    let mut outcomes = BTreeMap::new();
    for _ in 0..10 {
        let (status, body) = payment.send(&stack).await;
        assert_eq!(status, 200, "{body}");
        *outcomes
            .entry(body["status"].as_str().unwrap_or("?").to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(outcomes.get("accepted"), Some(&1), "{outcomes:?}");
    assert_eq!(outcomes.get("duplicate"), Some(&9), "{outcomes:?}");
    accepted.insert(payment.id.clone());
    eventually("o-1 paid", || async {
        (text(db.as_ref(), ORDER_STATUS, "o-1").await.as_deref() == Some("paid")).then_some(())
    })
    .await;
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE partner = 'demo'"
        )
        .await,
        1
    );
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM example_order_transitions WHERE order_id = 'o-1'"
        )
        .await,
        1,
        "one business effect"
    );

    // 2. shipped before paid: deferred, then converges
    let shipped = Webhook::demo(json!({"type": "order.shipped", "order_id": "o-2"}));
    assert_eq!(shipped.send(&stack).await.0, 200);
    accepted.insert(shipped.id.clone());
    eventually("the early shipment deferred", || async {
        (status_of(db.as_ref(), &shipped.id).await.as_deref() == Some("deferred")).then_some(())
    })
    .await;
    let paid = Webhook::demo(json!({"type": "payment.received", "order_id": "o-2", "amount": 3}));
    assert_eq!(paid.send(&stack).await.0, 200);
    accepted.insert(paid.id.clone());
    eventually("o-2 shipped", || async {
        (text(db.as_ref(), ORDER_STATUS, "o-2").await.as_deref() == Some("shipped")).then_some(())
    })
    .await;
    assert_eq!(
        status_of(db.as_ref(), &shipped.id).await.as_deref(),
        Some("processed")
    );

    // 3. a poison pill: quarantined after one attempt
    let cancel = Webhook::demo(json!({"type": "order.cancelled", "order_id": "o-1"}));
    assert_eq!(cancel.send(&stack).await.0, 200);
    accepted.insert(cancel.id.clone());
    eventually("the poison pill quarantined", || async {
        (status_of(db.as_ref(), &cancel.id).await.as_deref() == Some("quarantined")).then_some(())
    })
    .await;
    assert_eq!(
        text(
            db.as_ref(),
            "SELECT attempts::text AS t FROM inbox WHERE event_id = :p",
            &cancel.id
        )
        .await
        .as_deref(),
        Some("1")
    );

    // a body that is not JSON (signed, so stored): quarantined, and the
    // reason says what is wrong with it
    let garbled = hookbox_e2e::Webhook {
        id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
        body: "not json {".into(),
    };
    assert_eq!(garbled.send(&stack).await.0, 200);
    accepted.insert(garbled.id.clone());
    let reason = eventually("the garbled body quarantined", || async {
        let status = status_of(db.as_ref(), &garbled.id).await;
        if status.as_deref() != Some("quarantined") {
            return None;
        }
        text(
            db.as_ref(),
            "SELECT last_error AS t FROM inbox WHERE event_id = :p",
            &garbled.id,
        )
        .await
    })
    .await;
    assert!(
        reason.starts_with("the body is not JSON (") && reason.contains("/type"),
        "{reason}"
    );

    // ... fixed by a new version of the handler (a restart on the same
    // database that knows order.cancelled), then replayed: processed once
    stack.stop().await;
    let stack = hookbox_e2e::stack(&test_db, |o| {
        o.demo_types = DEMO_TYPES
            .iter()
            .map(|t| t.to_string())
            .chain(["order.cancelled".to_string()])
            .collect();
    })
    .await;
    let db = stack.db();
    let id = text(
        db.as_ref(),
        "SELECT id::text AS t FROM inbox WHERE event_id = :p",
        &cancel.id,
    )
    .await
    .expect("row");
    let client = reqwest::Client::new();
    let replay = |id: String| {
        let (client, url) = (client.clone(), stack.url().to_string());
        async move {
            client
                .post(format!("{url}/admin/api/inbox/{id}/replay"))
                .send()
                .await
                .expect("replay")
                .json::<serde_json::Value>()
                .await
                .expect("json")
        }
    };
    assert_eq!(replay(id.clone()).await["outcome"], "enqueued");
    eventually("o-1 cancelled", || async {
        (text(db.as_ref(), ORDER_STATUS, "o-1").await.as_deref() == Some("cancelled")).then_some(())
    })
    .await;
    assert_eq!(
        status_of(db.as_ref(), &cancel.id).await.as_deref(),
        Some("processed")
    );
    assert_eq!(
        replay(id).await["outcome"],
        "not_replayable",
        "processed once only"
    );
    assert_eq!(
        number(db.as_ref(), "SELECT count(*) AS n FROM example_order_transitions WHERE event_type = 'order.cancelled'").await,
        1
    );

    // 4. every transition went out and came back in exactly once per webhook-id
    let transitions = number(
        db.as_ref(),
        "SELECT count(*) AS n FROM example_order_transitions",
    )
    .await;
    assert_eq!(transitions, 4, "o-1 paid, cancelled; o-2 paid, shipped");
    eventually("every outbound webhook delivered and received", || async {
        let delivered = number(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox WHERE status = 'delivered'",
        )
        .await;
        let received = number(
            db.as_ref(),
            "SELECT count(*) AS n FROM local_downstream_received",
        )
        .await;
        (delivered == transitions && received == transitions).then_some(())
    })
    .await;
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM outbox o JOIN local_downstream_received r
                 ON r.webhook_id = o.id::text"
        )
        .await,
        transitions,
        "each outbox id arrived as its own webhook-id"
    );
    assert_eq!(
        number(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE partner = 'demo-downstream'"
        )
        .await,
        transitions
    );

    // the admin API shows a delivery's attempts (the attempt log)
    let delivered = text(
        db.as_ref(),
        "SELECT min(id::text) AS t FROM outbox WHERE status = :p",
        "delivered",
    )
    .await
    .expect("a delivered row");
    let log: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "{}/admin/api/outbox/{delivered}/attempts",
            stack.url()
        ))
        .send()
        .await
        .expect("attempts")
        .json()
        .await
        .expect("JSON");
    let attempts = log["attempts"].as_array().expect("attempts");
    let last = attempts.last().expect("at least one attempt");
    assert!(
        (200..300).contains(&last["status_code"].as_i64().unwrap_or(0)),
        "{log}"
    );
    assert_eq!(
        last["attempt"].as_i64(),
        Some(attempts.len() as i64),
        "{log}"
    );
    assert!(last["latency_ms"].as_i64().is_some(), "{log}");

    // 5. the ledger: everything accepted is accounted for, nothing missing
    eventually("the inbox settled", || async {
        let active = number(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status IN ('pending', 'processing', 'deferred')",
        )
        .await;
        (active == 0).then_some(())
    })
    .await;
    let counts = hookbox::inbox::counts_by_status(db.as_ref())
        .await
        .expect("counts");
    let total: i64 = counts.values().sum();
    let rows = number(db.as_ref(), "SELECT count(*) AS n FROM inbox").await;
    assert_eq!(total, rows);
    let settled = counts[&InboxStatus::Processed]
        + counts[&InboxStatus::Quarantined]
        + counts[&InboxStatus::Dead]
        + counts[&InboxStatus::Pending];
    assert_eq!(
        settled, rows,
        "accepted = processed + quarantined + dead + pending: {counts:?}"
    );
    assert_eq!(
        rows,
        accepted.len() as i64 + transitions,
        "every accepted partner event and every outbound webhook has exactly one row"
    );
    for id in &accepted {
        assert!(status_of(db.as_ref(), id).await.is_some(), "{id} missing");
    }
    stack.stop().await;
}
