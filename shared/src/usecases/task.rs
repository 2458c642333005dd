//! A job as an MCP task (the `io.modelcontextprotocol/tasks` extension): read and cancelled by
//! its task id, from the results table, so any instance answers for any task. Reading goes
//! through the status check (with its reconciliation), cancelling through one conditional write.

use chrono::{DateTime, Utc};

use crate::domain::job::{self, parse_task_id, task_secret_matches, Job, JobStatus, Stage};
use crate::ports::{JobStore, ObjectStore, StoreError};
use crate::usecases::check::{check_job, CheckError, CheckSettings, JobReport};

/// A task as the extension shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub inference_id: String,
    pub created_at: String,
    pub last_updated_at: String,
    /// Until the record expires.
    pub ttl_ms: Option<u64>,
    pub state: TaskState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// The job is pending: queued, invoked, or its invoke's outcome is not known yet.
    Working {
        message: String,
    },
    /// Completed or failed: the report `check_job_status` gives.
    Done(Box<JobReport>),
    Cancelled {
        message: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// Unknown, expired, malformed, or the secret does not match: the same answer for each,
    /// so a wrong guess learns nothing.
    #[error("no such task: it is unknown or has expired")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

async fn authorized<S: JobStore>(
    store: &S,
    task_id: &str,
    now: DateTime<Utc>,
) -> Result<Job, TaskError> {
    let (inference_id, secret) = parse_task_id(task_id).ok_or(TaskError::NotFound)?;
    let job = store
        .get(inference_id, now)
        .await?
        .ok_or(TaskError::NotFound)?;
    if task_secret_matches(&job, secret) {
        Ok(job)
    } else {
        Err(TaskError::NotFound)
    }
}

/// `tasks/get`: the job's state, after the same reconciliation a status check makes.
pub async fn get_task<S: JobStore, O: ObjectStore>(
    store: &S,
    objects: &O,
    settings: CheckSettings,
    task_id: &str,
    now: DateTime<Utc>,
) -> Result<TaskView, TaskError> {
    let job = authorized(store, task_id, now).await?;
    let report = check_job(
        store,
        objects,
        settings,
        &job.inference_id,
        std::time::Duration::ZERO,
        || now,
    )
    .await
    .map_err(|e| match e {
        CheckError::NotFound { .. } => TaskError::NotFound,
        CheckError::Store(e) => TaskError::Store(e),
    })?;
    Ok(view(report, now))
}

/// `tasks/cancel`: a pending job becomes `cancelled`; a finished one stays as it is.
pub async fn cancel_task<S: JobStore>(
    store: &S,
    result_ttl_secs: u64,
    task_id: &str,
    now: DateTime<Utc>,
) -> Result<(), TaskError> {
    let job = authorized(store, task_id, now).await?;
    if job.status == JobStatus::Pending {
        // Refused means it finished (or was cancelled) meanwhile: nothing left to cancel.
        store
            .write(&job::cancel(&job.inference_id, result_ttl_secs, now))
            .await?;
        tracing::info!("job cancelled");
    }
    Ok(())
}

fn view(report: JobReport, now: DateTime<Utc>) -> TaskView {
    let job = &report.job;
    let created_at = job.submitted_at.clone().unwrap_or_default();
    let last_updated_at = job
        .completed_at
        .clone()
        .or_else(|| job.reconciled_at.clone())
        .unwrap_or_else(|| created_at.clone());
    let ttl_ms = job
        .ttl
        .map(|ttl| u64::try_from((ttl - now.timestamp()).max(0) * 1000).unwrap_or(0));
    let state = match job.status {
        JobStatus::Pending => TaskState::Working {
            message: report.message.clone().unwrap_or_else(|| {
                match job.stage {
                    Some(Stage::Reserved) => "queued: the request is being submitted to SageMaker",
                    Some(Stage::Uncertain) => {
                        "outcome not known yet: SageMaker may or may not have queued the request"
                    }
                    _ => "invoked: SageMaker has queued the request",
                }
                .to_owned()
            }),
        },
        JobStatus::Cancelled => TaskState::Cancelled {
            message: job
                .failure_reason
                .clone()
                .unwrap_or_else(|| job::CANCELLED_REASON.to_owned()),
        },
        JobStatus::Completed | JobStatus::Failed => TaskState::Done(Box::new(report.clone())),
    };
    TaskView {
        inference_id: report.job.inference_id.clone(),
        created_at,
        last_updated_at,
        ttl_ms,
        state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::job::{task_id, JobPolicy, Submission};
    use crate::fakes::{MemoryJobs, MemoryObjects};
    use crate::usecases::outcome::RecordSettings;

    fn settings() -> CheckSettings {
        CheckSettings {
            policy: JobPolicy::default(),
            record: RecordSettings {
                result_ttl_secs: 3600,
                inline_result_max_bytes: 65536,
            },
        }
    }

    async fn reserved(jobs: &MemoryJobs) -> Submission {
        let s = Submission::new("ep", "b", b"{}".to_vec(), None, 300, 600);
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
        let id = task_id(&s.inference_id, &s.task_secret);

        let view = get_task(&jobs, &objects, settings(), &id, Utc::now())
            .await
            .unwrap();
        assert!(matches!(view.state, TaskState::Working { .. }), "{view:?}");
        assert!(view.ttl_ms.unwrap() > 0);

        let wrong = task_id(&s.inference_id, &"0".repeat(32));
        for bad in [wrong.as_str(), s.inference_id.as_str(), "", "x.y"] {
            assert!(matches!(
                get_task(&jobs, &objects, settings(), bad, Utc::now()).await,
                Err(TaskError::NotFound)
            ));
            assert!(matches!(
                cancel_task(&jobs, 3600, bad, Utc::now()).await,
                Err(TaskError::NotFound)
            ));
        }

        cancel_task(&jobs, 3600, &id, Utc::now()).await.unwrap();
        let view = get_task(&jobs, &objects, settings(), &id, Utc::now())
            .await
            .unwrap();
        assert!(
            matches!(&view.state, TaskState::Cancelled { message } if message.contains("cannot stop")),
            "{view:?}"
        );
        // Cancelling again changes nothing.
        cancel_task(&jobs, 3600, &id, Utc::now()).await.unwrap();
    }
}
