//! Svix's official SDKs, unmodified (Python `svix` and Node `svix`, pinned
//! in tools/requirements/test.txt and tests/e2e/publish/package.json),
//! pointed at the local stack's management API (docs/tenants.md, "The HTTP
//! API"): each creates an application with a uid, endpoints at loopback
//! receivers (one with a chosen secret), reads, lists, updates, rotates the
//! secret, disables, enables and deletes, through tests/e2e/svix/sdk.py and
//! sdk.mjs. Messages the SDK creates (and one published in SQL,
//! `hookbox_publish_to`) reach the application's endpoints signed with the
//! secrets the SDK shows, verified with Standard Webhooks' own Python
//! library, and the SDK lists their attempts; a disabled endpoint's
//! delivery is held until it is enabled; the SDK's recover sends again the
//! one endpoint's dead delivery, not the other's; a portal link minted
//! through `app_portal_access`, logged out through `logout` with its own
//! token. A request signed by botocore's SigV4Auth is
//! verified and acts as the key's principal. Every answer the stack gave is
//! checked against Svix's OpenAPI document (docs/api/conformance.py).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use hookbox::management::ApiTokens;
use hookbox::management::sigv4::AccessKey;
use hookbox::tenants::{TenantEvent, manage, publish_to};
use hookbox_e2e::{PATIENCE, stack};
use hookbox_testkit::TestDb;
use hookbox_testkit::http_sink::{HttpSink, Recorded};
use serde_json::{Value, json};

const TOKEN: &str = "hb_e2e_svix_sdk_token";
const KEY_ID: &str = "AKIAHOOKBOXLOCAL";
const KEY_SECRET: &str = "local-secret-access-key";
const ARN: &str = "arn:aws:iam::000000000000:role/saas-backend";
/// The secret sdk.py and sdk.mjs rotate the `orders` endpoint to.
const ROTATED: &str = "whsec_dGhpcyBpcyB0aGUgbmV4dCBzZWNyZXQga2V5IQ==";

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Runs `program args` in `dir`, feeding `input`; its JSON output.
async fn run(program: PathBuf, dir: PathBuf, args: Vec<String>, input: Option<String>) -> Value {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let output = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(&program)
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.unwrap_or_default().as_bytes())?;
        }
        child.wait_with_output()
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| panic!("cannot run {shown}: {e} (tools/dev setup test installs it)"));
    assert!(
        output.status.success(),
        "{shown} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{shown} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// One phase of sdk.py or sdk.mjs.
async fn sdk(language: &str, args: &[&str]) -> Value {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (program, script) = match language {
        "python" => (hookbox_testkit::python::python(), "sdk.py"),
        _ => (PathBuf::from("node"), "sdk.mjs"),
    };
    let mut all = vec![script.to_string()];
    all.extend(args);
    run(program, e2e_dir().join("svix"), all, None).await
}

/// Publishes `order.paid` with `payload` to the tenant `app`.
async fn publish(db: &dyn hookbox::store::Database, app: &str, payload: Value) -> usize {
    let tx = db.begin().await.expect("begin");
    let out = publish_to(
        tx.as_ref(),
        app,
        &TenantEvent {
            event_type: "order.paid".into(),
            payload,
            aggregate: None,
            channels: None,
        },
        chrono::Utc::now(),
    )
    .await
    .expect("publish");
    tx.commit().await.expect("commit");
    out.len()
}

/// Publishes `order.paid` with `payload` to the tenant `app`, each of its
/// deliveries answered 410 Gone by `sink` (dead at their first attempt,
/// never retried): their ids.
async fn publish_gone(
    db: &dyn hookbox::store::Database,
    app: &str,
    payload: Value,
    sink: &HttpSink,
) -> Vec<uuid::Uuid> {
    let tx = db.begin().await.expect("begin");
    let out = publish_to(
        tx.as_ref(),
        app,
        &TenantEvent {
            event_type: "order.paid".into(),
            payload,
            aggregate: None,
            channels: None,
        },
        chrono::Utc::now(),
    )
    .await
    .expect("publish");
    for d in &out {
        sink.respond_to("webhook-id", &d.id.to_string(), 410, &[]);
    }
    tx.commit().await.expect("commit");
    out.into_iter().map(|d| d.id).collect()
}

/// The status of delivery `id` once it is not pending.
async fn settled(db: &dyn hookbox::store::Database, id: uuid::Uuid) -> String {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let row = hookbox::outbox::get(db, id)
                .await
                .expect("get")
                .expect("row");
            if row.status != hookbox::outbox::OutboxStatus::Pending {
                return row.status.as_str().to_string();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("delivery {id} still pending"))
}

/// The deliveries to `target` so far whose payload has `n`.
fn delivered(sink: &HttpSink, target: &str, n: i64) -> Vec<Recorded> {
    sink.requests()
        .into_iter()
        .filter(|r| r.target == target && r.json()["n"] == n)
        .collect()
}

async fn wait_delivered(sink: &HttpSink, target: &str, n: i64) -> Recorded {
    let started = std::time::Instant::now();
    loop {
        if let Some(r) = delivered(sink, target, n).into_iter().next() {
            return r;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no delivery of n={n} to {target}; got {:?}",
            sink.requests()
                .iter()
                .map(|r| (r.target.clone(), r.json()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Standard Webhooks' Python library's verdict on each (delivery, secret).
async fn verify(deliveries: &[(&Recorded, &str)]) -> Vec<Value> {
    let input: String = deliveries
        .iter()
        .map(|(r, secret)| {
            let d = json!({
                "secret": secret,
                "body": String::from_utf8_lossy(&r.body),
                "headers": {
                    "webhook-id": r.header("webhook-id"),
                    "webhook-timestamp": r.header("webhook-timestamp"),
                    "webhook-signature": r.header("webhook-signature"),
                },
            });
            format!("{d}\n")
        })
        .collect();
    let out = run(
        hookbox_testkit::python::python(),
        e2e_dir().join("publish"),
        vec!["verify.py".into()],
        Some(input),
    )
    .await;
    out.as_array().expect("verdicts").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn svix_official_sdks_manage_tenants_on_the_local_stack() {
    let db = TestDb::create().await;
    let stack = stack(&db, |o| {
        o.api_tokens = Some(ApiTokens::default().with_token("ci", TOKEN).expect("token"));
        o.sigv4_key = Some(AccessKey::new(KEY_ID, KEY_SECRET, ARN));
        o.record_api_answers = true;
    })
    .await;
    let sink = HttpSink::start().await;
    let receivers = sink.url("");
    let url = stack.url().to_string();
    let store = stack.db();

    for (language, app) in [("python", "py-acme"), ("node", "node-acme")] {
        let setup = sdk(language, &["setup", &url, TOKEN, app, &receivers]).await;
        assert_eq!(
            setup["errors"]["bad_url"],
            json!([["body", "url"]]),
            "{language}: {setup}"
        );
        assert_eq!(setup["errors"]["missing"]["code"], "not_found", "{setup}");
        assert_eq!(setup["secrets"]["orders"], ROTATED, "{setup}");

        // a message the SDK creates: each endpoint gets it, signed
        let msg = sdk(language, &["publish", &url, TOKEN, app, "1"]).await;
        let msg = msg["id"].as_str().expect("message id").to_string();
        let all = wait_delivered(&sink, &format!("/{app}/all"), 1).await;
        let orders = wait_delivered(&sink, &format!("/{app}/orders"), 1).await;
        let endpoints = &setup["endpoints"];
        let attempts = tokio::time::timeout(PATIENCE, async {
            loop {
                let a = sdk(language, &["attempts", &url, TOKEN, app, &msg]).await;
                if a.as_array().map(Vec::len) == Some(2) {
                    return a;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await
        .expect("both attempts listed");
        let mut expected = vec![
            json!([endpoints["all"], 0, 200]),
            json!([endpoints["orders"], 0, 200]),
        ];
        expected.sort_by_key(|v| v[0].as_str().unwrap_or_default().to_string());
        assert_eq!(attempts, json!(expected), "{language}");
        let all_secret = setup["secrets"]["all"].as_str().expect("secret");
        let verdicts = verify(&[
            (&all, all_secret),
            (&orders, ROTATED),
            // another endpoint's secret does not verify
            (&all, ROTATED),
        ])
        .await;
        assert_eq!(verdicts[..2], [json!(true), json!(true)], "{language}");
        assert_ne!(verdicts[2], json!(true), "{language}");

        // disabled: held, not lost; enabled: delivered
        let off = sdk(language, &["disable", &url, TOKEN, app, "all"]).await;
        assert_eq!(
            off,
            json!({"disabled": true, "read_back": true}),
            "{language}"
        );
        assert_eq!(publish(store.as_ref(), app, json!({"n": 2})).await, 2);
        wait_delivered(&sink, &format!("/{app}/orders"), 2).await;
        // the claim that sent the orders endpoint its copy passed over the
        // held one: still pending, never attempted
        let held = hookbox::store::fetch_one(
            store.as_ref(),
            &hookbox::store::Statement::new(
                "test.held",
                "SELECT status, attempts FROM outbox \
                 WHERE destination = :ep AND payload->>'n' = '2'",
            ),
            &hookbox::params! { "ep" => endpoints["all"].as_str().unwrap_or_default() },
        )
        .await
        .expect("the held delivery");
        assert_eq!(
            (
                held.text("status").expect("status"),
                held.i64("attempts").expect("attempts")
            ),
            ("pending".to_string(), 0),
            "{language}"
        );
        assert!(
            delivered(&sink, &format!("/{app}/all"), 2).is_empty(),
            "{language}: delivered while disabled"
        );
        let on = sdk(language, &["enable", &url, TOKEN, app, "all"]).await;
        assert_eq!(
            on,
            json!({"disabled": false, "read_back": false}),
            "{language}"
        );
        wait_delivered(&sink, &format!("/{app}/all"), 2).await;

        // recover: both copies of n=3 answered 410 (dead at once, never
        // retried); the SDK recovers the orders endpoint's alone
        let since = (chrono::Utc::now() - chrono::Duration::seconds(5))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let gone = publish_gone(store.as_ref(), app, json!({"n": 3}), &sink).await;
        assert_eq!(gone.len(), 2);
        for id in &gone {
            assert_eq!(settled(store.as_ref(), *id).await, "dead", "{language}");
        }
        sink.clear_rules();
        let recovered = sdk(language, &["recover", &url, TOKEN, app, "orders", &since]).await;
        assert_eq!(
            recovered,
            json!({"task": "endpoint.recover", "status": "running"}),
            "{language}"
        );
        let orders_target = format!("/{app}/orders");
        tokio::time::timeout(PATIENCE, async {
            while delivered(&sink, &orders_target, 3).len() < 2 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the orders endpoint's copy sent again");
        let mut statuses = Vec::new();
        for id in &gone {
            statuses.push(settled(store.as_ref(), *id).await);
        }
        statuses.sort();
        assert_eq!(
            statuses,
            ["dead", "delivered"],
            "{language}: the other endpoint's copy was not recovered"
        );
        assert_eq!(delivered(&sink, &format!("/{app}/all"), 3).len(), 1);

        // the trail: every change as face api, by the token's name
        let trail = manage::audit(store.as_ref(), app, None, 200)
            .await
            .expect("audit");
        assert!(
            trail
                .data
                .iter()
                .all(|e| e.face == "api" && e.principal == "ci"),
            "{language}: {:?}",
            trail.data
        );
        // a portal link through the SDK's app_portal_access, logged out
        // through its logout with the link's own token
        let portal = sdk(language, &["portal", &url, TOKEN, app]).await;
        let key = portal["token"].as_str().expect("token");
        assert_eq!(
            portal["url"],
            json!(format!("{}/portal/#key={key}", url.trim_end_matches('/'))),
            "{language}"
        );
        let key = hookbox::tenants::links::PortalKey::parse(key).expect("a portal key");
        assert!(
            hookbox::tenants::links::session(store.as_ref(), &key, chrono::Utc::now())
                .await
                .expect("session")
                .is_none(),
            "{language}: logged out"
        );
        let gone = sdk(language, &["delete", &url, TOKEN, app]).await;
        assert_eq!(
            gone,
            json!({"endpoints_left": 0, "gone": true}),
            "{language}"
        );
    }

    // SigV4 from botocore, unmodified
    let signed = run(
        hookbox_testkit::python::python(),
        e2e_dir().join("svix"),
        vec![
            "sigv4.py".into(),
            url.clone(),
            KEY_ID.into(),
            KEY_SECRET.into(),
            "signed".into(),
        ],
        None,
    )
    .await;
    assert_eq!(signed["create"][0], 201, "{signed}");
    assert_eq!(signed["get"][0], 200, "{signed}");
    assert_eq!(signed["get"][1]["uid"], "signed");
    assert_eq!(signed["tampered"][0], 403, "{signed}");
    assert_eq!(signed["wrong_secret"][0], 403, "{signed}");
    assert_eq!(signed["unsigned"][0], 401, "{signed}");
    let trail = manage::audit(store.as_ref(), "signed", None, 10)
        .await
        .expect("audit");
    assert_eq!(
        (
            trail.data[0].face.as_str(),
            trail.data[0].principal.as_str()
        ),
        ("api", ARN)
    );

    // every answer the SDKs and botocore got is Svix's
    let answers = stack.api_answers();
    assert!(answers.len() > 40, "{}", answers.len());
    let input: String = answers.iter().map(|a| format!("{a}\n")).collect();
    let report = run(
        hookbox_testkit::python::python(),
        e2e_dir().join("../../docs/api"),
        vec!["conformance.py".into()],
        Some(input),
    )
    .await;
    assert_eq!(report["failures"], json!([]), "{report}");
    for op in [
        "v1.application.create",
        "v1.application.get",
        "v1.application.list",
        "v1.application.update",
        "patch_application",
        "v1.application.delete",
        "v1.endpoint.create",
        "v1.endpoint.get",
        "v1.endpoint.list",
        "v1.endpoint.update",
        "patch_endpoint",
        "v1.endpoint.delete",
        "v1.endpoint.get-secret",
        "v1.endpoint.rotate-secret",
        "v1.event-type.create",
        "v1.message.create",
        "v1.message.get",
        "v1.message-attempt.list-by-msg",
        "v1.endpoint.recover",
        "v1.health.get",
    ] {
        assert!(
            report["operations"][op].as_u64() > Some(0),
            "{op}: {report}"
        );
    }
    stack.stop().await;
}
