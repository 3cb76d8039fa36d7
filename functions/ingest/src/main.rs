//! Lambda entry point of ingest: shared startup, then the runtime loop. One
//! binary serves both ingresses: the event's shape says which
//! (`hookbox_ingest::Ingress::of`). The logic is in the library and in
//! `hookbox::inbox::ingest`.

use hookbox::startup::Startup;
use hookbox_ingest::IngestFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = IngestFunction::new(start.init(start.ingest()).await?, start.clock());
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        hookbox::startup::begin_invocation(
            &event.context.request_id,
            event.context.xray_trace_id.as_deref(),
        );
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle_json(event.payload).await?) }
    }))
    .await
}
