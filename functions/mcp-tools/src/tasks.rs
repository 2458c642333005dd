//! The tasks extension (`io.modelcontextprotocol/tasks`): a tool that starts a job or a run
//! as a task for a client that declared it, and `tasks/get` and `tasks/cancel` on those tasks. A
//! task lives in the results tables (any instance answers for any task); nothing is kept in the
//! process.

use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult, DetailedTask, ErrorData,
    Extensions, GetTaskParams, GetTaskResult, InputRequest, InputRequests, InputResponses, Task,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use tracing::{field::Empty, info_span, Instrument};

use domain::caller::Caller;
use domain::job::{self, JobStatus, Submission};
use domain::pipeline_status::PipelineStatus;
use domain::run;
use domain::time::rfc3339;
use domain::trace::TraceContext;
use entry::telemetry;
use usecases::answer::{self, AnswerError, Answered, Ignored, Reply, RunAnswerError};
use usecases::task::{self, OpenQuestion, RunTaskState, TaskError, TaskState, TaskTimes};
use usecases::training::{self, TriggerRequest};

use crate::contract::*;
use crate::deps::Backend;
use crate::tools::{count_reconciled, structured, tool_error, Tools};
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
                + self.deps.config.jobs.result_ttl_secs
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
            job::task_id(&submitted.inference_id, &secret),
            task_status(submitted.status),
            submitted.submitted_at.clone(),
            submitted.submitted_at.clone(),
        )
        .with_ttl_ms(lives_secs * 1000)
        .with_poll_interval_ms(self.deps.config.task_poll_interval_ms)
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
        let started = rfc3339(self.deps.clock.now());
        let config = &self.deps.config;
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

    /// `tasks/get` for a job, from the results table: any instance answers for any task.
    async fn get_job_task(&self, caller: &Caller, task_id: &str) -> Result<TaskAnswer, ErrorData> {
        // The task id is a bearer handle: only its inference_id half goes on the span.
        let span = info_span!("task", method = "tasks/get", inference_id = Empty);
        let now = self.deps.clock.now();
        let view = task::get_task(&self.job_reads(), caller, task_id, now)
            .instrument(span.clone())
            .await
            .map_err(task_error)?;
        span.record("inference_id", view.inference_id.as_str());
        let (payload, message) = match view.state {
            TaskState::Working { stage, note } => (
                TaskPayload::Working,
                Some(wording::job_task_working(stage, note.as_ref())),
            ),
            TaskState::Cancelled { reason } => (TaskPayload::Cancelled, Some(reason)),
            TaskState::Done(report) => {
                count_reconciled(&report);
                // A SageMaker failure is the tool's error, not the protocol's.
                let failed = report.job.status == JobStatus::Failed;
                let links = self.job_links(&report.job).await;
                let output = JobStatusOutput::from(*report);
                (completed(output, failed, links)?, None)
            }
        };
        Ok(TaskAnswer {
            times: view.times,
            payload,
            message,
        })
    }

    /// `tasks/get` for a training run: working with its current step, completed with what
    /// check_training_status reports (a tool error when the run failed), cancelled once stopped.
    async fn get_run_task(&self, caller: &Caller, task_id: &str) -> Result<TaskAnswer, ErrorData> {
        let span = info_span!("task", method = "tasks/get", execution_arn = Empty);
        let d = &self.deps;
        let (runs, pipeline) = (d.ports.runs(), d.ports.pipeline());
        let gate = d.approval_gate();
        let view = task::get_run_task(runs, pipeline, gate, caller, task_id, d.clock.now())
            .instrument(span.clone())
            .await
            .map_err(task_error)?;
        span.record("execution_arn", view.execution_arn.as_str());
        let (payload, message) = match view.state {
            RunTaskState::Working {
                status,
                steps,
                unsent,
            } => {
                let working = wording::run_task_working(&status, &steps);
                let message = match unsent.last() {
                    Some(reason) => wording::run_task_unsent(&working, reason),
                    None => working,
                };
                (TaskPayload::Working, Some(message))
            }
            RunTaskState::InputRequired { questions, .. } => (
                TaskPayload::InputRequired {
                    input_requests: input_requests(&questions)?,
                },
                Some(wording::run_task_asking(questions.len())),
            ),
            RunTaskState::Cancelled => (TaskPayload::Cancelled, Some(wording::RUN_STOPPED.into())),
            RunTaskState::Done {
                described,
                steps,
                model_approval,
            } => {
                let failed = !described.status.is(PipelineStatus::Succeeded);
                let mut output =
                    TrainingStatusOutput::new(view.execution_arn.into(), described, steps);
                // Behind the gate, the result says how the model was decided.
                output.model_approval_status = model_approval;
                // The task answers trigger_training's call: its result names the session as
                // trigger_training's outputSchema asks.
                output.session_id = Some(view.session_id.to_string());
                (completed(output, failed, Vec::new())?, None)
            }
        };
        Ok(TaskAnswer {
            times: view.times,
            payload,
            message,
        })
    }

    /// `tasks/get`, for a job's task or a run's.
    pub(crate) async fn read_task(
        &self,
        request: GetTaskParams,
        extensions: &Extensions,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.task_caller(extensions)?;
        let _read = self.count_read(&caller).await.map_err(quota_refused)?;
        let task = self.task_answer(&caller, &request.task_id).await?;
        Ok(GetTaskResult::new(task))
    }

    /// A job's or a run's task as `tasks/get` answers it now (a listen reports the same).
    pub(crate) async fn task_answer(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let answer = if run::is_run_task(task_id) {
            self.get_run_task(caller, task_id).await?
        } else {
            self.get_job_task(caller, task_id).await?
        };
        let poll_interval_ms = self.deps.config.task_poll_interval_ms;
        Ok(answer.into_detailed(task_id.to_owned(), poll_interval_ms))
    }

    /// `tasks/cancel`: a pending job becomes `cancelled`, a running run is stopped; a finished
    /// one stays as it is.
    pub(crate) async fn cancel(
        &self,
        request: CancelTaskParams,
        extensions: &Extensions,
    ) -> Result<(), ErrorData> {
        let caller = self.task_caller(extensions)?;
        let span = info_span!("task", method = "tasks/cancel");
        let d = &self.deps;
        let now = d.clock.now();
        let cancelled = if run::is_run_task(&request.task_id) {
            let (runs, pipeline) = (d.ports.runs(), d.ports.pipeline());
            task::cancel_run_task(runs, pipeline, &caller, &request.task_id, now)
                .instrument(span)
                .await
        } else {
            let ttl = d.config.jobs.result_ttl_secs;
            let jobs = d.ports.jobs();
            let cancelled = task::cancel_task(jobs, &caller, ttl, &request.task_id, now)
                .instrument(span)
                .await;
            if let Ok(true) = cancelled {
                telemetry::job_cancelled();
            }
            cancelled.map(|_| ())
        };
        cancelled.map_err(task_error)
    }
}

impl<B: Backend> Tools<B> {
    /// `tasks/update`: each response answers its question of a run's task (a job's task asks
    /// nothing, so every key there is unknown). Acknowledged once read: an unknown or answered
    /// key, or a caller who may not answer, changes nothing. A response that is not an
    /// elicitation's answer, or content that does not fit the question's form, is refused
    /// naming it.
    pub(crate) async fn update(
        &self,
        request: UpdateTaskParams,
        extensions: &Extensions,
    ) -> Result<(), ErrorData> {
        let caller = self.task_caller(extensions)?;
        let _read = self.count_read(&caller).await.map_err(quota_refused)?;
        let responses = replies(request.input_responses)?;
        if !run::is_run_task(&request.task_id) {
            // A job's task: read as tasks/get would (unknown or another's: -32602), then ignored.
            self.get_job_task(&caller, &request.task_id).await?;
            return Ok(());
        }
        let span = info_span!("task", method = "tasks/update");
        let d = &self.deps;
        let answered = answer::answer_run_task(
            d.ports.runs(),
            &d.answering(),
            &caller,
            d.config.approvers.as_deref(),
            &request.task_id,
            responses,
            d.clock.now(),
        )
        .instrument(span)
        .await
        .map_err(|e| match e {
            RunAnswerError::Task(e) => task_error(e),
            RunAnswerError::Answer(e @ AnswerError::Content(_)) => {
                ErrorData::invalid_params(e.to_string(), None)
            }
            RunAnswerError::Answer(e) => {
                tracing::warn!(error = %e, "an answer was not recorded");
                ErrorData::internal_error(wording::TASK_FAILED, None)
            }
        })?;
        for (_, outcome) in answered {
            tracing::info!(outcome = outcome_name(&outcome), "task update answered");
        }
        Ok(())
    }
}

/// How an answer ended, as the log names it.
fn outcome_name(outcome: &Answered) -> &'static str {
    match outcome {
        Answered::Sent => "sent",
        Answered::SendFailed(_) => "send_failed",
        Answered::Ignored(Ignored::NotApprover) => "not_approver",
        Answered::Ignored(Ignored::UnknownKey) => "unknown_key",
        Answered::Ignored(Ignored::AlreadyAnswered) => "already_answered",
    }
}

/// The most responses one `tasks/update` may carry (a run holds at most this many questions).
const MAX_RESPONSES: usize = domain::question::MAX_QUESTIONS;

/// `inputResponses` read as answers: each an elicitation's result (`action`, and for `accept`
/// the form's `content`).
fn replies(responses: InputResponses) -> Result<Vec<(String, Reply)>, ErrorData> {
    if responses.len() > MAX_RESPONSES {
        return Err(ErrorData::invalid_params(
            format!("inputResponses: at most {MAX_RESPONSES} responses in one update"),
            None,
        ));
    }
    responses
        .into_iter()
        .map(|(key, response)| {
            let shown: String = key.chars().take(64).collect();
            let refuse = |what: &str| {
                ErrorData::invalid_params(format!("inputResponses.{shown}: {what}"), None)
            };
            let content = match response.get("content") {
                None | Some(serde_json::Value::Null) => serde_json::Map::new(),
                Some(serde_json::Value::Object(c)) => c.clone(),
                Some(_) => return Err(refuse("`content` must be an object")),
            };
            let reply = match response.get("action").and_then(serde_json::Value::as_str) {
                Some("accept") => Reply::Accept(content),
                Some("decline") => Reply::Decline,
                Some("cancel") => Reply::Cancel,
                _ => return Err(refuse("`action` must be accept, decline or cancel")),
            };
            Ok((key, reply))
        })
        .collect()
}

/// What `tasks/get` says of a job's or a run's task.
struct TaskAnswer {
    times: TaskTimes,
    payload: TaskPayload,
    message: Option<String>,
}

impl TaskAnswer {
    fn into_detailed(self, task_id: String, poll_interval_ms: u64) -> DetailedTask {
        let mut task = Task::new(
            task_id,
            TaskStatus::Working,
            self.times.created_at,
            self.times.last_updated_at,
        )
        .with_poll_interval_ms(poll_interval_ms);
        if let Some(ttl_ms) = self.times.ttl_ms {
            task = task.with_ttl_ms(ttl_ms);
        }
        if let Some(message) = self.message {
            task = task.with_status_message(message);
        }
        DetailedTask::new(task, self.payload)
    }
}

/// Each open question as the form elicitation a client shows its user.
fn input_requests(questions: &[OpenQuestion]) -> Result<InputRequests, ErrorData> {
    questions
        .iter()
        .map(|q| {
            let request = serde_json::json!({"method": "elicitation/create", "params": {
                "mode": "form", "message": q.prompt, "requestedSchema": q.schema}});
            serde_json::from_value::<InputRequest>(request)
                .map(|r| (q.key.clone(), r))
                .map_err(|e| {
                    tracing::error!(error = %e, "a stored question is not an elicitation");
                    ErrorData::internal_error(wording::TASK_FAILED, None)
                })
        })
        .collect()
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

fn task_error(e: TaskError) -> ErrorData {
    match e {
        TaskError::NotFound => ErrorData::invalid_params(e.to_string(), None),
        // Which call failed goes to the log; the caller learns only that a retry may help.
        TaskError::Store(_) | TaskError::Pipeline { .. } | TaskError::Contended => {
            tracing::warn!(error = %e, "a task method failed");
            ErrorData::internal_error(wording::TASK_FAILED, None)
        }
    }
}

/// A finished task's payload: the tool's structured result and its resource links, marked
/// `isError` when the work itself failed.
fn completed(
    output: impl serde::Serialize,
    failed: bool,
    links: Vec<rmcp::model::Resource>,
) -> Result<TaskPayload, ErrorData> {
    let output =
        serde_json::to_value(output).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let result = if failed {
        CallToolResult::structured_error(output)
    } else {
        CallToolResult::structured(output)
    };
    let result = crate::contract::resources::with_links(result, links);
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(result)) => Ok(TaskPayload::Completed { result }),
        _ => Err(ErrorData::internal_error("tool result", None)),
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

    #[test]
    fn a_failed_jobs_payload_is_a_tool_error_a_completed_ones_is_not() {
        let output = serde_json::json!({"inference_id": "j", "status": "failed"});
        for failed in [true, false] {
            let TaskPayload::Completed { result } = completed(&output, failed, Vec::new()).unwrap()
            else {
                panic!("not a completed payload");
            };
            assert_eq!(result["structuredContent"], output);
            assert_eq!(
                result.get("isError") == Some(&serde_json::Value::Bool(true)),
                failed,
                "{result:?}"
            );
        }
    }
}
