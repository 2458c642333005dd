//! pipeline-router: the EventBridge target for "SageMaker Model Building Pipeline Execution
//! Status Change". It only translates the event; the rules are in `shared::usecases::route`.

use serde_json::{json, Value};

use shared::domain::pipeline_event::{parse_status_change, PipelineEventError};
use shared::ports::{CompletionQueue, PipelineControl, RunStore};
use shared::usecases::route::{route_status_change, RouteError, Routed};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("bad pipeline event: {0}")]
    BadEvent(#[from] PipelineEventError),
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// What Lambda reports (and the failure destination receives) for a failed invocation.
impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        let error_type = match &e {
            HandlerError::BadEvent(_) => "BadPipelineEvent",
            HandlerError::Route(RouteError::Store(_)) => "StoreFailed",
            HandlerError::Route(RouteError::Queue(_)) => "QueueSendFailed",
            HandlerError::Route(RouteError::Describe { .. }) => "DescribeFailed",
        };
        lambda_runtime::Diagnostic {
            error_type: error_type.to_owned(),
            error_message: e.to_string(),
        }
    }
}

pub struct Handler<S, P, Q> {
    pub store: S,
    /// Only DescribePipelineExecution is called, for a failed run's reason.
    pub pipeline: P,
    pub queue: Q,
    pub result_ttl_secs: u64,
}

impl<S: RunStore, P: PipelineControl, Q: CompletionQueue> Handler<S, P, Q> {
    /// An error makes EventBridge retry the event, then send it to the failure destination.
    pub async fn handle(&self, event: Value) -> Result<Value, HandlerError> {
        let event_id = event
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let change = parse_status_change(&event).inspect_err(|e| {
            tracing::error!(%event_id, error = %e, "pipeline event refused");
        })?;
        let execution_arn = change.execution_arn.clone();
        let status = change.status.as_str();
        let routed = route_status_change(
            &self.store,
            &self.pipeline,
            &self.queue,
            self.result_ttl_secs,
            change,
            shared::domain::time::now(),
        )
        .await
        .inspect_err(
            |e| tracing::error!(%event_id, %execution_arn, error = %e, "pipeline event not routed"),
        )?;
        Ok(match routed {
            Routed::NotOurs => {
                tracing::info!(%event_id, %execution_arn, "no session_id in the execution description; not a run of ours");
                json!({"routed": false, "reason": "no session_id in the execution description"})
            }
            Routed::Recorded {
                session_id,
                status,
                sent,
            } => {
                tracing::info!(%event_id, %execution_arn, %session_id, status = status.as_str(), sent, "pipeline status recorded");
                json!({"routed": true, "session_id": session_id, "status": status.as_str(), "sent": sent})
            }
            Routed::Ignored {
                session_id,
                stored_status,
            } => {
                tracing::info!(%event_id, %execution_arn, %session_id, %stored_status, incoming = status, "terminal status already stored; event ignored");
                json!({"routed": false, "session_id": session_id, "reason": format!("status {stored_status} already stored")})
            }
        })
    }
}
