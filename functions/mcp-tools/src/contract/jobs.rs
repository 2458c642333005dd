//! submit_job and check_job_status: their arguments, results and errors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::ToolsConfig;

use super::common::*;
use super::waits::{wait_description, StatusCheck, WAIT_SECS};
use crate::wording;
use domain::caller::{Caller, Owner};
use domain::ids::InferenceId;
use domain::job::{Job, JobStatus, Submission};
use usecases::check::{CheckError, JobReport};
use usecases::submit::{SubmitError, Submitted};

/// Largest input `submit_job` accepts. A Function URL request is at most 6 MB, and the input
/// travels inside a JSON-RPC envelope with escaping.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

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
/// A job's status, as both tools report it: its schema lists the four words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum JobState {
    Pending,
    Completed,
    Failed,
    Cancelled,
}

impl From<JobStatus> for JobState {
    fn from(status: JobStatus) -> Self {
        match status {
            JobStatus::Pending => JobState::Pending,
            JobStatus::Completed => JobState::Completed,
            JobStatus::Failed => JobState::Failed,
            JobStatus::Cancelled => JobState::Cancelled,
        }
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
    pub status: JobState,
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
        let submission = self.submission(
            &caller.owner,
            &config.async_endpoint_name,
            &config.io_bucket,
            config.default_request_ttl_secs,
        )?;
        Ok(submission.with_inline_max(config.inline_input_max_bytes, &config.io_bucket))
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
        let (invocation_timeout_secs, request_ttl_secs) = job_timings(
            self.invocation_timeout_secs
                .or(INVOCATION_TIMEOUT_SECS.default),
            self.request_ttl_secs.or(Some(default_request_ttl_secs)),
        )?;
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

/// How long the model may take and the request may wait, each in SageMaker's bounds, the wait
/// at least twice the run.
pub fn job_timings(
    invocation_timeout_secs: Option<u32>,
    request_ttl_secs: Option<u32>,
) -> Result<(u32, u32), ToolError> {
    let invocation_timeout_secs = INVOCATION_TIMEOUT_SECS.value(invocation_timeout_secs)?;
    let request_ttl_secs = REQUEST_TTL_SECS.value(request_ttl_secs)?;
    if u64::from(request_ttl_secs) < 2 * u64::from(invocation_timeout_secs) {
        return Err(ToolError::invalid(format!(
            "`request_ttl_secs` ({request_ttl_secs}) must be at least twice `invocation_timeout_secs` \
             ({invocation_timeout_secs}), or the request can expire from the queue while the model runs"
        )));
    }
    Ok((invocation_timeout_secs, request_ttl_secs))
}

impl From<Submitted> for SubmitJobOutput {
    fn from(s: Submitted) -> Self {
        SubmitJobOutput {
            inference_id: s.inference_id.into(),
            status: s.status.into(),
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
            SubmitError::InputConflict => ToolError::invalid(wording::INPUT_CONFLICT),
            SubmitError::Refused {
                inference_id,
                reason,
                failure,
            } => ToolError::invalid(wording::submit_refused(
                &inference_id,
                &reason,
                failure.retryable,
            )),
        }
    }
}

// ---------------------------------------------------------------- check_job_status

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckJobStatusArgs {
    /// The `inference_id` the tool that started the job returned.
    pub inference_id: String,
    #[schemars(
        range(min = WAIT_SECS.min, max = WAIT_SECS.max),
        description = wait_description("a pending job")
    )]
    pub wait_secs: Option<u32>,
}

impl ToolArgs for CheckJobStatusArgs {
    type Valid = StatusCheck<InferenceId>;

    fn validate(
        self,
        _config: &ToolsConfig,
        _caller: &Caller,
    ) -> Result<StatusCheck<InferenceId>, ToolError> {
        // Only that it is wrong is said: the id may be anything a caller sent.
        let id = InferenceId::parse(&self.inference_id).map_err(|_| {
            ToolError::invalid("`inference_id` must be the non-empty id returned by submit_job")
        })?;
        Ok(StatusCheck {
            id,
            wait_secs: WAIT_SECS.value(self.wait_secs)?,
        })
    }

    fn trace(valid: &StatusCheck<InferenceId>, span: &tracing::Span) {
        span.record("inference_id", valid.id.as_str());
    }

    fn wait_secs(valid: &StatusCheck<InferenceId>) -> u32 {
        valid.wait_secs
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobStatusOutput {
    pub inference_id: String,
    /// `pending`, `completed`, `failed` or `cancelled`.
    pub status: JobState,
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
        let expired = (status == domain::job::JobStatus::Failed)
            .then(|| {
                failure_reason
                    .as_deref()
                    .filter(|r| wording::expired_in_queue(r))
            })
            .flatten()
            .map(|_| wording::EXPIRED_IN_QUEUE.to_owned());
        JobStatusOutput {
            inference_id: inference_id.into(),
            status: status.into(),
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
            CheckError::NotFound {
                inference_id,
                result_ttl_secs,
            } => ToolError::invalid(wording::job_not_found(&inference_id, result_ttl_secs)),
        }
    }
}
