//! The HTTP management API (`hookbox::management`, docs/tenants.md "The
//! HTTP API") through both database adapters: Svix's routes, wire names,
//! statuses and refusals; `disabled` as hookbox's held disable; secrets and
//! rotation; event types; `Idempotency-Key`; the audit trail as face `api`.
//! Every answer a test sees is checked against Svix's OpenAPI document
//! (docs/api/openapi.json, with docs/api/conformance.py).

mod common;

#[path = "management/apps.rs"]
mod apps;
#[path = "management/endpoints.rs"]
mod endpoints;
#[path = "management/event_types.rs"]
mod event_types;
#[path = "management/idempotency.rs"]
mod idempotency;
#[path = "management/messages.rs"]
mod messages;
#[path = "management/operator.rs"]
mod operator;
#[path = "management/portal.rs"]
mod portal;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeZone, Utc};
use hookbox::clock::ManualClock;
use hookbox::management::{ApiRequest, ApiResponse, ApiTokens, ManagementApi};
use hookbox::store::Database;
use hookbox::tenants::SecretKeeper;
use hookbox::vault::local::LocalVault;
use serde_json::Value;

use common::{Adapter, migrated_db, sql};

/// The token every test request carries (named `ci` in the audit).
pub const TOKEN: &str = "hb_test_token";

/// The API over a fresh database, and every answer it gave.
#[allow(missing_debug_implementations)]
pub struct Harness {
    _t: hookbox_testkit::TestDb,
    pub db: Arc<dyn Database>,
    pub clock: Arc<ManualClock>,
    pub keeper: SecretKeeper,
    pub api: ManagementApi,
    answers: Mutex<Vec<Value>>,
}

/// One call's answer, with its body as JSON.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub response: ApiResponse,
}

impl Harness {
    pub async fn new(adapter: Adapter) -> Self {
        let (t, db) = migrated_db(adapter).await;
        // the database's time: secrets' grace periods are counted there
        let now: DateTime<Utc> = hookbox::store::fetch_one(
            db.as_ref(),
            &sql("SELECT CAST(extract(epoch FROM now()) AS bigint) AS s"),
            &hookbox::params! {},
        )
        .await
        .expect("now")
        .i64("s")
        .map(|s| Utc.timestamp_opt(s, 0).single().expect("instant"))
        .expect("s");
        let clock = Arc::new(ManualClock::new(now));
        let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
        let tokens = ApiTokens::default()
            .with_token("ci", TOKEN)
            .expect("token")
            .with_token("other", "hb_other_token")
            .expect("token");
        let api = ManagementApi::new(db.clone(), keeper.clone(), clock.clone(), tokens);
        Self {
            _t: t,
            db,
            clock,
            keeper,
            api,
            answers: Mutex::new(Vec::new()),
        }
    }

    /// `method target` (a path with an optional `?query`) with `body`, as
    /// the `ci` token, with `headers`.
    pub async fn call_with(
        &self,
        method: &str,
        target: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let query: BTreeMap<String, String> = form_pairs(query);
        let mut all: BTreeMap<String, String> = BTreeMap::new();
        all.insert("authorization".into(), format!("Bearer {TOKEN}"));
        for (n, v) in headers {
            all.insert(n.to_ascii_lowercase(), (*v).to_string());
        }
        all.retain(|_, v| !v.is_empty());
        let request = ApiRequest {
            method: method.into(),
            path: path.into(),
            query,
            headers: all,
            body: body.map(|b| b.to_string()).unwrap_or_default().into(),
            verified_principal: None,
            base_url: Some("https://hooks.example/Prod".into()),
        };
        self.send(request).await
    }

    /// Sends `request` as it is (its own credentials).
    pub async fn send(&self, request: ApiRequest) -> Answer {
        let (method, path) = (request.method.clone(), request.path.clone());
        let response = self.api.handle(request).await;
        let body = if response.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&response.body)
                .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {:?}", response.body))
        };
        self.answers
            .lock()
            .expect("answers")
            .push(serde_json::json!({
                "method": method, "path": path, "status": response.status, "body": body,
            }));
        Answer {
            status: response.status,
            body,
            response,
        }
    }

    pub async fn call(&self, method: &str, target: &str, body: Option<Value>) -> Answer {
        self.call_with(method, target, body, &[]).await
    }

    /// Every answer so far passes docs/api/conformance.py; returns the
    /// operations it saw.
    pub fn conform(&self) -> Value {
        let answers = self.answers.lock().expect("answers").clone();
        conform(&answers)
    }
}

fn form_pairs(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// `method target` (a path with an optional `?query`) with `body` and
/// exactly `headers`, straight to `api` (not recorded for the conformance
/// check: the portal's and the operator page's routes are not Svix's).
pub async fn raw(
    api: &ManagementApi,
    method: &str,
    target: &str,
    body: Option<Value>,
    headers: &[(&str, String)],
) -> ApiResponse {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    api.handle(ApiRequest {
        method: method.into(),
        path: path.into(),
        query: form_pairs(query),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect(),
        body: body.map(|b| b.to_string()).unwrap_or_default().into(),
        ..ApiRequest::default()
    })
    .await
}

/// Runs docs/api/conformance.py over `answers`; panics with its failures.
pub fn conform(answers: &[Value]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api/conformance.py");
    let mut child = Command::new(hookbox_testkit::python::python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run docs/api/conformance.py (tools/dev setup test installs jsonschema)");
    let input: String = answers.iter().map(|a| format!("{a}\n")).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write answers");
    let output = child.wait_with_output().expect("conformance.py");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "conformance.py printed no report ({e}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(
        output.status.success(),
        "answers that are not Svix's: {:#}",
        report["failures"]
    );
    assert_eq!(report["checked"], answers.len());
    report["operations"].clone()
}

/// The `loc` of a 422's first item, joined with dots.
pub fn loc(a: &Answer) -> String {
    assert_eq!(a.status, 422, "{a:?}");
    a.body["detail"][0]["loc"]
        .as_array()
        .expect("loc")
        .iter()
        .map(|p| p.as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(".")
}
