// The SDK futures nested in the handler are deeper than the default limit allows.
#![recursion_limit = "256"]

use lambda_runtime::{run, service_fn, tracing, Error, LambdaEvent};
use serde_json::Value;

use pipeline_router::Handler;
use shared::aws::{dynamodb_client, load_sdk_config, sagemaker_client, sqs_client};
use shared::config::{Env, PipelineRouterConfig};
use shared::pipeline_runs::{DynamoPipelineRunStore, SqsCompletionQueue};
use shared::sagemaker::SageMakerDescriber;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let config = PipelineRouterConfig::from_env(&Env::process())?;
    let sdk = load_sdk_config().await;
    let handler = Handler {
        store: DynamoPipelineRunStore::new(dynamodb_client(&sdk), &config.pipeline_results_table),
        describer: SageMakerDescriber::new(sagemaker_client(&sdk)),
        queue: SqsCompletionQueue::new(sqs_client(&sdk), &config.pipeline_results_queue_url),
        result_ttl_secs: config.result_ttl_secs,
    };
    let handler = &handler;
    run(service_fn(move |event: LambdaEvent<Value>| async move {
        handler.handle(event.payload).await
    }))
    .await
}
