//! The SageMaker control plane (awsJson1_1, `X-Amz-Target: SageMaker.<Operation>`): one
//! dispatcher, SageMaker's error shape, and the operations by resource.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::AppState;

pub mod endpoints;
pub mod lineage;
pub mod pipelines;

/// What the control plane has created: endpoint configs and endpoints by name, pipelines by
/// lowercase name (SageMaker's names are case-insensitive in ARNs), and the lineage and model
/// packages the runs recorded.
#[derive(Default)]
pub struct Catalog {
    pub endpoint_configs: HashMap<String, endpoints::EndpointConfig>,
    pub endpoints: HashMap<String, endpoints::Endpoint>,
    pub pipelines: HashMap<String, pipelines::Pipeline>,
    pub lineage: lineage::Lineage,
}

pub struct AwsError(pub StatusCode, pub &'static str, pub String);

impl IntoResponse for AwsError {
    fn into_response(self) -> Response {
        let body = json!({"__type": self.1, "message": self.2}).to_string();
        (
            self.0,
            [("content-type", "application/x-amz-json-1.1")],
            body,
        )
            .into_response()
    }
}

pub fn validation(message: impl Into<String>) -> AwsError {
    AwsError(
        StatusCode::BAD_REQUEST,
        "ValidationException",
        message.into(),
    )
}

pub fn epoch(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

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

pub fn str_field<'a>(input: &'a Value, name: &str) -> Result<&'a str, AwsError> {
    input
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            validation(format!(
                "1 validation error detected: {name} must not be null"
            ))
        })
}
