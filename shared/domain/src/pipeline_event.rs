//! SageMaker pipeline runs: the EventBridge status-change event, the session id the tool put in
//! the execution description, and the rules for recording and announcing an outcome.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::caller::Owner;
use crate::ids::{ExecutionArn, SessionId};
use crate::pipeline_status::{ExecutionStatus, PipelineStatus};
use crate::time::parse_rfc3339;

pub const DETAIL_TYPE: &str = "SageMaker Model Building Pipeline Execution Status Change";
pub const SOURCE: &str = "aws.sagemaker";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineEventError {
    #[error("event has no {0}")]
    Missing(&'static str),
    #[error("{field} is {value}, expected {expected}")]
    Unexpected {
        field: String,
        value: String,
        expected: &'static str,
    },
    #[error("{field} is {value}, which is not an RFC 3339 time")]
    BadTime { field: String, value: String },
}

/// One "Pipeline Execution Status Change" event.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineStatusChange {
    pub event_id: String,
    pub event_time: DateTime<Utc>,
    pub pipeline_arn: String,
    pub execution_arn: ExecutionArn,
    pub status: PipelineStatus,
    /// `None` when absent; a word this code does not know is kept as written.
    pub previous_status: Option<ExecutionStatus>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The session that triggered the run; `None` for runs this project did not start.
    pub session_id: Option<SessionId>,
    /// The owner tag of the caller that triggered it; `None` for runs from before owners.
    pub owner: Option<Owner>,
}

/// The event as EventBridge delivers it. Every field may be absent here, so that a missing one
/// is named in the event's own words by the checks in [`parse_status_change`].
#[derive(Deserialize)]
struct Envelope {
    id: Option<String>,
    #[serde(rename = "detail-type")]
    detail_type: Option<String>,
    source: Option<String>,
    time: Option<EventTime>,
    detail: Option<Detail>,
}

/// SageMaker's `detail` of the event.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Detail {
    pipeline_arn: Option<String>,
    pipeline_execution_arn: Option<String>,
    current_pipeline_execution_status: Option<String>,
    previous_pipeline_execution_status: Option<String>,
    execution_start_time: Option<EventTime>,
    execution_end_time: Option<EventTime>,
    pipeline_execution_description: Option<String>,
}

/// RFC 3339, or epoch milliseconds as a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum EventTime {
    Text(String),
    Millis(i64),
}

impl EventTime {
    fn read(self, field: &str) -> Result<DateTime<Utc>, PipelineEventError> {
        let (time, value) = match self {
            EventTime::Text(s) => (parse_rfc3339(&s), quoted(&s)),
            EventTime::Millis(n) => (DateTime::from_timestamp_millis(n), n.to_string()),
        };
        time.ok_or_else(|| PipelineEventError::BadTime {
            field: field.to_owned(),
            value,
        })
    }
}

pub fn parse_status_change(event: &Value) -> Result<PipelineStatusChange, PipelineEventError> {
    use PipelineEventError::*;
    let envelope: Envelope =
        serde_path_to_error::deserialize(event).map_err(|e| wrong_type(event, e.path()))?;
    let detail_type = required("detail-type", envelope.detail_type)?;
    if detail_type != DETAIL_TYPE {
        return Err(Unexpected {
            field: "detail-type".into(),
            value: quoted(&detail_type),
            expected: "\"SageMaker Model Building Pipeline Execution Status Change\"",
        });
    }
    let source = required("source", envelope.source)?;
    if source != SOURCE {
        return Err(Unexpected {
            field: "source".into(),
            value: quoted(&source),
            expected: "\"aws.sagemaker\"",
        });
    }
    let detail = envelope.detail.ok_or(Missing("detail"))?;
    let status_text = required(
        "detail.currentPipelineExecutionStatus",
        detail.current_pipeline_execution_status,
    )?;
    let status = PipelineStatus::from_sagemaker(&status_text).ok_or_else(|| Unexpected {
        field: "detail.currentPipelineExecutionStatus".into(),
        value: quoted(&status_text),
        expected: "Executing, Stopping, Succeeded, Failed, Stopped or CompletedWithFailures",
    })?;
    let time = |field: &str, t: Option<EventTime>| t.map(|t| t.read(field)).transpose();
    let description = detail.pipeline_execution_description.as_deref();
    Ok(PipelineStatusChange {
        event_id: required("id", envelope.id)?,
        event_time: time("time", envelope.time)?.ok_or(Missing("time"))?,
        pipeline_arn: required("detail.pipelineArn", detail.pipeline_arn)?,
        execution_arn: required("detail.pipelineExecutionArn", detail.pipeline_execution_arn)?
            .into(),
        status,
        previous_status: detail
            .previous_pipeline_execution_status
            .as_deref()
            .map(ExecutionStatus::parse),
        started_at: time("detail.executionStartTime", detail.execution_start_time)?,
        ended_at: time("detail.executionEndTime", detail.execution_end_time)?,
        session_id: description
            .and_then(session_id_from_description)
            .map(SessionId::from),
        owner: description.and_then(owner_from_description),
    })
}

/// A field that must be there and say something.
fn required(field: &'static str, value: Option<String>) -> Result<String, PipelineEventError> {
    value
        .filter(|s| !s.trim().is_empty())
        .ok_or(PipelineEventError::Missing(field))
}

/// What a field of the wrong JSON type is, named by its path and shown as it came.
fn wrong_type(event: &Value, path: &serde_path_to_error::Path) -> PipelineEventError {
    let field = path.to_string();
    let pointer: String = path.iter().map(|segment| format!("/{segment}")).collect();
    let value = event
        .pointer(&pointer)
        .map_or_else(|| "?".to_owned(), Value::to_string);
    if field == "time" || field.ends_with("Time") {
        PipelineEventError::BadTime { field, value }
    } else {
        let expected = if field == "detail" {
            "an object"
        } else {
            "a string"
        };
        PipelineEventError::Unexpected {
            field,
            value,
            expected,
        }
    }
}

/// A part `name=value` of a description such as `session_id=sess-42; triggered at 2026-…`:
/// `;`-separated parts, spaces allowed around `;` and `=`, other parts ignored.
fn description_part<'a>(description: &'a str, name: &str) -> Option<&'a str> {
    description.split(';').find_map(|part| {
        let (key, value) = part.split_once('=')?;
        let value = value.trim();
        (key.trim() == name && !value.is_empty()).then_some(value)
    })
}

/// The session id in a run's description.
pub fn session_id_from_description(description: &str) -> Option<String> {
    description_part(description, "session_id").map(str::to_owned)
}

/// The owner tag in a run's description (`mcp_owner=<tag>`); anything not shaped like a tag
/// counts as no owner.
pub fn owner_from_description(description: &str) -> Option<Owner> {
    description_part(description, OWNER_PART).and_then(Owner::parse)
}

const OWNER_PART: &str = "mcp_owner";

/// The description `trigger_training` sets, which [`session_id_from_description`] and
/// [`owner_from_description`] read back. The owner is a tag, never the caller's identity.
pub fn execution_description(
    session_id: &str,
    owner: &Owner,
    triggered_at: DateTime<Utc>,
) -> String {
    format!(
        "session_id={session_id}; {OWNER_PART}={owner}; triggered at {}",
        crate::time::rfc3339(triggered_at)
    )
}

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event() -> Value {
        json!({
            "version": "0", "id": "6f1e2d3c", "detail-type": DETAIL_TYPE, "source": "aws.sagemaker",
            "account": "123456789012", "time": "2026-11-20T11:02:11Z", "region": "us-east-1",
            "resources": [],
            "detail": {
                "currentPipelineExecutionStatus": "Succeeded",
                "previousPipelineExecutionStatus": "Executing",
                "executionStartTime": "2026-11-20T10:41:52Z",
                "executionEndTime": "2026-11-20T11:02:10Z",
                "pipelineExecutionDescription": "session_id=sess-42; triggered at 2026-11-20T10:41:51.734Z",
                "pipelineArn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p",
                "pipelineExecutionArn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x"
            }
        })
    }

    #[test]
    fn parses_the_documented_event() {
        let c = parse_status_change(&event()).unwrap();
        assert_eq!(c.event_id, "6f1e2d3c");
        assert_eq!(c.status, PipelineStatus::Succeeded);
        assert_eq!(c.previous_status, Some(PipelineStatus::Executing.into()));
        assert_eq!(c.session_id.as_ref().map(|s| s.as_str()), Some("sess-42"));
        assert_eq!(
            c.execution_arn,
            "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/x"
        );
        assert_eq!(
            c.started_at.unwrap().to_rfc3339(),
            "2026-11-20T10:41:52+00:00"
        );
        assert_eq!(
            c.ended_at.unwrap().to_rfc3339(),
            "2026-11-20T11:02:10+00:00"
        );
    }

    #[test]
    fn executing_events_have_no_end_time() {
        let mut e = event();
        e["detail"]["currentPipelineExecutionStatus"] = json!("Executing");
        e["detail"]
            .as_object_mut()
            .unwrap()
            .remove("executionEndTime");
        let c = parse_status_change(&e).unwrap();
        assert!(!c.status.is_terminal());
        assert_eq!(c.ended_at, None);
    }

    #[test]
    fn description_variants() {
        let cases = [
            (
                "session_id=sess-42; triggered at 2026-11-20T10:41:51.734Z",
                Some("sess-42"),
            ),
            ("session_id = sess-42 ;triggered at x", Some("sess-42")),
            ("  session_id=abc", Some("abc")),
            ("owner=team-a; session_id=s-1; note=x=y", Some("s-1")),
            ("owner=team-a;session_id =  s-2  ", Some("s-2")),
            ("triggered by hand", None),
            ("session_id=; triggered at x", None),
            ("session=abc", None),
            ("my_session_id=abc", None),
            ("", None),
        ];
        for (description, expected) in cases {
            assert_eq!(
                session_id_from_description(description).as_deref(),
                expected,
                "{description:?}"
            );
        }
        let mut e = event();
        e["detail"]["pipelineExecutionDescription"] = Value::Null;
        assert_eq!(parse_status_change(&e).unwrap().session_id, None);
        e["detail"]
            .as_object_mut()
            .unwrap()
            .remove("pipelineExecutionDescription");
        assert_eq!(parse_status_change(&e).unwrap().session_id, None);
    }

    #[test]
    fn the_description_written_is_the_one_read() {
        use crate::caller::Principal;
        let at = parse_rfc3339("2026-11-20T10:41:51.734Z").unwrap();
        let principal = Principal::Bearer {
            name: "agent-a".into(),
        };
        let owner = principal.caller().owner;
        let d = execution_description("sess-7", &owner, at);
        assert_eq!(
            d,
            format!("session_id=sess-7; mcp_owner={owner}; triggered at 2026-11-20T10:41:51.734Z")
        );
        assert!(!d.contains("agent-a"), "the tag, never the identity");
        assert_eq!(session_id_from_description(&d).as_deref(), Some("sess-7"));
        assert_eq!(owner_from_description(&d), Some(owner.clone()));
        let mut e = event();
        e["detail"]["pipelineExecutionDescription"] = Value::String(d);
        let change = parse_status_change(&e).unwrap();
        assert_eq!(change.owner, Some(owner));
        // Descriptions from before owners, or set by hand, carry none.
        for d in [
            "session_id=s; triggered at x",
            "owner=team-a; session_id=s",
            "session_id=s; mcp_owner=not-a-tag",
        ] {
            assert_eq!(owner_from_description(d), None, "{d}");
        }
    }

    #[test]
    fn bad_events_name_the_field() {
        type Mutation = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (
                Box::new(|e| {
                    e.as_object_mut().unwrap().remove("detail");
                }),
                "event has no detail",
            ),
            (
                Box::new(|e| e["detail"] = json!("x")),
                "detail is \"x\", expected an object",
            ),
            (
                Box::new(|e| e["detail-type"] = json!("EC2 Instance State-change Notification")),
                "detail-type is \"EC2 Instance State-change Notification\"",
            ),
            (
                Box::new(|e| e["source"] = json!("aws.ec2")),
                "source is \"aws.ec2\"",
            ),
            (
                Box::new(|e| {
                    e["detail"]
                        .as_object_mut()
                        .unwrap()
                        .remove("pipelineExecutionArn");
                }),
                "no detail.pipelineExecutionArn",
            ),
            (
                Box::new(|e| e["detail"]["pipelineArn"] = json!("")),
                "no detail.pipelineArn",
            ),
            (
                Box::new(|e| e["detail"]["executionEndTime"] = json!("yesterday")),
                "detail.executionEndTime is \"yesterday\"",
            ),
            (Box::new(|e| e["time"] = json!(true)), "time is true"),
            (
                Box::new(|e| {
                    e.as_object_mut().unwrap().remove("id");
                }),
                "event has no id",
            ),
            (
                Box::new(|e| e["detail"]["currentPipelineExecutionStatus"] = json!("Exploded")),
                "detail.currentPipelineExecutionStatus is \"Exploded\"",
            ),
            (
                Box::new(|e| e["detail"]["pipelineExecutionDescription"] = json!(5)),
                "detail.pipelineExecutionDescription is 5, expected a string",
            ),
        ];
        for (mutate, expected) in cases {
            let mut e = event();
            mutate(&mut e);
            let err = parse_status_change(&e).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{err:?} should contain {expected:?}"
            );
        }
    }
}
