//! Lambda entry point of the relay: shared startup, then the runtime loop.
//! The logic is in `hookbox::relay`.

use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use hookbox::startup::Startup;
use hookbox_relay::RelayFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = start.init(RelayFunction::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<CloudWatchEvent>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event).await) }
    }))
    .await
}
