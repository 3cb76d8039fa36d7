//! The functions as users test them: `sam local invoke` and `sam local
//! start-api` over the real template (start-api with either `Ingress`), the
//! real bootstraps (the debug builds of the workspace's test run) in Docker
//! under AWS's Runtime Interface Emulator, pointed at a local PostgreSQL,
//! moto and a sink (hookbox_testkit::sam).
//!
//! Needs Docker and the builds in `HOOKBOX_SAM_BOOTSTRAP_DIR`: `tools/dev
//! test` provides both (it installs and starts Docker, builds the
//! workspace's tests, then lays the functions' binaries out as
//! `<dir>/<bin>/bootstrap`). Without them every test here fails, naming
//! what is missing; none skips.

use std::path::PathBuf;

use hookbox_testkit::sam::{self, LocalServices, SamLocal};
use hookbox_testkit::smoke;

fn bootstrap_dir() -> PathBuf {
    match std::env::var(sam::BOOTSTRAP_DIR_VAR) {
        Ok(dir) if !dir.trim().is_empty() => PathBuf::from(dir),
        _ => panic!(
            "{} is not set: run these tests with `tools/dev test` (it lays the functions' \
             debug binaries out as <target>/sam-local/<bin>/bootstrap and sets it there)",
            sam::BOOTSTRAP_DIR_VAR
        ),
    }
}

fn sam_local() -> SamLocal {
    SamLocal::prepare(&bootstrap_dir()).unwrap_or_else(|e| panic!("sam local cannot run: {e}"))
}

async fn migrated(services: &LocalServices) {
    let pg = hookbox::store::postgres::PgDatabase::connect(services.db.url(), &Default::default())
        .expect("pool");
    hookbox::migrate::migrate(&pg).await.expect("migrate");
}

async fn sql(services: &LocalServices) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(services.db.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
}

/// `sam local invoke FUNCTION` with the sample event `name` moved to now.
async fn invoke(
    sam: &SamLocal,
    services: &LocalServices,
    function: &str,
    mut event: serde_json::Value,
) -> serde_json::Value {
    sam::at_invoke_time(&mut event, smoke::now_secs());
    let run = sam
        .invoke(function, &event, services.env_file())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "sam local invoke {function}: {:.1} s",
        run.elapsed.as_secs_f64()
    );
    run.response
}

fn effect(response: &serde_json::Value) -> &str {
    response["policyDocument"]["Statement"][0]["Effect"]
        .as_str()
        .unwrap_or_else(|| panic!("no policy effect in {response}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorizer_allows_a_fresh_request_and_denies_a_stale_one() {
    let sam = sam_local();
    let services = LocalServices::start().await;
    let allow = invoke(
        &sam,
        &services,
        "AuthorizerFunction",
        smoke::event("apigw-authorizer-allow.json"),
    )
    .await;
    assert_eq!(effect(&allow), "Allow", "{allow}");
    let stale = invoke(
        &sam,
        &services,
        "AuthorizerFunction",
        smoke::event("apigw-authorizer-stale.json"),
    )
    .await;
    assert_eq!(effect(&stale), "Deny", "{stale}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_stores_a_signed_webhook_and_answers_401_to_a_bad_signature() {
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    let accepted = invoke(
        &sam,
        &services,
        "IngestFunction",
        smoke::event("apigw-ingest-valid.json"),
    )
    .await;
    assert_eq!(accepted["statusCode"], 200, "{accepted}");
    let body: serde_json::Value =
        serde_json::from_str(accepted["body"].as_str().expect("body")).expect("json body");
    assert_eq!(body["status"], "accepted", "{body}");
    let bad = invoke(
        &sam,
        &services,
        "IngestFunction",
        smoke::event("apigw-ingest-bad-signature.json"),
    )
    .await;
    assert_eq!(bad["statusCode"], 401, "{bad}");
    let rows = sql(&services)
        .await
        .query_one(
            "SELECT count(*) FROM inbox WHERE partner = 'demo' AND event_id = 'msg_1001'",
            &[],
        )
        .await
        .expect("count");
    assert_eq!(rows.get::<_, i64>(0), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_processor_answers_the_sample_batch_with_the_message_to_retry() {
    const SHIPPED: &str = "5f6c1d7e-0000-4000-8000-000000000004";
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    // the sample batch (a stored message whose row does not exist, a
    // spooled payment, an unreadable body) plus a spooled shipment of an
    // order not paid yet: deferred, so the one message to retry
    let mut batch = smoke::event("sqs-batch.json");
    let mut shipped = batch["Records"][1].clone();
    let mut body: serde_json::Value =
        serde_json::from_str(shipped["body"].as_str().expect("body")).expect("json");
    body["event_id"] = "evt_shipped_1".into();
    body["event_type"] = "order.shipped".into();
    body["ordering_key"] = "o-2002".into();
    body["body_base64"] = "eyJ0eXBlIjoib3JkZXIuc2hpcHBlZCIsIm9yZGVyX2lkIjoiby0yMDAyIn0=".into();
    shipped["body"] = body.to_string().into();
    shipped["messageId"] = SHIPPED.into();
    batch["Records"]
        .as_array_mut()
        .expect("records")
        .push(shipped);
    let response = invoke(&sam, &services, "ProcessorFunction", batch).await;
    let failures: Vec<&str> = response["batchItemFailures"]
        .as_array()
        .unwrap_or_else(|| panic!("no batchItemFailures in {response}"))
        .iter()
        .filter_map(|f| f["itemIdentifier"].as_str())
        .collect();
    assert_eq!(failures, [SHIPPED], "{response}");
    let paid = sql(&services)
        .await
        .query_one(
            "SELECT status FROM inbox WHERE event_id = 'evt_spooled_1'",
            &[],
        )
        .await
        .expect("the spooled payment is stored");
    assert_eq!(paid.get::<_, String>(0), "processed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_delivers_a_pending_outbox_row_to_the_local_sink() {
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    {
        use hookbox::store::Database as _;
        let pg =
            hookbox::store::postgres::PgDatabase::connect(services.db.url(), &Default::default())
                .expect("pool");
        let tx = pg.begin().await.expect("begin");
        let event = hookbox::outbox::NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: "o-1".into(),
            event_type: "order.paid".into(),
            destination: "erp".into(),
            payload: serde_json::json!({"order_id": "o-1"}),
        };
        hookbox::outbox::enqueue(tx.as_ref(), &event, chrono::Utc::now())
            .await
            .expect("enqueue");
        tx.commit().await.expect("commit");
    }
    invoke(
        &sam,
        &services,
        "RelayFunction",
        smoke::event("eventbridge-schedule.json"),
    )
    .await;
    let delivered = services.sink.requests();
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0].method, "POST");
    assert_eq!(delivered[0].json(), serde_json::json!({"order_id": "o-1"}));
    assert!(
        delivered[0]
            .header("webhook-signature")
            .is_some_and(|s| s.starts_with("v1,")),
        "{:?}",
        delivered[0].headers
    );
    let row = sql(&services)
        .await
        .query_one("SELECT status FROM outbox WHERE aggregate_id = 'o-1'", &[])
        .await
        .expect("the row");
    assert_eq!(row.get::<_, String>(0), "delivered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_applies_the_schema_and_answers_success_to_the_response_url() {
    let sam = sam_local();
    let services = LocalServices::start().await;
    let event = sam::with_response_url(
        smoke::event("cfn-migrate-create.json"),
        &services.sink.url("/cfn-response"),
    );
    invoke(&sam, &services, "MigrateFunction", event).await;
    let put = &services.sink.wait_for(1).await[0];
    assert_eq!(put.method, "PUT");
    let body = put.json();
    assert_eq!(body["Status"], "SUCCESS", "{body}");
    assert_eq!(body["PhysicalResourceId"], "hookbox-schema-migrations");
    let tables = sql(&services)
        .await
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('inbox', 'outbox')",
            &[],
        )
        .await
        .expect("tables");
    assert_eq!(tables.get::<_, i64>(0), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_api_stores_a_signed_webhook_through_the_authorizer_and_ingest() {
    accepted_then_duplicate(sam_local()).await;
}

/// Issue #44, acceptance 4: the template's `Ingress=http` variant (the
/// webhook routes on the HTTP API: payload 2.0, the authorizer with simple
/// responses) answers the signed webhook `accepted`, then `duplicate`. Both
/// variants answer alike by design, so SAM's debug log shows which one ran:
/// payload 2.0 events on the HTTP API's route. Under `sam local` its bodies
/// arrive base64 (SAM applies the REST API's binary media type `*/*` to
/// every route): this checks the event shape, not AWS's text-or-binary
/// decision (docs/ingress.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_api_of_the_http_ingress_stores_a_signed_webhook_once() {
    let sam = sam_local()
        .with_parameter("Ingress", "http")
        .with_debug_log();
    let log = accepted_then_duplicate(sam).await;
    // the events, not the API: SAM reads WebhookHttpApi and its authorizer
    // for `rest` too (it ignores a resource's Condition; the API is there,
    // without routes)
    let shown = "Constructed Event Version 2.0 to invoke Lambda. Event: {'version': '2.0', \
                 'routeKey': 'POST /webhooks/{partner}'";
    assert!(
        log.contains(shown),
        "not served by the HTTP API (no {shown:?} in the log):\n{log}"
    );
}

/// `sam local start-api` over `sam`'s template: a signed webhook is
/// answered 200 `accepted`, its resend 200 `duplicate`, and stored once.
/// Returns what SAM and the functions printed.
async fn accepted_then_duplicate(sam: SamLocal) -> String {
    let services = LocalServices::start().await;
    migrated(&services).await;
    let port = hookbox_testkit::http_sink::HttpSink::free_port();
    let api = sam
        .start_api(port, services.env_file())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body = r#"{"type":"order.paid","order_id":"o-7"}"#;
    let now = smoke::now_secs();
    let post = || {
        reqwest::Client::new()
            .post(format!("{}/webhooks/demo", api.url))
            .header("content-type", "application/json")
            .header("webhook-id", "msg_sam_1")
            .header("webhook-timestamp", now.to_string())
            .header(
                "webhook-signature",
                smoke::sign("msg_sam_1", now, body.as_bytes()),
            )
            .body(body)
            .send()
    };
    let first = post().await.expect("POST through start-api");
    let status = first.status().as_u16();
    let text = first.text().await.unwrap_or_default();
    assert_eq!(status, 200, "{text}\n{}", api.log());
    // (a clean run once saw a 200 with an empty body here, not reproduced:
    // the message keeps what sam local printed, to find out whose it was)
    let answer: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the 200's body is not JSON ({e}): {text:?}\n{}", api.log()));
    assert_eq!(answer["status"], "accepted", "{text}");
    let again = post().await.expect("the resend");
    assert_eq!(again.status().as_u16(), 200);
    assert!(
        again.text().await.unwrap_or_default().contains("duplicate"),
        "a resend is a duplicate"
    );
    let row = sql(&services)
        .await
        .query_one(
            "SELECT count(*) FROM inbox WHERE partner = 'demo' AND event_id = 'msg_sam_1'",
            &[],
        )
        .await
        .expect("count");
    assert_eq!(row.get::<_, i64>(0), 1);
    api.log()
}

/// Issue #27, acceptance 1: on the template's own configuration (ingest
/// forwards at ingest, the processor forwards by routes: no override), a
/// Stripe-signed `invoice.paid` with a route is stored and forwarded by
/// ingest and delivered by the relay to its destination; a
/// `customer.created` without a route follows the partner's policy
/// (quarantined); neither reaches the example orders domain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_stripe_event_is_forwarded_as_the_template_configures_it() {
    use hookbox::signature::Secret;
    use hookbox::signature::presets::{self, Outgoing, SigningKey};

    const STRIPE_SECRET: &str = "whsec_sam_local_forwarding";
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    let mut config = services.config();
    config["partners"]["stripe"] = serde_json::json!({
        "signature": {"scheme": "stripe"},
        "secrets": [STRIPE_SECRET],
        "event_id": {"json_pointer": "/id"},
        "event_type": "/type",
        "ordering_key": "/data/object/customer",
        "routes": [{"to": "billing", "event_types": ["invoice.*"]}],
        "unrouted": "quarantine",
    });
    config["destinations"]["billing"] = serde_json::json!({
        "url": services.sink.url("/billing"),
        "secrets": [smoke::DEMO_SECRET],
        "allowed_networks": ["127.0.0.0/8"],
    });
    // the partners' routes in the database, as every relay run syncs them
    // (ingest's role forwards only to those; before a sync it leaves the
    // event to the processor)
    let pg = hookbox::store::postgres::PgDatabase::connect(services.db.url(), &Default::default())
        .expect("pool");
    let parsed = hookbox::config::HookboxConfig::parse(&config.to_string(), "test")
        .expect("the configuration");
    hookbox::outbox::destinations::sync(&pg, &parsed, chrono::Utc::now())
        .await
        .expect("sync the destinations");
    // the template's variables, none overridden but the local endpoints
    let mut env = services.env_vars();
    let parameters = env["Parameters"].as_object_mut().expect("parameters");
    parameters.remove("HOOKBOX_HANDLER");
    parameters.insert("HOOKBOX_PARTNERS".into(), config.to_string().into());
    let env_file = tempfile::NamedTempFile::new().expect("env file");
    std::fs::write(env_file.path(), env.to_string()).expect("write the env file");

    let stripe = presets::get("stripe").expect("the stripe preset");
    let secret = Secret::new(STRIPE_SECRET);
    let event = |id: &str, event_type: &str| {
        let body = serde_json::json!({
            "id": id, "type": event_type, "livemode": true,
            "data": {"object": {"customer": "cus_sam", "amount_paid": 1250}},
        })
        .to_string();
        let headers = stripe
            .sign(
                &Outgoing {
                    body: body.as_bytes(),
                    headers: &[],
                    url: None,
                    method: "POST",
                    timestamp: chrono::Utc::now(),
                },
                SigningKey::Secret(&secret),
            )
            .expect("sign as Stripe");
        let mut request = smoke::event("apigw-ingest-valid.json");
        request["path"] = "/webhooks/stripe".into();
        request["pathParameters"]["partner"] = "stripe".into();
        let mut plain = serde_json::Map::new();
        let mut multi = serde_json::Map::new();
        plain.insert("Content-Type".into(), "application/json".into());
        for (name, value) in headers {
            plain.insert(name.into(), value.clone().into());
        }
        for (name, value) in &plain {
            multi.insert(name.clone(), serde_json::json!([value]));
        }
        request["headers"] = plain.into();
        request["multiValueHeaders"] = multi.into();
        request["body"] = body.into();
        request
    };
    let ingest = |request: serde_json::Value| {
        let sam = &sam;
        let env_file = env_file.path().to_path_buf();
        async move {
            let run = sam
                .invoke("IngestFunction", &request, &env_file)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            run.response
        }
    };
    for (id, event_type) in [
        ("evt_sam_paid", "invoice.paid"),
        ("evt_sam_new", "customer.created"),
    ] {
        let answer = ingest(event(id, event_type)).await;
        assert_eq!(answer["statusCode"], 200, "{event_type}: {answer}");
        let body: serde_json::Value =
            serde_json::from_str(answer["body"].as_str().expect("body")).expect("json");
        assert_eq!(body["status"], "accepted", "{body}");
    }
    let db = sql(&services).await;
    let status = |id: &'static str| {
        let db = &db;
        async move {
            db.query_one("SELECT status FROM inbox WHERE event_id = $1", &[&id])
                .await
                .expect("the row")
                .get::<_, String>(0)
        }
    };
    // finished by ingest itself: nothing for the processor
    assert_eq!(status("evt_sam_paid").await, "processed");
    assert_eq!(status("evt_sam_new").await, "quarantined");
    let delivery: uuid::Uuid = db
        .query_one(
            "SELECT id FROM outbox WHERE destination = 'billing' AND event_type = 'invoice.paid'",
            &[],
        )
        .await
        .expect("one delivery")
        .get(0);

    let run = sam
        .invoke(
            "RelayFunction",
            &smoke::event("eventbridge-schedule.json"),
            env_file.path(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("relay: {}", run.response);
    let delivered = services.sink.requests();
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0].json()["id"], "evt_sam_paid");
    assert_eq!(
        delivered[0].header("webhook-id"),
        Some(delivery.to_string().as_str())
    );
    let orders = db
        .query_one("SELECT count(*) FROM example_orders", &[])
        .await
        .expect("orders")
        .get::<_, i64>(0);
    assert_eq!(orders, 0, "nothing reached the example orders domain");
}

/// One call of moto's JSON protocol (`X-Amz-Target`), for the services
/// this crate has no SDK client of (moto reads the service from the
/// credential scope and checks no signature).
async fn moto_json(
    services: &LocalServices,
    service: &str,
    target: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let response = reqwest::Client::new()
        .post(&services.moto)
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amz-target", target)
        .header(
            "authorization",
            format!(
                "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, \
                 SignedHeaders=host, Signature=0"
            ),
        )
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{target}: {e}"));
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    assert!(status.is_success(), "{target}: {status} {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{target}: {e}: {text}"))
}

/// The env file the management function runs with under `sam local`: the
/// services' variables, the endpoint secrets' key in moto's KMS and the
/// sample token's hash in moto's Secrets Manager.
async fn management_env(services: &LocalServices) -> tempfile::NamedTempFile {
    const SAMPLE_TOKEN: &str = "hookbox-sample-token-not-a-secret";
    let key = moto_json(
        services,
        "kms",
        "TrentService.CreateKey",
        serde_json::json!({"Description": "hookbox endpoint secrets (sam local)"}),
    )
    .await["KeyMetadata"]["Arn"]
        .as_str()
        .expect("the key's ARN")
        .to_string();
    let hashes = serde_json::json!([{
        "name": "sample",
        "sha256": hookbox::management::token_hash(SAMPLE_TOKEN),
    }]);
    let secret = moto_json(
        services,
        "secretsmanager",
        "secretsmanager.CreateSecret",
        serde_json::json!({
            "Name": hookbox_testkit::moto::unique_name("hookbox-api-tokens"),
            "SecretString": hashes.to_string(),
        }),
    )
    .await["ARN"]
        .as_str()
        .expect("the secret's ARN")
        .to_string();
    let mut env = services.env_vars();
    let parameters = env["Parameters"].as_object_mut().expect("parameters");
    parameters.insert("HOOKBOX_KMS_KEY_ID".into(), key.into());
    parameters.insert("HOOKBOX_API_TOKENS_SECRET_ARN".into(), secret.into());
    let env_file = tempfile::NamedTempFile::new().expect("env file");
    std::fs::write(env_file.path(), env.to_string()).expect("write the env file");
    env_file
}

/// Issue #42, acceptance 3: the operator page under `sam local start-api`
/// with the template's function and routes: the page under its policy; an
/// operator's link (minted in the database, as `hookbox admin link` does)
/// signs in and reads the counts; a customer's portal link does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_api_serves_the_operator_page_to_an_operator_link_only() {
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    let env_file = management_env(&services).await;
    let port = hookbox_testkit::http_sink::HttpSink::free_port();
    let api = sam
        .start_api(port, env_file.path())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let client = reqwest::Client::new();
    let page = client
        .get(format!("{}/admin/", api.url))
        .send()
        .await
        .expect("GET /admin/");
    assert_eq!(page.status().as_u16(), 200, "{}", api.log());
    let csp = page
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self'"),
        "{csp}"
    );
    assert!(page.text().await.unwrap_or_default().contains("admin.js"));

    let pg = hookbox::store::postgres::PgDatabase::connect(services.db.url(), &Default::default())
        .expect("pool");
    let operator = hookbox::tenants::links::mint_operator_link(&pg, 3600, "sam")
        .await
        .expect("an operator's link");
    hookbox::tenants::manage::create_tenant(
        &pg,
        &serde_json::json!({"uid": "acme", "name": "Acme"}),
        None,
    )
    .await
    .expect("tenant");
    let customer = hookbox::tenants::links::mint_link(&pg, "acme", &Default::default(), None)
        .await
        .expect("a customer's link");
    let sign_in = |key: String| {
        let client = client.clone();
        let url = format!("{}/admin/api/session", api.url);
        async move {
            client
                .post(url)
                .json(&serde_json::json!({ "key": key }))
                .send()
                .await
                .expect("POST session")
        }
    };
    let refused = sign_in(customer.key.expose().to_string()).await;
    assert_eq!(refused.status().as_u16(), 401, "{}", api.log());
    let session = sign_in(operator.key.expose().to_string()).await;
    assert_eq!(session.status().as_u16(), 200, "{}", api.log());
    let cookie = session
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .expect("the session cookie")
        .to_string();
    let stats = client
        .get(format!("{}/admin/api/stats", api.url))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("GET stats");
    assert_eq!(stats.status().as_u16(), 200, "{}", api.log());
    let stats: serde_json::Value = stats.json().await.expect("JSON");
    assert!(stats["inbox"].is_object(), "{stats}");
    let anonymous = client
        .get(format!("{}/admin/api/stats", api.url))
        .send()
        .await
        .expect("GET stats");
    assert_eq!(anonymous.status().as_u16(), 401);
}

/// Issue #41: the management function as the template deploys it (its
/// routes' events, the Data API's place taken by the local database, the
/// endpoint secrets' key in moto's KMS, the tokens' hashes in moto's
/// Secrets Manager): 401 without a token and for an identity the bearer
/// route does not trust, the API with the token, and on the IAM route the
/// caller API Gateway verified, without a token; and the customer
/// portal's page on its route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_api_answers_by_route_and_token() {
    const CALLER: &str = "arn:aws:sts::123456789012:assumed-role/hookbox-operator/alice";
    let sam = sam_local();
    let services = LocalServices::start().await;
    migrated(&services).await;
    let env_file = management_env(&services).await;

    let call = |name: &'static str| {
        let (sam, env_file) = (&sam, env_file.path().to_path_buf());
        async move {
            let run = sam
                .invoke("ManagementFunction", &smoke::event(name), &env_file)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!(
                "sam local invoke ManagementFunction {name}: {:.1} s",
                run.elapsed.as_secs_f64()
            );
            let status = run.response["statusCode"].as_i64().unwrap_or_default();
            let body: serde_json::Value = run.response["body"]
                .as_str()
                .and_then(|b| serde_json::from_str(b).ok())
                .unwrap_or_default();
            (status, body)
        }
    };
    for name in [
        "apigw-management-no-token.json",
        "apigw-management-spoofed-identity.json",
    ] {
        let (status, body) = call(name).await;
        assert_eq!(status, 401, "{name}: {body}");
        assert_eq!(body["code"], "authentication_failed", "{name}: {body}");
    }
    // accepted: the list, or (until the routes are served) not_supported
    let (status, body) = call("apigw-management-bearer.json").await;
    assert!(
        status == 200 || (status == 404 && body["code"] == "not_supported"),
        "{status}: {body}"
    );
    let (status, body) = call("apigw-management-iam.json").await;
    match status {
        200 | 201 => {
            let row = sql(&services)
                .await
                .query_one(
                    "SELECT a.face, a.principal FROM hookbox_audit a \
                     JOIN hookbox_tenants t ON t.id = a.tenant_id WHERE t.uid = 'acme'",
                    &[],
                )
                .await
                .expect("the tenant's audit entry");
            assert_eq!(row.get::<_, String>(0), "api");
            assert_eq!(row.get::<_, String>(1), CALLER);
        }
        404 => assert_eq!(body["code"], "not_supported", "{body}"),
        other => panic!("{other}: {body}"),
    }
    // the customer portal's page, on its route, under its policy
    let page = sam
        .invoke(
            "ManagementFunction",
            &smoke::event("apigw-portal-page.json"),
            env_file.path(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(page.response["statusCode"], 200, "{}", page.response);
    let headers = page.response["headers"].to_string().to_ascii_lowercase();
    assert!(
        headers.contains("content-security-policy") && headers.contains("script-src 'self'"),
        "{headers}"
    );
    assert!(
        page.response["body"]
            .as_str()
            .is_some_and(|b| b.contains("portal.js")),
        "{}",
        page.response
    );
}
