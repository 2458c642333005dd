//! The SageMaker control plane (awsJson1_1, `X-Amz-Target: SageMaker.<Operation>`): one
//! dispatcher and the operations by resource. SageMaker's error shape is in `answer`, what the
//! operations keep in `state`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::answer::AwsError;
use crate::state::AppState;

pub mod callbacks;
pub mod endpoints;
pub mod lineage;
pub mod pipelines;

pub async fn dispatch(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> Result<Response, AwsError> {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let input: Value =
        serde_json::from_str(if body.is_empty() { "{}" } else { &body }).map_err(|e| {
            AwsError(
                StatusCode::BAD_REQUEST,
                "SerializationException",
                e.to_string(),
            )
        })?;
    let output = match target.strip_prefix("SageMaker.") {
        Some("StartPipelineExecution") => pipelines::start(&state, &input)?,
        Some("DescribePipelineExecution") => pipelines::describe(&state, &input)?,
        Some("ListPipelineExecutionSteps") => pipelines::list_steps(&state, &input)?,
        Some("DescribePipelineDefinitionForExecution") => {
            pipelines::describe_definition(&state, &input)?
        }
        Some("StopPipelineExecution") => pipelines::stop(&state, &input)?,
        Some("SendPipelineExecutionStepSuccess") => callbacks::answer(&state, &input, true)?,
        Some("SendPipelineExecutionStepFailure") => callbacks::answer(&state, &input, false)?,
        Some("CreatePipeline") => pipelines::create_pipeline(&state, &input)?,
        Some("DescribePipeline") => pipelines::describe_pipeline(&state, &input)?,
        Some("CreateEndpointConfig") => endpoints::create_config(&state, &input)?,
        Some("DescribeEndpointConfig") => endpoints::describe_config(&state, &input)?,
        Some("CreateEndpoint") => endpoints::create_endpoint(&state, &input)?,
        Some("DescribeEndpoint") => endpoints::describe_endpoint(&state, &input)?,
        Some("UpdateEndpoint") => endpoints::update_endpoint(&state, &input)?,
        Some("ListAssociations") => lineage::list_associations(&state, &input)?,
        Some("ListArtifacts") => lineage::list_artifacts(&state, &input)?,
        Some("DescribeArtifact") => lineage::describe_artifact(&state, &input)?,
        Some("DescribeModelPackage") => lineage::describe_model_package(&state, &input)?,
        Some("UpdateModelPackage") => lineage::update_model_package(&state, &input)?,
        _ => {
            return Err(AwsError(
                StatusCode::BAD_REQUEST,
                "UnknownOperationException",
                format!("the stand-in does not implement {target:?}"),
            ))
        }
    };
    Ok((
        [("content-type", "application/x-amz-json-1.1")],
        output.to_string(),
    )
        .into_response())
}
