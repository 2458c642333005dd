//! The injected InvokeEndpointAsync faults as the real Rust SDK sees them. Each test starts its
//! own stand-in, so armed faults and recorded calls never leak between tests. Only what the
//! caller sees is checked here; S3 (moto) may be absent.

mod standin;

use std::time::Duration;

use aws_sdk_sagemakerruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sagemakerruntime::operation::invoke_endpoint_async::InvokeEndpointAsyncError;
use serde_json::{json, Value};

use standin::{assert_validation_error, start, status};

async fn invoke(
    client: &aws_sdk_sagemakerruntime::Client,
    inference_id: &str,
) -> Result<
    aws_sdk_sagemakerruntime::operation::invoke_endpoint_async::InvokeEndpointAsyncOutput,
    SdkError<InvokeEndpointAsyncError>,
> {
    client
        .invoke_endpoint_async()
        .endpoint_name("mcp-doc-processor-async")
        .input_location("s3://io-bucket/inputs/doc.json")
        .inference_id(inference_id)
        .send()
        .await
}

#[tokio::test]
async fn accept_then_500_is_an_internal_failure_on_every_attempt_when_armed_three_times() {
    let standin = start(5000);
    standin.arm("accept-then-500", 3).await;
    let err = invoke(&standin.client(None), "job-500").await.unwrap_err();
    assert_eq!(err.code(), Some("InternalFailure"), "{err:?}");
    assert_eq!(status(&err), Some(500));
    assert!(matches!(
        err.as_service_error(),
        Some(InvokeEndpointAsyncError::InternalFailure(_))
    ));
    // The SDK tried three times, and each attempt was queued.
    assert_eq!(
        standin.calls("job-500").await,
        vec![json!("accept-then-500"); 3]
    );
}

#[tokio::test]
async fn accept_then_500_once_is_hidden_by_the_sdk_retry() {
    let standin = start(5000);
    standin.arm("accept-then-500", 1).await;
    let out = invoke(&standin.client(None), "job-retried").await.unwrap();
    assert_eq!(out.inference_id(), Some("job-retried"));
    assert!(out
        .output_location()
        .unwrap()
        .starts_with("s3://io-bucket/outputs/"));
    // Two calls, so the job runs twice: what a caller's retry does to SageMaker too.
    assert_eq!(
        standin.calls("job-retried").await,
        vec![json!("accept-then-500"), Value::Null]
    );
}

#[tokio::test]
async fn accept_then_hang_is_a_timeout_for_a_client_that_waits_less() {
    // The stand-in holds each answer for a minute: far beyond the client's three attempts.
    let standin = start(60_000);
    standin.arm("accept-then-hang", 3).await;
    let client = standin.client(Some(Duration::from_millis(300)));
    let err = invoke(&client, "job-hang").await.unwrap_err();
    assert!(matches!(err, SdkError::TimeoutError(_)), "{err:?}");
    // Counted, not timed: three attempts reached the stand-in and the client gave up on each
    // before it was answered.
    let calls = standin.invocations("job-hang").await;
    assert_eq!(calls.len(), 3, "{calls:?}");
    for call in &calls {
        assert_eq!(call["fault"], "accept-then-hang");
        assert_eq!(call["answered"], false, "{call}");
    }
}

#[tokio::test]
async fn accept_then_hang_ends_in_an_internal_failure_for_a_patient_client() {
    let standin = start(200);
    standin.arm("accept-then-hang", 3).await;
    let err = invoke(&standin.client(None), "job-slow").await.unwrap_err();
    assert_eq!(err.code(), Some("InternalFailure"), "{err:?}");
    assert_eq!(status(&err), Some(500));
    let calls = standin.invocations("job-slow").await;
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls.iter().all(|c| c["answered"] == true), "{calls:?}");
}

#[tokio::test]
async fn refuse_400_is_a_validation_error_and_not_retried() {
    let standin = start(5000);
    standin.arm("refuse-400", 1).await;
    let err = invoke(&standin.client(None), "job-refused")
        .await
        .unwrap_err();
    assert_validation_error(
        &err,
        "Endpoint mcp-doc-processor-async of account 123456789012 not found.",
    );
    assert_eq!(
        standin.calls("job-refused").await,
        vec![json!("refuse-400")]
    );
}

#[tokio::test]
async fn accept_silently_answers_as_a_normal_call() {
    let standin = start(5000);
    standin.arm("accept-silently", 1).await;
    let out = invoke(&standin.client(None), "job-silent").await.unwrap();
    assert_eq!(out.inference_id(), Some("job-silent"));
    assert!(out.failure_location().is_some());
    assert_eq!(
        standin.calls("job-silent").await,
        vec![json!("accept-silently")]
    );
    // The next call has no fault left.
    invoke(&standin.client(None), "job-after").await.unwrap();
    assert_eq!(standin.calls("job-after").await, vec![Value::Null]);
}

#[tokio::test]
async fn the_control_api_names_the_bad_field_and_clears() {
    let standin = start(5000);
    let post = |body| standin.control(reqwest::Method::POST, "/_standin/faults", body);
    let (status, body) = post(json!({"fault": "explode"})).await;
    assert_eq!(status, 400);
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("fault must be one of"));
    let (status, body) = post(json!({"fault": "refuse-400", "times": 0})).await;
    assert_eq!(status, 400);
    assert!(body["message"].as_str().unwrap().starts_with("times "));

    let (status, body) = post(json!({"fault": "refuse-400", "times": 2})).await;
    assert_eq!(
        (status, body),
        (200, json!({"faults": ["refuse-400", "refuse-400"]}))
    );
    let (_, body) = post(json!({"fault": "accept-silently"})).await;
    assert_eq!(
        body,
        json!({"faults": ["refuse-400", "refuse-400", "accept-silently"]})
    );
    let (status, body) = standin
        .control(reqwest::Method::DELETE, "/_standin/faults", Value::Null)
        .await;
    assert_eq!((status, body), (200, json!({"faults": []})));

    invoke(&standin.client(None), "job-plain").await.unwrap();
    assert_eq!(standin.calls("job-plain").await, vec![Value::Null]);
    standin
        .control(
            reqwest::Method::DELETE,
            "/_standin/invocations",
            Value::Null,
        )
        .await;
    assert!(standin.calls("job-plain").await.is_empty());
}
