//! The SageMaker calls of mcp-tools: the async endpoint (sagemaker-runtime) and the pipeline
//! (sagemaker control plane). Clients never choose the endpoint or pipeline: both come from
//! configuration.

use aws_sdk_sagemaker::types::{ParallelismConfiguration, Parameter, SortOrder};

use crate::aws::{classify, AwsFailure};
use crate::tools::StepView;

pub struct AsyncEndpoint {
    client: aws_sdk_sagemakerruntime::Client,
    endpoint_name: String,
}

/// Where SageMaker will write the outcome of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncInvocation {
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
}

impl AsyncEndpoint {
    pub fn new(client: aws_sdk_sagemakerruntime::Client, endpoint_name: impl Into<String>) -> Self {
        Self {
            client,
            endpoint_name: endpoint_name.into(),
        }
    }

    pub fn endpoint_name(&self) -> &str {
        &self.endpoint_name
    }

    pub async fn invoke(
        &self,
        inference_id: &str,
        input_location: &str,
        invocation_timeout_secs: u32,
        request_ttl_secs: u32,
    ) -> Result<AsyncInvocation, AwsFailure> {
        let out = self
            .client
            .invoke_endpoint_async()
            .endpoint_name(&self.endpoint_name)
            .inference_id(inference_id)
            .input_location(input_location)
            .content_type("application/json")
            .accept("application/json")
            .invocation_timeout_seconds(invocation_timeout_secs as i32)
            .request_ttl_seconds(request_ttl_secs as i32)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        Ok(AsyncInvocation {
            output_location: out.output_location,
            failure_location: out.failure_location,
        })
    }
}

async fn describe_execution(
    client: &aws_sdk_sagemaker::Client,
    execution_arn: &str,
) -> Result<ExecutionDescription, AwsFailure> {
    let out = client
        .describe_pipeline_execution()
        .pipeline_execution_arn(execution_arn)
        .send()
        .await
        .map_err(|e| classify(&e))?;
    Ok(ExecutionDescription {
        status: out
            .pipeline_execution_status
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        failure_reason: out.failure_reason,
    })
}

/// pipeline-router's failure-reason lookup, for runs of any pipeline.
pub struct SageMakerDescriber {
    client: aws_sdk_sagemaker::Client,
}

impl SageMakerDescriber {
    pub fn new(client: aws_sdk_sagemaker::Client) -> Self {
        Self { client }
    }
}

impl crate::pipeline_runs::ExecutionDescriber for SageMakerDescriber {
    async fn failure_reason(&self, execution_arn: &str) -> Result<Option<String>, AwsFailure> {
        Ok(describe_execution(&self.client, execution_arn)
            .await?
            .failure_reason)
    }
}

pub struct Pipeline {
    client: aws_sdk_sagemaker::Client,
    pipeline_name: String,
}

/// What DescribePipelineExecution says of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionDescription {
    pub status: String,
    pub failure_reason: Option<String>,
}

impl Pipeline {
    pub fn new(client: aws_sdk_sagemaker::Client, pipeline_name: impl Into<String>) -> Self {
        Self {
            client,
            pipeline_name: pipeline_name.into(),
        }
    }

    pub async fn start(
        &self,
        description: &str,
        parameters: &[(&str, String)],
        client_request_token: &str,
    ) -> Result<String, AwsFailure> {
        let mut request = self
            .client
            .start_pipeline_execution()
            .pipeline_name(&self.pipeline_name)
            .pipeline_execution_description(description)
            .client_request_token(client_request_token)
            .parallelism_configuration(
                ParallelismConfiguration::builder()
                    .max_parallel_execution_steps(3)
                    .build(),
            );
        for (name, value) in parameters {
            request =
                request.pipeline_parameters(Parameter::builder().name(*name).value(value).build());
        }
        let out = request.send().await.map_err(|e| classify(&e))?;
        out.pipeline_execution_arn.ok_or_else(|| AwsFailure {
            code: None,
            message: "StartPipelineExecution returned no PipelineExecutionArn".into(),
            retryable: false,
        })
    }

    pub async fn describe(&self, execution_arn: &str) -> Result<ExecutionDescription, AwsFailure> {
        describe_execution(&self.client, execution_arn).await
    }

    /// Every step of the run, in the order they started (all pages).
    pub async fn steps(&self, execution_arn: &str) -> Result<Vec<StepView>, AwsFailure> {
        let mut steps = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .client
                .list_pipeline_execution_steps()
                .pipeline_execution_arn(execution_arn)
                .sort_order(SortOrder::Ascending)
                .set_next_token(token)
                .send()
                .await
                .map_err(|e| classify(&e))?;
            for step in page.pipeline_execution_steps() {
                steps.push(StepView {
                    name: step.step_name().unwrap_or_default().to_owned(),
                    status: step
                        .step_status()
                        .map(|s| s.as_str().to_owned())
                        .unwrap_or_default(),
                    failure_reason: step.failure_reason().map(str::to_owned),
                });
            }
            match page.next_token {
                Some(next) if !next.is_empty() => token = Some(next),
                _ => return Ok(steps),
            }
        }
    }
}
