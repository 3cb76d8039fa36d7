//! Lambda entry point of the management API: shared startup, then the
//! runtime loop. The logic is in `hookbox::management`.

use hookbox::startup::Startup;
use hookbox_management::{ManagementFunction, event_from_json};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = start.init(ManagementFunction::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event_from_json(event.payload)?).await) }
    }))
    .await
}
