//! Delivery to the local functions, as SNS and EventBridge would deliver: asynchronous
//! invocations through the local Lambda invoke API.

use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Value};

use crate::answer::millis;
use crate::state::pipelines::ExecutionStatus;
use crate::state::{AppState, ACCOUNT};

/// The SNS event Lambda receives for one message published to `topic` (a topic name).
pub fn sns_event(region: &str, topic: &str, message: &Value) -> Value {
    json!({"Records": [{
        "EventSource": "aws:sns", "EventVersion": "1.0",
        "EventSubscriptionArn": format!("arn:aws:sns:{region}:{ACCOUNT}:{topic}:{}", uuid::Uuid::new_v4()),
        "Sns": {
            "Type": "Notification", "MessageId": uuid::Uuid::new_v4().to_string(),
            "TopicArn": format!("arn:aws:sns:{region}:{ACCOUNT}:{topic}"),
            "Subject": null, "Message": message.to_string(), "Timestamp": millis(Utc::now()),
            "SignatureVersion": "1", "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.amazonaws.com/cert.pem",
            "UnsubscribeUrl": "https://sns.amazonaws.com/unsubscribe", "MessageAttributes": {}
        }
    }]})
}

/// Sends the run's current status as the EventBridge event to pipeline-router.
pub async fn deliver(state: &AppState, arn: &str, previous: Option<ExecutionStatus>) {
    if state.settings.lambda_invoke_url.is_none() {
        return;
    }
    let run = state.runs.lock().unwrap()[arn].clone();
    let ended = (run.status != ExecutionStatus::Executing).then(|| run.modified.to_rfc3339());
    let event = json!({
        "version": "0",
        "id": uuid::Uuid::new_v4().to_string(),
        "detail-type": "SageMaker Model Building Pipeline Execution Status Change",
        "source": "aws.sagemaker",
        "account": ACCOUNT,
        "time": Utc::now().to_rfc3339(),
        "region": state.settings.region,
        "resources": [run.pipeline_arn, run.arn],
        "detail": {
            "pipelineExecutionDisplayName": run.display_name,
            "currentPipelineExecutionStatus": run.status,
            "previousPipelineExecutionStatus": previous,
            "executionStartTime": run.started.to_rfc3339(),
            "executionEndTime": ended,
            "pipelineExecutionDescription": run.description,
            "pipelineArn": run.pipeline_arn,
            "pipelineExecutionArn": run.arn,
        }
    });
    deliver_to(state, "pipeline-router", &event, arn).await;
}

/// An asynchronous invocation through the local Lambda invoke API. SNS and EventBridge retry
/// failed deliveries; so does the stand-in, briefly.
pub async fn deliver_to(state: &AppState, function: &str, event: &Value, about: &str) {
    let Some(base) = &state.settings.lambda_invoke_url else {
        return;
    };
    let url = format!("{base}/2015-03-31/functions/{function}/invocations");
    for attempt in 1..=3 {
        match state.http.post(&url).body(event.to_string()).send().await {
            Ok(r) if r.status().is_success() => return,
            Ok(r) => eprintln!(
                "{function} answered {} for {about} (attempt {attempt})",
                r.status()
            ),
            Err(e) => {
                eprintln!("could not deliver to {function} for {about} (attempt {attempt}): {e}")
            }
        }
        tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
    }
}
