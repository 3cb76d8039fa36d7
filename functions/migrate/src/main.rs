//! Lambda entry point of the migrate custom resource: shared startup, then
//! the runtime loop. The logic is in the library.

use hookbox::startup::Startup;
use hookbox_migrate::Migrate;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let handler = start.init(Migrate::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let handler = handler.clone();
        async move { handler.handle(event).await.map_err(Error::from) }
    }))
    .await
}
