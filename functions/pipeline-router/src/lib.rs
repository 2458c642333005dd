//! pipeline-router: the EventBridge target for "SageMaker Model Building Pipeline Execution
//! Status Change", and the consumer of the callback queue its runs' CallbackSteps send their
//! questions to. It only translates the events; the rules are in `usecases::route` and
//! `usecases::callback`.

pub mod config;

use aws_lambda_events::sqs::SqsBatchResponse;
use serde_json::{json, Value};
use tracing::{field::Empty, info_span, Instrument, Span};

use domain::pipeline_event::{parse_status_change, PipelineEventError};
use domain::time::parse_rfc3339;
use domain::trace::TraceContext;
use entry::sqs_batch;
use entry::telemetry;
use ports::{CompletionQueue, PipelineControl, RunStore};
use usecases::callback::{record_question, Asked};
use usecases::events::{Publish, PublishError};
use usecases::route::{route_status_change, RouteError, Routed};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("bad pipeline event: {0}")]
    BadEvent(#[from] PipelineEventError),
    #[error(transparent)]
    Route(#[from] RouteError),
    /// The run's end is recorded and sent, its subscribers' event not logged:
    /// EventBridge retries, and the retry sends and publishes it again (once in the log).
    #[error("the run's end is recorded, but its event did not reach its subscribers: {0}")]
    Publish(#[from] PublishError),
}

/// What Lambda reports (and the failure destination receives) for a failed invocation.
impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        let error_type = match &e {
            HandlerError::BadEvent(_) => "BadPipelineEvent",
            HandlerError::Route(RouteError::Store(_)) => "StoreFailed",
            HandlerError::Route(RouteError::Queue(_)) => "QueueSendFailed",
            HandlerError::Route(RouteError::Describe { .. }) => "DescribeFailed",
            HandlerError::Publish(_) => "EventNotPublished",
        };
        lambda_runtime::Diagnostic {
            error_type: error_type.to_owned(),
            error_message: e.to_string(),
        }
    }
}

pub struct Handler<S, P, Q, E> {
    pub store: S,
    /// Only DescribePipelineExecution is called, for a failed run's reason.
    pub pipeline: P,
    pub queue: Q,
    pub result_ttl_secs: u64,
    /// Where a run's end goes for its owner's MCP Events subscribers (`None`: nowhere).
    pub subscribers: Option<E>,
    /// The time, as runs are recorded at it (the system's; a test's own in tests).
    pub clock: domain::time::Clock,
}

impl<S: RunStore, P: PipelineControl, Q: CompletionQueue, E: Publish> Handler<S, P, Q, E> {
    /// An EventBridge event, or a batch from the callback queue (SQS records): see
    /// [`Handler::handle_status_change`] and [`Handler::handle_callbacks`].
    pub async fn handle(&self, event: Value) -> Result<Value, HandlerError> {
        match event.get("Records").and_then(Value::as_array) {
            Some(records) => Ok(serde_json::to_value(self.handle_callbacks(records).await)
                .expect("batch response serializes")),
            None => self.handle_status_change(event).await,
        }
    }

    /// Each callback message's question recorded on its run; a message that failed is
    /// reported by id (a partial batch failure), so SQS delivers it again and, past the
    /// queue's maxReceiveCount, moves it to the dead-letter queue. A message that can never be
    /// recorded (bad, or of a run not started through the tools) is reported too: the
    /// dead-letter queue keeps it for a person, as nothing here can answer its step.
    pub async fn handle_callbacks(&self, records: &[Value]) -> SqsBatchResponse {
        let mut failed = Vec::new();
        for (index, raw) in records.iter().enumerate() {
            let message = match sqs_batch::message(index, raw) {
                Ok(m) => m,
                Err(id) => {
                    failed.extend(id);
                    continue;
                }
            };
            let sqs_id = message.message_id.clone().unwrap_or_default();
            let span = info_span!("callback", sqs_message_id = %sqs_id);
            let now = self.clock.now();
            let asked = record_question(
                &self.store,
                &self.pipeline,
                message.body.as_deref().unwrap_or_default(),
                now,
            )
            .instrument(span.clone())
            .await;
            let run = span.in_scope(|| match asked {
                Ok(Asked::Recorded { key, run }) => {
                    tracing::info!(key, "question recorded");
                    Some((key, run, now))
                }
                Ok(Asked::Known { key, run }) => {
                    tracing::info!(key, "question already recorded; duplicate delivery");
                    let asked_at = run.questions.by_key.get(&key).and_then(|q| parse_rfc3339(&q.asked_at));
                    Some((key, run, asked_at.unwrap_or(now)))
                }
                Err(e) => {
                    tracing::error!(error = %e, retryable = e.is_retryable(), "question not recorded");
                    failed.push(sqs_id.clone());
                    None
                }
            });
            // The owner's subscribers hear that the run asks, once (a redelivered question makes
            // the same event, published only if it was not). When that fails, the message is
            // reported, so it comes again and the event is published then.
            let Some((key, run, asked_at)) = run else {
                continue;
            };
            let Some(subscribers) = &self.subscribers else {
                continue;
            };
            if let Some(event) = domain::events::run_asks(&run, &key, asked_at) {
                let published = subscribers
                    .publish(&event, now)
                    .instrument(span.clone())
                    .await;
                span.in_scope(|| match published {
                    Ok(p) => tracing::info!(
                        logged = p.logged,
                        subscribers = p.subscribers,
                        "event published for subscribers"
                    ),
                    Err(e) => {
                        tracing::error!(error = %e, "question's event not published");
                        failed.push(sqs_id.clone());
                    }
                });
            }
        }
        sqs_batch::response(failed)
    }

    /// An error makes EventBridge retry the event, then send it to the failure destination.
    pub async fn handle_status_change(&self, event: Value) -> Result<Value, HandlerError> {
        let event_id = event.get("id").and_then(Value::as_str).unwrap_or("?");
        // The ids go on a span, so every line of this event carries them.
        let span = info_span!(
            "pipeline_event",
            event_id,
            execution_arn = Empty,
            session_id = Empty,
            trace_id = Empty
        );
        self.route(&event).instrument(span).await
    }

    async fn route(&self, event: &Value) -> Result<Value, HandlerError> {
        let change = parse_status_change(event).inspect_err(|e| {
            tracing::error!(error = %e, "pipeline event refused");
        })?;
        Span::current().record("execution_arn", change.execution_arn.as_str());
        let status = change.status.as_str();
        let now = self.clock.now();
        let routed = route_status_change(
            &self.store,
            &self.pipeline,
            &self.queue,
            self.result_ttl_secs,
            change,
            now,
        )
        .await
        .inspect_err(|e| tracing::error!(error = %e, "pipeline event not routed"))?;
        if let (
            Routed::Recorded {
                ended: Some(message),
                ..
            },
            Some(subscribers),
        ) = (&routed, &self.subscribers)
        {
            if let Some(event) = domain::events::run_ended(message, now) {
                let published = subscribers
                    .publish(&event, now)
                    .await
                    .inspect_err(|e| tracing::error!(error = %e, "run's event not published"))?;
                let (logged, subscribers) = (published.logged, published.subscribers);
                tracing::info!(logged, subscribers, "event published for subscribers");
            }
        }
        Ok(match routed {
            Routed::NotOurs => {
                tracing::info!("no session_id in the execution description; not a run of ours");
                json!({"routed": false, "reason": "no session_id in the execution description"})
            }
            Routed::Recorded {
                session_id,
                status,
                sent,
                trace,
                ..
            } => {
                Span::current().record("session_id", session_id.as_str());
                let trace_id = joined(trace.as_ref());
                let trace_id = trace_id.as_deref();
                tracing::info!(
                    status = status.as_str(),
                    sent,
                    trace_id,
                    "pipeline status recorded"
                );
                telemetry::run_routed(status.as_str(), sent);
                json!({"routed": true, "session_id": session_id, "status": status.as_str(), "sent": sent})
            }
            Routed::Ignored {
                session_id,
                stored_status,
                trace,
            } => {
                Span::current().record("session_id", session_id.as_str());
                let trace_id = joined(trace.as_ref());
                let trace_id = trace_id.as_deref();
                tracing::info!(%stored_status, incoming = status, trace_id, "terminal status already stored; event ignored");
                json!({"routed": false, "session_id": session_id, "reason": format!("status {stored_status} already stored")})
            }
        })
    }
}

/// The run's trace (its triggering call's) on the event's span, so its lines join it; the
/// trace id, for the key line's own field.
fn joined(trace: Option<&TraceContext>) -> Option<String> {
    let trace_id = trace.map(TraceContext::trace_id);
    Span::current().record("trace_id", trace_id.as_deref());
    trace_id
}

/// The handler on the in-memory ports, fed the sample events `cargo lambda invoke` uses.
#[cfg(test)]
mod tests {
    use domain::events::EventName;
    use fakes::{FakePipeline, MemoryEventLog, MemoryQueue, MemoryRuns, MemorySubscriptions};
    use ports::EventLog;
    use serde_json::{json, Value};
    use usecases::events::Subscribers;

    use super::*;

    type Subs = Subscribers<MemoryEventLog, MemorySubscriptions>;

    /// A webhook subscription of `owner` to every event of `name`.
    async fn subscribed(
        subscriptions: &MemorySubscriptions,
        owner: &domain::caller::Owner,
        name: EventName,
    ) {
        let key = domain::events::SubscriptionKey {
            owner: owner.clone(),
            url: "https://hooks.example.com/in".into(),
            name,
            arguments: json!({}),
        };
        let ask = usecases::events::SubscribeAsk {
            key,
            secret: domain::webhook::WebhookSecret::from_bytes(vec![1; 32]).unwrap(),
            ttl: domain::subscription::DEFAULT_TTL,
        };
        let hooks = fakes::FakeWebhooks::default();
        let now = chrono::Utc::now();
        usecases::events::subscribe(subscriptions, &hooks, ask, now)
            .await
            .unwrap();
    }

    const ARN: &str = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/mcp-intent-classifier-pipeline/execution/k2p9x7q1m4z8";

    fn handler() -> Handler<MemoryRuns, FakePipeline, MemoryQueue, Subs> {
        Handler {
            clock: domain::time::Clock::system(),
            store: MemoryRuns::default(),
            pipeline: FakePipeline::default(),
            queue: MemoryQueue::default(),
            result_ttl_secs: 3600,
            subscribers: Some(Subscribers {
                log: MemoryEventLog::default(),
                subscriptions: Some(MemorySubscriptions::default()),
            }),
        }
    }

    fn event(name: &str) -> Value {
        let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    fn with_status(status: &str) -> Value {
        let mut e = event("pipeline-succeeded.json");
        e["detail"]["currentPipelineExecutionStatus"] = json!(status);
        e
    }

    #[tokio::test]
    async fn a_finished_run_is_recorded_and_announced_once_per_delivery() {
        let h = handler();
        let answer = h.handle(event("pipeline-succeeded.json")).await.unwrap();
        assert_eq!(
            answer,
            json!({"routed": true, "session_id": "sess-42", "status": "Succeeded", "sent": true})
        );
        let runs = h.store.all();
        assert_eq!(runs.len(), 1);
        assert_eq!(
            (runs[0].session_id.as_str(), runs[0].execution_arn.as_str()),
            ("sess-42", ARN)
        );
        assert_eq!(runs[0].status.as_str(), "Succeeded");
        let sent = h.queue.sent();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].session_id, "sess-42");
        assert_eq!(sent[0].execution_arn, ARN);
    }

    #[tokio::test]
    async fn an_owned_runs_end_is_logged_once_and_queued_for_its_webhook() {
        use domain::caller::Principal;
        use domain::events::{EventName, SubscriptionKey};
        use ports::EventLog;
        use usecases::events::{subscribe, SubscribeAsk};
        let h = handler();
        let owner = Principal::Local.caller().owner;
        let now = h.clock.now();
        let mut e = event("pipeline-succeeded.json");
        e["detail"]["pipelineExecutionDescription"] = json!(
            domain::pipeline_event::execution_description("sess-42", &owner, now)
        );
        let subscribers = h.subscribers.as_ref().unwrap();
        let subscriptions = subscribers.subscriptions.as_ref().unwrap();
        let key = SubscriptionKey {
            owner: owner.clone(),
            url: "https://hooks.example.com/in".into(),
            name: EventName::RunEnded,
            arguments: json!({"pipeline": "mcp-intent-classifier-pipeline"}),
        };
        let ask = SubscribeAsk {
            key,
            secret: domain::webhook::WebhookSecret::from_bytes(vec![1; 32]).unwrap(),
            ttl: domain::subscription::DEFAULT_TTL,
        };
        let hooks = fakes::FakeWebhooks::default();
        subscribe(subscriptions, &hooks, ask, now).await.unwrap();
        for _ in 0..2 {
            h.handle(e.clone()).await.unwrap();
        }
        let then = chrono::DateTime::UNIX_EPOCH;
        let logged = subscribers.log.read(&owner, None, 10, then).await.unwrap();
        assert_eq!(
            logged.len(),
            1,
            "one event, however often EventBridge delivers"
        );
        assert_eq!(logged[0].data["status"], "Succeeded");
        assert_eq!(logged[0].data["session_id"], "sess-42");
        let named = subscribers.log.logged();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].0.id, logged[0].id);
        assert_eq!(named[0].1.len(), 1, "named for its one subscription");
    }

    #[tokio::test]
    async fn a_late_executing_event_never_overwrites_a_terminal_status() {
        let h = handler();
        h.handle(event("pipeline-succeeded.json")).await.unwrap();
        let answer = h.handle(with_status("Executing")).await.unwrap();
        assert_eq!(answer["routed"], false);
        assert_eq!(answer["reason"], "status Succeeded already stored");
        assert_eq!(h.store.all()[0].status.as_str(), "Succeeded");
        assert_eq!(h.queue.sent().len(), 1);
    }

    #[tokio::test]
    async fn a_failed_run_gets_its_reason_from_sagemaker() {
        let h = handler();
        let arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/mcp-intent-classifier-pipeline/execution/f4i1ed000001";
        h.pipeline
            .set_failure_reason(arn, "AlgorithmError: loss is NaN");
        h.handle(event("pipeline-failed.json")).await.unwrap();
        let runs = h.store.all();
        assert_eq!(runs[0].status.as_str(), "Failed");
        assert_eq!(
            runs[0].failure_reason.as_deref(),
            Some("AlgorithmError: loss is NaN")
        );
        assert_eq!(
            h.queue.sent()[0].failure_reason.as_deref(),
            Some("AlgorithmError: loss is NaN")
        );
    }

    #[tokio::test]
    async fn a_run_without_a_session_is_not_ours_and_writes_nothing() {
        let h = handler();
        let answer = h.handle(event("pipeline-no-session.json")).await.unwrap();
        assert_eq!(answer["routed"], false);
        assert!(h.store.all().is_empty());
        assert!(h.queue.sent().is_empty());
    }

    #[tokio::test]
    async fn a_failed_send_fails_the_invocation_and_its_retry_sends() {
        let h = handler();
        h.queue.set_failing(true);
        let err = h
            .handle(event("pipeline-succeeded.json"))
            .await
            .unwrap_err();
        assert_eq!(
            lambda_runtime::Diagnostic::from(err).error_type,
            "QueueSendFailed"
        );
        assert_eq!(
            h.store.all()[0].status.as_str(),
            "Succeeded",
            "written before the send"
        );
        h.queue.set_failing(false);
        let answer = h.handle(event("pipeline-succeeded.json")).await.unwrap();
        assert_eq!(answer["sent"], true);
        assert_eq!(h.queue.sent().len(), 1);
    }

    #[tokio::test]
    async fn a_malformed_event_is_refused_naming_what_is_wrong() {
        let h = handler();
        for name in [
            "pipeline-bad-detail-type.json",
            "pipeline-bad-missing-arn.json",
            "pipeline-bad-no-detail.json",
        ] {
            let err = h.handle(event(name)).await.unwrap_err();
            assert!(
                err.to_string().starts_with("bad pipeline event: "),
                "{name}: {err}"
            );
            assert_eq!(
                lambda_runtime::Diagnostic::from(err).error_type,
                "BadPipelineEvent"
            );
        }
        let err = h
            .handle(event("pipeline-bad-missing-arn.json"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("pipelineExecutionArn"), "{err}");
        assert!(h.store.all().is_empty());
    }

    #[tokio::test]
    async fn a_callback_batch_records_its_question_and_reports_only_the_bad_message() {
        use domain::caller::Principal;
        use domain::pipeline_event::execution_description;
        use domain::run::record_triggered;
        use ports::StartRequest;

        let h = handler();
        let owner = Principal::Local.caller().owner;
        let started = StartRequest {
            pipeline_name: "mcp-intent-classifier-pipeline".into(),
            description: execution_description("sess-42", &owner, chrono::Utc::now()),
            parameters: vec![],
            client_request_token: "c".repeat(32),
            max_parallel_steps: None,
        };
        let arn = h.pipeline.start(&started).await.unwrap();
        let triggered = record_triggered(
            &owner,
            "sess-42",
            &arn,
            "2026-11-20T10:41:51Z",
            1 << 40,
            "s3cret",
            None,
        );
        h.store.write(&triggered).await.unwrap();
        let subscribers = h.subscribers.as_ref().unwrap();
        let subscriptions = subscribers.subscriptions.as_ref().unwrap();
        subscribed(subscriptions, &owner, EventName::RunAsks).await;
        // The step waits on the first message's token, as SageMaker lists it once sent.
        h.pipeline.wait_on_callback(&arn, "Xk3vQ9pLm2");
        let batch = serde_json::to_string(&event("callback-batch.json"))
            .unwrap()
            .replace(ARN, &arn);
        let batch: Value = serde_json::from_str(&batch).unwrap();
        for _ in 0..2 {
            // The second delivery of the same batch asks nothing new.
            let answer = h.handle(batch.clone()).await.unwrap();
            assert_eq!(
                answer,
                json!({"batchItemFailures": [{"itemIdentifier": "55555555-0000-4000-8000-000000000002"}]})
            );
            let run = h.store.all().pop().unwrap();
            let open: Vec<_> = run.questions.open().collect();
            assert_eq!(open.len(), 1);
            assert!(open[0].1.prompt.starts_with("The model reached accuracy"));
            assert_eq!(open[0].1.schema["required"], json!(["deploy_to"]));
        }
        assert!(h.queue.sent().is_empty());
        // Its owner's subscribers heard that it asks, once; nothing of the question itself.
        let then = chrono::DateTime::UNIX_EPOCH;
        let logged = subscribers.log.read(&owner, None, 10, then).await.unwrap();
        assert_eq!(logged.len(), 1);
        assert_eq!(logged[0].name, EventName::RunAsks);
        let run = h.store.all().pop().unwrap();
        let key = run.questions.open().next().unwrap().0.clone();
        assert_eq!(logged[0].data["key"], key.as_str());
        assert!(!logged[0].data.to_string().contains("accuracy"));
        assert_eq!(
            subscribers.log.logged()[0].1.len(),
            1,
            "named for its subscription"
        );
    }
}
