//! The target's inline tool schema, from the tools' own derived schemas. The Gateway takes a
//! narrow dialect of JSON Schema (`type`, `description`, `properties`, `required`, `items`, with
//! one type per schema) and rejects much of what schemars writes (`anyOf` with a null member,
//! `"default": null`, `"items": {}`), so each schema is rewritten into that dialect: references
//! inlined, nullable types made plain, other keywords dropped (ranges and defaults are in the
//! descriptions). A property whose schema has no type at all (any JSON, such as
//! `check_job_status`'s `result`) cannot be said in the dialect and is left out; it is never
//! required.

use rmcp::model::Tool;
use serde_json::{json, Map, Value};

/// The types the Gateway accepts.
pub const TYPES: [&str; 6] = ["string", "number", "object", "array", "boolean", "integer"];

/// Where the export goes, relative to the workspace root.
pub const JSON_PATH: &str = "infra/gateway-tool-schema.json";
pub const TEMPLATE_PATH: &str = "infra/template.yaml";
pub const BEGIN_MARKER: &str = "# BEGIN tool schema";
pub const END_MARKER: &str = "# END tool schema";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    #[error("{tool}: the schema at {path} cannot be said to AgentCore Gateway: {what}")]
    Unsupported {
        tool: String,
        path: String,
        what: String,
    },
    #[error("{TEMPLATE_PATH} has no `{BEGIN_MARKER}` … `{END_MARKER}` block for the tool schema")]
    NoTemplateBlock,
}

/// The `toolSchema.inlinePayload` list, as the AgentCore API takes it (camelCase keys).
pub fn inline_payload(tools: &[Tool]) -> Result<Value, SchemaError> {
    let mut payload = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool.name.to_string();
        let fail = |path: &str, what: &str| SchemaError::Unsupported {
            tool: name.clone(),
            path: path.to_owned(),
            what: what.to_owned(),
        };
        let input = Value::Object((*tool.input_schema).clone());
        let input = dialect(&input, &input, "inputSchema", &fail)?
            .ok_or_else(|| fail("inputSchema", "it has no type"))?;
        let mut definition = json!({
            "name": name,
            "description": tool.description.as_deref().unwrap_or_default(),
            "inputSchema": input,
        });
        if let Some(output) = &tool.output_schema {
            let output = Value::Object((**output).clone());
            if let Some(output) = dialect(&output, &output, "outputSchema", &fail)? {
                definition["outputSchema"] = output;
            }
        }
        payload.push(definition);
    }
    Ok(Value::Array(payload))
}

/// One schema in the Gateway's dialect; `None` when it has no type to say.
fn dialect(
    schema: &Value,
    root: &Value,
    path: &str,
    fail: &dyn Fn(&str, &str) -> SchemaError,
) -> Result<Option<Value>, SchemaError> {
    let Some(object) = schema.as_object() else {
        // `true` (anything) has no type to say.
        return Ok(None);
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/")
            .and_then(|p| p.split('/').try_fold(root, |v, key| v.get(key)))
            .ok_or_else(|| fail(path, &format!("unresolved reference {reference}")))?;
        let resolved = dialect(target, root, path, fail)?;
        return Ok(resolved.map(|mut r| {
            if let Some(description) = object.get("description") {
                r["description"] = description.clone();
            }
            r
        }));
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(members) = object.get(union).and_then(Value::as_array) {
            let members: Vec<&Value> = members.iter().filter(|m| !is_null_schema(m)).collect();
            let mut merged = object.clone();
            merged.remove(union);
            match members[..] {
                [only] => {
                    if let Some(only) = only.as_object() {
                        for (k, v) in only {
                            merged.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
                // Members of one type (SageMaker's known words, or a later one) are that type:
                // the dialect keeps no `enum` anyway.
                _ => match one_type(&members) {
                    Some(ty) => {
                        merged.entry("type").or_insert_with(|| json!(ty));
                    }
                    None => {
                        return Err(fail(
                            path,
                            &format!("{union} of more than one non-null schema"),
                        ))
                    }
                },
            }
            return dialect(&Value::Object(merged), root, path, fail);
        }
    }

    let ty = match object.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(types)) => {
            let mut types = types.iter().filter(|t| t.as_str() != Some("null"));
            match (types.next().and_then(Value::as_str), types.next()) {
                (Some(t), None) => Some(t.to_owned()),
                _ => return Err(fail(path, "more than one non-null type")),
            }
        }
        Some(other) => return Err(fail(path, &format!("type {other}"))),
        None if object.contains_key("properties") => Some("object".to_owned()),
        None => None,
    };
    let Some(ty) = ty else { return Ok(None) };
    if !TYPES.contains(&ty.as_str()) {
        return Err(fail(path, &format!("type {ty:?}")));
    }

    let mut out = Map::new();
    out.insert("type".into(), Value::String(ty.clone()));
    if let Some(description) = object.get("description").and_then(Value::as_str) {
        out.insert("description".into(), Value::String(description.to_owned()));
    }
    if ty == "object" {
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            let mut kept = Map::new();
            for (name, property) in properties {
                let at = format!("{path}.properties.{name}");
                if let Some(property) = dialect(property, root, &at, fail)? {
                    kept.insert(name.clone(), property);
                }
            }
            let required: Vec<Value> = object
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r.as_str().is_some_and(|r| kept.contains_key(r)))
                .cloned()
                .collect();
            if !kept.is_empty() {
                out.insert("properties".into(), Value::Object(kept));
            }
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
        }
    }
    if ty == "array" {
        if let Some(items) = object.get("items") {
            if let Some(items) = dialect(items, root, &format!("{path}.items"), fail)? {
                out.insert("items".into(), items);
            }
        }
    }
    Ok(Some(Value::Object(out)))
}

/// The type every member of a union has, when they all have the same one.
fn one_type(members: &[&Value]) -> Option<String> {
    let mut types = members
        .iter()
        .map(|m| m.get("type").and_then(Value::as_str));
    let first = types.next()??;
    types.all(|t| t == Some(first)).then(|| first.to_owned())
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The same payload with CloudFormation's PascalCase keys (`AWS::BedrockAgentCore::GatewayTarget`).
/// Property names inside `properties` are the tools' own and stay as they are.
pub fn cloudformation(payload: &Value) -> Value {
    fn pascal(key: &str) -> String {
        let mut chars = key.chars();
        chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }
    fn walk(value: &Value, keys_are_names: bool) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, false)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let key = if keys_are_names { k.clone() } else { pascal(k) };
                        // Under "properties" the keys are property names; `required` lists them.
                        let value = match k.as_str() {
                            "properties" if !keys_are_names => walk(v, true),
                            "required" | "description" | "name" if !keys_are_names => v.clone(),
                            _ => walk(v, false),
                        };
                        (key, value)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    walk(payload, false)
}

/// The JSON file as written: pretty, with a final newline.
pub fn render_json(payload: &Value) -> String {
    let mut text = serde_json::to_string_pretty(payload).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// The template with the lines between the markers replaced by `InlinePayload:` and the
/// payload (JSON is YAML), indented like the markers.
pub fn with_template_block(template: &str, payload: &Value) -> Result<String, SchemaError> {
    let lines: Vec<&str> = template.lines().collect();
    let begin = lines
        .iter()
        .position(|l| l.trim_start().starts_with(BEGIN_MARKER))
        .ok_or(SchemaError::NoTemplateBlock)?;
    let end = lines[begin..]
        .iter()
        .position(|l| l.trim_start().starts_with(END_MARKER))
        .map(|i| begin + i)
        .ok_or(SchemaError::NoTemplateBlock)?;
    let indent = &lines[begin][..lines[begin].len() - lines[begin].trim_start().len()];
    let body = serde_json::to_string_pretty(&cloudformation(payload)).expect("serializes");
    let mut out: Vec<String> = lines[..=begin].iter().map(|l| l.to_string()).collect();
    out.push(format!("{indent}InlinePayload:"));
    out.extend(body.lines().map(|l| format!("{indent}  {l}")));
    out.extend(lines[end..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn payload() -> Value {
        inline_payload(&mcp_tools::tool_definitions()).unwrap()
    }

    /// Every schema in the payload uses only the Gateway's keywords and types.
    fn assert_dialect(schema: &Value, path: &str) {
        let object = schema
            .as_object()
            .unwrap_or_else(|| panic!("{path}: not an object"));
        for key in object.keys() {
            assert!(
                ["type", "description", "properties", "required", "items"].contains(&key.as_str()),
                "{path}: keyword {key}"
            );
        }
        let ty = object["type"]
            .as_str()
            .unwrap_or_else(|| panic!("{path}: type"));
        assert!(TYPES.contains(&ty), "{path}: type {ty}");
        if let Some(properties) = object.get("properties") {
            for (name, property) in properties.as_object().unwrap() {
                assert_dialect(property, &format!("{path}.{name}"));
            }
        }
        if let Some(items) = object.get("items") {
            assert_dialect(items, &format!("{path}[]"));
        }
        for required in object
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            assert!(
                object["properties"]
                    .get(required.as_str().unwrap())
                    .is_some(),
                "{path}: {required}"
            );
        }
    }

    #[test]
    fn every_tool_is_exported_in_the_gateway_dialect() {
        let payload = payload();
        let names: Vec<&str> = payload
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        let mut expected: Vec<String> = mcp_tools::tool_definitions()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        expected.sort();
        assert_eq!(names, expected);
        for tool in payload.as_array().unwrap() {
            assert!(!tool["description"].as_str().unwrap().is_empty());
            assert_dialect(&tool["inputSchema"], &format!("{}.input", tool["name"]));
            assert_dialect(&tool["outputSchema"], &format!("{}.output", tool["name"]));
        }
        let text = render_json(&payload);
        for rejected in [
            "anyOf",
            "\"null\"",
            "\"default\"",
            "\"items\": {}",
            "$ref",
            "$defs",
        ] {
            assert!(!text.contains(rejected), "{rejected} in the export");
        }
    }

    #[test]
    fn nullable_types_and_references_are_made_plain() {
        let by_name = |name: &str| {
            payload()
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == name)
                .cloned()
                .unwrap()
        };
        let submit = by_name("submit_job");
        assert_eq!(
            submit["inputSchema"]["properties"]["invocation_timeout_secs"]["type"],
            "integer"
        );
        assert_eq!(
            submit["inputSchema"]["properties"]["payload"]["type"],
            "object"
        );
        let runs = &by_name("check_training_result")["outputSchema"]["properties"]["runs"];
        assert_eq!(runs["items"]["type"], "object");
        assert_eq!(
            runs["items"]["required"],
            json!(["execution_arn", "status"])
        );
        // SageMaker's words, or a later one: one type in the dialect.
        assert_eq!(
            runs["items"]["properties"]["status"]["type"],
            json!("string")
        );
        // Any JSON has no type in the dialect: left out, never required.
        let status = by_name("check_job_status");
        assert!(status["outputSchema"]["properties"].get("result").is_none());
        assert!(status["outputSchema"]["properties"]
            .get("result_url")
            .is_some());
    }

    #[test]
    fn what_the_dialect_cannot_say_is_refused_by_name() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "t",
            "inputSchema": {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}
        }))
        .unwrap();
        let err = inline_payload(&[tool]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: the schema at inputSchema.properties.x cannot be said to AgentCore Gateway: \
             anyOf of more than one non-null schema"
        );
    }

    #[test]
    fn cloudformation_keys_are_pascal_case_but_property_names_are_kept() {
        let cfn = cloudformation(&json!([{"name": "t", "description": "d", "inputSchema":
            {"type": "object", "properties": {"session_id": {"type": "string", "description": "x"}},
             "required": ["session_id"]}}]));
        assert_eq!(
            cfn,
            json!([{"Name": "t", "Description": "d", "InputSchema":
                {"Type": "object", "Properties": {"session_id": {"Type": "string", "Description": "x"}},
                 "Required": ["session_id"]}}])
        );
    }

    #[test]
    fn the_checked_in_schema_and_template_are_current() {
        let payload = payload();
        let json_file = std::fs::read_to_string(root().join(JSON_PATH)).unwrap();
        assert!(
            json_file == render_json(&payload),
            "{JSON_PATH} is out of date: run `make tool-schema`"
        );
        let template = std::fs::read_to_string(root().join(TEMPLATE_PATH)).unwrap();
        assert!(
            template == with_template_block(&template, &payload).unwrap(),
            "the tool schema in {TEMPLATE_PATH} is out of date: run `make tool-schema`"
        );
    }

    #[test]
    fn a_catalogs_tools_are_said_to_the_gateway_in_place_of_submit_job_and_trigger_training() {
        let text = std::fs::read_to_string(root().join("infra/catalog.example.json")).unwrap();
        let catalog = mcp_tools::catalog::Catalog::parse(&text).unwrap();
        let payload = inline_payload(&mcp_tools::catalog_tool_definitions(&catalog)).unwrap();
        let mut names: Vec<&str> = payload
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "answer_training_input",
                "approve_model_package",
                "check_job_status",
                "check_training_result",
                "check_training_status",
                "get_model_provenance",
                "retrain_intent_classifier",
                "score_churn_risk",
                "summarize_document"
            ]
        );
        for tool in payload.as_array().unwrap() {
            assert_dialect(&tool["inputSchema"], &format!("{}.input", tool["name"]));
        }
        let churn = payload
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "score_churn_risk")
            .unwrap();
        let customer = &churn["inputSchema"]["properties"]["customers"]["items"];
        assert_eq!(customer["properties"]["tenure_months"]["type"], "integer");
    }
}
