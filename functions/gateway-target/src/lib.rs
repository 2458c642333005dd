//! gateway-target: the same tools as mcp-tools, behind Amazon Bedrock AgentCore Gateway. The
//! Gateway invokes this function directly: the event is the tool's arguments, and the client
//! context names the tool as `<target>___<tool>`. The answer is the tool's `CallToolResult`.
//! Each call goes through mcp-tools' own router ([`mcp_tools::direct`]), so results,
//! validation and error messages are exactly those of the Function URL server.

pub mod schema;

use std::collections::HashMap;

use lambda_runtime::{Diagnostic, LambdaEvent};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use domain::caller::Principal;
use mcp_tools::direct::call_tool;
use mcp_tools::request_body::{check_values, BodyRefusal};
use mcp_tools::{Backend, Tools};

/// The client-context key that carries the tool's qualified name.
pub const TOOL_NAME_KEY: &str = "bedrockAgentCoreToolName";
/// Between the target's name and the tool's in a qualified name.
pub const TARGET_SEPARATOR: &str = "___";

/// A request this function cannot turn into a tool call. It is answered as a function error,
/// as an MCP server answers a protocol error: the Gateway reports it to its client.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "the invocation names no tool: AgentCore Gateway sends it in the client context as \
         custom.{TOOL_NAME_KEY} = \"<target>{TARGET_SEPARATOR}<tool>\""
    )]
    NoToolName,
    #[error(
        "tool name {} has no target prefix: AgentCore Gateway sends \
         \"<target>{TARGET_SEPARATOR}<tool>\"",
        domain::util::quote(name)
    )]
    NoTargetPrefix { name: String },
    #[error("the event is {bytes} bytes; at most {limit} are read (MCP_MAX_BODY_BYTES)")]
    TooLarge { bytes: usize, limit: usize },
    #[error("the event's arguments: {0}")]
    TooManyValues(BodyRefusal),
    #[error("the event must be a JSON object of the tool's arguments, not {found}")]
    ArgumentsNotAnObject { found: &'static str },
    #[error("{tool}: {}", .error.message)]
    Protocol { tool: String, error: ErrorData },
}

impl From<GatewayError> for Diagnostic {
    fn from(error: GatewayError) -> Self {
        let error_type = match &error {
            GatewayError::NoToolName => "NoToolName",
            GatewayError::NoTargetPrefix { .. } => "NoTargetPrefix",
            GatewayError::ArgumentsNotAnObject { .. } => "InvalidArguments",
            GatewayError::TooLarge { .. } | GatewayError::TooManyValues(_) => "PayloadTooLarge",
            GatewayError::Protocol { .. } => "McpError",
        };
        Diagnostic {
            error_type: error_type.into(),
            error_message: error.to_string(),
        }
    }
}

/// The tool's own name, from the qualified name in the client context's custom values.
pub fn tool_name(custom: Option<&HashMap<String, String>>) -> Result<&str, GatewayError> {
    let qualified = custom
        .and_then(|c| c.get(TOOL_NAME_KEY))
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .ok_or(GatewayError::NoToolName)?;
    match qualified.split_once(TARGET_SEPARATOR) {
        Some((target, tool)) if !target.is_empty() && !tool.is_empty() => Ok(tool),
        _ => Err(GatewayError::NoTargetPrefix {
            name: qualified.to_owned(),
        }),
    }
}

/// The event as tool arguments: an object, or nothing for a tool called without any.
pub fn arguments(event: Value) -> Result<Option<JsonObject>, GatewayError> {
    let found = match event {
        Value::Object(arguments) => return Ok(Some(arguments)),
        Value::Null => return Ok(None),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
    };
    Err(GatewayError::ArgumentsNotAnObject { found })
}

/// The `CallToolResult` as the Gateway reads it: `content`, `structuredContent` (when the tool
/// gave one), `isError`.
pub fn gateway_result(result: CallToolResult) -> Value {
    let mut answer = json!({
        "content": result.content,
        "isError": result.is_error.unwrap_or(false),
    });
    if let Some(structured) = result.structured_content {
        answer["structuredContent"] = structured;
    }
    answer
}

/// The event as a JSON value, once its size and its count of values are within bounds (the
/// runtime hands it over as text, so nothing larger is built into a tree).
pub fn bounded_event(event: &RawValue, max_bytes: usize) -> Result<Value, GatewayError> {
    let text = event.get();
    if text.len() > max_bytes {
        return Err(GatewayError::TooLarge {
            bytes: text.len(),
            limit: max_bytes,
        });
    }
    check_values(text.as_bytes()).map_err(GatewayError::TooManyValues)?;
    // The runtime has read it as JSON already.
    Ok(serde_json::from_str(text).unwrap_or(Value::Null))
}

/// One Gateway invocation: one tool call. `max_bytes` is `MCP_MAX_BODY_BYTES`, as at the
/// Function URL.
pub async fn handle<B: Backend>(
    tools: Tools<B>,
    max_bytes: usize,
    event: LambdaEvent<Box<RawValue>>,
) -> Result<Value, GatewayError> {
    let (event, context) = event.into_parts();
    let custom = context.client_context.as_ref().map(|c| &c.custom);
    let tool = tool_name(custom)?.to_owned();
    let arguments = arguments(bounded_event(&event, max_bytes)?)?;
    tracing::info!(tool, "tool call from AgentCore Gateway");
    // The Gateway invokes with its own role: every Gateway user is one caller (see DESIGN).
    match call_tool(tools, Principal::Gateway, &tool, arguments, Some(context)).await {
        Ok(result) => Ok(gateway_result(result)),
        Err(error) => Err(GatewayError::Protocol { tool, error }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom(name: &str) -> HashMap<String, String> {
        HashMap::from([(TOOL_NAME_KEY.to_owned(), name.to_owned())])
    }

    #[test]
    fn the_target_prefix_is_stripped() {
        assert_eq!(
            tool_name(Some(&custom("mcp-tools___submit_job"))).unwrap(),
            "submit_job"
        );
        assert_eq!(
            tool_name(Some(&custom("t___check_job_status"))).unwrap(),
            "check_job_status"
        );
    }

    #[test]
    fn a_missing_or_unprefixed_name_is_refused_with_what_was_expected() {
        assert!(matches!(tool_name(None), Err(GatewayError::NoToolName)));
        assert!(matches!(
            tool_name(Some(&HashMap::new())),
            Err(GatewayError::NoToolName)
        ));
        assert!(matches!(
            tool_name(Some(&custom("  "))),
            Err(GatewayError::NoToolName)
        ));
        for name in ["submit_job", "___submit_job", "mcp-tools___"] {
            let err = tool_name(Some(&custom(name))).unwrap_err();
            assert!(matches!(err, GatewayError::NoTargetPrefix { .. }), "{name}");
            let text = err.to_string();
            assert!(
                text.contains(name) && text.contains("<target>___<tool>"),
                "{text}"
            );
        }
        // A long name is quoted short.
        let text = GatewayError::NoTargetPrefix {
            name: "x".repeat(10_000),
        }
        .to_string();
        assert!(
            text.len() < 400 && text.contains("10000 characters"),
            "{text}"
        );
        let diagnostic = Diagnostic::from(GatewayError::NoToolName);
        assert_eq!(diagnostic.error_type, "NoToolName");
        assert!(diagnostic.error_message.contains(TOOL_NAME_KEY));
    }

    #[test]
    fn an_event_past_its_size_or_values_is_refused_before_it_is_a_tree() {
        let raw = |text: String| RawValue::from_string(text).unwrap();
        let small = raw(r#"{"inference_id": "abc"}"#.into());
        assert_eq!(bounded_event(&small, 1_000).unwrap()["inference_id"], "abc");
        let err = bounded_event(&small, 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the event is 23 bytes; at most 10 are read (MCP_MAX_BODY_BYTES)"
        );
        let zeros = raw(format!(r#"{{"payload": [{}0]}}"#, "0,".repeat(600_000)));
        let err = bounded_event(&zeros, 6_000_000).unwrap_err();
        assert!(matches!(err, GatewayError::TooManyValues(_)), "{err}");
        assert_eq!(Diagnostic::from(err).error_type, "PayloadTooLarge");
    }

    #[test]
    fn the_event_must_be_an_object_of_arguments() {
        assert_eq!(arguments(json!({"a": 1})).unwrap().unwrap()["a"], 1);
        assert!(arguments(Value::Null).unwrap().is_none());
        let err = arguments(json!(["x"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the event must be a JSON object of the tool's arguments, not an array"
        );
    }
}
