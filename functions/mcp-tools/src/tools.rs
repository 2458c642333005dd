//! The tools, declared once: each validates its typed arguments, calls one use case, and
//! turns the answer into its typed result (or a tool error the model can act on).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lambda_http::RequestExt;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DetailedTask, ErrorData, Extensions, GetTaskParams, GetTaskResult,
    Implementation, ProtocolVersion, ServerCapabilities, ServerConfig, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use rmcp::{tool, tool_handler, tool_router, Json, ServerHandler};

use shared::domain::job::{self, JobStatus};
use shared::domain::run;
use shared::domain::time::now;
use shared::telemetry::{self, OutcomeSource};
use shared::usecases::task::{self, RunTaskState, TaskError, TaskState};
use shared::usecases::{check, submit, training};
use tracing::{field::Empty, info_span, Instrument, Span};

use crate::contract::*;
use crate::Deps;

/// Kept free of a long poll so the reply leaves before the Lambda times out.
const WAIT_MARGIN: Duration = Duration::from_secs(3);
/// How long a call with an idempotency key waits for a concurrent first call to get its answer.
const IN_PROGRESS_WAIT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct Tools {
    deps: Arc<Deps>,
    router: Arc<ToolRouter<Tools>>,
}

/// The macro reads `Result<Json<T>, _>` in a tool's signature to derive its `outputSchema`,
/// so tool signatures spell it out; helpers use this alias.
type ToolResult<T> = Result<Json<T>, String>;

fn answer<T, U: From<T>, E: Into<ToolError>>(result: Result<T, E>) -> ToolResult<U> {
    result.map(|v| Json(v.into())).map_err(|e| e.into().message)
}

/// Runs a tool inside its span (the tool's name and the job's ids, on every line it logs) and
/// counts the call. Arguments are never put on the span: they may hold a job's input.
async fn observed<T>(
    tool: &'static str,
    span: Span,
    work: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    let started = std::time::Instant::now();
    let result = work.instrument(span.clone()).await;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    // One line per call: its outcome and time, an access log for the tools.
    span.in_scope(|| match &result {
        Ok(_) => tracing::info!(elapsed_ms, "tool call"),
        Err(message) => tracing::info!(elapsed_ms, error = %message, "tool call failed"),
    });
    telemetry::tool_call(tool, result.is_err());
    result
}

#[tool_router]
impl Tools {
    /// Starts an asynchronous inference on the configured SageMaker endpoint and returns at once.
    #[tool(
        description = "Submit a document or JSON payload to the asynchronous ML endpoint. Returns an inference_id at \
                       once; the job takes from seconds to minutes. Call check_job_status with the id (wait_secs lets \
                       it wait up to 20 s). Pass idempotency_key to make retries safe: the same key returns the same \
                       job, and re-submits it only when it never reached SageMaker or was lost.",
        annotations(
            title = "Submit job",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn submit_job(
        &self,
        Parameters(args): Parameters<SubmitJobArgs>,
    ) -> Result<Json<SubmitJobOutput>, String> {
        let span = info_span!("tool_call", tool = "submit_job", inference_id = Empty);
        let submitted = observed("submit_job", span, self.submit(args)).await;
        submitted.map(|(s, _)| Json(s.into()))
    }

    /// Reads a job's status and, once it is done, its result.
    #[tool(
        description = "Get the status of a job started with submit_job: pending, completed (with the result inline, or \
                       a short-lived result_url for large outputs) or failed (with the reason). wait_secs (0-20) waits \
                       for a pending job to finish.",
        annotations(
            title = "Check job status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_job_status(
        &self,
        Parameters(args): Parameters<CheckJobStatusArgs>,
        extensions: Extensions,
    ) -> Result<Json<JobStatusOutput>, String> {
        let span = info_span!("tool_call", tool = "check_job_status", inference_id = Empty);
        observed("check_job_status", span, async move {
            let wait = match args.validate() {
                Ok(wait) => Duration::from_secs(wait.into()),
                Err(e) => return Err(e.message),
            };
            Span::current().record("inference_id", args.inference_id.as_str());
            let wait = remaining_time(&extensions)
                .map_or(wait, |left| wait.min(left.saturating_sub(WAIT_MARGIN)));
            let d = &self.deps;
            let settings = check::CheckSettings {
                policy: d.policy(),
                record: d.record_settings(),
            };
            let checked =
                check::check_job(&d.jobs, &d.objects, settings, &args.inference_id, wait, now)
                    .await;
            if let Ok(report) = &checked {
                if let Some(recorded) = &report.reconciled {
                    telemetry::outcome(recorded, OutcomeSource::Reconciliation);
                }
                if report.probably_lost && report.job.status == JobStatus::Pending {
                    telemetry::job_probably_lost();
                }
            }
            answer(checked)
        })
        .await
    }

    /// Starts a run of the configured training pipeline for a session.
    #[tool(
        description = "Start a run of the training pipeline for session_id, with only the parameters given. Returns the \
                       execution_arn at once; follow it with check_training_status, or list the session's runs with \
                       check_training_result. Pass idempotency_key to make retries safe: the same key returns the \
                       same run.",
        annotations(
            title = "Trigger training",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn trigger_training(
        &self,
        Parameters(args): Parameters<TriggerTrainingArgs>,
    ) -> Result<Json<TriggerTrainingOutput>, String> {
        let span = info_span!(
            "tool_call",
            tool = "trigger_training",
            session_id = Empty,
            execution_arn = Empty
        );
        let triggered = observed("trigger_training", span, self.trigger(args)).await;
        triggered.map(|(output, _)| Json(output))
    }

    /// The live status of one pipeline run and its steps.
    #[tool(
        description = "Get the status of a training run (execution_arn from trigger_training), with its failure reason \
                       and the status of each step.",
        annotations(
            title = "Check training status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn check_training_status(
        &self,
        Parameters(args): Parameters<CheckTrainingStatusArgs>,
    ) -> Result<Json<TrainingStatusOutput>, String> {
        let span = info_span!(
            "tool_call",
            tool = "check_training_status",
            execution_arn = Empty
        );
        observed("check_training_status", span, async move {
            if let Err(e) = args.validate() {
                return Err(e.message);
            }
            Span::current().record("execution_arn", args.execution_arn.as_str());
            let status = training::training_status(&self.deps.pipeline, &args.execution_arn).await;
            answer(status.map(|(described, steps)| {
                TrainingStatusOutput::new(args.execution_arn, described, steps)
            }))
        })
        .await
    }

    /// The recorded outcomes of a session's runs.
    #[tool(
        description = "List the training runs of a session, newest first, with their outcome as recorded when they \
                       finished (status pending: triggered, not finished yet).",
        annotations(
            title = "Check training result",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_training_result(
        &self,
        Parameters(args): Parameters<CheckTrainingResultArgs>,
    ) -> Result<Json<TrainingResultOutput>, String> {
        let span = info_span!(
            "tool_call",
            tool = "check_training_result",
            session_id = Empty
        );
        observed("check_training_result", span, async move {
            if let Err(e) = validate_session_id(&args.session_id) {
                return Err(e.message);
            }
            Span::current().record("session_id", args.session_id.as_str());
            let runs = training::session_runs(&self.deps.runs, &args.session_id, now()).await;
            answer(runs.map(|runs| TrainingResultOutput {
                session_id: args.session_id,
                runs: runs.into_iter().map(RunView::from).collect(),
            }))
        })
        .await
    }
}

impl Tools {
    /// trigger_training's work, shared by the tool and its task form: the answer, and the
    /// run's task secret when it was recorded.
    async fn trigger(
        &self,
        args: TriggerTrainingArgs,
    ) -> Result<(TriggerTrainingOutput, Option<String>), String> {
        let parameters = args.parameters().map_err(|e| e.message)?;
        Span::current().record("session_id", args.session_id.as_str());
        let d = &self.deps;
        let request = training::TriggerRequest {
            pipeline_name: d.config.pipeline_name.clone(),
            session_id: args.session_id.clone(),
            parameters,
            idempotency_key: args.idempotency_key,
            max_parallel_steps: args
                .max_parallel_steps
                .or(d.config.pipeline_max_parallel_steps),
            result_ttl_secs: d.config.result_ttl_secs,
        };
        let t = training::trigger_training(&d.pipeline, &d.runs, &request, now())
            .await
            .map_err(|e| ToolError::from(e).message)?;
        Span::current().record("execution_arn", t.execution_arn.as_str());
        tracing::info!("run started");
        let output = TriggerTrainingOutput {
            execution_arn: t.execution_arn,
            status: "Executing".into(),
            session_id: args.session_id,
            message: t.message,
        };
        Ok((output, t.task_secret))
    }

    /// trigger_training for a client that declared the tasks extension.
    async fn trigger_as_task(
        &self,
        arguments: Option<rmcp::model::JsonObject>,
    ) -> CallToolResponse {
        let args: TriggerTrainingArgs = match task_arguments(arguments) {
            Ok(args) => args,
            Err(message) => return tool_error(message),
        };
        let span = info_span!(
            "tool_call",
            tool = "trigger_training",
            session_id = Empty,
            execution_arn = Empty,
            task = true
        );
        let (output, secret) = match observed("trigger_training", span, self.trigger(args)).await {
            Ok(answer) => answer,
            Err(message) => return tool_error(message),
        };
        let Some(secret) = secret else {
            // The run could not be recorded: answer as a plain call does.
            return CallToolResult::structured(serde_json::to_value(output).unwrap_or_default())
                .into();
        };
        let started = shared::domain::time::rfc3339(now());
        let task = Task::new(
            run::task_id(&output.session_id, &output.execution_arn, &secret),
            TaskStatus::Working,
            started.clone(),
            started,
        )
        .with_ttl_ms((self.deps.config.result_ttl_secs + training::PENDING_RUN_GRACE_SECS) * 1000)
        .with_poll_interval_ms(self.deps.config.task_poll_interval_ms)
        .with_status_message("Executing: the run has started");
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// submit_job's work, shared by the tool and its task form: the submission, and how long
    /// its record lives (seconds).
    async fn submit(&self, args: SubmitJobArgs) -> Result<(submit::Submitted, u64), String> {
        let d = &self.deps;
        let submission = args
            .validate(&d.config.async_endpoint_name, &d.config.io_bucket)
            .map_err(|e| e.message)?;
        Span::current().record("inference_id", submission.inference_id.as_str());
        let policy = d.policy();
        let lives_secs = u64::from(submission.request_ttl_secs)
            + u64::from(submission.invocation_timeout_secs)
            + policy.result_ttl_secs;
        let settings = submit::SubmitSettings {
            policy,
            in_progress_wait: IN_PROGRESS_WAIT,
        };
        let submitted = submit::submit_job(
            &d.jobs,
            &d.objects,
            &d.endpoint,
            settings,
            &submission,
            now(),
        )
        .await;
        match &submitted {
            Ok(s) if !s.replay => telemetry::job_submitted(),
            Err(submit::SubmitError::Refused { .. }) => telemetry::job_refused(),
            _ => {}
        }
        submitted
            .map(|s| (s, lives_secs))
            .map_err(|e| ToolError::from(e).message)
    }

    /// submit_job for a client that declared the tasks extension: the job as a task, or the
    /// tool error a plain call would get.
    async fn submit_as_task(&self, arguments: Option<rmcp::model::JsonObject>) -> CallToolResponse {
        let args: SubmitJobArgs = match task_arguments(arguments) {
            Ok(args) => args,
            Err(message) => return tool_error(message),
        };
        let span = info_span!(
            "tool_call",
            tool = "submit_job",
            inference_id = Empty,
            task = true
        );
        let (submitted, lives_secs) = match observed("submit_job", span, self.submit(args)).await {
            Ok(answer) => answer,
            Err(message) => return tool_error(message),
        };
        let Some(secret) = submitted.task_secret.clone() else {
            // A job recorded before tasks existed: answer as a plain call does.
            let output = SubmitJobOutput::from(submitted);
            return CallToolResult::structured(serde_json::to_value(output).unwrap_or_default())
                .into();
        };
        let status = match submitted.status {
            JobStatus::Pending => TaskStatus::Working,
            JobStatus::Cancelled => TaskStatus::Cancelled,
            JobStatus::Completed | JobStatus::Failed => TaskStatus::Completed,
        };
        let task = Task::new(
            job::task_id(&submitted.inference_id, &secret),
            status,
            submitted.submitted_at.clone(),
            submitted.submitted_at.clone(),
        )
        .with_ttl_ms(lives_secs * 1000)
        .with_poll_interval_ms(self.deps.config.task_poll_interval_ms)
        .with_status_message(
            submitted
                .message
                .clone()
                .unwrap_or_else(|| "invoked: SageMaker has queued the request".to_owned()),
        );
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    pub fn new(deps: Arc<Deps>) -> Self {
        Self {
            deps,
            router: Arc::new(Self::tool_router()),
        }
    }

    /// Every tool as `tools/list` declares it (name, description, schemas, annotations).
    pub fn definitions() -> Vec<rmcp::model::Tool> {
        Self::tool_router().list_all()
    }
}

/// Time left in this invocation, when the runtime gives a real deadline (epoch milliseconds).
/// The Lambda context comes inside the HTTP request (Function URL), or on its own (other front
/// doors, see [`crate::direct`]).
fn remaining_time(extensions: &Extensions) -> Option<Duration> {
    let context = match extensions.get::<http::request::Parts>() {
        Some(parts) => parts.extensions.lambda_context_ref(),
        None => extensions.get::<lambda_http::Context>(),
    };
    let deadline_ms = context?.deadline;
    // Local emulators pass a duration here, not an epoch time: ignore it.
    if deadline_ms < 1_000_000_000_000 {
        return None;
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    Some(Duration::from_millis(deadline_ms.saturating_sub(now_ms)))
}

#[tool_handler(router = self.router)]
impl ServerHandler for Tools {
    /// As the router would, except that submit_job becomes a task for a client that declared
    /// the tasks extension.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let wants_task = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if wants_task && request.name == "submit_job" {
            return Ok(self.submit_as_task(request.arguments).await);
        }
        if wants_task && request.name == "trigger_training" {
            return Ok(self.trigger_as_task(request.arguments).await);
        }
        self.router
            .call(ToolCallContext::new(self, request, context))
            .await
    }

    /// `tasks/get`, from the results table: any instance answers for any task.
    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        if run::is_run_task(&request.task_id) {
            return self.get_run_task(request).await;
        }
        // The task id is a bearer handle: only its inference_id half goes on the span.
        let span = info_span!("task", method = "tasks/get", inference_id = Empty);
        let d = &self.deps;
        let settings = check::CheckSettings {
            policy: d.policy(),
            record: d.record_settings(),
        };
        let view = task::get_task(&d.jobs, &d.objects, settings, &request.task_id, now())
            .instrument(span.clone())
            .await
            .map_err(task_error)?;
        span.record("inference_id", view.inference_id.as_str());
        let (payload, message) = match view.state {
            TaskState::Working { message } => (TaskPayload::Working, Some(message)),
            TaskState::Cancelled { message } => (TaskPayload::Cancelled, Some(message)),
            TaskState::Done(report) => {
                if let Some(recorded) = &report.reconciled {
                    telemetry::outcome(recorded, OutcomeSource::Reconciliation);
                }
                // A SageMaker failure is the tool's error, not the protocol's.
                let failed = report.job.status == JobStatus::Failed;
                (completed(JobStatusOutput::from(*report), failed)?, None)
            }
        };
        let task = Task::new(
            request.task_id,
            TaskStatus::Working,
            view.created_at,
            view.last_updated_at,
        );
        Ok(task_result(
            task,
            view.ttl_ms,
            d.config.task_poll_interval_ms,
            payload,
            message,
        ))
    }

    /// `tasks/cancel`: the job becomes `cancelled` unless it already finished.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let span = info_span!("task", method = "tasks/cancel");
        if run::is_run_task(&request.task_id) {
            let d = &self.deps;
            return task::cancel_run_task(&d.runs, &d.pipeline, &request.task_id, now())
                .instrument(span)
                .await
                .map_err(task_error);
        }
        task::cancel_task(
            &self.deps.jobs,
            self.deps.config.result_ttl_secs,
            &request.task_id,
            now(),
        )
        .instrument(span)
        .await
        .map_err(task_error)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
            .with_server_info(Implementation::new("mcp-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Long-running ML work. submit_job returns an inference_id at once; poll check_job_status (wait_secs up to \
                 20) until it is completed or failed. trigger_training starts a pipeline run for a session; follow it with \
                 check_training_status, and list a session's finished runs with check_training_result. Pass an \
                 idempotency_key to submit_job and trigger_training so a retried call never starts work twice.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&[
            ProtocolVersion::V_2025_03_26,
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2026_07_28,
        ])
    }
}

fn task_error(e: TaskError) -> ErrorData {
    match e {
        TaskError::NotFound => ErrorData::invalid_params(e.to_string(), None),
        TaskError::Store(_) | TaskError::Pipeline { .. } => {
            ErrorData::internal_error(e.to_string(), None)
        }
    }
}

/// A task form's typed arguments, or the message rmcp's router gives (as a tool error) when
/// they do not parse.
fn task_arguments<T: serde::de::DeserializeOwned>(
    arguments: Option<rmcp::model::JsonObject>,
) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| format!("failed to deserialize parameters: {e}"))
}

/// A tool error as a `tools/call` answer.
fn tool_error(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

/// A finished task's payload: the tool's structured result, marked `isError` when the work
/// itself failed.
fn completed(output: impl serde::Serialize, failed: bool) -> Result<TaskPayload, ErrorData> {
    let output =
        serde_json::to_value(output).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let result = if failed {
        CallToolResult::structured_error(output)
    } else {
        CallToolResult::structured(output)
    };
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(result)) => Ok(TaskPayload::Completed { result }),
        _ => Err(ErrorData::internal_error("tool result", None)),
    }
}

/// `tasks/get`'s answer: the task with its TTL, polling interval and status message.
fn task_result(
    mut task: Task,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    payload: TaskPayload,
    message: Option<String>,
) -> GetTaskResult {
    task = task.with_poll_interval_ms(poll_interval_ms);
    if let Some(ttl_ms) = ttl_ms {
        task = task.with_ttl_ms(ttl_ms);
    }
    if let Some(message) = message {
        task = task.with_status_message(message);
    }
    GetTaskResult::new(DetailedTask::new(task, payload))
}

impl Tools {
    /// `tasks/get` for a training run: working with its current step, completed with what
    /// check_training_status reports (a tool error when the run failed), cancelled once stopped.
    async fn get_run_task(&self, request: GetTaskParams) -> Result<GetTaskResult, ErrorData> {
        let span = info_span!("task", method = "tasks/get", execution_arn = Empty);
        let d = &self.deps;
        let view = task::get_run_task(&d.runs, &d.pipeline, &request.task_id, now())
            .instrument(span.clone())
            .await
            .map_err(task_error)?;
        span.record("execution_arn", view.execution_arn.as_str());
        let (payload, message) = match view.state {
            RunTaskState::Working { message } => (TaskPayload::Working, Some(message)),
            RunTaskState::Cancelled { message } => (TaskPayload::Cancelled, Some(message)),
            RunTaskState::Done { described, steps } => {
                let failed = !described
                    .status
                    .is(shared::domain::pipeline_status::PipelineStatus::Succeeded);
                let output =
                    TrainingStatusOutput::new(view.execution_arn.clone(), described, steps);
                (completed(output, failed)?, None)
            }
        };
        let task = Task::new(
            request.task_id,
            TaskStatus::Working,
            view.created_at,
            view.last_updated_at,
        );
        Ok(task_result(
            task,
            view.ttl_ms,
            d.config.task_poll_interval_ms,
            payload,
            message,
        ))
    }
}
