//! Lambda entry point of the processor: tracing, config, clients once, then
//! the runtime loop. The logic is in the library and in `hookbox::processing`.

use std::sync::Arc;

use anyhow::Context as _;
use aws_lambda_events::sqs::SqsEvent;
use hookbox::clock::SystemClock;
use hookbox::example::OrdersHandler;
use hookbox::processing::ProcessorConfig;
use hookbox::queue::sqs::SqsQueue;
use hookbox_processor::ProcessorFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_current_span(true)
        .with_span_list(false)
        .without_time() // CloudWatch stamps every line
        .init();
    let env = |name: &str| std::env::var(name).ok();
    let config = ProcessorConfig::from_env(env).context("processor configuration")?;
    let queue_url = env("HOOKBOX_QUEUE_URL")
        .filter(|u| !u.trim().is_empty())
        .context("HOOKBOX_QUEUE_URL must be set to the inbox queue's URL")?;
    let db = hookbox::store::connect_from_env(env)
        .await
        .context("database configuration")?;
    let queue = SqsQueue::from_aws_env(queue_url).await;
    let blobs = hookbox::blob::from_env(env)
        .await
        .context("blob store configuration")?;
    // The example domain: replace it with your own BusinessHandler.
    let handler = OrdersHandler::from_env(env);
    let function = ProcessorFunction::new(
        db,
        Arc::new(queue),
        blobs,
        Arc::new(SystemClock),
        Arc::new(handler),
        config,
    );
    run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event).await) }
    }))
    .await
}
