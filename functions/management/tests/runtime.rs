//! The real `management` binary under a Lambda Runtime API (the testkit's
//! emulator), configured as the template configures it: the local Data API
//! over a throwaway PostgreSQL, the endpoint secrets' key in moto's KMS, the
//! tokens' hashes in moto's Secrets Manager. The sample events of
//! `events/`, end to end; a missing key is an init error naming the
//! variable.

use std::time::Duration;

use hookbox::management::token_hash;
use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::{TestDb, moto, smoke};

const SAMPLE_TOKEN: &str = "hookbox-sample-token-not-a-secret";
const CALLER: &str = "arn:aws:sts::123456789012:assumed-role/hookbox-operator/alice";

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("management", env!("CARGO_BIN_EXE_management"))
}

fn aws_config(endpoint: &str) -> aws_config::SdkConfig {
    hookbox::delivery::local_aws_config(endpoint)
}

/// A KMS key and a tokens secret in moto: (key ARN, secret ARN).
async fn key_and_tokens(endpoint: &str) -> (String, String) {
    let aws = aws_config(endpoint);
    let key = aws_sdk_kms::Client::new(&aws)
        .create_key()
        .description("hookbox endpoint secrets (runtime test)")
        .send()
        .await
        .expect("create key")
        .key_metadata()
        .expect("metadata")
        .arn()
        .expect("arn")
        .to_string();
    let tokens = serde_json::json!([{"name": "sample", "sha256": token_hash(SAMPLE_TOKEN)}]);
    let secret = aws_sdk_secretsmanager::Client::new(&aws)
        .create_secret()
        .name(moto::unique_name("hookbox-api-tokens"))
        .secret_string(tokens.to_string())
        .send()
        .await
        .expect("create secret")
        .arn()
        .expect("arn")
        .to_string();
    (key, secret)
}

fn env(
    db: &TestDb,
    endpoint: &str,
    key: Option<&str>,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let mut env = smoke::aws_env();
    env.extend(smoke::data_api_env(db.name()));
    env.push(("AWS_ENDPOINT_URL_KMS", endpoint.to_string()));
    env.push(("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint.to_string()));
    env.push(("HOOKBOX_API_TOKENS_SECRET_ARN", secret.to_string()));
    if let Some(key) = key {
        env.push(("HOOKBOX_KMS_KEY_ID", key.to_string()));
    }
    env
}

fn response(outcome: Outcome, output: &str) -> (i64, serde_json::Value) {
    let Outcome::Response(response) = outcome else {
        panic!("{outcome:?}\n{output}");
    };
    let status = response["statusCode"].as_i64().unwrap_or_default();
    let body = response["body"]
        .as_str()
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or(serde_json::Value::Null);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_answers_the_sample_events_by_route_and_token() {
    let db = TestDb::create().await;
    let pg =
        hookbox::store::postgres::PgDatabase::connect(db.url(), &Default::default()).expect("pool");
    hookbox::migrate::migrate(&pg).await.expect("migrate");
    let endpoint = moto::endpoint();
    let (key, secret) = key_and_tokens(&endpoint).await;
    let mut f = Function::spawn(
        &binary(),
        "management",
        &env(&db, &endpoint, Some(&key), &secret),
    )
    .await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");

    for name in [
        "apigw-management-no-token.json",
        "apigw-management-spoofed-identity.json",
    ] {
        let outcome = f
            .api
            .invoke(&smoke::event(name), Duration::from_secs(10))
            .await;
        let (status, body) = response(outcome, &f.output());
        assert_eq!(status, 401, "{name}: {body}");
        assert_eq!(body["code"], "authentication_failed");
    }

    let outcome = f
        .api
        .invoke(
            &smoke::event("apigw-management-bearer.json"),
            Duration::from_secs(10),
        )
        .await;
    let (status, body) = response(outcome, &f.output());
    assert!(
        status == 200 || (status == 404 && body["code"] == "not_supported"),
        "{status}: {body}\n{}",
        f.output()
    );

    let outcome = f
        .api
        .invoke(
            &smoke::event("apigw-management-iam.json"),
            Duration::from_secs(10),
        )
        .await;
    let (status, body) = response(outcome, &f.output());
    match status {
        200 | 201 => {
            // through the Data API, sealed under moto's KMS key
            let (client, conn) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls)
                .await
                .expect("connect");
            tokio::spawn(conn);
            let row = client
                .query_one(
                    "SELECT a.principal FROM hookbox_audit a \
                     JOIN hookbox_tenants t ON t.id = a.tenant_id WHERE t.uid = 'acme'",
                    &[],
                )
                .await
                .expect("the tenant's audit entry");
            assert_eq!(row.get::<_, String>(0), CALLER);
        }
        404 => assert_eq!(body["code"], "not_supported", "{body}"),
        other => panic!("{other}: {body}\n{}", f.output()),
    }
    let output = f.output();
    assert!(
        !output.contains(SAMPLE_TOKEN) && !output.contains(&token_hash(SAMPLE_TOKEN)),
        "a token or its hash in the log:\n{output}"
    );
}

#[tokio::test]
async fn without_a_kms_key_the_init_error_names_the_variable() {
    let db = TestDb::create().await;
    let endpoint = moto::endpoint();
    let (_, secret) = key_and_tokens(&endpoint).await;
    let mut f = Function::spawn(&binary(), "management", &env(&db, &endpoint, None, &secret)).await;
    match f.init(Duration::from_secs(30)).await {
        Init::Exited {
            init_error: Some((_, body)),
            ..
        } => {
            let message = body["errorMessage"].as_str().unwrap_or_default();
            assert!(message.contains("HOOKBOX_KMS_KEY_ID"), "{message:?}");
        }
        other => panic!("expected an init error, got {other:?}"),
    }
}

#[test]
fn the_bootstrap_leaves_the_loader_no_relative_relocations() {
    // linked non-PIE (functions/link.rs): nothing of its own to relocate at cold start
    hookbox_testkit::coldstart::assert_no_relative_relocations(&binary());
}
