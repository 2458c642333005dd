//! notification-handler: records SageMaker async inference outcomes delivered by SNS, or by
//! SNS through an SQS buffer queue. Only translation lives here; the rules are in `shared`.

use aws_lambda_events::sns::SnsRecord;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsMessage};
use futures::stream::{self, StreamExt};
use serde_json::{json, Value};
use tracing::{field::Empty, info_span, Instrument};

use shared::domain::notification::{
    parse_notification, unwrap_sqs_body, Notification, NotificationError,
};
use shared::ports::{JobStore, ObjectStore, StoreError};
use shared::telemetry::{self, OutcomeSource};
use shared::usecases::outcome::{record_notification, RecordSettings, Recorded};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("event is neither an SNS nor an SQS event: {0}")]
    UnknownEvent(String),
    #[error("record is not an SNS record: {0}")]
    BadSnsRecord(#[source] serde_json::Error),
    #[error("record EventSource is {0:?}, expected \"aws:sns\"")]
    WrongRecordSource(String),
    #[error(transparent)]
    Notification(#[from] NotificationError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{failed} of {total} SNS records failed: {details}")]
    SnsRecordsFailed {
        failed: usize,
        total: usize,
        details: String,
    },
}

pub struct Handler<S, R> {
    pub store: S,
    pub objects: R,
    pub settings: RecordSettings,
    /// How many messages of an SQS batch are recorded at once (each is a few AWS calls).
    pub batch_concurrency: usize,
}

impl<S: JobStore, R: ObjectStore> Handler<S, R> {
    /// One invocation. SNS: every record is processed; if any failed, the invocation fails
    /// (naming each MessageId) so Lambda retries it and then sends it to the failure
    /// destination; the records that succeeded are harmless to replay. SQS: failures are
    /// reported per message in a partial batch response.
    pub async fn handle(&self, event: Value) -> Result<Value, HandlerError> {
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .ok_or_else(|| HandlerError::UnknownEvent("no Records array".into()))?;
        match records.first() {
            None => Ok(json!({"processed": 0})),
            Some(first) if first.get("Sns").is_some() => self.handle_sns(records).await,
            Some(first) if first.get("eventSource").and_then(Value::as_str) == Some("aws:sqs") => {
                Ok(serde_json::to_value(self.handle_sqs(records).await)
                    .expect("batch response serializes"))
            }
            Some(_) => Err(HandlerError::UnknownEvent(
                "records carry neither \"Sns\" nor eventSource \"aws:sqs\"".into(),
            )),
        }
    }

    async fn handle_sns(&self, records: &[Value]) -> Result<Value, HandlerError> {
        let mut failures = Vec::new();
        for (index, raw) in records.iter().enumerate() {
            let message_id = raw
                .pointer("/Sns/MessageId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("record {index}"));
            // The ids go on a span, so every line of this record carries them.
            let span =
                info_span!("notification", sns_message_id = %message_id, inference_id = Empty);
            if let Err(e) = self.handle_sns_record(raw).instrument(span.clone()).await {
                span.in_scope(|| tracing::error!(error = %e, "notification not recorded"));
                failures.push(format!("{message_id}: {e}"));
            }
        }
        if failures.is_empty() {
            Ok(json!({"processed": records.len()}))
        } else {
            Err(HandlerError::SnsRecordsFailed {
                failed: failures.len(),
                total: records.len(),
                details: failures.join("; "),
            })
        }
    }

    async fn handle_sns_record(&self, raw: &Value) -> Result<Option<Recorded>, HandlerError> {
        let record: SnsRecord =
            serde_json::from_value(raw.clone()).map_err(HandlerError::BadSnsRecord)?;
        if record.event_source != "aws:sns" {
            return Err(HandlerError::WrongRecordSource(record.event_source));
        }
        self.handle_message(&record.sns.message).await
    }

    /// The batch's messages are recorded `batch_concurrency` at a time; each failed one is
    /// reported by id, and only those that were written are acknowledged.
    async fn handle_sqs(&self, records: &[Value]) -> SqsBatchResponse {
        let failed: Vec<String> = stream::iter(records.iter().enumerate())
            .map(|(index, raw)| self.handle_sqs_record(index, raw))
            .buffer_unordered(self.batch_concurrency.max(1))
            .filter_map(|failure| async move { failure })
            .collect()
            .await;
        let mut response = SqsBatchResponse::default();
        for id in failed {
            response.add_failure(id);
        }
        response
    }

    /// One SQS record: `None` when recorded, the messageId to report when it failed (a record
    /// without one, which SQS never sends, can only be logged).
    async fn handle_sqs_record(&self, index: usize, raw: &Value) -> Option<String> {
        let message: SqsMessage = match serde_json::from_value(raw.clone()) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(record = index, error = %e, "SQS record does not parse");
                return raw
                    .get("messageId")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
        };
        let sqs_id = message.message_id.clone().unwrap_or_default();
        let delivery = unwrap_sqs_body(message.body.as_deref().unwrap_or_default());
        let id = delivery.sns_message_id.as_deref().unwrap_or(&sqs_id);
        let span = info_span!("notification", sqs_message_id = %sqs_id, sns_message_id = %id, inference_id = Empty);
        match self
            .handle_message(&delivery.message)
            .instrument(span.clone())
            .await
        {
            Ok(_) => None,
            Err(e) => {
                span.in_scope(|| tracing::error!(error = %e, "notification not recorded"));
                Some(sqs_id)
            }
        }
    }

    async fn handle_message(&self, message: &str) -> Result<Option<Recorded>, HandlerError> {
        let outcome = match parse_notification(message)? {
            Notification::Test => {
                tracing::info!("SageMaker test notification acknowledged");
                return Ok(None);
            }
            Notification::Outcome(o) => o,
        };
        tracing::Span::current().record("inference_id", outcome.inference_id.as_str());
        let recorded = record_notification(
            &self.store,
            &self.objects,
            self.settings,
            outcome,
            shared::domain::time::now(),
        )
        .await?;
        match &recorded {
            Recorded::Written {
                status,
                result_inline,
                known_job,
                took_ms,
                ..
            } => tracing::info!(
                status = status.as_str(),
                result_inline,
                known_job,
                took_ms,
                "outcome recorded"
            ),
            Recorded::AlreadyFinal { .. } => {
                tracing::info!("outcome already recorded; delivery ignored")
            }
        }
        telemetry::outcome(&recorded, OutcomeSource::Notification);
        Ok(Some(recorded))
    }
}

impl HandlerError {
    fn error_type(&self) -> &'static str {
        match self {
            HandlerError::UnknownEvent(_) => "UnknownEvent",
            HandlerError::BadSnsRecord(_) | HandlerError::WrongRecordSource(_) => "BadRecord",
            HandlerError::Notification(_) => "BadNotification",
            HandlerError::Store(_) => "StoreFailed",
            HandlerError::SnsRecordsFailed { .. } => "NotificationsNotRecorded",
        }
    }
}

/// What Lambda reports (and what reaches the failure destination) for a failed invocation.
impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: e.error_type().to_owned(),
            error_message: e.to_string(),
        }
    }
}
