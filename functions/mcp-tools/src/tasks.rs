//! The tasks extension's methods (`io.modelcontextprotocol/tasks`): `tasks/get`,
//! `tasks/cancel` and `tasks/update` on the tasks a tool started (the `task_form` module), beside
//! the tools, over the same [`Server`]. A task lives in the results tables (any instance
//! answers for any task); nothing is kept in the process.

use rmcp::model::{
    CallToolResult, CancelTaskParams, DetailedTask, ErrorData, Extensions, GetTaskParams,
    GetTaskResult, InputRequest, InputRequests, InputResponses, Task, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use tracing::{field::Empty, info_span, Instrument};

use domain::caller::Caller;
use domain::job::JobStatus;
use domain::pipeline_status::PipelineStatus;
use domain::task_id::{JobTask, RunTask, TaskId};
use entry::telemetry;
use usecases::answer::{self, AnswerError, Answered, Ignored, Reply, RunAnswerError};
use usecases::task::{self, OpenQuestion, RunTaskState, TaskError, TaskState, TaskTimes};

use crate::contract::*;
use crate::deps::Backend;
use crate::server::{count_reconciled, Server};
use crate::wording;

/// The task methods, for one request.
pub(crate) struct Tasks<'a, B> {
    server: &'a Server<B>,
}

impl<'a, B> Tasks<'a, B> {
    pub fn new(server: &'a Server<B>) -> Self {
        Self { server }
    }
}

impl<B: Backend> Tasks<'_, B> {
    /// `tasks/get` for a job, from the results table: any instance answers for any task.
    async fn get_job_task(&self, caller: &Caller, task: &JobTask) -> Result<TaskAnswer, ErrorData> {
        // The task id is a bearer handle: only its inference_id half goes on the span.
        let span = info_span!("task", method = "tasks/get", inference_id = Empty);
        let now = self.server.deps.clock.now();
        let view = task::get_task(&self.server.job_reads(), caller, task, now)
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
                let links = self.server.job_links(&report.job).await;
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
    async fn get_run_task(&self, caller: &Caller, task: &RunTask) -> Result<TaskAnswer, ErrorData> {
        let span = info_span!("task", method = "tasks/get", execution_arn = Empty);
        let d = &self.server.deps;
        let (runs, pipeline) = (d.ports.runs(), d.ports.pipeline());
        let gate = d.approval_gate();
        let approvers = d.config.approvers.as_deref();
        let view = task::get_run_task(runs, pipeline, gate, caller, approvers, task, d.clock.now())
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
                Some(wording::run_task_asking(questions.len(), view.standing)),
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
        let caller = self.server.reading_caller(extensions).await?;
        let task = self.task_answer(&caller, &request.task_id).await?;
        Ok(GetTaskResult::new(task))
    }

    /// A job's or a run's task as `tasks/get` answers it now (a listen reports the same).
    pub(crate) async fn task_answer(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let answer = match parsed(task_id)? {
            TaskId::Run(task) => self.get_run_task(caller, &task).await?,
            TaskId::Job(task) => self.get_job_task(caller, &task).await?,
        };
        let poll_interval_ms = self.server.deps.config.task_poll_interval_ms;
        Ok(answer.into_detailed(task_id.to_owned(), poll_interval_ms))
    }

    /// `tasks/cancel`: a pending job becomes `cancelled`, a running run is stopped; a finished
    /// one stays as it is.
    pub(crate) async fn cancel(
        &self,
        request: CancelTaskParams,
        extensions: &Extensions,
    ) -> Result<(), ErrorData> {
        let caller = self.server.task_caller(extensions)?;
        let span = info_span!("task", method = "tasks/cancel");
        let d = &self.server.deps;
        let now = d.clock.now();
        let cancelled = match parsed(&request.task_id)? {
            TaskId::Run(task) => {
                let (runs, pipeline) = (d.ports.runs(), d.ports.pipeline());
                task::cancel_run_task(runs, pipeline, &caller, &task, now)
                    .instrument(span)
                    .await
            }
            TaskId::Job(task) => {
                let ttl = d.config.jobs.result_ttl_secs;
                let jobs = d.ports.jobs();
                let cancelled = task::cancel_task(jobs, &caller, ttl, &task, now)
                    .instrument(span)
                    .await;
                if let Ok(true) = cancelled {
                    telemetry::job_cancelled();
                }
                cancelled.map(|_| ())
            }
        };
        cancelled.map_err(task_error)
    }

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
        let caller = self.server.reading_caller(extensions).await?;
        let responses = replies(request.input_responses)?;
        let task = match parsed(&request.task_id)? {
            TaskId::Run(task) => task,
            TaskId::Job(task) => {
                // A job's task: read as tasks/get would (unknown or another's: -32602), then
                // ignored.
                self.get_job_task(&caller, &task).await?;
                return Ok(());
            }
        };
        let span = info_span!("task", method = "tasks/update");
        let d = &self.server.deps;
        let answered = answer::answer_run_task(
            d.ports.runs(),
            &d.answering(),
            &caller,
            d.config.approvers.as_deref(),
            &task,
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
        Answered::Ignored(Ignored::OwnRun) => "own_run",
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

/// A request's task id, parsed once where it enters: one that is no task of this server's is
/// answered as an unknown one.
fn parsed(task_id: &str) -> Result<TaskId, ErrorData> {
    TaskId::parse(task_id).map_err(|_| task_error(TaskError::NotFound))
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
