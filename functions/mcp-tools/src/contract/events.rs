//! The MCP Events extension (`io.modelcontextprotocol/events`, SEP-3415): the event types this
//! server emits, as `events/list` describes them. Each is a caller's own work ending, or asking
//! for a person: a job ended, a run ended, a run asks. A subscription's arguments filter them
//! (bounded, so a subscription costs a known amount to match); a payload names the work and
//! links its result as a resource, never with a task's secret or a presigned URL.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use domain::events::{EventName, ENDPOINT_MAX_CHARS, MAX_FILTER_TASK_IDS, PIPELINE_MAX_CHARS};
use domain::task_id::MAX_TASK_ID_BYTES;

use super::dialect::only_2020_12_formats;

/// The extension's identifier, as capabilities and `_meta` name it.
pub const EVENTS_EXTENSION: &str = "io.modelcontextprotocol/events";

pub const JOB_ENDED: &str = EventName::JobEnded.as_str();
pub const RUN_ENDED: &str = EventName::RunEnded.as_str();
pub const RUN_ASKS: &str = EventName::RunAsks.as_str();

/// The delivery modes each event type offers: `poll` and `push` (`events/stream`) always,
/// `webhook` where subscriptions are kept.
pub fn delivery_modes(webhooks: bool) -> Vec<&'static str> {
    match webhooks {
        true => vec!["poll", "push", "webhook"],
        false => vec!["poll", "push"],
    }
}

/// A subscription to jobs that ended: all of the caller's, or only those named.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobEndedArgs {
    /// Only the jobs on this async endpoint (a catalog tool's endpoint, or the one submit_job
    /// uses).
    #[schemars(length(min = 1, max = ENDPOINT_MAX_CHARS))]
    pub endpoint: Option<String>,
    /// Only the jobs of these tasks (the task ids the tools returned), at most 100.
    #[schemars(
        length(max = MAX_FILTER_TASK_IDS),
        inner(length(min = 1, max = MAX_TASK_ID_BYTES))
    )]
    pub task_ids: Option<Vec<String>>,
}

/// A subscription to runs that ended, or that ask a person: all of the caller's, or only those
/// named.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Only the runs of this pipeline (its name).
    #[schemars(length(min = 1, max = PIPELINE_MAX_CHARS))]
    pub pipeline: Option<String>,
    /// Only the runs of these tasks (the task ids the tools returned), at most 100.
    #[schemars(
        length(max = MAX_FILTER_TASK_IDS),
        inner(length(min = 1, max = MAX_TASK_ID_BYTES))
    )]
    pub task_ids: Option<Vec<String>>,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum JobEnd {
    Completed,
    Failed,
}

/// A job that ended: what `check_job_status` would now report, in brief.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobEnded {
    /// The job, as the tool that started it returned it.
    pub inference_id: String,
    /// The async endpoint it ran on.
    pub endpoint: Option<String>,
    pub status: JobEnd,
    /// When its outcome was recorded (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub ended_at: String,
    /// Its output, to read with `resources/read` (completed jobs).
    #[schemars(extend("format" = "uri"))]
    pub output: Option<String>,
    /// Its failure detail, to read with `resources/read` (failed jobs, when SageMaker wrote one).
    #[schemars(extend("format" = "uri"))]
    pub failure: Option<String>,
}

/// A run that ended: what `check_training_status` would now report, in brief.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunEnded {
    pub execution_arn: String,
    pub session_id: String,
    pub pipeline: String,
    /// SageMaker's status: Succeeded, Failed, Stopped or CompletedWithFailures.
    pub status: String,
    #[schemars(extend("format" = "date-time"))]
    pub ended_at: String,
    /// SageMaker's reason, for a run that did not succeed (at most 1024 characters).
    #[schemars(length(max = 1024))]
    pub failure_reason: Option<String>,
}

/// What a run waits on a person for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum Asking {
    /// A CallbackStep's question: answer it with `tasks/update` or `answer_training_input`.
    Question,
}

/// A run that asks a person; the question itself is read with `tasks/get` or
/// `check_training_status`, by whoever may answer it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunAsks {
    pub execution_arn: String,
    pub session_id: String,
    pub pipeline: String,
    pub asking: Asking,
    /// The question's key (questions only).
    #[schemars(length(min = 1, max = 64))]
    pub key: Option<String>,
    #[schemars(extend("format" = "date-time"))]
    pub asked_at: String,
}

/// One event type as `events/list` describes it.
fn descriptor<A: JsonSchema, P: JsonSchema>(
    name: &str,
    description: &str,
    webhooks: bool,
) -> Value {
    let schema = |mut schema: Map<String, Value>| {
        schema.remove("$schema");
        only_2020_12_formats(&mut schema);
        Value::Object(schema)
    };
    let input = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
    let payload = serde_json::to_value(schemars::schema_for!(P)).unwrap_or_default();
    let object = |v: Value| match v {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    json!({
        "name": name,
        "description": description,
        "delivery": delivery_modes(webhooks),
        "inputSchema": schema(object(input)),
        "payloadSchema": schema(object(payload)),
    })
}

/// Every event type, in the order `events/list` gives them; `webhooks`: subscriptions are
/// kept.
pub fn descriptors(webhooks: bool) -> Vec<Value> {
    vec![
        descriptor::<JobEndedArgs, JobEnded>(
            JOB_ENDED,
            "One of your jobs ended (completed or failed): its status, and its output or failure \
             detail as a resource to read.",
            webhooks,
        ),
        descriptor::<RunArgs, RunEnded>(
            RUN_ENDED,
            "One of your training runs ended: its status, and SageMaker's reason when it did not \
             succeed.",
            webhooks,
        ),
        descriptor::<RunArgs, RunAsks>(
            RUN_ASKS,
            "One of your training runs waits on a person: a question of one of its steps (read \
             it with tasks/get or check_training_status, answer it with tasks/update or \
             answer_training_input).",
            webhooks,
        ),
    ]
}

/// `events/list`'s answer: every event type on one page. A cursor is refused, as one this list
/// never gave.
pub fn list(params: Option<&Value>, webhooks: bool) -> Result<Value, String> {
    let cursor = params.and_then(|p| p.get("cursor"));
    if cursor.is_some_and(|c| !c.is_null()) {
        return Err("`cursor`: this list has one page, and gave no cursor".to_owned());
    }
    Ok(json!({"resultType": "complete", "events": descriptors(webhooks)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_type_is_described_with_bounded_filters_and_its_payload() {
        let listed = list(None, true).unwrap();
        assert_eq!(listed["resultType"], "complete");
        let events = listed["events"].as_array().unwrap();
        let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, [JOB_ENDED, RUN_ENDED, RUN_ASKS]);
        for event in events {
            let input = &event["inputSchema"];
            assert_eq!(input["type"], "object", "{event}");
            // A filter names nothing else, and nothing without a bound.
            assert_eq!(input["additionalProperties"], false, "{event}");
            let task_ids = &input["properties"]["task_ids"];
            assert_eq!(task_ids["maxItems"], 100, "{event}");
            assert_eq!(task_ids["items"]["maxLength"], 1024, "{event}");
            assert!(!event["description"].as_str().unwrap().is_empty());
            assert_eq!(event["payloadSchema"]["type"], "object", "{event}");
            assert!(event.get("$schema").is_none() && input.get("$schema").is_none());
        }
        let job = &events[0]["payloadSchema"]["properties"];
        assert_eq!(job["status"]["enum"], json!(["completed", "failed"]));
        assert_eq!(job["output"]["format"], "uri");
        // Nothing in a payload carries a task's secret or a presigned URL.
        for event in events {
            let payload = event["payloadSchema"].to_string();
            assert!(
                !payload.contains("task_id") && !payload.contains("url"),
                "{payload}"
            );
        }
    }

    #[test]
    fn a_filter_past_its_bounds_or_naming_another_field_is_refused() {
        let parsed = |v: Value| serde_json::from_value::<JobEndedArgs>(v);
        assert!(parsed(json!({"endpoint": "doc-processor"})).is_ok());
        let refused = parsed(json!({"colour": "red"})).unwrap_err().to_string();
        assert!(refused.contains("unknown field `colour`"), "{refused}");
    }

    #[test]
    fn the_event_a_recorded_outcome_raises_is_the_payload_its_schema_declares() {
        let completion = domain::completion::JobCompletion {
            inference_id: domain::ids::InferenceId::parse("j1").unwrap(),
            status: "completed",
            owner: Some(domain::caller::Principal::Local.caller().owner.to_string()),
            endpoint_name: Some("doc-processor".into()),
            output_location: None,
            failure_reason: None,
            submitted_at: None,
            completed_at: Some("2026-12-06T10:00:00Z".into()),
            reconciled: false,
            traceparent: None,
        };
        let event = domain::events::job_ended(&completion, chrono::Utc::now()).unwrap();
        let payload: JobEnded = serde_json::from_value(event.data.clone()).unwrap();
        assert_eq!(payload.status, JobEnd::Completed);
        assert_eq!(payload.output.as_deref(), Some("job://j1/output"));
        assert_eq!(event.occurrence()["name"], JOB_ENDED);
    }

    #[test]
    fn the_list_has_one_page() {
        assert!(list(Some(&json!({"cursor": null})), true).is_ok());
        let poll_only = list(None, false).unwrap();
        assert_eq!(poll_only["events"][0]["delivery"], json!(["poll", "push"]));
        let refused = list(Some(&json!({"cursor": "page-2"})), true).unwrap_err();
        assert!(refused.starts_with("`cursor`"), "{refused}");
    }
}
