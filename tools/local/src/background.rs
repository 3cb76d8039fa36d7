//! The loops the local stack runs beside its HTTP server, as AWS would
//! run them: the relay and sweeper (the scheduled relay function, one run
//! a minute back to back) and the operator page's samples of the counts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use hookbox::blob::BlobStore;
use hookbox::clock::Clock;
use hookbox::config::{ConfigStore, TransportKind};
use hookbox::delivery::{Coalescing, EventBridgeTransport, MAX_BATCH, SqsTransport};
use hookbox::queue::Queue;
use hookbox::relay::{HttpSender, Relay, RelaySettings, TokioPause};
use hookbox::store::Database;
use hookbox::tenants::{EndpointDirectory, SecretKeeper};
use hookbox_relay::RelayFunction;
use tokio::sync::watch;

use crate::{Options, admin};

/// What the relay is built from.
pub(crate) struct RelayParts<'a> {
    pub db: Arc<dyn Database>,
    pub blobs: Arc<dyn BlobStore>,
    pub queue: Arc<dyn Queue>,
    pub clock: Arc<dyn Clock>,
    pub config: Arc<ConfigStore>,
    /// Opens tenants' endpoint secrets.
    pub keeper: SecretKeeper,
    /// Where an envelope too large for EventBridge or SQS leaves its payload.
    pub blob_dir: &'a Path,
    pub options: &'a Options,
}

/// The relay function of the stack: tenants' endpoints on this machine
/// (loopback) allowed, EventBridge and SQS destinations sent to
/// `--aws-endpoint`, notices as log lines. At start, rows left pending by a
/// previous run are swept back into the (new, empty) queue at once.
pub(crate) async fn relay(parts: RelayParts<'_>) -> anyhow::Result<RelayFunction> {
    let RelayParts {
        db,
        blobs,
        queue,
        clock,
        config,
        keeper,
        blob_dir,
        options,
    } = parts;
    let mut settings = RelaySettings::new(format!("local-{}", uuid::Uuid::new_v4().simple()));
    settings.lanes = 2;
    settings.idle = Duration::from_millis(250);
    settings.sweep_after = options.sweep_after;
    let relay_with = |settings| {
        Relay::new(
            db.clone(),
            blobs.clone(),
            Arc::new(HttpSender::default()),
            Some(queue.clone()),
            clock.clone(),
            settings,
        )
    };
    let mut startup = settings.clone();
    startup.sweep_after = Duration::ZERO;
    let startup_sweep = relay_with(startup);
    match startup_sweep.sweep().await {
        Ok(s) if s.swept > 0 => {
            tracing::info!(swept = s.swept, "picked up rows left by a previous run")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "startup sweep failed"),
    }
    let mut relay = relay_with(settings)
        // notices naming what failed, as log lines (no alarm topic here)
        .with_notifier(Arc::new(hookbox::notify::LogNotifier));
    if let Some(endpoint) = &options.aws_endpoint {
        // eventbridge and sqs destinations to the emulator; an envelope
        // too large refers to its payload in the blob directory
        let aws = hookbox::delivery::local_aws_config(endpoint);
        let bucket = Some(blob_dir.display().to_string());
        relay = relay
            .with_transport(
                TransportKind::Sqs,
                Arc::new(Coalescing::new(
                    SqsTransport::new(SqsTransport::client(&aws), bucket.clone()),
                    MAX_BATCH,
                )),
            )
            .with_transport(
                TransportKind::EventBridge,
                Arc::new(Coalescing::new(
                    EventBridgeTransport::new(EventBridgeTransport::client(&aws), bucket),
                    MAX_BATCH,
                )),
            );
    }
    let loopback = ["127.0.0.0/8", "::1/128"]
        .iter()
        .map(|n| n.parse::<ipnet::IpNet>())
        .collect::<Result<Vec<_>, _>>()
        .context("the loopback networks")?;
    let relay = relay.with_endpoints(Arc::new(EndpointDirectory::new(keeper.clone(), loopback)));
    let relay = RelayFunction::new(relay, config.clone(), clock.clone(), Arc::new(TokioPause));
    Ok(relay)
}

pub(crate) async fn relay_loop(
    relay: RelayFunction,
    clock: Arc<dyn Clock>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        if *stopped.borrow() {
            return;
        }
        let deadline = clock.now() + chrono::Duration::seconds(60);
        let deadline_ms = u64::try_from(deadline.timestamp_millis()).unwrap_or(0);
        tokio::select! {
            report = relay.run(deadline_ms) => {
                // the EMF line AWS would get (to the debug log locally)
                report.metrics().flush(clock.now().timestamp_millis());
                for mut m in report.destination_metrics() {
                    m.flush(clock.now().timestamp_millis());
                }
                let d = &report.deliveries;
                if d.claimed > 0 || report.sweep.swept > 0 {
                    tracing::info!(delivered = d.delivered, failed = d.retried, dead = d.dead,
                        swept = report.sweep.swept, "relay run");
                }
            }
            _ = stopped.changed() => return,
        }
    }
}

pub(crate) async fn sample_loop(admin: admin::Admin, mut stopped: watch::Receiver<bool>) {
    loop {
        if let Err(e) = admin::sample(&admin).await {
            tracing::debug!(error = %e, "sampling counts failed");
        }
        tokio::select! {
            _ = tokio::time::sleep(admin::SAMPLE_EVERY) => {}
            _ = stopped.changed() => return,
        }
    }
}
