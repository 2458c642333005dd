//! pipeline-router: the EventBridge target for "SageMaker Model Building Pipeline Execution
//! Status Change". It only translates the event; the rules are in `shared::usecases::route`.

use serde_json::{json, Value};
use tracing::{field::Empty, info_span, Instrument, Span};

use shared::domain::pipeline_event::{parse_status_change, PipelineEventError};
use shared::ports::{CompletionQueue, PipelineControl, RunStore};
use shared::telemetry;
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
        let event_id = event.get("id").and_then(Value::as_str).unwrap_or("?");
        // The ids go on a span, so every line of this event carries them.
        let span = info_span!(
            "pipeline_event",
            event_id,
            execution_arn = Empty,
            session_id = Empty
        );
        self.route(&event).instrument(span).await
    }

    async fn route(&self, event: &Value) -> Result<Value, HandlerError> {
        let change = parse_status_change(event).inspect_err(|e| {
            tracing::error!(error = %e, "pipeline event refused");
        })?;
        Span::current().record("execution_arn", change.execution_arn.as_str());
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
        .inspect_err(|e| tracing::error!(error = %e, "pipeline event not routed"))?;
        Ok(match routed {
            Routed::NotOurs => {
                tracing::info!("no session_id in the execution description; not a run of ours");
                json!({"routed": false, "reason": "no session_id in the execution description"})
            }
            Routed::Recorded {
                session_id,
                status,
                sent,
            } => {
                Span::current().record("session_id", session_id.as_str());
                tracing::info!(status = status.as_str(), sent, "pipeline status recorded");
                telemetry::run_routed(status.as_str(), sent);
                json!({"routed": true, "session_id": session_id, "status": status.as_str(), "sent": sent})
            }
            Routed::Ignored {
                session_id,
                stored_status,
            } => {
                Span::current().record("session_id", session_id.as_str());
                tracing::info!(%stored_status, incoming = status, "terminal status already stored; event ignored");
                json!({"routed": false, "session_id": session_id, "reason": format!("status {stored_status} already stored")})
            }
        })
    }
}
