//! `approve_model_package`: a person's decision on a model package a training run registered
//! and left `PendingManualApproval`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::*;
use crate::config::ToolsConfig;
use domain::approval::MAX_COMMENT_CHARS;
use domain::caller::Caller;
use usecases::approval::{Approval, ApprovalError, ApprovalRequest, GateError};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveModelPackageArgs {
    /// The model package's ARN, as `check_training_status` reports it in `model_package_arn`:
    /// `arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>`.
    pub model_package_arn: String,
    /// true approves the model (`Approved`: a deployment may use it); false rejects it.
    pub approve: bool,
    /// Why, for whoever reads the model's approval later (at most 900 characters); kept as its
    /// `ApprovalDescription` with who decided.
    pub comment: Option<String>,
}

impl ToolArgs for ApproveModelPackageArgs {
    type Valid = ApprovalRequest;

    fn validate(
        self,
        _config: &ToolsConfig,
        _caller: &Caller,
    ) -> Result<ApprovalRequest, ToolError> {
        let model_package_arn = model_package_arn_argument(&self.model_package_arn)?;
        if let Some(comment) = &self.comment {
            let chars = comment.chars().count();
            if chars > MAX_COMMENT_CHARS {
                return Err(ToolError::invalid(format!(
                    "`comment` is {chars} characters; at most {MAX_COMMENT_CHARS}"
                )));
            }
        }
        Ok(ApprovalRequest {
            model_package_arn,
            approve: self.approve,
            comment: self.comment,
        })
    }

    fn trace(valid: &ApprovalRequest, span: &tracing::Span) {
        span.record("model_package_arn", valid.model_package_arn.as_str());
    }

    fn place(valid: &ApprovalRequest) -> Option<Place<'_>> {
        let unknown = |arn: &str| {
            let model_package_arn = arn.to_owned();
            ToolError::from(ApprovalError::NotFound { model_package_arn })
        };
        Some(Place {
            arn: &valid.model_package_arn,
            is_run: false,
            unknown,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApproveModelPackageOutput {
    pub model_package_arn: String,
    /// The training run that registered it.
    pub execution_arn: String,
    /// `Approved` or `Rejected`, as SageMaker now has it.
    pub approval_status: String,
    /// false when the package already stood as asked (this call changed nothing).
    pub changed: bool,
}

impl From<Approval> for ApproveModelPackageOutput {
    fn from(a: Approval) -> Self {
        Self {
            model_package_arn: a.model_package_arn,
            execution_arn: a.execution_arn,
            approval_status: a.approval_status,
            changed: a.changed,
        }
    }
}

impl From<ApprovalError> for ToolError {
    fn from(e: ApprovalError) -> Self {
        match e {
            ApprovalError::Aws { operation, failure } => {
                ToolError::aws(&format!("SageMaker {operation}"), &failure)
            }
            ApprovalError::Store(e) => e.into(),
            // The owner is told in the words the task and answer_training_input use.
            ApprovalError::OwnRun => ToolError::invalid(crate::wording::OWN_RUN),
            other => ToolError::invalid(other.to_string()),
        }
    }
}

impl From<GateError> for ToolError {
    fn from(e: GateError) -> Self {
        match e {
            GateError::Describe(f) => ToolError::aws("SageMaker DescribeModelPackage", &f),
            GateError::Store(e) => e.into(),
            e @ GateError::Contended => ToolError::invalid(e.to_string()),
        }
    }
}
