//! The empty buffered Rust Lambda: answers every event with `{}`. What any Rust function on
//! lambda_runtime costs before it does anything: the floor for notification-handler,
//! pipeline-router and gateway-target.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

// One thread, as the functions run.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async {
        Ok::<_, Error>(Value::Object(Default::default()))
    }))
    .await
}
