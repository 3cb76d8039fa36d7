//! The management function's handler against a throwaway PostgreSQL
//! (migrated), its tokens inline or in moto's Secrets Manager: the sample
//! events of `events/` answered as API Gateway expects, a spoofed identity
//! refused, tokens refreshed from their secret, and an init that names what
//! is missing.

use std::collections::HashMap;
use std::sync::Arc;

use aws_lambda_events::apigw::ApiGatewayProxyResponse;
use aws_lambda_events::encodings::Body;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::SecretsManager;
use hookbox::management::{ApiTokens, token_hash};
use hookbox::startup::Startup;
use hookbox::store::Database;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::tenants::SecretKeeper;
use hookbox::vault::local::LocalVault;
use hookbox_management::tokens::REFRESH;
use hookbox_management::{ManagementFunction, TokenSource, event_from_json};
use hookbox_testkit::{TestDb, moto, smoke};

/// The sample events' token (events/generate.py, `MANAGEMENT_TOKEN`).
const SAMPLE_TOKEN: &str = "hookbox-sample-token-not-a-secret";
const CALLER: &str = "arn:aws:sts::123456789012:assumed-role/hookbox-operator/alice";

async fn migrated() -> (TestDb, Arc<dyn Database>) {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    (test_db, db)
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(chrono::Utc::now()))
}

fn function(
    db: Arc<dyn Database>,
    clock: Arc<dyn Clock>,
    tokens: TokenSource,
) -> ManagementFunction {
    ManagementFunction::new(
        db,
        SecretKeeper::new(Arc::new(LocalVault::random())),
        clock,
        tokens,
    )
}

fn sample_tokens() -> TokenSource {
    TokenSource::Inline(
        ApiTokens::default()
            .with_token("sample", SAMPLE_TOKEN)
            .expect("token"),
    )
}

async fn answer(f: &ManagementFunction, event: serde_json::Value) -> (i64, serde_json::Value) {
    let response: ApiGatewayProxyResponse = f.handle(event_from_json(event).expect("event")).await;
    let body = match &response.body {
        Some(Body::Text(t)) => serde_json::from_str(t).unwrap_or(serde_json::Value::Null),
        _ => serde_json::Value::Null,
    };
    (response.status_code, body)
}

fn with_token(name: &str, token: &str) -> serde_json::Value {
    let mut event = smoke::event(name);
    let value = format!("Bearer {token}");
    event["headers"]["Authorization"] = value.clone().into();
    event["multiValueHeaders"]["Authorization"] = serde_json::json!([value]);
    event
}

#[tokio::test]
async fn without_a_token_or_with_a_spoofed_identity_the_answer_is_401() {
    let (_t, db) = migrated().await;
    let f = function(db, clock(), sample_tokens());
    for name in [
        "apigw-management-no-token.json",
        "apigw-management-spoofed-identity.json",
    ] {
        let (status, body) = answer(&f, smoke::event(name)).await;
        assert_eq!(status, 401, "{name}: {body}");
        assert_eq!(body["code"], "authentication_failed", "{name}: {body}");
    }
    // a wrong token, in any case of the header's name
    let (status, _) = answer(&f, with_token("apigw-management-bearer.json", "guess")).await;
    assert_eq!(status, 401);
}

/// The portal on the function (its routes' events, events/generate.py): a
/// link minted through app-portal-access points at the domain and stage the
/// request came in on; the page is served under its policy; the link's key
/// opens a session (a Secure cookie over HTTPS); a key no link has, nothing.
#[tokio::test]
async fn the_portal_is_served_and_opened_by_a_minted_link() {
    let (_t, db) = migrated().await;
    let f = function(db, clock(), sample_tokens());
    let (status, body) = answer(&f, smoke::event("apigw-portal-access.json")).await;
    assert_eq!(status, 200, "{body}");
    let url = body["url"].as_str().expect("url");
    let key = body["token"].as_str().expect("token");
    assert_eq!(
        url,
        format!("https://abc123defg.execute-api.eu-west-1.amazonaws.com/prod/portal/#key={key}")
    );

    let page = f
        .handle(event_from_json(smoke::event("apigw-portal-page.json")).expect("event"))
        .await;
    assert_eq!(page.status_code, 200);
    let csp = page
        .headers
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self'"),
        "{csp}"
    );
    assert!(matches!(&page.body, Some(Body::Text(t)) if t.contains("portal.js")));

    let (status, body) = answer(&f, smoke::event("apigw-portal-session.json")).await;
    assert_eq!(
        (status, &body["code"]),
        (401, &serde_json::json!("unauthorized"))
    );
    let mut session = smoke::event("apigw-portal-session.json");
    session["body"] = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        serde_json::json!({"key": key}).to_string(),
    )
    .into();
    let response = f.handle(event_from_json(session).expect("event")).await;
    assert_eq!(response.status_code, 200);
    let cookie = response
        .headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        cookie.starts_with(&format!("hookbox_portal={key};"))
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Secure"),
        "{cookie}"
    );
}

/// The operator page on the function (its routes' events): the page under
/// its policy; the counts refused without an operator's link, answered
/// with one (its cookie); a replay refused with no inbox queue configured.
#[tokio::test]
async fn the_operator_page_is_served_to_an_operator_link_only() {
    let (_t, db) = migrated().await;
    let f = function(db.clone(), clock(), sample_tokens());
    let page = f
        .handle(event_from_json(smoke::event("apigw-admin-page.json")).expect("event"))
        .await;
    assert_eq!(page.status_code, 200);
    assert!(
        page.headers
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("frame-ancestors 'none'"))
    );
    let (status, body) = answer(&f, smoke::event("apigw-admin-stats.json")).await;
    assert_eq!(
        (status, &body["code"]),
        (401, &serde_json::json!("unauthorized"))
    );
    let link = hookbox::tenants::links::mint_operator_link(db.as_ref(), 3600, "ops")
        .await
        .expect("an operator's link");
    let mut stats = smoke::event("apigw-admin-stats.json");
    let cookie = format!("hookbox_admin={}", link.key.expose());
    stats["headers"]["Cookie"] = cookie.clone().into();
    stats["multiValueHeaders"]["Cookie"] = serde_json::json!([cookie]);
    let (status, body) = answer(&f, stats).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["inbox"].is_object(), "{body}");
}

#[tokio::test]
async fn the_sample_token_is_accepted_on_the_bearer_route() {
    let (_t, db) = migrated().await;
    let f = function(db, clock(), sample_tokens());
    let (status, body) = answer(&f, smoke::event("apigw-management-bearer.json")).await;
    // the routes answer 200 (the list); until they are served, 404 not_supported
    match status {
        200 => assert!(body["data"].is_array(), "{body}"),
        404 => {
            assert_eq!(body["code"], "not_supported", "{body}");
            assert!(
                body["detail"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("GET /api/v1/app"),
                "{body}"
            );
        }
        other => panic!("{other}: {body}"),
    }
}

#[tokio::test]
async fn the_iam_route_serves_the_verified_caller_without_a_token() {
    let (test_db, db) = migrated().await;
    // no token accepted at all: IAM callers only
    let f = function(db, clock(), TokenSource::Inline(ApiTokens::default()));
    let (status, body) = answer(&f, smoke::event("apigw-management-iam.json")).await;
    match status {
        // served: the tenant exists and the audit names the caller's ARN
        200 | 201 => {
            let (client, conn) = tokio_postgres::connect(test_db.url(), tokio_postgres::NoTls)
                .await
                .expect("connect");
            tokio::spawn(conn);
            let row = client
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
        404 => {
            assert_eq!(body["code"], "not_supported", "{body}");
            assert!(
                body["detail"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("POST /api/v1/app/"),
                "the /iam prefix is stripped: {body}"
            );
        }
        other => panic!("{other}: {body}"),
    }
    // the same request on the bearer route: no identity is trusted there
    let mut bearer = smoke::event("apigw-management-iam.json");
    bearer["resource"] = "/api/v1/{proxy+}".into();
    bearer["requestContext"]["resourcePath"] = "/api/v1/{proxy+}".into();
    let (status, body) = answer(&f, bearer).await;
    assert_eq!(status, 401, "{body}");
}

async fn secrets_admin(endpoint: &str) -> aws_sdk_secretsmanager::Client {
    use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
    aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("t", "t", None, None, "t"))
            .build(),
    )
}

fn tokens_json(tokens: &[(&str, &str)]) -> String {
    serde_json::Value::Array(
        tokens
            .iter()
            .map(|(name, token)| serde_json::json!({"name": name, "sha256": token_hash(token)}))
            .collect(),
    )
    .to_string()
}

#[tokio::test]
async fn tokens_in_their_secret_are_read_again_after_the_refresh_period() {
    let (_t, db) = migrated().await;
    let endpoint = moto::endpoint();
    let admin = secrets_admin(&endpoint).await;
    let arn = admin
        .create_secret()
        .name(moto::unique_name("hookbox-api-tokens"))
        .secret_string(tokens_json(&[("ci", "token-a")]))
        .send()
        .await
        .expect("create secret")
        .arn()
        .expect("arn")
        .to_string();
    let clock = clock();
    let tokens = TokenSource::from_secret(
        arn.clone(),
        Arc::new(SecretsManager::local(&endpoint)),
        clock.clone(),
    )
    .await
    .expect("tokens");
    let f = function(db, clock.clone(), tokens);
    let status = |token: &'static str| {
        let f = &f;
        async move {
            answer(f, with_token("apigw-management-bearer.json", token))
                .await
                .0
        }
    };
    assert_ne!(status("token-a").await, 401);
    assert_eq!(status("token-b").await, 401);

    // token-a revoked, token-b added: in force after the refresh period
    admin
        .put_secret_value()
        .secret_id(&arn)
        .secret_string(tokens_json(&[("next", "token-b")]))
        .send()
        .await
        .expect("put secret value");
    clock.advance(
        chrono::Duration::from_std(REFRESH).expect("duration") - chrono::Duration::seconds(1),
    );
    assert_ne!(status("token-a").await, 401, "not read again yet");
    clock.advance(chrono::Duration::seconds(1));
    assert_ne!(status("token-b").await, 401, "read again");
    assert_eq!(status("token-a").await, 401, "revoked");

    // a secret that cannot be read keeps the tokens last read
    admin
        .delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("delete secret");
    clock.advance(chrono::Duration::from_std(REFRESH).expect("duration"));
    assert_ne!(status("token-b").await, 401);
    assert_eq!(status("token-a").await, 401);
}

fn startup(vars: &[(&str, &str)]) -> Startup {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Startup::with_env(move |name| map.get(name).cloned())
}

#[tokio::test]
async fn the_init_names_what_is_missing_and_never_a_hash() {
    let (test_db, _db) = migrated().await;
    let vault_key = "aG9va2JveC1sb2NhbC12YXVsdC1rZXktMzItYnl0ZXM=";
    let db_url = test_db.url().to_string();
    let base = [
        ("HOOKBOX_DB", "postgres"),
        ("DATABASE_URL", db_url.as_str()),
    ];

    // no key vault: endpoints' secrets could not be sealed
    let mut vars = base.to_vec();
    vars.push(("HOOKBOX_API_TOKENS", "[]"));
    let e = ManagementFunction::from_startup(&startup(&vars))
        .await
        .expect_err("no vault");
    assert!(e.to_string().contains("HOOKBOX_KMS_KEY_ID"), "{e}");

    // no tokens configured at all
    let mut vars = base.to_vec();
    vars.push(("HOOKBOX_LOCAL_VAULT_KEY", vault_key));
    let e = ManagementFunction::from_startup(&startup(&vars))
        .await
        .expect_err("no tokens");
    assert!(
        e.to_string().contains("HOOKBOX_API_TOKENS_SECRET_ARN"),
        "{e}"
    );

    // a malformed hash: the token named, its value never
    let hash = "z".repeat(64);
    let bad = format!(r#"[{{"name": "ci", "sha256": "{hash}"}}]"#);
    let mut vars = base.to_vec();
    vars.push(("HOOKBOX_LOCAL_VAULT_KEY", vault_key));
    vars.push(("HOOKBOX_API_TOKENS", bad.as_str()));
    let e = ManagementFunction::from_startup(&startup(&vars))
        .await
        .expect_err("bad hash");
    let message = e.to_string();
    assert!(message.contains("\"ci\""), "{message}");
    assert!(!message.contains(&hash), "{message}");

    // IAM callers only: `[]` is a valid configuration
    let mut vars = base.to_vec();
    vars.push(("HOOKBOX_LOCAL_VAULT_KEY", vault_key));
    vars.push(("HOOKBOX_API_TOKENS", "[]"));
    let f = ManagementFunction::from_startup(&startup(&vars))
        .await
        .expect("IAM only");
    let (status, _) = answer(&f, smoke::event("apigw-management-bearer.json")).await;
    assert_eq!(status, 401);
    let (status, body) = answer(&f, smoke::event("apigw-management-iam.json")).await;
    assert_ne!(status, 401, "{body}");
}
