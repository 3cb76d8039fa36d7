//! Lambda entry point of the migrate custom resource: tracing, config,
//! clients once, then the runtime loop. The logic is in the library.

use std::time::Duration;

use hookbox_migrate::Migrate;
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
    let db = hookbox::store::connect_from_env(|name| std::env::var(name).ok())
        .await
        .map_err(|e| anyhow::anyhow!("database configuration: {e}"))?;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| anyhow::anyhow!("HTTP client: {e}"))?;
    let handler = Migrate::new(db, http);
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let handler = handler.clone();
        async move { handler.handle(event).await.map_err(Error::from) }
    }))
    .await
}
