//! The MCP tools' contract: typed arguments (their JSON Schema is derived), typed results
//! (the `outputSchema`), validation, and the translation of use-case answers and errors into
//! tool results. Nothing here touches AWS.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{PipelineParameters, ToolsConfig};

use crate::wording;
use shared::domain::caller::{Caller, Owner};
use shared::domain::job::{Job, Submission};
use shared::domain::lineage::{self, Direction, EntityKind};
use shared::domain::run::Run;
use shared::domain::s3_location::S3Location;
use shared::domain::training_input::check_input_uri;
use shared::ports::{AwsFailure, ExecutionDescription, StepStatus, StoreError};
use shared::usecases::check::{CheckError, JobReport};
use shared::usecases::lineage::{Described, Found, Provenance, ProvenanceError, ProvenanceRequest};
use shared::usecases::quota::QuotaError;
use shared::usecases::submit::{SubmitError, Submitted};
use shared::usecases::training::{StatusError, TriggerError, TriggerRequest};
use shared::util::quote;

/// The tools' names, as `tools/list` declares them (each is its method's name in `tools`).
pub mod names {
    pub const SUBMIT_JOB: &str = "submit_job";
    pub const CHECK_JOB_STATUS: &str = "check_job_status";
    pub const TRIGGER_TRAINING: &str = "trigger_training";
    pub const CHECK_TRAINING_STATUS: &str = "check_training_status";
    pub const CHECK_TRAINING_RESULT: &str = "check_training_result";
    pub const GET_MODEL_PROVENANCE: &str = "get_model_provenance";
    /// The tools a stack without a pipeline does not serve.
    pub const TRAINING: [&str; 3] = [
        TRIGGER_TRAINING,
        CHECK_TRAINING_STATUS,
        CHECK_TRAINING_RESULT,
    ];
    pub const ALL: [&str; 6] = [
        SUBMIT_JOB,
        CHECK_JOB_STATUS,
        TRIGGER_TRAINING,
        CHECK_TRAINING_STATUS,
        CHECK_TRAINING_RESULT,
        GET_MODEL_PROVENANCE,
    ];
}

/// Largest input `submit_job` accepts. A Function URL request is at most 6 MB, and the input
/// travels inside a JSON-RPC envelope with escaping.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

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

pub const INVOCATION_TIMEOUT_SECS: Bounds<u32> = Bounds {
    name: "invocation_timeout_secs",
    min: 1,
    max: 3600,
    default: Some(300),
};
/// No fixed default: the deployment's (`DEFAULT_REQUEST_TTL_SECS`, 3600 unless changed).
pub const REQUEST_TTL_SECS: Bounds<u32> = Bounds {
    name: "request_ttl_secs",
    min: 60,
    max: 21600,
    default: None,
};
/// The schema's bounds: the most any call may ask, streamed (Lambda's longest timeout).
/// [`allowed_wait`] holds each call to what it can have.
pub const WAIT_SECS: Bounds<u32> = Bounds {
    name: "wait_secs",
    min: 0,
    max: 900,
    default: Some(0),
};
/// The longest wait of a call without a progress token: its reply arrives all at once, and
/// clients give up on a silent request long before a Lambda would.
pub const PLAIN_WAIT_SECS_MAX: u32 = 20;
/// Left free at the end of a streamed wait, for the reads and the reply around it.
pub const STREAMED_WAIT_MARGIN_SECS: u64 = 10;

/// The longest wait of a call that asked for progress: the function's timeout less the margin.
pub fn streamed_wait_secs_max(config: &ToolsConfig) -> u32 {
    let secs = config
        .function_timeout_secs
        .saturating_sub(STREAMED_WAIT_MARGIN_SECS);
    u32::try_from(secs)
        .unwrap_or(WAIT_SECS.max)
        .clamp(PLAIN_WAIT_SECS_MAX, WAIT_SECS.max)
}

/// The wait a call may have: up to [`PLAIN_WAIT_SECS_MAX`] without a progress token, up to
/// [`streamed_wait_secs_max`] with one (its progress notifications stream while it waits).
pub fn allowed_wait(
    asked_secs: u32,
    streamed: bool,
    config: &ToolsConfig,
) -> Result<std::time::Duration, ToolError> {
    let streamed_max = streamed_wait_secs_max(config);
    if streamed && asked_secs > streamed_max {
        return Err(ToolError::invalid(format!(
            "`wait_secs` is {asked_secs}; it must be from 0 to {streamed_max} (the function's timeout, {} s, less {STREAMED_WAIT_MARGIN_SECS} s)",
            config.function_timeout_secs
        )));
    }
    if !streamed && asked_secs > PLAIN_WAIT_SECS_MAX {
        return Err(ToolError::invalid(format!(
            "`wait_secs` is {asked_secs}; without a progress token (`_meta.progressToken`) it must be from 0 to {PLAIN_WAIT_SECS_MAX}; with one, up to {streamed_max}"
        )));
    }
    Ok(std::time::Duration::from_secs(asked_secs.into()))
}
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

/// A tool's arguments, checked once into what its use case takes.
pub trait ToolArgs {
    type Valid;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<Self::Valid, ToolError>;

    /// Puts the ids the call concerns on its span (never the arguments themselves, which may
    /// hold a job's input).
    fn trace(_valid: &Self::Valid, _span: &tracing::Span) {}
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

// ---------------------------------------------------------------- submit_job

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitJobArgs {
    /// The text document to process. Give exactly one of `document` and `payload`.
    pub document: Option<String>,
    /// A JSON object to send to the model. Give exactly one of `document` and `payload`.
    pub payload: Option<Map<String, Value>>,
    /// Model parameters, sent beside the input as `parameters`.
    pub options: Option<Map<String, Value>>,
    /// Retrying with the same key returns the first job instead of starting another.
    pub idempotency_key: Option<String>,
    #[schemars(
        range(min = INVOCATION_TIMEOUT_SECS.min, max = INVOCATION_TIMEOUT_SECS.max),
        description = INVOCATION_TIMEOUT_SECS
            .describe("Seconds the model may take once it starts on the request ({range}).")
    )]
    pub invocation_timeout_secs: Option<u32>,
    #[schemars(
        range(min = REQUEST_TTL_SECS.min, max = REQUEST_TTL_SECS.max),
        description = REQUEST_TTL_SECS.describe(
            "Seconds the request may wait in the endpoint's queue before SageMaker drops it \
             ({range}; at least twice `invocation_timeout_secs`). By default the deployment's \
             (3600 unless set otherwise), long enough for an endpoint scaled to zero to start."
        )
    )]
    pub request_ttl_secs: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitJobOutput {
    /// The handle to pass to `check_job_status`.
    pub inference_id: String,
    /// `pending` for a new job; a replayed `idempotency_key` returns the job's current status
    /// beside exactly what the first call returned.
    pub status: String,
    /// Where SageMaker will write the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_location: Option<String>,
    /// Where SageMaker will write a failure, when the endpoint has an S3 failure path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_location: Option<String>,
    pub submitted_at: String,
    /// True when this call returned an earlier job submitted with the same `idempotency_key`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent_replay: bool,
    /// Said when whether SageMaker queued the request is not known yet (the job stays pending).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ToolArgs for SubmitJobArgs {
    type Valid = Submission;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<Submission, ToolError> {
        self.submission(
            &caller.owner,
            &config.async_endpoint_name,
            &config.io_bucket,
            config.default_request_ttl_secs,
        )
    }

    fn trace(valid: &Submission, span: &tracing::Span) {
        span.record("inference_id", valid.inference_id.as_str());
    }
}

impl SubmitJobArgs {
    /// The submission to make, or what is wrong with the arguments.
    pub fn submission(
        self,
        owner: &Owner,
        endpoint_name: &str,
        io_bucket: &str,
        default_request_ttl_secs: u32,
    ) -> Result<Submission, ToolError> {
        let inputs = match (self.document, self.payload) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid(
                    "give either `document` or `payload`, not both",
                ))
            }
            (None, None) => {
                return Err(ToolError::invalid(
                    "give one of `document` (text) or `payload` (a JSON object)",
                ))
            }
            (Some(d), None) if d.trim().is_empty() => {
                return Err(ToolError::invalid("`document` is empty"))
            }
            (Some(d), None) => Value::String(d),
            (None, Some(p)) => Value::Object(p),
        };
        let invocation_timeout_secs =
            INVOCATION_TIMEOUT_SECS.value(self.invocation_timeout_secs)?;
        let request_ttl_secs = REQUEST_TTL_SECS
            .check(self.request_ttl_secs)?
            .unwrap_or(default_request_ttl_secs);
        if u64::from(request_ttl_secs) < 2 * u64::from(invocation_timeout_secs) {
            return Err(ToolError::invalid(format!(
                "`request_ttl_secs` ({request_ttl_secs}) must be at least twice `invocation_timeout_secs` \
                 ({invocation_timeout_secs}), or the request can expire from the queue while the model runs"
            )));
        }
        let idempotency_key = checked_idempotency_key(self.idempotency_key)?;
        let mut input = Map::new();
        input.insert("inputs".into(), inputs);
        if let Some(options) = self.options {
            input.insert("parameters".into(), Value::Object(options));
        }
        let input = serde_json::to_vec(&Value::Object(input)).expect("JSON values serialize");
        if input.len() > MAX_INPUT_BYTES {
            return Err(ToolError::invalid(format!(
                "the input is {} bytes; the limit is {MAX_INPUT_BYTES} bytes (4 MiB). Put larger inputs in S3 \
                 and pass a reference in `payload`",
                input.len()
            )));
        }
        Ok(Submission::new(
            owner,
            endpoint_name,
            io_bucket,
            input,
            idempotency_key.as_deref(),
            invocation_timeout_secs,
            request_ttl_secs,
        ))
    }
}

impl From<Submitted> for SubmitJobOutput {
    fn from(s: Submitted) -> Self {
        SubmitJobOutput {
            inference_id: s.inference_id,
            status: s.status.as_str().to_owned(),
            output_location: s.output_location,
            failure_location: s.failure_location,
            submitted_at: s.submitted_at,
            idempotent_replay: s.replay,
            message: match (&s.note, s.endpoint_at_zero) {
                (Some(condition), _) => Some(wording::submitted(condition)),
                (None, true) => Some(wording::ENDPOINT_AT_ZERO.to_owned()),
                (None, false) => None,
            },
        }
    }
}

impl From<SubmitError> for ToolError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::Store(e) => e.into(),
            SubmitError::Refused { ref failure, .. } if failure.retryable => ToolError {
                message: format!("{e} The cause looks transient."),
            },
            other => ToolError::invalid(other.to_string()),
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

// ---------------------------------------------------------------- check_job_status

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckJobStatusArgs {
    /// The `inference_id` returned by `submit_job`.
    pub inference_id: String,
    #[schemars(
        range(min = WAIT_SECS.min, max = WAIT_SECS.max),
        description = wait_description("a pending job")
    )]
    pub wait_secs: Option<u32>,
}

/// `wait_secs` in words, for both tools that wait.
fn wait_description(what: &str) -> String {
    format!(
        "Wait up to this many seconds for {what} to finish: 0 to {PLAIN_WAIT_SECS_MAX}, default 0. A \
         request that carries a progress token (`_meta.progressToken`) may wait up to the function's \
         timeout less {STREAMED_WAIT_MARGIN_SECS} s, and gets progress notifications while it waits."
    )
}

/// A status check to make: the job, and how long it may wait for the job to finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckJob {
    pub inference_id: String,
    /// As asked; [`allowed_wait`] decides what the call may have.
    pub wait_secs: u32,
}

impl ToolArgs for CheckJobStatusArgs {
    type Valid = CheckJob;

    fn validate(self, _config: &ToolsConfig, _caller: &Caller) -> Result<CheckJob, ToolError> {
        if self.inference_id.trim().is_empty() || self.inference_id.len() > 1024 {
            // Only its length is said: the id may be anything a caller sent.
            return Err(ToolError::invalid(
                "`inference_id` must be the non-empty id returned by submit_job",
            ));
        }
        Ok(CheckJob {
            inference_id: self.inference_id,
            wait_secs: WAIT_SECS.value(self.wait_secs)?,
        })
    }

    fn trace(valid: &CheckJob, span: &tracing::Span) {
        span.record("inference_id", valid.inference_id.as_str());
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobStatusOutput {
    pub inference_id: String,
    /// `pending`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The output, when it is JSON and small enough to be stored inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A presigned HTTPS URL of the output (valid 15 minutes), when it is not inline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The start of the failure object SageMaker wrote, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_excerpt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// True for a pending job long past its request TTL and invocation timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probably_lost: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<JobReport> for JobStatusOutput {
    fn from(r: JobReport) -> Self {
        let Job {
            inference_id,
            status,
            result,
            failure_reason,
            failure_excerpt,
            submitted_at,
            completed_at,
            ..
        } = r.job;
        let expired = (status == shared::domain::job::JobStatus::Failed)
            .then(|| {
                failure_reason
                    .as_deref()
                    .filter(|r| wording::expired_in_queue(r))
            })
            .flatten()
            .map(|_| wording::EXPIRED_IN_QUEUE.to_owned());
        JobStatusOutput {
            inference_id,
            status: status.as_str().to_owned(),
            result_url: if result.is_none() { r.result_url } else { None },
            result,
            failure_reason,
            failure_excerpt,
            submitted_at,
            completed_at,
            probably_lost: r.probably_lost,
            message: r.note.as_ref().map(wording::job_note).or(expired),
        }
    }
}

impl From<CheckError> for ToolError {
    fn from(e: CheckError) -> Self {
        match e {
            CheckError::Store(e) => e.into(),
            not_found => ToolError::invalid(not_found.to_string()),
        }
    }
}

// ---------------------------------------------------------------- training

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
    pub status: String,
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

pub fn validate_session_id(session_id: &str) -> Result<(), ToolError> {
    let ok = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "`session_id` {} must be 1 to 128 letters, digits or `_ . : -`",
            quote(session_id)
        )))
    }
}

/// An `idempotency_key` as given, when it is 1 to 256 characters.
fn checked_idempotency_key(key: Option<String>) -> Result<Option<String>, ToolError> {
    match key {
        Some(k) if k.is_empty() || k.len() > 256 => Err(ToolError::invalid(
            "`idempotency_key` must be 1 to 256 characters",
        )),
        other => Ok(other),
    }
}

impl ToolArgs for TriggerTrainingArgs {
    type Valid = TriggerRequest;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<TriggerRequest, ToolError> {
        let names = config.pipeline_parameters.as_ref().map_err(|e| {
            tracing::error!(error = %e, "trigger_training cannot run: the deployment's pipeline parameters are invalid");
            ToolError::invalid(wording::PIPELINE_MISCONFIGURED)
        })?;
        let parameters = self.parameters(names)?;
        self.within_allow_lists(config)?;
        let max_parallel_steps = MAX_PARALLEL_STEPS.check(self.max_parallel_steps)?;
        Ok(TriggerRequest {
            owner: caller.owner.clone(),
            pipeline_name: config.pipeline_name.clone(),
            session_id: self.session_id,
            parameters,
            idempotency_key: checked_idempotency_key(self.idempotency_key)?,
            max_parallel_steps: max_parallel_steps.or(config.pipeline_max_parallel_steps),
            result_ttl_secs: config.result_ttl_secs,
        })
    }

    fn trace(valid: &TriggerRequest, span: &tracing::Span) {
        span.record("session_id", valid.session_id.as_str());
    }
}

impl TriggerTrainingArgs {
    /// The data and the instance type are ones the deployment allows any caller: the pipeline's
    /// role reads what it is given, and its instances are billed to the account.
    pub fn within_allow_lists(&self, config: &ToolsConfig) -> Result<(), ToolError> {
        let uri = self.input_data_uri.trim();
        let allowed = &config.training_input_prefixes;
        match check_input_uri(uri, allowed) {
            Ok(()) => {}
            Err(refusal) => {
                return Err(ToolError::invalid(wording::input_refused(
                    uri, refusal, allowed,
                )))
            }
        }
        if let Some(instance) = &self.training_instance_type {
            if !config.training_instance_types.iter().any(|t| t == instance) {
                return Err(ToolError::invalid(format!(
                    "`training_instance_type` {} is not one this deployment allows; use one of: {}",
                    quote(instance),
                    config.training_instance_types.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// The pipeline parameters to pass, under the pipeline's own names: only those given. An
    /// argument the pipeline takes no parameter for is refused rather than dropped.
    pub fn parameters(
        &self,
        names: &PipelineParameters,
    ) -> Result<Vec<(String, String)>, ToolError> {
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
            parameters.push((name.to_owned(), value));
        }
        Ok(parameters)
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingStatusArgs {
    /// The `execution_arn` returned by `trigger_training`.
    pub execution_arn: String,
    #[schemars(
        range(min = WAIT_SECS.min, max = WAIT_SECS.max),
        description = wait_description("a running run")
    )]
    pub wait_secs: Option<u32>,
}

/// A training status check to make: the run, and how long it may wait for the run to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub execution_arn: String,
    /// As asked; [`allowed_wait`] decides what the call may have.
    pub wait_secs: u32,
}

impl ToolArgs for CheckTrainingStatusArgs {
    type Valid = CheckRun;

    fn validate(self, _config: &ToolsConfig, _caller: &Caller) -> Result<CheckRun, ToolError> {
        let arn = self.execution_arn;
        if arn.starts_with("arn:")
            && arn.contains(":pipeline/")
            && arn.contains("/execution/")
            && arn.len() <= 2048
        {
            Ok(CheckRun {
                execution_arn: arn,
                wait_secs: WAIT_SECS.value(self.wait_secs)?,
            })
        } else {
            Err(ToolError::invalid(format!(
                "`execution_arn` {} is not a pipeline execution ARN (arn:aws:sagemaker:<region>:<account>:pipeline/<name>/execution/<id>)",
                quote(&arn)
            )))
        }
    }

    fn trace(valid: &CheckRun, span: &tracing::Span) {
        span.record("execution_arn", valid.execution_arn.as_str());
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainingStatusOutput {
    pub execution_arn: String,
    /// SageMaker's status: Executing, Stopping, Succeeded, Failed, Stopped or CompletedWithFailures.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The model package the run registered (its RegisterModel step's), once registered: pass
    /// it to `get_model_provenance`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
    /// The run's steps, in the order they started.
    pub steps: Vec<StepView>,
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
            status: described.status.as_str().to_owned(),
            failure_reason: described.failure_reason,
            model_package_arn,
            steps: steps.into_iter().map(StepView::from).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepView {
    pub name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The model package a RegisterModel step registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_package_arn: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingResultArgs {
    /// The `session_id` given to `trigger_training`.
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
    pub status: String,
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
            execution_arn: r.execution_arn,
            status: r.status.as_str().to_owned(),
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

impl From<StatusError> for ToolError {
    fn from(e: StatusError) -> Self {
        match e {
            StatusError::NotFound { .. } => ToolError::invalid(e.to_string()),
            StatusError::Describe(f) => ToolError::aws("SageMaker DescribePipelineExecution", &f),
            StatusError::Steps(f) => ToolError::aws("SageMaker ListPipelineExecutionSteps", &f),
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

// ---------------------------------------------------------------- get_model_provenance

pub const MAX_DEPTH: Bounds<u32> = Bounds {
    name: "max_depth",
    min: 1,
    max: 3,
    default: Some(2),
};

/// Which way to walk from the model package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ProvenanceDirection {
    #[default]
    Upstream,
    Downstream,
}

impl From<ProvenanceDirection> for Direction {
    fn from(d: ProvenanceDirection) -> Self {
        match d {
            ProvenanceDirection::Upstream => Direction::Upstream,
            ProvenanceDirection::Downstream => Direction::Downstream,
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetModelProvenanceArgs {
    /// The model package's ARN, as `check_training_status` reports it in `model_package_arn`:
    /// `arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>`.
    pub model_package_arn: String,
    /// `upstream` (the default): what built the model, such as its training job, data and image.
    /// `downstream`: what it went on to feed, such as its model group and deployments.
    pub direction: Option<ProvenanceDirection>,
    #[schemars(
        range(min = MAX_DEPTH.min, max = MAX_DEPTH.max),
        description = MAX_DEPTH.describe(
            "How many associations away from the model package to walk ({range})."
        )
    )]
    pub max_depth: Option<u32>,
}

impl ToolArgs for GetModelProvenanceArgs {
    type Valid = ProvenanceRequest;

    fn validate(
        self,
        _config: &ToolsConfig,
        _caller: &Caller,
    ) -> Result<ProvenanceRequest, ToolError> {
        let arn = self.model_package_arn.trim();
        if arn.len() > 2048 || !lineage::is_model_package_arn(arn) {
            let hint = if EntityKind::of_arn(arn) == Some(EntityKind::ModelPackageGroup) {
                "; that is a model package group: give one of its versions \
                 (model-package/<group>/<version>)"
            } else {
                ""
            };
            return Err(ToolError::invalid(format!(
                "`model_package_arn` {} is not a model package ARN \
                 (arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>){hint}",
                quote(arn)
            )));
        }
        Ok(ProvenanceRequest {
            model_package_arn: arn.to_owned(),
            direction: self.direction.unwrap_or_default().into(),
            max_depth: MAX_DEPTH.value(self.max_depth)?,
        })
    }

    fn trace(valid: &ProvenanceRequest, span: &tracing::Span) {
        span.record("model_package_arn", valid.model_package_arn.as_str());
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelProvenanceOutput {
    /// The model package asked about, as DescribeModelPackage says it.
    pub root: ProvenanceRoot,
    /// `upstream` or `downstream`, as walked.
    pub direction: String,
    pub max_depth: u32,
    /// The lineage entities found, nearest first, each once.
    pub nodes: Vec<ProvenanceNode>,
    /// The associations found, each from its source to its destination.
    /// They join the nodes to each other and to the package's lineage artifact (`root.lineage_arns`).
    pub edges: Vec<ProvenanceEdge>,
    /// True when the walk stopped at its limits (50 entities, 25 pages of associations).
    /// There was more left to read: ask again with a smaller `max_depth`.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceRoot {
    pub arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// Pending, InProgress, Completed, Failed or Deleting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Approved, Rejected or PendingManualApproval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// What made the package, as it says itself (`MetadataProperties.GeneratedBy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_by: Option<String>,
    /// The pipeline run that made it, when `generated_by` is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_execution: Option<ExecutionView>,
    /// The lineage artifacts that stand for the package (their source URI is its ARN).
    /// The walk starts from them.
    pub lineage_arns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionView {
    pub execution_arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The session that triggered the run, shown only to the caller who triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why the run could not be described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_described: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceNode {
    pub arn: String,
    /// `artifact`, `action`, `context`, `trial_component`, `experiment`, `model_package`, `pipeline_execution`.
    /// Or another SageMaker resource type, as its ARN spells it.
    pub kind: String,
    /// Associations away from the model package.
    pub depth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The entity's type as its association gives it: `Model`, `SageMakerTrainingJob`, `ModelGroup`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage_type: Option<String>,
    /// An artifact's type (DescribeArtifact): `DataSet`, `Model`, `Image`, `ModelPackage`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// What an artifact stands for: an S3 URI, an image, a model package's ARN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_uri: Option<String>,
    /// A pipeline execution's pipeline (DescribePipelineExecution).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_name: Option<String>,
    /// A pipeline execution's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The session that triggered a pipeline execution, shown only to the caller who triggered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why the entity could not be described; it is shown with what its association said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_described: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceEdge {
    pub source_arn: String,
    pub destination_arn: String,
    /// ContributedTo, AssociatedWith, DerivedFrom, Produced or SameAs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub association_type: Option<String>,
}

impl ExecutionView {
    fn new(execution_arn: String, described: Described) -> Self {
        let mut view = ExecutionView {
            execution_arn,
            pipeline_name: None,
            status: None,
            failure_reason: None,
            session_id: None,
            not_described: None,
        };
        match described {
            Described::PipelineExecution(run) => {
                view.pipeline_name = run.pipeline_name;
                view.status = Some(run.status);
                view.failure_reason = run.failure_reason;
                view.session_id = run.session_id;
            }
            Described::Failed { operation, failure } => {
                view.not_described = Some(wording::not_described(operation, &failure));
            }
            Described::Artifact(_) | Described::FromAssociation => {}
        }
        view
    }
}

impl From<Found> for ProvenanceNode {
    fn from(found: Found) -> Self {
        let Found { entity, described } = found;
        let mut node = ProvenanceNode {
            arn: entity.arn,
            kind: entity
                .kind
                .as_ref()
                .map_or("other", EntityKind::as_str)
                .to_owned(),
            depth: entity.depth,
            name: entity.name,
            lineage_type: entity.lineage_type,
            artifact_type: None,
            source_uri: None,
            pipeline_name: None,
            status: None,
            session_id: None,
            not_described: None,
        };
        match described {
            Described::Artifact(artifact) => {
                node.name = artifact.name.or(node.name);
                node.artifact_type = artifact.artifact_type;
                node.source_uri = artifact.source_uri;
            }
            Described::PipelineExecution(run) => {
                node.pipeline_name = run.pipeline_name;
                node.status = Some(run.status);
                node.session_id = run.session_id;
            }
            Described::Failed { operation, failure } => {
                node.not_described = Some(wording::not_described(operation, &failure));
            }
            Described::FromAssociation => {}
        }
        node
    }
}

impl ModelProvenanceOutput {
    pub fn new(found: Provenance, request: &ProvenanceRequest) -> Self {
        let message = wording::provenance_note(
            request.direction,
            !found.lineage_arns.is_empty(),
            found.found.len(),
            found.truncated,
        );
        let package = found.model_package;
        ModelProvenanceOutput {
            root: ProvenanceRoot {
                arn: package.arn,
                group_name: package.group_name,
                version: package.version,
                status: package.status,
                approval_status: package.approval_status,
                created_at: package.created_at,
                generated_by: package.generated_by,
                pipeline_execution: found
                    .generated_by
                    .map(|(arn, described)| ExecutionView::new(arn, described)),
                lineage_arns: found.lineage_arns,
            },
            direction: request.direction.as_str().to_owned(),
            max_depth: request.max_depth,
            nodes: found.found.into_iter().map(ProvenanceNode::from).collect(),
            edges: found
                .edges
                .into_iter()
                .map(|e| ProvenanceEdge {
                    source_arn: e.source_arn,
                    destination_arn: e.destination_arn,
                    association_type: e.association_type,
                })
                .collect(),
            truncated: found.truncated,
            message,
        }
    }
}

impl From<ProvenanceError> for ToolError {
    fn from(e: ProvenanceError) -> Self {
        match e {
            ProvenanceError::NotFound { .. } => ToolError::invalid(e.to_string()),
            ProvenanceError::Aws { operation, failure } => {
                ToolError::aws(&format!("SageMaker {operation}"), &failure)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use shared::domain::caller::Principal;

    fn caller() -> Caller {
        Principal::Local.caller()
    }

    fn owner() -> Owner {
        caller().owner
    }

    fn test_config() -> ToolsConfig {
        let vars = [
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "ep"),
            ("PIPELINE_NAME", "pl"),
        ];
        ToolsConfig::from_env(&shared::config::Env::from_lookup(move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }))
        .unwrap()
    }

    fn args(v: Value) -> SubmitJobArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_document_becomes_the_inputs_of_the_uploaded_object() {
        let s = args(json!({"document": "hello", "options": {"top_k": 3}}))
            .submission(&owner(), "ep", "b", 3600)
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&s.input).unwrap(),
            json!({"inputs": "hello", "parameters": {"top_k": 3}})
        );
        assert_eq!(
            (s.invocation_timeout_secs, s.request_ttl_secs),
            (300, 3600),
            "the deployment's default TTL"
        );
        assert_eq!(s.inference_id.len(), 36);
        assert_eq!(
            s.input_location.to_string(),
            format!("s3://b/inputs/{}.json", s.inference_id)
        );
        let keyed = args(json!({"document": "hello", "idempotency_key": "k"}))
            .submission(&owner(), "ep", "b", 3600)
            .unwrap();
        assert_eq!(
            keyed.inference_id,
            shared::domain::job::inference_id_for_key(&owner(), "ep", "k")
        );
        let p = args(json!({"payload": {"a": 1}}))
            .submission(&owner(), "ep", "b", 3600)
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&p.input).unwrap(),
            json!({"inputs": {"a": 1}})
        );
    }

    #[test]
    fn each_bad_argument_is_named() {
        let cases = [
            (json!({}), "give one of `document`"),
            (json!({"document": "a", "payload": {}}), "not both"),
            (json!({"document": "  "}), "`document` is empty"),
            (
                json!({"document": "a", "invocation_timeout_secs": 0}),
                "`invocation_timeout_secs` is 0",
            ),
            (
                json!({"document": "a", "invocation_timeout_secs": 3601}),
                "`invocation_timeout_secs` is 3601",
            ),
            (
                json!({"document": "a", "request_ttl_secs": 59}),
                "`request_ttl_secs` is 59",
            ),
            (
                json!({"document": "a", "request_ttl_secs": 21601}),
                "`request_ttl_secs` is 21601",
            ),
            (
                json!({"document": "a", "invocation_timeout_secs": 400, "request_ttl_secs": 600}),
                "at least twice",
            ),
            (
                json!({"document": "a", "idempotency_key": ""}),
                "`idempotency_key`",
            ),
        ];
        for (a, expected) in cases {
            let err = args(a.clone())
                .submission(&owner(), "ep", "b", 3600)
                .unwrap_err();
            assert!(err.message.contains(expected), "{a}: {err}");
        }
        let big = args(json!({"document": "x".repeat(MAX_INPUT_BYTES)}))
            .submission(&owner(), "ep", "b", 3600)
            .unwrap_err();
        assert!(big.message.contains("the limit is 4194304 bytes"), "{big}");
        assert!(
            serde_json::from_value::<SubmitJobArgs>(json!({"document": "a", "endpoint": "x"}))
                .is_err()
        );
    }

    #[test]
    fn training_parameters_are_only_those_given_and_checked() {
        let t: TriggerTrainingArgs =
            serde_json::from_value(json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"}))
                .unwrap();
        let names = PipelineParameters::default();
        assert_eq!(
            t.parameters(&names).unwrap(),
            vec![("InputDataUri".to_owned(), "s3://b/train/".to_owned())]
        );
        let all: TriggerTrainingArgs = serde_json::from_value(
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s-1",
            "max_epochs": 5, "accuracy_threshold": 0.9, "training_instance_type": "ml.m5.xlarge"}),
        )
        .unwrap();
        assert_eq!(all.parameters(&names).unwrap().len(), 4);
        for (bad, expected) in [
            (
                json!({"input_data_uri": "/tmp/x", "session_id": "s"}),
                "input_data_uri",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "a;session_id=b"}),
                "session_id",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": ""}),
                "session_id",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": 0}),
                "max_epochs",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "accuracy_threshold": 1.5}),
                "accuracy_threshold",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "training_instance_type": "m5.large"}),
                "training_instance_type",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_parallel_steps": 0}),
                "max_parallel_steps",
            ),
            (
                json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "idempotency_key": ""}),
                "idempotency_key",
            ),
        ] {
            let t: TriggerTrainingArgs = serde_json::from_value(bad.clone()).unwrap();
            let config = test_config();
            assert!(
                t.validate(&config, &caller())
                    .unwrap_err()
                    .message
                    .contains(expected),
                "{bad}"
            );
        }
    }

    #[test]
    fn aws_errors_say_which_call_and_whether_to_retry() {
        let throttled = AwsFailure {
            code: Some("ThrottlingException".into()),
            message: "Rate exceeded".into(),
            retryable: true,
            ambiguous: false,
        };
        let e = ToolError::aws("SageMaker InvokeEndpointAsync", &throttled);
        assert_eq!(e.message, "SageMaker InvokeEndpointAsync failed (ThrottlingException). This is transient (throttling or a service error): retrying the same call may succeed.");
        assert!(
            !e.message.contains("Rate exceeded"),
            "AWS's text stays in the log"
        );
        let missing = AwsFailure {
            code: Some("ValidationError".into()),
            message: "Endpoint x not found".into(),
            retryable: false,
            ambiguous: false,
        };
        assert!(ToolError::aws("SageMaker InvokeEndpointAsync", &missing)
            .message
            .ends_with("Retrying the same call will not help."));
    }
}
