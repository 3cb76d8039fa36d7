//! What the runtime smoke tests (`functions/*/tests/runtime.rs`) share: which
//! `bootstrap` to run, the environment Lambda and the template would give
//! it (pointed at the local emulators), and the sample events of `events/`
//! re-signed at the current time (the real binaries use the system clock).
//!
//! The binary: `HOOKBOX_BOOTSTRAP_DIR` set (by `tools/dev deploy smoke`,
//! after `cargo lambda build`) → `$HOOKBOX_BOOTSTRAP_DIR/<bin>/bootstrap`,
//! cargo-lambda's layout; otherwise the binary cargo built for the test
//! (`CARGO_BIN_EXE_<bin>`: the same `main.rs`, host target, test profile).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use hmac::{KeyInit, Mac};

/// The demo secret every sample event is signed with (events/generate.py).
pub const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// The variable naming a directory of cargo-lambda builds.
pub const BOOTSTRAP_DIR_VAR: &str = "HOOKBOX_BOOTSTRAP_DIR";

/// The binary to run for `bin`; `built` is `env!("CARGO_BIN_EXE_<bin>")`.
///
/// # Panics
/// When `HOOKBOX_BOOTSTRAP_DIR` is set and holds no `<bin>/bootstrap`.
pub fn bootstrap(bin: &str, built: &str) -> PathBuf {
    match std::env::var(BOOTSTRAP_DIR_VAR) {
        Ok(dir) if !dir.trim().is_empty() => {
            let path = Path::new(&dir).join(bin).join("bootstrap");
            assert!(
                path.is_file(),
                "{BOOTSTRAP_DIR_VAR}={dir} has no {bin}/bootstrap (run `cargo lambda build` first)"
            );
            path
        }
        _ => PathBuf::from(built),
    }
}

/// The repository's `events/` directory.
pub fn events_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../events")
}

/// A sample event of `events/`, parsed.
///
/// # Panics
/// When it is missing or not JSON.
pub fn event(name: &str) -> serde_json::Value {
    let path = events_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Region, dummy credentials, no instance metadata: what a function needs
/// to build AWS clients that only ever talk to local emulators.
pub fn aws_env() -> Vec<(&'static str, String)> {
    vec![
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_DEFAULT_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_SESSION_TOKEN", "test".into()),
        ("AWS_EC2_METADATA_DISABLED", "true".into()),
    ]
}

/// The Data API variables of the template, pointed at the local Data API
/// in front of `database` (the name of a test database).
pub fn data_api_env(database: &str) -> Vec<(&'static str, String)> {
    vec![
        ("HOOKBOX_DB", "data-api".into()),
        (
            "DB_CLUSTER_ARN",
            "arn:aws:rds:us-east-1:123456789012:cluster:hookbox".into(),
        ),
        (
            "DB_SECRET_ARN",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-db-AbCdEf".into(),
        ),
        ("DB_NAME", database.into()),
        ("AWS_ENDPOINT_URL_RDS_DATA", crate::data_api_endpoint()),
    ]
}

/// What the functions with a database, a queue and a blob store share: the
/// AWS variables, the Data API in front of `database`, moto's SQS, the blob
/// directory, and the queue URL when given (absent: the init error test).
pub fn function_env(
    database: &str,
    queue_url: Option<&str>,
    blob_dir: &std::path::Path,
) -> Vec<(&'static str, String)> {
    let mut env = aws_env();
    env.extend(data_api_env(database));
    env.push(("AWS_ENDPOINT_URL_SQS", crate::moto::endpoint()));
    env.push(("HOOKBOX_BLOB_DIR", blob_dir.display().to_string()));
    // the processor runs the example orders domain the sample events are of
    // (a deployed one forwards by routes)
    env.push(("HOOKBOX_HANDLER", "orders-example".to_string()));
    if let Some(url) = queue_url {
        env.push(("HOOKBOX_QUEUE_URL", url.to_string()));
    }
    env
}

/// Standard Webhooks v1 signature of `body` with [`DEMO_SECRET`].
pub fn sign(id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(&DEMO_SECRET["whsec_".len()..])
        .expect("the demo secret is base64");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// Moves an API Gateway sample event (proxy or REQUEST authorizer) to
/// `now`: its `webhook-timestamp` becomes `now` and, when `valid`, its
/// signature is recomputed over its body (otherwise over another body, so
/// it stays a bad signature).
pub fn resign(event: &mut serde_json::Value, now: i64, valid: bool) {
    let body = event["body"].as_str().unwrap_or("").as_bytes().to_vec();
    let body = if event["isBase64Encoded"] == true {
        base64::engine::general_purpose::STANDARD
            .decode(&body)
            .expect("base64 body")
    } else {
        body
    };
    let signed = if valid {
        body
    } else {
        b"another body".to_vec()
    };
    let id = event["headers"]["webhook-id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let signature = sign(&id, now, &signed);
    for (name, value) in [
        ("webhook-timestamp", now.to_string()),
        ("webhook-signature", signature),
    ] {
        if event["headers"].get(name).is_some() {
            event["headers"][name] = value.clone().into();
            event["multiValueHeaders"][name] = serde_json::json!([value]);
        }
    }
}

/// Seconds since 1970, now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
