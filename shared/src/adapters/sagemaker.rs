//! SageMaker pipelines (the sagemaker control plane): start the configured pipeline, describe
//! any run, list a run's steps, read the definition it runs.

use aws_sdk_sagemaker::types::{ParallelismConfiguration, Parameter, SortOrder};

use crate::adapters::aws::classify;
use crate::domain::pipeline_status::ExecutionStatus;
use crate::ports::{AwsFailure, ExecutionDescription, PipelineControl, StartRequest, StepStatus};

pub fn sagemaker_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sagemaker::Client {
    aws_sdk_sagemaker::Client::new(sdk)
}

#[derive(Clone)]
pub struct SageMakerPipeline {
    client: aws_sdk_sagemaker::Client,
    /// The pipeline `start` runs; describes and step lists take any run's ARN.
    pipeline_name: String,
}

impl SageMakerPipeline {
    pub fn new(client: aws_sdk_sagemaker::Client, pipeline_name: impl Into<String>) -> Self {
        Self {
            client,
            pipeline_name: pipeline_name.into(),
        }
    }
}

impl PipelineControl for SageMakerPipeline {
    async fn start(&self, r: &StartRequest) -> Result<String, AwsFailure> {
        let mut request = self
            .client
            .start_pipeline_execution()
            .pipeline_name(&self.pipeline_name)
            .pipeline_execution_description(&r.description)
            .client_request_token(&r.client_request_token)
            .set_pipeline_parameters(Some(
                r.parameters
                    .iter()
                    .map(|(name, value)| Parameter::builder().name(name).value(value).build())
                    .collect(),
            ));
        if let Some(steps) = r.max_parallel_steps {
            request = request.parallelism_configuration(
                ParallelismConfiguration::builder()
                    .max_parallel_execution_steps(steps as i32)
                    .build(),
            );
        }
        let out = request.send().await.map_err(|e| classify(&e))?;
        out.pipeline_execution_arn.ok_or_else(|| AwsFailure {
            code: None,
            message: "StartPipelineExecution returned no PipelineExecutionArn".into(),
            retryable: false,
            ambiguous: true,
        })
    }

    async fn describe(&self, execution_arn: &str) -> Result<ExecutionDescription, AwsFailure> {
        let out = self
            .client
            .describe_pipeline_execution()
            .pipeline_execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        Ok(ExecutionDescription {
            status: ExecutionStatus::parse(
                out.pipeline_execution_status
                    .as_ref()
                    .map_or("", |s| s.as_str()),
            ),
            failure_reason: out.failure_reason,
            description: out.pipeline_execution_description,
        })
    }

    async fn stop(&self, execution_arn: &str) -> Result<(), AwsFailure> {
        // One token per run: a retried stop is the same request to SageMaker.
        let token = crate::domain::run::stop_request_token(execution_arn);
        self.client
            .stop_pipeline_execution()
            .pipeline_execution_arn(execution_arn)
            .client_request_token(token)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        Ok(())
    }

    async fn definition(&self, execution_arn: &str) -> Result<String, AwsFailure> {
        let out = self
            .client
            .describe_pipeline_definition_for_execution()
            .pipeline_execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        out.pipeline_definition.ok_or_else(|| AwsFailure {
            code: None,
            message: "DescribePipelineDefinitionForExecution returned no PipelineDefinition".into(),
            retryable: false,
            ambiguous: false,
        })
    }

    async fn steps(&self, execution_arn: &str) -> Result<Vec<StepStatus>, AwsFailure> {
        let mut pages = self
            .client
            .list_pipeline_execution_steps()
            .pipeline_execution_arn(execution_arn)
            .sort_order(SortOrder::Ascending)
            .into_paginator()
            .items()
            .send();
        let mut steps = Vec::new();
        while let Some(step) = pages.next().await {
            let step = step.map_err(|e| classify(&e))?;
            steps.push(StepStatus {
                name: step.step_name().unwrap_or_default().to_owned(),
                status: step
                    .step_status()
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default(),
                failure_reason: step.failure_reason().map(str::to_owned),
            });
        }
        Ok(steps)
    }
}
