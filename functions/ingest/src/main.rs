//! Lambda entry point of ingest: tracing, config, clients once, then the
//! runtime loop. The logic is in the library and in `hookbox::inbox::ingest`.

use std::sync::Arc;

use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigSource, ConfigStore, SecretStore, SecretsManager};
use hookbox::inbox::ingest::Ingest;
use hookbox::queue::sqs::SqsQueue;
use hookbox_ingest::IngestFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .without_time()
        .init();
    let env = |name: &str| std::env::var(name).ok();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let source = ConfigSource::from_env(env)?;
    let secrets: Option<Arc<dyn SecretStore>> = match source {
        ConfigSource::Secret { .. } => Some(Arc::new(SecretsManager::from_aws_env().await)),
        _ => None,
    };
    let config = Arc::new(ConfigStore::load(source, secrets, clock.clone()).await?);
    let db = hookbox::store::connect_from_env(env).await?;
    let queue_url =
        env("HOOKBOX_QUEUE_URL").ok_or_else(|| anyhow::anyhow!("HOOKBOX_QUEUE_URL is not set"))?;
    let queue = Arc::new(SqsQueue::from_aws_env(queue_url).await);
    let blobs = hookbox::blob::from_env(env).await?;
    let inline_max = hookbox::inbox::body::inline_max_from_env(env)?;
    let db_deadline = hookbox::inbox::ingest::db_deadline_from_env(env)?;
    let ingest = Ingest::new(config, db, queue, blobs, clock.clone())
        .with_inline_max(inline_max)
        .with_db_deadline(db_deadline);
    let function = IngestFunction::new(ingest, clock);
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let function = function.clone();
        async move {
            let request = hookbox_ingest::event_from_json(event.payload)?;
            Ok::<_, Error>(function.handle(request).await)
        }
    }))
    .await
}
