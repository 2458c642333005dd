//! One registry of the tools served: each tool, built in or from the catalog, is one entry,
//! its definition (on rmcp's router, which `tools/list` reads and plain calls go through), its
//! policy (what a call does around its work: see [`crate::contract::policy`]) and its kind
//! (starts a job, starts a run, or reads), with the reading of its arguments. A call is
//! dispatched on its kind once (`Tools::dispatch`, in dispatch.rs), and its policy applied once
//! (`Tools::call`). Adding a tool is adding an entry: a `#[tool]` method on the tools with its
//! policy in [`crate::contract::policy::BUILT_IN`], or a [`Source`] for one that starts work;
//! nothing else looks a tool up by name.

use std::collections::HashMap;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{JsonObject, Tool};

use domain::caller::Caller;
use domain::job::Submission;
use usecases::training::TriggerRequest;

use crate::catalog::{
    async_tool_definition, pipeline_tool_definition, Catalog, CatalogJobArgs, CatalogRunArgs,
};
use crate::config::ToolsConfig;
use crate::contract::policy::{self, Work};
use crate::contract::*;
use crate::wording;

/// What a tool does, which decides the forms a call to it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Starts a job or a run: a task for a client that declared the tasks extension.
    Starts(Starter),
    /// Reads (or, like a status check, reads and reconciles): the same answer for every client.
    Reads,
}

/// A tool that starts work, and where its arguments are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Starter {
    /// A job on an async endpoint: submit_job, or the catalog's async tool at this index.
    Job(Source),
    /// A pipeline run: trigger_training, or the catalog's pipeline tool at this index.
    Run(Source),
}

/// Built in, or the catalog's tool at an index of its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    BuiltIn,
    Catalog(usize),
}

/// A job's arguments, as read for the tool called: checked into one [`Submission`].
pub(crate) enum JobArgs<'a> {
    SubmitJob(SubmitJobArgs),
    Catalog(CatalogJobArgs<'a>),
}

/// A run's arguments, as read for the tool called: checked into one [`TriggerRequest`].
pub(crate) enum RunArgs<'a> {
    TriggerTraining(TriggerTrainingArgs),
    Catalog(CatalogRunArgs<'a>),
}

impl ToolArgs for JobArgs<'_> {
    type Valid = Submission;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<Submission, ToolError> {
        match self {
            JobArgs::SubmitJob(args) => args.validate(config, caller),
            JobArgs::Catalog(args) => args.validate(config, caller),
        }
    }

    fn trace(valid: &Submission, span: &tracing::Span) {
        SubmitJobArgs::trace(valid, span);
    }
}

impl ToolArgs for RunArgs<'_> {
    type Valid = TriggerRequest;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<TriggerRequest, ToolError> {
        match self {
            RunArgs::TriggerTraining(args) => args.validate(config, caller),
            RunArgs::Catalog(args) => args.validate(config, caller),
        }
    }

    fn trace(valid: &TriggerRequest, span: &tracing::Span) {
        TriggerTrainingArgs::trace(valid, span);
    }
}

impl Source {
    /// A job's arguments read for this tool; a catalog tool's are checked against its schema
    /// when validated. An index is always the catalog's (the registry made both): an
    /// impossible one is answered as a failed call, not a panic.
    pub(crate) fn job_args<'c>(
        self,
        tool: &str,
        catalog: Option<&'c Catalog>,
        arguments: Option<JsonObject>,
    ) -> Result<JobArgs<'c>, String> {
        match self {
            Source::BuiltIn => read_arguments(arguments).map(JobArgs::SubmitJob),
            Source::Catalog(index) => {
                let (catalog, spec) = catalog
                    .and_then(|c| Some((c, c.async_tools.get(index)?)))
                    .ok_or_else(|| wording::unknown_tool(tool))?;
                Ok(JobArgs::Catalog(CatalogJobArgs {
                    catalog,
                    tool: spec,
                    arguments: arguments.unwrap_or_default(),
                }))
            }
        }
    }

    /// A run's arguments read for this tool.
    pub(crate) fn run_args<'c>(
        self,
        tool: &str,
        catalog: Option<&'c Catalog>,
        arguments: Option<JsonObject>,
    ) -> Result<RunArgs<'c>, String> {
        match self {
            Source::BuiltIn => read_arguments(arguments).map(RunArgs::TriggerTraining),
            Source::Catalog(index) => {
                let (catalog, spec) = catalog
                    .and_then(|c| Some((c, c.pipeline_tools.get(index)?)))
                    .ok_or_else(|| wording::unknown_tool(tool))?;
                Ok(RunArgs::Catalog(CatalogRunArgs {
                    catalog,
                    tool: spec,
                    arguments: arguments.unwrap_or_default(),
                }))
            }
        }
    }
}

/// A built-in tool's typed arguments, or the message rmcp's router gives (as a tool error)
/// when they do not parse.
fn read_arguments<T: serde::de::DeserializeOwned>(
    arguments: Option<JsonObject>,
) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| wording::bounded(format!("failed to deserialize parameters: {e}")))
}

/// One tool's entry beside its route: its policy, and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub policy: Policy,
    pub kind: Kind,
}

impl Entry {
    /// A built-in tool's entry, from its policy.
    fn built_in(policy: Policy) -> Self {
        let kind = match policy.work {
            Work::StartsJob => Kind::Starts(Starter::Job(Source::BuiltIn)),
            Work::StartsRun => Kind::Starts(Starter::Run(Source::BuiltIn)),
            Work::Reads => Kind::Reads,
        };
        Self { policy, kind }
    }

    /// A catalog tool's entry: it starts what `starter` says.
    fn catalog(starter: Starter) -> Self {
        let work = match starter {
            Starter::Job(_) => Work::StartsJob,
            Starter::Run(_) => Work::StartsRun,
        };
        Self {
            policy: Policy::starts(work),
            kind: Kind::Starts(starter),
        }
    }

    /// What a route without an entry gets: a reader that counts its read. Every built-in
    /// route has one (a test holds the router to [`policy::BUILT_IN`]).
    const UNLISTED: Self = Self {
        policy: Policy::READS,
        kind: Kind::Reads,
    };
}

/// The tools served by a server `S`: their definitions and plain calls on rmcp's router, which
/// alone says what is served, and each one's entry.
pub(crate) struct Registry<S> {
    router: ToolRouter<S>,
    entries: HashMap<String, Entry>,
}

impl<S: Send + Sync + 'static> Registry<S> {
    /// The tools a deployment serves: the built-in ones (`built_in`, their definitions
    /// derived from their typed arguments), a catalog's in place of submit_job and
    /// trigger_training, each routed by `route` to the work its kind starts, the training
    /// tools only where runs are started, and the tools that answer a run's questions only where
    /// answers may come by tool (`answer_tools`). Each tool's schemas are in the 2020-12 dialect
    /// MCP names.
    pub(crate) fn build(
        built_in: ToolRouter<S>,
        catalog: Option<&Catalog>,
        serves_training: bool,
        answer_tools: bool,
        route: impl Fn(Tool, Starter) -> ToolRoute<S>,
    ) -> Self {
        let mut router = built_in;
        let mut entries: HashMap<String, Entry> = policy::BUILT_IN
            .iter()
            .map(|(name, policy)| ((*name).to_owned(), Entry::built_in(*policy)))
            .collect();
        if let Some(catalog) = catalog {
            let generic = |name: &str| router.get(name).cloned().expect("a generic tool");
            let (submit_job, trigger_training) =
                (generic(names::SUBMIT_JOB), generic(names::TRIGGER_TRAINING));
            for name in [names::SUBMIT_JOB, names::TRIGGER_TRAINING] {
                router.remove_route(name);
            }
            for (index, tool) in catalog.async_tools.iter().enumerate() {
                let starter = Starter::Job(Source::Catalog(index));
                let definition = async_tool_definition(tool, &submit_job);
                entries.insert(tool.spec.name.clone(), Entry::catalog(starter));
                router.add_route(route(definition, starter));
            }
            for (index, tool) in catalog.pipeline_tools.iter().enumerate() {
                let starter = Starter::Run(Source::Catalog(index));
                let definition = pipeline_tool_definition(tool, &trigger_training);
                entries.insert(tool.spec.name.clone(), Entry::catalog(starter));
                router.add_route(route(definition, starter));
            }
        }
        if !serves_training {
            for name in names::TRAINING {
                router.remove_route(name);
            }
        }
        if !answer_tools {
            for name in names::ANSWERING {
                router.remove_route(name);
            }
        }
        entries.retain(|name, _| router.has_route(name));
        for route in router.map.values_mut() {
            let tool = &mut route.attr;
            only_2020_12_formats(std::sync::Arc::make_mut(&mut tool.input_schema));
            if let Some(output) = tool.output_schema.as_mut() {
                only_2020_12_formats(std::sync::Arc::make_mut(output));
            }
        }
        Self { router, entries }
    }

    /// The tool called `name`, when it is served: its definition and its entry.
    pub(crate) fn get(&self, name: &str) -> Option<(&Tool, Entry)> {
        let tool = self.router.get(name)?;
        Some((tool, self.entry(name)))
    }

    /// The policy of a call to `name` (a tool not served has none to apply: it is refused
    /// before any).
    pub(crate) fn policy(&self, name: &str) -> Policy {
        self.entry(name).policy
    }

    fn entry(&self, name: &str) -> Entry {
        self.entries.get(name).copied().unwrap_or(Entry::UNLISTED)
    }

    /// The tools served whose calls need more than the read scope, with what they need.
    pub(crate) fn scoped_tools(&self) -> Vec<(String, Access)> {
        let mut tools: Vec<(String, Access)> = (self.entries.iter())
            .filter(|(_, e)| e.policy.access != Access::Read)
            .map(|(name, e)| (name.clone(), e.policy.access))
            .collect();
        tools.sort();
        tools
    }

    /// Every tool served, as `tools/list` declares it.
    pub(crate) fn definitions(&self) -> Vec<Tool> {
        self.router.list_all()
    }

    /// rmcp's router over the tools, for the plain calls and `tools/list`.
    pub(crate) fn router(&self) -> &ToolRouter<S> {
        &self.router
    }
}
