//! A team's async models and pipelines as tools, declared in one JSON file (`TOOL_CATALOG`):
//! the file's format, the checks it passes before anything is served (at cold start, and by
//! `make catalog` before a deploy), and each tool's input schema compiled once, when the file is
//! loaded (at a cold start, a schema that does not compile refuses its own tool alone).
//!
//! ```json
//! {"async_tools": [{"name", "title"?, "description", "endpoint", "content_type"?, "accept"?,
//!                   "input_schema", "invocation_timeout_secs"?, "request_ttl_secs"?}],
//!  "pipeline_tools": [{"name", "title"?, "description", "pipeline",
//!                      "parameters": {"<argument>": {"parameter": "<PipelineParameterName>",
//!                                                    "schema": {...}, "required"?}}}]}
//! ```

#[cfg(test)]
mod arguments_tests;
mod bounds;
mod check;
mod schema;
#[cfg(test)]
mod tests;
mod tool_contract;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

pub use schema::ArgumentError;
use schema::ToolSchema;
pub use tool_contract::*;

/// At most this many tools: each is listed to the agent on every `tools/list`.
pub const MAX_TOOLS: usize = 50;

/// A catalog file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogFile {
    #[serde(default)]
    pub async_tools: Vec<Value>,
    #[serde(default)]
    pub pipeline_tools: Vec<Value>,
}

/// A model behind an async endpoint, as one tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsyncToolSpec {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub endpoint: String,
    /// The request body's MIME type (`ContentType`); default `application/json`.
    pub content_type: Option<String>,
    /// The MIME type asked of the output (`Accept`); default none (the model's choice).
    pub accept: Option<String>,
    /// A JSON Schema (2020-12) object: the arguments the model takes, sent as the JSON body.
    pub input_schema: Map<String, Value>,
    pub invocation_timeout_secs: Option<u32>,
    pub request_ttl_secs: Option<u32>,
}

/// A SageMaker pipeline, as one tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineToolSpec {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub pipeline: String,
    /// Each argument the tool takes, and the pipeline parameter it sets.
    #[serde(default)]
    pub parameters: BTreeMap<String, ParameterSpec>,
}

impl PipelineToolSpec {
    /// The tool's arguments as one object schema: each argument optional (the pipeline has its
    /// defaults) unless the catalog marks it `required`, nothing else allowed. Checked against,
    /// and shown to the agent.
    pub fn arguments_schema(&self) -> Map<String, Value> {
        let properties: Map<String, Value> = self
            .parameters
            .iter()
            .map(|(argument, p)| (argument.clone(), Value::Object(p.schema.clone())))
            .collect();
        let required: Vec<Value> = self
            .parameters
            .iter()
            .filter(|(_, p)| p.required)
            .map(|(argument, _)| Value::String(argument.clone()))
            .collect();
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        schema.insert("additionalProperties".into(), false.into());
        schema
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterSpec {
    /// The pipeline's own name for it.
    pub parameter: String,
    /// A JSON Schema of a string, integer, number or boolean.
    pub schema: Map<String, Value>,
    /// Whether every call must give it (default false: the pipeline's own default applies).
    #[serde(default)]
    pub required: bool,
}

/// One mistake in a catalog: the tool (its name, or its place when it has none), the field,
/// and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogMistake {
    pub tool: String,
    pub field: String,
    pub problem: String,
}

/// The place of a mistake about the whole file rather than one tool.
pub const WHOLE_FILE: &str = "(file)";

impl std::fmt::Display for CatalogMistake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.tool.as_str(), self.field.as_str()) {
            // The file is named once, by the error; its own mistakes need no place.
            (WHOLE_FILE, WHOLE_FILE | ".") => write!(f, "{}", self.problem),
            (WHOLE_FILE, field) => write!(f, "{field}: {}", self.problem),
            (tool, field) => write!(f, "{tool}: {field}: {}", self.problem),
        }
    }
}

/// Every mistake found, so one run of the check shows them all: one line each, under a line
/// naming the file (what check-catalog prints and a function that cannot start logs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the tool catalog{} is refused:{}", source_name(.file), .mistakes.iter().map(|m| format!("\n  {m}")).collect::<String>())]
pub struct CatalogError {
    pub file: Option<String>,
    pub mistakes: Vec<CatalogMistake>,
}

fn source_name(file: &Option<String>) -> String {
    file.as_ref().map(|f| format!(" {f}")).unwrap_or_default()
}

/// A checked catalog: its tools, each with its input schema.
#[derive(Debug)]
pub struct Catalog {
    pub async_tools: Vec<AsyncTool>,
    pub pipeline_tools: Vec<PipelineTool>,
}

#[derive(Debug, Clone)]
pub struct AsyncTool {
    pub spec: AsyncToolSpec,
    input: Arc<ToolSchema>,
}

#[derive(Debug, Clone)]
pub struct PipelineTool {
    pub spec: PipelineToolSpec,
    input: Arc<ToolSchema>,
}

/// When the catalog's schemas are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schemas {
    /// With every other check: a schema's mistake refuses the catalog (`check-catalog`).
    CompiledNow,
    /// Each on its own: what a cold start does. A schema that does not compile refuses that
    /// tool's calls alone (the log says why), and the rest of the catalog is served. Compiled
    /// in init, which Lambda runs with a whole CPU, not in each tool's first call, which at
    /// 128 MB gets 128/1769 of one (docs/performance.md: about 0.13 ms a tool here, and the
    /// 2020-12 metaschema, about 1 ms, once before the first).
    EachAlone,
}

impl Catalog {
    /// Reads and checks the catalog at `path`, its schemas compiled.
    pub fn load(path: &str) -> Result<Self, CatalogError> {
        Self::load_with(path, Schemas::CompiledNow)
    }

    /// Reads and checks the catalog at `path`, its schemas compiled as `schemas` says.
    pub fn load_with(path: &str, schemas: Schemas) -> Result<Self, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|e| CatalogError {
            file: Some(path.to_owned()),
            mistakes: vec![CatalogMistake {
                tool: WHOLE_FILE.into(),
                field: WHOLE_FILE.into(),
                problem: format!("cannot be read: {e}"),
            }],
        })?;
        let catalog = check::catalog(&text, schemas).map_err(|mistakes| CatalogError {
            file: Some(path.to_owned()),
            mistakes,
        })?;
        Ok(catalog)
    }

    /// Checks a catalog's text, its schemas compiled: every mistake is named with its tool and
    /// field.
    pub fn parse(text: &str) -> Result<Self, CatalogError> {
        check::catalog(text, Schemas::CompiledNow).map_err(|mistakes| CatalogError {
            file: None,
            mistakes,
        })
    }

    /// The async tool called `name`.
    pub fn async_tool(&self, name: &str) -> Option<&AsyncTool> {
        self.async_tools.iter().find(|t| t.spec.name == name)
    }

    /// The pipeline tool called `name`.
    pub fn pipeline_tool(&self, name: &str) -> Option<&PipelineTool> {
        self.pipeline_tools.iter().find(|t| t.spec.name == name)
    }

    /// Every endpoint the catalog names, once each.
    pub fn endpoints(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .async_tools
            .iter()
            .map(|t| t.spec.endpoint.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Every pipeline the catalog names, once each.
    pub fn pipelines(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .pipeline_tools
            .iter()
            .map(|t| t.spec.pipeline.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Checks an async tool's model arguments (the common ones taken out): their size as JSON
    /// (at most `MAX_INPUT_BYTES`), then its schema, the sizes it bounds before anything else.
    pub fn check_async_arguments(
        &self,
        tool: &AsyncTool,
        arguments: &Value,
    ) -> Result<(), ArgumentError> {
        tool.input.check(arguments)
    }

    /// Checks a pipeline tool's arguments (the common ones taken out) as an async tool's are,
    /// against their schemas.
    pub fn check_pipeline_arguments(
        &self,
        tool: &PipelineTool,
        arguments: &Value,
    ) -> Result<(), ArgumentError> {
        tool.input.check(arguments)
    }
}

/// The arguments every async catalog tool takes beside its model's.
pub const ASYNC_COMMON_ARGUMENTS: [&str; 3] = [
    "idempotency_key",
    "invocation_timeout_secs",
    "request_ttl_secs",
];

/// The arguments every pipeline catalog tool takes beside its parameters.
pub const PIPELINE_COMMON_ARGUMENTS: [&str; 2] = ["idempotency_key", "session_id"];
