//! The tools, declared once: each checks its typed arguments, calls one use case, and turns
//! the answer into its typed result (or a tool error the model can act on). Every call goes
//! through [`Tools::call`]: its span, its checked arguments, one access-log line, its metric.
//! `submit_job` and `trigger_training` also have a task form, for clients that declared the
//! tasks extension; `tasks/get` and `tasks/cancel` read and cancel those tasks.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Extensions};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use rmcp::{tool, tool_router, Json};

use domain::caller::{Caller, Principal};
use domain::job::{JobStatus, Submission};
use domain::pipeline_event::owner_from_description;
use domain::pipeline_status::PipelineStatus;
use domain::question::{standing, Standing};
use domain::trace::TraceContext;
use entry::telemetry;
use tracing::{field::Empty, info_span, Instrument, Span};
use usecases::quota::CountedError;
use usecases::training::{self, TriggerRequest};
use usecases::{answer, approval, check, lineage, quota, submit, task};

use crate::catalog::Catalog;
use crate::contract::resources::{links_understood, Linked};
use crate::contract::*;
use crate::deadline::{remaining_time, wait_within};
use crate::deps::{Backend, Deps};
use crate::progress::{ClientProgress, ProgressAsked};
use crate::registry::{JobArgs, Registry, RunArgs};
use crate::server::{count_reconciled, Server};
use crate::wording;

/// What the work of every tool call is handed beside its checked arguments: who calls, the
/// call's trace (stored on the job or run it starts), and how long it may wait (zero unless
/// its policy lets it; the wait slot is held meanwhile).
pub(crate) struct CallContext {
    pub caller: Caller,
    pub trace: TraceContext,
    pub wait: Duration,
}

/// The MCP server: the tools on their registry, and beside them the tasks, the listen and
/// the resources (the `tasks`, `listen` and `resources` modules), each over the
/// same [`Server`]; `handler` routes each method to its own.
pub struct Tools<B> {
    pub(crate) server: Server<B>,
    /// The tools served, built on first use, not at cold start: each tool's JSON Schemas are
    /// generated then, most of what the process would otherwise do before its first request.
    /// Clones share it.
    registry: Arc<OnceLock<Registry<Self>>>,
}

impl<B> Clone for Tools<B> {
    fn clone(&self) -> Self {
        Self {
            server: self.server.clone(),
            registry: self.registry.clone(),
        }
    }
}

#[tool_router]
impl<B: Backend> Tools<B> {
    /// Tools whose requests each carry the caller their front door established. A stack with
    /// no pipeline serves no training tools.
    pub fn new(deps: Arc<Deps<B>>) -> Self {
        Self::serving(deps, None)
    }

    /// The same tools with their registry built now, as a cold start builds it: Lambda runs
    /// init with a whole CPU, while a 128 MB function's first invocation gets 128/1769 of one
    /// (each tool's schemas and rmcp's checks of them are most of a first call's CPU otherwise).
    pub fn built_now(self) -> Self {
        self.registry();
        self
    }

    fn serving(deps: Arc<Deps<B>>, sole_caller: Option<Principal>) -> Self {
        Self {
            server: Server::new(deps, sole_caller),
            registry: Arc::new(OnceLock::new()),
        }
    }

    /// The tools served, registered the first time they are asked for.
    pub(crate) fn registry(&self) -> &Registry<Self> {
        self.registry.get_or_init(|| {
            let deps = &self.server.deps;
            let answer_tools = deps.config.approvals_via.serves_answer_tools();
            Self::registry_for(deps.catalog.as_ref(), deps.serves_training(), answer_tools)
        })
    }

    /// The tools served with `catalog`: the built-in ones declared here, the catalog's routed
    /// to the work they start.
    fn registry_for(
        catalog: Option<&Catalog>,
        serves_training: bool,
        answer_tools: bool,
    ) -> Registry<Self> {
        Registry::build(
            Self::tool_router(),
            catalog,
            serves_training,
            answer_tools,
            Self::starter_route,
        )
    }

    /// Every tool a deployment with `catalog` serves, as `tools/list` declares it.
    pub fn definitions_with(catalog: &Catalog) -> Vec<rmcp::model::Tool> {
        Self::registry_for(Some(catalog), !catalog.pipeline_tools.is_empty(), true).definitions()
    }

    /// Tools whose every request is `principal`'s: for a transport that has one caller.
    pub fn for_sole_caller(deps: Arc<Deps<B>>, principal: Principal) -> Self {
        Self::serving(deps, Some(principal))
    }

    /// Every tool as `tools/list` declares it (name, description, schemas, annotations).
    pub fn definitions() -> Vec<rmcp::model::Tool> {
        Self::registry_for(None, true, true).definitions()
    }

    /// The tools served whose calls need the write scope, by their policies.
    pub(crate) fn scoped_tools(&self) -> Vec<(String, Access)> {
        self.registry().scoped_tools()
    }

    /// The tools this deployment serves (without training tools when it has no pipeline).
    pub fn served(&self) -> Vec<rmcp::model::Tool> {
        self.registry().definitions()
    }

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
        extensions: Extensions,
    ) -> Result<Json<SubmitJobOutput>, String> {
        let started = self.start_job(names::SUBMIT_JOB, JobArgs::SubmitJob(args), &extensions);
        started.await.map(Json)
    }

    /// Reads a job's status and, once it is done, its result.
    #[tool(
        description = "Get the status of a job, by the inference_id the tool that started it returned: pending, completed (with the result inline, or \
                       for large outputs a resource_link to read with resources/read and a short-lived result_url) \
                       or failed (with the reason). wait_secs (0-20) waits \
                       for a pending job to finish. With a progress token the wait may be longer (up to the function's \
                       timeout less 10 s) and progress notifications report the job as it moves; the server runs, \
                       and is billed, for the whole wait, and holds one Lambda execution meanwhile.",
        output_schema = rmcp::handler::server::tool::schema_for_output::<JobStatusOutput>(),
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
        context: RequestContext<RoleServer>,
    ) -> Result<Linked<JobStatusOutput>, String> {
        let extensions = &context.extensions;
        let linking = links_understood(context.protocol_version());
        let mut progress = ClientProgress::of(&context, wording::job_progress);
        let call = self.call(
            names::CHECK_JOB_STATUS,
            false,
            extensions,
            args,
            |c, CallContext { caller, wait, .. }| async move {
                let d = &self.server.deps;
                let clock = || d.clock.now();
                let reads = self.server.job_reads();
                let check = check::check_job(&reads, &caller, &c.id, wait, clock, &mut progress);
                let report = check.await?;
                count_reconciled(&report);
                if report.probably_lost && report.job.status == JobStatus::Pending {
                    telemetry::job_probably_lost();
                }
                let links = match linking {
                    true => self.server.job_links(&report.job).await,
                    false => Vec::new(),
                };
                let output = JobStatusOutput::from(report);
                Ok(Linked { output, links })
            },
        );
        call.await
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
        extensions: Extensions,
    ) -> Result<Json<TriggerTrainingOutput>, String> {
        let args = RunArgs::TriggerTraining(args);
        let started = self.start_run(names::TRIGGER_TRAINING, args, &extensions);
        started.await.map(Json)
    }

    /// The live status of one pipeline run and its steps.
    #[tool(
        description = "Get the status of a training run (the execution_arn the tool that started it returned), with its failure reason \
                       and the status of each step. wait_secs (0-20) waits for a running run to end; with a progress \
                       token the wait may be longer (up to the function's timeout less 10 s) and each step is \
                       reported as it starts and ends. The server runs, and is billed, for the whole wait.",
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
        context: RequestContext<RoleServer>,
    ) -> Result<Json<TrainingStatusOutput>, String> {
        let tool = names::CHECK_TRAINING_STATUS;
        let extensions = &context.extensions;
        let mut progress = ClientProgress::of(&context, wording::run_progress);
        self.call(
            tool,
            false,
            extensions,
            args,
            |run, CallContext { caller, wait, .. }| async move {
                let d = &self.server.deps;
                let arn = run.id;
                let now = d.clock.now();
                let pipeline = d.ports.pipeline();
                let approvers = d.config.approvers.as_deref();
                let follow = training::follow_run(
                    pipeline,
                    &caller,
                    approvers,
                    arn.as_str(),
                    wait,
                    &mut progress,
                );
                let (described, steps) = follow.await?;
                let owner = described
                    .description
                    .as_deref()
                    .and_then(owner_from_description);
                let answers = standing(approvers, &caller, owner.as_ref()) == Standing::Answers;
                // A running run may wait on a person (its questions are on its record), and a
                // run that succeeded on its model's approval, behind the gate.
                let (runs, gate) = (d.ports.runs(), d.approval_gate());
                let waiting = task::waiting_on(runs, gate, &described, &steps, arn.as_str(), now)
                    .await
                    .map_err(ToolError::from)?;
                let mut status = TrainingStatusOutput::new(arn.into(), described, steps);
                status.waiting_for_input = waiting
                    .questions
                    .into_iter()
                    .map(QuestionView::from)
                    .collect();
                status.model_approval_status = waiting.model_approval;
                status.answers = waiting.answers.into_iter().map(AnswerView::from).collect();
                status.task_id = waiting.task_id.filter(|_| answers);
                Ok(Json(status))
            },
        )
        .await
    }

    /// Answers what a training run asks a person, for a client without tasks.
    #[tool(
        description = "Answer a question a training run waits on (check_training_status lists them in \
                       waiting_for_input, each with its key, prompt and fields): accept with content, one value \
                       per field, and the run goes on with them; decline or cancel, and the run fails at that \
                       step. A question takes one answer. Who may answer: the deployment's approvers (APPROVERS) \
                       when it names them, never for a run they started; otherwise the run's owner.",
        annotations(
            title = "Answer a training run's question",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn answer_training_input(
        &self,
        Parameters(args): Parameters<AnswerTrainingInputArgs>,
        extensions: Extensions,
    ) -> Result<Json<AnswerTrainingInputOutput>, String> {
        self.call(
            names::ANSWER_TRAINING_INPUT,
            false,
            &extensions,
            args,
            |request, CallContext { caller, .. }| async move {
                let d = &self.server.deps;
                let answered = answer::answer_execution(
                    d.ports.runs(),
                    &d.answering(),
                    &caller,
                    d.config.approvers.as_deref(),
                    request.execution_arn.as_str(),
                    &request.key,
                    request.reply.clone(),
                    d.clock.now(),
                )
                .await
                .map_err(ToolError::from)?;
                Ok(Json(AnswerTrainingInputOutput::new(&request, answered)))
            },
        )
        .await
    }

    /// A person's decision on a model a training run registered.
    #[tool(
        description = "Approve or reject a model package a training run registered and left waiting \
                       (PendingManualApproval; check_training_status reports it in model_package_arn): \
                       approve true makes it Approved, for a deployment to use; false Rejected. The comment \
                       is kept with who decided; once: a package decided already is changed in SageMaker \
                       itself. Who may answer: the deployment's approvers (APPROVERS) when it names them, \
                       never for a run they started; otherwise the run's owner.",
        annotations(
            title = "Approve or reject a registered model",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn approve_model_package(
        &self,
        Parameters(args): Parameters<ApproveModelPackageArgs>,
        extensions: Extensions,
    ) -> Result<Json<ApproveModelPackageOutput>, String> {
        let extensions = &extensions;
        self.call(
            names::APPROVE_MODEL_PACKAGE,
            false,
            extensions,
            args,
            |request, CallContext { caller, .. }| async move {
                let d = &self.server.deps;
                let decided = approval::approve_model_package(
                    d.ports.runs(),
                    d.ports.lineage(),
                    d.ports.pipeline(),
                    &caller,
                    d.config.approvers.as_deref(),
                    &request,
                    d.clock.now(),
                )
                .await
                .map_err(ToolError::from)?;
                Ok(Json(decided.into()))
            },
        )
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
        extensions: Extensions,
    ) -> Result<Json<TrainingResultOutput>, String> {
        self.call(
            names::CHECK_TRAINING_RESULT,
            false,
            &extensions,
            args,
            |session_id, CallContext { caller, .. }| async move {
                let d = &self.server.deps;
                let now = d.clock.now();
                let runs = training::session_runs(d.ports.runs(), &caller, &session_id, now)
                    .await
                    .map_err(ToolError::from)?;
                Ok(Json(TrainingResultOutput {
                    session_id,
                    runs: runs.into_iter().map(RunView::from).collect(),
                }))
            },
        )
        .await
    }

    /// What built a registered model, or what it went on to feed.
    #[tool(
        description = "The provenance of a registered model package (model_package_arn, as check_training_status \
                       reports it): upstream (the default) what built it, such as its training job, data and image; \
                       downstream what it went on to feed, such as its model group. Walks SageMaker's lineage \
                       associations of every type, breadth first to max_depth (1-3, default 2), each entity once, at \
                       most 50 entities (truncated says it stopped there), and names the pipeline run that made the \
                       package. Read-only.",
        annotations(
            title = "Get model provenance",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn get_model_provenance(
        &self,
        Parameters(args): Parameters<GetModelProvenanceArgs>,
        extensions: Extensions,
    ) -> Result<Json<ModelProvenanceOutput>, String> {
        let extensions = &extensions;
        self.call(
            names::GET_MODEL_PROVENANCE,
            false,
            extensions,
            args,
            |request, CallContext { caller, .. }| async move {
                let d = &self.server.deps;
                let (graph, pipeline) = (d.ports.lineage(), d.ports.pipeline());
                let found = lineage::model_provenance(graph, pipeline, &caller, &request)
                    .await
                    .map_err(ToolError::from)?;
                Ok(Json(ModelProvenanceOutput::new(found, &request)))
            },
        )
        .await
    }

    /// One tool call: its span (the tool and the ids it concerns; never its arguments, which
    /// may hold a job's input), its caller, its arguments checked, its work, one line for the
    /// access log, and its metric.
    pub(crate) async fn call<A, T, F, Fut>(
        &self,
        tool: &str,
        task: bool,
        extensions: &Extensions,
        args: A,
        work: F,
    ) -> Result<T, String>
    where
        A: ToolArgs,
        F: FnOnce(A::Valid, CallContext) -> Fut,
        Fut: Future<Output = Result<T, ToolError>>,
    {
        // Its trace (see `trace_context`) on the span, so every line of the call carries it.
        let trace = crate::trace_context::of(extensions);
        let trace_id = trace.trace_id();
        let span_id = trace.span_id();
        let span = info_span!(
            "tool_call",
            tool,
            task,
            trace_id = trace_id.as_str(),
            span_id = %span_id,
            inference_id = Empty,
            session_id = Empty,
            execution_arn = Empty,
            model_package_arn = Empty
        );
        let started = tokio::time::Instant::now();
        let policy = self.registry().policy(tool);
        let result = async {
            let caller = (self.server)
                .caller_of(extensions)
                .ok_or_else(|| ToolError::invalid(wording::NO_CALLER))?;
            let valid = args.validate(&self.server.deps.config, &caller)?;
            A::trace(&valid, &Span::current());
            // The tool's policy, in the order a refusal costs least: the wait asked, the
            // deployment's ARNs, then the read counted and the wait slot claimed.
            let wait = match policy.may_wait {
                true => self.allowed_wait(A::wait_secs(&valid), extensions)?,
                false => Duration::ZERO,
            };
            if let Some(place) = A::place(&valid).filter(|_| policy.in_deployment) {
                if !place.within(&self.server.scope(extensions)) {
                    // Another pipeline's, region's or account's: unknown, and SageMaker not asked.
                    return Err((place.unknown)(place.arn));
                }
            }
            let _read = match policy.counts_read {
                true => Some(self.server.count_read(&caller).await?),
                false => None,
            };
            let d = &self.server.deps;
            let (slots, limits, now) = (d.ports.quotas(), &d.config.quotas, d.clock.now());
            let owner = caller.owner.clone();
            let context = CallContext {
                caller,
                trace,
                wait,
            };
            // On the heap: a tool's work holds the SDK's futures, and the wait around it would
            // otherwise carry them all inline (deep enough to overflow a debug build's stack).
            let work = Box::pin(work(valid, context));
            let done = quota::within_wait(slots, limits, &owner, wait, now, work).await;
            done.map_err(ToolError::from)
        }
        .instrument(span.clone())
        .await
        .map_err(|e| wording::bounded(e.message));
        let elapsed_ms = started.elapsed().as_millis() as u64;
        span.in_scope(|| match &result {
            Ok(_) => tracing::info!(elapsed_ms, trace_id = trace_id.as_str(), "tool call"),
            Err(message) => {
                tracing::info!(elapsed_ms, trace_id = trace_id.as_str(), error = %message, "tool call failed")
            }
        });
        telemetry::tool_call(tool, result.is_err());
        result
    }

    /// submit_job's work, for every tool that starts a job, plain or as a task: counted
    /// against the caller's quota first (a replay is not), so a caller over it starts nothing.
    pub(crate) async fn submit(
        &self,
        submission: Submission,
        trace: TraceContext,
    ) -> Result<submit::Submitted, ToolError> {
        let submission = submission.with_trace(trace);
        let d = &self.server.deps;
        let (jobs, objects, endpoint) = (d.ports.jobs(), d.ports.objects(), d.ports.endpoint());
        let limits = &d.config.quotas;
        let now = d.clock.now();
        let submitted = submit::submit_counted(
            jobs,
            objects,
            endpoint,
            d.settings,
            limits,
            &submission,
            now,
        )
        .await;
        match &submitted {
            Ok(s) if !s.replay => telemetry::job_submitted(),
            Err(CountedError::Work(submit::SubmitError::Refused { .. })) => {
                telemetry::job_refused()
            }
            _ => {}
        }
        Ok(submitted?)
    }

    /// trigger_training's work, for the tool and its task form: the answer, and the run's task
    /// secret when the run was recorded.
    pub(crate) async fn trigger(
        &self,
        request: TriggerRequest,
        trace: TraceContext,
    ) -> Result<(TriggerTrainingOutput, Option<String>), ToolError> {
        let d = &self.server.deps;
        // Every tool's run comes here: the allow-lists first, before anything counts or starts.
        let admitted = training::admit(request, d.config.training.allow_lists())?;
        let request = admitted.request();
        let (pipeline, runs, jobs) = (d.ports.pipeline(), d.ports.runs(), d.ports.jobs());
        let now = d.clock.now();
        let limits = &d.config.quotas;
        let triggered =
            training::trigger_counted(pipeline, runs, jobs, limits, &admitted, Some(&trace), now);
        let t = triggered.await?;
        Span::current().record("execution_arn", t.execution_arn.as_str());
        tracing::info!("run started");
        let output = TriggerTrainingOutput {
            execution_arn: t.execution_arn.into(),
            status: PipelineStatus::Executing.into(),
            session_id: request.session_id.to_string(),
            message: t
                .recording_failed
                .as_ref()
                .map(|_| wording::RUN_NOT_RECORDED.to_owned()),
        };
        Ok((output, t.task_secret))
    }
}

impl<B> Tools<B> {
    /// The wait a call may have: what it asked, held to the plain or the streamed limit
    /// ([`allowed_wait`]) and to the invocation's time.
    fn allowed_wait(
        &self,
        asked_secs: u32,
        extensions: &Extensions,
    ) -> Result<Duration, ToolError> {
        let streamed = extensions.get::<ProgressAsked>().is_some();
        let wait = allowed_wait(asked_secs, streamed, &self.server.deps.config)?;
        Ok(wait_within(wait, remaining_time(extensions)))
    }
}

/// A tool error as a `tools/call` answer.
pub(crate) fn tool_error(message: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message)]).into()
}

/// A tool result as a `tools/call` answer.
pub(crate) fn structured(output: impl serde::Serialize) -> CallToolResponse {
    CallToolResult::structured(serde_json::to_value(output).unwrap_or_default()).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_registry_is_built_once_when_asked_for_and_shared_by_clones() {
        let tools = crate::tools_tests::world(&[]).tools;
        let clone = tools.clone();
        assert!(tools.registry.get().is_none(), "built only when asked for");
        let served = clone.served();
        assert!(tools.registry.get().is_some());
        assert!(std::ptr::eq(tools.registry(), clone.registry()));
        assert_eq!(tools.served().len(), served.len());
        // A cold start asks for it at once.
        let ready = crate::tools_tests::world(&[]).tools.built_now();
        assert!(ready.registry.get().is_some());
    }
}
