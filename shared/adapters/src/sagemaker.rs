//! SageMaker pipelines (the sagemaker control plane): start the configured pipeline, describe
//! any run, list a run's steps, read the definition it runs. And SageMaker's lineage: the
//! associations between lineage entities, artifacts, model packages, and the model registry's
//! approval of a package. A missing run or model
//! package is `ResourceNotFound` whichever shape SageMaker answered it in
//! ([`not_found_either_way`]).

use aws_sdk_sagemaker::types::{
    ModelApprovalStatus, OutputParameter, ParallelismConfiguration, Parameter, SortOrder,
};

use crate::aws::{classify, not_found_either_way, SdkClient};
use domain::approval::ModelDecision;
use domain::callback::CallbackToken;
use domain::lineage::{Association, Direction};
use domain::pipeline_status::{ExecutionStatus, StepState};
use domain::question::{answer_request_token, StepAnswer};
use ports::{
    ArtifactDescription, AssociationPage, AwsFailure, ExecutionDescription, LineageGraph,
    ModelPackageDescription, ModelRegistry, PipelineControl, StartRequest, StepStatus,
};

pub fn sagemaker_client(sdk: &aws_config::SdkConfig) -> SdkClient<aws_sdk_sagemaker::Client> {
    crate::aws::sdk_client(sdk, aws_sdk_sagemaker::Client::new)
}

#[derive(Clone)]
/// Starts of the pipeline each request names; describes and step lists of any run's ARN.
pub struct SageMakerPipeline {
    client: SdkClient<aws_sdk_sagemaker::Client>,
}

impl SageMakerPipeline {
    pub fn new(client: SdkClient<aws_sdk_sagemaker::Client>) -> Self {
        Self { client }
    }
}

impl PipelineControl for SageMakerPipeline {
    async fn start(&self, r: &StartRequest) -> Result<String, AwsFailure> {
        let mut request = self
            .client
            .start_pipeline_execution()
            .pipeline_name(&r.pipeline_name)
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
            .map_err(|e| not_found_either_way(classify(&e)))?;
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
        let token = domain::run::stop_request_token(execution_arn);
        self.client
            .stop_pipeline_execution()
            .pipeline_execution_arn(execution_arn)
            .client_request_token(token)
            .send()
            .await
            .map_err(|e| not_found_either_way(classify(&e)))?;
        Ok(())
    }

    async fn definition(&self, execution_arn: &str) -> Result<String, AwsFailure> {
        let out = self
            .client
            .describe_pipeline_definition_for_execution()
            .pipeline_execution_arn(execution_arn)
            .send()
            .await
            .map_err(|e| not_found_either_way(classify(&e)))?;
        out.pipeline_definition.ok_or_else(|| AwsFailure {
            code: None,
            message: "DescribePipelineDefinitionForExecution returned no PipelineDefinition".into(),
            retryable: false,
            ambiguous: false,
        })
    }

    async fn answer_step(
        &self,
        token: &CallbackToken,
        answer: &StepAnswer,
    ) -> Result<(), AwsFailure> {
        let request_token = answer_request_token(token);
        match answer {
            StepAnswer::Success(outputs) => {
                let outputs = outputs
                    .iter()
                    .map(|(name, value)| OutputParameter::builder().name(name).value(value).build())
                    .collect();
                self.client
                    .send_pipeline_execution_step_success()
                    .callback_token(token.expose())
                    .set_output_parameters(Some(outputs))
                    .client_request_token(request_token)
                    .send()
                    .await
                    .map_err(|e| classify(&e))?;
            }
            StepAnswer::Failure(reason) => {
                self.client
                    .send_pipeline_execution_step_failure()
                    .callback_token(token.expose())
                    .failure_reason(reason)
                    .client_request_token(request_token)
                    .send()
                    .await
                    .map_err(|e| classify(&e))?;
            }
        }
        Ok(())
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
            let step = step.map_err(|e| not_found_either_way(classify(&e)))?;
            steps.push(StepStatus {
                name: step.step_name().unwrap_or_default().to_owned(),
                status: StepState::parse(step.step_status().map_or("", |s| s.as_str())),
                failure_reason: step.failure_reason().map(str::to_owned),
                model_package_arn: step
                    .metadata()
                    .and_then(|m| m.register_model())
                    .and_then(|r| r.arn())
                    .filter(|arn| !arn.is_empty())
                    .map(str::to_owned),
                callback_token: step
                    .metadata()
                    .and_then(|m| m.callback())
                    .and_then(|c| c.callback_token())
                    .and_then(CallbackToken::parse),
            });
        }
        Ok(steps)
    }
}

/// SageMaker's lineage API: ListAssociations, ListArtifacts, DescribeArtifact,
/// DescribeModelPackage; and UpdateModelPackage for a package's approval.
#[derive(Clone)]
pub struct SageMakerLineage {
    client: SdkClient<aws_sdk_sagemaker::Client>,
    page_size: i32,
}

impl SageMakerLineage {
    /// ListAssociations' largest page: SageMaker's default is 10.
    pub const PAGE_SIZE: i32 = 100;

    pub fn new(client: SdkClient<aws_sdk_sagemaker::Client>) -> Self {
        Self {
            client,
            page_size: Self::PAGE_SIZE,
        }
    }

    /// Smaller pages (1 to 100), so that following NextToken can be seen in tests.
    pub fn with_page_size(self, page_size: i32) -> Self {
        Self {
            page_size: page_size.clamp(1, Self::PAGE_SIZE),
            ..self
        }
    }
}

fn rfc3339(t: &aws_smithy_types::DateTime) -> Option<String> {
    t.fmt(aws_smithy_types::date_time::Format::DateTime).ok()
}

impl LineageGraph for SageMakerLineage {
    async fn associations(
        &self,
        arn: &str,
        direction: Direction,
        next_token: Option<&str>,
    ) -> Result<AssociationPage, AwsFailure> {
        let request = self
            .client
            .list_associations()
            .max_results(self.page_size)
            .set_next_token(next_token.map(str::to_owned));
        let request = match direction {
            Direction::Upstream => request.destination_arn(arn),
            Direction::Downstream => request.source_arn(arn),
        };
        let out = request.send().await.map_err(|e| classify(&e))?;
        let associations = out
            .association_summaries()
            .iter()
            .filter_map(|a| {
                Some(Association {
                    source_arn: a.source_arn()?.to_owned(),
                    source_name: a.source_name().map(str::to_owned),
                    source_type: a.source_type().map(str::to_owned),
                    destination_arn: a.destination_arn()?.to_owned(),
                    destination_name: a.destination_name().map(str::to_owned),
                    destination_type: a.destination_type().map(str::to_owned),
                    association_type: a.association_type().map(|t| t.as_str().to_owned()),
                })
            })
            .collect();
        Ok(AssociationPage {
            associations,
            next_token: out.next_token.filter(|t| !t.is_empty()),
        })
    }

    async fn artifacts_with_source(&self, source_uri: &str) -> Result<Vec<String>, AwsFailure> {
        let mut pages = self
            .client
            .list_artifacts()
            .source_uri(source_uri)
            .into_paginator()
            .items()
            .send();
        let mut arns = Vec::new();
        while let Some(artifact) = pages.next().await {
            let artifact = artifact.map_err(|e| classify(&e))?;
            if let Some(arn) = artifact.artifact_arn() {
                arns.push(arn.to_owned());
            }
        }
        Ok(arns)
    }

    async fn describe_artifact(&self, arn: &str) -> Result<ArtifactDescription, AwsFailure> {
        let out = self
            .client
            .describe_artifact()
            .artifact_arn(arn)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        Ok(ArtifactDescription {
            arn: out.artifact_arn().unwrap_or(arn).to_owned(),
            name: out.artifact_name().map(str::to_owned),
            artifact_type: out.artifact_type().map(str::to_owned),
            source_uri: out.source().and_then(|s| s.source_uri()).map(str::to_owned),
        })
    }

    async fn describe_model_package(
        &self,
        arn: &str,
    ) -> Result<ModelPackageDescription, AwsFailure> {
        let out = self
            .client
            .describe_model_package()
            .model_package_name(arn)
            .send()
            .await
            .map_err(|e| not_found_either_way(classify(&e)))?;
        Ok(ModelPackageDescription {
            arn: out.model_package_arn().unwrap_or(arn).to_owned(),
            group_name: out.model_package_group_name().map(str::to_owned),
            version: out.model_package_version(),
            status: out.model_package_status().map(|s| s.as_str().to_owned()),
            approval_status: out.model_approval_status().map(|s| s.as_str().to_owned()),
            generated_by: out
                .metadata_properties()
                .and_then(|m| m.generated_by())
                .map(str::to_owned),
            created_at: out.creation_time().and_then(rfc3339),
        })
    }
}

impl ModelRegistry for SageMakerLineage {
    async fn decide(
        &self,
        model_package_arn: &str,
        decision: &ModelDecision,
    ) -> Result<(), AwsFailure> {
        let status = if decision.approve {
            ModelApprovalStatus::Approved
        } else {
            ModelApprovalStatus::Rejected
        };
        self.client
            .update_model_package()
            .model_package_arn(model_package_arn)
            .model_approval_status(status)
            .approval_description(&decision.description)
            .send()
            .await
            .map_err(|e| not_found_either_way(classify(&e)))?;
        Ok(())
    }
}
