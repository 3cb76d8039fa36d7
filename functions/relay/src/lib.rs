//! The relay Lambda, run every minute by an EventBridge schedule.
//!
//! One invocation loops until its remaining time (the Lambda context's
//! deadline) is below the stop margin: outbox deliveries about a second
//! after they are written, not a minute. The use case is
//! [`hookbox::relay::Relay`]; this crate only adapts the schedule event and
//! prints the run's EMF line (namespace `hookbox`, dimension
//! `Function=relay`: `Delivered`, `Failed`, `Dead`, `Gone`, `Refused`,
//! `NotAttempted`, `Unreadable`, `Swept`, `SweepSendFailed`, `Purged`,
//! `ArchivedPurged`, `BlobsDeleted`, `BlobDeleteFailed`, `RelayErrors`, `OutboxPending`,
//! `OutboxLagSeconds`).
//!
//! Overlapping invocations are safe: rows are leased (`FOR UPDATE SKIP
//! LOCKED`), so two relays never deliver the same row at once.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use hookbox::clock::{Clock, lambda_deadline};
use hookbox::config::ConfigStore;
use hookbox::queue::Queue;
use hookbox::relay::{HttpSender, Pause, Relay, RelaySettings, RunReport, TokioPause};
use hookbox::startup::{Startup, StartupError};
use lambda_runtime::LambdaEvent;

/// How long a run lasts when the context carries no deadline (local calls).
pub const DEFAULT_RUN: Duration = Duration::from_secs(60);

/// Dependencies, built once per sandbox.
#[derive(Debug, Clone)]
pub struct RelayFunction {
    relay: Relay,
    config: Arc<ConfigStore>,
    clock: Arc<dyn Clock>,
    pause: Arc<dyn Pause>,
}

impl RelayFunction {
    /// The relay of a Lambda sandbox (see `hookbox::startup`): its settings
    /// (leases name the sandbox that holds them), the destinations, the
    /// database, the blob store, the inbox queue (the sweeper sends stranded
    /// rows there), the HTTP sender and the SQS and EventBridge transports.
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        let worker = format!("relay-{}", uuid::Uuid::new_v4().simple());
        let settings = RelaySettings::from_env(worker, start.env())
            .map_err(|e| StartupError::settings("relay settings", e))?;
        let config = start.partners().await?;
        let queue: Arc<dyn Queue> = start.queue().await?;
        let mut relay = Relay::new(
            start.database().await?,
            start.blobs().await?,
            Arc::new(HttpSender::default()),
            Some(queue),
            start.clock(),
            settings,
        );
        // SQS and EventBridge destinations: clients built on first use
        for (kind, transport) in start.aws_transports() {
            relay = relay.with_transport(kind, transport);
        }
        // tenants' endpoints, when a key vault is configured
        if let Some(endpoints) = start.endpoints()? {
            relay = relay.with_endpoints(endpoints);
        }
        // notices naming what failed: the alarm topic, else the log
        relay = relay.with_notifier(start.notifier());
        Ok(Self::new(
            relay,
            config,
            start.clock(),
            Arc::new(TokioPause),
        ))
    }

    /// The function over its ports.
    pub fn new(
        relay: Relay,
        config: Arc<ConfigStore>,
        clock: Arc<dyn Clock>,
        pause: Arc<dyn Pause>,
    ) -> Self {
        Self {
            relay,
            config,
            clock,
            pause,
        }
    }

    /// The Lambda handler: one run until the deadline, its metrics printed,
    /// a summary returned (visible in the console and in tests).
    pub async fn handle(&self, event: LambdaEvent<CloudWatchEvent>) -> serde_json::Value {
        let report = self.run(event.context.deadline).await;
        let now = self.clock.now().timestamp_millis();
        report.metrics().flush(now);
        for mut m in report.destination_metrics() {
            m.flush(now);
        }
        summary(&report)
    }

    /// One run until `deadline_ms` (milliseconds since the epoch; 0: none,
    /// then [`DEFAULT_RUN`] from now).
    pub async fn run(&self, deadline_ms: u64) -> RunReport {
        let deadline = lambda_deadline(deadline_ms).unwrap_or_else(|| {
            self.clock.now() + chrono::Duration::from_std(DEFAULT_RUN).unwrap_or_default()
        });
        let report = self
            .relay
            .run(&self.config, deadline, self.pause.as_ref())
            .await;
        for error in &report.errors {
            tracing::error!(error = %error, "relay run step failed");
        }
        report
    }
}

/// The run as JSON: what was delivered, failed, swept and purged.
pub fn summary(report: &RunReport) -> serde_json::Value {
    let d = &report.deliveries;
    serde_json::json!({
        "batches": report.batches,
        "claimed": d.claimed,
        "delivered": d.delivered,
        "failed": d.retried,
        "dead": d.dead,
        "gone": d.gone,
        "refused": d.refused,
        "not_attempted": d.not_attempted,
        "unreadable": d.unreadable,
        "swept": report.sweep.swept,
        "sweep_send_failed": report.sweep.send_failed,
        "purged": {
            "inbox": report.purge.inbox,
            "outbox": report.purge.outbox,
            "archived_deleted": report.purge.archived_deleted,
            "blobs_deleted": report.purge.blobs_deleted,
            "blobs_kept": report.purge.blobs_kept,
            "blob_delete_failed": report.purge.blob_delete_failed,
        },
        "pending": report.pending,
        "lag_seconds": report.lag_seconds,
        "errors": report.errors,
    })
}
