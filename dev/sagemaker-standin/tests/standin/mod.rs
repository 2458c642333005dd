//! The stand-in as each test file starts it: its own process on a free port, the real SDK
//! pointed at it, and its control API.

// Each test file uses part of this.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aws_sdk_sagemakerruntime::config::retry::RetryConfig;
use aws_sdk_sagemakerruntime::config::timeout::TimeoutConfig;
use aws_sdk_sagemakerruntime::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sagemakerruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sagemakerruntime::operation::invoke_endpoint_async::InvokeEndpointAsyncError;
use serde_json::{json, Value};

/// The HTTP status a failed call was answered with.
pub fn status(err: &SdkError<InvokeEndpointAsyncError>) -> Option<u16> {
    err.raw_response().map(|r| r.status().as_u16())
}

/// A call refused for its request, as SageMaker refuses one: ValidationError, HTTP 400, and
/// this message.
pub fn assert_validation_error(err: &SdkError<InvokeEndpointAsyncError>, message: &str) {
    assert_eq!(err.code(), Some("ValidationError"), "{err:?}");
    assert_eq!(status(err), Some(400));
    assert_eq!(err.message(), Some(message));
}

pub struct Standin {
    url: String,
    child: Child,
    http: reqwest::Client,
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(hang_millis: u64) -> Standin {
    start_with(&["--hang-millis", &hang_millis.to_string()])
}

/// With these arguments after `--port 0 --inference-millis 10`.
pub fn start_with(args: &[&str]) -> Standin {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sagemaker-standin"));
    command
        .args(["--port", "0", "--inference-millis", "10"])
        .args(args)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // The jobs the stand-in runs read and write S3: moto when the local stack is up, else a
    // closed local port, never a real account.
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        command
            .env("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing");
    }
    // The workspace's reqwest has rustls, which needs its provider chosen first.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let http = reqwest::Client::new();
    // Owned by the Standin at once, so a failure from here on still stops the process.
    let mut standin = Standin {
        url: String::new(),
        child: command.spawn().expect("start the stand-in"),
        http,
    };
    let mut line = String::new();
    BufReader::new(standin.child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("read the stand-in's first line");
    standin.url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the stand-in printed {line:?}"))
        .to_owned();
    standin
}

impl Standin {
    /// The SDK as a product would configure it: standard retries (3 attempts), only with a
    /// short backoff so the tests are quick.
    pub fn client(&self, attempt_timeout: Option<Duration>) -> aws_sdk_sagemakerruntime::Client {
        let mut timeouts = TimeoutConfig::builder();
        if let Some(t) = attempt_timeout {
            timeouts = timeouts.operation_attempt_timeout(t);
        }
        let conf = aws_sdk_sagemakerruntime::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
            .endpoint_url(&self.url)
            .retry_config(RetryConfig::standard().with_initial_backoff(Duration::from_millis(10)))
            .timeout_config(timeouts.build())
            .build();
        aws_sdk_sagemakerruntime::Client::from_conf(conf)
    }

    pub async fn control(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.url))
            .body(body.to_string())
            .send()
            .await
            .expect("control API call");
        let status = response.status().as_u16();
        let text = response.text().await.expect("control API body");
        (
            status,
            serde_json::from_str(&text).expect("control API answers JSON"),
        )
    }

    /// A control-plane operation (awsJson1_1) as sent raw: its status and body.
    pub async fn sagemaker(&self, operation: &str, input: Value) -> (u16, Value) {
        let response = self
            .http
            .post(&self.url)
            .header("x-amz-target", format!("SageMaker.{operation}"))
            .header("content-type", "application/x-amz-json-1.1")
            .body(input.to_string())
            .send()
            .await
            .expect("control-plane call");
        let status = response.status().as_u16();
        let text = response.text().await.expect("control-plane body");
        (status, serde_json::from_str(&text).expect("JSON"))
    }

    pub async fn arm(&self, fault: &str, times: u64) {
        let (status, body) = self
            .control(
                reqwest::Method::POST,
                "/_standin/faults",
                json!({"fault": fault, "times": times}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// The recorded calls for one inference id.
    pub async fn invocations(&self, inference_id: &str) -> Vec<Value> {
        let (_, body) = self
            .control(reqwest::Method::GET, "/_standin/invocations", Value::Null)
            .await;
        body["invocations"]
            .as_array()
            .expect("invocations list")
            .iter()
            .filter(|i| i["inference_id"] == inference_id)
            .cloned()
            .collect()
    }

    /// The recorded calls' faults, for one inference id.
    pub async fn calls(&self, inference_id: &str) -> Vec<Value> {
        let calls = self.invocations(inference_id).await;
        calls.iter().map(|i| i["fault"].clone()).collect()
    }
}
