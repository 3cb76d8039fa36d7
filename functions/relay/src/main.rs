//! Lambda entry point of the relay: tracing, settings, config, clients
//! once, then the runtime loop. The logic is in `hookbox::relay`.

use std::sync::Arc;

use anyhow::Context as _;
use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigSource, ConfigStore, SecretStore, SecretsManager};
use hookbox::queue::Queue;
use hookbox::queue::sqs::SqsQueue;
use hookbox::relay::{HttpSender, Relay, RelaySettings, TokioPause};
use hookbox_relay::RelayFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .without_time() // CloudWatch stamps every line
        .init();
    let env = |name: &str| std::env::var(name).ok();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    // leases name the sandbox that holds them
    let worker = format!("relay-{}", uuid::Uuid::new_v4().simple());
    let settings = RelaySettings::from_env(worker, env).context("relay settings")?;
    let source = ConfigSource::from_env(env)?;
    let secrets: Option<Arc<dyn SecretStore>> = match source {
        ConfigSource::Secret { .. } => Some(Arc::new(SecretsManager::from_aws_env().await)),
        _ => None,
    };
    let config = Arc::new(ConfigStore::load(source, secrets, clock.clone()).await?);
    let db = hookbox::store::connect_from_env(env)
        .await
        .context("database configuration")?;
    let queue_url = env("HOOKBOX_QUEUE_URL")
        .filter(|u| !u.trim().is_empty())
        .context("HOOKBOX_QUEUE_URL must be set to the inbox queue's URL (the sweeper sends stranded rows there)")?;
    let queue: Arc<dyn Queue> = Arc::new(SqsQueue::from_aws_env(queue_url).await);
    // payloads stored by reference are read from it; retention deletes
    // the objects no row refers to any more
    let blobs = hookbox::blob::from_env(env)
        .await
        .context("blob store (large payloads)")?;
    let relay = Relay::new(
        db,
        blobs,
        Arc::new(HttpSender::default()),
        Some(queue),
        clock.clone(),
        settings,
    );
    let function = RelayFunction::new(relay, config, clock, Arc::new(TokioPause));
    run(service_fn(|event: LambdaEvent<CloudWatchEvent>| {
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event).await) }
    }))
    .await
}
