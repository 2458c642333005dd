//! trigger_training, check_training_status and check_training_result: their arguments, results
//! and errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{PipelineParameters, ToolsConfig};

use super::common::*;
use super::questions::{AnswerView, QuestionView};
use super::waits::{wait_description, StatusCheck, WAIT_SECS};
use crate::wording;
use domain::caller::Caller;
use domain::ids::{ExecutionArn, SessionId};
use domain::pipeline_status::{ExecutionStatus, PipelineStatus, RunStatus, StepState};
use domain::run::Run;
use domain::s3_location::S3Location;
use domain::util::quote;
use ports::{ExecutionDescription, StepStatus};
use usecases::training::{Refused, RunParameter, StatusError, TriggerError, TriggerRequest};

pub const MAX_EPOCHS: Bounds<u32> = Bounds {
    name: "max_epochs",
    min: 1,
    max: 1000,
    default: None,
};
pub const ACCURACY_THRESHOLD: Bounds<f64> = Bounds {
    name: "accuracy_threshold",
    min: 0.0,
    max: 1.0,
    default: None,
};
pub const MAX_PARALLEL_STEPS: Bounds<u32> = Bounds {
    name: "max_parallel_steps",
    min: 1,
    max: 256,
    default: None,
};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerTrainingArgs {
    /// S3 URI of the training data (`s3://bucket/prefix`).
    pub input_data_uri: String,
    /// The caller's session; `check_training_result` lists the runs it triggered.
    /// Letters, digits and `_ . : -`, at most 128 characters.
    pub session_id: String,
    #[schemars(
        range(min = MAX_EPOCHS.min, max = MAX_EPOCHS.max),
        description = MAX_EPOCHS.describe(
            "Training epochs ({range}), for pipelines that take them (MaxEpochs by default)."
        )
    )]
    pub max_epochs: Option<u32>,
    #[schemars(
        range(min = ACCURACY_THRESHOLD.min, max = ACCURACY_THRESHOLD.max),
        description = ACCURACY_THRESHOLD.describe(
            "Accuracy a model must reach to be registered ({range}), for pipelines that take it \
             (AccuracyThreshold by default)."
        )
    )]
    pub accuracy_threshold: Option<f64>,
    /// Training instance type such as `ml.m5.xlarge` (TrainingInstanceType by default).
    pub training_instance_type: Option<String>,
    /// Retrying with the same key (and session) returns the first run instead of starting another.
    pub idempotency_key: Option<String>,
    #[schemars(
        range(min = MAX_PARALLEL_STEPS.min, max = MAX_PARALLEL_STEPS.max),
        description = MAX_PARALLEL_STEPS.describe(
            "MaxParallelExecutionSteps for this run ({range}); by default the pipeline's own setting."
        )
    )]
    pub max_parallel_steps: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TriggerTrainingOutput {
    pub execution_arn: String,
    /// `Executing`: SageMaker has started the run.
    #[schemars(schema_with = "execution_status_schema")]
    pub status: ExecutionStatus,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A `session_id` argument, held to the one bound a session id has.
pub fn validate_session_id(session_id: &str) -> Result<SessionId, ToolError> {
    SessionId::parse(session_id).map_err(|e| {
        ToolError::invalid(format!(
            "`session_id` {} must be {}",
            quote(session_id),
            e.rule
        ))
    })
}

impl ToolArgs for TriggerTrainingArgs {
    type Valid = TriggerRequest;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<TriggerRequest, ToolError> {
        let names = config.training.pipeline_parameters.as_ref().map_err(|e| {
            tracing::error!(error = %e, "trigger_training cannot run: the deployment's pipeline parameters are invalid");
            ToolError::invalid(wording::PIPELINE_MISCONFIGURED)
        })?;
        // Held to the allow-lists where every tool's run is: `training::admit`.
        let parameters = self.parameters(names)?;
        let max_parallel_steps = MAX_PARALLEL_STEPS.check(self.max_parallel_steps)?;
        Ok(TriggerRequest {
            owner: caller.owner.clone(),
            pipeline_name: config.pipeline_name.clone(),
            session_id: validate_session_id(&self.session_id)?,
            parameters,
            idempotency_key: checked_idempotency_key(self.idempotency_key)?,
            max_parallel_steps: max_parallel_steps.or(config.training.max_parallel_steps),
            result_ttl_secs: config.jobs.result_ttl_secs,
        })
    }

    fn trace(valid: &TriggerRequest, span: &tracing::Span) {
        span.record("session_id", valid.session_id.as_str());
    }
}

impl TriggerTrainingArgs {
    /// The pipeline parameters to pass, under the pipeline's own names: only those given. An
    /// argument the pipeline takes no parameter for is refused rather than dropped.
    pub fn parameters(&self, names: &PipelineParameters) -> Result<Vec<RunParameter>, ToolError> {
        validate_session_id(&self.session_id)?;
        let uri = self.input_data_uri.trim();
        if uri.parse::<S3Location>().is_err()
            && !(uri.starts_with("s3://") && uri.len() > 5 && !uri[5..].starts_with('/'))
        {
            return Err(ToolError::invalid(format!(
                "`input_data_uri` {} is not an s3://bucket/prefix URI",
                quote(uri)
            )));
        }
        let epochs = MAX_EPOCHS.check(self.max_epochs)?;
        let threshold = ACCURACY_THRESHOLD.check(self.accuracy_threshold)?;
        if let Some(instance) = &self.training_instance_type {
            let ok = instance.starts_with("ml.")
                && instance.len() <= 64
                && instance
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.');
            if !ok {
                return Err(ToolError::invalid(format!(
                    "`training_instance_type` {} is not a SageMaker instance type such as ml.m5.xlarge",
                    quote(instance)
                )));
            }
        }
        let given = [
            ("input_data_uri", Some(uri.to_owned())),
            ("max_epochs", epochs.map(|e| e.to_string())),
            ("accuracy_threshold", threshold.map(|t| t.to_string())),
            (
                "training_instance_type",
                self.training_instance_type.clone(),
            ),
        ];
        let mut parameters = Vec::new();
        for (argument, value) in given {
            let Some(value) = value else { continue };
            let Some(name) = names.name_for(argument) else {
                let taken: Vec<&str> = names.arguments().collect();
                return Err(ToolError::invalid(format!(
                    "`{argument}` was given, but this pipeline takes no parameter for it: \
                     PIPELINE_PARAMETERS maps only {}. Call again without `{argument}`.",
                    taken.join(", ")
                )));
            };
            parameters.push(RunParameter::new(argument, name, value));
        }
        Ok(parameters)
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingStatusArgs {
    /// The `execution_arn` the tool that started the run returned.
    pub execution_arn: String,
    #[schemars(
        range(min = WAIT_SECS.min, max = WAIT_SECS.max),
        description = wait_description("a running run")
    )]
    pub wait_secs: Option<u32>,
}

impl ToolArgs for CheckTrainingStatusArgs {
    type Valid = StatusCheck<ExecutionArn>;

    fn validate(
        self,
        _config: &ToolsConfig,
        _caller: &Caller,
    ) -> Result<StatusCheck<ExecutionArn>, ToolError> {
        Ok(StatusCheck {
            id: execution_arn_argument(self.execution_arn)?,
            wait_secs: WAIT_SECS.value(self.wait_secs)?,
        })
    }

    fn trace(valid: &StatusCheck<ExecutionArn>, span: &tracing::Span) {
        span.record("execution_arn", valid.id.as_str());
    }

    fn place(valid: &StatusCheck<ExecutionArn>) -> Option<Place<'_>> {
        let unknown = |arn: &str| ToolError::invalid(wording::run_not_found(arn));
        Some(Place {
            arn: valid.id.as_str(),
            is_run: true,
            unknown,
        })
    }

    fn wait_secs(valid: &StatusCheck<ExecutionArn>) -> u32 {
        valid.wait_secs
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainingStatusOutput {
    pub execution_arn: String,
    /// SageMaker's status: Executing, Stopping, Succeeded, Failed, Stopped or CompletedWithFailures.
    #[schemars(schema_with = "execution_status_schema")]
    pub status: ExecutionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The model package the run registered (its RegisterModel step's), once registered: pass
    /// it to `get_model_provenance`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
    /// Where the registered model's approval stands (Approved, Rejected,
    /// PendingManualApproval), when the deployment waits for it (APPROVAL_GATE): decide it with
    /// `approve_model_package`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_approval_status: Option<String>,
    /// The run's steps, in the order they started.
    pub steps: Vec<StepView>,
    /// The session the run was triggered for: in a run task's result, which answers the call
    /// to trigger_training (whose result names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What the run waits for a person to answer (its CallbackSteps' questions, and its model's
    /// approval): answer each with `answer_training_input`. Absent when it asks nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for_input: Vec<QuestionView>,
    /// The answers the run's questions were given: who, when, how (`elicitation` or `tool`)
    /// and a digest of what was asked. Absent when none was answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<AnswerView>,
    /// While the run asks, to one who may answer it: the run's task (a run started as a task),
    /// for a client with tasks to open with `tasks/get` and answer through its form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl TrainingStatusOutput {
    /// What check_training_status (and a finished run's task) reports for a run.
    pub fn new(
        execution_arn: String,
        described: ExecutionDescription,
        steps: Vec<StepStatus>,
    ) -> Self {
        // The last registration, should a run register more than one.
        let model_package_arn = steps.iter().rev().find_map(|s| s.model_package_arn.clone());
        Self {
            execution_arn,
            status: described.status,
            failure_reason: described.failure_reason,
            model_package_arn,
            model_approval_status: None,
            steps: steps.into_iter().map(StepView::from).collect(),
            session_id: None,
            waiting_for_input: Vec::new(),
            answers: Vec::new(),
            task_id: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepView {
    pub name: String,
    /// SageMaker's StepStatus: Starting, Executing, Stopping, Stopped, Failed or Succeeded.
    #[schemars(schema_with = "step_state_schema")]
    pub status: StepState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The model package a RegisterModel step registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingResultArgs {
    /// The `session_id` the run was started with.
    pub session_id: String,
}

impl ToolArgs for CheckTrainingResultArgs {
    /// The session id.
    type Valid = String;

    fn validate(self, _config: &ToolsConfig, _caller: &Caller) -> Result<String, ToolError> {
        validate_session_id(&self.session_id)?;
        Ok(self.session_id)
    }

    fn trace(session_id: &String, span: &tracing::Span) {
        span.record("session_id", session_id.as_str());
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainingResultOutput {
    pub session_id: String,
    /// The session's runs, newest first. `pending`: triggered, not yet heard of.
    pub runs: Vec<RunView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunView {
    pub execution_arn: String,
    /// `pending` (triggered, not yet heard of from SageMaker), then SageMaker's status.
    #[schemars(schema_with = "run_status_schema")]
    pub status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

impl From<Run> for RunView {
    fn from(r: Run) -> Self {
        RunView {
            execution_arn: r.execution_arn.into(),
            status: r.status,
            started_at: r.started_at,
            ended_at: r.ended_at,
            failure_reason: r.failure_reason,
            updated_at: r.updated_at,
        }
    }
}

impl From<StepStatus> for StepView {
    fn from(s: StepStatus) -> Self {
        StepView {
            name: s.name,
            status: s.status,
            failure_reason: s.failure_reason,
            model_package_arn: s.model_package_arn,
        }
    }
}

impl From<TriggerError> for ToolError {
    fn from(e: TriggerError) -> Self {
        ToolError::aws("SageMaker StartPipelineExecution", &e.0)
    }
}

impl From<Refused> for ToolError {
    fn from(refused: Refused) -> Self {
        ToolError::invalid(wording::parameter_refused(&refused))
    }
}

impl From<StatusError> for ToolError {
    fn from(e: StatusError) -> Self {
        match e {
            StatusError::NotFound { execution_arn } => {
                ToolError::invalid(wording::run_not_found(&execution_arn))
            }
            StatusError::Describe(f) => ToolError::aws("SageMaker DescribePipelineExecution", &f),
            StatusError::Steps(f) => ToolError::aws("SageMaker ListPipelineExecutionSteps", &f),
        }
    }
}

/// A status in SageMaker's words: the schema lists the words it documents (`known`), and
/// still admits one it adds later, which the tools pass on as written.
fn sagemaker_words(known: &[&str]) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [
            {"type": "string", "enum": known},
            {"type": "string", "description": "a status SageMaker added later, as it wrote it"}
        ]
    })
}

fn execution_status_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let known: Vec<_> = PipelineStatus::ALL.iter().map(|s| s.as_str()).collect();
    sagemaker_words(&known)
}

fn run_status_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut known = vec![RunStatus::PENDING];
    known.extend(PipelineStatus::ALL.iter().map(|s| s.as_str()));
    sagemaker_words(&known)
}

fn step_state_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    sagemaker_words(&StepState::KNOWN)
}
