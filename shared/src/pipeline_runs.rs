//! Recording and announcing pipeline run outcomes: the pipeline results table, the completion
//! queue, the failure-reason lookup, and the route from one status change to them.
//!
//! Rules: a stored terminal status is never overwritten (a late `Executing`, a replay); a
//! terminal event is sent to the queue when it was written, and again when the same terminal
//! status is already stored, because that is how a retry after a failed send looks. So a
//! completion is never lost, and a consumer may see one twice.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_sqs::types::MessageAttributeValue;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::aws::{classify, AwsFailure};
use crate::pipeline::{PipelineStatus, PipelineStatusChange};
use crate::store::StoreError;
use crate::time::{rfc3339, ttl_after};

/// Attribute names of the pipeline results table (the deployment contract).
pub mod attr {
    pub const SESSION_ID: &str = "session_id";
    pub const EXECUTION_ARN: &str = "execution_arn";
    pub const PIPELINE_ARN: &str = "pipeline_arn";
    pub const STATUS: &str = "status";
    pub const STARTED_AT: &str = "started_at";
    pub const ENDED_AT: &str = "ended_at";
    pub const FAILURE_REASON: &str = "failure_reason";
    pub const UPDATED_AT: &str = "updated_at";
    pub const TTL: &str = "ttl";
}

const MAX_FAILURE_REASON_BYTES: usize = 4096;

/// What one status change writes.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub session_id: String,
    pub execution_arn: String,
    pub pipeline_arn: String,
    pub status: PipelineStatus,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub failure_reason: Option<String>,
    pub updated_at: String,
    pub ttl: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpsertResult {
    Written,
    /// A terminal status was already stored; nothing changed.
    Kept {
        stored_status: String,
    },
}

pub trait PipelineRunStore: Sync {
    fn upsert_run(
        &self,
        record: &RunRecord,
    ) -> impl Future<Output = Result<UpsertResult, StoreError>> + Send;
}

/// The message sent to the completion queue (JSON body).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionMessage {
    pub session_id: String,
    pub execution_arn: String,
    pub pipeline_arn: String,
    pub status: String,
    pub previous_status: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub event_id: String,
    pub event_time: String,
}

#[derive(Debug, thiserror::Error)]
#[error("SQS SendMessage to {queue_url} failed: {failure}")]
pub struct QueueError {
    pub queue_url: String,
    pub failure: AwsFailure,
}

pub trait CompletionQueue: Sync {
    fn send(
        &self,
        message: &CompletionMessage,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

pub trait ExecutionDescriber: Sync {
    /// The run's `FailureReason` from DescribePipelineExecution.
    fn failure_reason(
        &self,
        execution_arn: &str,
    ) -> impl Future<Output = Result<Option<String>, AwsFailure>> + Send;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// The description carries no session id: not a run this project started.
    NotOurs,
    Recorded {
        session_id: String,
        status: PipelineStatus,
        sent: bool,
    },
    /// A terminal status is stored; this (late or contradictory) event changed nothing.
    Ignored {
        session_id: String,
        stored_status: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("SageMaker DescribePipelineExecution of {execution_arn} failed: {failure}")]
    Describe {
        execution_arn: String,
        failure: AwsFailure,
    },
}

pub async fn route_status_change<S, D, Q>(
    store: &S,
    describer: &D,
    queue: &Q,
    result_ttl_secs: u64,
    change: PipelineStatusChange,
    now: DateTime<Utc>,
) -> Result<Routed, RouteError>
where
    S: PipelineRunStore,
    D: ExecutionDescriber,
    Q: CompletionQueue,
{
    let Some(session_id) = change.session_id.clone() else {
        return Ok(Routed::NotOurs);
    };
    // The event carries no reason; only a retryable lookup failure is worth a retry, the
    // outcome itself must not wait on a reason that cannot be had.
    let failure_reason = if change.status == PipelineStatus::Failed {
        match describer.failure_reason(&change.execution_arn).await {
            Ok(reason) => reason,
            Err(failure) if failure.retryable => {
                return Err(RouteError::Describe {
                    execution_arn: change.execution_arn,
                    failure,
                })
            }
            Err(failure) => Some(format!("failure reason unavailable: {failure}")),
        }
        .map(|r| crate::jobs::truncate_utf8(r, MAX_FAILURE_REASON_BYTES))
    } else {
        None
    };
    let record = RunRecord {
        session_id: session_id.clone(),
        execution_arn: change.execution_arn.clone(),
        pipeline_arn: change.pipeline_arn.clone(),
        status: change.status,
        started_at: change.started_at.map(rfc3339),
        ended_at: change.ended_at.map(rfc3339),
        failure_reason,
        updated_at: rfc3339(now),
        ttl: ttl_after(now, result_ttl_secs),
    };
    let written = match store.upsert_run(&record).await? {
        UpsertResult::Written => true,
        UpsertResult::Kept { stored_status } if stored_status == change.status.as_str() => false,
        UpsertResult::Kept { stored_status } => {
            return Ok(Routed::Ignored {
                session_id,
                stored_status,
            })
        }
    };
    if !change.status.is_terminal() {
        return Ok(Routed::Recorded {
            session_id,
            status: change.status,
            sent: false,
        });
    }
    if !written {
        tracing::info!(%session_id, execution_arn = %change.execution_arn, "terminal status already stored; sending the completion again");
    }
    queue
        .send(&CompletionMessage {
            session_id: session_id.clone(),
            execution_arn: record.execution_arn,
            pipeline_arn: record.pipeline_arn,
            status: change.status.as_str().to_owned(),
            previous_status: change.previous_status,
            started_at: record.started_at,
            ended_at: record.ended_at,
            failure_reason: record.failure_reason,
            event_id: change.event_id,
            event_time: rfc3339(change.event_time),
        })
        .await?;
    Ok(Routed::Recorded {
        session_id,
        status: change.status,
        sent: true,
    })
}

pub struct DynamoPipelineRunStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoPipelineRunStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

impl PipelineRunStore for DynamoPipelineRunStore {
    async fn upsert_run(&self, r: &RunRecord) -> Result<UpsertResult, StoreError> {
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let mut sets = Vec::new();
        let mut set = |name: &str, value: Option<AttributeValue>| {
            if let Some(value) = value {
                names.insert(format!("#{name}"), name.to_owned());
                values.insert(format!(":{name}"), value);
                sets.push(format!("#{name} = :{name}"));
            }
        };
        let s = |v: &str| Some(AttributeValue::S(v.to_owned()));
        set(attr::PIPELINE_ARN, s(&r.pipeline_arn));
        set(attr::STATUS, s(r.status.as_str()));
        set(attr::STARTED_AT, r.started_at.as_deref().and_then(s));
        set(attr::ENDED_AT, r.ended_at.as_deref().and_then(s));
        set(
            attr::FAILURE_REASON,
            r.failure_reason.as_deref().and_then(s),
        );
        set(attr::UPDATED_AT, s(&r.updated_at));
        set(attr::TTL, Some(AttributeValue::N(r.ttl.to_string())));
        names.insert("#session_id".into(), attr::SESSION_ID.into());
        let mut terminal = Vec::new();
        for (i, status) in PipelineStatus::TERMINAL.iter().enumerate() {
            values.insert(format!(":t{i}"), AttributeValue::S(status.as_str().into()));
            terminal.push(format!(":t{i}"));
        }
        let outcome = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::SESSION_ID, AttributeValue::S(r.session_id.clone()))
            .key(
                attr::EXECUTION_ARN,
                AttributeValue::S(r.execution_arn.clone()),
            )
            .update_expression(format!("SET {}", sets.join(", ")))
            .condition_expression(format!(
                "attribute_not_exists(#session_id) OR NOT (#status IN ({}))",
                terminal.join(", ")
            ))
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match outcome {
            Ok(_) => Ok(UpsertResult::Written),
            Err(e) => {
                if let Some(UpdateItemError::ConditionalCheckFailedException(c)) =
                    e.as_service_error()
                {
                    let stored_status = c
                        .item()
                        .and_then(|item| item.get(attr::STATUS))
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default();
                    return Ok(UpsertResult::Kept { stored_status });
                }
                Err(StoreError::Aws {
                    operation: "UpdateItem",
                    table: self.table.clone(),
                    failure: classify(&e),
                })
            }
        }
    }
}

pub struct SqsCompletionQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsCompletionQueue {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    pub fn is_fifo(&self) -> bool {
        self.queue_url.ends_with(".fifo")
    }
}

impl CompletionQueue for SqsCompletionQueue {
    async fn send(&self, m: &CompletionMessage) -> Result<(), QueueError> {
        let attribute = |v: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(v)
                .build()
                .expect("data type is set")
        };
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(serde_json::to_string(m).expect("completion message serializes"))
            .message_attributes("session_id", attribute(&m.session_id))
            .message_attributes("status", attribute(&m.status));
        if self.is_fifo() {
            // One ordered stream per session; a redelivered event is dropped by SQS for 5 minutes.
            request = request
                .message_group_id(&m.session_id)
                .message_deduplication_id(&m.event_id);
        }
        request.send().await.map(|_| ()).map_err(|e| QueueError {
            queue_url: self.queue_url.clone(),
            failure: classify(&e),
        })
    }
}

/// In-memory versions of the three, for tests of the route without AWS.
pub mod memory {
    use super::*;

    #[derive(Default)]
    pub struct MemoryRuns {
        pub items: Mutex<HashMap<(String, String), RunRecord>>,
    }

    impl PipelineRunStore for MemoryRuns {
        async fn upsert_run(&self, record: &RunRecord) -> Result<UpsertResult, StoreError> {
            let mut items = self.items.lock().unwrap();
            let key = (record.session_id.clone(), record.execution_arn.clone());
            if let Some(stored) = items.get(&key).filter(|s| s.status.is_terminal()) {
                return Ok(UpsertResult::Kept {
                    stored_status: stored.status.as_str().to_owned(),
                });
            }
            items.insert(key, record.clone());
            Ok(UpsertResult::Written)
        }
    }

    #[derive(Default)]
    pub struct MemoryQueue {
        pub sent: Mutex<Vec<CompletionMessage>>,
        /// Sends fail while this is set, as an unreachable queue would.
        pub failing: std::sync::atomic::AtomicBool,
    }

    impl CompletionQueue for MemoryQueue {
        async fn send(&self, message: &CompletionMessage) -> Result<(), QueueError> {
            if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(QueueError {
                    queue_url: "memory".into(),
                    failure: AwsFailure {
                        code: Some("ServiceUnavailable".into()),
                        message: "down".into(),
                        retryable: true,
                    },
                });
            }
            self.sent.lock().unwrap().push(message.clone());
            Ok(())
        }
    }

    pub struct FixedDescriber(pub Result<Option<String>, AwsFailure>);

    impl ExecutionDescriber for FixedDescriber {
        async fn failure_reason(&self, _: &str) -> Result<Option<String>, AwsFailure> {
            self.0.clone()
        }
    }
}

// ------------------------------------------------------------ reads and triggers (mcp-tools)

impl DynamoPipelineRunStore {
    /// The `pending` item of a run just started, unless pipeline-router already wrote the run.
    pub async fn put_pending_run(
        &self,
        session_id: &str,
        execution_arn: &str,
        updated_at: &str,
        ttl: i64,
    ) -> Result<(), StoreError> {
        let s = |v: &str| AttributeValue::S(v.to_owned());
        let outcome = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::SESSION_ID, s(session_id))
            .item(attr::EXECUTION_ARN, s(execution_arn))
            .item(attr::STATUS, s(PipelineStatus::Pending.as_str()))
            .item(attr::UPDATED_AT, s(updated_at))
            .item(attr::TTL, AttributeValue::N(ttl.to_string()))
            .condition_expression("attribute_not_exists(#session_id)")
            .expression_attribute_names("#session_id", attr::SESSION_ID)
            .send()
            .await;
        // Not written when pipeline-router recorded the run first.
        crate::store::conditional_write("PutItem", &self.table, outcome).map(|_| ())
    }

    /// Every run of a session (all pages, strongly consistent).
    pub async fn query_session(
        &self,
        session_id: &str,
    ) -> Result<Vec<crate::tools::RunView>, StoreError> {
        let mut runs = Vec::new();
        let mut start_key = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#sid = :sid")
                .expression_attribute_names("#sid", attr::SESSION_ID)
                .expression_attribute_values(":sid", AttributeValue::S(session_id.to_owned()))
                .consistent_read(true)
                .set_exclusive_start_key(start_key)
                .send()
                .await
                .map_err(|e| StoreError::Aws {
                    operation: "Query",
                    table: self.table.clone(),
                    failure: classify(&e),
                })?;
            for item in page.items() {
                let s = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
                runs.push(crate::tools::RunView {
                    execution_arn: s(attr::EXECUTION_ARN).unwrap_or_default(),
                    status: s(attr::STATUS).unwrap_or_default(),
                    started_at: s(attr::STARTED_AT),
                    ended_at: s(attr::ENDED_AT),
                    failure_reason: s(attr::FAILURE_REASON),
                    updated_at: s(attr::UPDATED_AT),
                    ttl: item
                        .get(attr::TTL)
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse().ok()),
                });
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start_key = Some(key),
                _ => return Ok(runs),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::memory::*;
    use super::*;
    use crate::pipeline::parse_status_change;
    use serde_json::json;
    use std::sync::atomic::Ordering;

    fn change(status: &str, description: Option<&str>) -> PipelineStatusChange {
        parse_status_change(&json!({
            "id": format!("ev-{status}"), "detail-type": crate::pipeline::DETAIL_TYPE, "source": "aws.sagemaker",
            "time": "2026-11-20T11:02:11Z",
            "detail": {"currentPipelineExecutionStatus": status, "previousPipelineExecutionStatus": "Executing",
                "executionStartTime": "2026-11-20T10:41:52Z", "pipelineExecutionDescription": description,
                "pipelineArn": "arn:p", "pipelineExecutionArn": "arn:p/execution/1"}
        }))
        .unwrap()
    }

    const OURS: Option<&str> = Some("session_id=s-1; triggered at 2026-11-20T10:41:51Z");

    fn now() -> DateTime<Utc> {
        crate::time::parse_rfc3339("2026-11-20T11:02:12Z").unwrap()
    }

    #[tokio::test]
    async fn a_run_without_session_id_writes_and_sends_nothing() {
        let (store, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let routed = route_status_change(
            &store,
            &FixedDescriber(Ok(None)),
            &queue,
            3600,
            change("Succeeded", Some("by hand")),
            now(),
        )
        .await
        .unwrap();
        assert_eq!(routed, Routed::NotOurs);
        assert!(store.items.lock().unwrap().is_empty() && queue.sent.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn failed_runs_carry_the_described_reason() {
        let (store, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let describer = FixedDescriber(Ok(Some("Step failure: Evaluate".into())));
        route_status_change(
            &store,
            &describer,
            &queue,
            3600,
            change("Failed", OURS),
            now(),
        )
        .await
        .unwrap();
        let sent = queue.sent.lock().unwrap();
        assert_eq!(
            sent[0].failure_reason.as_deref(),
            Some("Step failure: Evaluate")
        );
        assert_eq!(sent[0].status, "Failed");
    }

    #[tokio::test]
    async fn a_retryable_describe_failure_is_retried_a_permanent_one_is_recorded() {
        let (store, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let throttled = FixedDescriber(Err(AwsFailure {
            code: Some("ThrottlingException".into()),
            message: "slow down".into(),
            retryable: true,
        }));
        let err = route_status_change(
            &store,
            &throttled,
            &queue,
            3600,
            change("Failed", OURS),
            now(),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("DescribePipelineExecution"),
            "{err}"
        );
        assert!(store.items.lock().unwrap().is_empty());

        let denied = FixedDescriber(Err(AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "no".into(),
            retryable: false,
        }));
        route_status_change(&store, &denied, &queue, 3600, change("Failed", OURS), now())
            .await
            .unwrap();
        assert!(queue.sent.lock().unwrap()[0]
            .failure_reason
            .as_deref()
            .unwrap()
            .starts_with("failure reason unavailable: AccessDeniedException"));
    }

    #[tokio::test]
    async fn a_send_that_failed_after_the_write_is_sent_on_retry() {
        let (store, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let describer = FixedDescriber(Ok(None));
        queue.failing.store(true, Ordering::SeqCst);
        assert!(route_status_change(
            &store,
            &describer,
            &queue,
            3600,
            change("Succeeded", OURS),
            now()
        )
        .await
        .is_err());
        assert_eq!(store.items.lock().unwrap().len(), 1, "the write happened");

        queue.failing.store(false, Ordering::SeqCst);
        let routed = route_status_change(
            &store,
            &describer,
            &queue,
            3600,
            change("Succeeded", OURS),
            now(),
        )
        .await
        .unwrap();
        assert_eq!(
            routed,
            Routed::Recorded {
                session_id: "s-1".into(),
                status: PipelineStatus::Succeeded,
                sent: true
            }
        );
        assert_eq!(queue.sent.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_late_executing_never_overwrites_a_terminal_status() {
        let (store, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let describer = FixedDescriber(Ok(None));
        route_status_change(
            &store,
            &describer,
            &queue,
            3600,
            change("Stopped", OURS),
            now(),
        )
        .await
        .unwrap();
        let routed = route_status_change(
            &store,
            &describer,
            &queue,
            3600,
            change("Executing", OURS),
            now(),
        )
        .await
        .unwrap();
        assert_eq!(
            routed,
            Routed::Ignored {
                session_id: "s-1".into(),
                stored_status: "Stopped".into()
            }
        );
        let items = store.items.lock().unwrap();
        assert_eq!(
            items.values().next().unwrap().status,
            PipelineStatus::Stopped
        );
        assert_eq!(queue.sent.lock().unwrap().len(), 1);
    }
}
