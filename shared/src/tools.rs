//! The MCP tools' contract and pure logic: typed arguments (their JSON Schema is derived),
//! typed results (the `outputSchema`), validation, job ids, and the views of stored items.
//! The AWS calls are made by mcp-tools through the adapters; nothing here touches AWS.

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::aws::AwsFailure;

/// Largest input `submit_job` accepts. A Function URL request is at most 6 MB, and the input
/// travels inside a JSON-RPC envelope with escaping.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// How long a presigned result URL stays valid.
pub const RESULT_URL_EXPIRY_SECS: u64 = 900;
/// Grace after a request's TTL and invocation timeout before a pending job is called lost.
pub const LOST_GRACE_SECS: i64 = 120;
pub const MAX_WAIT_SECS: u32 = 20;

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

    /// An AWS call that failed, saying which one and whether retrying can help.
    pub fn aws(operation: &str, failure: &AwsFailure) -> Self {
        let advice = if failure.retryable {
            "This is transient (throttling or a service error): retrying the same call may succeed."
        } else {
            "Retrying the same call will not help."
        };
        let code = failure
            .code
            .as_deref()
            .map(|c| format!("{c}: "))
            .unwrap_or_default();
        Self {
            message: format!("{operation} failed: {code}{}. {advice}", failure.message),
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
    /// Seconds the model may take once it starts on the request (1 to 3600, default 300).
    #[schemars(range(min = 1, max = 3600))]
    pub invocation_timeout_secs: Option<u32>,
    /// Seconds the request may wait in the endpoint's queue before SageMaker drops it
    /// (60 to 21600, default 600; at least twice `invocation_timeout_secs`).
    #[schemars(range(min = 60, max = 21600))]
    pub request_ttl_secs: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitJobOutput {
    /// The handle to pass to `check_job_status`.
    pub inference_id: String,
    /// `pending` for a new job; a replayed `idempotency_key` returns the job's current status.
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
}

/// A validated submission, ready to be stored and invoked.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidSubmission {
    pub inference_id: String,
    /// The input object as uploaded: `{"inputs": <document or payload>, "parameters": <options>}`,
    /// the request shape of SageMaker's Hugging Face and most JSON model containers.
    pub input: Vec<u8>,
    pub input_sha256: String,
    pub invocation_timeout_secs: u32,
    pub request_ttl_secs: u32,
    pub idempotency_key: Option<String>,
}

impl SubmitJobArgs {
    pub fn validate(self, endpoint_name: &str) -> Result<ValidSubmission, ToolError> {
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
        let invocation_timeout_secs = self.invocation_timeout_secs.unwrap_or(300);
        if !(1..=3600).contains(&invocation_timeout_secs) {
            return Err(ToolError::invalid(format!(
                "`invocation_timeout_secs` is {invocation_timeout_secs}; it must be from 1 to 3600"
            )));
        }
        let request_ttl_secs = self.request_ttl_secs.unwrap_or(600);
        if !(60..=21600).contains(&request_ttl_secs) {
            return Err(ToolError::invalid(format!(
                "`request_ttl_secs` is {request_ttl_secs}; it must be from 60 to 21600"
            )));
        }
        if u64::from(request_ttl_secs) < 2 * u64::from(invocation_timeout_secs) {
            return Err(ToolError::invalid(format!(
                "`request_ttl_secs` ({request_ttl_secs}) must be at least twice `invocation_timeout_secs` \
                 ({invocation_timeout_secs}), or the request can expire from the queue while the model runs"
            )));
        }
        let idempotency_key = match self.idempotency_key {
            Some(k) if k.is_empty() || k.len() > 256 => {
                return Err(ToolError::invalid(
                    "`idempotency_key` must be 1 to 256 characters",
                ))
            }
            other => other,
        };
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
        let input_sha256 = hex(&Sha256::digest(&input));
        let inference_id = match &idempotency_key {
            Some(key) => inference_id_for_key(endpoint_name, key),
            None => uuid::Uuid::new_v4().to_string(),
        };
        Ok(ValidSubmission {
            inference_id,
            input,
            input_sha256,
            invocation_timeout_secs,
            request_ttl_secs,
            idempotency_key,
        })
    }
}

/// The same key (for the same endpoint) always gives the same id, shaped like a UUID.
pub fn inference_id_for_key(endpoint_name: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("submit_job\0{endpoint_name}\0{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes)
        .into_uuid()
        .to_string()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `ttl` of a pending item: it must outlive the request's time in the queue and on the
/// model, then keep the outcome for `result_ttl_secs`.
pub fn pending_ttl(now: DateTime<Utc>, s: &ValidSubmission, result_ttl_secs: u64) -> i64 {
    crate::time::ttl_after(
        now,
        u64::from(s.request_ttl_secs) + u64::from(s.invocation_timeout_secs) + result_ttl_secs,
    )
}

// ---------------------------------------------------------------- check_job_status

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckJobStatusArgs {
    /// The `inference_id` returned by `submit_job`.
    pub inference_id: String,
    /// Wait up to this many seconds for a pending job to finish (0 to 20, default 0).
    #[schemars(range(min = 0, max = 20))]
    pub wait_secs: Option<u32>,
}

impl CheckJobStatusArgs {
    pub fn validate(&self) -> Result<u32, ToolError> {
        if self.inference_id.trim().is_empty() || self.inference_id.len() > 1024 {
            return Err(ToolError::invalid(
                "`inference_id` must be the non-empty id returned by submit_job",
            ));
        }
        let wait = self.wait_secs.unwrap_or(0);
        if wait > MAX_WAIT_SECS {
            return Err(ToolError::invalid(format!(
                "`wait_secs` is {wait}; it must be from 0 to {MAX_WAIT_SECS}"
            )));
        }
        Ok(wait)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobStatusOutput {
    pub inference_id: String,
    /// `pending`, `completed` or `failed`.
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

/// A results-table item as mcp-tools reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredJob {
    pub inference_id: String,
    pub status: String,
    pub submitted_at: Option<String>,
    pub completed_at: Option<String>,
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
    pub failure_reason: Option<String>,
    pub failure_excerpt: Option<String>,
    pub result: Option<Value>,
    pub ttl: Option<i64>,
    pub request_ttl_secs: Option<u64>,
    pub invocation_timeout_secs: Option<u64>,
    pub input_sha256: Option<String>,
    pub submission_failed: bool,
}

impl StoredJob {
    /// DynamoDB deletes expired items only eventually: an item past its `ttl` is absent.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.ttl.is_some_and(|ttl| ttl <= now.timestamp())
    }

    /// SageMaker drops a request whose TTL passes in the queue, and without an error topic
    /// nobody hears of it: a pending job past TTL + timeout + grace is probably lost.
    pub fn probably_lost(&self, now: DateTime<Utc>) -> bool {
        let Some(submitted) = self
            .submitted_at
            .as_deref()
            .and_then(crate::time::parse_rfc3339)
        else {
            return false;
        };
        let budget =
            self.request_ttl_secs.unwrap_or(600) + self.invocation_timeout_secs.unwrap_or(300);
        self.status == "pending"
            && now > submitted + Duration::seconds(budget as i64 + LOST_GRACE_SECS)
    }

    pub fn view(&self, now: DateTime<Utc>, result_url: Option<String>) -> JobStatusOutput {
        let probably_lost = self.probably_lost(now);
        let message = if probably_lost {
            Some(
                "No outcome has arrived long after the request's TTL and invocation timeout. SageMaker drops \
                 requests that expire in its queue, and without an error topic nobody is told: submit the job again."
                    .to_owned(),
            )
        } else if self.status == "completed" && self.result.is_none() && result_url.is_none() {
            Some("The output is not inline and no download URL could be made for it.".to_owned())
        } else {
            None
        };
        JobStatusOutput {
            inference_id: self.inference_id.clone(),
            status: self.status.clone(),
            result: self.result.clone(),
            result_url: if self.result.is_none() {
                result_url
            } else {
                None
            },
            failure_reason: self.failure_reason.clone(),
            failure_excerpt: self.failure_excerpt.clone(),
            submitted_at: self.submitted_at.clone(),
            completed_at: self.completed_at.clone(),
            probably_lost,
            message,
        }
    }
}

/// Delays between reads while long-polling: gentle at first, then every 2 s.
pub fn poll_delay(attempt: u32) -> std::time::Duration {
    std::time::Duration::from_millis(match attempt {
        0 => 250,
        1 => 500,
        2 => 1000,
        _ => 2000,
    })
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
    /// Pipeline parameter MaxEpochs (1 to 1000).
    #[schemars(range(min = 1, max = 1000))]
    pub max_epochs: Option<u32>,
    /// Pipeline parameter AccuracyThreshold (0 to 1).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub accuracy_threshold: Option<f64>,
    /// Pipeline parameter TrainingInstanceType, e.g. `ml.m5.xlarge`.
    pub training_instance_type: Option<String>,
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
            "`session_id` {session_id:?} must be 1 to 128 letters, digits or `_ . : -`"
        )))
    }
}

impl TriggerTrainingArgs {
    /// The pipeline parameters to pass: only those given.
    pub fn parameters(&self) -> Result<Vec<(&'static str, String)>, ToolError> {
        validate_session_id(&self.session_id)?;
        let uri = self.input_data_uri.trim();
        if uri.parse::<crate::s3_location::S3Location>().is_err()
            && !(uri.starts_with("s3://") && uri.len() > 5 && !uri[5..].starts_with('/'))
        {
            return Err(ToolError::invalid(format!(
                "`input_data_uri` {uri:?} is not an s3://bucket/prefix URI"
            )));
        }
        let mut params = vec![("InputDataUri", uri.to_owned())];
        if let Some(epochs) = self.max_epochs {
            if !(1..=1000).contains(&epochs) {
                return Err(ToolError::invalid(format!(
                    "`max_epochs` is {epochs}; it must be from 1 to 1000"
                )));
            }
            params.push(("MaxEpochs", epochs.to_string()));
        }
        if let Some(threshold) = self.accuracy_threshold {
            if !(0.0..=1.0).contains(&threshold) {
                return Err(ToolError::invalid(format!(
                    "`accuracy_threshold` is {threshold}; it must be from 0 to 1"
                )));
            }
            params.push(("AccuracyThreshold", threshold.to_string()));
        }
        if let Some(instance) = &self.training_instance_type {
            let ok = instance.starts_with("ml.")
                && instance.len() <= 64
                && instance
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.');
            if !ok {
                return Err(ToolError::invalid(format!(
                    "`training_instance_type` {instance:?} is not a SageMaker instance type such as ml.m5.xlarge"
                )));
            }
            params.push(("TrainingInstanceType", instance.clone()));
        }
        Ok(params)
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingStatusArgs {
    /// The `execution_arn` returned by `trigger_training`.
    pub execution_arn: String,
}

impl CheckTrainingStatusArgs {
    pub fn validate(&self) -> Result<(), ToolError> {
        let arn = &self.execution_arn;
        if arn.starts_with("arn:")
            && arn.contains(":pipeline/")
            && arn.contains("/execution/")
            && arn.len() <= 2048
        {
            Ok(())
        } else {
            Err(ToolError::invalid(format!(
                "`execution_arn` {arn:?} is not a pipeline execution ARN (arn:aws:sagemaker:<region>:<account>:pipeline/<name>/execution/<id>)"
            )))
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrainingStatusOutput {
    pub execution_arn: String,
    /// SageMaker's status: Executing, Stopping, Succeeded, Failed, Stopped or CompletedWithFailures.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The run's steps, in the order they started.
    pub steps: Vec<StepView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepView {
    pub name: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckTrainingResultArgs {
    /// The `session_id` given to `trigger_training`.
    pub session_id: String,
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
    #[serde(skip)]
    pub ttl: Option<i64>,
}

/// Unexpired runs, newest first (by start, then by last update).
pub fn newest_runs(mut runs: Vec<RunView>, now: DateTime<Utc>) -> Vec<RunView> {
    runs.retain(|r| r.ttl.is_none_or(|ttl| ttl > now.timestamp()));
    runs.sort_by(|a, b| {
        (b.started_at.as_deref(), b.updated_at.as_deref())
            .cmp(&(a.started_at.as_deref(), a.updated_at.as_deref()))
    });
    runs
}

impl From<crate::store::StoreError> for ToolError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::Aws {
                operation,
                table,
                failure,
            } => ToolError::aws(&format!("DynamoDB {operation} on table {table}"), &failure),
            rejected @ crate::store::StoreError::Rejected { .. } => {
                ToolError::invalid(rejected.to_string())
            }
        }
    }
}

impl From<crate::objects::ObjectError> for ToolError {
    fn from(e: crate::objects::ObjectError) -> Self {
        match e {
            crate::objects::ObjectError::Aws { location, failure } => {
                ToolError::aws(&format!("S3 request for {location}"), &failure)
            }
            body @ crate::objects::ObjectError::Body { .. } => ToolError::invalid(body.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> SubmitJobArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_document_becomes_the_inputs_of_the_uploaded_object() {
        let s = args(json!({"document": "hello", "options": {"top_k": 3}}))
            .validate("ep")
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&s.input).unwrap(),
            json!({"inputs": "hello", "parameters": {"top_k": 3}})
        );
        assert_eq!((s.invocation_timeout_secs, s.request_ttl_secs), (300, 600));
        assert_eq!(s.inference_id.len(), 36);
        let p = args(json!({"payload": {"a": 1}})).validate("ep").unwrap();
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
            let err = args(a.clone()).validate("ep").unwrap_err();
            assert!(err.message.contains(expected), "{a}: {err}");
        }
        let big = args(json!({"document": "x".repeat(MAX_INPUT_BYTES)}))
            .validate("ep")
            .unwrap_err();
        assert!(big.message.contains("the limit is 4194304 bytes"), "{big}");
        assert!(
            serde_json::from_value::<SubmitJobArgs>(json!({"document": "a", "endpoint": "x"}))
                .is_err()
        );
    }

    #[test]
    fn the_same_key_gives_the_same_id_per_endpoint() {
        let a = args(json!({"document": "a", "idempotency_key": "k1"}))
            .validate("ep")
            .unwrap();
        let b = args(json!({"document": "b", "idempotency_key": "k1"}))
            .validate("ep")
            .unwrap();
        assert_eq!(a.inference_id, b.inference_id);
        assert_ne!(a.input_sha256, b.input_sha256);
        assert_ne!(
            inference_id_for_key("ep", "k1"),
            inference_id_for_key("other", "k1")
        );
        assert_ne!(
            inference_id_for_key("ep", "k1"),
            inference_id_for_key("ep", "k2")
        );
    }

    #[test]
    fn pending_jobs_become_probably_lost_after_ttl_timeout_and_grace() {
        let job = StoredJob {
            inference_id: "j".into(),
            status: "pending".into(),
            submitted_at: Some("2026-11-20T10:00:00.000Z".into()),
            request_ttl_secs: Some(600),
            invocation_timeout_secs: Some(300),
            ..Default::default()
        };
        let at = |s: &str| crate::time::parse_rfc3339(s).unwrap();
        assert!(!job.view(at("2026-11-20T10:17:00Z"), None).probably_lost);
        let late = job.view(at("2026-11-20T10:17:01Z"), None);
        assert!(late.probably_lost && late.message.unwrap().contains("submit the job again"));
        let done = StoredJob {
            status: "completed".into(),
            ..job
        };
        assert!(!done.view(at("2026-11-21T00:00:00Z"), None).probably_lost);
    }

    #[test]
    fn expired_items_are_absent() {
        let now = crate::time::parse_rfc3339("2026-11-20T10:00:00Z").unwrap();
        let job = |ttl| StoredJob {
            ttl,
            ..Default::default()
        };
        assert!(job(Some(now.timestamp())).is_expired(now));
        assert!(!job(Some(now.timestamp() + 1)).is_expired(now));
        assert!(!job(None).is_expired(now));
    }

    #[test]
    fn training_parameters_are_only_those_given_and_checked() {
        let t: TriggerTrainingArgs =
            serde_json::from_value(json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"}))
                .unwrap();
        assert_eq!(
            t.parameters().unwrap(),
            vec![("InputDataUri", "s3://b/train/".to_owned())]
        );
        let all: TriggerTrainingArgs =
            serde_json::from_value(json!({"input_data_uri": "s3://b/t", "session_id": "s-1",
            "max_epochs": 5, "accuracy_threshold": 0.9, "training_instance_type": "ml.m5.xlarge"}))
            .unwrap();
        assert_eq!(all.parameters().unwrap().len(), 4);
        for (bad, expected) in [
            (
                json!({"input_data_uri": "/tmp/x", "session_id": "s"}),
                "input_data_uri",
            ),
            (
                json!({"input_data_uri": "s3://b/t", "session_id": "a;session_id=b"}),
                "session_id",
            ),
            (
                json!({"input_data_uri": "s3://b/t", "session_id": ""}),
                "session_id",
            ),
            (
                json!({"input_data_uri": "s3://b/t", "session_id": "s", "max_epochs": 0}),
                "max_epochs",
            ),
            (
                json!({"input_data_uri": "s3://b/t", "session_id": "s", "accuracy_threshold": 1.5}),
                "accuracy_threshold",
            ),
            (
                json!({"input_data_uri": "s3://b/t", "session_id": "s", "training_instance_type": "m5.large"}),
                "training_instance_type",
            ),
        ] {
            let t: TriggerTrainingArgs = serde_json::from_value(bad.clone()).unwrap();
            assert!(
                t.parameters().unwrap_err().message.contains(expected),
                "{bad}"
            );
        }
    }

    #[test]
    fn runs_are_newest_first_without_expired_ones() {
        let now = crate::time::parse_rfc3339("2026-11-20T12:00:00Z").unwrap();
        let run = |arn: &str, started: Option<&str>, ttl: i64| RunView {
            execution_arn: arn.into(),
            status: "Succeeded".into(),
            started_at: started.map(Into::into),
            ended_at: None,
            failure_reason: None,
            updated_at: Some("2026-11-20T11:00:00Z".into()),
            ttl: Some(ttl),
        };
        let runs = newest_runs(
            vec![
                run("old", Some("2026-11-20T09:00:00Z"), now.timestamp() + 10),
                run("new", Some("2026-11-20T10:00:00Z"), now.timestamp() + 10),
                run("expired", Some("2026-11-20T11:00:00Z"), now.timestamp()),
            ],
            now,
        );
        assert_eq!(
            runs.iter()
                .map(|r| r.execution_arn.as_str())
                .collect::<Vec<_>>(),
            ["new", "old"]
        );
    }

    #[test]
    fn aws_errors_say_which_call_and_whether_to_retry() {
        let throttled = AwsFailure {
            code: Some("ThrottlingException".into()),
            message: "Rate exceeded".into(),
            retryable: true,
        };
        let e = ToolError::aws("SageMaker InvokeEndpointAsync", &throttled);
        assert_eq!(e.message, "SageMaker InvokeEndpointAsync failed: ThrottlingException: Rate exceeded. This is transient (throttling or a service error): retrying the same call may succeed.");
        let missing = AwsFailure {
            code: Some("ValidationError".into()),
            message: "Endpoint x not found".into(),
            retryable: false,
        };
        assert!(ToolError::aws("SageMaker InvokeEndpointAsync", &missing)
            .message
            .ends_with("Retrying the same call will not help."));
    }
}
