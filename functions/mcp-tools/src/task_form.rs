//! A tool that starts work, called by a client that declared the tasks extension: the job or
//! the run started as a plain call starts it, answered as a task (`CreateTaskResult`) that
//! `tasks/get` then reads (the `tasks` module).

use rmcp::model::{CallToolResponse, CreateTaskResult, Extensions, Task, TaskStatus};

use domain::job::{self, JobStatus, Submission};
use domain::run;
use domain::time::rfc3339;
use domain::trace::TraceContext;
use usecases::training::{self, TriggerRequest};

use crate::contract::*;
use crate::deps::Backend;
use crate::tools::{structured, tool_error, Tools};
use crate::wording;

impl<B: Backend> Tools<B> {
    /// A job started as a task by `tool` (any that starts one: see [`crate::registry`]): the
    /// task, or the tool error a plain call would get.
    pub(crate) async fn job_as_task<A: ToolArgs<Valid = Submission>>(
        &self,
        tool: &str,
        args: Result<A, String>,
        extensions: &Extensions,
    ) -> CallToolResponse {
        let lives_secs = |s: &Submission| {
            u64::from(s.request_ttl_secs)
                + u64::from(s.invocation_timeout_secs)
                + self.server.deps.config.jobs.result_ttl_secs
        };
        let call = self.task_call(tool, args, extensions, |s, trace| async move {
            let lives_secs = lives_secs(&s);
            Ok((self.submit(s, trace).await?, lives_secs))
        });
        let (submitted, lives_secs) = match call.await {
            Ok(answer) => answer,
            Err(refused) => return refused,
        };
        let Some(secret) = submitted.task_secret.clone() else {
            // A job recorded before tasks existed: answer as a plain call does.
            return structured(SubmitJobOutput::from(submitted));
        };
        let task = Task::new(
            job::task_id(submitted.inference_id.as_str(), &secret),
            task_status(submitted.status),
            submitted.submitted_at.clone(),
            submitted.submitted_at.clone(),
        )
        .with_ttl_ms(lives_secs * 1000)
        .with_poll_interval_ms(self.server.deps.config.task_poll_interval_ms)
        .with_status_message(match &submitted.note {
            Some(condition) => wording::submitted(condition),
            None if submitted.endpoint_at_zero => wording::ENDPOINT_AT_ZERO.to_owned(),
            None => wording::JOB_INVOKED.to_owned(),
        });
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// A run started as a task by `tool`: the task, or the tool error a plain call would get.
    pub(crate) async fn run_as_task<A: ToolArgs<Valid = TriggerRequest>>(
        &self,
        tool: &str,
        args: Result<A, String>,
        extensions: &Extensions,
    ) -> CallToolResponse {
        let call = self.task_call(tool, args, extensions, |r, trace| self.trigger(r, trace));
        let (output, secret) = match call.await {
            Ok(answer) => answer,
            Err(refused) => return refused,
        };
        let Some(secret) = secret else {
            // The run could not be recorded: answer as a plain call does.
            return structured(output);
        };
        let started = rfc3339(self.server.deps.clock.now());
        let config = &self.server.deps.config;
        let task = Task::new(
            run::task_id(&output.session_id, &output.execution_arn, &secret),
            TaskStatus::Working,
            started.clone(),
            started,
        )
        .with_ttl_ms((config.jobs.result_ttl_secs + training::PENDING_RUN_GRACE_SECS) * 1000)
        .with_poll_interval_ms(config.task_poll_interval_ms)
        .with_status_message(wording::RUN_STARTED);
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// A tool's work in its task form: its arguments (as read) checked, the work done as a
    /// plain call does it; a refusal is the tool error a plain call would get.
    async fn task_call<A, T, F, Fut>(
        &self,
        tool: &str,
        args: Result<A, String>,
        extensions: &Extensions,
        work: F,
    ) -> Result<T, CallToolResponse>
    where
        A: ToolArgs,
        F: FnOnce(A::Valid, TraceContext) -> Fut,
        Fut: std::future::Future<Output = Result<T, ToolError>>,
    {
        let args = args.map_err(tool_error)?;
        self.call(tool, true, extensions, args, |valid, call| {
            work(valid, call.trace)
        })
        .await
        .map_err(tool_error)
    }
}

/// The task status of a job in a given state: only a pending job is still working; a failed
/// job's task is completed, carrying a tool error (tasks fail for protocol errors only).
fn task_status(status: JobStatus) -> TaskStatus {
    match status {
        JobStatus::Pending => TaskStatus::Working,
        JobStatus::Cancelled => TaskStatus::Cancelled,
        JobStatus::Completed | JobStatus::Failed => TaskStatus::Completed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_pending_job_is_a_working_task() {
        assert_eq!(task_status(JobStatus::Pending), TaskStatus::Working);
        assert_eq!(task_status(JobStatus::Completed), TaskStatus::Completed);
        assert_eq!(task_status(JobStatus::Failed), TaskStatus::Completed);
        assert_eq!(task_status(JobStatus::Cancelled), TaskStatus::Cancelled);
    }
}
