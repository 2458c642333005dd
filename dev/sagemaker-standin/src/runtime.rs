//! The async endpoint runtime: `POST /endpoints/{name}/async-invocations` (restJson, as
//! SageMaker Runtime's InvokeEndpointAsync), the job run by the local model, its outcome in S3 and
//! the notification.

use std::fmt;
use std::str::FromStr;

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

pub async fn invoke_async(
    State(state): State<AppState>,
    Path(endpoint): Path<String>,
    headers: HeaderMap,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let caller_id = header("x-amzn-sagemaker-inference-id");
    let input_location = header("x-amzn-sagemaker-inputlocation");
    let mut invocation = Invocation {
        endpoint: endpoint.clone(),
        inference_id: caller_id.clone(),
        input_location: input_location.clone(),
        output_location: None,
        failure_location: None,
        fault: None,
        answered: false,
        call: 0,
    };
    // A malformed call is refused before any fault applies: it consumes none.
    let input: S3Location = match input_location.as_deref().map(str::parse) {
        Some(Ok(input)) => input,
        problem => {
            let mut control = state.control.lock().unwrap();
            let call = control.record(invocation);
            control.mark_answered(call);
            let message = match problem {
                Some(Err(e)) => e,
                _ => "1 validation error detected: InputLocation must not be null".into(),
            };
            return runtime_error(StatusCode::BAD_REQUEST, "ValidationError", message);
        }
    };
    let inference_id = caller_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let object = uuid::Uuid::new_v4();
    let wiring = Wiring::of(&state, &endpoint, &input.bucket);
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
    pub input: S3Location,
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
/// topics and the IO bucket's `outputs/` and `failures/`.
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
    let outcome = match state
        .s3
        .get_object()
        .bucket(&job.input.bucket)
        .key(&job.input.key)
        .send()
        .await
    {
        Ok(object) => match object.body.collect().await {
            Ok(bytes) => serde_json::from_slice::<Value>(&bytes.into_bytes())
                .map_err(|e| format!("the input is not JSON: {e}"))
                .and_then(|v| model::classify(&v)),
            Err(e) => Err(format!("reading the input failed: {e}")),
        },
        Err(e) => Err(format!("could not read {}: {e}", job.input)),
    };
    let (location, body) = match &outcome {
        Ok(result) => (&job.output, result.to_string()),
        Err(reason) => (&job.failure, reason.clone()),
    };
    let target: S3Location = location.parse().expect("locations are built above");
    if let Err(e) = state
        .s3
        .put_object()
        .bucket(&target.bucket)
        .key(&target.key)
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
        "requestParameters": {"contentType": "application/json", "endpointName": job.endpoint,
                              "inputLocation": job.input.to_string()},
        "inferenceId": job.inference_id,
        "eventVersion": "1.0",
        "eventSource": "aws:sagemaker",
        "eventName": "InferenceResult",
    });
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
