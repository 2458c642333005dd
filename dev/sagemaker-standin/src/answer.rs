//! How the stand-in's answers are shaped: SageMaker's errors (awsJson1_1) and SageMaker
//! Runtime's (restJson), the fields and times they carry, and the control API's JSON. It
//! imports nothing of the stand-in, so every module may answer with it.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// An error as the SageMaker control plane (awsJson1_1) sends it: status, `__type`, message.
pub struct AwsError(pub StatusCode, pub &'static str, pub String);

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

pub fn validation(message: impl Into<String>) -> AwsError {
    AwsError(
        StatusCode::BAD_REQUEST,
        "ValidationException",
        message.into(),
    )
}

pub fn str_field<'a>(input: &'a Value, name: &str) -> Result<&'a str, AwsError> {
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

/// A time as awsJson carries it: seconds since the epoch.
pub fn epoch(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

/// A time as SNS and the async notification write it: RFC 3339 with milliseconds.
pub fn millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An error as SageMaker Runtime (restJson) sends it: the SDK takes the code from
/// `x-amzn-errortype` and the message from the body.
pub fn runtime_error(status: StatusCode, code: &str, message: String) -> Response {
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

/// An answer of the control API (`/_standin/...`).
pub fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub fn control_error(message: String) -> Response {
    json_response(StatusCode::BAD_REQUEST, json!({ "message": message }))
}

/// SageMaker's idempotency tokens are 32 to 128 characters; a product that derives shorter
/// ones must fail here as it would against AWS.
pub fn client_request_token(input: &Value) -> Result<Option<&str>, AwsError> {
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
