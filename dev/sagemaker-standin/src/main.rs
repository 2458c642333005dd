//! A dev-only stand-in for SageMaker, spoken to by the real AWS SDK through
//! `AWS_ENDPOINT_URL_SAGEMAKER` and `AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME`.
//!
//! Pipelines: moto's are born `Succeeded` and have no steps; these run: Executing, then step by
//! step to Succeeded or Failed, and (with `--lambda-invoke-url`) each status change is delivered
//! as the real EventBridge event to pipeline-router through the local Lambda invoke API.
//! StartPipelineExecution checks what SageMaker checks and a product could get wrong: a
//! `ClientRequestToken` must have 32 to 128 characters (else 400 ValidationException), and a
//! repeated token returns the first run's ARN; `ParallelismConfiguration` is kept and shown by
//! DescribePipelineExecution only when the start gave it.
//!
//! Async endpoint: `InvokeEndpointAsync` reads the input from S3 (moto), runs a small local model
//! after `--inference-millis`, writes the output (or a failure) to S3 beside the input, and
//! delivers the real-shaped SNS notification to notification-handler. The model labels a
//! document `invoice`, `receipt`, `report` or `other` by its words; an input containing `FAIL`
//! fails, as a model error would.
//!
//! The fake training: accuracy = 0.80 + 0.015 × min(MaxEpochs, 12) (MaxEpochs defaults to 10,
//! so 0.95); the run fails at EvaluateModel when that is below AccuracyThreshold (default 0.9),
//! and at PreprocessData when InputDataUri is not an s3:// URI.
//!
//! Usage: sagemaker-standin [--port N] [--region R] [--step-millis MS] [--inference-millis MS]
//!                          [--hang-millis MS] [--lambda-invoke-url URL]
//! - `--port`: 0 (the default) picks a free port; it binds 127.0.0.1 only.
//! - `--region`: used in ARNs and events (us-east-1).
//! - `--step-millis`: how long each pipeline step runs (500).
//! - `--inference-millis`: how long the model takes per async request (1500).
//! - `--hang-millis`: how long an `accept-then-hang` call goes unanswered (5000).
//! - `--lambda-invoke-url`: the local Lambda invoke API (`cargo lambda watch`) to deliver
//!   notifications and pipeline events to; without it nothing is delivered.
//!
//! Prints `listening on http://127.0.0.1:PORT` once it accepts requests.
//!
//! Fault injection, for tests of what a caller does when SageMaker misbehaves. A control API on
//! the same port arms faults for the next InvokeEndpointAsync calls, one consumed per call, in
//! order (a call without a valid InputLocation is refused before any fault and consumes none):
//! - `POST /_standin/faults` `{"fault": F, "times": N}` (N defaults to 1): arms F for the next N
//!   calls, after those already armed; answers `{"faults": [...]}`, all that are armed. An
//!   unknown F or a bad N is a 400 whose message names the field.
//! - `GET /_standin/faults` lists what is armed; `DELETE /_standin/faults` disarms everything.
//! - `POST /_standin/pipeline` `{"step_millis": N}`: pipeline steps that start from then on take
//!   N ms (to act on a run while it executes); `DELETE /_standin/pipeline` restores the default.
//! - `GET /_standin/invocations`: `{"invocations": [{"endpoint", "inference_id",
//!   "input_location", "output_location", "failure_location", "fault"}, ...]}`, every call
//!   received, refused ones too (their locations are null), in order, with the fault it got or
//!   null; `DELETE /_standin/invocations` empties it.
//!
//! The faults, as the SDK sees them:
//! - `accept-then-500`: the job is queued and runs as normal (output or failure in S3,
//!   notification delivered), but the answer is HTTP 500 `InternalFailure`.
//! - `accept-then-hang`: queued and run as normal, then no answer for `--hang-millis`, then 500
//!   `InternalFailure`; a client with a shorter timeout sees a timeout.
//! - `refuse-400`: nothing is queued; HTTP 400 `ValidationError`, "Endpoint NAME of account
//!   123456789012 not found." (what SageMaker says for an unknown endpoint).
//! - `accept-silently`: a normal 202, the job runs and its output or failure lands in S3, but no
//!   notification is delivered (a lost SNS delivery).
//!
//! AWS SDKs retry 5xx answers and timeouts, and each retry is a new call that consumes the next
//! fault (and, when accepted, queues the job again). The standard retry mode (the Rust SDK,
//! boto3 with `retries={"mode": "standard"}`) makes up to 3 attempts, boto3's default legacy
//! mode up to 5: to make every attempt fail, arm the fault `times` >= the attempts; with fewer,
//! the SDK's retry succeeds and the caller never sees the fault.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

const ACCOUNT: &str = "123456789012";
const STEPS: [&str; 4] = [
    "PreprocessData",
    "TrainModel",
    "EvaluateModel",
    "RegisterModel",
];

#[derive(Clone)]
struct Settings {
    region: String,
    step: Duration,
    inference: Duration,
    hang: Duration,
    lambda_invoke_url: Option<String>,
}

#[derive(Clone)]
struct Step {
    name: &'static str,
    status: &'static str,
    started: DateTime<Utc>,
    ended: Option<DateTime<Utc>>,
    failure_reason: Option<String>,
}

#[derive(Clone)]
struct Run {
    pipeline_arn: String,
    arn: String,
    display_name: String,
    description: Option<String>,
    parameters: HashMap<String, String>,
    /// `ParallelismConfiguration.MaxParallelExecutionSteps`, when the start gave it.
    max_parallel_steps: Option<u64>,
    status: &'static str,
    failure_reason: Option<String>,
    started: DateTime<Utc>,
    modified: DateTime<Utc>,
    steps: Vec<Step>,
}

#[derive(Clone)]
struct AppState {
    settings: Settings,
    runs: Arc<Mutex<HashMap<String, Run>>>,
    /// ClientRequestToken → execution ARN: a retried start returns the first run.
    tokens: Arc<Mutex<HashMap<String, String>>>,
    http: reqwest::Client,
    s3: aws_sdk_s3::Client,
    /// Faults waiting for the next InvokeEndpointAsync calls, and every call received. One
    /// lock for both, so the recorded order is the order in which faults were consumed.
    control: Arc<Mutex<Control>>,
}

struct AwsError(StatusCode, &'static str, String);

impl IntoResponse for AwsError {
    fn into_response(self) -> Response {
        let body = json!({"__type": self.1, "message": self.2}).to_string();
        (
            self.0,
            [("content-type", "application/x-amz-json-1.1")],
            body,
        )
            .into_response()
    }
}

fn validation(message: impl Into<String>) -> AwsError {
    AwsError(
        StatusCode::BAD_REQUEST,
        "ValidationException",
        message.into(),
    )
}

/// `s3://bucket/key`. The stand-in's own, so it builds without the product crate.
#[derive(Debug, Clone)]
struct S3Location {
    bucket: String,
    key: String,
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

/// From the standard AWS configuration, as the functions build theirs: with an endpoint
/// override (moto on 127.0.0.1) path-style addressing, since an emulator cannot serve
/// virtual-hosted bucket names.
async fn s3_client() -> aws_sdk_s3::Client {
    let sdk = aws_config::load_from_env().await;
    let overridden =
        sdk.endpoint_url().is_some() || std::env::var_os("AWS_ENDPOINT_URL_S3").is_some();
    let conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(overridden)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

fn epoch(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

async fn dispatch(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> Result<Response, AwsError> {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let input: Value =
        serde_json::from_str(if body.is_empty() { "{}" } else { &body }).map_err(|e| {
            AwsError(
                StatusCode::BAD_REQUEST,
                "SerializationException",
                e.to_string(),
            )
        })?;
    let output = match target.strip_prefix("SageMaker.") {
        Some("StartPipelineExecution") => start(&state, &input)?,
        Some("DescribePipelineExecution") => describe(&state, &input)?,
        Some("ListPipelineExecutionSteps") => list_steps(&state, &input)?,
        Some("StopPipelineExecution") => stop(&state, &input)?,
        _ => {
            return Err(AwsError(
                StatusCode::BAD_REQUEST,
                "UnknownOperationException",
                format!("the stand-in does not implement {target:?}"),
            ))
        }
    };
    Ok((
        [("content-type", "application/x-amz-json-1.1")],
        output.to_string(),
    )
        .into_response())
}

fn str_field<'a>(input: &'a Value, name: &str) -> Result<&'a str, AwsError> {
    input
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            validation(format!(
                "1 validation error detected: {name} must not be null"
            ))
        })
}

/// SageMaker's idempotency tokens are 32 to 128 characters; a product that derives shorter
/// ones must fail here as it would against AWS.
fn client_request_token(input: &Value) -> Result<Option<&str>, AwsError> {
    let Some(token) = input.get("ClientRequestToken").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let token = token
        .as_str()
        .ok_or_else(|| validation("ClientRequestToken must be a string"))?;
    let rule = match token.chars().count() {
        0..32 => "greater than or equal to 32",
        129.. => "less than or equal to 128",
        _ => return Ok(Some(token)),
    };
    Err(validation(format!(
        "1 validation error detected: Value '{token}' at 'ClientRequestToken' failed to \
         satisfy constraint: Member must have length {rule}"
    )))
}

fn max_parallel_steps(input: &Value) -> Result<Option<u64>, AwsError> {
    let Some(config) = input
        .get("ParallelismConfiguration")
        .filter(|v| !v.is_null())
    else {
        return Ok(None);
    };
    let steps = config
        .get("MaxParallelExecutionSteps")
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            validation(
                "1 validation error detected: ParallelismConfiguration.MaxParallelExecutionSteps \
                 must not be null",
            )
        })?;
    match steps.as_u64() {
        Some(n @ 1..) => Ok(Some(n)),
        _ => Err(validation(format!(
            "1 validation error detected: Value '{steps}' at \
             'ParallelismConfiguration.MaxParallelExecutionSteps' failed to satisfy \
             constraint: Member must have value greater than or equal to 1"
        ))),
    }
}

fn start(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let name = str_field(input, "PipelineName")?;
    let token = client_request_token(input)?;
    let max_parallel_steps = max_parallel_steps(input)?;
    if let Some(token) = token {
        if let Some(arn) = state.tokens.lock().unwrap().get(token) {
            return Ok(json!({"PipelineExecutionArn": arn}));
        }
    }
    let parameters: HashMap<String, String> = input
        .get("PipelineParameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p.get("Name")?.as_str()?.to_owned(),
                p.get("Value")?.as_str()?.to_owned(),
            ))
        })
        .collect();
    let pipeline_arn = format!(
        "arn:aws:sagemaker:{}:{ACCOUNT}:pipeline/{}",
        state.settings.region,
        name.to_lowercase()
    );
    let id: String = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let now = Utc::now();
    let run = Run {
        arn: format!("{pipeline_arn}/execution/{id}"),
        pipeline_arn,
        display_name: input
            .get("PipelineExecutionDisplayName")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("execution-{}", now.timestamp_millis())),
        description: input
            .get("PipelineExecutionDescription")
            .and_then(Value::as_str)
            .map(str::to_owned),
        parameters,
        max_parallel_steps,
        status: "Executing",
        failure_reason: None,
        started: now,
        modified: now,
        steps: Vec::new(),
    };
    let arn = run.arn.clone();
    if let Some(token) = token {
        state
            .tokens
            .lock()
            .unwrap()
            .insert(token.to_owned(), arn.clone());
    }
    state.runs.lock().unwrap().insert(arn.clone(), run);
    tokio::spawn(execute(state.clone(), arn.clone()));
    Ok(json!({"PipelineExecutionArn": arn}))
}

fn find(state: &AppState, input: &Value) -> Result<Run, AwsError> {
    let arn = str_field(input, "PipelineExecutionArn")?;
    state.runs.lock().unwrap().get(arn).cloned().ok_or_else(|| {
        AwsError(
            StatusCode::BAD_REQUEST,
            "ResourceNotFound",
            format!("Pipeline execution {arn} does not exist"),
        )
    })
}

fn describe(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    let mut out = json!({
        "PipelineArn": run.pipeline_arn,
        "PipelineExecutionArn": run.arn,
        "PipelineExecutionDisplayName": run.display_name,
        "PipelineExecutionStatus": run.status,
        "CreationTime": epoch(run.started),
        "LastModifiedTime": epoch(run.modified),
    });
    if let Some(d) = &run.description {
        out["PipelineExecutionDescription"] = json!(d);
    }
    if let Some(r) = &run.failure_reason {
        out["FailureReason"] = json!(r);
    }
    if let Some(n) = run.max_parallel_steps {
        out["ParallelismConfiguration"] = json!({"MaxParallelExecutionSteps": n});
    }
    Ok(out)
}

/// SageMaker requires a token and stops only a running execution: it goes Stopping, then
/// Stopped once the current step ends (see `execute`).
fn stop(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    if client_request_token(input)?.is_none() {
        return Err(validation(
            "1 validation error detected: ClientRequestToken must not be null",
        ));
    }
    match run.status {
        "Executing" => update(state, &run.arn, |r| r.status = "Stopping"),
        "Stopping" | "Stopped" => {}
        other => {
            return Err(validation(format!(
                "Pipeline execution {} is {other} and cannot be stopped",
                run.arn
            )))
        }
    }
    Ok(json!({"PipelineExecutionArn": run.arn}))
}

fn list_steps(state: &AppState, input: &Value) -> Result<Value, AwsError> {
    let run = find(state, input)?;
    let max = input
        .get("MaxResults")
        .and_then(Value::as_u64)
        .unwrap_or(50)
        .clamp(1, 100) as usize;
    let offset = match input.get("NextToken").and_then(Value::as_str) {
        None => 0,
        Some(token) => token
            .parse::<usize>()
            .map_err(|_| validation(format!("invalid NextToken {token:?}")))?,
    };
    let ascending = input.get("SortOrder").and_then(Value::as_str) == Some("Ascending");
    let mut steps = run.steps.clone();
    if !ascending {
        steps.reverse();
    }
    let page: Vec<Value> = steps
        .iter()
        .skip(offset)
        .take(max)
        .map(|s| {
            let mut v =
                json!({"StepName": s.name, "StepStatus": s.status, "StartTime": epoch(s.started)});
            if let Some(end) = s.ended {
                v["EndTime"] = json!(epoch(end));
            }
            if let Some(r) = &s.failure_reason {
                v["FailureReason"] = json!(r);
            }
            v
        })
        .collect();
    let mut out = json!({"PipelineExecutionSteps": page});
    if offset + max < steps.len() {
        out["NextToken"] = json!((offset + max).to_string());
    }
    Ok(out)
}

/// Why a step fails, from the run's parameters.
fn step_failure(step: &str, parameters: &HashMap<String, String>) -> Option<String> {
    match step {
        "PreprocessData" => {
            let uri = parameters
                .get("InputDataUri")
                .map(String::as_str)
                .unwrap_or("s3://default/train");
            (!uri.starts_with("s3://"))
                .then(|| format!("ClientError: InputDataUri {uri:?} is not an s3:// URI"))
        }
        "EvaluateModel" => {
            let epochs: f64 = parameters
                .get("MaxEpochs")
                .and_then(|v| v.parse().ok())
                .unwrap_or(10.0);
            let threshold: f64 = parameters
                .get("AccuracyThreshold")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.9);
            let accuracy = 0.80 + 0.015 * epochs.clamp(0.0, 12.0);
            (accuracy < threshold).then(|| {
                format!("accuracy {accuracy:.3} is below AccuracyThreshold {threshold:.3}")
            })
        }
        _ => None,
    }
}

async fn execute(state: AppState, arn: String) {
    deliver(&state, &arn, None).await;
    let parameters = state.runs.lock().unwrap()[&arn].parameters.clone();
    let mut failure = None;
    for name in STEPS {
        update(&state, &arn, |run| {
            run.steps.push(Step {
                name,
                status: "Executing",
                started: Utc::now(),
                ended: None,
                failure_reason: None,
            })
        });
        let step = state
            .control
            .lock()
            .unwrap()
            .step_millis
            .map_or(state.settings.step, Duration::from_millis);
        tokio::time::sleep(step).await;
        if state.runs.lock().unwrap()[&arn].status == "Stopping" {
            update(&state, &arn, |run| {
                let step = run.steps.last_mut().expect("step just pushed");
                step.ended = Some(Utc::now());
                step.status = "Stopped";
                run.status = "Stopped";
            });
            deliver(&state, &arn, Some("Stopping")).await;
            return;
        }
        let step_failure = step_failure(name, &parameters);
        update(&state, &arn, |run| {
            let step = run.steps.last_mut().expect("step just pushed");
            step.ended = Some(Utc::now());
            step.status = if step_failure.is_some() {
                "Failed"
            } else {
                "Succeeded"
            };
            step.failure_reason = step_failure.clone();
        });
        if let Some(reason) = step_failure {
            failure = Some(format!("Step failure: {name} failed: {reason}"));
            break;
        }
    }
    update(&state, &arn, |run| {
        run.status = if failure.is_some() {
            "Failed"
        } else {
            "Succeeded"
        };
        run.failure_reason = failure.clone();
    });
    deliver(&state, &arn, Some("Executing")).await;
}

fn update(state: &AppState, arn: &str, change: impl FnOnce(&mut Run)) {
    let mut runs = state.runs.lock().unwrap();
    let run = runs.get_mut(arn).expect("run exists");
    change(run);
    run.modified = Utc::now();
}

// ------------------------------------------------------------------ async endpoint runtime

/// A fault the control API arms for the next InvokeEndpointAsync calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Queued and run as normal, but answered 500 InternalFailure: the caller cannot tell
    /// whether SageMaker took the request.
    AcceptThen500,
    /// Queued and run as normal, then no answer for `--hang-millis`, then 500 InternalFailure:
    /// a client with a shorter timeout sees a timeout.
    AcceptThenHang,
    /// Not queued: 400 ValidationError, as SageMaker answers for an unknown endpoint.
    Refuse400,
    /// Queued and run, the output or failure written to S3, but no notification delivered: a
    /// lost SNS delivery.
    AcceptSilently,
}

impl Fault {
    const ALL: [Fault; 4] = [
        Fault::AcceptThen500,
        Fault::AcceptThenHang,
        Fault::Refuse400,
        Fault::AcceptSilently,
    ];

    fn name(self) -> &'static str {
        match self {
            Fault::AcceptThen500 => "accept-then-500",
            Fault::AcceptThenHang => "accept-then-hang",
            Fault::Refuse400 => "refuse-400",
            Fault::AcceptSilently => "accept-silently",
        }
    }

    fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// One InvokeEndpointAsync call as received, for `GET /_standin/invocations`.
#[derive(serde::Serialize)]
struct Invocation {
    endpoint: String,
    inference_id: Option<String>,
    input_location: Option<String>,
    output_location: Option<String>,
    failure_location: Option<String>,
    fault: Option<&'static str>,
}

#[derive(Default)]
struct Control {
    faults: VecDeque<Fault>,
    invocations: Vec<Invocation>,
    /// Overrides `--step-millis` for steps that start from now on.
    step_millis: Option<u64>,
}

/// At most this many faults wait at once: a typo in `times` should not eat the memory.
const MAX_PENDING_FAULTS: usize = 10_000;

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn control_error(message: String) -> Response {
    json_response(StatusCode::BAD_REQUEST, json!({ "message": message }))
}

fn pending_faults(control: &Control) -> Value {
    json!({"faults": control.faults.iter().map(|f| f.name()).collect::<Vec<_>>()})
}

/// `POST /_standin/faults {"fault": F, "times": N}`: the next N calls (after those already
/// armed) get F.
async fn arm_faults(State(state): State<AppState>, body: String) -> Response {
    let request: Value = match serde_json::from_str(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return control_error(
                r#"the body must be a JSON object {"fault": ..., "times": ...}"#.into(),
            )
        }
    };
    let names = Fault::ALL.map(Fault::name).join(", ");
    let Some(fault) = request
        .get("fault")
        .and_then(Value::as_str)
        .and_then(Fault::parse)
    else {
        let got = request
            .get("fault")
            .map_or("nothing".into(), Value::to_string);
        return control_error(format!("fault must be one of {names}; got {got}"));
    };
    let times = match request.get("times") {
        None | Some(Value::Null) => 1,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => n as usize,
            _ => return control_error(format!("times must be a positive integer; got {v}")),
        },
    };
    let mut control = state.control.lock().unwrap();
    if control.faults.len() + times > MAX_PENDING_FAULTS {
        return control_error(format!(
            "times: at most {MAX_PENDING_FAULTS} faults may wait at once ({} already do)",
            control.faults.len()
        ));
    }
    control.faults.extend(std::iter::repeat_n(fault, times));
    json_response(StatusCode::OK, pending_faults(&control))
}

async fn list_faults(State(state): State<AppState>) -> Response {
    json_response(
        StatusCode::OK,
        pending_faults(&state.control.lock().unwrap()),
    )
}

/// `POST /_standin/pipeline {"step_millis": N}`: steps that start from now on take N ms
/// (a test that must act while a run executes slows it down); `DELETE` restores
/// `--step-millis`.
async fn set_pipeline(State(state): State<AppState>, body: String) -> Response {
    let millis = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("step_millis").and_then(Value::as_u64))
        .filter(|n| (1..=600_000).contains(n));
    let Some(millis) = millis else {
        return control_error(r#"the body must be {"step_millis": 1 to 600000}"#.into());
    };
    state.control.lock().unwrap().step_millis = Some(millis);
    json_response(StatusCode::OK, json!({"step_millis": millis}))
}

async fn reset_pipeline(State(state): State<AppState>) -> Response {
    state.control.lock().unwrap().step_millis = None;
    json_response(
        StatusCode::OK,
        json!({"step_millis": state.settings.step.as_millis() as u64}),
    )
}

async fn clear_faults(State(state): State<AppState>) -> Response {
    let mut control = state.control.lock().unwrap();
    control.faults.clear();
    json_response(StatusCode::OK, pending_faults(&control))
}

async fn list_invocations(State(state): State<AppState>) -> Response {
    let control = state.control.lock().unwrap();
    json_response(StatusCode::OK, json!({"invocations": control.invocations}))
}

async fn clear_invocations(State(state): State<AppState>) -> Response {
    state.control.lock().unwrap().invocations.clear();
    json_response(StatusCode::OK, json!({"invocations": []}))
}

/// An error as SageMaker Runtime (restJson) sends it: the SDK takes the code from
/// `x-amzn-errortype` and the message from the body.
fn runtime_error(status: StatusCode, code: &str, message: String) -> Response {
    (
        status,
        [
            ("content-type", "application/json".to_owned()),
            ("x-amzn-errortype", code.to_owned()),
            ("x-amzn-requestid", uuid::Uuid::new_v4().to_string()),
        ],
        json!({ "message": message }).to_string(),
    )
        .into_response()
}

async fn invoke_async(
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
    };
    // A malformed call is refused before any fault applies: it consumes none.
    let input: S3Location = match input_location.as_deref().map(str::parse) {
        Some(Ok(input)) => input,
        problem => {
            state.control.lock().unwrap().invocations.push(invocation);
            let message = match problem {
                Some(Err(e)) => e,
                _ => "1 validation error detected: InputLocation must not be null".into(),
            };
            return runtime_error(StatusCode::BAD_REQUEST, "ValidationError", message);
        }
    };
    let inference_id = caller_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let object = uuid::Uuid::new_v4();
    let output = format!("s3://{}/outputs/{object}.out", input.bucket);
    let failure = format!("s3://{}/failures/{object}-error.out", input.bucket);
    let fault = {
        let mut control = state.control.lock().unwrap();
        let fault = control.faults.pop_front();
        invocation.fault = fault.map(Fault::name);
        if fault != Some(Fault::Refuse400) {
            invocation.inference_id = Some(inference_id.clone());
            invocation.output_location = Some(output.clone());
            invocation.failure_location = Some(failure.clone());
        }
        control.invocations.push(invocation);
        fault
    };
    if fault == Some(Fault::Refuse400) {
        return runtime_error(
            StatusCode::BAD_REQUEST,
            "ValidationError",
            format!("Endpoint {endpoint} of account {ACCOUNT} not found."),
        );
    }
    let job = Job {
        endpoint,
        inference_id: inference_id.clone(),
        input,
        output: output.clone(),
        failure: failure.clone(),
        received: Utc::now(),
        notify: fault != Some(Fault::AcceptSilently),
    };
    // Queued before any answer, so a failed answer never means the job did not start.
    tokio::spawn(infer(state.clone(), job));
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

struct Job {
    endpoint: String,
    inference_id: String,
    input: S3Location,
    output: String,
    failure: String,
    received: DateTime<Utc>,
    /// False for `accept-silently`: the outcome lands in S3 and nobody hears of it.
    notify: bool,
}

/// The small local model: labels a document by its words.
fn classify(input: &Value) -> Result<Value, String> {
    let text = match input.get("inputs") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => input.to_string(),
    };
    if text.contains("FAIL") {
        return Err("ValueError: the model could not process this input".into());
    }
    let lower = text.to_lowercase();
    let (label, confidence) = [("invoice", 0.97), ("receipt", 0.91), ("report", 0.88)]
        .into_iter()
        .find(|(word, _)| lower.contains(word))
        .unwrap_or(("other", 0.55));
    Ok(json!({"label": label, "confidence": confidence, "words": text.split_whitespace().count()}))
}

fn millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

async fn infer(state: AppState, job: Job) {
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
                .and_then(|v| classify(&v)),
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
        Ok(_) => {
            message["responseParameters"] =
                json!({"contentType": "application/json", "outputLocation": job.output});
            "mcp-inference-success"
        }
        Err(reason) => {
            message["failureReason"] = json!(format!(
                "ClientError: Received client error (400) from model: {reason}"
            ));
            message["responseParameters"] = json!({"failureLocation": job.failure});
            "mcp-inference-error"
        }
    };
    let region = &state.settings.region;
    let event = json!({"Records": [{
        "EventSource": "aws:sns", "EventVersion": "1.0",
        "EventSubscriptionArn": format!("arn:aws:sns:{region}:{ACCOUNT}:{topic}:{}", uuid::Uuid::new_v4()),
        "Sns": {
            "Type": "Notification", "MessageId": uuid::Uuid::new_v4().to_string(),
            "TopicArn": format!("arn:aws:sns:{region}:{ACCOUNT}:{topic}"),
            "Subject": null, "Message": message.to_string(), "Timestamp": millis(Utc::now()),
            "SignatureVersion": "1", "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.amazonaws.com/cert.pem",
            "UnsubscribeUrl": "https://sns.amazonaws.com/unsubscribe", "MessageAttributes": {}
        }
    }]});
    deliver_to(&state, "notification-handler", &event, &job.inference_id).await;
}

/// Sends the run's current status as the EventBridge event to pipeline-router.
async fn deliver(state: &AppState, arn: &str, previous: Option<&str>) {
    if state.settings.lambda_invoke_url.is_none() {
        return;
    }
    let run = state.runs.lock().unwrap()[arn].clone();
    let ended = (run.status != "Executing").then(|| run.modified.to_rfc3339());
    let event = json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "SageMaker Model Building Pipeline Execution Status Change",
        "source": "aws.sagemaker",
        "account": ACCOUNT,
        "time": Utc::now().to_rfc3339(),
        "region": state.settings.region,
        "resources": [run.pipeline_arn, run.arn],
        "detail": {
            "pipelineExecutionDisplayName": run.display_name,
            "currentPipelineExecutionStatus": run.status,
            "previousPipelineExecutionStatus": previous,
            "executionStartTime": run.started.to_rfc3339(),
            "executionEndTime": ended,
            "pipelineExecutionDescription": run.description,
            "pipelineArn": run.pipeline_arn,
            "pipelineExecutionArn": run.arn,
        }
    });
    deliver_to(state, "pipeline-router", &event, arn).await;
}

/// An asynchronous invocation through the local Lambda invoke API. SNS and EventBridge retry
/// failed deliveries; so does the stand-in, briefly.
async fn deliver_to(state: &AppState, function: &str, event: &Value, about: &str) {
    let Some(base) = &state.settings.lambda_invoke_url else {
        return;
    };
    let url = format!("{base}/2015-03-31/functions/{function}/invocations");
    for attempt in 1..=3 {
        match state.http.post(&url).body(event.to_string()).send().await {
            Ok(r) if r.status().is_success() => return,
            Ok(r) => eprintln!(
                "{function} answered {} for {about} (attempt {attempt})",
                r.status()
            ),
            Err(e) => {
                eprintln!("could not deliver to {function} for {about} (attempt {attempt}): {e}")
            }
        }
        tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = arg(&args, "--port").map_or(0, |p| p.parse().expect("--port takes a number"));
    let step_millis: u64 = arg(&args, "--step-millis")
        .map_or(500, |p| p.parse().expect("--step-millis takes a number"));
    let state = AppState {
        settings: Settings {
            region: arg(&args, "--region").unwrap_or_else(|| "us-east-1".into()),
            step: Duration::from_millis(step_millis),
            inference: Duration::from_millis(arg(&args, "--inference-millis").map_or(1500, |p| {
                p.parse().expect("--inference-millis takes a number")
            })),
            hang: Duration::from_millis(
                arg(&args, "--hang-millis")
                    .map_or(5000, |p| p.parse().expect("--hang-millis takes a number")),
            ),
            lambda_invoke_url: arg(&args, "--lambda-invoke-url"),
        },
        runs: Arc::default(),
        tokens: Arc::default(),
        http: reqwest::Client::new(),
        s3: s3_client().await,
        control: Arc::default(),
    };
    let app = Router::new()
        .route("/", post(dispatch))
        .route("/endpoints/{name}/async-invocations", post(invoke_async))
        .route(
            "/_standin/faults",
            get(list_faults).post(arm_faults).delete(clear_faults),
        )
        .route(
            "/_standin/invocations",
            get(list_invocations).delete(clear_invocations),
        )
        .route(
            "/_standin/pipeline",
            post(set_pipeline).delete(reset_pipeline),
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind 127.0.0.1");
    println!(
        "listening on http://{}",
        listener.local_addr().expect("local address")
    );
    axum::serve(listener, app).await.expect("serve");
}
