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
//! Endpoints: CreateEndpointConfig, DescribeEndpointConfig, CreateEndpoint, DescribeEndpoint and
//! UpdateEndpoint keep configs and endpoints as SageMaker does (a config is immutable; an endpoint
//! is Creating or Updating for one step's time, then InService with the new config); CreatePipeline
//! and DescribePipeline keep a pipeline's definition (its `Parameters`). An endpoint created here
//! is served as its AsyncInferenceConfig says (S3 paths, topics, IncludeInferenceResponseIn; no
//! topic, no notification); any other endpoint name gets the local stack's topics and
//! `outputs/` and `failures/` in the input's bucket (for an inline input, the local stack's IO
//! bucket, `mcp-sagemaker-async-io`).
//!
//! Async endpoint: `InvokeEndpointAsync` takes the input from S3 (moto) at `InputLocation`, or
//! inline as the request's `Body` (at most 128,000 bytes; else 400 ValidationError, as for a Body
//! given with an InputLocation), runs a small local model after `--inference-millis`, writes the
//! output (or a failure) to S3, and delivers the real-shaped SNS notification to
//! notification-handler (for an inline input, its `requestParameters` have no `inputLocation`).
//! The model labels a document `invoice`, `receipt`, `report` or `other` by its words; an input
//! containing `FAIL` fails, as a model error would. Two endpoints serve the MCP conformance
//! suite's fixtures (tests/conformance/fixtures.catalog.json): `standin-slow-compute` answers after
//! the input's `seconds` (at most 600), `standin-failing-job` always fails.
//!
//! Lineage: each run records what SageMaker's tracking would (its data, image, training job,
//! model, and the model package RegisterModel makes, with its group's context), served by
//! ListAssociations, ListArtifacts, DescribeArtifact and DescribeModelPackage; the RegisterModel
//! step's `Metadata.RegisterModel.Arn` names the package (see `control_plane::lineage`), which
//! waits `PendingManualApproval` until UpdateModelPackage approves or rejects it.
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
//! order (a call refused for its input, which is neither a valid InputLocation nor a Body of at
//! most 128,000 bytes, is refused before any fault and consumes none):
//! - `POST /_standin/faults` `{"fault": F, "times": N}` (N defaults to 1): arms F for the next N
//!   calls, after those already armed; answers `{"faults": [...]}`, all that are armed. An
//!   unknown F or a bad N is a 400 whose message names the field.
//! - `GET /_standin/faults` lists what is armed; `DELETE /_standin/faults` disarms everything.
//! - `POST /_standin/pipeline` `{"step_millis": N}`: pipeline steps (and endpoint creates and
//!   updates) that start from then on take N ms (to act on a run while it executes);
//!   `{"missing_execution": "ValidationException"}`: an unknown pipeline execution is answered
//!   as moto answers it (ValidationException "Could not find pipeline execution ..."), not as
//!   SageMaker's ResourceNotFound; `{"throttle_list_steps": T}`: the next T
//!   ListPipelineExecutionSteps calls get 400 ThrottlingException (any of the fields). `GET`
//!   answers `{"step_millis", "missing_execution", "runs_started", "throttle_list_steps"}` (runs
//!   StartPipelineExecution started, throttles left); `DELETE /_standin/pipeline` restores the
//!   defaults.
//! - `POST /_standin/lineage` `{"page_size": N}`: no ListAssociations page holds more than N
//!   (1 to 100); `DELETE` lifts the cap; `GET` answers `{"page_size", "list_associations_calls",
//!   "continued_calls"}` (calls answered, and those that carried a NextToken).
//! - `GET /_standin/invocations`: `{"invocations": [{"endpoint", "inference_id",
//!   "input_location", "output_location", "failure_location", "content_type", "accept",
//!   "inline_bytes", "fault", "answered"}, ...]}`, every call received, refused ones too (their
//!   output and failure locations are null), in order, with the fault it got or null.
//!   `content_type` and `accept` are the ContentType and Accept received, or null;
//!   `inline_bytes` is the length of an inline Body, null for an input in S3 (whose
//!   `input_location` is then set). `DELETE /_standin/invocations` empties it.
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

mod answer;
mod control_plane;
mod delivery;
mod faults;
mod model;
mod runtime;
mod state;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;

use state::{AppState, Settings};

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

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// reqwest is built with rustls for the workspace (mcp-tools fetches an issuer's keys over
/// https), and rustls needs its crypto provider chosen before any client exists, even one that
/// only speaks plain http to 127.0.0.1 as this one does.
fn install_tls_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn http_client() -> reqwest::Client {
    install_tls_provider();
    reqwest::Client::new()
}

#[tokio::main]
async fn main() {
    install_tls_provider();
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
        http: http_client(),
        s3: s3_client().await,
        control: Arc::default(),
        catalog: Arc::default(),
    };
    let app = Router::new()
        .route("/", post(control_plane::dispatch))
        .route(
            "/endpoints/{name}/async-invocations",
            post(runtime::invoke_async),
        )
        .route(
            "/_standin/faults",
            get(faults::list_faults)
                .post(faults::arm_faults)
                .delete(faults::clear_faults),
        )
        .route(
            "/_standin/invocations",
            get(faults::list_invocations).delete(faults::clear_invocations),
        )
        .route(
            "/_standin/pipeline",
            get(faults::get_pipeline)
                .post(faults::set_pipeline)
                .delete(faults::reset_pipeline),
        )
        .route(
            "/_standin/lineage",
            get(control_plane::lineage::get_lineage)
                .post(control_plane::lineage::set_lineage)
                .delete(control_plane::lineage::reset_lineage),
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
