//! The real `authorizer` binary under a Lambda Runtime API (the testkit's
//! emulator): init, then the sample events (re-signed now) answered Allow
//! and Deny through the runtime, REST's with a policy and HTTP API's with a
//! simple response; a missing configuration is an init error
//! naming the variables, reported to `/init/error`.

use std::time::Duration;

use hookbox_testkit::runtime_api::{Function, Init, Outcome};
use hookbox_testkit::smoke;

fn binary() -> std::path::PathBuf {
    smoke::bootstrap("authorizer", env!("CARGO_BIN_EXE_authorizer"))
}

fn effect(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Response(r) => r["policyDocument"]["Statement"][0]["Effect"]
            .as_str()
            .unwrap_or_else(|| panic!("no policy effect in {r}")),
        Outcome::Error(e) => panic!("the authorizer failed: {e}"),
    }
}

#[tokio::test]
async fn the_binary_allows_a_fresh_request_and_denies_a_spoofed_address() {
    let partners = smoke::events_dir().join("partners-test.json");
    let mut env = smoke::aws_env();
    env.push(("HOOKBOX_CONFIG", partners.display().to_string()));
    let mut f = Function::spawn(&binary(), "authorizer", &env).await;
    let init = f.init(Duration::from_secs(30)).await;
    assert!(matches!(init, Init::Ready(_)), "{init:?}");
    let now = smoke::now_secs();
    for (name, expected) in [
        ("apigw-authorizer-allow.json", "Allow"),
        ("apigw-authorizer-spoofed-ip.json", "Deny"),
        ("apigw-authorizer-unknown-partner.json", "Deny"),
    ] {
        let mut event = smoke::event(name);
        smoke::resign(&mut event, now, true);
        let outcome = f.api.invoke(&event, Duration::from_secs(10)).await;
        assert_eq!(effect(&outcome), expected, "{name}: {outcome:?}");
    }
    // the same binary answers HTTP API's payload 2.0 events with simple
    // responses
    for (name, expected) in [
        ("httpapi-authorizer-allow.json", true),
        ("httpapi-authorizer-spoofed-ip.json", false),
    ] {
        let mut event = smoke::event(name);
        smoke::resign(&mut event, now, true);
        let outcome = f.api.invoke(&event, Duration::from_secs(10)).await;
        match &outcome {
            Outcome::Response(r) => {
                assert_eq!(r["isAuthorized"], expected, "{name}: {r}");
                assert!(r.get("policyDocument").is_none(), "{name}: {r}");
            }
            Outcome::Error(e) => panic!("{name}: the authorizer failed: {e}"),
        }
    }
    // the fixture as stored is stale for a real clock: denied, not an error
    let stale = f
        .api
        .invoke(
            &smoke::event("apigw-authorizer-allow.json"),
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(effect(&stale), "Deny");
}

#[tokio::test]
async fn without_a_partner_configuration_the_init_error_names_the_variables() {
    let mut f = Function::spawn(&binary(), "authorizer", &smoke::aws_env()).await;
    match f.init(Duration::from_secs(30)).await {
        Init::Exited {
            status,
            init_error: Some((kind, body)),
            output,
        } => {
            assert!(!status.success(), "{output}");
            assert_eq!(kind, hookbox::startup::INIT_ERROR_TYPE);
            let message = body["errorMessage"].as_str().unwrap_or_default();
            for var in [
                "HOOKBOX_CONFIG",
                "HOOKBOX_PARTNERS",
                "HOOKBOX_PARTNERS_SECRET_ARN",
            ] {
                assert!(message.contains(var), "{var} not in {message:?}");
            }
            assert_eq!(body["errorType"], hookbox::startup::INIT_ERROR_TYPE);
        }
        other => panic!("expected an init error, got {other:?}"),
    }
}

#[test]
fn the_bootstrap_leaves_the_loader_no_relative_relocations() {
    // linked non-PIE (functions/link.rs): nothing of its own to relocate at cold start
    hookbox_testkit::coldstart::assert_no_relative_relocations(&binary());
}
