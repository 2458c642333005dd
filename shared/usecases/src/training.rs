//! Training runs: trigger one (idempotently, by the caller's key), follow one, and list a
//! session's runs.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use crate::quota::{self, CountGuard, CountedError};
use domain::allow_lists::{check_parameter, AllowLists, ParameterRefusal};
use domain::caller::{Caller, Owner};
use domain::ids::{ExecutionArn, SessionId};
use domain::item::Applied;
use domain::pipeline_definition;
use domain::pipeline_event::{execution_description, owner_from_description};
use domain::pipeline_status::PipelineStatus;
use domain::progress::{RunEvent, RunProgress, StepSeen};
use domain::quota::QuotaLimits;
use domain::run::{self, client_request_token, newest_runs, session_key, Run};
use domain::time::{rfc3339, ttl_after};
use domain::trace::TraceContext;
use ports::{
    AwsFailure, ExecutionDescription, JobStore, PipelineControl, ProgressSink, RunStore,
    StartRequest, StepStatus, StoreError,
};

/// A triggered run's `pending` item outlives a day-long run before its TTL.
pub const PENDING_RUN_GRACE_SECS: u64 = 86_400;

#[derive(Debug, Clone, PartialEq)]
pub struct TriggerRequest {
    /// Whose run it is: its description, partition and request token carry the tag.
    pub owner: Owner,
    pub pipeline_name: String,
    pub session_id: SessionId,
    pub parameters: Vec<RunParameter>,
    /// The same key returns the same run (it derives the ClientRequestToken).
    pub idempotency_key: Option<String>,
    pub max_parallel_steps: Option<u32>,
    pub result_ttl_secs: u64,
}

/// One pipeline parameter of a run, and the tool argument that set it (a refusal names it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunParameter {
    pub argument: String,
    /// The pipeline's own name for it.
    pub name: String,
    pub value: String,
}

impl RunParameter {
    pub fn new(argument: &str, name: &str, value: impl Into<String>) -> Self {
        Self {
            argument: argument.to_owned(),
            name: name.to_owned(),
            value: value.into(),
        }
    }
}

/// A trigger whose every parameter the deployment's allow-lists admit: the only kind a run
/// starts from, so no tool can start one around them.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted(TriggerRequest);

impl Admitted {
    pub fn request(&self) -> &TriggerRequest {
        &self.0
    }
}

/// A parameter the allow-lists refuse: nothing was started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{argument}` (pipeline parameter {parameter}) is refused: {refusal:?}")]
pub struct Refused {
    /// The tool argument that set it.
    pub argument: String,
    pub parameter: String,
    /// The value as sent: quote it back at most 200 characters.
    pub value: String,
    pub refusal: ParameterRefusal,
    /// What the deployment allows instead: the prefixes, or the instance types.
    pub allowed: Vec<String>,
}

/// `request`, when every value it would pass to SageMaker is one `allowed` admits: checked
/// here, before anything is counted or started, whatever tool built the request.
pub fn admit(request: TriggerRequest, allowed: AllowLists<'_>) -> Result<Admitted, Refused> {
    for p in &request.parameters {
        if let Err(refusal) = check_parameter(&p.name, &p.argument, &p.value, allowed) {
            let allowed = match refusal {
                ParameterRefusal::Input(_) => allowed
                    .input_prefixes
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                ParameterRefusal::InstanceType => allowed.instance_types.to_vec(),
            };
            return Err(Refused {
                argument: p.argument.clone(),
                parameter: p.name.clone(),
                value: p.value.clone(),
                refusal,
                allowed,
            });
        }
    }
    Ok(Admitted(request))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triggered {
    pub execution_arn: ExecutionArn,
    /// The run was already recorded: a retried trigger (or pipeline-router was first).
    pub already_recorded: bool,
    /// The run started, but its `pending` item could not be written (the store's error).
    pub recording_failed: Option<String>,
    /// The stored secret of the run's task id, when it could be recorded.
    pub task_secret: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("SageMaker StartPipelineExecution failed: {0}")]
pub struct TriggerError(pub AwsFailure);

/// trigger_training counted against the owner's runs per hour (`limits`): a retried key's run
/// (nothing new started) or a start SageMaker refused gives its count back.
pub async fn trigger_counted<P, R, S>(
    pipeline: &P,
    runs: &R,
    jobs: &S,
    limits: &QuotaLimits,
    admitted: &Admitted,
    trace: Option<&TraceContext>,
    now: DateTime<Utc>,
) -> Result<Triggered, CountedError<TriggerError>>
where
    P: PipelineControl,
    R: RunStore,
    S: JobStore,
{
    let owner = &admitted.request().owner;
    let count = CountGuard::new(jobs, quota::take_run(jobs, limits, owner, now).await?);
    let triggered = trigger_training(pipeline, runs, admitted, trace, now).await;
    count
        .settle(matches!(&triggered, Ok(t) if !t.already_recorded))
        .await;
    triggered.map_err(CountedError::Work)
}

/// Starts the run and records it `pending`, with `trace` (the triggering call's span) on its
/// item.
pub async fn trigger_training<P: PipelineControl, R: RunStore>(
    pipeline: &P,
    runs: &R,
    admitted: &Admitted,
    trace: Option<&TraceContext>,
    now: DateTime<Utc>,
) -> Result<Triggered, TriggerError> {
    let request = admitted.request();
    let token = match &request.idempotency_key {
        Some(key) => client_request_token(
            &request.owner,
            &request.pipeline_name,
            request.session_id.as_str(),
            key,
        ),
        None => uuid::Uuid::new_v4().simple().to_string(),
    };
    let execution_arn = pipeline
        .start(&StartRequest {
            pipeline_name: request.pipeline_name.clone(),
            description: execution_description(request.session_id.as_str(), &request.owner, now),
            parameters: request
                .parameters
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect(),
            client_request_token: token,
            max_parallel_steps: request.max_parallel_steps,
        })
        .await
        .map_err(TriggerError)?;
    let ttl = ttl_after(now, request.result_ttl_secs + PENDING_RUN_GRACE_SECS);
    let secret = uuid::Uuid::new_v4().simple().to_string();
    let write = run::record_triggered(
        &request.owner,
        request.session_id.as_str(),
        &execution_arn,
        &rfc3339(now),
        ttl,
        &secret,
        trace,
    );
    // The run has started: a failed bookkeeping write must not make the agent start another.
    let (already_recorded, recording_failed, task_secret) = match runs.write(&write).await {
        Ok(Applied::Written { .. }) => (false, None, Some(secret)),
        Ok(Applied::Refused(stored)) => {
            let stored = stored.as_ref().and_then(|i| Run::from_item(i).task_secret);
            let task_secret = match stored {
                Some(stored) => Some(stored),
                // pipeline-router recorded the run first, without a secret: attach ours.
                None => {
                    let attach = run::attach_task_secret(
                        &request.owner,
                        request.session_id.as_str(),
                        &execution_arn,
                        &secret,
                        trace,
                    );
                    match runs.write(&attach).await {
                        Ok(Applied::Written { previous }) => previous
                            .as_ref()
                            .and_then(|i| Run::from_item(i).task_secret)
                            .or(Some(secret)),
                        _ => None,
                    }
                }
            };
            (true, None, task_secret)
        }
        Err(e) => {
            tracing::error!(%execution_arn, error = %e, "run started but its pending item was not written");
            (false, Some(e.to_string()), None)
        }
    };
    Ok(Triggered {
        execution_arn: execution_arn.into(),
        already_recorded,
        recording_failed,
        task_secret,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// SageMaker knows no such run, or it is another caller's: one answer for both.
    #[error(
        "no training run {} (unknown, another caller's, or not this deployment's)",
        domain::util::quote(execution_arn)
    )]
    NotFound { execution_arn: String },
    #[error("SageMaker DescribePipelineExecution failed: {0}")]
    Describe(AwsFailure),
    #[error("SageMaker ListPipelineExecutionSteps failed: {0}")]
    Steps(AwsFailure),
}

/// DescribePipelineExecution, with a run SageMaker does not know, or one the tools' role may
/// not read (AWS's refusal names the role), as None: an unknown run to the caller.
pub async fn describe_known<P: PipelineControl>(
    pipeline: &P,
    execution_arn: &str,
) -> Result<Option<ExecutionDescription>, AwsFailure> {
    match pipeline.describe(execution_arn).await {
        Ok(described) => Ok(Some(described)),
        Err(failure)
            if matches!(
                failure.code.as_deref(),
                Some("ResourceNotFound" | "AccessDeniedException" | "AccessDenied")
            ) =>
        {
            tracing::info!(%failure, "run answered as unknown");
            Ok(None)
        }
        Err(failure) => Err(failure),
    }
}

/// A run's live status and steps, when the run is the caller's (its description's owner tag),
/// or the caller is among `approvers` and the run was started through the tools.
pub async fn training_status<P: PipelineControl>(
    pipeline: &P,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    execution_arn: &str,
) -> Result<(ExecutionDescription, Vec<StepStatus>), StatusError> {
    let not_found = || StatusError::NotFound {
        execution_arn: execution_arn.to_owned(),
    };
    let described = describe_known(pipeline, execution_arn)
        .await
        .map_err(StatusError::Describe)?
        .ok_or_else(not_found)?;
    let owner = described
        .description
        .as_deref()
        .and_then(owner_from_description);
    // The deployment's approvers read the runs they answer; nobody else reads another's.
    let approver = owner.is_some() && approvers.is_some_and(|a| a.contains(&caller.person));
    if !(caller.owns(owner.as_ref()) || approver) {
        return Err(not_found());
    }
    let steps = pipeline
        .steps(execution_arn)
        .await
        .map_err(StatusError::Steps)?;
    Ok((described, steps))
}

/// Delays between reads while following a run: its steps take minutes, and each read is two
/// SageMaker calls, so after a quick start every 5 s.
pub fn run_poll_delay(attempt: u32) -> Duration {
    Duration::from_millis(match attempt {
        0 => 500,
        1 => 1000,
        2 => 2000,
        _ => 5000,
    })
}

/// [`training_status`], read again until the run ends or `wait` has passed, reporting to
/// `progress` each step that starts or ends (of as many steps as the run's definition has, when
/// it can be read). A run already over at the first read, or no wait, reports nothing.
pub async fn follow_run<P, S>(
    pipeline: &P,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    execution_arn: &str,
    wait: Duration,
    progress: &mut S,
) -> Result<(ExecutionDescription, Vec<StepStatus>), StatusError>
where
    P: PipelineControl,
    S: ProgressSink<RunEvent>,
{
    let deadline = Instant::now() + wait;
    let mut tracker: Option<RunProgress> = None;
    let mut attempt = 0;
    loop {
        let (described, steps) =
            training_status(pipeline, caller, approvers, execution_arn).await?;
        // An unknown status word is not waited on: nothing says it will change.
        let running = described.status.is(PipelineStatus::Executing)
            || described.status.is(PipelineStatus::Stopping);
        if tracker.is_none() && running && !wait.is_zero() {
            tracker = Some(RunProgress::new(step_count(pipeline, execution_arn).await));
        }
        if let Some(tracker) = tracker.as_mut() {
            let seen: Vec<StepSeen<'_>> = steps
                .iter()
                .map(|s| StepSeen {
                    name: &s.name,
                    status: &s.status,
                })
                .collect();
            if let Some(update) = tracker.observe(&seen) {
                progress.send(update).await;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if !running || left.is_zero() {
            return Ok((described, steps));
        }
        tokio::time::sleep(run_poll_delay(attempt).min(left)).await;
        attempt += 1;
    }
}

/// How many steps the run goes through, by its definition; None when that cannot be read (the
/// progress is then told without a total).
async fn step_count<P: PipelineControl>(pipeline: &P, execution_arn: &str) -> Option<u32> {
    match pipeline.definition(execution_arn).await {
        Ok(definition) => pipeline_definition::step_count(&definition),
        Err(failure) => {
            tracing::warn!(%failure, "the run's definition could not be read: progress without a step count");
            None
        }
    }
}

/// The stored run's key (session key, execution ARN) from its description: None for a run the
/// tools did not start.
pub fn stored_run_key(description: &str, execution_arn: &str) -> Option<(String, String)> {
    let session_id = domain::pipeline_event::session_id_from_description(description)?;
    let owner = owner_from_description(description);
    Some((
        session_key(owner.as_ref(), &session_id),
        execution_arn.to_owned(),
    ))
}

/// The run stored under `key` (see [`stored_run_key`]), if any: one key of a batch read.
pub async fn stored_run<R: RunStore>(
    runs: &R,
    key: (String, String),
) -> Result<Option<Run>, StoreError> {
    Ok(runs.get_many(&[key]).await?.into_iter().next().flatten())
}

/// The run as stored now (after a conditional write lost a race), or None if it is gone.
pub async fn reread<R: RunStore>(runs: &R, run: &Run) -> Result<Option<Run>, StoreError> {
    let key = (
        session_key(run.owner.as_ref(), run.session_id.as_str()),
        run.execution_arn.to_string(),
    );
    stored_run(runs, key).await
}

/// The caller's unexpired runs of a session, newest first: the caller's own partition, and
/// for a caller that sees unowned items, the runs stored before owners existed.
pub async fn session_runs<R: RunStore>(
    runs: &R,
    caller: &Caller,
    session_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Run>, StoreError> {
    let mut found = runs
        .query_session(&session_key(Some(&caller.owner), session_id))
        .await?;
    if caller.reads_unowned {
        found.extend(runs.query_session(session_id).await?);
    }
    found.retain(|r| caller.owns(r.owner.as_ref()));
    Ok(newest_runs(found, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::time::parse_rfc3339;
    use fakes::{FakePipeline, MemoryRuns};

    fn local() -> Caller {
        domain::caller::Principal::Local.caller()
    }

    fn unchecked(parameters: Vec<RunParameter>) -> TriggerRequest {
        TriggerRequest {
            owner: local().owner,
            pipeline_name: "p".into(),
            session_id: SessionId::parse("s").unwrap(),
            parameters,
            idempotency_key: None,
            max_parallel_steps: None,
            result_ttl_secs: 3600,
        }
    }

    fn admit_under_b(request: TriggerRequest) -> Result<Admitted, Refused> {
        let prefixes = [domain::training_input::S3Prefix::parse("s3://b/").unwrap()];
        let types = ["ml.m5.xlarge".to_owned()];
        let allowed = AllowLists {
            input_prefixes: &prefixes,
            instance_types: &types,
        };
        admit(request, allowed)
    }

    fn request(key: Option<&str>) -> Admitted {
        let parameters = vec![RunParameter::new(
            "input_data_uri",
            "InputDataUri",
            "s3://b/t",
        )];
        admit_under_b(TriggerRequest {
            idempotency_key: key.map(Into::into),
            ..unchecked(parameters)
        })
        .unwrap()
    }

    #[test]
    fn a_request_is_admitted_only_when_every_parameter_is_allowed() {
        let fine = vec![
            RunParameter::new("data", "InputDataUri", "https://b.s3.amazonaws.com/t/x"),
            RunParameter::new("epochs", "MaxEpochs", "3"),
            RunParameter::new("compute", "TrainingInstanceType", "ml.m5.xlarge"),
        ];
        let admitted = admit_under_b(unchecked(fine.clone())).unwrap();
        assert_eq!(admitted.request().parameters, fine);
        let refused = admit_under_b(unchecked(vec![
            RunParameter::new("epochs", "MaxEpochs", "3"),
            RunParameter::new("data", "InputDataUri", "s3a://other/x"),
            RunParameter::new("compute", "TrainingInstanceType", "ml.p5.48xlarge"),
        ]))
        .unwrap_err();
        assert_eq!(
            refused,
            Refused {
                argument: "data".into(),
                parameter: "InputDataUri".into(),
                value: "s3a://other/x".into(),
                refusal: ParameterRefusal::Input(domain::training_input::InputRefusal::Outside),
                allowed: vec!["s3://b/".into()],
            },
            "the first refused, by the argument that set it"
        );
        let refused = admit_under_b(unchecked(vec![RunParameter::new(
            "compute",
            "TrainingInstanceType",
            "ml.p5.48xlarge",
        )]))
        .unwrap_err();
        assert_eq!(refused.refusal, ParameterRefusal::InstanceType);
        assert_eq!(refused.allowed, ["ml.m5.xlarge"]);
    }

    #[tokio::test]
    async fn the_same_key_returns_the_same_run_and_records_it_once() {
        let (pipeline, runs) = (FakePipeline::default(), MemoryRuns::default());
        let t = parse_rfc3339("2026-11-20T10:00:00Z").unwrap();
        let trace = TraceContext::start();
        let first = trigger_training(&pipeline, &runs, &request(Some("k")), Some(&trace), t)
            .await
            .unwrap();
        let again = trigger_training(
            &pipeline,
            &runs,
            &request(Some("k")),
            Some(&TraceContext::start()),
            t + chrono::Duration::seconds(9),
        )
        .await
        .unwrap();
        assert_eq!(first.execution_arn, again.execution_arn);
        assert!(!first.already_recorded && again.already_recorded);
        assert_eq!(pipeline.started().len(), 1);
        let stored = session_runs(&runs, &local(), "s", t).await.unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(
            stored[0].started_at.as_deref(),
            Some("2026-11-20T10:00:00.000Z")
        );
        assert_eq!(
            stored[0].trace,
            Some(trace),
            "the first call's, as recorded"
        );
        let other = trigger_training(&pipeline, &runs, &request(None), None, t)
            .await
            .unwrap();
        assert_ne!(other.execution_arn, first.execution_arn);
        assert_eq!(pipeline.started()[0].max_parallel_steps, None);
    }

    #[tokio::test]
    async fn pending_runs_are_listed_newest_first() {
        let (pipeline, runs) = (FakePipeline::default(), MemoryRuns::default());
        let t = parse_rfc3339("2026-11-20T10:00:00Z").unwrap();
        let older = trigger_training(&pipeline, &runs, &request(None), None, t)
            .await
            .unwrap();
        let newer = trigger_training(
            &pipeline,
            &runs,
            &request(None),
            None,
            t + chrono::Duration::seconds(1),
        )
        .await
        .unwrap();
        let listed = session_runs(&runs, &local(), "s", t).await.unwrap();
        let arns: Vec<_> = listed.iter().map(|r| r.execution_arn.clone()).collect();
        assert_eq!(arns, [newer.execution_arn, older.execution_arn]);
        assert!(listed
            .iter()
            .all(|r| r.status == domain::pipeline_status::RunStatus::Pending));
    }
}
