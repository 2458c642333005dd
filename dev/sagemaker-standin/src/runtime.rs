//! The async endpoint runtime: `POST /endpoints/{name}/async-invocations` (restJson, as
//! SageMaker Runtime's InvokeEndpointAsync), the job run by the local model, its outcome in S3 and
//! the notification.

use std::fmt;
use std::str::FromStr;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use crate::answer::{millis, runtime_error};
use crate::control_plane::endpoints;
use crate::state::control::{Fault, Invocation};
use crate::state::{AppState, ACCOUNT};
use crate::{delivery, model};

/// SageMaker includes responses up to 128 KB in the success notification.
const MAX_INCLUDED_RESPONSE_BYTES: usize = 128 * 1024;

/// The most InvokeEndpointAsync takes inline, as the request's Body.
const MAX_INLINE_BODY_BYTES: usize = 128_000;

/// How much of a body is read at all: enough to say how far over the limit a caller went,
/// not so much that a runaway test eats the memory.
const MAX_READ_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Where an endpoint the control plane did not create puts the outcomes of inline inputs: the
/// local stack's IO bucket (scripts/local_stack.py), as its topics are the local stack's too.
const LOCAL_STACK_IO_BUCKET: &str = "mcp-sagemaker-async-io";

/// `s3://bucket/key`. The stand-in's own, so it builds without the product crate.
#[derive(Debug, Clone)]
pub struct S3Location {
    pub bucket: String,
    pub key: String,
}

impl FromStr for S3Location {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        s.strip_prefix("s3://")
            .and_then(|rest| rest.split_once('/'))
            .filter(|(bucket, key)| !bucket.is_empty() && !key.is_empty())
            .map(|(bucket, key)| S3Location {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            })
            .ok_or_else(|| format!("{s:?} is not an S3 location of the form s3://bucket/key"))
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// A request's input: in S3 (`InputLocation`), read when the job runs, or inline (`Body`).
pub enum Input {
    InputLocation(S3Location),
    Body(Bytes),
}

impl Input {
    async fn read(&self, state: &AppState) -> Result<Bytes, String> {
        let location = match self {
            Input::Body(body) => return Ok(body.clone()),
            Input::InputLocation(location) => location,
        };
        let object = state
            .s3
            .get_object()
            .bucket(&location.bucket)
            .key(&location.key)
            .send()
            .await
            .map_err(|e| format!("could not read {location}: {e}"))?;
        object
            .body
            .collect()
            .await
            .map(|bytes| bytes.into_bytes())
            .map_err(|e| format!("reading the input failed: {e}"))
    }
}

/// Why a call's input is refused, before any fault applies: SageMaker takes the input inline
/// or from S3, never both, and inline only up to 128,000 bytes.
fn input_of(location: Option<&str>, body: Bytes) -> Result<Input, String> {
    match (location, body.is_empty()) {
        (Some(_), false) => Err(
            "1 validation error detected: Body and InputLocation are exclusive: give the input \
             inline or in S3, not both"
                .into(),
        ),
        (None, false) if body.len() > MAX_INLINE_BODY_BYTES => Err(body_too_large(body.len())),
        (None, false) => Ok(Input::Body(body)),
        (Some(location), true) => location.parse().map(Input::InputLocation),
        (None, true) => Err("1 validation error detected: InputLocation must not be null".into()),
    }
}

fn body_too_large(got: impl fmt::Display) -> String {
    format!("1 validation error detected: the inline Body is limited to 128,000 bytes (got {got})")
}

pub async fn invoke_async(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let caller_id = header("x-amzn-sagemaker-inference-id");
    let input_location = header("x-amzn-sagemaker-inputlocation");
    // The SDK sends ContentType and Accept in these headers; the HTTP Content-Type of the
    // Body is always application/octet-stream.
    let content_type = header("x-amzn-sagemaker-content-type");
    let accept = header("x-amzn-sagemaker-accept");
    let body = match axum::body::to_bytes(body, MAX_READ_BODY_BYTES).await {
        Ok(body) => Ok(body),
        Err(_) => Err(body_too_large(format!("more than {MAX_READ_BODY_BYTES}"))),
    };
    let mut invocation = Invocation {
        endpoint: endpoint.clone(),
        inference_id: caller_id.clone(),
        input_location: input_location.clone(),
        output_location: None,
        failure_location: None,
        content_type,
        accept,
        inline_bytes: match &body {
            Ok(body) if body.is_empty() => None,
            Ok(body) => Some(body.len()),
            // Not read to the end: the length the caller declared.
            Err(_) => header("content-length").and_then(|n| n.parse().ok()),
        },
        fault: None,
        answered: false,
        call: 0,
    };
    // A malformed call is refused before any fault applies: it consumes none.
    let input = match body.and_then(|body| input_of(input_location.as_deref(), body)) {
        Ok(input) => input,
        Err(message) => {
            let mut control = state.control.lock().unwrap();
            let call = control.record(invocation);
            control.mark_answered(call);
            return runtime_error(StatusCode::BAD_REQUEST, "ValidationError", message);
        }
    };
    let inference_id = caller_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let object = uuid::Uuid::new_v4();
    let bucket = match &input {
        Input::InputLocation(location) => &location.bucket,
        Input::Body(_) => LOCAL_STACK_IO_BUCKET,
    };
    let wiring = Wiring::of(&state, &endpoint, bucket);
    let output = format!("{}/{object}.out", wiring.output_path);
    let failure = format!("{}/{object}-error.out", wiring.failure_path);
    let (fault, call) = {
        let mut control = state.control.lock().unwrap();
        let fault = control.faults.pop_front();
        invocation.fault = fault.map(Fault::name);
        if fault != Some(Fault::Refuse400) {
            invocation.inference_id = Some(inference_id.clone());
            invocation.output_location = Some(output.clone());
            invocation.failure_location = Some(failure.clone());
        }
        let call = control.record(invocation);
        (fault, call)
    };
    let refused = fault == Some(Fault::Refuse400);
    if !refused {
        let job = Job {
            endpoint: endpoint.clone(),
            inference_id: inference_id.clone(),
            input,
            output: output.clone(),
            failure: failure.clone(),
            received: Utc::now(),
            notify: fault != Some(Fault::AcceptSilently),
            wiring,
        };
        // Queued before any answer, so a failed answer never means the job did not start.
        tokio::spawn(infer(state.clone(), job));
    }
    let response = answer(&state, fault, &endpoint, inference_id, output, failure).await;
    state.control.lock().unwrap().mark_answered(call);
    response
}

/// The answer to a call, as its fault shapes it (an `accept-then-hang` one only after
/// `--hang-millis`).
async fn answer(
    state: &AppState,
    fault: Option<Fault>,
    endpoint: &str,
    inference_id: String,
    output: String,
    failure: String,
) -> Response {
    if fault == Some(Fault::Refuse400) {
        return runtime_error(
            StatusCode::BAD_REQUEST,
            "ValidationError",
            format!("Endpoint {endpoint} of account {ACCOUNT} not found."),
        );
    }
    let internal_failure = |fault: Fault| {
        runtime_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalFailure",
            format!(
                "An internal error occurred. (stand-in fault {}: the request was queued)",
                fault.name()
            ),
        )
    };
    match fault {
        Some(f @ Fault::AcceptThen500) => internal_failure(f),
        Some(f @ Fault::AcceptThenHang) => {
            tokio::time::sleep(state.settings.hang).await;
            internal_failure(f)
        }
        _ => (
            StatusCode::ACCEPTED,
            [
                ("content-type", "application/json".to_owned()),
                ("x-amzn-requestid", uuid::Uuid::new_v4().to_string()),
                ("x-amzn-sagemaker-outputlocation", output),
                ("x-amzn-sagemaker-failurelocation", failure),
            ],
            json!({"InferenceId": inference_id}).to_string(),
        )
            .into_response(),
    }
}

pub struct Job {
    pub endpoint: String,
    pub inference_id: String,
    pub input: Input,
    pub output: String,
    pub failure: String,
    pub received: DateTime<Utc>,
    /// False for `accept-silently`: the outcome lands in S3 and nobody hears of it.
    pub notify: bool,
    pub wiring: Wiring,
}

/// Where an endpoint's outcomes go. An endpoint the control plane created follows its
/// AsyncInferenceConfig, as SageMaker does: no topic, no notification; IncludeInferenceResponseIn
/// puts the response in the success message. Any other endpoint name gets the local stack's
/// topics and `outputs/` and `failures/` in the input's bucket (for an inline input, the local
/// stack's IO bucket).
pub struct Wiring {
    pub output_path: String,
    pub failure_path: String,
    /// Topic names (the last part of the ARN).
    pub success_topic: Option<String>,
    pub error_topic: Option<String>,
    pub include_response: bool,
}

impl Wiring {
    fn of(state: &AppState, endpoint: &str, bucket: &str) -> Wiring {
        let Some(config) = endpoints::serving_async_config(state, endpoint) else {
            return Wiring {
                output_path: format!("s3://{bucket}/outputs"),
                failure_path: format!("s3://{bucket}/failures"),
                success_topic: Some("mcp-inference-success".into()),
                error_topic: Some("mcp-inference-error".into()),
                include_response: false,
            };
        };
        let output = &config["OutputConfig"];
        let path = |field: &str, default: &str| {
            output[field]
                .as_str()
                .map_or(format!("s3://{bucket}/{default}"), |p| {
                    p.trim_end_matches('/').to_owned()
                })
        };
        let notification = &output["NotificationConfig"];
        let topic = |field: &str| {
            notification[field]
                .as_str()
                .and_then(|arn| arn.rsplit(':').next())
                .map(str::to_owned)
        };
        Wiring {
            output_path: path("S3OutputPath", "outputs"),
            failure_path: path("S3FailurePath", "failures"),
            success_topic: topic("SuccessTopic"),
            error_topic: topic("ErrorTopic"),
            include_response: notification["IncludeInferenceResponseIn"]
                .as_array()
                .is_some_and(|a| a.iter().any(|t| t == "SUCCESS_NOTIFICATION_TOPIC")),
        }
    }
}

pub async fn infer(state: AppState, job: Job) {
    tokio::time::sleep(state.settings.inference).await;
    let input = job.input.read(&state).await.and_then(|bytes| {
        serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("the input is not JSON: {e}"))
    });
    let outcome = match input {
        Ok(input) => {
            let (computing, outcome) = model::answer(&job.endpoint, &input);
            tokio::time::sleep(computing).await;
            outcome
        }
        Err(reason) => Err(reason),
    };
    // As SageMaker does: the output with the model's response type, the failure as text.
    let (location, body, content_type) = match &outcome {
        Ok(result) => (&job.output, result.to_string(), "application/json"),
        Err(reason) => (&job.failure, reason.clone(), "text/plain"),
    };
    let target: S3Location = location.parse().expect("locations are built above");
    if let Err(e) = state
        .s3
        .put_object()
        .bucket(&target.bucket)
        .key(&target.key)
        .content_type(content_type)
        .body(body.into_bytes().into())
        .send()
        .await
    {
        eprintln!("could not write {location}: {e}");
    }
    if !job.notify {
        return;
    }
    let mut message = json!({
        "awsRegion": state.settings.region,
        "eventTime": millis(Utc::now()),
        "receivedTime": millis(job.received),
        "invocationStatus": if outcome.is_ok() { "Completed" } else { "Failed" },
        "requestParameters": {"contentType": "application/json", "endpointName": job.endpoint},
        "inferenceId": job.inference_id,
        "eventVersion": "1.0",
        "eventSource": "aws:sagemaker",
        "eventName": "InferenceResult",
    });
    // An inline input has no location to name.
    if let Input::InputLocation(location) = &job.input {
        message["requestParameters"]["inputLocation"] = json!(location.to_string());
    }
    let topic = match outcome {
        Ok(result) => {
            message["responseParameters"] =
                json!({"contentType": "application/json", "outputLocation": job.output});
            let body = result.to_string();
            if job.wiring.include_response && body.len() <= MAX_INCLUDED_RESPONSE_BYTES {
                message["responseBody"] = json!({"content": BASE64.encode(body), "message": "",
                                                 "encoding": "BASE64"});
            }
            job.wiring.success_topic
        }
        Err(reason) => {
            message["failureReason"] = json!(format!(
                "ClientError: Received client error (400) from model: {reason}"
            ));
            message["responseParameters"] = json!({"failureLocation": job.failure});
            job.wiring.error_topic
        }
    };
    let Some(topic) = topic else {
        return;
    };
    let event = delivery::sns_event(&state.settings.region, &topic, &message);
    delivery::deliver_to(&state, "notification-handler", &event, &job.inference_id).await;
}
