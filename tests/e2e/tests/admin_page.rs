//! The admin page in headless Chromium (Playwright, tests/e2e/browser):
//! open it with an operator's link (docs/portal.md, "The operator page"),
//! see a quarantined row, click Replay, see it processed; see a disabled
//! destination, click Enable, see it healthy; under its strict CSP.
//! Screenshots go to target/e2e/admin*.png. Also the page's own checks
//! against the in-memory mock of its API (`npm test` in tests/e2e/browser).

use hookbox_e2e::{
    Webhook, assert_mock_checks_pass, browser_driver, eventually, stack, text, workspace_root,
};
use hookbox_local::DEMO_TYPES;
use hookbox_testkit::TestDb;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_a_quarantined_row_from_the_admin_page_processes_it() {
    let test_db = TestDb::create().await;
    // a cancellation the demo handler does not know yet: a poison pill
    let first = stack(&test_db, |_| {}).await;
    let db = first.db();
    let paid = Webhook::demo(json!({"type": "payment.received", "order_id": "o-7", "amount": 9}));
    let cancel = Webhook::demo(json!({"type": "order.cancelled", "order_id": "o-7"}));
    assert_eq!(paid.send(&first).await.0, 200);
    eventually("o-7 paid", || async {
        (text(
            db.as_ref(),
            "SELECT status AS t FROM example_orders WHERE order_id = :p",
            "o-7",
        )
        .await
        .as_deref()
            == Some("paid"))
        .then_some(())
    })
    .await;
    assert_eq!(cancel.send(&first).await.0, 200);
    let id = eventually("the cancellation quarantined", || async {
        text(
            db.as_ref(),
            "SELECT id::text AS t FROM inbox WHERE event_id = :p AND status = 'quarantined'",
            &cancel.id,
        )
        .await
    })
    .await;
    first.stop().await;

    // the fixed handler knows order.cancelled; the operator replays from /admin
    let fixed = stack(&test_db, |o| {
        o.demo_types = DEMO_TYPES
            .iter()
            .map(|t| t.to_string())
            .chain(["order.cancelled".to_string()])
            .collect();
    })
    .await;
    // and enables a destination the relay had disabled
    let destination = "demo-downstream";
    assert!(
        hookbox::outbox::destinations::disable(
            fixed.db().as_ref(),
            destination,
            "failing continuously (the test)",
            chrono::Utc::now(),
        )
        .await
        .expect("disable"),
        "{destination} is synced by the stack"
    );
    let root = workspace_root();
    let shots = root.join("target/e2e");
    std::fs::create_dir_all(&shots).expect("target/e2e");
    let shot = shots.join("admin.png");
    // opened as a deployed stack's operator opens it: with an operator's
    // link (its session cookie and anti-forgery token, not the loopback trust)
    let operator = hookbox::tenants::links::mint_operator_link(fixed.db().as_ref(), 3600, "e2e")
        .await
        .expect("an operator's link");
    let url = format!(
        "{}/admin/#key={}",
        fixed.url().trim_end_matches('/'),
        operator.key.expose()
    );
    let report = browser_driver(
        "admin.mjs",
        vec![
            url,
            id.clone(),
            shot.to_string_lossy().into_owned(),
            destination.to_string(),
        ],
    )
    .await;
    assert_eq!(report["enable_outcome"], "enabled", "{report}");
    assert_eq!(report["csp"], true, "{report}");
    assert_eq!(report["operator"], "e2e", "{report}");
    let health = hookbox::outbox::destinations::health(fixed.db().as_ref())
        .await
        .expect("health");
    assert!(
        health
            .iter()
            .any(|h| h.name == destination && h.disabled_at.is_none()),
        "{health:?}"
    );
    assert!(shot.exists(), "screenshot taken");

    let db = fixed.db();
    assert_eq!(
        text(
            db.as_ref(),
            "SELECT status AS t FROM inbox WHERE id::text = :p",
            &id
        )
        .await
        .as_deref(),
        Some("processed")
    );
    assert_eq!(
        text(
            db.as_ref(),
            "SELECT status AS t FROM example_orders WHERE order_id = :p",
            "o-7"
        )
        .await
        .as_deref(),
        Some("cancelled")
    );
    fixed.stop().await;
}

/// `run-mock-test.mjs` (`npm test` in tests/e2e/browser): the page against
/// the in-memory mock of `/admin/api`, and `admin.mjs` failing clearly when
/// Chromium is missing. Run here so that `cargo test --workspace` is the
/// whole suite.
#[test]
fn the_admin_page_passes_its_checks_against_the_mock_api() {
    assert_mock_checks_pass("run-mock-test.mjs", "2 passed, 0 failed");
}
