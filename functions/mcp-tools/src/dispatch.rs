//! A tool call dispatched on its kind, once: a tool that starts work (a job or a run, built in
//! or from the catalog) is a task for a client that declared the tasks extension, and a plain
//! call otherwise; every other tool is answered by its route on the registry's router.

use rmcp::handler::server::router::tool::ToolRoute;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Extensions, JsonObject, Tool,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use crate::arguments;
use crate::contract::{SubmitJobOutput, TriggerTrainingOutput};
use crate::deps::Backend;
use crate::registry::{JobArgs, Kind, RunArgs, Starter};
use crate::tools::{structured, tool_error, Tools};
use crate::wording;

impl<B: Backend> Tools<B> {
    /// The route of a catalog tool (which starts work): its definition, and every plain call
    /// to [`Tools::start`].
    pub(crate) fn starter_route(definition: Tool, starter: Starter) -> ToolRoute<Self> {
        let name = definition.name.to_string();
        ToolRoute::new_dyn(definition, move |context: ToolCallContext<'_, Self>| {
            let name = name.clone();
            Box::pin(async move {
                let ToolCallContext {
                    service,
                    arguments,
                    request_context,
                    ..
                } = context;
                let extensions = &request_context.extensions;
                Ok(service
                    .start(&name, starter, arguments, extensions, false)
                    .await)
            })
        })
    }

    /// A call to its tool, looked up once and dispatched on its kind: a tool that starts work
    /// becomes a task for a client that declared the tasks extension; every other call goes
    /// through the router (the built-in tools' own methods, the catalog's routes). A tool not
    /// served is a protocol error naming those that are (a catalog deployment serves its own
    /// tools in place of submit_job).
    pub(crate) async fn dispatch(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        wants_task: bool,
    ) -> Result<CallToolResponse, ErrorData> {
        let registry = self.registry();
        let Some((tool, entry)) = registry.get(&request.name) else {
            let tools: Vec<String> = self.served().iter().map(|t| t.name.to_string()).collect();
            let deps = &self.server.deps;
            let why = wording::NotServed {
                catalog: deps.catalog.is_some(),
                answers_by_form_only: !deps.config.approvals_via.serves_answer_tools(),
            };
            return Err(ErrorData::invalid_params(
                wording::not_served(&request.name, &tools, why),
                None,
            ));
        };
        // Numbers and booleans sent as strings become what the tool's schema declares.
        if let Some(arguments) = request.arguments.as_mut() {
            if let Err(message) = arguments::coerce(&tool.input_schema, arguments) {
                return Ok(tool_error(message));
            }
        }
        match entry.kind {
            Kind::Starts(starter) if wants_task => {
                let extensions = &context.extensions;
                Ok(self
                    .start(&request.name, starter, request.arguments, extensions, true)
                    .await)
            }
            _ => {
                let call = ToolCallContext::new(self, request, context);
                registry.router().call(call).await
            }
        }
    }

    /// A call to a tool that starts work, plain or as a task: the arguments read for the tool,
    /// then the one way its kind of work starts.
    pub(crate) async fn start(
        &self,
        tool: &str,
        starter: Starter,
        arguments: Option<JsonObject>,
        extensions: &Extensions,
        as_task: bool,
    ) -> CallToolResponse {
        let catalog = self.server.deps.catalog.as_ref();
        match (starter, as_task) {
            (Starter::Job(source), true) => {
                self.job_as_task(tool, source.job_args(tool, catalog, arguments), extensions)
                    .await
            }
            (Starter::Run(source), true) => {
                self.run_as_task(tool, source.run_args(tool, catalog, arguments), extensions)
                    .await
            }
            (Starter::Job(source), false) => match source.job_args(tool, catalog, arguments) {
                Ok(args) => self.start_job(tool, args, extensions).await.map(structured),
                Err(message) => Err(message),
            }
            .unwrap_or_else(tool_error),
            (Starter::Run(source), false) => match source.run_args(tool, catalog, arguments) {
                Ok(args) => self.start_run(tool, args, extensions).await.map(structured),
                Err(message) => Err(message),
            }
            .unwrap_or_else(tool_error),
        }
    }

    /// A job started by a plain call, answered as submit_job answers.
    pub(crate) async fn start_job(
        &self,
        tool: &str,
        args: JobArgs<'_>,
        extensions: &Extensions,
    ) -> Result<SubmitJobOutput, String> {
        let submitted = self.call(tool, false, extensions, args, |s, call| {
            self.submit(s, call.trace)
        });
        submitted.await.map(SubmitJobOutput::from)
    }

    /// A run started by a plain call, answered as trigger_training answers.
    pub(crate) async fn start_run(
        &self,
        tool: &str,
        args: RunArgs<'_>,
        extensions: &Extensions,
    ) -> Result<TriggerTrainingOutput, String> {
        let triggered = self.call(tool, false, extensions, args, |r, call| {
            self.trigger(r, call.trace)
        });
        triggered.await.map(|(output, _)| output)
    }
}
