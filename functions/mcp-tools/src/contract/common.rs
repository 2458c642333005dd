//! What every tool's contract shares: the tools' names, numeric bounds, the argument trait,
//! the tool error and the translations of errors every family meets.

use crate::config::ToolsConfig;

use crate::wording;
use domain::arn::Scope;
use domain::caller::Caller;
use domain::ids::ExecutionArn;
use domain::lineage::{self, EntityKind};
use domain::quota::Quota;
use domain::util::quote;
use ports::{AwsFailure, StoreError};
use usecases::quota::{CountedError, QuotaError};

/// The tools' names, as `tools/list` declares them (each is its method's name in `tools`).
pub mod names {
    pub const SUBMIT_JOB: &str = "submit_job";
    pub const CHECK_JOB_STATUS: &str = "check_job_status";
    pub const TRIGGER_TRAINING: &str = "trigger_training";
    pub const CHECK_TRAINING_STATUS: &str = "check_training_status";
    pub const CHECK_TRAINING_RESULT: &str = "check_training_result";
    pub const GET_MODEL_PROVENANCE: &str = "get_model_provenance";
    pub const ANSWER_TRAINING_INPUT: &str = "answer_training_input";
    pub const APPROVE_MODEL_PACKAGE: &str = "approve_model_package";
    /// The tools a stack without a pipeline does not serve.
    pub const TRAINING: [&str; 5] = [
        TRIGGER_TRAINING,
        CHECK_TRAINING_STATUS,
        CHECK_TRAINING_RESULT,
        ANSWER_TRAINING_INPUT,
        APPROVE_MODEL_PACKAGE,
    ];
    /// The tools that answer a run's questions: not served where answers come only through the
    /// client's form (`APPROVALS_VIA=elicitation`).
    pub const ANSWERING: [&str; 2] = [ANSWER_TRAINING_INPUT, APPROVE_MODEL_PACKAGE];
}

/// A numeric argument's range and default: the one source of its schema (`minimum`,
/// `maximum`), its check, and the range its description states.
#[derive(Debug, Clone, Copy)]
pub struct Bounds<T> {
    pub name: &'static str,
    pub min: T,
    pub max: T,
    pub default: Option<T>,
}

impl<T: Copy + PartialOrd + std::fmt::Display> Bounds<T> {
    /// The value given (or the default), when within the range.
    pub fn check(&self, value: Option<T>) -> Result<Option<T>, ToolError> {
        match value.or(self.default) {
            Some(v) if !(self.min..=self.max).contains(&v) => Err(ToolError::invalid(format!(
                "`{}` is {v}; it must be from {} to {}",
                self.name, self.min, self.max
            ))),
            checked => Ok(checked),
        }
    }

    /// `text` with `{range}` replaced by the range and default, e.g. `1 to 3600, default 300`.
    pub fn describe(&self, text: &str) -> String {
        let default = self
            .default
            .map(|d| format!(", default {d}"))
            .unwrap_or_default();
        text.replace("{range}", &format!("{} to {}{default}", self.min, self.max))
    }
}

impl<T: Copy + PartialOrd + std::fmt::Display> Bounds<T> {
    /// For an argument that has a default: the value to use.
    pub fn value(&self, value: Option<T>) -> Result<T, ToolError> {
        self.check(value).map(|v| v.unwrap_or(self.min))
    }
}

/// A tool's arguments, checked once into what its use case takes.
pub trait ToolArgs {
    type Valid;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<Self::Valid, ToolError>;

    /// Puts the ids the call concerns on its span (never the arguments themselves, which may
    /// hold a job's input).
    fn trace(_valid: &Self::Valid, _span: &tracing::Span) {}

    /// The ARN the call names that must lie within the deployment, for a tool whose policy
    /// checks it ([`super::policy::Policy::in_deployment`]).
    fn place(_valid: &Self::Valid) -> Option<Place<'_>> {
        None
    }

    /// How long the call asks to wait, for a tool whose policy lets it.
    fn wait_secs(_valid: &Self::Valid) -> u32 {
        0
    }
}

/// The ARN a call names that must lie within the deployment, and the answer to one that does
/// not: the same as to an ARN that does not exist, so nothing is said of another's.
pub struct Place<'a> {
    pub arn: &'a str,
    /// A pipeline execution's (its pipeline is compared too), or any SageMaker resource's.
    pub is_run: bool,
    pub unknown: fn(&str) -> ToolError,
}

impl Place<'_> {
    /// Whether the ARN lies within `scope`, the deployment's region, account and pipelines.
    pub fn within(&self, scope: &Scope<'_>) -> bool {
        match self.is_run {
            true => scope.holds_run(self.arn),
            false => scope.holds(self.arn),
        }
    }
}

/// A failure the model can act on, returned as a tool result with `isError: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// An AWS call that failed, saying which one, its error code and whether retrying can
    /// help. AWS's own text (which may name the role, the account, a table or a bucket) goes to
    /// the log, never to the caller.
    pub fn aws(operation: &str, failure: &AwsFailure) -> Self {
        tracing::warn!(operation, %failure, "AWS call failed");
        Self {
            message: wording::aws_failed(operation, failure),
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E> From<CountedError<E>> for ToolError
where
    ToolError: From<E>,
{
    fn from(e: CountedError<E>) -> Self {
        match e {
            CountedError::Quota(e) => e.into(),
            CountedError::Work(e) => e.into(),
        }
    }
}

impl From<QuotaError> for ToolError {
    fn from(e: QuotaError) -> Self {
        if let QuotaError::Store { source, .. } = &e {
            tracing::warn!(error = %source, "a quota count could not be written");
        }
        ToolError::invalid(wording::quota(&e))
    }
}

/// The JSON-RPC code of a quota refusal, for the methods that answer with a protocol error
/// (`resources/read`, `tasks/get`): from JSON-RPC's implementation-defined range, below the
/// codes MCP assigns (-32020 on), and apart from the ones SDKs use for their own transport
/// faults (-32000, -32001).
pub const QUOTA_REACHED: rmcp::model::ErrorCode = rmcp::model::ErrorCode(-32009);

/// A read or a wait refused by its quota, as `resources/read`, `tasks/get` and a listen
/// answer it: which quota, the limit and the seconds to wait, in the message and in `data`; a
/// count not written, as an internal error that a retry may clear.
pub fn quota_refused(e: QuotaError) -> rmcp::ErrorData {
    let message = wording::quota(&e);
    match e {
        QuotaError::Exceeded {
            quota,
            limit,
            retry_after_secs,
        } => {
            let quota = match quota {
                Quota::Submits => "submits_per_minute",
                Quota::Runs => "runs_per_hour",
                Quota::Waits => "waits_max",
                Quota::Reads => "reads_per_minute",
            };
            let data = serde_json::json!({
                "quota": quota,
                "limit": limit,
                "retryAfterSecs": retry_after_secs,
            });
            rmcp::ErrorData::new(QUOTA_REACHED, message, Some(data))
        }
        QuotaError::Store { source, .. } => {
            tracing::warn!(error = %source, "a quota count could not be written");
            rmcp::ErrorData::internal_error(message, None)
        }
    }
}

impl From<StoreError> for ToolError {
    /// Which call failed, never the table's name or DynamoDB's text (the log has both).
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Aws {
                operation, failure, ..
            } => ToolError::aws(&format!("DynamoDB {operation}"), &failure),
            other => {
                tracing::error!(error = %other, "the store refused or held an unreadable item");
                ToolError::invalid(wording::STORE_FAILED)
            }
        }
    }
}

/// An `idempotency_key` as given, when it is 1 to 256 characters.
pub(crate) fn checked_idempotency_key(key: Option<String>) -> Result<Option<String>, ToolError> {
    match key {
        Some(k) if k.is_empty() || k.len() > 256 => Err(ToolError::invalid(
            "`idempotency_key` must be 1 to 256 characters",
        )),
        other => Ok(other),
    }
}

/// An `execution_arn` argument, checked for a pipeline execution ARN's shape.
pub(crate) fn execution_arn_argument(arn: String) -> Result<ExecutionArn, ToolError> {
    ExecutionArn::parse(&arn).map_err(|e| {
        ToolError::invalid(format!(
            "`execution_arn` {} is {} ({})",
            quote(&arn),
            e.what.replacen("a ", "not a ", 1),
            e.rule
        ))
    })
}

/// A `model_package_arn` argument, trimmed, checked for a model package version's ARN (a
/// group's ARN is named as such).
pub(crate) fn model_package_arn_argument(arn: &str) -> Result<String, ToolError> {
    let arn = arn.trim();
    if arn.len() <= 2048 && lineage::is_model_package_arn(arn) {
        return Ok(arn.to_owned());
    }
    let hint = if EntityKind::of_arn(arn) == Some(EntityKind::ModelPackageGroup) {
        "; that is a model package group: give one of its versions \
         (model-package/<group>/<version>)"
    } else {
        ""
    };
    Err(ToolError::invalid(format!(
        "`model_package_arn` {} is not a model package ARN \
         (arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>){hint}",
        quote(arn)
    )))
}
