//! Lambda entry point of the processor: shared startup, then the runtime
//! loop. The logic is in the library and in `hookbox::processing`.

use aws_lambda_events::sqs::SqsEvent;
use hookbox::startup::Startup;
use hookbox_processor::ProcessorFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = start.init(ProcessorFunction::from_startup(&start)).await?;
    run(service_fn(|event: LambdaEvent<SqsEvent>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event).await) }
    }))
    .await
}
