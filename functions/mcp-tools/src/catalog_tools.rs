//! A catalog's tools on the router: each declared as data (the generic tool's definition with
//! the catalog's words and schema), each call one route to the work submit_job or
//! trigger_training does.

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolResponse, Extensions, JsonObject};

use crate::catalog::Catalog;
use crate::contract::*;
use crate::deps::Backend;
use crate::tools::{structured, tool_error, Tools};
use crate::wording;

impl<B: Backend> Tools<B> {
    /// An async catalog tool's call, before it is checked; None for a name the catalog lacks.
    pub(crate) fn catalog_job_args(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Option<CatalogJobArgs<'_>> {
        let catalog = self.deps.catalog.as_ref()?;
        Some(CatalogJobArgs {
            catalog,
            tool: catalog.async_tool(name)?,
            arguments: arguments.unwrap_or_default(),
        })
    }

    /// A pipeline catalog tool's call, before it is checked; None for a name the catalog lacks.
    pub(crate) fn catalog_run_args(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Option<CatalogRunArgs<'_>> {
        let catalog = self.deps.catalog.as_ref()?;
        Some(CatalogRunArgs {
            catalog,
            tool: catalog.pipeline_tool(name)?,
            arguments: arguments.unwrap_or_default(),
        })
    }

    /// A catalog tool, called plainly: a job on its endpoint, answered as submit_job answers,
    /// or a run of its pipeline, answered as trigger_training answers.
    async fn call_catalog(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        extensions: &Extensions,
    ) -> CallToolResponse {
        let is_job = self
            .deps
            .catalog
            .as_ref()
            .is_some_and(|c| c.async_tool(name).is_some());
        let answer = if is_job {
            match self.catalog_job_args(name, arguments) {
                Some(args) => self
                    .call(name, false, extensions, args, |s, _| self.submit(s))
                    .await
                    .map(|s| structured(SubmitJobOutput::from(s))),
                None => Err(wording::unknown_tool(name)),
            }
        } else {
            match self.catalog_run_args(name, arguments) {
                Some(args) => self
                    .call(name, false, extensions, args, |r, _| self.trigger(r))
                    .await
                    .map(|(output, _)| structured(output)),
                None => Err(wording::unknown_tool(name)),
            }
        };
        answer.unwrap_or_else(tool_error)
    }

    /// A catalog tool's route: its definition, and every call to [`Tools::call_catalog`].
    fn catalog_route(definition: rmcp::model::Tool) -> ToolRoute<Self> {
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
                Ok(service
                    .call_catalog(&name, arguments, &request_context.extensions)
                    .await)
            })
        })
    }

    /// The catalog's tools in place of submit_job and trigger_training: each declared as
    /// data, each call one route to the same work.
    pub(crate) fn route_catalog(router: &mut ToolRouter<Self>, catalog: &Catalog) {
        let generic = |name: &str| router.get(name).cloned().expect("a generic tool");
        let (submit_job, trigger_training) =
            (generic(names::SUBMIT_JOB), generic(names::TRIGGER_TRAINING));
        router.remove_route(names::SUBMIT_JOB);
        router.remove_route(names::TRIGGER_TRAINING);
        for tool in &catalog.async_tools {
            router.add_route(Self::catalog_route(async_tool_definition(
                tool,
                &submit_job,
            )));
        }
        for tool in &catalog.pipeline_tools {
            router.add_route(Self::catalog_route(pipeline_tool_definition(
                tool,
                &trigger_training,
            )));
        }
    }
}
