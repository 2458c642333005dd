//! The bench's second floor, for mcp-tools and the event functions: an event's AWS calls made
//! again through the SDK alone, with clients built as the functions build them. Each call goes
//! through the operation it was (UpdateItem through `update_item()`, and so on), its recorded
//! request (path, headers, body) put in place of a placeholder input's just before signing, so
//! the SDK signs, sends and parses what the function sent. The function's time above this floor
//! is its own code's: the MCP transport, the runtime, the use case; the SDK's part of a call is
//! this floor less the bench's raw-socket one.
//!
//! One event per line on standard input, a JSON array of calls, each
//! `{"operation": "DynamoDB UpdateItem", "target": "/", "headers": [[name, value], ...],
//! "body": base64}`; one line per event on standard output: `{"wall_ms": ..., "cpu_ms": ...}`
//! (the calls' wall time, and this thread's CPU for them), with `object_bytes` (what GetObject
//! bodies held, so a replay that fetched the wrong object shows), or `{"error": ...}`. Reads the
//! environment Lambda gives a function (region, credentials, AWS_ENDPOINT_URL). Linux only (the
//! thread's CPU time from /proc). Run by bench/mcp_latency.py and bench/warm.py; built by
//! `make bench`.

use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_types::body::SdkBody;
use base64::Engine;
use serde::Deserialize;

use adapters::aws::{dynamodb_client, load_sdk_config, s3_client, SdkClient};
use adapters::sagemaker::sagemaker_client;
use adapters::sagemaker_runtime::sagemaker_runtime_client;
use adapters::sqs::sqs_client;

#[path = "support/thread_cpu.rs"]
mod thread_cpu;
use thread_cpu::thread_cpu_ns;

/// Headers the SDK sets for each request itself (signing, retries, its user agent), or that
/// follow from the body: the SDK's own are kept, the recorded ones dropped.
const SDK_OWN: &[&str] = &[
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
    "user-agent",
    "x-amz-user-agent",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "expect",
];

#[derive(Deserialize)]
struct Call {
    operation: String,
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// A recorded request, ready to take a placeholder's place.
struct Recorded {
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    fn of(call: &Call) -> Result<Self, String> {
        let body = base64::engine::general_purpose::STANDARD
            .decode(&call.body)
            .map_err(|e| format!("{}: body is not base64: {e}", call.operation))?;
        Ok(Self {
            target: call.target.clone(),
            headers: call.headers.clone(),
            body,
        })
    }

    /// The placeholder's request becomes the recorded one, on the SDK's endpoint.
    fn put_in(&self, request: &mut HttpRequest) {
        let uri = request.uri().to_owned();
        let origin_end = uri
            .find("://")
            .and_then(|scheme| uri[scheme + 3..].find('/').map(|path| scheme + 3 + path))
            .unwrap_or(uri.len());
        let _ = request.set_uri(format!("{}{}", &uri[..origin_end], self.target));
        let placeholder: Vec<String> = request
            .headers()
            .iter()
            .map(|(name, _)| name.to_owned())
            .filter(|name| !SDK_OWN.contains(&name.to_ascii_lowercase().as_str()))
            .collect();
        for name in placeholder {
            request.headers_mut().remove(name);
        }
        for (name, value) in &self.headers {
            if !SDK_OWN.contains(&name.to_ascii_lowercase().as_str()) {
                request.headers_mut().insert(name.clone(), value.clone());
            }
        }
        request
            .headers_mut()
            .insert("content-length", self.body.len().to_string());
        *request.body_mut() = SdkBody::from(self.body.clone());
    }
}

/// `operation` (a fluent builder, its input a placeholder) sent with the recorded request in place.
macro_rules! replayed {
    ($operation:expr, $put_in:expr) => {
        answered($operation.customize().mutate_request($put_in).send().await).map(|()| 0)
    };
}

struct Clients {
    dynamodb: SdkClient<aws_sdk_dynamodb::Client>,
    s3: SdkClient<aws_sdk_s3::Client>,
    sagemaker_runtime: SdkClient<aws_sdk_sagemakerruntime::Client>,
    sagemaker: SdkClient<aws_sdk_sagemaker::Client>,
    sqs: SdkClient<aws_sdk_sqs::Client>,
}

impl Clients {
    /// One call through its operation; a service's refusal (a condition that failed) is an
    /// answer like any other, only a call that got none is an error. The bytes of an object's
    /// body it read.
    async fn call(&self, operation: &str, recorded: Recorded) -> Result<usize, String> {
        let put_in = move |r: &mut HttpRequest| recorded.put_in(r);
        let key = || AttributeValue::S("k".into());
        let sent = match operation {
            "DynamoDB GetItem" => replayed!(
                self.dynamodb.get_item().table_name("t").key("k", key()),
                put_in
            ),
            "DynamoDB PutItem" => replayed!(
                self.dynamodb.put_item().table_name("t").item("k", key()),
                put_in
            ),
            "DynamoDB Query" => replayed!(self.dynamodb.query().table_name("t"), put_in),
            "DynamoDB UpdateItem" => replayed!(
                self.dynamodb.update_item().table_name("t").key("k", key()),
                put_in
            ),
            "SageMakerRuntime InvokeEndpointAsync" => replayed!(
                self.sagemaker_runtime
                    .invoke_endpoint_async()
                    .endpoint_name("e")
                    .input_location("s3://b/k"),
                put_in
            ),
            // submit_job's look at the endpoint's instance count, every 30 s.
            "SageMaker DescribeEndpoint" => replayed!(
                self.sagemaker.describe_endpoint().endpoint_name("e"),
                put_in
            ),
            "S3 PutObject" => replayed!(self.s3.put_object().bucket("b").key("k"), put_in),
            // The body read whole, as notification-handler reads an output's first bytes.
            "S3 GetObject" => {
                let sent = self
                    .s3
                    .get_object()
                    .bucket("b")
                    .key("k")
                    .customize()
                    .mutate_request(put_in)
                    .send()
                    .await;
                match sent {
                    Ok(object) => object
                        .body
                        .collect()
                        .await
                        .map(|body| body.into_bytes().len())
                        .map_err(|e| e.to_string()),
                    Err(e) => answered::<(), _>(Err(e)).map(|()| 0),
                }
            }
            // pipeline-router's completion message.
            "SQS SendMessage" => replayed!(
                self.sqs.send_message().queue_url("q").message_body("m"),
                put_in
            ),
            other => return Err(format!("no replay through the SDK for {other}")),
        };
        sent.map_err(|e| format!("{operation}: {e}"))
    }
}

fn answered<O, E: std::error::Error + 'static>(
    sent: Result<
        O,
        aws_smithy_runtime_api::client::result::SdkError<
            E,
            aws_smithy_runtime_api::client::orchestrator::HttpResponse,
        >,
    >,
) -> Result<(), String> {
    use aws_smithy_runtime_api::client::result::SdkError;
    match sent {
        Ok(_) | Err(SdkError::ServiceError(_)) => Ok(()),
        Err(e) => Err(aws_smithy_types::error::display::DisplayErrorContext(&e).to_string()),
    }
}

async fn replay(clients: &Clients, line: &str) -> Result<(Duration, u64, usize), String> {
    let calls: Vec<Call> = serde_json::from_str(line).map_err(|e| format!("bad event: {e}"))?;
    // Decoded before the clock starts: the function never does this work.
    let recorded = calls
        .iter()
        .map(|call| Ok((call.operation.as_str(), Recorded::of(call)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let cpu = thread_cpu_ns().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut object_bytes = 0;
    for (operation, recorded) in recorded {
        object_bytes += clients.call(operation, recorded).await?;
    }
    let wall = started.elapsed();
    let cpu = thread_cpu_ns().map_err(|e| e.to_string())? - cpu;
    Ok((wall, cpu, object_bytes))
}

fn main() -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let sdk = load_sdk_config().await;
        let clients = Clients {
            dynamodb: dynamodb_client(&sdk),
            s3: s3_client(&sdk),
            sagemaker_runtime: sagemaker_runtime_client(&sdk, Duration::from_secs(10)),
            sagemaker: sagemaker_client(&sdk),
            sqs: sqs_client(&sdk),
        };
        let mut out = io::stdout().lock();
        for line in io::stdin().lock().lines() {
            let answer = match replay(&clients, &line?).await {
                Ok((wall, cpu, object_bytes)) => serde_json::json!({
                    "wall_ms": wall.as_secs_f64() * 1e3,
                    "cpu_ms": cpu as f64 / 1e6,
                    "object_bytes": object_bytes,
                }),
                Err(error) => serde_json::json!({ "error": error }),
            };
            writeln!(out, "{answer}")?;
            out.flush()?;
        }
        Ok(())
    })
}
