//! Hello world on `lambda_runtime`: the baseline the functions' cold starts
//! are measured against (the same profile, the same run).

use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(
        |event: LambdaEvent<serde_json::Value>| async move {
            Ok::<_, Error>(serde_json::json!({ "hello": event.payload }))
        },
    ))
    .await
}
