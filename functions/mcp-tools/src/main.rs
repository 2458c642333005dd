// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::{service_fn, tracing, Error, Request};

use mcp_tools::{handle, mcp_service, Deps};
use shared::aws::{
    dynamodb_client, load_sdk_config, s3_client, sagemaker_client, sagemaker_runtime_client,
};
use shared::config::{Env, McpToolsConfig};
use shared::objects::S3Io;
use shared::pipeline_runs::DynamoPipelineRunStore;
use shared::sagemaker::{AsyncEndpoint, Pipeline};
use shared::store::DynamoResultsStore;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing::init_default_subscriber();
    let config = McpToolsConfig::from_env(&Env::process())?;
    let sdk = load_sdk_config().await;
    let deps = Arc::new(Deps {
        results: DynamoResultsStore::new(dynamodb_client(&sdk), &config.results_table),
        runs: DynamoPipelineRunStore::new(dynamodb_client(&sdk), &config.pipeline_results_table),
        s3: S3Io::new(s3_client(&sdk)),
        endpoint: AsyncEndpoint::new(sagemaker_runtime_client(&sdk), &config.async_endpoint_name),
        pipeline: Pipeline::new(sagemaker_client(&sdk), &config.pipeline_name),
        config,
    });
    let mcp = Arc::new(mcp_service(deps.clone()));
    lambda_http::run(service_fn(move |request: Request| {
        let (deps, mcp) = (deps.clone(), mcp.clone());
        async move { Ok::<_, std::convert::Infallible>(handle(&deps.config, &mcp, request).await) }
    }))
    .await
}
