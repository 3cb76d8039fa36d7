//! A full run of the ingest function whose logs are captured (every level,
//! every crate) and searched for secrets and signatures, through both
//! ingresses (the metrics too: a text body HTTP API may have altered is
//! counted under its own reason). In its own test
//! binary: the capturing subscriber is the process-wide default, so no
//! other test's threads can make tracing skip a callsite.

mod common;

use common::{event, rig};

const SECRET_MATERIAL: &[&str] = &["whsec_", "aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA"];

#[tokio::test]
async fn a_full_run_logs_no_secret_and_no_full_signature() {
    let captured = hookbox_testkit::logs::CapturedLogs::default();
    let writer = captured.clone();
    // the functions' own line format (flat JSON: every field a key)
    use hookbox::log_format;
    let subscriber = tracing_subscriber::fmt()
        .fmt_fields(log_format::fields())
        .event_format(log_format::formatter())
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let rig = rig().await;
    let mut signatures = Vec::new();
    for name in [
        "apigw-ingest-valid.json",
        "apigw-ingest-valid.json",
        "apigw-ingest-base64.json",
        "apigw-ingest-bad-signature.json",
        "apigw-ingest-stale.json",
        "apigw-ingest-future.json",
        "apigw-ingest-oversize.json",
    ] {
        let e = event(name);
        if let Some(sig) = e
            .headers
            .get("webhook-signature")
            .and_then(|v| v.to_str().ok())
        {
            signatures.push(sig.trim_start_matches("v1,").to_string());
        }
        let r = rig.function.handle(e).await;
        for secret in SECRET_MATERIAL {
            assert!(
                !format!("{r:?}").contains(secret),
                "response of {name} leaks a secret"
            );
        }
    }
    // HTTP API's events too (payload 2.0); the metrics go to the log, so
    // the refusal of a text body holding U+FFFD shows its own reason
    hookbox::metrics::print_to_stdout(false);
    let mut altered = common::http_event("httpapi-ingest-valid.json");
    altered.body = altered
        .body
        .map(|b| b.replacen("payment", "pa\u{FFFD}ment", 1));
    for e in [
        common::http_event("httpapi-ingest-valid.json"),
        common::http_event("httpapi-ingest-base64.json"),
        common::http_event("httpapi-ingest-bad-signature.json"),
        altered,
    ] {
        if let Some(sig) = e
            .headers
            .get("webhook-signature")
            .and_then(|v| v.to_str().ok())
        {
            signatures.push(sig.trim_start_matches("v1,").to_string());
        }
        let r = rig.function.handle_http(e).await;
        for secret in SECRET_MATERIAL {
            assert!(
                !format!("{r:?}").contains(secret),
                "a response leaks a secret"
            );
        }
    }
    let logs = captured.text();
    assert!(
        logs.contains("rejected_invalid_signature_body_altered"),
        "the metric of a text body HTTP API may have altered has its own reason"
    );
    assert!(logs.contains("\"accepted\""), "the run was logged");
    // every line one flat JSON object that Lambda's level filter reads
    for line in logs.lines() {
        let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        assert!(
            doc["level"].is_string() && doc["timestamp"].is_string(),
            "{line}"
        );
    }
    assert!(
        logs.contains("signature rejected"),
        "rejections were logged"
    );
    for secret in SECRET_MATERIAL {
        assert!(!logs.contains(secret), "a secret appears in the logs");
    }
    for sig in &signatures {
        assert!(
            !logs.contains(sig.as_str()),
            "a full signature appears in the logs"
        );
    }
}
