//! CloudFormation custom resource that applies hookbox's migrations.
//!
//! - Create / Update → `hookbox::migrate::migrate` through the database port
//!   (the Data API in production), then SUCCESS with the applied versions;
//!   while the database is unavailable (Aurora Serverless v2 resuming from 0
//!   ACU answers `DatabaseResumingException` for up to ~15 s) the run is
//!   tried again with backoff, for up to 2 minutes within the deadline;
//! - Delete → SUCCESS without touching the database (a schema is never
//!   dropped by a stack operation);
//! - any failure → FAILED with the reason, and always before the function's
//!   deadline: a custom resource that never answers hangs the stack for an
//!   hour.
//!
//! The answer is PUT to the pre-signed `ResponseURL` (never logged: it is a
//! credential). `PhysicalResourceId` is stable, so an update never makes
//! CloudFormation delete the "old" resource.

pub mod roles;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_lambda_events::cloudformation::{
    CloudFormationCustomResourceResponse, CloudFormationCustomResourceResponseStatus,
};
use hookbox::migrate::{MigrateError, MigrationReport, Migrator};
use hookbox::startup::{Startup, StartupError};
use hookbox::store::Database;
use lambda_runtime::LambdaEvent;
use serde::Deserialize;

/// The physical id of the schema resource: the same for its whole life.
pub const PHYSICAL_RESOURCE_ID: &str = "hookbox-schema-migrations";

/// Time kept in reserve before the Lambda deadline to send FAILED.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(10);

/// Longest reason we send (the whole response must stay under 4 KiB).
const MAX_REASON: usize = 1024;

/// Why the handler could not even answer CloudFormation.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The event has no usable ResponseURL: nobody can be told.
    #[error("custom resource event without ResponseURL: {0}")]
    Unanswerable(String),
    /// Every attempt to PUT the response failed.
    #[error("could not deliver the CloudFormation response after {attempts} attempts: {last}")]
    ResponseNotDelivered {
        /// Attempts made.
        attempts: u32,
        /// The last failure (without the URL).
        last: String,
    },
}

/// The fields of a custom resource event we use. Parsed leniently from raw
/// JSON, so that a malformed event still gets a FAILED answer when it has a
/// ResponseURL at all.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Request {
    request_type: Option<String>,
    #[serde(rename = "ResponseURL")]
    response_url: Option<String>,
    #[serde(default)]
    stack_id: String,
    #[serde(default)]
    request_id: String,
    #[serde(default)]
    logical_resource_id: String,
    physical_resource_id: Option<String>,
}

/// Dependencies built once per sandbox.
#[derive(Debug, Clone)]
pub struct Migrate {
    db: Arc<dyn Database>,
    /// Answers CloudFormation; built on first use in a sandbox (building a
    /// TLS client reads the system's trust store: not worth a cold start).
    http: Arc<tokio::sync::OnceCell<reqwest::Client>>,
    migrator: Migrator,
    /// Used when the context carries no deadline (tests, local runs).
    default_budget: Duration,
    response_attempts: u32,
    response_backoff: Duration,
    /// How long a retryable database error (resuming, unavailable) is
    /// waited out, and the first pause between tries (doubling, at most 8 s).
    resume_wait: Duration,
    resume_backoff: Duration,
    /// The function roles whose passwords follow their secrets.
    roles: Option<roles::RoleSecrets>,
}

/// Default time a resuming database is waited for.
pub const DEFAULT_RESUME_WAIT: Duration = Duration::from_secs(120);

impl Migrate {
    /// The handler of a Lambda sandbox (see `hookbox::startup`): the
    /// database (the master user), the HTTP client answering CloudFormation
    /// and, when `HOOKBOX_ROLE_SECRET_ARNS` is set, the function roles whose
    /// passwords follow their secrets.
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        let mut handler = Self::new(start.database().await?, None);
        if let Some(text) = start.var(roles::ROLE_SECRETS_VAR) {
            let roles = roles::RoleSecrets::parse(&text, start.secrets())
                .map_err(|e| StartupError::settings("function roles", e))?;
            handler = handler.with_roles(roles);
        }
        Ok(handler)
    }

    /// A handler applying hookbox's own migrations to `db`, answering with
    /// `http` (`None`: a client of its own, built on first use).
    pub fn new(db: Arc<dyn Database>, http: impl Into<Option<reqwest::Client>>) -> Self {
        Self {
            db,
            http: Arc::new(tokio::sync::OnceCell::new_with(http.into())),
            migrator: Migrator::new(hookbox::migrate::MIGRATIONS),
            default_budget: Duration::from_secs(300),
            response_attempts: 3,
            response_backoff: Duration::from_secs(1),
            resume_wait: DEFAULT_RESUME_WAIT,
            resume_backoff: Duration::from_secs(1),
            roles: None,
        }
    }

    /// After migrating, sets the function roles' passwords from their
    /// secrets (see [`roles`]).
    pub fn with_roles(mut self, roles: roles::RoleSecrets) -> Self {
        self.roles = Some(roles);
        self
    }

    /// The migrations, then the roles' passwords: what Create and Update do.
    async fn migrate_and_set_roles(&self) -> Result<Vec<(String, String)>, String> {
        let report = self.migrate_waiting().await.map_err(|e| describe(&e))?;
        let mut data = report_data(&report);
        if let Some(roles) = &self.roles {
            let n = roles
                .apply(self.db.as_ref())
                .await
                .map_err(|e| e.to_string())?;
            data.push(("Roles".into(), n.to_string()));
        }
        Ok(data)
    }

    /// How long an unavailable (e.g. resuming) database is waited out, and
    /// the first pause between tries (doubling, at most 8 s). Always within
    /// the invocation's budget.
    pub fn with_resume_wait(mut self, wait: Duration, first_backoff: Duration) -> Self {
        self.resume_wait = wait;
        self.resume_backoff = first_backoff;
        self
    }

    /// Runs the migrations, trying again while the database is unavailable,
    /// until `resume_wait` has passed.
    async fn migrate_waiting(&self) -> Result<MigrationReport, MigrateError> {
        let started = tokio::time::Instant::now();
        let mut backoff = self.resume_backoff;
        loop {
            match self.migrator.run(self.db.as_ref()).await {
                Err(MigrateError::Db(e))
                    if e.is_retryable() && started.elapsed() + backoff <= self.resume_wait =>
                {
                    tracing::warn!(error = %e, pause_ms = backoff.as_millis() as u64, "database unavailable (resuming?): trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(8));
                }
                other => return other,
            }
        }
    }

    /// Applies another migration list (tests).
    pub fn with_migrator(mut self, migrator: Migrator) -> Self {
        self.migrator = migrator;
        self
    }

    /// Budget when the invocation has no deadline (tests).
    pub fn with_default_budget(mut self, budget: Duration) -> Self {
        self.default_budget = budget;
        self
    }

    /// How often to try the response PUT, and the pause before the second
    /// attempt (doubling after).
    pub fn with_response_retry(mut self, attempts: u32, backoff: Duration) -> Self {
        self.response_attempts = attempts.max(1);
        self.response_backoff = backoff;
        self
    }

    /// Handles one custom resource event: always answers CloudFormation.
    pub async fn handle(&self, event: LambdaEvent<serde_json::Value>) -> Result<(), HandlerError> {
        let (payload, context) = event.into_parts();
        let request: Request = serde_json::from_value(payload.clone()).map_err(|e| {
            HandlerError::Unanswerable(format!("event is not a custom resource request: {e}"))
        })?;
        let Some(response_url) = request.response_url.clone().filter(|u| !u.is_empty()) else {
            return Err(HandlerError::Unanswerable(format!(
                "request {} for {}",
                request.request_id, request.logical_resource_id
            )));
        };
        let budget = budget(context.deadline, self.default_budget);
        let request_type = request.request_type.clone().unwrap_or_default();
        tracing::info!(
            request_type = %request_type,
            request_id = %request.request_id,
            logical_resource_id = %request.logical_resource_id,
            budget_ms = budget.as_millis() as u64,
            "custom resource request"
        );
        let outcome = match request_type.as_str() {
            "Create" | "Update" => {
                match tokio::time::timeout(budget, self.migrate_and_set_roles()).await {
                    Ok(result) => result,
                    Err(_) => Err(format!(
                        "migrations did not finish within {} s; they are transactional \
                         and will resume on the next deployment",
                        budget.as_secs()
                    )),
                }
            }
            "Delete" => Ok(vec![("Deleted".into(), "schema kept".into())]),
            other => Err(format!("unknown RequestType {other:?}")),
        };
        let physical_resource_id = match request_type.as_str() {
            "Create" => PHYSICAL_RESOURCE_ID.to_string(),
            _ => request
                .physical_resource_id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| PHYSICAL_RESOURCE_ID.to_string()),
        };
        let mut response = CloudFormationCustomResourceResponse::default();
        response.physical_resource_id = physical_resource_id;
        response.stack_id = request.stack_id.clone();
        response.request_id = request.request_id.clone();
        response.logical_resource_id = request.logical_resource_id.clone();
        response.no_echo = false;
        match outcome {
            Ok(data) => {
                response.status = CloudFormationCustomResourceResponseStatus::Success;
                response.data = data.into_iter().collect();
            }
            Err(reason) => {
                tracing::error!(reason = %reason, "custom resource failed");
                response.status = CloudFormationCustomResourceResponseStatus::Failed;
                response.reason = Some(truncate(&reason, MAX_REASON));
            }
        }
        self.respond(&response_url, &response).await
    }

    async fn respond(
        &self,
        url: &str,
        response: &CloudFormationCustomResourceResponse,
    ) -> Result<(), HandlerError> {
        let body =
            serde_json::to_vec(response).map_err(|e| HandlerError::ResponseNotDelivered {
                attempts: 0,
                last: format!("cannot serialise the response: {e}"),
            })?;
        let http = self
            .http
            .get_or_try_init(|| async {
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(5))
                    .timeout(Duration::from_secs(20))
                    .build()
            })
            .await
            .map_err(|e| HandlerError::ResponseNotDelivered {
                attempts: 0,
                last: format!("cannot build the HTTP client: {e}"),
            })?;
        let mut last = String::new();
        for attempt in 1..=self.response_attempts {
            // The pre-signed S3 URL is signed without a content type.
            let sent = http
                .put(url)
                .header(reqwest::header::CONTENT_TYPE, "")
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => return Ok(()),
                Ok(r) => last = format!("HTTP {}", r.status()),
                Err(e) => last = e.without_url().to_string(),
            }
            tracing::warn!(attempt, error = %last, "CloudFormation response not accepted");
            if attempt < self.response_attempts {
                tokio::time::sleep(self.response_backoff * 2u32.pow(attempt - 1)).await;
            }
        }
        Err(HandlerError::ResponseNotDelivered {
            attempts: self.response_attempts,
            last,
        })
    }
}

/// Time left before the deadline, minus the margin; `default` when the
/// context has no deadline.
fn budget(deadline_ms: u64, default: Duration) -> Duration {
    if deadline_ms == 0 {
        return default;
    }
    let deadline = SystemTime::UNIX_EPOCH + Duration::from_millis(deadline_ms);
    deadline
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .saturating_sub(DEADLINE_MARGIN)
}

fn report_data(report: &MigrationReport) -> Vec<(String, String)> {
    let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    vec![
        ("Applied".into(), list(&report.applied)),
        ("AlreadyApplied".into(), list(&report.already_applied)),
    ]
}

fn describe(e: &MigrateError) -> String {
    let retry = match e {
        MigrateError::Db(db) if db.is_retryable() => {
            " (the database is unavailable; retry the deployment)"
        }
        _ => "",
    };
    format!("{e}{retry}")
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_keeps_a_margin_before_the_deadline() {
        assert_eq!(budget(0, Duration::from_secs(7)), Duration::from_secs(7));
        let in_60s = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after epoch")
            .as_millis() as u64
            + 60_000;
        let b = budget(in_60s, Duration::ZERO);
        assert!(
            b <= Duration::from_secs(50) && b > Duration::from_secs(45),
            "{b:?}"
        );
        assert_eq!(
            budget(1, Duration::from_secs(7)),
            Duration::ZERO,
            "past deadline"
        );
    }

    #[test]
    fn reasons_are_truncated_on_a_char_boundary() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("ééé", 3), "é…");
    }
}
