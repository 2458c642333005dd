//! A catalog tool's contract: its definition (the generic tool's, with the catalog's name,
//! words and schema), and its arguments: the common ones checked as submit_job checks them,
//! the model's against the tool's own schema, then sent to the model as the JSON body.

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value};

use super::{AsyncTool, Catalog, PipelineTool, ASYNC_COMMON_ARGUMENTS, PIPELINE_COMMON_ARGUMENTS};
use crate::config::ToolsConfig;
use crate::contract::{
    checked_idempotency_key, job_timings, validate_session_id, ToolArgs, ToolError,
    INVOCATION_TIMEOUT_SECS,
};
use domain::caller::Caller;
use domain::job::{Submission, DEFAULT_CONTENT_TYPE};
use domain::run::default_session_id;
use usecases::training::{RunParameter, TriggerRequest};

/// An async catalog tool as `tools/list` shows it: `generic` (submit_job's definition, so the
/// annotations, the output schema and the task support are the same) with the tool's own name,
/// title, description and input schema, plus the arguments every async tool takes.
pub fn async_tool_definition(tool: &AsyncTool, generic: &Tool) -> Tool {
    let spec = &tool.spec;
    let words = Words {
        name: &spec.name,
        title: spec.title.as_deref(),
        description: &spec.description,
    };
    catalog_definition(
        generic,
        words,
        spec.input_schema.clone(),
        &ASYNC_COMMON_ARGUMENTS,
    )
}

/// A pipeline catalog tool as `tools/list` shows it: `generic` (trigger_training's definition)
/// with the tool's name, title and description, and its arguments (each a pipeline
/// parameter's, required where the catalog says so) beside `session_id` and `idempotency_key`
/// (both optional: a run without a session gets one, named in the answer).
pub fn pipeline_tool_definition(tool: &PipelineTool, generic: &Tool) -> Tool {
    let spec = &tool.spec;
    let input = spec.arguments_schema();
    let words = Words {
        name: &spec.name,
        title: spec.title.as_deref(),
        description: &spec.description,
    };
    let mut definition = catalog_definition(generic, words, input, &PIPELINE_COMMON_ARGUMENTS);
    let session = std::sync::Arc::make_mut(&mut definition.input_schema)
        .get_mut("properties")
        .and_then(|p| p.get_mut("session_id"))
        .and_then(Value::as_object_mut);
    if let Some(session) = session {
        session.insert("description".into(), SESSION_ID_OPTIONAL.into());
    }
    definition
}

/// A pipeline catalog tool's `session_id`, which (unlike trigger_training's) may be left out.
const SESSION_ID_OPTIONAL: &str = "The caller's session; check_training_result lists the runs it \
    triggered. Letters, digits and `_ . : -`, at most 128 characters. Optional: a run started \
    without one gets a session of its own (the same for a retry with the same idempotency_key), \
    named in the answer.";

/// What the agent chooses a tool by.
struct Words<'a> {
    name: &'a str,
    title: Option<&'a str>,
    description: &'a str,
}

/// `generic`'s definition with the catalog tool's words, and its input schema: `input`, its
/// properties beside the `common` arguments' schemas as `generic` declares them.
fn catalog_definition(
    generic: &Tool,
    words: Words<'_>,
    mut input: Map<String, Value>,
    common: &[&str],
) -> Tool {
    let mut properties = match input.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    let declared = generic
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    for name in common {
        if let Some(schema) = declared.and_then(|d| d.get(*name)) {
            properties.insert((*name).to_owned(), schema.clone());
        }
    }
    input.insert("properties".into(), Value::Object(properties));
    let mut definition = generic.clone();
    definition.name = words.name.to_owned().into();
    definition.title = words.title.map(str::to_owned);
    definition.description = Some(words.description.to_owned().into());
    definition.input_schema = std::sync::Arc::new(input);
    if let Some(annotations) = definition.annotations.as_mut() {
        annotations.title = definition.title.clone();
    }
    definition
}

/// `idempotency_key`, taken out of a catalog tool's arguments and checked.
fn idempotency_key(arguments: &mut JsonObject) -> Result<Option<String>, ToolError> {
    match arguments.remove("idempotency_key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => checked_idempotency_key(Some(key)),
        Some(_) => Err(ToolError::invalid("`idempotency_key` must be a string")),
    }
}

/// A call to a catalog tool, before it is checked: the tool, and the arguments as sent.
pub struct CatalogCall<'a, T> {
    pub catalog: &'a Catalog,
    pub tool: &'a T,
    pub arguments: JsonObject,
}

/// A call to a pipeline catalog tool.
pub type CatalogRunArgs<'a> = CatalogCall<'a, PipelineTool>;

/// A call to an async catalog tool.
pub type CatalogJobArgs<'a> = CatalogCall<'a, AsyncTool>;

impl ToolArgs for CatalogRunArgs<'_> {
    type Valid = TriggerRequest;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<TriggerRequest, ToolError> {
        let spec = &self.tool.spec;
        let mut given = self.arguments;
        let session_id = match given.remove("session_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(session_id)) => {
                validate_session_id(&session_id)?;
                Some(session_id)
            }
            Some(_) => return Err(ToolError::invalid("`session_id` must be a string")),
        };
        let idempotency_key = idempotency_key(&mut given)?;
        // Optional here: the run still needs a session (its partition, and what the router
        // finds in its description), so one is made and the answer names it.
        let session_id = session_id
            .unwrap_or_else(|| default_session_id(&spec.pipeline, idempotency_key.as_deref()));
        let given = Value::Object(given);
        self.catalog
            .check_pipeline_arguments(self.tool, &given)
            .map_err(|e| ToolError::invalid(format!("{e}. Nothing was started.")))?;
        let mut parameters = Vec::new();
        for (argument, value) in given.as_object().into_iter().flatten() {
            let Some(p) = spec.parameters.get(argument) else {
                continue; // the schema allows nothing else
            };
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => continue, // scalars only, by the catalog's check
            };
            // Held to the allow-lists where every tool's run is: `training::admit`.
            parameters.push(RunParameter::new(argument, &p.parameter, value));
        }
        Ok(TriggerRequest {
            owner: caller.owner.clone(),
            pipeline_name: spec.pipeline.clone(),
            session_id: session_id.into(),
            parameters,
            idempotency_key,
            max_parallel_steps: config.training.max_parallel_steps,
            result_ttl_secs: config.jobs.result_ttl_secs,
        })
    }

    fn trace(valid: &TriggerRequest, span: &tracing::Span) {
        span.record("session_id", valid.session_id.as_str());
    }
}

impl ToolArgs for CatalogJobArgs<'_> {
    type Valid = Submission;

    fn validate(self, config: &ToolsConfig, caller: &Caller) -> Result<Submission, ToolError> {
        let spec = &self.tool.spec;
        let mut model = self.arguments;
        let idempotency_key = idempotency_key(&mut model)?;
        let (invocation_timeout_secs, request_ttl_secs) = job_timings(
            seconds(&mut model, "invocation_timeout_secs")?
                .or(spec.invocation_timeout_secs)
                .or(INVOCATION_TIMEOUT_SECS.default),
            seconds(&mut model, "request_ttl_secs")?
                .or(spec.request_ttl_secs)
                .or(Some(config.default_request_ttl_secs)),
        )?;
        let model = Value::Object(model);
        self.catalog
            .check_async_arguments(self.tool, &model)
            .map_err(|e| ToolError::invalid(format!("{e}. Nothing was sent to the model.")))?;
        // Within MAX_INPUT_BYTES: the catalog's check measured them first.
        let input = serde_json::to_vec(&model).expect("JSON values serialize");
        Ok(Submission::new(
            &caller.owner,
            &spec.endpoint,
            &config.io_bucket,
            input,
            idempotency_key.as_deref(),
            invocation_timeout_secs,
            request_ttl_secs,
        )
        .with_content_type(
            spec.content_type.as_deref().unwrap_or(DEFAULT_CONTENT_TYPE),
            spec.accept.as_deref(),
        )
        .with_inline_max(config.inline_input_max_bytes, &config.io_bucket))
    }

    fn trace(valid: &Submission, span: &tracing::Span) {
        span.record("inference_id", valid.inference_id.as_str());
    }
}

/// A common argument in whole seconds (numbers sent as strings are already numbers here).
fn seconds(arguments: &mut Map<String, Value>, name: &str) -> Result<Option<u32>, ToolError> {
    match arguments.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ToolError::invalid(format!("`{name}` must be a whole number of seconds"))
            }),
        Some(_) => Err(ToolError::invalid(format!(
            "`{name}` must be a whole number of seconds"
        ))),
    }
}
