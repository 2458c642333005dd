//! CallbackSteps, as SageMaker runs them: the step sends `{token, pipelineExecutionArn, status,
//! arguments}` to its `SqsQueueUrl` and waits until SendPipelineExecutionStepSuccess (with
//! `OutputParameters`) or …StepFailure names its token, or the run is stopped. A pipeline's
//! CallbackSteps come from the definition CreatePipeline was given (`"Type": "Callback"`) and run
//! before RegisterModel. The message goes to pipeline-router as the queue's event source mapping
//! would deliver it (an SQS event), through the local Lambda invoke API. ListPipelineExecutionSteps
//! shows the step's `Metadata.Callback` (its token, and the output parameters once answered), as
//! SageMaker does.

use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Map, Value};

use crate::answer::{client_request_token, str_field, validation, AwsError};
use crate::delivery;
use crate::state::pipelines::{Callback, CallbackAnswer, ExecutionStatus, Step};
use crate::state::AppState;

/// One CallbackStep of a pipeline's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackSpec {
    pub name: String,
    pub queue_url: String,
    /// The step's `Arguments`, as the message carries them (strings).
    pub arguments: Map<String, Value>,
}

/// How a CallbackStep ended.
pub enum Ended {
    Succeeded,
    Failed(String),
    Stopped,
}

/// The CallbackSteps of the pipeline `arn` runs, in the definition's order (none when the
/// pipeline was never created here).
pub fn of_run(state: &AppState, arn: &str) -> Vec<CallbackSpec> {
    let pipeline_arn = state.runs.lock().unwrap()[arn].pipeline_arn.clone();
    let name = pipeline_arn.rsplit(":pipeline/").next().unwrap_or_default();
    let catalog = state.catalog.lock().unwrap();
    let Some(pipeline) = catalog.pipelines.get(&name.to_lowercase()) else {
        return Vec::new();
    };
    let definition: Value = serde_json::from_str(&pipeline.definition).unwrap_or_default();
    definition["Steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|step| step["Type"] == "Callback")
        .map(|step| CallbackSpec {
            name: step["Name"].as_str().unwrap_or("Callback").to_owned(),
            queue_url: step["SqsQueueUrl"].as_str().unwrap_or_default().to_owned(),
            arguments: step["Arguments"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), as_argument(v)))
                .collect(),
        })
        .collect()
}

/// An argument as SageMaker sends it: a string (a literal, or a parameter's value rendered).
fn as_argument(value: &Value) -> Value {
    match value {
        Value::String(_) => value.clone(),
        other => Value::String(other.to_string()),
    }
}

/// Runs one CallbackStep of the run `arn` to its end.
pub async fn run_step(state: &AppState, arn: &str, spec: &CallbackSpec) -> Ended {
    // SageMaker's tokens are 10 letters and digits.
    let token: String = uuid::Uuid::new_v4().simple().to_string()[..10].to_owned();
    state.update_run(arn, |run| {
        run.steps.push(Step {
            name: spec.name.clone(),
            status: ExecutionStatus::Executing,
            started: Utc::now(),
            ended: None,
            failure_reason: None,
            metadata: Some(json!({"Callback": {"CallbackToken": token}})),
        });
        run.callback = Some(Callback {
            token: token.clone(),
            answer: None,
        });
    });
    let body = json!({"token": token, "pipelineExecutionArn": arn, "status": "Executing",
                      "arguments": spec.arguments});
    let event = sqs_event(&state.settings.region, &spec.queue_url, &body);
    delivery::deliver_to(state, "pipeline-router", &event, arn).await;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let run = state.runs.lock().unwrap()[arn].clone();
        let answer = run.callback.as_ref().and_then(|c| c.answer.clone());
        let (status, reason, outputs, ended) = match (run.status, answer) {
            (ExecutionStatus::Stopping, _) => {
                (ExecutionStatus::Stopped, None, None, Ended::Stopped)
            }
            (_, Some((CallbackAnswer::Success(outputs), _))) => (
                ExecutionStatus::Succeeded,
                None,
                Some(outputs),
                Ended::Succeeded,
            ),
            (_, Some((CallbackAnswer::Failure(reason), _))) => (
                ExecutionStatus::Failed,
                Some(reason.clone()),
                None,
                Ended::Failed(reason),
            ),
            _ => continue,
        };
        state.update_run(arn, |run| {
            let step = run.steps.last_mut().expect("step pushed above");
            step.status = status;
            step.ended = Some(Utc::now());
            step.failure_reason = reason;
            if let Some(outputs) = outputs {
                let outputs: Vec<Value> = outputs
                    .iter()
                    .map(|(n, v)| json!({"Name": n, "Value": v}))
                    .collect();
                step.metadata = Some(
                    json!({"Callback": {"CallbackToken": token, "OutputParameters": outputs}}),
                );
            }
            if matches!(ended, Ended::Stopped) {
                run.status = ExecutionStatus::Stopped;
            }
            run.callback = None;
        });
        return ended;
    }
}

/// The SQS event Lambda receives for one message on the queue at `queue_url`.
fn sqs_event(region: &str, queue_url: &str, body: &Value) -> Value {
    // https://sqs.<region>.amazonaws.com/<account>/<name> → arn:aws:sqs:<region>:<account>:<name>
    let mut parts = queue_url.trim_end_matches('/').rsplit('/');
    let name = parts.next().unwrap_or_default();
    let account = parts.next().unwrap_or_default();
    let id = uuid::Uuid::new_v4().to_string();
    json!({"Records": [{
        "messageId": id, "receiptHandle": format!("AQEB{id}"), "body": body.to_string(),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": Utc::now().timestamp_millis().to_string(),
                       "SenderId": "AROAEXAMPLE:SageMaker", "ApproximateFirstReceiveTimestamp": Utc::now().timestamp_millis().to_string()},
        "messageAttributes": {}, "md5OfBody": "00000000000000000000000000000000",
        "eventSource": "aws:sqs", "eventSourceARN": format!("arn:aws:sqs:{region}:{account}:{name}"),
        "awsRegion": region,
    }]})
}

/// SendPipelineExecutionStepSuccess (`success`) or …StepFailure: the step waiting on the token
/// takes the first answer; the same request again (its ClientRequestToken) is answered alike,
/// any other is refused, as is a token no step waits on.
pub fn answer(state: &AppState, input: &Value, success: bool) -> Result<Value, AwsError> {
    let token = str_field(input, "CallbackToken")?;
    let request = client_request_token(input)?.map(str::to_owned);
    let answer = if success {
        let outputs = input["OutputParameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let text = |f: &str| p[f].as_str().map(str::to_owned);
                match (text("Name"), text("Value")) {
                    (Some(n), Some(v)) => Ok((n, v)),
                    _ => Err(validation(
                        "OutputParameters: each needs a Name and a Value",
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        CallbackAnswer::Success(outputs)
    } else {
        CallbackAnswer::Failure(str_field(input, "FailureReason")?.to_owned())
    };
    let mut runs = state.runs.lock().unwrap();
    let waiting = runs
        .values_mut()
        .find(|r| r.callback.as_ref().is_some_and(|c| c.token == token));
    let Some(run) = waiting else {
        return Err(validation(
            "The callback token is not valid or has expired.",
        ));
    };
    let callback = run.callback.as_mut().expect("found by its callback");
    match &callback.answer {
        None => callback.answer = Some((answer, request)),
        Some((_, first)) if first.is_some() && *first == request => {}
        Some(_) => return Err(validation("The step has already been answered.")),
    }
    Ok(json!({"PipelineExecutionArn": run.arn}))
}
