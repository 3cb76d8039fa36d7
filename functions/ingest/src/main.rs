//! Lambda entry point of ingest: shared startup, then the runtime loop. The
//! logic is in the library and in `hookbox::inbox::ingest`.

use hookbox::startup::Startup;
use hookbox_ingest::{IngestFunction, event_from_json};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = IngestFunction::new(start.init(start.ingest()).await?, start.clock());
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let function = function.clone();
        async move { Ok::<_, Error>(function.handle(event_from_json(event.payload)?).await) }
    }))
    .await
}
