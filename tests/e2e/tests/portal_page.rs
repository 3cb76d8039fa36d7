//! The customer portal in headless Chromium (tests/e2e/browser/portal.mjs,
//! Playwright) on the local stack, through both database adapters: a link
//! minted through Svix's `app-portal-access` opens the page; the customer
//! adds an endpoint at a loopback receiver with two event types from the
//! catalog, sends an example and sees it delivered, makes the receiver fail
//! and sees the failed attempts with their status codes, resends one,
//! recovers another, rotates and reveals the secret, disables and enables
//! the endpoint. The catalog's descriptions, an endpoint's description and
//! URL, and the receiver's failing answers hold markup and script, which
//! must show as text. A read-only link shows no write control; a revoked
//! link opens nothing. Screenshots go to target/e2e/portal-<adapter>/.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::routing::post;
use hookbox::management::ApiTokens;
use hookbox::tenants::{links, manage};
use hookbox_e2e::{assert_mock_checks_pass, browser_driver, stack, workspace_root};
use hookbox_testkit::TestDb;
use serde_json::{Value, json};

const TOKEN: &str = "hb_e2e_portal_token";
/// What the receiver answers while failing: markup the page must show as text.
const HOSTILE: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=1\">";

/// A loopback receiver answering the status `POST /control?status=N` set.
#[derive(Clone)]
struct Receiver {
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

async fn hook(State(r): State<Receiver>) -> (StatusCode, &'static str) {
    r.hits.fetch_add(1, Ordering::SeqCst);
    let status = r.status.load(Ordering::SeqCst);
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, if code.is_success() { "ok" } else { HOSTILE })
}

async fn control(State(r): State<Receiver>, uri: Uri) -> StatusCode {
    let status = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|p| p.strip_prefix("status="))
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(s) if (200..600).contains(&s) => {
            r.status.store(s, Ordering::SeqCst);
            StatusCode::NO_CONTENT
        }
        _ => StatusCode::BAD_REQUEST,
    }
}

async fn start_receiver() -> (String, String, Receiver) {
    let receiver = Receiver {
        status: Arc::new(AtomicU16::new(200)),
        hits: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new()
        .route("/hook", post(hook))
        .route("/control", post(control))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (
        format!("http://{addr}/hook"),
        format!("http://{addr}/control"),
        receiver,
    )
}

/// Runs `node tests/e2e/browser/portal.mjs args`; its last JSON line.
async fn driver(args: Vec<String>) -> Value {
    browser_driver("portal.mjs", args).await
}

async fn api(client: &reqwest::Client, base: &str, path: &str, body: Value) -> Value {
    let r = client
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    let status = r.status();
    let answer: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "POST {path}: {status} {answer}");
    answer
}

async fn the_customer_journey(data_api: bool) {
    let test_db = TestDb::create().await;
    let stack = stack(&test_db, |o| {
        o.data_api = data_api;
        o.api_tokens = Some(ApiTokens::default().with_token("ci", TOKEN).expect("token"));
    })
    .await;
    let base = stack.url().trim_end_matches('/').to_string();
    let client = reqwest::Client::new();
    // the catalog: a deprecated type first, descriptions holding markup
    for (name, description, deprecated) in [
        ("aaa.legacy", "the old one", true),
        (
            "invoice.paid",
            "An invoice was paid <script>window.__pwned=1</script>",
            false,
        ),
        (
            "invoice.voided",
            "<img src=x onerror=\"window.__pwned=1\"> voided",
            false,
        ),
    ] {
        api(
            &client,
            &base,
            "/api/v1/event-type",
            json!({"name": name, "description": description, "deprecated": deprecated,
                   "schemas": {"1": {"type": "object", "examples": [{"invoice": "in_1", "note": HOSTILE}]}}}),
        )
        .await;
    }
    api(
        &client,
        &base,
        "/api/v1/app",
        json!({"name": "Acme <b>Corp</b>", "uid": "acme"}),
    )
    .await;
    // an endpoint already there, its description and URL holding markup
    api(
        &client,
        &base,
        "/api/v1/app/acme/endpoint",
        json!({"url": "http://127.0.0.1:9/<script>window.__pwned=1</script>",
               "description": HOSTILE, "disabled": true}),
    )
    .await;
    let link = api(
        &client,
        &base,
        "/api/v1/auth/app-portal-access/acme",
        json!({}),
    )
    .await;
    let url = link["url"].as_str().expect("url").to_string();
    assert!(
        url.starts_with(&format!("{base}/portal/#key=hbp_")),
        "{url}"
    );

    let (receiver_url, control_url, receiver) = start_receiver().await;
    let shots = workspace_root().join(format!(
        "target/e2e/portal-{}",
        if data_api { "data-api" } else { "postgres" }
    ));
    std::fs::create_dir_all(&shots).expect("shots");
    let shots_arg = shots.to_string_lossy().into_owned();
    let report = driver(vec![
        url.clone(),
        receiver_url.clone(),
        control_url,
        shots_arg.clone(),
    ])
    .await;
    assert_eq!(
        report["types"],
        json!(["invoice.paid", "invoice.voided"]),
        "{report}"
    );
    assert!(report["recovered"].as_i64() >= Some(1), "{report}");

    // what the page did is the tenant's, recorded as the portal's
    let db = stack.db();
    let id = report["endpoint_id"].as_str().expect("endpoint id");
    let endpoint = manage::get_endpoint(db.as_ref(), "acme", id)
        .await
        .expect("the endpoint the page added");
    assert_eq!(endpoint.url, receiver_url);
    assert_eq!(
        endpoint.filter_types,
        Some(vec![
            "invoice.paid".to_string(),
            "invoice.voided".to_string()
        ])
    );
    assert!(!endpoint.disabled);
    assert!(
        receiver.hits.load(Ordering::SeqCst) >= 5,
        "deliveries reached the receiver"
    );
    let trail = manage::audit(db.as_ref(), "acme", None, 200)
        .await
        .expect("audit");
    let portal: Vec<&str> = trail
        .data
        .iter()
        .filter(|e| e.face == "portal")
        .map(|e| e.action.as_str())
        .collect();
    for action in [
        "endpoint.created",
        "message.resent",
        "endpoint.recovered",
        "endpoint.secret_revealed",
        "endpoint.disabled",
        "endpoint.enabled",
    ] {
        assert!(portal.contains(&action), "{action}: {portal:?}");
    }

    // a read-only link shows no write control, and its writes are refused
    let read_only = api(
        &client,
        &base,
        "/api/v1/auth/app-portal-access/acme",
        json!({"readOnly": true}),
    )
    .await;
    driver(vec![
        "--read-only".into(),
        read_only["url"].as_str().expect("url").to_string(),
        shots_arg.clone(),
    ])
    .await;
    // revoked, the first link opens nothing
    let revoked = links::revoke_links(db.as_ref(), "acme", None, None, None)
        .await
        .expect("revoke");
    assert!(revoked.revoked >= 1);
    driver(vec!["--invalid".into(), url, shots_arg]).await;
    for shot in [
        "portal-list.png",
        "portal-deliveries.png",
        "portal-secret.png",
    ] {
        assert!(shots.join(shot).exists(), "{shot} taken");
    }
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_uses_the_portal_in_a_browser() {
    the_customer_journey(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_uses_the_portal_in_a_browser_through_the_data_api() {
    the_customer_journey(true).await;
}

/// `run-portal-mock-test.mjs`: the page against the in-memory mock of its
/// API (every hook the driver needs, a `/Prod` prefix, the read-only and
/// bad links), and the driver failing clearly without Chromium.
#[test]
fn the_portal_page_passes_its_checks_against_the_mock_api() {
    assert_mock_checks_pass("run-portal-mock-test.mjs", "4 passed, 0 failed");
}
