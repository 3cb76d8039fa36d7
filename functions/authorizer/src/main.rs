//! Lambda entry point of the authorizer: tracing, config once, runtime loop.

use std::sync::Arc;

use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigSource, ConfigStore, SecretStore, SecretsManager};
use hookbox_authorizer::Authorizer;
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
    let authorizer = Authorizer::new(config, clock);
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let authorizer = authorizer.clone();
        async move {
            let request = hookbox_authorizer::event_from_json(event.payload)?;
            Ok::<_, Error>(authorizer.handle(request).await)
        }
    }))
    .await
}
