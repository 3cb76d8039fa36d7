//! Publishing from other languages' services, each in its own transaction
//! (docs/publishing.md): Python with psycopg and Node.js with node-postgres
//! straight to PostgreSQL, and Python with boto3 through the RDS Data API
//! (the local Data API; ExecuteStatement with a transactionId). The
//! committed event is delivered to every subscribed destination, under the
//! ids `hookbox_publish` returned; the rolled-back one to none. And a SaaS
//! backend managing its customers' endpoints in SQL from the same three
//! clients (docs/tenants.md): each tenant's deliveries reach only its own
//! endpoints, signed with their sealed secrets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::relay::{FixedJitter, HttpSender, Relay, RelaySettings};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_testkit::TestDb;
use hookbox_testkit::http_sink::HttpSink;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("publish")
}

/// `crm` takes `order.*`, `erp` `order.paid` in EUR, `audit` only USD.
fn config(sink: &HttpSink) -> HookboxConfig {
    let dest = |name: &str, subscribe: serde_json::Value| {
        serde_json::json!({
            "url": sink.url(&format!("/{name}")),
            "secrets": [SECRET],
            "allowed_networks": ["127.0.0.0/8"],
            "subscribe": subscribe,
        })
    };
    let text = serde_json::json!({"destinations": {
        "crm": dest("crm", serde_json::json!({"event_types": ["order.*"]})),
        "erp": dest("erp", serde_json::json!({"event_types": ["order.paid"],
            "filters": [{"pointer": "/currency", "equals": "EUR"}]})),
        "audit": dest("audit", serde_json::json!({"event_types": ["order.paid"],
            "filters": [{"pointer": "/currency", "equals": "USD"}]})),
    }})
    .to_string();
    HookboxConfig::parse(&text, "test").expect("valid config")
}

/// Runs a client; the ids it printed.
async fn client(program: PathBuf, args: Vec<String>) -> Vec<String> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    serde_json::from_value(run_json(program, args).await)
        .unwrap_or_else(|e| panic!("{shown} printed no JSON list of ids: {e}"))
}

/// Runs a client; the JSON document it printed.
async fn run_json(program: PathBuf, args: Vec<String>) -> serde_json::Value {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .args(&args)
            .current_dir(scripts())
            .output()
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| {
        panic!("cannot run {shown}: {e} (tools/dev setup test installs the clients)")
    });
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

/// Where a client publishes to.
struct Target {
    /// `postgres://…` of the test database.
    dsn: String,
    /// Its name.
    database: String,
    /// The local Data API in front of it.
    data_api: String,
}

/// How a client is run for an order, ending with commit or rollback.
type Run = fn(&Target, &str, &str) -> (PathBuf, Vec<String>);

async fn committed_is_delivered_to_every_subscriber_and_rolled_back_to_none(name: &str, run: Run) {
    let test_db = TestDb::create().await;
    let server = hookbox_testkit::start_data_api(test_db.url());
    let target = Target {
        dsn: test_db.url().to_string(),
        database: test_db
            .url()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string(),
        data_api: server.endpoint_url(),
    };
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    hookbox::outbox::destinations::sync(db.as_ref(), &cfg, chrono::Utc::now())
        .await
        .expect("sync");

    let (program, args) = run(&target, &format!("{name}-kept"), "commit");
    let kept = client(program, args).await;
    let (program, args) = run(&target, &format!("{name}-dropped"), "rollback");
    let dropped = client(program, args).await;
    assert_eq!(kept.len(), 2, "{name}: crm and erp subscribe: {kept:?}");
    assert_eq!(dropped.len(), 2, "{name}: {dropped:?}");

    let rows = db
        .execute(
            &Statement::new(
                "test.rows",
                "SELECT CAST(id AS text) AS id, destination, aggregate_id FROM outbox",
            ),
            &hookbox::params! {},
        )
        .await
        .expect("outbox")
        .rows;
    let stored: BTreeSet<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r.text("aggregate_id").expect("aggregate_id"),
                r.text("destination").expect("destination"),
                r.text("id").expect("id"),
            )
        })
        .collect();
    let ids: BTreeSet<&String> = stored.iter().map(|(_, _, id)| id).collect();
    assert_eq!(
        ids,
        kept.iter().collect(),
        "{name}: only the committed event's rows, under the returned ids: {stored:?}"
    );
    let destinations: BTreeSet<&str> = stored.iter().map(|(_, d, _)| d.as_str()).collect();
    assert_eq!(destinations, BTreeSet::from(["crm", "erp"]));

    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::seconds(5),
    ));
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        RelaySettings::new("publish-clients"),
    )
    .with_jitter(Arc::new(FixedJitter(0.0)));
    relay.drain(&ConfigStore::fixed(cfg, clock)).await;
    let delivered: BTreeSet<(String, String)> = sink
        .requests()
        .iter()
        .map(|r| {
            assert_eq!(r.json()["order_id"], format!("{name}-kept"));
            (
                r.target.clone(),
                r.header("webhook-id").unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String)> = stored
        .iter()
        .map(|(_, d, id)| (format!("/{d}"), id.clone()))
        .collect();
    assert_eq!(delivered, expected, "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_with_psycopg() {
    committed_is_delivered_to_every_subscriber_and_rolled_back_to_none("py", |t, order, end| {
        let args = ["publish.py", "postgres", &t.dsn, order, end];
        (
            hookbox_testkit::python::python(),
            args.map(String::from).to_vec(),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_with_node_postgres() {
    committed_is_delivered_to_every_subscriber_and_rolled_back_to_none("node", |t, order, end| {
        let args = ["publish.mjs", &t.dsn, order, end];
        (PathBuf::from("node"), args.map(String::from).to_vec())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_with_boto3_through_the_data_api() {
    committed_is_delivered_to_every_subscriber_and_rolled_back_to_none("boto3", |t, order, end| {
        let args = [
            "publish.py",
            "data-api",
            &t.data_api,
            "arn:aws:rds:us-east-1:123456789012:cluster:hookbox",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox",
            &t.database,
            order,
            end,
        ];
        (
            hookbox_testkit::python::python(),
            args.map(String::from).to_vec(),
        )
    })
    .await;
}

/// The SaaS scenario of `tenants.py` and `tenants.mjs`, through psycopg,
/// node-postgres and boto3 (the Data API), one tenant each, on one
/// database; then the relay delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_are_managed_and_published_to_from_python_node_and_the_data_api() {
    use hookbox::signature::sign_standard_webhooks;
    use hookbox::tenants::{EndpointDirectory, SecretKeeper};
    use hookbox::vault::local::LocalVault;

    let test_db = TestDb::create().await;
    let server = hookbox_testkit::start_data_api(test_db.url());
    let database = test_db
        .url()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let sink = HttpSink::start().await;
    let base = sink.url("");
    let data_api = |rest: &[&str]| {
        let mut args = vec![
            "tenants.py".to_string(),
            "data-api".into(),
            server.endpoint_url(),
            "arn:aws:rds:us-east-1:123456789012:cluster:hookbox".into(),
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox".into(),
            database.clone(),
        ];
        args.extend(rest.iter().map(|s| s.to_string()));
        (hookbox_testkit::python::python(), args)
    };
    let py = |rest: &[&str]| {
        let mut args = vec![
            "tenants.py".to_string(),
            "postgres".into(),
            test_db.url().to_string(),
        ];
        args.extend(rest.iter().map(|s| s.to_string()));
        (hookbox_testkit::python::python(), args)
    };
    let node = |rest: &[&str]| {
        let mut args = vec!["tenants.mjs".to_string(), test_db.url().to_string()];
        args.extend(rest.iter().map(|s| s.to_string()));
        (PathBuf::from("node"), args)
    };
    type Face<'a> = (&'a str, Box<dyn Fn(&[&str]) -> (PathBuf, Vec<String>) + 'a>);
    let faces: Vec<Face<'_>> = vec![
        ("py-acme", Box::new(py)),
        ("node-acme", Box::new(node)),
        ("boto3-acme", Box::new(data_api)),
    ];
    let mut ran = Vec::new();
    for (tenant, face) in &faces {
        let (program, args) = face(&[tenant, &base]);
        let out = run_json(program, args).await;
        let refused = out["refused"].as_str().unwrap_or_default();
        assert!(
            refused.contains("hookbox_endpoint_create: url 'ftp://files.example'"),
            "{tenant}: {out}"
        );
        assert_eq!(
            out["kept"].as_array().map(Vec::len),
            Some(2),
            "{tenant}: {out}"
        );
        assert_eq!(
            out["dropped"].as_array().map(Vec::len),
            Some(2),
            "{tenant}: {out}"
        );
        assert_eq!(
            out["listed"],
            serde_json::json!(["all", "orders"]),
            "{tenant}"
        );
        let audit = out["audit"].to_string();
        for action in [
            "tenant.created",
            "endpoint.created",
            "endpoint.updated",
            "endpoint.secret_rotated",
        ] {
            assert!(audit.contains(action), "{tenant}: {audit}");
        }
        ran.push((tenant.to_string(), out));
    }

    // only the committed events are stored, under the ids returned
    let stored = db
        .execute(
            &Statement::new("test.rows", "SELECT CAST(id AS text) AS id FROM outbox"),
            &hookbox::params! {},
        )
        .await
        .expect("outbox")
        .rows
        .iter()
        .map(|r| r.text("id").expect("id"))
        .collect::<BTreeSet<_>>();
    let kept: BTreeSet<String> = ran
        .iter()
        .flat_map(|(_, out)| out["kept"].as_array().cloned().unwrap_or_default())
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(stored, kept);

    let clock = Arc::new(ManualClock::new(
        chrono::Utc::now() + chrono::Duration::seconds(5),
    ));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let relay = Relay::new(
        db.clone(),
        Arc::new(MemoryBlobStore::new()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        RelaySettings::new("tenant-clients"),
    )
    .with_jitter(Arc::new(FixedJitter(0.0)))
    .with_endpoints(Arc::new(EndpointDirectory::new(
        keeper.clone(),
        vec!["127.0.0.0/8".parse().expect("net")],
    )));
    let config = HookboxConfig::parse("{}", "test").expect("config");
    relay
        .drain(&ConfigStore::fixed(config, clock.clone()))
        .await;
    let requests = sink.requests();
    assert_eq!(requests.len(), 6, "{requests:?}");
    let mut to_verify = Vec::new();
    for r in &requests {
        // /<tenant>/<endpoint uid>: each tenant's event at its own endpoints only
        let mut path = r.target.trim_start_matches('/').split('/');
        let (tenant, uid) = (
            path.next().unwrap_or_default(),
            path.next().unwrap_or_default(),
        );
        assert_eq!(r.json()["tenant"], tenant, "{}", r.target);
        let out = &ran
            .iter()
            .find(|(t, _)| t == tenant)
            .expect("a tenant of the scenario")
            .1;
        let id = r.header("webhook-id").unwrap_or_default();
        assert!(
            out["kept"].to_string().contains(id),
            "{id} not among {tenant}'s deliveries"
        );
        assert_eq!(r.header("x-tenant"), (uid == "orders").then_some(tenant));
        let endpoint = out["endpoints"][uid].as_str().expect("endpoint id");
        let secret = keeper
            .reveal(db.as_ref(), endpoint, clock.now(), None)
            .await
            .expect("the endpoint's secret");
        let at: i64 = r
            .header("webhook-timestamp")
            .unwrap_or_default()
            .parse()
            .expect("seconds");
        let expected = sign_standard_webhooks(
            id,
            chrono::DateTime::from_timestamp(at, 0).expect("instant"),
            &r.body,
            std::slice::from_ref(&secret),
        )
        .expect("sign")
        .signature;
        assert!(
            r.header("webhook-signature")
                .unwrap_or_default()
                .split(' ')
                .any(|s| s == expected),
            "{} is not signed with its endpoint's secret",
            r.target
        );
        let headers = serde_json::json!({
            "webhook-id": id,
            "webhook-timestamp": r.header("webhook-timestamp"),
            "webhook-signature": r.header("webhook-signature"),
        });
        to_verify.push(serde_json::json!({
            "secret": secret.expose_secret(),
            "body": String::from_utf8_lossy(&r.body),
            "headers": headers,
        }));
    }
    // as a customer's receiver verifies: Standard Webhooks' own library,
    // which refuses another endpoint's secret
    let mut wrong = to_verify[0].clone();
    wrong["secret"] = to_verify
        .iter()
        .map(|v| v["secret"].clone())
        .find(|s| *s != to_verify[0]["secret"])
        .expect("another endpoint's secret");
    to_verify.push(wrong);
    let verdicts = standard_webhooks_verify(&to_verify).await;
    assert_eq!(verdicts.len(), 7);
    assert!(verdicts[..6].iter().all(|v| *v == true), "{verdicts:?}");
    assert_ne!(verdicts[6], true, "verified with another endpoint's secret");

    // deleted from each face: its endpoints go, nothing undelivered is left
    for (tenant, face) in &faces {
        let (program, args) = face(&["--delete", tenant]);
        let gone = run_json(program, args).await;
        assert_eq!(gone["endpoints"], 2, "{tenant}: {gone}");
        assert_eq!(gone["undelivered"], 0, "{tenant}: {gone}");
    }
}

/// `verify.py`'s verdicts for `deliveries` (Standard Webhooks' Python
/// library): true, or the library's error.
async fn standard_webhooks_verify(deliveries: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let deliveries = deliveries.to_vec();
    tokio::task::spawn_blocking(move || {
        hookbox_testkit::python::standard_webhooks_verify(&deliveries)
    })
    .await
    .expect("verify.py")
}
