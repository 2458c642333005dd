//! notification-handler: records SageMaker async inference outcomes delivered by SNS, or by
//! SNS through an SQS buffer queue, then announces each on EventBridge (when a bus is set) and
//! logs its event for the owner's MCP Events subscribers (when the log is set).
//! Only translation lives here; the rules are in `shared`.

pub mod config;

use aws_lambda_events::sns::SnsRecord;
use aws_lambda_events::sqs::SqsBatchResponse;
use futures::stream::{self, StreamExt};
use serde_json::{json, Value};
use tracing::{field::Empty, info_span, Instrument};

use domain::notification::{parse_notification, unwrap_sqs_body, Notification, NotificationError};
use entry::sqs_batch;
use entry::telemetry::{self, OutcomeSource};
use ports::{CompletionEvents, EventError, JobStore, ObjectStore, StoreError};
use usecases::events::{Publish, PublishError};
use usecases::outcome::{announce, publish_event, record_notification, Recorded};
use usecases::JobSettings;

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
    /// The outcome is recorded, its event not put: the delivery fails so it is retried (the
    /// write is a no-op the second time, and the event is put then).
    #[error("the outcome is recorded, but its completion event was not put: {0}")]
    Event(#[from] EventError),
    /// The outcome is recorded, its subscribers' event not logged: retried the same way (the
    /// event is logged once, whichever delivery logs it).
    #[error("the outcome is recorded, but its event did not reach its subscribers: {0}")]
    Publish(#[from] PublishError),
    #[error("{failed} of {total} SNS records failed: {details}")]
    SnsRecordsFailed {
        failed: usize,
        total: usize,
        details: String,
    },
}

pub struct Handler<S, R, E, P> {
    pub store: S,
    pub objects: R,
    /// Where each recorded outcome is announced (`None`: nowhere).
    pub events: Option<E>,
    /// Where each outcome's event goes for its owner's MCP Events subscribers: the log, naming
    /// their webhook subscriptions when those are deployed (`None`: nowhere).
    pub subscribers: Option<P>,
    pub settings: JobSettings,
    /// How many messages of an SQS batch are recorded at once (each is a few AWS calls).
    pub batch_concurrency: usize,
    /// The time, as outcomes are recorded at it (the system's; a test's own in tests).
    pub clock: domain::time::Clock,
}

impl<S: JobStore, R: ObjectStore, E: CompletionEvents, P: Publish> Handler<S, R, E, P> {
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
            let span = info_span!("notification", sns_message_id = %message_id, inference_id = Empty, trace_id = Empty);
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
        sqs_batch::response(failed)
    }

    /// One SQS record: `None` when recorded, the messageId to report when it failed (a record
    /// without one, which SQS never sends, can only be logged).
    async fn handle_sqs_record(&self, index: usize, raw: &Value) -> Option<String> {
        let message = match sqs_batch::message(index, raw) {
            Ok(m) => m,
            Err(id) => return id,
        };
        let sqs_id = message.message_id.clone().unwrap_or_default();
        let delivery = unwrap_sqs_body(message.body.as_deref().unwrap_or_default());
        let id = delivery.sns_message_id.as_deref().unwrap_or(&sqs_id);
        let span = info_span!("notification", sqs_message_id = %sqs_id, sns_message_id = %id, inference_id = Empty, trace_id = Empty);
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
        let now = self.clock.now();
        let recorded =
            record_notification(&self.store, &self.objects, self.settings, outcome, now).await?;
        // The job's trace (its submitting call's) from here on: the outcome joins it.
        let trace_id = recorded.trace().map(|t| t.trace_id());
        let trace_id = trace_id.as_deref();
        tracing::Span::current().record("trace_id", trace_id);
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
                trace_id,
                "outcome recorded"
            ),
            Recorded::AlreadyFinal { .. } => {
                tracing::info!(trace_id, "outcome already recorded; delivery ignored")
            }
        }
        telemetry::outcome(&recorded, OutcomeSource::Notification);
        announce(&self.events, &recorded).await?;
        if recorded.completion().is_some() && self.events.is_some() {
            tracing::info!("completion event put");
        }
        if let Some(published) = publish_event(self.subscribers.as_ref(), &recorded, now).await? {
            let (logged, subscribers) = (published.logged, published.subscribers);
            tracing::info!(logged, subscribers, "event published for subscribers");
        }
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
            HandlerError::Event(_) => "CompletionEventNotPut",
            HandlerError::Publish(_) => "EventNotPublished",
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

/// The handler on the in-memory ports, fed the sample events `cargo lambda invoke` uses.
#[cfg(test)]
mod tests {
    use domain::job::JobStatus;
    use fakes::{MemoryEventLog, MemoryEvents, MemoryJobs, MemoryObjects, MemorySubscriptions};
    use serde_json::{json, Value};
    use usecases::events::Subscribers;

    use super::*;

    type Subs = Subscribers<MemoryEventLog, MemorySubscriptions>;
    type TestHandler = Handler<MemoryJobs, MemoryObjects, MemoryEvents, Subs>;

    /// The job's outcome is recorded: it is completed.
    fn assert_recorded(h: &TestHandler, inference_id: &str) {
        assert_eq!(
            h.store.job(inference_id).unwrap().status,
            JobStatus::Completed
        );
    }

    fn handler() -> TestHandler {
        Handler {
            clock: domain::time::Clock::system(),
            store: MemoryJobs::default(),
            objects: MemoryObjects::default(),
            events: Some(MemoryEvents::default()),
            subscribers: Some(Subscribers {
                log: MemoryEventLog::default(),
                subscriptions: Some(MemorySubscriptions::default()),
            }),
            settings: JobSettings::default(),
            batch_concurrency: 4,
        }
    }

    fn event(name: &str) -> Value {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    /// The SNS message of a sample event's first record.
    fn message(name: &str) -> String {
        event(name)["Records"][0]["Sns"]["Message"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn sns(messages: &[(&str, &str)]) -> Value {
        let records: Vec<Value> = messages
            .iter()
            .map(|(id, message)| {
                json!({"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:aws:sns:us-east-1:1:t:s",
                       "Sns": {"Type": "Notification", "MessageId": id, "TopicArn": "arn:aws:sns:us-east-1:1:t",
                               "Message": message, "Timestamp": "2026-11-20T10:15:02.118Z", "SignatureVersion": "1",
                               "Signature": "x", "SigningCertUrl": "https://x", "UnsubscribeUrl": "https://x",
                               "MessageAttributes": {}}})
            })
            .collect();
        json!({ "Records": records })
    }

    fn sqs(bodies: &[(&str, &str)]) -> Value {
        let records: Vec<Value> = bodies
            .iter()
            .map(|(id, body)| {
                json!({"messageId": id, "receiptHandle": "r", "body": body, "attributes": {}, "messageAttributes": {},
                       "md5OfBody": "", "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:q",
                       "awsRegion": "us-east-1"})
            })
            .collect();
        json!({ "Records": records })
    }

    #[tokio::test]
    async fn a_success_with_its_response_body_is_recorded_without_reading_s3() {
        let h = handler();
        let answer = h
            .handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        assert_eq!(answer, json!({"processed": 1}));
        let job = h.store.job("demo-response-body-0002").unwrap();
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(
            job.result,
            Some(json!({"label": "invoice", "confidence": 0.97}))
        );
        assert_eq!(
            job.output_location.as_deref(),
            Some("s3://mcp-sagemaker-async-io/outputs/6c1f5d0e-demo-0002.out")
        );
        assert_eq!(h.objects.reads(), 0);
    }

    #[tokio::test]
    async fn a_success_without_a_body_reads_its_output_from_s3() {
        let message: Value = serde_json::from_str(&message("sns-success.json")).unwrap();
        let id = message["inferenceId"].as_str().unwrap().to_owned();
        let location = message["responseParameters"]["outputLocation"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut h = handler();
        h.objects = MemoryObjects::default().with(&location, br#"{"label":"ok"}"#.to_vec());
        h.handle(event("sns-success.json")).await.unwrap();
        let job = h.store.job(&id).unwrap();
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(job.result, Some(json!({"label": "ok"})));
        assert_eq!(h.objects.reads(), 1);
    }

    #[tokio::test]
    async fn a_failure_is_recorded_with_its_reason() {
        let h = handler();
        h.handle(event("sns-failure.json")).await.unwrap();
        let message: Value = serde_json::from_str(&message("sns-failure.json")).unwrap();
        let job = h
            .store
            .job(message["inferenceId"].as_str().unwrap())
            .unwrap();
        assert_eq!(job.status, JobStatus::Failed);
        assert_eq!(
            job.failure_reason.as_deref(),
            message["failureReason"].as_str()
        );
    }

    #[tokio::test]
    async fn a_duplicate_delivery_writes_nothing_new_and_a_test_notification_nothing_at_all() {
        let h = handler();
        h.handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        let first = h.store.job("demo-response-body-0002").unwrap();
        h.handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        assert_eq!(h.store.job("demo-response-body-0002").unwrap(), first);
        let (_, writes) = h.store.calls();
        assert_eq!(
            writes, 2,
            "the duplicate's write was refused by its condition"
        );

        let h = handler();
        let answer = h.handle(event("sns-test-notification.json")).await.unwrap();
        assert_eq!(answer, json!({"processed": 1}));
        assert_eq!(h.store.calls(), (0, 0));
    }

    #[tokio::test]
    async fn one_bad_sns_record_fails_the_invocation_by_name_after_the_others_are_recorded() {
        let h = handler();
        let good = message("sns-success-response-body.json");
        let event = sns(&[("good-1", &good), ("bad-1", "not json")]);
        let err = h.handle(event).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("1 of 2 SNS records failed: bad-1: message is not JSON"),
            "{text}"
        );
        assert_eq!(
            lambda_runtime::Diagnostic::from(err).error_type,
            "NotificationsNotRecorded"
        );
        assert_recorded(&h, "demo-response-body-0002");
    }

    #[tokio::test]
    async fn an_sqs_batch_reports_exactly_the_messages_that_failed() {
        let h = handler();
        let good = message("sns-success-response-body.json");
        // Raw message delivery off: the SQS body is SNS's JSON envelope.
        let enveloped =
            json!({"Type": "Notification", "MessageId": "sns-9", "Message": good}).to_string();
        let event = sqs(&[("m-1", &enveloped), ("m-2", "{\"broken\":"), ("m-3", &good)]);
        let answer = h.handle(event).await.unwrap();
        assert_eq!(
            answer,
            json!({"batchItemFailures": [{"itemIdentifier": "m-2"}]})
        );
        assert_recorded(&h, "demo-response-body-0002");
    }

    #[tokio::test]
    async fn a_result_dynamodb_refuses_inline_is_recorded_as_a_pointer() {
        let h = handler();
        h.store.reject_inline_results();
        let good = message("sns-success-response-body.json");
        let answer = h.handle(sqs(&[("m-1", &good)])).await.unwrap();
        assert_eq!(answer, json!({"batchItemFailures": []}));
        let job = h.store.job("demo-response-body-0002").unwrap();
        assert_eq!(job.status, JobStatus::Completed);
        assert_eq!(job.result, None);
        assert_eq!(
            job.output_location.as_deref(),
            Some("s3://mcp-sagemaker-async-io/outputs/6c1f5d0e-demo-0002.out")
        );
    }

    fn events(h: &TestHandler) -> &MemoryEvents {
        h.events.as_ref().unwrap()
    }

    #[tokio::test]
    async fn each_recorded_outcome_is_announced_after_its_write_and_a_retried_one_again() {
        let h = handler();
        h.handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        h.handle(event("sns-failure.json")).await.unwrap();
        let put = events(&h).put();
        assert_eq!(
            put.iter()
                .map(|e| (e.detail_type(), e.status))
                .collect::<Vec<_>>(),
            [
                ("Async Job Completed", "completed"),
                ("Async Job Failed", "failed")
            ]
        );
        let failure: Value = serde_json::from_str(&message("sns-failure.json")).unwrap();
        assert_eq!(
            put[1].failure_reason.as_deref(),
            failure["failureReason"].as_str()
        );
        assert_eq!(
            put[0].output_location.as_deref(),
            Some("s3://mcp-sagemaker-async-io/outputs/6c1f5d0e-demo-0002.out")
        );
        // SNS delivers the same notification again: nothing new is written, the event is put
        // again (consumers dedupe on inference_id).
        h.handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        let put = events(&h).put();
        assert_eq!(put.len(), 3);
        assert_eq!(put[2], put[0]);
    }

    #[tokio::test]
    async fn a_job_submitted_with_a_trace_is_announced_with_its_traceparent() {
        use domain::caller::Principal;
        use domain::job::{reserve, JobPolicy, Submission};
        use domain::trace::TraceContext;
        let h = handler();
        let notification: Value =
            serde_json::from_str(&message("sns-success-response-body.json")).unwrap();
        let trace = TraceContext::start();
        let owner = Principal::Local.caller().owner;
        let mut s = Submission::new(&owner, "ep", "b", b"{}".to_vec(), None, 300, 600)
            .with_trace(trace.clone());
        s.inference_id =
            domain::ids::InferenceId::parse(notification["inferenceId"].as_str().unwrap()).unwrap();
        let now = h.clock.now();
        h.store
            .write(&reserve(&s, &JobPolicy::default(), now))
            .await
            .unwrap();
        h.handle(event("sns-success-response-body.json"))
            .await
            .unwrap();
        let put = events(&h).put();
        assert_eq!(put.len(), 1);
        assert_eq!(put[0].traceparent, Some(trace.traceparent()));
        let detail: Value = serde_json::from_str(&put[0].detail_json()).unwrap();
        assert_eq!(detail["traceparent"], trace.traceparent().as_str());
    }

    #[tokio::test]
    async fn an_owners_outcome_is_logged_once_naming_its_webhook_once() {
        use domain::caller::Principal;
        use domain::events::{EventName, SubscriptionKey};
        use domain::job::{reserve, JobPolicy, Submission};
        use ports::EventLog;
        use usecases::events::{subscribe, SubscribeAsk};
        let h = handler();
        let subscribers = h.subscribers.as_ref().unwrap();
        let subscriptions = subscribers.subscriptions.as_ref().unwrap();
        let notification: Value =
            serde_json::from_str(&message("sns-success-response-body.json")).unwrap();
        let owner = Principal::Local.caller().owner;
        let mut s = Submission::new(&owner, "ep", "b", b"{}".to_vec(), None, 300, 600);
        s.inference_id =
            domain::ids::InferenceId::parse(notification["inferenceId"].as_str().unwrap()).unwrap();
        let now = h.clock.now();
        h.store
            .write(&reserve(&s, &JobPolicy::default(), now))
            .await
            .unwrap();
        let key = SubscriptionKey {
            owner: owner.clone(),
            url: "https://hooks.example.com/in".into(),
            name: EventName::JobEnded,
            arguments: json!({}),
        };
        let ask = SubscribeAsk {
            key,
            secret: domain::webhook::WebhookSecret::from_bytes(vec![1; 32]).unwrap(),
            ttl: domain::subscription::DEFAULT_TTL,
        };
        let hooks = fakes::FakeWebhooks::default();
        let made = subscribe(subscriptions, &hooks, ask, now).await.unwrap();
        for _ in 0..2 {
            h.handle(event("sns-success-response-body.json"))
                .await
                .unwrap();
        }
        // The sample's outcome is years old: read as of its day.
        let then = chrono::DateTime::UNIX_EPOCH;
        let logged = subscribers.log.read(&owner, None, 10, then).await.unwrap();
        assert_eq!(logged.len(), 1, "one event, however often SNS delivers");
        let named = subscribers.log.logged();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].0.id, logged[0].id);
        assert_eq!(named[0].0.data["status"], "completed");
        assert_eq!(named[0].1, [made.subscription.id()], "its one subscription");
    }

    #[tokio::test]
    async fn no_event_without_a_write_and_no_acknowledgement_without_an_event() {
        let h = handler();
        h.store.fail_writes();
        let good = message("sns-success-response-body.json");
        let answer = h.handle(sqs(&[("m-1", &good)])).await.unwrap();
        assert_eq!(
            answer,
            json!({"batchItemFailures": [{"itemIdentifier": "m-1"}]})
        );
        assert!(
            events(&h).put().is_empty(),
            "nothing recorded, nothing announced"
        );

        let h = handler();
        events(&h).set_failing(true);
        let answer = h.handle(sqs(&[("m-2", &good)])).await.unwrap();
        // Recorded, but not announced: the message comes back, and its retry announces it.
        assert_eq!(
            answer,
            json!({"batchItemFailures": [{"itemIdentifier": "m-2"}]})
        );
        assert_recorded(&h, "demo-response-body-0002");
        let err = h
            .handle(event("sns-success-response-body.json"))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("completion event was not put"),
            "{err}"
        );
        events(&h).set_failing(false);
        h.handle(sqs(&[("m-2", &good)])).await.unwrap();
        assert_eq!(events(&h).put().len(), 1);

        // No bus: recorded, nothing put, acknowledged.
        let mut h = handler();
        h.events = None;
        let answer = h.handle(sqs(&[("m-3", &good)])).await.unwrap();
        assert_eq!(answer, json!({"batchItemFailures": []}));
    }

    #[tokio::test]
    async fn an_event_that_is_neither_sns_nor_sqs_is_refused_by_what_it_lacks() {
        let h = handler();
        let err = h.handle(json!({"detail": {}})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "event is neither an SNS nor an SQS event: no Records array"
        );
        assert_eq!(
            lambda_runtime::Diagnostic::from(err).error_type,
            "UnknownEvent"
        );
        let answer = h.handle(json!({"Records": []})).await.unwrap();
        assert_eq!(answer, json!({"processed": 0}));
    }
}
