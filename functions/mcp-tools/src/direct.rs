//! One `tools/call` without HTTP, for front doors that are not the Function URL (an AgentCore
//! Gateway target). It goes through the same rmcp router as an HTTP request does, so the tool,
//! its argument checks and its result (or protocol error) are exactly what an MCP client of the
//! Function URL gets.

use rmcp::model::{CallToolResult, ClientJsonRpcMessage, ErrorData, GetExtensions, JsonObject};
use rmcp::service::serve_directly;
use rmcp::transport::OneshotTransport;
use rmcp::RoleServer;
use serde_json::{json, Value};

use crate::Tools;

/// Calls `name` with `arguments`. `lambda` carries the invocation's deadline, which bounds how
/// long `check_job_status` may wait.
pub async fn call_tool(
    tools: Tools,
    name: &str,
    arguments: Option<JsonObject>,
    lambda: Option<lambda_http::Context>,
) -> Result<CallToolResult, ErrorData> {
    let mut params = json!({ "name": name });
    if let Some(arguments) = arguments {
        params["arguments"] = Value::Object(arguments);
    }
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let mut message: ClientJsonRpcMessage = serde_json::from_value(request)
        .map_err(|e| ErrorData::internal_error(format!("tools/call request: {e}"), None))?;
    if let (ClientJsonRpcMessage::Request(request), Some(lambda)) = (&mut message, lambda) {
        request.request.extensions_mut().insert(lambda);
    }

    let (transport, mut replies) = OneshotTransport::<RoleServer>::new(message);
    let running = serve_directly(tools, transport, None);
    let reply = replies.recv().await;
    // The transport closes itself after the one reply; this only reaps the service task.
    drop(running);
    let reply = reply.ok_or_else(|| ErrorData::internal_error("the tool gave no reply", None))?;

    let mut reply = serde_json::to_value(reply)
        .map_err(|e| ErrorData::internal_error(format!("tool reply: {e}"), None))?;
    if let Some(error) = reply.get_mut("error").map(Value::take) {
        return Err(serde_json::from_value(error)
            .unwrap_or_else(|e| ErrorData::internal_error(format!("tool error: {e}"), None)));
    }
    let result = reply
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null);
    serde_json::from_value(result)
        .map_err(|e| ErrorData::internal_error(format!("tool result: {e}"), None))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::ErrorCode;
    use serde_json::json;
    use shared::config::{Env, ToolsConfig};

    use super::*;
    use crate::Deps;

    /// Tools whose AWS calls would fail: these cases are all answered before any is made.
    async fn tools() -> Tools {
        let vars = [
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "e"),
            ("PIPELINE_NAME", "pl"),
        ];
        let config = ToolsConfig::from_env(&Env::from_lookup(move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }))
        .unwrap();
        Tools::new(Arc::new(Deps::connect(config).await))
    }

    fn object(value: Value) -> Option<JsonObject> {
        value.as_object().cloned()
    }

    fn text(result: &CallToolResult) -> String {
        result.content[0].as_text().unwrap().text.clone()
    }

    #[tokio::test]
    async fn a_tool_error_is_a_result_with_is_error() {
        let result = call_tool(
            tools().await,
            "check_training_result",
            object(json!({"session_id": "no spaces allowed"})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(text(&result).contains("session_id"), "{}", text(&result));
    }

    #[tokio::test]
    async fn arguments_that_do_not_parse_are_a_tool_error_naming_the_field() {
        let result = call_tool(
            tools().await,
            "check_job_status",
            object(json!({"inference_id": "x", "wait": 3})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = text(&result);
        assert!(
            text.contains("failed to deserialize parameters") && text.contains("wait"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        let error = call_tool(tools().await, "delete_everything", None, None)
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("delete_everything") || error.message.contains("tool"));
    }
}
