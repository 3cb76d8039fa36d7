//! `sam local` over the real template (infra/template.yaml): the real
//! bootstraps in Docker under AWS's Runtime Interface Emulator, as users
//! test them, pointed at local services. What `tools/dev deploy
//! invoke|start-api` (the `sam_local` example) and the e2e test
//! `sam_local.rs` share.
//!
//! - [`SamLocal::prepare`]: Docker must answer (`tools/dev setup deploy`
//!   installs and starts it), the images SAM runs a `provided.al2023`
//!   function in exist (`tools/sam/host-image` builds them from this host
//!   when absent), and a copy of the template whose functions' `CodeUri` is
//!   the directory of cargo-lambda's build of each binary (what `sam build`
//!   leaves in `.aws-sam/build`).
//! - [`SamLocal::invoke`] and [`SamLocal::start_api`] run the SAM CLI through
//!   `tools/sam/sam_host_network.py`: every container on the host network,
//!   the emulator on 127.0.0.1. Nothing connects anywhere but 127.0.0.1.
//!   The template's parameters: `Architecture=x86_64`, then those of
//!   `HOOKBOX_SAM_PARAMETER_OVERRIDES`, then [`SamLocal::with_parameter`]'s
//!   (`Ingress=http`: the webhook routes on the HTTP API).
//! - [`LocalServices`]: a fresh database, moto's SQS and S3,
//!   a sink for the relay and for CloudFormation responses, and
//!   the `--env-vars` file pointing the functions at them (the template
//!   declares each overridden variable; `--env-vars` overrides no other).
//! - [`at_invoke_time`]: an API Gateway sample event moved to now (the
//!   fixtures are signed at a fixed past time for the unit tests).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::http_sink::HttpSink;
use crate::{TestDb, moto, smoke};

/// The variable naming the directory of cargo-lambda's builds
/// (`<dir>/<bin>/bootstrap`) that `sam local` runs.
pub const BOOTSTRAP_DIR_VAR: &str = "HOOKBOX_SAM_BOOTSTRAP_DIR";

/// The time the sample events of `events/` are signed at (events/generate.py).
pub const FIXTURE_TIME: i64 = 1_780_000_000;

/// The functions of the template and their binaries.
pub const FUNCTIONS: [(&str, &str); 6] = [
    ("AuthorizerFunction", "authorizer"),
    ("IngestFunction", "ingest"),
    ("ProcessorFunction", "processor"),
    ("RelayFunction", "relay"),
    ("MigrateFunction", "migrate"),
    ("ManagementFunction", "management"),
];

/// Why `sam local` cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum SamError {
    /// No Docker daemon answers.
    #[error(
        "no Docker daemon answers (`docker version`: {0}); `tools/dev setup deploy` installs \
         docker.io and starts dockerd"
    )]
    NoDocker(String),
    /// A bootstrap is missing.
    #[error("{0} is missing: build the functions first (`cargo lambda build --x86-64`)")]
    NoBootstrap(PathBuf),
    /// A command failed.
    #[error("{what} failed: {detail}")]
    Command {
        /// What was run.
        what: String,
        /// Its status and output.
        detail: String,
    },
}

fn command_error(what: &str, out: &std::process::Output) -> SamError {
    SamError::Command {
        what: what.to_string(),
        detail: format!(
            "{}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The interpreter of the deploy tools' virtual environment
/// (`$HOOKBOX_DEPLOY_VENV`, else `<workspace>/.venv-deploy`).
pub fn deploy_python() -> PathBuf {
    crate::python::sam().with_file_name("python")
}

/// The SAM CLI, ready to run the template's functions from `bootstrap_dir`.
#[derive(Debug)]
pub struct SamLocal {
    root: PathBuf,
    dir: tempfile::TempDir,
    overrides: Vec<String>,
    debug: bool,
}

impl SamLocal {
    /// Checks Docker, builds the images when absent, writes the template.
    pub fn prepare(bootstrap_dir: &Path) -> Result<SamLocal, SamError> {
        let root = crate::python::workspace_root();
        let bootstrap_dir = &std::path::absolute(bootstrap_dir).map_err(|e| SamError::Command {
            what: format!("the absolute path of {}", bootstrap_dir.display()),
            detail: e.to_string(),
        })?;
        for (_, bin) in FUNCTIONS {
            let path = bootstrap_dir.join(bin).join("bootstrap");
            if !path.is_file() {
                return Err(SamError::NoBootstrap(path));
            }
        }
        let version = Command::new("docker")
            .args(["version", "--format", "{{.Server.Version}}"])
            .output()
            .map_err(|e| SamError::NoDocker(e.to_string()))?;
        if !version.status.success() {
            return Err(SamError::NoDocker(
                String::from_utf8_lossy(&version.stderr).trim().to_string(),
            ));
        }
        let images = Command::new(root.join("tools/sam/host-image"))
            .env(
                "HOOKBOX_DEPLOY_VENV",
                crate::python::sam()
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new(".")),
            )
            .output()
            .map_err(|e| SamError::Command {
                what: "tools/sam/host-image".into(),
                detail: e.to_string(),
            })?;
        if !images.status.success() {
            return Err(command_error("tools/sam/host-image", &images));
        }
        let dir = tempfile::Builder::new()
            .prefix("hookbox-sam-")
            .tempdir()
            .map_err(|e| SamError::Command {
                what: "a temporary directory".into(),
                detail: e.to_string(),
            })?;
        let template = std::fs::read_to_string(root.join("infra/template.yaml")).map_err(|e| {
            SamError::Command {
                what: "reading infra/template.yaml".into(),
                detail: e.to_string(),
            }
        })?;
        let built = local_template(&template, bootstrap_dir)?;
        std::fs::write(dir.path().join("template.yaml"), built).map_err(|e| SamError::Command {
            what: "writing the local template".into(),
            detail: e.to_string(),
        })?;
        Ok(SamLocal {
            root,
            dir,
            overrides: Vec::new(),
            debug: false,
        })
    }

    /// Runs the template with its parameter `key` set to `value` (after
    /// `HOOKBOX_SAM_PARAMETER_OVERRIDES`, so this one wins): `Ingress`,
    /// `http` serves the webhook routes on the HTTP API.
    #[must_use]
    pub fn with_parameter(mut self, key: &str, value: &str) -> SamLocal {
        self.overrides.push(format!("{key}={value}"));
        self
    }

    /// SAM logs at debug level (`SAM_DEBUG=true`): among much else, each
    /// event it builds for a function (`Constructed Event Version 2.0` for
    /// an HTTP API route of payload 2.0), in [`StartApi::log`].
    #[must_use]
    pub fn with_debug_log(mut self) -> SamLocal {
        self.debug = true;
        self
    }

    /// The template SAM runs (the real one, `CodeUri` moved to the builds).
    pub fn template(&self) -> PathBuf {
        self.dir.path().join("template.yaml")
    }

    fn parameter_overrides(&self) -> String {
        let extra = std::env::var("HOOKBOX_SAM_PARAMETER_OVERRIDES").ok();
        parameter_overrides(extra.as_deref(), &self.overrides)
    }

    /// `sam ARGS` through the host-network wrapper, with a region, dummy
    /// credentials (never the instance metadata service) and no telemetry.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(deploy_python());
        cmd.arg(self.root.join("tools/sam/sam_host_network.py"))
            .args(args)
            .current_dir(self.dir.path())
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("SAM_CLI_TELEMETRY", "0");
        if self.debug {
            cmd.env("SAM_DEBUG", "true");
        }
        cmd
    }

    /// `sam local invoke FUNCTION` with `event` and the `--env-vars` file;
    /// the function's answer (the last line SAM prints on stdout).
    pub async fn invoke(
        &self,
        function: &str,
        event: &serde_json::Value,
        env_vars: &Path,
    ) -> Result<Invocation, SamError> {
        let event_file = self.dir.path().join(format!("{function}-event.json"));
        std::fs::write(&event_file, event.to_string()).map_err(|e| SamError::Command {
            what: "writing the event".into(),
            detail: e.to_string(),
        })?;
        let template = self.template();
        let mut cmd = tokio::process::Command::from(self.command(&[
            "local",
            "invoke",
            function,
            "--template",
            path_str(&template),
            "--event",
            path_str(&event_file),
            "--env-vars",
            path_str(env_vars),
            "--skip-pull-image",
            "--parameter-overrides",
            &self.parameter_overrides(),
            "--container-host",
            "127.0.0.1",
            "--container-host-interface",
            "127.0.0.1",
        ]));
        let started = Instant::now();
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| SamError::Command {
                what: format!("sam local invoke {function}"),
                detail: e.to_string(),
            })?;
        let elapsed = started.elapsed();
        let what = format!("sam local invoke {function}");
        if !out.status.success() {
            return Err(command_error(&what, &out));
        }
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
        let response = last
            .and_then(|l| serde_json::from_str(l).ok())
            .ok_or_else(|| command_error(&format!("{what} (no JSON answer)"), &out))?;
        Ok(Invocation {
            response,
            stdout,
            stderr,
            elapsed,
        })
    }

    /// `sam local start-api` on 127.0.0.1:`port`, once it accepts
    /// connections (at most 60 s). Stopped when dropped.
    pub async fn start_api(&self, port: u16, env_vars: &Path) -> Result<StartApi, SamError> {
        let template = self.template();
        let log = self.dir.path().join("start-api.log");
        let log_file = std::fs::File::create(&log).map_err(|e| SamError::Command {
            what: "the start-api log".into(),
            detail: e.to_string(),
        })?;
        let port_text = port.to_string();
        let mut cmd = self.command(&[
            "local",
            "start-api",
            "--template",
            path_str(&template),
            "--env-vars",
            path_str(env_vars),
            "--skip-pull-image",
            "--parameter-overrides",
            &self.parameter_overrides(),
            "--host",
            "127.0.0.1",
            "--port",
            &port_text,
            "--container-host",
            "127.0.0.1",
            "--container-host-interface",
            "127.0.0.1",
        ]);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|e| SamError::Command {
                what: "the start-api log".into(),
                detail: e.to_string(),
            })?)
            .stderr(log_file)
            .spawn()
            .map_err(|e| SamError::Command {
                what: "sam local start-api".into(),
                detail: e.to_string(),
            })?;
        let mut api = StartApi {
            child,
            log,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(api);
            }
            if let Ok(Some(status)) = api.child.try_wait() {
                return Err(SamError::Command {
                    what: "sam local start-api".into(),
                    detail: format!("exited with {status}:\n{}", api.log()),
                });
            }
            if Instant::now() > deadline {
                return Err(SamError::Command {
                    what: "sam local start-api".into(),
                    detail: format!("not listening on {} after 60 s:\n{}", api.url, api.log()),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

/// `sam local --parameter-overrides`: `Architecture=x86_64` (the template's
/// default is arm64; the builds and images are x86_64), then the
/// space-separated `Key=Value`s of `HOOKBOX_SAM_PARAMETER_OVERRIDES`
/// (`tools/dev deploy start-api --ingress http` sets `Ingress=http`), then
/// those of [`SamLocal::with_parameter`]; SAM takes a key's last value.
fn parameter_overrides(extra: Option<&str>, overrides: &[String]) -> String {
    let mut all = vec!["Architecture=x86_64"];
    all.extend(extra.map(str::trim).filter(|e| !e.is_empty()));
    all.extend(overrides.iter().map(String::as_str));
    all.join(" ")
}

/// `template` with each function's `CodeUri` (the workspace root, `../`)
/// replaced by `<bootstrap_dir>/<its Binary>`, as `sam build` would.
pub fn local_template(template: &str, bootstrap_dir: &Path) -> Result<String, SamError> {
    let mut out = String::with_capacity(template.len() + 512);
    let mut binary: Option<String> = None;
    let mut moved = 0;
    for line in template.lines() {
        let trimmed = line.trim_start();
        if let Some(bin) = trimmed.strip_prefix("Binary:") {
            binary = Some(bin.trim().to_string());
        }
        if trimmed.starts_with("CodeUri:") {
            let Some(bin) = binary.take() else {
                return Err(SamError::Command {
                    what: "rewriting the template".into(),
                    detail: format!("a CodeUri without a Binary before it: {line:?}"),
                });
            };
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(&format!(
                "{indent}CodeUri: {}\n",
                bootstrap_dir.join(bin).display()
            ));
            moved += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if moved != FUNCTIONS.len() {
        return Err(SamError::Command {
            what: "rewriting the template".into(),
            detail: format!(
                "moved {moved} CodeUri, the template has {} functions",
                FUNCTIONS.len()
            ),
        });
    }
    Ok(out)
}

/// What `sam local invoke` printed.
#[derive(Debug)]
pub struct Invocation {
    /// The function's answer.
    pub response: serde_json::Value,
    /// SAM's standard output.
    pub stdout: String,
    /// SAM's and the function's logs.
    pub stderr: String,
    /// How long the `sam local invoke` took, start to end.
    pub elapsed: Duration,
}

/// A running `sam local start-api`.
#[derive(Debug)]
pub struct StartApi {
    child: std::process::Child,
    log: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl StartApi {
    /// What SAM and the functions printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The process id (to look it up in `ss -ltnp`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for StartApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The services a local run of the functions uses, and the `--env-vars`
/// file pointing every function at them.
#[derive(Debug)]
pub struct LocalServices {
    /// A fresh database (no schema: run the MigrateFunction, or migrate).
    pub db: TestDb,
    /// moto (SQS, S3): `AWS_ENDPOINT_URL`.
    pub moto: String,
    /// The inbox queue.
    pub queue: moto::TestQueue,
    /// The blob bucket.
    pub bucket: String,
    /// The relay's destination `erp` and the CloudFormation ResponseURL.
    pub sink: HttpSink,
    env_file: tempfile::NamedTempFile,
}

impl LocalServices {
    /// Starts (or reuses this process's) PostgreSQL and moto; a fresh
    /// database, queue, bucket and sink.
    ///
    /// # Panics
    /// When one cannot be provided (tests fail, never skip).
    pub async fn start() -> LocalServices {
        let db = TestDb::create().await;
        let moto = moto::endpoint();
        let queue = moto::create_queue(&moto, &moto::unique_name("sam-inbox"), 30, 4).await;
        let (_, bucket) = crate::s3::bucket().await;
        let sink = HttpSink::start().await;
        let env_file = tempfile::Builder::new()
            .prefix("hookbox-sam-env-")
            .suffix(".json")
            .tempfile()
            .expect("a temporary file");
        let services = LocalServices {
            db,
            moto,
            queue,
            bucket,
            sink,
            env_file,
        };
        std::fs::write(services.env_file.path(), services.env_vars().to_string())
            .expect("write the --env-vars file");
        services
    }

    /// The partners of events/partners-test.json, and a destination `erp`
    /// (the example orders domain's) at the sink.
    pub fn config(&self) -> serde_json::Value {
        let path = smoke::events_dir().join("partners-test.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let mut config: serde_json::Value = serde_json::from_str(&text).expect("partners JSON");
        config["destinations"] = serde_json::json!({ "erp": {
            "url": self.sink.url("/erp"),
            "secrets": [smoke::DEMO_SECRET],
            "allowed_networks": ["127.0.0.0/8"],
        }});
        config
    }

    /// The `--env-vars` content: `Parameters` applies to every function
    /// that declares the variable.
    pub fn env_vars(&self) -> serde_json::Value {
        serde_json::json!({ "Parameters": {
            "AWS_ENDPOINT_URL": self.moto,
            "HOOKBOX_DB": "postgres",
            "DATABASE_URL": self.db.url(),
            "DB_CLUSTER_ARN": "",
            "DB_SECRET_ARN": "",
            "HOOKBOX_PARTNERS": self.config().to_string(),
            "HOOKBOX_PARTNERS_SECRET_ARN": "",
            "HOOKBOX_QUEUE_URL": self.queue.url,
            "HOOKBOX_BLOB_BUCKET": self.bucket,
            // the sample events are of the example orders domain (the
            // template's processor forwards by routes)
            "HOOKBOX_HANDLER": "orders-example",
            // one database role here (the URL's): no role passwords to set
            "HOOKBOX_ROLE_SECRET_ARNS": "",
            // the relay stops claiming 57 s before its 60 s deadline
            "HOOKBOX_RELAY_STOP_MARGIN_SECONDS": "57",
        }})
    }

    /// The `--env-vars` file.
    pub fn env_file(&self) -> &Path {
        self.env_file.path()
    }
}

/// Moves an API Gateway sample event (proxy or REQUEST authorizer) from
/// [`FIXTURE_TIME`] to `now`: `webhook-timestamp` and `requestTimeEpoch`
/// keep their offset from the fixture's time (a stale event stays stale),
/// and the signature is made again over the body, valid exactly when the
/// fixture's was (a bad signature stays bad). Other events are unchanged.
pub fn at_invoke_time(event: &mut serde_json::Value, now: i64) {
    let shift = now - FIXTURE_TIME;
    if let Some(ms) = event["requestContext"]["requestTimeEpoch"].as_i64() {
        event["requestContext"]["requestTimeEpoch"] = (ms + shift * 1000).into();
    }
    let Some(ts) = event["headers"]["webhook-timestamp"]
        .as_str()
        .and_then(|t| t.parse::<i64>().ok())
    else {
        return;
    };
    let body = event["body"].as_str().unwrap_or("").as_bytes().to_vec();
    let body = if event["isBase64Encoded"] == true {
        base64::engine::general_purpose::STANDARD
            .decode(&body)
            .unwrap_or(body)
    } else {
        body
    };
    let id = event["headers"]["webhook-id"].as_str().unwrap_or_default();
    let signature = event["headers"]["webhook-signature"].as_str();
    let valid = signature == Some(smoke::sign(id, ts, &body).as_str());
    let signed = if valid {
        body
    } else {
        b"another body".to_vec()
    };
    let new_ts = ts + shift;
    let new_signature = smoke::sign(id, new_ts, &signed);
    for (name, value) in [
        ("webhook-timestamp", new_ts.to_string()),
        ("webhook-signature", new_signature),
    ] {
        if event["headers"].get(name).is_some() {
            event["headers"][name] = value.clone().into();
        }
        if event["multiValueHeaders"].get(name).is_some() {
            event["multiValueHeaders"][name] = serde_json::json!([value]);
        }
    }
}

/// A CloudFormation custom resource event with its `ResponseURL` at `url`.
pub fn with_response_url(mut event: serde_json::Value, url: &str) -> serde_json::Value {
    event["ResponseURL"] = url.into();
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_keeps_its_age_and_the_validity_of_its_signature() {
        let now = FIXTURE_TIME + 1000;
        for (name, valid) in [
            ("apigw-ingest-valid.json", true),
            ("apigw-ingest-base64.json", true),
            ("apigw-ingest-bad-signature.json", false),
            ("apigw-ingest-stale.json", true),
        ] {
            let original = smoke::event(name);
            let mut event = original.clone();
            at_invoke_time(&mut event, now);
            let ts = |e: &serde_json::Value| {
                e["headers"]["webhook-timestamp"]
                    .as_str()
                    .and_then(|t| t.parse::<i64>().ok())
                    .expect("timestamp")
            };
            assert_eq!(ts(&event) - ts(&original), 1000, "{name}");
            let body = if event["isBase64Encoded"] == true {
                base64::engine::general_purpose::STANDARD
                    .decode(event["body"].as_str().expect("body"))
                    .expect("base64")
            } else {
                event["body"].as_str().expect("body").as_bytes().to_vec()
            };
            let id = event["headers"]["webhook-id"].as_str().expect("id");
            let good = smoke::sign(id, ts(&event), &body);
            assert_eq!(
                event["headers"]["webhook-signature"] == good.as_str(),
                valid,
                "{name}"
            );
            assert_eq!(
                event["multiValueHeaders"]["webhook-signature"][0],
                event["headers"]["webhook-signature"],
                "{name}"
            );
        }
    }

    #[test]
    fn the_caller_s_parameters_come_last_and_win() {
        assert_eq!(parameter_overrides(None, &[]), "Architecture=x86_64");
        assert_eq!(parameter_overrides(Some("  "), &[]), "Architecture=x86_64");
        assert_eq!(
            parameter_overrides(Some(" Ingress=rest Foo=1 "), &["Ingress=http".into()]),
            "Architecture=x86_64 Ingress=rest Foo=1 Ingress=http"
        );
    }

    #[test]
    fn the_template_runs_each_function_from_its_build() {
        let template =
            std::fs::read_to_string(crate::python::workspace_root().join("infra/template.yaml"))
                .expect("template");
        let local = local_template(&template, Path::new("/b")).expect("rewritten");
        for (_, bin) in FUNCTIONS {
            assert!(local.contains(&format!("CodeUri: /b/{bin}\n")), "{bin}");
        }
        assert!(!local.contains("CodeUri: ../"));
    }
}
