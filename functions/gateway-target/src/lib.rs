//! gateway-target: the same tools as mcp-tools, behind Amazon Bedrock AgentCore Gateway. The
//! Gateway invokes this function directly: the event is the tool's arguments, and the client
//! context names the tool as `<target>___<tool>`. The answer is the tool's `CallToolResult`.
//! Each call goes through mcp-tools' own router ([`mcp_tools::direct`]), so results,
//! validation and error messages are exactly those of the Function URL server.

pub mod schema;

use std::collections::HashMap;

use lambda_runtime::{Diagnostic, LambdaEvent};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use serde_json::{json, Value};

use mcp_tools::direct::call_tool;
use mcp_tools::{Backend, Tools};
use shared::domain::caller::Principal;

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
        "tool name {name:?} has no target prefix: AgentCore Gateway sends \
         \"<target>{TARGET_SEPARATOR}<tool>\""
    )]
    NoTargetPrefix { name: String },
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

/// One Gateway invocation: one tool call.
pub async fn handle<B: Backend>(
    tools: Tools<B>,
    event: LambdaEvent<Value>,
) -> Result<Value, GatewayError> {
    let (event, context) = event.into_parts();
    let custom = context.client_context.as_ref().map(|c| &c.custom);
    let tool = tool_name(custom)?.to_owned();
    let arguments = arguments(event)?;
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
        let diagnostic = Diagnostic::from(GatewayError::NoToolName);
        assert_eq!(diagnostic.error_type, "NoToolName");
        assert!(diagnostic.error_message.contains(TOOL_NAME_KEY));
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
