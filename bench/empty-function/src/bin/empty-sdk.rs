//! The empty buffered Rust Lambda that first does the SDK's one-time work the functions do in
//! init: the SDK's configuration, a DynamoDB client, and the warm-up read of the results table
//! (`RESULTS_TABLE`), through the same adapters. The floor for init: what a function adds above
//! it is its own (its configuration, its other clients, its catalog).

use adapters::aws::{dynamodb_client, load_sdk_config};
use adapters::dynamodb::{DynamoJobs, WarmUp, WARM_UP_WITHIN};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

// One thread, as the functions run.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let table = std::env::var("RESULTS_TABLE").map_err(|_| "RESULTS_TABLE is not set")?;
    let sdk = load_sdk_config().await;
    let jobs = DynamoJobs::new(dynamodb_client(&sdk), table);
    // A floor whose read did not happen would be too low: it stops instead.
    match jobs.warm_up(WARM_UP_WITHIN).await {
        WarmUp::Answered => {}
        other => return Err(format!("the warm-up read did not answer: {other:?}").into()),
    }
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async {
        Ok::<_, Error>(Value::Object(Default::default()))
    }))
    .await
}
