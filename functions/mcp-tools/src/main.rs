// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;
use std::time::Duration;

use lambda_http::{service_fn, tracing, Error, Request};

use mcp_tools::{handle, mcp_service, Deps};
use shared::adapters::aws::{dynamodb_client, load_sdk_config, s3_client};
use shared::adapters::dynamodb::{DynamoJobs, DynamoRuns};
use shared::adapters::s3::S3Objects;
use shared::adapters::sagemaker::{sagemaker_client, SageMakerPipeline};
use shared::adapters::sagemaker_runtime::{sagemaker_runtime_client, SageMakerEndpoint};
use shared::config::{Env, McpToolsConfig};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let config = McpToolsConfig::from_env(&Env::process())?;
    let sdk = load_sdk_config().await;
    let deps = Arc::new(Deps {
        jobs: DynamoJobs::new(dynamodb_client(&sdk), &config.results_table),
        runs: DynamoRuns::new(dynamodb_client(&sdk), &config.pipeline_results_table),
        objects: S3Objects::new(s3_client(&sdk)),
        endpoint: SageMakerEndpoint::new(
            sagemaker_runtime_client(
                &sdk,
                Duration::from_secs(config.invoke_attempt_timeout_secs),
            ),
            &config.async_endpoint_name,
        ),
        pipeline: SageMakerPipeline::new(sagemaker_client(&sdk), &config.pipeline_name),
        config,
    });
    let mcp = Arc::new(mcp_service(deps.clone()));
    lambda_http::run(service_fn(move |request: Request| {
        let (deps, mcp) = (deps.clone(), mcp.clone());
        async move { Ok::<_, std::convert::Infallible>(handle(&deps.config, &mcp, request).await) }
    }))
    .await
}
