//! Route a run: one EventBridge status change to the pipeline results table and, when the run
//! ended, to the completion queue.
//!
//! A terminal event is sent when it was written, and again when the same terminal status is
//! already stored, because that is how a retry after a failed send looks. So a completion is
//! never lost, and a consumer may see one twice.

use chrono::{DateTime, Utc};

use domain::item::Applied;
use domain::pipeline_event::PipelineStatusChange;
use domain::pipeline_status::{PipelineStatus, RunStatus};
use domain::run::{self, CompletionMessage, Run, RunRecord, MAX_FAILURE_REASON_BYTES};
use domain::time::{rfc3339, ttl_after};
use domain::trace::TraceContext;
use domain::util::truncate_utf8;
use ports::{AwsFailure, CompletionQueue, PipelineControl, QueueError, RunStore, StoreError};

#[derive(Debug, Clone, PartialEq)]
pub enum Routed {
    /// The description carries no session id: not a run this project started.
    NotOurs,
    Recorded {
        session_id: String,
        status: PipelineStatus,
        sent: bool,
        /// The run's stored trace (its triggering call's), for this event's log lines.
        trace: Option<TraceContext>,
        /// The completion sent, when the run ended: what its subscribers hear of.
        ended: Option<Box<CompletionMessage>>,
    },
    /// A terminal status is stored; this (late or contradictory) event changed nothing.
    Ignored {
        session_id: String,
        stored_status: RunStatus,
        trace: Option<TraceContext>,
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

pub async fn route_status_change<S, P, Q>(
    store: &S,
    pipeline: &P,
    queue: &Q,
    result_ttl_secs: u64,
    change: PipelineStatusChange,
    now: DateTime<Utc>,
) -> Result<Routed, RouteError>
where
    S: RunStore,
    P: PipelineControl,
    Q: CompletionQueue,
{
    let Some(session_id) = change.session_id.clone() else {
        return Ok(Routed::NotOurs);
    };
    // The event carries no reason; only a retryable lookup failure is worth a retry, the
    // outcome itself must not wait on a reason that cannot be had.
    let failure_reason = if change.status == PipelineStatus::Failed {
        match pipeline.describe(change.execution_arn.as_str()).await {
            Ok(described) => described.failure_reason,
            Err(failure) if failure.retryable => {
                return Err(RouteError::Describe {
                    execution_arn: change.execution_arn.into(),
                    failure,
                })
            }
            Err(failure) => Some(format!("failure reason unavailable: {failure}")),
        }
        .map(|r| truncate_utf8(r, MAX_FAILURE_REASON_BYTES))
    } else {
        None
    };
    let record = RunRecord {
        session_id: session_id.clone(),
        // The same partition trigger_training wrote: the owner tag the description carries.
        owner: change.owner.clone(),
        execution_arn: change.execution_arn.clone(),
        pipeline_arn: change.pipeline_arn.clone(),
        status: change.status,
        started_at: change.started_at.map(rfc3339),
        ended_at: change.ended_at.map(rfc3339),
        failure_reason,
        updated_at: rfc3339(now),
        ttl: ttl_after(now, result_ttl_secs),
    };
    // What was stored before this event: the trigger's trace is on it (a status change
    // never writes one).
    let (written, stored) = match store.write(&run::record_status_change(&record)).await? {
        Applied::Written { previous } => (true, previous.map(|i| Run::from_item(&i))),
        Applied::Refused(stored) => (false, stored.map(|i| Run::from_item(&i))),
    };
    let trace = stored.as_ref().and_then(|r| r.trace.clone());
    if !written {
        let stored_status = stored.map_or(RunStatus::Pending, |r| r.status);
        if !stored_status.is(change.status) {
            return Ok(Routed::Ignored {
                session_id: session_id.into(),
                stored_status,
                trace,
            });
        }
    }
    if !change.status.is_terminal() {
        return Ok(Routed::Recorded {
            session_id: session_id.into(),
            status: change.status,
            sent: false,
            trace,
            ended: None,
        });
    }
    if !written {
        let trace_id = trace.as_ref().map(TraceContext::trace_id);
        let trace_id = trace_id.as_deref();
        tracing::info!(%session_id, execution_arn = %change.execution_arn, trace_id, "terminal status already stored; sending the completion again");
    }
    let message = CompletionMessage {
        session_id: session_id.clone(),
        owner: record.owner.as_ref().map(|o| o.as_str().to_owned()),
        execution_arn: record.execution_arn,
        pipeline_arn: record.pipeline_arn,
        status: change.status,
        previous_status: change.previous_status,
        started_at: record.started_at,
        ended_at: record.ended_at,
        failure_reason: record.failure_reason,
        event_id: change.event_id,
        event_time: rfc3339(change.event_time),
        traceparent: trace.as_ref().map(TraceContext::traceparent),
    };
    queue.send(&message).await?;
    Ok(Routed::Recorded {
        session_id: session_id.into(),
        status: change.status,
        sent: true,
        trace,
        ended: Some(Box::new(message)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::pipeline_event::{parse_status_change, DETAIL_TYPE};
    use fakes::{FakePipeline, MemoryQueue, MemoryRuns};
    use serde_json::json;

    fn change(status: &str, description: Option<&str>) -> PipelineStatusChange {
        parse_status_change(&json!({
            "id": format!("ev-{status}"), "detail-type": DETAIL_TYPE, "source": "aws.sagemaker",
            "time": "2026-11-20T11:02:11Z",
            "detail": {"currentPipelineExecutionStatus": status, "previousPipelineExecutionStatus": "Executing",
                "executionStartTime": "2026-11-20T10:41:52Z", "pipelineExecutionDescription": description,
                "pipelineArn": "arn:p", "pipelineExecutionArn": "arn:p/execution/1"}
        }))
        .unwrap()
    }

    const OURS: Option<&str> = Some("session_id=s-1; triggered at 2026-11-20T10:41:51Z");

    fn now() -> DateTime<Utc> {
        domain::time::parse_rfc3339("2026-11-20T11:02:12Z").unwrap()
    }

    fn failure(code: &str, retryable: bool) -> AwsFailure {
        AwsFailure {
            code: Some(code.into()),
            message: "no".into(),
            retryable,
            ambiguous: false,
        }
    }

    async fn route(
        runs: &MemoryRuns,
        pipeline: &FakePipeline,
        queue: &MemoryQueue,
        status: &str,
        description: Option<&str>,
    ) -> Result<Routed, RouteError> {
        route_status_change(
            runs,
            pipeline,
            queue,
            3600,
            change(status, description),
            now(),
        )
        .await
    }

    #[tokio::test]
    async fn a_run_without_session_id_writes_and_sends_nothing() {
        let (runs, queue, pipeline) = (
            MemoryRuns::default(),
            MemoryQueue::default(),
            FakePipeline::default(),
        );
        let routed = route(&runs, &pipeline, &queue, "Succeeded", Some("by hand"))
            .await
            .unwrap();
        assert_eq!(routed, Routed::NotOurs);
        assert!(runs.all().is_empty() && queue.sent().is_empty());
    }

    #[tokio::test]
    async fn an_owners_run_lands_where_its_trigger_put_it_and_its_message_says_whose() {
        use crate::training::session_runs;
        use domain::caller::Principal;
        use domain::pipeline_event::execution_description;
        let (runs, queue, pipeline) = (
            MemoryRuns::default(),
            MemoryQueue::default(),
            FakePipeline::default(),
        );
        let caller = Principal::Bearer { name: "a".into() }.caller();
        let description = execution_description("s-1", &caller.owner, now());
        route(&runs, &pipeline, &queue, "Succeeded", Some(&description))
            .await
            .unwrap();
        let listed = session_runs(&runs, &caller, "s-1", now()).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].status, PipelineStatus::Succeeded.into());
        let someone_else = Principal::Local.caller();
        assert!(session_runs(&runs, &someone_else, "s-1", now())
            .await
            .unwrap()
            .is_empty());
        assert_eq!(
            queue.sent()[0].owner.as_deref(),
            Some(caller.owner.as_str())
        );
        assert_eq!(queue.sent()[0].session_id, "s-1");
        assert_eq!(
            queue.sent()[0].traceparent,
            None,
            "not triggered by the tools"
        );
    }

    #[tokio::test]
    async fn a_triggered_runs_completion_carries_its_trace() {
        use domain::caller::Principal;
        use domain::pipeline_event::execution_description;
        use ports::RunStore;
        let (runs, queue, pipeline) = (
            MemoryRuns::default(),
            MemoryQueue::default(),
            FakePipeline::default(),
        );
        let owner = Principal::Local.caller().owner;
        let trace = TraceContext::start();
        let triggered = run::record_triggered(
            &owner,
            "s-1",
            "arn:p/execution/1",
            "2026-11-20T10:41:51.000Z",
            9_999_999_999,
            "secret",
            Some(&trace),
        );
        runs.write(&triggered).await.unwrap();
        let description = execution_description("s-1", &owner, now());
        let running = route(&runs, &pipeline, &queue, "Executing", Some(&description))
            .await
            .unwrap();
        assert!(matches!(&running, Routed::Recorded { trace: Some(t), .. } if *t == trace));
        let done = route(&runs, &pipeline, &queue, "Succeeded", Some(&description))
            .await
            .unwrap();
        assert!(
            matches!(&done, Routed::Recorded { sent: true, trace: Some(t), .. } if *t == trace)
        );
        assert_eq!(queue.sent()[0].traceparent, Some(trace.traceparent()));
        // A late event the stored terminal status ignores still knows the run's trace.
        let late = route(&runs, &pipeline, &queue, "Executing", Some(&description))
            .await
            .unwrap();
        assert!(matches!(&late, Routed::Ignored { trace: Some(t), .. } if *t == trace));
    }

    #[tokio::test]
    async fn failed_runs_carry_the_described_reason() {
        let (runs, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let pipeline = FakePipeline::default();
        pipeline.set_failure_reason("arn:p/execution/1", "Step failure: Evaluate");
        route(&runs, &pipeline, &queue, "Failed", OURS)
            .await
            .unwrap();
        let sent = queue.sent();
        assert_eq!(
            sent[0].failure_reason.as_deref(),
            Some("Step failure: Evaluate")
        );
        assert_eq!(sent[0].status, PipelineStatus::Failed);
    }

    #[tokio::test]
    async fn a_retryable_describe_failure_is_retried_a_permanent_one_is_recorded() {
        let (runs, queue) = (MemoryRuns::default(), MemoryQueue::default());
        let pipeline = FakePipeline::default();
        pipeline.fail_describe(failure("ThrottlingException", true));
        let err = route(&runs, &pipeline, &queue, "Failed", OURS)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("DescribePipelineExecution"),
            "{err}"
        );
        assert!(runs.all().is_empty());

        pipeline.fail_describe(failure("AccessDeniedException", false));
        route(&runs, &pipeline, &queue, "Failed", OURS)
            .await
            .unwrap();
        assert!(queue.sent()[0]
            .failure_reason
            .as_deref()
            .unwrap()
            .starts_with("failure reason unavailable: AccessDeniedException"));
    }

    #[tokio::test]
    async fn a_send_that_failed_after_the_write_is_sent_on_retry() {
        let (runs, queue, pipeline) = (
            MemoryRuns::default(),
            MemoryQueue::default(),
            FakePipeline::default(),
        );
        queue.set_failing(true);
        assert!(route(&runs, &pipeline, &queue, "Succeeded", OURS)
            .await
            .is_err());
        assert_eq!(runs.all().len(), 1, "the write happened");

        queue.set_failing(false);
        let routed = route(&runs, &pipeline, &queue, "Succeeded", OURS)
            .await
            .unwrap();
        assert!(matches!(
            &routed,
            Routed::Recorded { session_id, status: PipelineStatus::Succeeded, sent: true, trace: None, ended: Some(m) }
                if session_id.as_str() == "s-1" && **m == queue.sent()[0]
        ));
        assert_eq!(queue.sent().len(), 1);
    }

    #[tokio::test]
    async fn a_late_executing_never_overwrites_a_terminal_status() {
        let (runs, queue, pipeline) = (
            MemoryRuns::default(),
            MemoryQueue::default(),
            FakePipeline::default(),
        );
        route(&runs, &pipeline, &queue, "Stopped", OURS)
            .await
            .unwrap();
        let routed = route(&runs, &pipeline, &queue, "Executing", OURS)
            .await
            .unwrap();
        assert_eq!(
            routed,
            Routed::Ignored {
                session_id: "s-1".into(),
                stored_status: PipelineStatus::Stopped.into(),
                trace: None,
            }
        );
        assert_eq!(runs.all()[0].status, PipelineStatus::Stopped.into());
        assert_eq!(queue.sent().len(), 1);
    }
}
