//! A job as an MCP task (the `io.modelcontextprotocol/tasks` extension): read and cancelled by
//! its task id, from the results table, so any instance answers for any task. Reading goes
//! through the status check (with its reconciliation), cancelling through one conditional write.

use chrono::{DateTime, Utc};

use crate::approval::{self, Gate, GateError};
use crate::check::{check_job, CheckError, JobNote, JobReads, JobReport};
use crate::training::{describe_known, session_runs, stored_run, stored_run_key};
use domain::approval::PENDING;
use domain::caller::{Caller, Owner};
use domain::ids::{ExecutionArn, InferenceId, SessionId};
use domain::item::Applied;
use domain::job::{self, secrets_match, task_secret_matches, Job, JobStatus, Stage};
use domain::pipeline_status::{ExecutionStatus, PipelineStatus};
use domain::question::{standing, AnswerVia, QuestionState, Standing};
use domain::quota::is_quota_key;
use domain::run::Run;
use domain::shown::{shown, shown_schema};
use domain::task_id::{JobTask, RunTask};
use ports::{
    AwsFailure, CompletionEvents, ExecutionDescription, JobStore, LineageGraph, NoProgress,
    ObjectStore, PipelineControl, RunStore, StepStatus, StoreError,
};

/// When a task began and last changed, and how long its record lives on.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskTimes {
    pub created_at: String,
    pub last_updated_at: String,
    /// Until the record expires.
    pub ttl_ms: Option<u64>,
}

impl TaskTimes {
    /// From a record's start, its last change (the start when none) and its `ttl` (epoch
    /// seconds).
    fn new(
        created_at: Option<&String>,
        updated_at: Option<&String>,
        ttl: Option<i64>,
        now: DateTime<Utc>,
    ) -> Self {
        let created_at = created_at.cloned().unwrap_or_default();
        Self {
            last_updated_at: updated_at.cloned().unwrap_or_else(|| created_at.clone()),
            created_at,
            ttl_ms: ttl
                .map(|ttl| u64::try_from((ttl - now.timestamp()).max(0) * 1000).unwrap_or(0)),
        }
    }
}

/// A task as the extension shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub inference_id: InferenceId,
    pub times: TaskTimes,
    pub state: TaskState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// The job is pending: how far its submission got, and what a status check would add.
    Working {
        stage: Option<Stage>,
        note: Option<JobNote>,
    },
    /// Completed or failed: the report `check_job_status` gives.
    Done(Box<JobReport>),
    /// With the reason stored.
    Cancelled { reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// Unknown, expired, malformed, or the secret does not match: the same answer for each,
    /// so a wrong guess learns nothing.
    #[error("no such task: it is unknown or has expired")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("SageMaker {operation} failed: {failure}")]
    Pipeline {
        operation: &'static str,
        failure: AwsFailure,
    },
    /// The run's record changed under every attempt to write it.
    #[error("the run's record changed under every attempt to write it; try again")]
    Contended,
}

/// A job's task, unless its id names a quota counter's item (which shares the table): that
/// is no task.
fn job_task(task: &JobTask) -> Result<(&InferenceId, &str), TaskError> {
    match is_quota_key(task.inference_id.as_str()) {
        false => Ok((&task.inference_id, &task.secret)),
        true => Err(TaskError::NotFound),
    }
}

async fn authorized<S: JobStore>(
    store: &S,
    caller: &Caller,
    task: &JobTask,
    now: DateTime<Utc>,
) -> Result<Job, TaskError> {
    let (inference_id, secret) = job_task(task)?;
    let job = store
        .get(inference_id, now)
        .await?
        .filter(|job| caller.owns(job.owner.as_ref()))
        .ok_or(TaskError::NotFound)?;
    if task_secret_matches(&job, secret) {
        Ok(job)
    } else {
        Err(TaskError::NotFound)
    }
}

/// `tasks/get`: the job's state, after the same reconciliation a status check makes. One
/// read: the status check's own, whose job then proves the secret. (A wrong secret may so
/// cause a reconciliation probe, which check_job_status makes for the inference_id alone.)
pub async fn get_task<S: JobStore, O: ObjectStore, E: CompletionEvents>(
    reads: &JobReads<'_, S, O, E>,
    caller: &Caller,
    task: &JobTask,
    now: DateTime<Utc>,
) -> Result<TaskView, TaskError> {
    let (inference_id, secret) = job_task(task)?;
    let wait = std::time::Duration::ZERO;
    let report = check_job(reads, caller, inference_id, wait, || now, &mut NoProgress)
        .await
        .map_err(|e| match e {
            CheckError::NotFound { .. } => TaskError::NotFound,
            CheckError::Store(e) => TaskError::Store(e),
        })?;
    if !task_secret_matches(&report.job, secret) {
        return Err(TaskError::NotFound);
    }
    Ok(view(report, now))
}

/// `tasks/cancel`: a pending job becomes `cancelled`; a finished one stays as it is. True when
/// this call cancelled it.
pub async fn cancel_task<S: JobStore>(
    store: &S,
    caller: &Caller,
    result_ttl_secs: u64,
    task: &JobTask,
    now: DateTime<Utc>,
) -> Result<bool, TaskError> {
    let job = authorized(store, caller, task, now).await?;
    if job.status != JobStatus::Pending {
        return Ok(false);
    }
    let write = job::cancel(&job.inference_id, result_ttl_secs, now);
    // Refused means it finished (or was cancelled) meanwhile: nothing left to cancel.
    let cancelled = matches!(store.write(&write).await?, Applied::Written { .. });
    if cancelled {
        tracing::info!("job cancelled");
    }
    Ok(cancelled)
}

fn view(report: JobReport, now: DateTime<Utc>) -> TaskView {
    let job = &report.job;
    let inference_id = job.inference_id.clone();
    let updated_at = job.completed_at.as_ref().or(job.reconciled_at.as_ref());
    let times = TaskTimes::new(job.submitted_at.as_ref(), updated_at, job.ttl, now);
    let state = match job.status {
        JobStatus::Pending => TaskState::Working {
            stage: job.stage,
            note: report.note.clone(),
        },
        JobStatus::Cancelled => TaskState::Cancelled {
            reason: job
                .failure_reason
                .clone()
                .unwrap_or_else(|| job::CANCELLED_REASON.to_owned()),
        },
        JobStatus::Completed | JobStatus::Failed => TaskState::Done(Box::new(report)),
    };
    TaskView {
        inference_id,
        times,
        state,
    }
}

// ------------------------------------------------------------------ runs

/// A training run as a task: its live state from SageMaker.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTaskView {
    pub session_id: SessionId,
    pub execution_arn: ExecutionArn,
    pub times: TaskTimes,
    pub state: RunTaskState,
    /// Where the caller stands to the run's questions: the owner where approvers answer is
    /// told so by the task.
    pub standing: Standing,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunTaskState {
    /// Executing (with the steps started so far, the last one last) or Stopping. `unsent`: why
    /// answers to its questions were not taken by SageMaker, for the task to say.
    Working {
        status: ExecutionStatus,
        steps: Vec<StepStatus>,
        unsent: Vec<String>,
    },
    /// Executing, and a CallbackStep asks a person, or Succeeded with its model waiting for
    /// approval (`APPROVAL_GATE`): each open question by its key.
    InputRequired {
        status: ExecutionStatus,
        steps: Vec<StepStatus>,
        questions: Vec<OpenQuestion>,
    },
    /// Succeeded, Failed or CompletedWithFailures: what `check_training_status` reports, and
    /// behind the approval gate, its model's approval status.
    Done {
        described: ExecutionDescription,
        steps: Vec<StepStatus>,
        model_approval: Option<String>,
    },
    /// Stopped (by `tasks/cancel`, or by anyone else).
    Cancelled,
}

/// A question waiting for its answer, as a task shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenQuestion {
    pub key: String,
    pub prompt: String,
    /// The elicitation's `requestedSchema`.
    pub schema: serde_json::Value,
}

/// The open questions of a run, in key order, as a person may be shown them: each is made safe
/// when recorded, and again here, so a question an earlier version recorded is safe too.
pub fn open_questions(run: &Run) -> Vec<OpenQuestion> {
    run.questions
        .open()
        .map(|(key, q)| OpenQuestion {
            key: key.clone(),
            prompt: shown(&q.prompt).into_owned(),
            schema: shown_schema(&q.schema),
        })
        .collect()
}

/// An answer a run's question was given, as its record keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenAnswer {
    pub key: String,
    /// accept, decline or cancel.
    pub action: String,
    /// The answerer's owner tag.
    pub by: String,
    pub at: String,
    /// `elicitation` or `tool`; None for an answer recorded before it was kept.
    pub via: Option<&'static str>,
    /// What was asked ([`domain::question::StoredQuestion::digest`]), as the answer recorded it.
    pub question_digest: Option<String>,
    /// The model package a model's approval decided; None for a CallbackStep's question.
    pub model_package_arn: Option<String>,
}

/// The answers a run's questions were given, in key order.
pub fn given_answers(run: &Run) -> Vec<GivenAnswer> {
    run.questions
        .by_key
        .iter()
        .filter_map(|(key, q)| match &q.state {
            QuestionState::Answered {
                action,
                by,
                at,
                via,
                question_digest,
            } => Some(GivenAnswer {
                key: key.clone(),
                action: action.clone(),
                by: by.clone(),
                at: at.clone(),
                via: via.map(AnswerVia::as_str),
                question_digest: question_digest.clone(),
                model_package_arn: q.model_package_arn.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// What a run waits on people for, and what they answered, as a status check reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Waiting {
    pub questions: Vec<OpenQuestion>,
    /// Behind the approval gate: where the registered model's approval stands.
    pub model_approval: Option<String>,
    /// The answers given so far.
    pub answers: Vec<GivenAnswer>,
    /// The run's task while it asks (a run started as a task): where a client with tasks
    /// answers through its form.
    pub task_id: Option<String>,
}

/// The open questions of the run `execution_arn`, found through its description (the session
/// and owner trigger_training set), for a status check of a run that is executing, or (with
/// the approval gate: the registry its packages are read from) one that succeeded; and, whatever
/// its status, the answers its record keeps (one read of it).
pub async fn waiting_on<R: RunStore, L: LineageGraph>(
    runs: &R,
    approval_gate: Option<&L>,
    described: &ExecutionDescription,
    steps: &[StepStatus],
    execution_arn: &str,
    now: DateTime<Utc>,
) -> Result<Waiting, GateError> {
    let gated = approval_gate.filter(|_| described.status.is(PipelineStatus::Succeeded));
    let asking = gated.is_some() || described.status.is(PipelineStatus::Executing);
    let description = described.description.as_deref();
    let Some(key) = description.and_then(|d| stored_run_key(d, execution_arn)) else {
        return Ok(Waiting::default());
    };
    let Some(mut run) = stored_run(runs, key).await? else {
        return Ok(Waiting::default());
    };
    let model_approval = match gated {
        Some(registry) => match approval::gate(runs, registry, &mut run, steps, now).await? {
            Gate::Asking => Some(PENDING.to_owned()),
            Gate::Passed(status) => status,
        },
        None => None,
    };
    // A run that ended asks nothing more; what it was answered stays on its record.
    let questions = if asking {
        open_questions(&run)
    } else {
        Vec::new()
    };
    let task_id = (run.task_secret.as_deref())
        .filter(|_| !questions.is_empty())
        .map(|secret| domain::run::task_id(run.session_id.as_str(), execution_arn, secret));
    Ok(Waiting {
        questions,
        model_approval,
        answers: given_answers(&run),
        task_id,
    })
}

/// Why answers to a run's questions were not taken, oldest key first.
pub fn unsent_answers(run: &Run) -> Vec<String> {
    run.questions
        .by_key
        .values()
        .filter_map(|q| match &q.state {
            QuestionState::SendFailed { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// The caller's run a task id names, when its secret matches: looked for among the caller's
/// runs of the session, as check_training_result lists them.
pub(crate) async fn authorized_run<R: RunStore>(
    runs: &R,
    caller: &Caller,
    task: &RunTask,
    now: DateTime<Utc>,
) -> Result<Run, TaskError> {
    let found = session_runs(runs, caller, task.session_id.as_str(), now)
        .await?
        .into_iter()
        .find(|r| r.execution_arn == task.execution_arn)
        .ok_or(TaskError::NotFound)?;
    if secrets_match(found.task_secret.as_deref(), &task.secret) {
        Ok(found)
    } else {
        Err(TaskError::NotFound)
    }
}

/// The run a task id names, for whoever may answer its questions (see [`standing`]) as well as
/// its owner, with where the caller stands to them. An approver holds the id of a run it does
/// not own: the run's record is found through its description, which names the owner. Anyone
/// else finds nothing.
pub(crate) async fn answerable_run<R: RunStore, P: PipelineControl>(
    runs: &R,
    pipeline: &P,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    task: &RunTask,
    now: DateTime<Utc>,
) -> Result<(Run, Standing), TaskError> {
    match authorized_run(runs, caller, task, now).await {
        Ok(run) => {
            let standing = standing(approvers, caller, run.owner.as_ref());
            return Ok((run, standing));
        }
        Err(TaskError::NotFound) if approvers.is_some_and(|a| a.contains(&caller.person)) => {}
        Err(e) => return Err(e),
    }
    let execution_arn = task.execution_arn.as_str();
    let described = describe_known(pipeline, execution_arn)
        .await
        .map_err(pipeline_error("DescribePipelineExecution"))?
        .ok_or(TaskError::NotFound)?;
    let description = described.description.unwrap_or_default();
    let key = stored_run_key(&description, execution_arn).ok_or(TaskError::NotFound)?;
    let run = stored_run(runs, key)
        .await?
        .filter(|run| run.session_id.as_str() == task.session_id.as_str())
        .filter(|run| !run.is_expired(now))
        .filter(|run| secrets_match(run.task_secret.as_deref(), &task.secret))
        .ok_or(TaskError::NotFound)?;
    let standing = standing(approvers, caller, run.owner.as_ref());
    Ok((run, standing))
}

fn pipeline_error(operation: &'static str) -> impl Fn(AwsFailure) -> TaskError {
    move |failure| TaskError::Pipeline { operation, failure }
}

/// `tasks/get` for a run: its live status and steps from SageMaker. With the approval gate
/// (`approval_gate`: the registry its packages are read from), a run that succeeded is done once
/// its registered model no longer waits for approval; until then it asks for it.
pub async fn get_run_task<R: RunStore, P: PipelineControl, L: LineageGraph>(
    runs: &R,
    pipeline: &P,
    approval_gate: Option<&L>,
    caller: &Caller,
    approvers: Option<&[Owner]>,
    task: &RunTask,
    now: DateTime<Utc>,
) -> Result<RunTaskView, TaskError> {
    let (mut found, standing) =
        answerable_run(runs, pipeline, caller, approvers, task, now).await?;
    let described = pipeline
        .describe(found.execution_arn.as_str())
        .await
        .map_err(pipeline_error("DescribePipelineExecution"))?;
    let steps = pipeline
        .steps(found.execution_arn.as_str())
        .await
        .map_err(pipeline_error("ListPipelineExecutionSteps"))?;
    use PipelineStatus::*;
    let state = match &described.status {
        ExecutionStatus::Known(Succeeded) if approval_gate.is_some() => {
            let registry = approval_gate.expect("the gate is on");
            match approval::gate(runs, registry, &mut found, &steps, now).await {
                Ok(Gate::Asking) => RunTaskState::InputRequired {
                    status: described.status,
                    steps,
                    questions: open_questions(&found),
                },
                Ok(Gate::Passed(model_approval)) => RunTaskState::Done {
                    described,
                    steps,
                    model_approval,
                },
                Err(GateError::Describe(failure)) => {
                    return Err(pipeline_error("DescribeModelPackage")(failure))
                }
                Err(GateError::Store(e)) => return Err(e.into()),
                Err(GateError::Contended) => return Err(TaskError::Contended),
            }
        }
        ExecutionStatus::Known(Succeeded | Failed | CompletedWithFailures) => RunTaskState::Done {
            described,
            steps,
            model_approval: None,
        },
        ExecutionStatus::Known(Stopped) => RunTaskState::Cancelled,
        ExecutionStatus::Known(Executing) if found.questions.open().next().is_some() => {
            RunTaskState::InputRequired {
                status: described.status,
                steps,
                questions: open_questions(&found),
            }
        }
        ExecutionStatus::Known(Stopping | Executing) | ExecutionStatus::Unknown(_) => {
            RunTaskState::Working {
                status: described.status,
                steps,
                unsent: unsent_answers(&found),
            }
        }
    };
    let times = TaskTimes::new(
        found.started_at.as_ref(),
        found.updated_at.as_ref(),
        found.ttl,
        now,
    );
    Ok(RunTaskView {
        times,
        session_id: found.session_id,
        execution_arn: found.execution_arn,
        state,
        standing,
    })
}

/// `tasks/cancel` for a run: StopPipelineExecution while it runs; a finished run stays as it is.
pub async fn cancel_run_task<R: RunStore, P: PipelineControl>(
    runs: &R,
    pipeline: &P,
    caller: &Caller,
    task: &RunTask,
    now: DateTime<Utc>,
) -> Result<(), TaskError> {
    let found = authorized_run(runs, caller, task, now).await?;
    let described = pipeline
        .describe(found.execution_arn.as_str())
        .await
        .map_err(pipeline_error("DescribePipelineExecution"))?;
    if described.status.is(PipelineStatus::Executing) {
        pipeline
            .stop(found.execution_arn.as_str())
            .await
            .map_err(pipeline_error("StopPipelineExecution"))?;
        tracing::info!("run stop requested");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::task_id::TaskId;

    // The use cases as the door calls them: the id parsed first, one that is no task of the
    // kind asked answered NotFound, as the door answers it.
    fn job_task_of(id: &str) -> Result<JobTask, TaskError> {
        match TaskId::parse(id) {
            Ok(TaskId::Job(task)) => Ok(task),
            _ => Err(TaskError::NotFound),
        }
    }

    fn run_task_of(id: &str) -> Result<RunTask, TaskError> {
        match TaskId::parse(id) {
            Ok(TaskId::Run(task)) => Ok(task),
            _ => Err(TaskError::NotFound),
        }
    }

    async fn get_task_by_id<S: JobStore, O: ObjectStore, E: CompletionEvents>(
        reads: &JobReads<'_, S, O, E>,
        caller: &Caller,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<TaskView, TaskError> {
        get_task(reads, caller, &job_task_of(id)?, now).await
    }

    async fn cancel_task_by_id<S: JobStore>(
        store: &S,
        caller: &Caller,
        ttl: u64,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, TaskError> {
        cancel_task(store, caller, ttl, &job_task_of(id)?, now).await
    }

    async fn get_run_task_by_id<R: RunStore, P: PipelineControl, L: LineageGraph>(
        runs: &R,
        pipeline: &P,
        gate: Option<&L>,
        caller: &Caller,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<RunTaskView, TaskError> {
        get_run_task(runs, pipeline, gate, caller, None, &run_task_of(id)?, now).await
    }

    async fn cancel_run_task_by_id<R: RunStore, P: PipelineControl>(
        runs: &R,
        pipeline: &P,
        caller: &Caller,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<(), TaskError> {
        cancel_run_task(runs, pipeline, caller, &run_task_of(id)?, now).await
    }
    use crate::JobSettings;
    use domain::job::{task_id, JobPolicy, Submission};
    use domain::run;
    use fakes::{MemoryEvents, MemoryJobs, MemoryObjects};

    /// A run's task without the approval gate.
    const NO_GATE: Option<&fakes::MemoryLineage> = None;

    fn local() -> Caller {
        domain::caller::Principal::Local.caller()
    }

    /// Another caller, who must see nothing of local()'s.
    fn other() -> Caller {
        domain::caller::Principal::Bearer { name: "b".into() }.caller()
    }

    fn settings() -> JobSettings {
        JobSettings::default()
    }

    /// Reads through the fakes, announcing nowhere.
    fn reads<'a>(
        jobs: &'a MemoryJobs,
        objects: &'a MemoryObjects,
    ) -> JobReads<'a, MemoryJobs, MemoryObjects, Option<MemoryEvents>> {
        JobReads {
            jobs,
            objects,
            events: &None,
            settings: settings(),
        }
    }

    async fn reserved(jobs: &MemoryJobs) -> Submission {
        let s = Submission::new(&local().owner, "ep", "b", b"{}".to_vec(), None, 300, 600);
        jobs.write(&job::reserve(&s, &JobPolicy::default(), Utc::now()))
            .await
            .unwrap();
        s
    }

    #[tokio::test]
    async fn a_task_is_read_and_cancelled_only_with_its_secret() {
        let jobs = MemoryJobs::default();
        let objects = MemoryObjects::default();
        let s = reserved(&jobs).await;
        let id = task_id(s.inference_id.as_str(), &s.task_secret);

        let view = get_task_by_id(&reads(&jobs, &objects), &local(), &id, Utc::now())
            .await
            .unwrap();
        assert!(matches!(view.state, TaskState::Working { .. }), "{view:?}");
        assert!(view.times.ttl_ms.unwrap() > 0);

        // Another caller holding the very task id reads and cancels nothing.
        assert!(matches!(
            get_task_by_id(&reads(&jobs, &objects), &other(), &id, Utc::now()).await,
            Err(TaskError::NotFound)
        ));
        assert!(matches!(
            cancel_task_by_id(&jobs, &other(), 3600, &id, Utc::now()).await,
            Err(TaskError::NotFound)
        ));
        let wrong = task_id(s.inference_id.as_str(), &"0".repeat(32));
        for bad in [wrong.as_str(), s.inference_id.as_str(), "", "x.y"] {
            assert!(matches!(
                get_task_by_id(&reads(&jobs, &objects), &local(), bad, Utc::now()).await,
                Err(TaskError::NotFound)
            ));
            assert!(matches!(
                cancel_task_by_id(&jobs, &local(), 3600, bad, Utc::now()).await,
                Err(TaskError::NotFound)
            ));
        }

        assert!(cancel_task_by_id(&jobs, &local(), 3600, &id, Utc::now())
            .await
            .unwrap());
        let view = get_task_by_id(&reads(&jobs, &objects), &local(), &id, Utc::now())
            .await
            .unwrap();
        assert!(
            matches!(&view.state, TaskState::Cancelled { reason } if reason == job::CANCELLED_REASON),
            "{view:?}"
        );
        let cancelled = jobs.job(s.inference_id.as_str()).unwrap();
        assert_eq!(cancelled.status, JobStatus::Cancelled);
        assert_eq!(
            cancelled.failure_reason.as_deref(),
            Some(job::CANCELLED_REASON)
        );
        assert!(cancelled.completed_at.is_some() && cancelled.ttl.is_some());
        // Cancelling again changes nothing: no write, and the item as it was, field for field
        // (a second write would have moved completed_at and ttl).
        let writes = jobs.calls().1;
        let later = Utc::now() + chrono::Duration::minutes(5);
        assert!(!cancel_task_by_id(&jobs, &local(), 60, &id, later)
            .await
            .unwrap());
        assert_eq!(jobs.calls().1, writes, "no write");
        assert_eq!(jobs.job(s.inference_id.as_str()).unwrap(), cancelled);
    }

    #[tokio::test]
    async fn a_run_task_follows_the_run_and_cancel_stops_it() {
        use crate::training::{admit, trigger_training, TriggerRequest};
        use domain::allow_lists::AllowLists;
        use fakes::{FakePipeline, MemoryRuns};
        let (runs, pipeline) = (MemoryRuns::default(), FakePipeline::default());
        let request = TriggerRequest {
            owner: local().owner,
            pipeline_name: "p".into(),
            session_id: SessionId::parse("s1").unwrap(),
            parameters: vec![],
            idempotency_key: Some("k".into()),
            max_parallel_steps: None,
            result_ttl_secs: 3600,
        };
        let nothing = AllowLists {
            input_prefixes: &[],
            instance_types: &[],
        };
        let request = admit(request, nothing).unwrap();
        let triggered = trigger_training(&pipeline, &runs, &request, None, Utc::now())
            .await
            .unwrap();
        let secret = triggered.task_secret.clone().unwrap();
        // A retried trigger returns the same run, and so the same task.
        let again = trigger_training(&pipeline, &runs, &request, None, Utc::now())
            .await
            .unwrap();
        assert_eq!(again.task_secret.as_deref(), Some(secret.as_str()));

        let id = run::task_id("s1", triggered.execution_arn.as_str(), &secret);
        let view = get_run_task_by_id(&runs, &pipeline, NO_GATE, &local(), &id, Utc::now())
            .await
            .unwrap();
        assert!(
            matches!(view.state, RunTaskState::Working { .. }),
            "{view:?}"
        );
        for not_theirs in [
            get_run_task_by_id(&runs, &pipeline, NO_GATE, &other(), &id, Utc::now())
                .await
                .map(|_| ()),
            cancel_run_task_by_id(&runs, &pipeline, &other(), &id, Utc::now()).await,
        ] {
            assert!(
                matches!(not_theirs, Err(TaskError::NotFound)),
                "{not_theirs:?}"
            );
        }
        assert!(
            pipeline.stopped().is_empty(),
            "another caller stopped nothing"
        );
        let wrong = run::task_id("s1", triggered.execution_arn.as_str(), &"0".repeat(32));
        assert!(matches!(
            cancel_run_task_by_id(&runs, &pipeline, &local(), &wrong, Utc::now()).await,
            Err(TaskError::NotFound)
        ));
        cancel_run_task_by_id(&runs, &pipeline, &local(), &id, Utc::now())
            .await
            .unwrap();
        let view = get_run_task_by_id(&runs, &pipeline, NO_GATE, &local(), &id, Utc::now())
            .await
            .unwrap();
        assert!(matches!(view.state, RunTaskState::Cancelled), "{view:?}");
    }
}
