//! Lambda entry point of ingest: shared startup, then the runtime loop. The
//! logic is in the library and in `hookbox::inbox::ingest`.

use hookbox::inbox::{body, ingest};
use hookbox::startup::Startup;
use hookbox_ingest::IngestFunction;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let start = Startup::from_process_env();
    let function = start
        .init(async {
            let (env, clock) = (start.env(), start.clock());
            let config = start.partners().await?;
            let (db, queue, blobs) = (
                start.database().await?,
                start.queue().await?,
                start.blobs().await?,
            );
            let ingest = ingest::Ingest::new(config, db, queue, blobs, clock.clone())
                .with_inline_max(body::inline_max_from_env(&env)?)
                .with_db_deadline(ingest::db_deadline_from_env(&env)?);
            Ok::<_, anyhow::Error>(IngestFunction::new(ingest, clock))
        })
        .await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        let function = function.clone();
        async move {
            let request = hookbox_ingest::event_from_json(event.payload)?;
            Ok::<_, Error>(function.handle(request).await)
        }
    }))
    .await
}
