//! The MCP server: each method routed to its own, `tools/call` to the registry of tools
//! (dispatched on its kind), the task methods to [`Tasks`], a listen to [`Listens`],
//! `resources/read` to [`Resources`]; the listings with their caching hints, and what the
//! server says of itself.

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ContentBlock, CustomRequest,
    CustomResult, ErrorData, GetTaskParams, GetTaskResult, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{tool_handler, RoleServer, ServerHandler};

use crate::contract::events::EVENTS_EXTENSION;
use crate::deps::Backend;
use crate::events::Events;
use crate::listen::Listens;
use crate::listing;
use crate::resources::Resources;
use crate::tasks::Tasks;
use crate::tools::Tools;
use crate::wording;

#[tool_handler(router = self.registry().router())]
impl<B: Backend> ServerHandler for Tools<B> {
    /// As the router would, except that a tool that starts work becomes a task for a client
    /// that declared the tasks extension ([`Tools::dispatch`]).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // W3C trace context (SEP-414): this server's span, for Tools::call to take.
        let trace = crate::trace_context::from_meta(&context.meta);
        context.extensions.insert(trace);
        if context.meta.get_progress_token().is_some() {
            context.extensions.insert(crate::progress::ProgressAsked);
        }
        let wants_task = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let answer = self.dispatch(request, context, wants_task).await;
        // rmcp's own argument errors quote what they could not read: cut, as ours are.
        answer.map(|response| match response {
            CallToolResponse::Complete(mut result) if result.is_error == Some(true) => {
                for block in result.content.iter_mut() {
                    if let Some(text) = block.as_text().map(|t| t.text.clone()) {
                        if text.chars().count() > wording::ERROR_MAX_CHARS {
                            *block = ContentBlock::text(wording::bounded(text));
                        }
                    }
                }
                CallToolResponse::Complete(result)
            }
            other => other,
        })
    }

    /// `tasks/get`, for a job's task or a run's.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Tasks::new(&self.server)
            .read_task(request, &context.extensions)
            .await
    }

    /// `subscriptions/listen` is served: none of rmcp's categories (no list changes, no
    /// resource subscriptions), only the tasks a listen names ([`crate::listen`]).
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::new())
    }

    /// A listen, after rmcp acknowledged it: held until its tasks have ended or its time is up.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        Listens::new(&self.server).hold(subscription).await
    }

    /// `tasks/update`: answers to a run's questions (see [`crate::tasks`]).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = Tasks::new(&self.server);
        tasks.update(request, &context.extensions).await
    }

    /// `tasks/cancel`: a pending job becomes `cancelled`, a running run is stopped; a finished
    /// one stays as it is.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = Tasks::new(&self.server);
        tasks.cancel(request, &context.extensions).await
    }

    /// The tools served, with the caching hints every listing carries.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(listing::tools(self.served(), context.protocol_version()))
    }

    /// Jobs are not enumerable: none listed (see [`crate::resources`]).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(listing::resources(context.protocol_version()))
    }

    /// How to name a job's output and its failure detail.
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(listing::templates(context.protocol_version()))
    }

    /// A job's output or failure detail, for the caller that submitted the job.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let version = context.protocol_version();
        let resources = Resources::new(&self.server);
        let read = resources.read_job_resource(request, &context.extensions, version);
        read.await.map(ReadResourceResponse::from)
    }

    /// The Events extension's methods (see [`Events`]); any other method this server does
    /// not know is not found, as rmcp answers it.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let events = Events::new(&self.server);
        let method = request.method.as_str();
        let params = request.params.as_ref();
        events
            .call(method, params, &context)
            .await
            .map(CustomResult)
    }

    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_tasks()
            .build();
        // MCP Events, where the deployment keeps an event log (no list changes: the event
        // types are fixed).
        if Events::new(&self.server).offered() {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(EVENTS_EXTENSION.to_owned(), Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("mcp-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(match &self.server.deps.catalog {
                None => wording::INSTRUCTIONS,
                Some(_) => wording::CATALOG_INSTRUCTIONS,
            })
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
