//! SageMaker asynchronous inference notifications, as they arrive in an SNS message.
//!
//! Two shapes are accepted: the one AWS documents (`invocationStatus`, `requestParameters`,
//! `responseParameters`, optional `responseBody`) and the simplified one of the seed documents
//! (top-level `outputLocation`, `failureCode`, `failureMessage`, `failurePath`).

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::ids::InferenceId;
use crate::s3_location::{BadS3Location, S3Location};
use crate::time::parse_rfc3339;

/// SageMaker inference ids are at most 64 characters; anything far past that is not one, and
/// a DynamoDB partition key is limited to 2048 bytes.
const MAX_INFERENCE_ID_BYTES: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum NotificationError {
    #[error("message is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("message is not a JSON object")]
    NotAnObject,
    #[error("message is not a SageMaker notification: {0}")]
    BadShape(#[source] serde_json::Error),
    #[error("eventSource is {0:?}, expected \"aws:sagemaker\"")]
    WrongEventSource(String),
    #[error("message has no inferenceId")]
    MissingInferenceId,
    #[error("inferenceId is {0} bytes long, more than the {MAX_INFERENCE_ID_BYTES} allowed")]
    InferenceIdTooLong(usize),
    #[error("invocationStatus {0:?} is unknown (expected \"Completed\" or \"Failed\")")]
    UnknownStatus(String),
    #[error("message has no invocationStatus, and neither an outputLocation nor failure fields to tell the outcome by")]
    UndeterminedOutcome,
    #[error("Completed notification has neither an outputLocation nor a responseBody")]
    MissingOutput,
    #[error("outputLocation: {0}")]
    BadOutputLocation(#[source] BadS3Location),
}

/// What one SNS message says.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// Published by SageMaker when an endpoint's notification config is created or updated.
    Test,
    Outcome(InferenceOutcome),
}

#[derive(Debug, Clone, PartialEq)]
pub struct InferenceOutcome {
    pub inference_id: InferenceId,
    pub endpoint_name: Option<String>,
    pub input_location: Option<String>,
    /// When SageMaker finished the request.
    pub event_time: Option<DateTime<Utc>>,
    /// When SageMaker accepted the request.
    pub received_time: Option<DateTime<Utc>>,
    pub kind: OutcomeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OutcomeKind {
    Completed {
        output_location: Option<S3Location>,
        content_type: Option<String>,
        /// The decoded `responseBody`, present when the endpoint includes responses (<= 128 KB).
        response_body: Option<Vec<u8>>,
    },
    Failed {
        failure_reason: String,
        /// Kept as given: it is only read when it is an `s3://` location.
        failure_location: Option<String>,
    },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawNotification {
    event_source: Option<String>,
    event_time: Option<String>,
    received_time: Option<String>,
    invocation_status: Option<String>,
    failure_reason: Option<String>,
    inference_id: Option<String>,
    request_parameters: Option<RawRequestParameters>,
    response_parameters: Option<RawResponseParameters>,
    response_body: Option<RawResponseBody>,
    // The seed documents' simplified shape.
    endpoint_name: Option<String>,
    output_location: Option<String>,
    content_type: Option<String>,
    failure_code: Option<String>,
    failure_message: Option<String>,
    failure_path: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawRequestParameters {
    endpoint_name: Option<String>,
    input_location: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawResponseParameters {
    content_type: Option<String>,
    output_location: Option<String>,
    failure_location: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RawResponseBody {
    content: Option<String>,
    encoding: Option<String>,
}

/// Parses the `Message` of an SNS record sent by a SageMaker async endpoint.
pub fn parse_notification(message: &str) -> Result<Notification, NotificationError> {
    let value: Value = serde_json::from_str(message).map_err(NotificationError::NotJson)?;
    let Value::Object(fields) = &value else {
        return Err(NotificationError::NotAnObject);
    };
    if fields.get("eventName").and_then(Value::as_str) == Some("TestNotification") {
        return Ok(Notification::Test);
    }
    let raw: RawNotification =
        serde_json::from_value(value).map_err(NotificationError::BadShape)?;

    if let Some(source) = raw.event_source.as_deref() {
        if !source.eq_ignore_ascii_case("aws:sagemaker") {
            return Err(NotificationError::WrongEventSource(source.to_owned()));
        }
    }
    let inference_id =
        non_empty(raw.inference_id.clone()).ok_or(NotificationError::MissingInferenceId)?;
    if inference_id.len() > MAX_INFERENCE_ID_BYTES {
        return Err(NotificationError::InferenceIdTooLong(inference_id.len()));
    }

    let request = raw.request_parameters.unwrap_or_default();
    let response = raw.response_parameters.unwrap_or_default();
    let output_location = non_empty(response.output_location).or(non_empty(raw.output_location));
    let failure_location = non_empty(response.failure_location).or(non_empty(raw.failure_path));

    let failed = match raw.invocation_status.as_deref() {
        Some("Completed") => false,
        Some("Failed") => true,
        Some(other) => return Err(NotificationError::UnknownStatus(other.to_owned())),
        // The seed shape carries no status: failure fields mean failure, an output means success.
        None if raw.failure_code.is_some()
            || raw.failure_message.is_some()
            || failure_location.is_some() =>
        {
            true
        }
        None if output_location.is_some() => false,
        None => return Err(NotificationError::UndeterminedOutcome),
    };

    let kind = if failed {
        OutcomeKind::Failed {
            failure_reason: failure_reason(
                &raw.failure_reason,
                &raw.failure_code,
                &raw.failure_message,
            ),
            failure_location,
        }
    } else {
        let response_body = raw.response_body.and_then(decode_response_body);
        let output_location = output_location
            .map(|l| l.parse::<S3Location>())
            .transpose()
            .map_err(NotificationError::BadOutputLocation)?;
        if output_location.is_none() && response_body.is_none() {
            return Err(NotificationError::MissingOutput);
        }
        OutcomeKind::Completed {
            output_location,
            content_type: non_empty(response.content_type).or(non_empty(raw.content_type)),
            response_body,
        }
    };

    Ok(Notification::Outcome(InferenceOutcome {
        inference_id: inference_id.into(),
        endpoint_name: non_empty(request.endpoint_name).or(non_empty(raw.endpoint_name)),
        input_location: non_empty(request.input_location),
        event_time: raw.event_time.as_deref().and_then(parse_rfc3339),
        received_time: raw.received_time.as_deref().and_then(parse_rfc3339),
        kind,
    }))
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

fn failure_reason(
    reason: &Option<String>,
    code: &Option<String>,
    message: &Option<String>,
) -> String {
    let parts = [reason, code, message];
    let text: Vec<&str> = parts
        .iter()
        .filter_map(|p| p.as_deref().map(str::trim))
        .filter(|p| !p.is_empty())
        .collect();
    if text.is_empty() {
        "SageMaker reported a failure without a reason".to_owned()
    } else {
        text.join(": ")
    }
}

/// A body that cannot be decoded is ignored: the output is then read from `outputLocation`.
fn decode_response_body(body: RawResponseBody) -> Option<Vec<u8>> {
    let content = body.content?;
    match body.encoding.as_deref() {
        Some(enc) if enc.eq_ignore_ascii_case("BASE64") => {
            match base64::engine::general_purpose::STANDARD.decode(content.trim()) {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    tracing::warn!(error = %e, "responseBody is not valid BASE64; reading the output from S3 instead");
                    None
                }
            }
        }
        _ => Some(content.into_bytes()),
    }
}

/// Where the SageMaker message sits in an SQS message body: inside an SNS envelope (the default
/// SNS-to-SQS subscription), or the body itself (raw message delivery).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsDelivery {
    /// The SNS MessageId when the body is an SNS envelope.
    pub sns_message_id: Option<String>,
    pub message: String,
}

pub fn unwrap_sqs_body(body: &str) -> SqsDelivery {
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Envelope {
        #[serde(rename = "Type")]
        kind: String,
        message_id: Option<String>,
        message: String,
    }
    match serde_json::from_str::<Envelope>(body) {
        Ok(env) if env.kind == "Notification" => SqsDelivery {
            sns_message_id: env.message_id,
            message: env.message,
        },
        _ => SqsDelivery {
            sns_message_id: None,
            message: body.to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(message: Value) -> InferenceOutcome {
        match parse_notification(&message.to_string()).unwrap() {
            Notification::Outcome(o) => o,
            Notification::Test => panic!("not a test notification"),
        }
    }

    fn real_success() -> Value {
        json!({
            "awsRegion": "us-east-1",
            "eventTime": "2026-11-20T10:15:01.902Z",
            "receivedTime": "2026-11-20T10:14:12.455Z",
            "invocationStatus": "Completed",
            "requestParameters": {"contentType": "application/json", "endpointName": "ep",
                "inputLocation": "s3://b/inputs/id-1.json"},
            "responseParameters": {"contentType": "application/json", "outputLocation": "s3://b/outputs/x.out"},
            "inferenceId": "id-1",
            "eventVersion": "1.0",
            "eventSource": "aws:sagemaker",
            "eventName": "InferenceResult"
        })
    }

    #[test]
    fn a_success_for_an_inline_input_has_no_input_location() {
        let mut message = real_success();
        message["requestParameters"]
            .as_object_mut()
            .unwrap()
            .remove("inputLocation");
        let o = outcome(message);
        assert_eq!(o.inference_id, "id-1");
        assert_eq!(o.endpoint_name.as_deref(), Some("ep"));
        assert_eq!(o.input_location, None);
        assert!(matches!(
            o.kind,
            OutcomeKind::Completed {
                output_location: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn real_success_shape() {
        let o = outcome(real_success());
        assert_eq!(o.inference_id, "id-1");
        assert_eq!(o.endpoint_name.as_deref(), Some("ep"));
        assert_eq!(o.input_location.as_deref(), Some("s3://b/inputs/id-1.json"));
        assert_eq!(
            o.event_time.unwrap().to_rfc3339(),
            "2026-11-20T10:15:01.902+00:00"
        );
        assert!(o.received_time.is_some());
        assert_eq!(
            o.kind,
            OutcomeKind::Completed {
                output_location: Some("s3://b/outputs/x.out".parse().unwrap()),
                content_type: Some("application/json".into()),
                response_body: None,
            }
        );
    }

    #[test]
    fn response_body_is_decoded() {
        let mut m = real_success();
        m["responseBody"] =
            json!({"content": "eyJsYWJlbCI6ICJvayJ9", "message": "", "encoding": "BASE64"});
        let OutcomeKind::Completed { response_body, .. } = outcome(m).kind else {
            panic!()
        };
        assert_eq!(response_body.unwrap(), br#"{"label": "ok"}"#);
    }

    #[test]
    fn undecodable_response_body_falls_back_to_the_output_location() {
        let mut m = real_success();
        m["responseBody"] = json!({"content": "***", "encoding": "BASE64"});
        let OutcomeKind::Completed {
            response_body,
            output_location,
            ..
        } = outcome(m).kind
        else {
            panic!()
        };
        assert!(response_body.is_none());
        assert!(output_location.is_some());
    }

    #[test]
    fn real_failure_shape() {
        let o = outcome(json!({
            "invocationStatus": "Failed",
            "failureReason": "ClientError: Received server error (500) from model.",
            "requestParameters": {"endpointName": "ep", "inputLocation": "s3://b/inputs/f.json"},
            "responseParameters": {"failureLocation": "s3://b/failures/f-error.out"},
            "inferenceId": "f", "eventSource": "aws:sagemaker", "eventName": "InferenceResult"
        }));
        assert_eq!(
            o.kind,
            OutcomeKind::Failed {
                failure_reason: "ClientError: Received server error (500) from model.".into(),
                failure_location: Some("s3://b/failures/f-error.out".into()),
            }
        );
    }

    #[test]
    fn failure_without_response_parameters_or_reason() {
        let o = outcome(
            json!({"invocationStatus": "Failed", "inferenceId": "f", "responseParameters": null}),
        );
        let OutcomeKind::Failed {
            failure_reason,
            failure_location,
        } = o.kind
        else {
            panic!()
        };
        assert!(failure_reason.contains("without a reason"));
        assert_eq!(failure_location, None);
    }

    #[test]
    fn seed_shapes() {
        let ok = outcome(
            json!({"eventSource": "aws:SageMaker", "inferenceId": "abc-1", "endpointName": "ep",
            "outputLocation": "s3://b/outputs/abc-1/output", "contentType": "application/json"}),
        );
        assert!(matches!(ok.kind, OutcomeKind::Completed { .. }));
        assert_eq!(ok.endpoint_name.as_deref(), Some("ep"));

        let failed = outcome(
            json!({"eventSource": "aws:SageMaker", "inferenceId": "abc-2",
            "failureCode": "InvocationTimeoutExceeded", "failureMessage": "no answer in 300 s",
            "outputLocation": null, "failurePath": "s3://b/outputs/abc-2/failure"}),
        );
        assert_eq!(
            failed.kind,
            OutcomeKind::Failed {
                failure_reason: "InvocationTimeoutExceeded: no answer in 300 s".into(),
                failure_location: Some("s3://b/outputs/abc-2/failure".into()),
            }
        );
    }

    #[test]
    fn test_notification_is_recognised_whatever_else_it_holds() {
        let n =
            parse_notification(r#"{"eventName":"TestNotification","eventSource":"aws:sagemaker"}"#)
                .unwrap();
        assert_eq!(n, Notification::Test);
    }

    #[test]
    fn bad_messages_say_what_is_wrong() {
        let cases: &[(&str, &str)] = &[
            ("not json", "not JSON"),
            ("[1,2]", "not a JSON object"),
            (
                r#"{"inferenceId": 7, "invocationStatus": "Completed"}"#,
                "not a SageMaker notification",
            ),
            (
                r#"{"invocationStatus":"Completed","outputLocation":"s3://b/k"}"#,
                "no inferenceId",
            ),
            (
                r#"{"inferenceId":"  ","invocationStatus":"Completed","outputLocation":"s3://b/k"}"#,
                "no inferenceId",
            ),
            (
                r#"{"inferenceId":"i","invocationStatus":"Pending"}"#,
                "\"Pending\" is unknown",
            ),
            (
                r#"{"inferenceId":"i"}"#,
                "neither an outputLocation nor failure fields",
            ),
            (
                r#"{"inferenceId":"i","invocationStatus":"Completed"}"#,
                "neither an outputLocation nor a responseBody",
            ),
            (
                r#"{"inferenceId":"i","invocationStatus":"Completed","outputLocation":"https://x/y"}"#,
                "outputLocation",
            ),
            (
                r#"{"inferenceId":"i","eventSource":"aws:s3","invocationStatus":"Completed"}"#,
                "eventSource is \"aws:s3\"",
            ),
        ];
        for (message, expected) in cases {
            let err = parse_notification(message).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{message}: {err:?} should contain {expected:?}"
            );
        }
        let long = format!(
            r#"{{"inferenceId":"{}","invocationStatus":"Failed"}}"#,
            "x".repeat(2000)
        );
        assert!(matches!(
            parse_notification(&long),
            Err(NotificationError::InferenceIdTooLong(2000))
        ));
    }

    #[test]
    fn sqs_bodies_with_and_without_the_sns_envelope() {
        let inner = real_success().to_string();
        let envelope = json!({"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:us-east-1:1:t",
            "Message": inner, "Timestamp": "2026-11-20T10:15:02.118Z"})
        .to_string();
        assert_eq!(
            unwrap_sqs_body(&envelope),
            SqsDelivery {
                sns_message_id: Some("m-1".into()),
                message: inner.clone()
            }
        );
        assert_eq!(
            unwrap_sqs_body(&inner),
            SqsDelivery {
                sns_message_id: None,
                message: inner.clone()
            }
        );
        assert_eq!(unwrap_sqs_body("garbage").message, "garbage");
    }
}
