//! The harness of the CLI's tenant tests: the built binary run against a
//! fresh, migrated database through either adapter, with a transcript of
//! what it printed.

use std::process::{Command, Output};
use std::sync::Arc;

use hookbox::store::Database;
use hookbox::store::data_api::DataApiTarget;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_testkit::TestDb;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_hookbox");
/// Custom headers' values: credentials, never printed.
pub const HEADER_VALUE: &str = "Bearer hdr-value-4f1c9a-never-printed";
pub const HEADER_VALUE_2: &str = "Bearer hdr-value-2-b7e3d0-never-printed";

/// Variables the binary would otherwise pick up from the test's environment.
pub const CLEARED: &[&str] = &[
    "DATABASE_URL",
    "HOOKBOX_DB",
    "DB_CLUSTER_ARN",
    "DB_SECRET_ARN",
    "DB_NAME",
    "HOOKBOX_KMS_KEY_ID",
    "HOOKBOX_LOCAL_VAULT_KEY",
    "AWS_ENDPOINT_URL_RDS_DATA",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Postgres,
    DataApi,
}

/// Runs the binary with a fixed configuration and keeps a transcript of
/// everything it printed (but what `secret` and `rotate` print).
pub struct Cli {
    pub env: Vec<(String, String)>,
    pub transcript: String,
}

impl Cli {
    pub async fn run(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        let mut command = Command::new(BIN);
        command.args(args);
        for name in CLEARED {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        command.envs(extra.iter().copied());
        tokio::task::spawn_blocking(move || command.output().expect("the binary runs"))
            .await
            .expect("join")
    }

    /// Runs `args` expecting success: its JSON document.
    pub async fn ok(&mut self, args: &[&str]) -> Value {
        let out = self.run(args, &[]).await;
        self.record(&out);
        json_of(args, &out)
    }

    /// Runs `args` expecting exit `code`: its stderr.
    pub async fn fails(&mut self, args: &[&str], code: i32, extra: &[(&str, &str)]) -> String {
        let out = self.run(args, extra).await;
        self.record(&out);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        text(&out.stderr)
    }

    /// Runs `args` with the key vault (output not kept: it shows a secret).
    pub async fn secret(&mut self, args: &[&str], vault_key: &str) -> Value {
        let out = self
            .run(args, &[("HOOKBOX_LOCAL_VAULT_KEY", vault_key)])
            .await;
        json_of(args, &out)
    }

    pub fn record(&mut self, out: &Output) {
        self.transcript.push_str(&text(&out.stdout));
        self.transcript.push_str(&text(&out.stderr));
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn json_of(args: &[&str], out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}: {}{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", text(&out.stdout)))
}

pub fn str_of<'a>(doc: &'a Value, field: &str) -> &'a str {
    doc[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {doc}"))
}

/// A migrated database, and the CLI configured for it through `adapter`.
pub async fn setup(adapter: Adapter) -> (TestDb, Arc<dyn Database>, Cli) {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    let mut env: Vec<(String, String)> = vec![("USER".into(), "operator-ann".into())];
    match adapter {
        Adapter::Postgres => env.push(("DATABASE_URL".into(), test_db.url().into())),
        Adapter::DataApi => {
            let target = DataApiTarget {
                resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-test".into(),
                secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-test"
                    .into(),
                database: test_db.name().into(),
            };
            env.extend([
                ("HOOKBOX_DB".into(), "data-api".into()),
                ("DB_CLUSTER_ARN".into(), target.resource_arn),
                ("DB_SECRET_ARN".into(), target.secret_arn),
                ("DB_NAME".into(), target.database),
                (
                    "AWS_ENDPOINT_URL_RDS_DATA".into(),
                    hookbox_testkit::data_api_endpoint(),
                ),
                ("AWS_ACCESS_KEY_ID".into(), "test".into()),
                ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
                ("AWS_REGION".into(), "us-east-1".into()),
            ]);
        }
    }
    let cli = Cli {
        env,
        transcript: String::new(),
    };
    (test_db, db, cli)
}
