//! Lambda entry point of the authorizer: shared startup, then the runtime loop.

use hookbox::startup::Startup;
use hookbox_authorizer::{Authorizer, event_from_json};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let authorizer = start.init(Authorizer::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let authorizer = authorizer.clone();
        async move { Ok::<_, Error>(authorizer.handle(event_from_json(event.payload)?).await) }
    }))
    .await
}
