//! The catalog's checks: the file's shape, then each tool's fields, then the schemas compiled
//! (at a cold start, a schema that does not compile refuses its own tool alone). Every mistake is
//! collected, each with its tool and field, so one run names them all.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::schema::{ToolSchema, DRAFT_2020_12};
use super::*;
use crate::contract::{policy, INVOCATION_TIMEOUT_SECS, REQUEST_TTL_SECS};

/// Where a mistake is: the tool's name when it has a usable one, else its place in the file.
fn tool_label(kind: &str, index: usize, raw: &Value) -> String {
    match raw.get("name").and_then(Value::as_str) {
        Some(name) if is_tool_name(name) => name.to_owned(),
        _ => format!("{kind}[{index}]"),
    }
}

struct Mistakes(Vec<CatalogMistake>);

impl Mistakes {
    fn add(&mut self, tool: &str, field: &str, problem: impl Into<String>) {
        self.0.push(CatalogMistake {
            tool: tool.to_owned(),
            field: field.to_owned(),
            problem: problem.into(),
        });
    }
}

pub(super) fn catalog(text: &str, schemas: Schemas) -> Result<Catalog, Vec<CatalogMistake>> {
    let schema = |source: Map<String, Value>| match schemas {
        Schemas::CompiledNow => ToolSchema::compiled_now(&source),
        Schemas::EachAlone => Ok(ToolSchema::compiled_alone(&source)),
    };
    let mut m = Mistakes(Vec::new());
    let file: CatalogFile = match serde_json::from_str::<Value>(text) {
        Err(e) => {
            m.add(WHOLE_FILE, WHOLE_FILE, format!("is not JSON: {e}"));
            return Err(m.0);
        }
        Ok(value) => match serde_path_to_error::deserialize(&value) {
            Ok(file) => file,
            Err(e) => {
                let field = e.path().to_string();
                m.add(WHOLE_FILE, &field, e.into_inner().to_string());
                return Err(m.0);
            }
        },
    };
    let total = file.async_tools.len() + file.pipeline_tools.len();
    if total == 0 {
        m.add(
            WHOLE_FILE,
            "async_tools",
            "the catalog declares no tool (give async_tools, pipeline_tools or both)",
        );
    }
    if total > MAX_TOOLS {
        m.add(
            WHOLE_FILE,
            WHOLE_FILE,
            format!("{total} tools; at most {MAX_TOOLS}"),
        );
    }
    let mut names = BTreeSet::new();
    let mut async_tools = Vec::new();
    for (i, raw) in file.async_tools.iter().enumerate() {
        let Some((label, spec)) = read::<AsyncToolSpec>(&mut m, &mut names, "async_tools", i, raw)
        else {
            continue;
        };
        async_fields(&mut m, &label, &spec);
        match schema(spec.input_schema.clone()) {
            Ok(input) => async_tools.push(AsyncTool {
                spec,
                input: Arc::new(input),
            }),
            Err(problem) => m.add(&label, "input_schema", problem),
        }
    }
    let mut pipeline_tools = Vec::new();
    for (i, raw) in file.pipeline_tools.iter().enumerate() {
        let Some((label, spec)) =
            read::<PipelineToolSpec>(&mut m, &mut names, "pipeline_tools", i, raw)
        else {
            continue;
        };
        pipeline_fields(&mut m, &label, &spec);
        match schema(spec.arguments_schema()) {
            Ok(input) => pipeline_tools.push(PipelineTool {
                spec,
                input: Arc::new(input),
            }),
            Err(problem) => m.add(&label, "parameters", problem),
        }
    }
    if m.0.is_empty() {
        Ok(Catalog {
            async_tools,
            pipeline_tools,
        })
    } else {
        Err(m.0)
    }
}

/// What every tool has: the words an agent chooses it by.
trait Named {
    fn words(&self) -> (&str, &str, Option<&str>);
}

impl Named for AsyncToolSpec {
    fn words(&self) -> (&str, &str, Option<&str>) {
        (&self.name, &self.description, self.title.as_deref())
    }
}

impl Named for PipelineToolSpec {
    fn words(&self) -> (&str, &str, Option<&str>) {
        (&self.name, &self.description, self.title.as_deref())
    }
}

/// Entry `index` of `kind` read as its type, its words checked and its name unique: the tool's
/// label for its mistakes, and the entry; None when it could not be read.
fn read<T: serde::de::DeserializeOwned + Named>(
    m: &mut Mistakes,
    names: &mut BTreeSet<String>,
    kind: &str,
    index: usize,
    raw: &Value,
) -> Option<(String, T)> {
    let label = tool_label(kind, index, raw);
    let spec = spec::<T>(m, &label, raw)?;
    let (name, description, title) = spec.words();
    common_fields(m, &label, name, description, title);
    unique(m, names, &label, name);
    Some((label, spec))
}

/// A tool's entry read as its type; a field missing, unknown or of the wrong type is named.
fn spec<T: serde::de::DeserializeOwned>(m: &mut Mistakes, label: &str, raw: &Value) -> Option<T> {
    match serde_path_to_error::deserialize(raw) {
        Ok(spec) => Some(spec),
        Err(e) => {
            let path = e.path().to_string();
            let field = if path == "." {
                "(tool)".to_owned()
            } else {
                path
            };
            m.add(label, &field, e.into_inner().to_string());
            None
        }
    }
}

/// MCP's advice for tool names, kept to what every client and the AgentCore Gateway take.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn common_fields(
    m: &mut Mistakes,
    label: &str,
    name: &str,
    description: &str,
    title: Option<&str>,
) {
    if !is_tool_name(name) {
        m.add(label, "name", "must be 1 to 64 letters, digits, `_` or `-`");
    }
    if policy::is_reserved(name) {
        m.add(
            label,
            "name",
            format!("{name} is a built-in tool's or a protocol method's name; choose another"),
        );
    }
    if description.trim().is_empty() || description.len() > 4096 {
        m.add(
            label,
            "description",
            "must say what the tool does, in 1 to 4096 bytes",
        );
    }
    if title.is_some_and(|t| t.trim().is_empty() || t.len() > 128) {
        m.add(label, "title", "must be 1 to 128 bytes");
    }
}

fn unique(m: &mut Mistakes, names: &mut BTreeSet<String>, label: &str, name: &str) {
    if !names.insert(name.to_owned()) {
        m.add(label, "name", format!("{name} is declared twice"));
    }
}

/// SageMaker's endpoint and pipeline names as their ARNs spell them: lowercase letters, digits
/// and hyphens inside. SageMaker lowercases a name in its ARN, and the stack grants each name by
/// its ARN (the template's `CatalogEndpointNames` and `CatalogPipelineNames` patterns, which
/// scripts/catalog.py applies too), so a name with a capital would be refused by the deploy.
fn is_sagemaker_name(name: &str, max: usize) -> bool {
    let bytes = name.as_bytes();
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=max).contains(&bytes.len())
        && bytes.iter().all(|b| lower_or_digit(b) || *b == b'-')
        && lower_or_digit(&bytes[0])
        && lower_or_digit(&bytes[bytes.len() - 1])
}

/// `type/subtype`, with optional parameters: what SageMaker passes to the container as given.
fn is_mime_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim();
    let token = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
    };
    value.len() <= 256
        && value.is_ascii()
        && essence
            .split_once('/')
            .is_some_and(|(kind, sub)| token(kind) && token(sub))
}

fn async_fields(m: &mut Mistakes, label: &str, spec: &AsyncToolSpec) {
    if !is_sagemaker_name(&spec.endpoint, 63) {
        m.add(
            label,
            "endpoint",
            "must be a SageMaker endpoint name as its ARN spells it: 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        );
    }
    for (field, value) in [
        ("content_type", &spec.content_type),
        ("accept", &spec.accept),
    ] {
        if value.as_deref().is_some_and(|v| !is_mime_type(v)) {
            m.add(label, field, "must be a MIME type such as application/json");
        }
    }
    for (field, value, bounds) in [
        (
            "invocation_timeout_secs",
            spec.invocation_timeout_secs,
            INVOCATION_TIMEOUT_SECS,
        ),
        ("request_ttl_secs", spec.request_ttl_secs, REQUEST_TTL_SECS),
    ] {
        if value.is_some_and(|v| !(bounds.min..=bounds.max).contains(&v)) {
            m.add(
                label,
                field,
                format!("must be from {} to {}", bounds.min, bounds.max),
            );
        }
    }
    let schema = &spec.input_schema;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        m.add(
            label,
            "input_schema.type",
            "must be \"object\": a tool's arguments are an object",
        );
    }
    dialect(m, label, "input_schema", schema);
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for name in ASYNC_COMMON_ARGUMENTS {
            if properties.contains_key(name) {
                m.add(
                    label,
                    &format!("input_schema.properties.{name}"),
                    "is an argument every async tool takes; the model cannot have it",
                );
            }
        }
    }
}

fn pipeline_fields(m: &mut Mistakes, label: &str, spec: &PipelineToolSpec) {
    if !is_sagemaker_name(&spec.pipeline, 256) {
        m.add(
            label,
            "pipeline",
            "must be a SageMaker pipeline name as its ARN spells it: 1 to 256 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        );
    }
    let mut mapped = BTreeSet::new();
    for (argument, p) in &spec.parameters {
        let field = format!("parameters.{argument}");
        let is_argument = (1..=64).contains(&argument.len())
            && argument.starts_with(|c: char| c.is_ascii_lowercase())
            && argument
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !is_argument {
            m.add(
                label,
                &field,
                "an argument's name must be 1 to 64 lowercase letters, digits or `_`, starting with a letter",
            );
        }
        if PIPELINE_COMMON_ARGUMENTS.contains(&argument.as_str()) {
            m.add(
                label,
                &field,
                "is an argument every pipeline tool takes; map another name",
            );
        }
        let is_parameter = (1..=256).contains(&p.parameter.len())
            && p.parameter
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !is_parameter {
            m.add(
                label,
                &format!("{field}.parameter"),
                "must be a pipeline parameter name: 1 to 256 letters, digits, `-` or `_`",
            );
        } else if !mapped.insert(p.parameter.as_str()) {
            m.add(
                label,
                &format!("{field}.parameter"),
                format!("{} is set by two arguments", p.parameter),
            );
        }
        // A pipeline parameter is a String, Integer, Float or Boolean.
        let scalar = ["string", "integer", "number", "boolean"];
        if !p
            .schema
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| scalar.contains(&t))
        {
            m.add(
                label,
                &format!("{field}.schema.type"),
                "must be \"string\", \"integer\", \"number\" or \"boolean\" (a pipeline parameter's types)",
            );
        }
        dialect(m, label, &format!("{field}.schema"), &p.schema);
    }
}

/// The dialect: 2020-12, when a schema says at all.
fn dialect(m: &mut Mistakes, label: &str, field: &str, schema: &Map<String, Value>) {
    if let Some(said) = schema.get("$schema") {
        if said.as_str() != Some(DRAFT_2020_12) {
            m.add(
                label,
                &format!("{field}.$schema"),
                format!("must be {DRAFT_2020_12} or left out"),
            );
        }
    }
}
