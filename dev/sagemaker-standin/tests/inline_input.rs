//! InvokeEndpointAsync with the input inline (the request's Body) as the real Rust SDK sends
//! it: the job runs as for an input in S3, and the notification names no input location. Each
//! test starts its own stand-in. The notification is caught by a stand-in for the local Lambda
//! invoke API; the outcome in S3 is read back only when the local stack (moto) is up.

mod standin;

use std::time::Duration;

use aws_sdk_sagemakerruntime::error::SdkError;
use aws_sdk_sagemakerruntime::operation::invoke_endpoint_async::InvokeEndpointAsyncError;
use aws_sdk_sagemakerruntime::primitives::Blob;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use standin::{assert_validation_error, start, start_with, Standin};

const ENDPOINT: &str = "mcp-doc-processor-async";

/// A JSON document of exactly `len` bytes, for the model to read.
fn document_of(len: usize) -> Vec<u8> {
    let padding = len - r#"{"inputs":""}"#.len();
    format!(r#"{{"inputs":"{}"}}"#, "a".repeat(padding)).into_bytes()
}

/// Plays the local Lambda invoke API: every event delivered to a function, in order.
async fn lambda() -> (String, mpsc::UnboundedReceiver<(String, Value)>) {
    async fn invoke(
        State(events): State<mpsc::UnboundedSender<(String, Value)>>,
        Path(function): Path<String>,
        body: String,
    ) -> StatusCode {
        let event = serde_json::from_str(&body).expect("events are JSON");
        let _ = events.send((function, event));
        StatusCode::ACCEPTED
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new()
        .route("/2015-03-31/functions/{function}/invocations", post(invoke))
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// The next async inference notification: the SNS message delivered to notification-handler.
async fn notification(events: &mut mpsc::UnboundedReceiver<(String, Value)>) -> Value {
    // Without moto the stand-in's S3 write is retried against a closed port first.
    let (function, event) = tokio::time::timeout(Duration::from_secs(20), events.recv())
        .await
        .expect("a notification within 20 s")
        .expect("the Lambda stand-in runs");
    assert_eq!(function, "notification-handler");
    let message = event["Records"][0]["Sns"]["Message"]
        .as_str()
        .expect("an SNS message");
    serde_json::from_str(message).expect("the message is JSON")
}

/// The object at `location` when the local stack is up; None without it.
async fn s3_object(location: &str) -> Option<Value> {
    std::env::var_os("AWS_ENDPOINT_URL")?;
    let (bucket, key) = location
        .strip_prefix("s3://")
        .and_then(|rest| rest.split_once('/'))
        .expect("an s3:// location");
    let sdk = aws_config::load_from_env().await;
    let conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(true)
        .build();
    let object = aws_sdk_s3::Client::from_conf(conf)
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("read {location}: {e:?}"));
    let bytes = object.body.collect().await.expect("the object's body");
    Some(serde_json::from_slice(&bytes.into_bytes()).expect("the output is JSON"))
}

async fn invoke_inline(
    standin: &Standin,
    inference_id: &str,
    body: Vec<u8>,
) -> Result<
    aws_sdk_sagemakerruntime::operation::invoke_endpoint_async::InvokeEndpointAsyncOutput,
    SdkError<InvokeEndpointAsyncError>,
> {
    standin
        .client(None)
        .invoke_endpoint_async()
        .endpoint_name(ENDPOINT)
        .content_type("application/json")
        .accept("application/json")
        .inference_id(inference_id)
        .body(Blob::new(body))
        .send()
        .await
}

async fn armed(standin: &Standin) -> Value {
    let (_, body) = standin
        .control(reqwest::Method::GET, "/_standin/faults", Value::Null)
        .await;
    body["faults"].clone()
}

#[tokio::test]
async fn an_inline_input_completes_and_its_notification_names_no_input_location() {
    let (lambda_url, mut events) = lambda().await;
    let standin = start_with(&["--lambda-invoke-url", &lambda_url]);
    let out = invoke_inline(
        &standin,
        "inline-1",
        br#"{"inputs": "invoice 42"}"#.to_vec(),
    )
    .await
    .unwrap();
    assert_eq!(out.inference_id(), Some("inline-1"));
    let output = out.output_location().unwrap();
    assert!(
        output.starts_with("s3://mcp-sagemaker-async-io/outputs/"),
        "{output}"
    );
    assert!(out
        .failure_location()
        .unwrap()
        .starts_with("s3://mcp-sagemaker-async-io/failures/"));

    let message = notification(&mut events).await;
    assert_eq!(message["inferenceId"], "inline-1");
    assert_eq!(message["invocationStatus"], "Completed", "{message}");
    assert_eq!(
        message["requestParameters"],
        json!({"contentType": "application/json", "endpointName": ENDPOINT})
    );
    assert_eq!(message["responseParameters"]["outputLocation"], output);

    if let Some(result) = s3_object(output).await {
        assert_eq!(result["label"], "invoice", "{result}");
        assert_eq!(result["words"], 2);
    }
}

#[tokio::test]
async fn an_inline_input_the_model_fails_on_is_a_failure_without_input_location() {
    let (lambda_url, mut events) = lambda().await;
    let standin = start_with(&["--lambda-invoke-url", &lambda_url]);
    let out = invoke_inline(&standin, "inline-fail", br#"{"inputs": "FAIL"}"#.to_vec())
        .await
        .unwrap();
    let message = notification(&mut events).await;
    assert_eq!(message["invocationStatus"], "Failed", "{message}");
    assert!(message["requestParameters"].get("inputLocation").is_none());
    assert_eq!(
        message["responseParameters"]["failureLocation"],
        out.failure_location().unwrap()
    );
}

#[tokio::test]
async fn an_input_in_s3_still_has_its_location_in_the_notification() {
    let (lambda_url, mut events) = lambda().await;
    let standin = start_with(&["--lambda-invoke-url", &lambda_url]);
    standin
        .client(None)
        .invoke_endpoint_async()
        .endpoint_name(ENDPOINT)
        .input_location("s3://io-bucket/inputs/doc.json")
        .inference_id("in-s3")
        .send()
        .await
        .unwrap();
    // Completed or, without moto (or that object), Failed: either names the input.
    let message = notification(&mut events).await;
    assert_eq!(
        message["requestParameters"]["inputLocation"],
        "s3://io-bucket/inputs/doc.json"
    );
}

#[tokio::test]
async fn an_inline_body_of_128000_bytes_is_taken_and_one_more_is_refused_before_any_fault() {
    let standin = start(5000);
    standin.arm("refuse-400", 1).await;
    let err = invoke_inline(&standin, "inline-too-big", document_of(128_001))
        .await
        .unwrap_err();
    assert_validation_error(
        &err,
        "1 validation error detected: the inline Body is limited to 128,000 bytes (got 128001)",
    );
    // Refused for its input: the armed fault waits for the next call.
    assert_eq!(armed(&standin).await, json!(["refuse-400"]));
    let refused = standin.invocations("inline-too-big").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["inline_bytes"], 128_001);
    assert_eq!(refused[0]["output_location"], Value::Null);
    assert_eq!(refused[0]["fault"], Value::Null);

    standin
        .control(reqwest::Method::DELETE, "/_standin/faults", Value::Null)
        .await;
    let out = invoke_inline(&standin, "inline-at-limit", document_of(128_000))
        .await
        .unwrap();
    assert_eq!(out.inference_id(), Some("inline-at-limit"));
    let taken = standin.invocations("inline-at-limit").await;
    assert_eq!(taken[0]["inline_bytes"], 128_000);
    assert_eq!(taken[0]["output_location"], out.output_location().unwrap());
}

#[tokio::test]
async fn a_body_with_an_input_location_is_refused_before_any_fault() {
    let standin = start(5000);
    standin.arm("accept-then-500", 1).await;
    let err = standin
        .client(None)
        .invoke_endpoint_async()
        .endpoint_name(ENDPOINT)
        .input_location("s3://io-bucket/inputs/doc.json")
        .body(Blob::new(br#"{"inputs": "invoice"}"#.to_vec()))
        .inference_id("inline-and-s3")
        .send()
        .await
        .unwrap_err();
    assert_validation_error(
        &err,
        "1 validation error detected: Body and InputLocation are exclusive: give the input \
         inline or in S3, not both",
    );
    assert_eq!(armed(&standin).await, json!(["accept-then-500"]));
    let calls = standin.invocations("inline-and-s3").await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["input_location"], "s3://io-bucket/inputs/doc.json");
    assert_eq!(calls[0]["inline_bytes"], 21);
    assert_eq!(calls[0]["output_location"], Value::Null);
}

#[tokio::test]
async fn the_invocations_record_says_how_the_input_came() {
    let standin = start(5000);
    standin
        .client(None)
        .invoke_endpoint_async()
        .endpoint_name(ENDPOINT)
        .content_type("text/csv")
        .accept("application/json")
        .body(Blob::new(b"invoice,42".to_vec()))
        .inference_id("by-body")
        .send()
        .await
        .unwrap();
    standin
        .client(None)
        .invoke_endpoint_async()
        .endpoint_name(ENDPOINT)
        .input_location("s3://io-bucket/inputs/doc.json")
        .inference_id("by-location")
        .send()
        .await
        .unwrap();

    let inline = &standin.invocations("by-body").await[0];
    assert_eq!(inline["content_type"], "text/csv");
    assert_eq!(inline["accept"], "application/json");
    assert_eq!(inline["inline_bytes"], 10);
    assert_eq!(inline["input_location"], Value::Null);
    assert_eq!(inline["fault"], Value::Null);
    assert_eq!(inline["answered"], true);
    assert!(inline["output_location"]
        .as_str()
        .unwrap()
        .starts_with("s3://mcp-sagemaker-async-io/outputs/"));

    let in_s3 = &standin.invocations("by-location").await[0];
    assert_eq!(in_s3["content_type"], Value::Null);
    assert_eq!(in_s3["accept"], Value::Null);
    assert_eq!(in_s3["inline_bytes"], Value::Null);
    assert_eq!(in_s3["input_location"], "s3://io-bucket/inputs/doc.json");
}

#[tokio::test]
async fn faults_apply_to_inline_inputs_and_a_retry_sends_the_body_again() {
    let standin = start(5000);
    standin.arm("accept-then-500", 1).await;
    let out = invoke_inline(&standin, "inline-retried", document_of(100))
        .await
        .unwrap();
    assert_eq!(out.inference_id(), Some("inline-retried"));
    let calls = standin.invocations("inline-retried").await;
    let seen: Vec<_> = calls
        .iter()
        .map(|c| (c["fault"].clone(), c["inline_bytes"].clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (json!("accept-then-500"), json!(100)),
            (Value::Null, json!(100))
        ]
    );
}
