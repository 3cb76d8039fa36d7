//! Lambda entry point of the authorizer: shared startup, then the runtime
//! loop. One binary serves both ingresses: the event's shape says which
//! (`hookbox_authorizer::Ingress::of`).

use hookbox::startup::Startup;
use hookbox_authorizer::Authorizer;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let authorizer = start.init(Authorizer::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let authorizer = authorizer.clone();
        async move { Ok::<_, Error>(authorizer.handle_json(event.payload).await?) }
    }))
    .await
}
