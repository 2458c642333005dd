//! One `tools/call` without HTTP, for front doors that are not the Function URL (an AgentCore
//! Gateway target). It goes through the same rmcp router as an HTTP request does, so the tool,
//! its argument checks and its result (or protocol error) are exactly what an MCP client of the
//! Function URL gets.

use rmcp::model::{CallToolResult, ClientJsonRpcMessage, ErrorData, GetExtensions, JsonObject};
use rmcp::service::serve_directly;
use rmcp::transport::OneshotTransport;
use rmcp::RoleServer;
use serde_json::{json, Value};

use domain::caller::Principal;

use crate::{Backend, Tools};

/// Calls `name` with `arguments` as `caller` (whom the front door authenticated). `lambda`
/// carries the invocation's deadline, which bounds how long `check_job_status` may wait.
pub async fn call_tool<B: Backend>(
    tools: Tools<B>,
    caller: Principal,
    name: &str,
    arguments: Option<JsonObject>,
    lambda: Option<lambda_http::Context>,
) -> Result<CallToolResult, ErrorData> {
    let mut params = json!({ "name": name });
    if let Some(arguments) = arguments {
        params["arguments"] = Value::Object(arguments);
    }
    let result = request(tools, caller, "tools/call", params, lambda).await?;
    serde_json::from_value(result)
        .map_err(|e| ErrorData::internal_error(format!("tool result: {e}"), None))
}

/// One JSON-RPC request through the server, without HTTP: its result, or its error.
pub async fn request<B: Backend>(
    tools: Tools<B>,
    caller: Principal,
    method: &str,
    params: Value,
    lambda: Option<lambda_http::Context>,
) -> Result<Value, ErrorData> {
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let mut message: ClientJsonRpcMessage = serde_json::from_value(request)
        .map_err(|e| ErrorData::internal_error(format!("{method} request: {e}"), None))?;
    if let ClientJsonRpcMessage::Request(request) = &mut message {
        // The caller and the invocation (its deadline) where the Function URL's door hands
        // them over: on the request's HTTP parts, which rmcp puts in the extensions.
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.extensions.insert(caller);
        if let Some(lambda) = lambda {
            parts.extensions.insert(lambda);
        }
        request.request.extensions_mut().insert(parts);
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
    Ok(reply
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use rmcp::model::ErrorCode;
    use serde_json::json;

    use super::*;
    use crate::tools_tests::{world, World};

    fn object(value: Value) -> Option<JsonObject> {
        value.as_object().cloned()
    }

    /// `name` called with `arguments` by the local caller, no invocation context.
    async fn call(
        w: &World,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        call_tool(w.tools.clone(), Principal::Local, name, arguments, None).await
    }

    fn text(result: &CallToolResult) -> String {
        result.content[0].as_text().unwrap().text.clone()
    }

    #[tokio::test]
    async fn a_tool_error_is_a_result_with_is_error() {
        let w = world(&[]);
        let args = object(json!({"session_id": "no spaces allowed"}));
        let result = call(&w, "check_training_result", args).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            text(&result),
            "`session_id` \"no spaces allowed\" must be 1 to 128 letters, digits or `_ . : -`"
        );
    }

    #[tokio::test]
    async fn arguments_that_do_not_parse_are_a_tool_error_naming_the_field() {
        let w = world(&[]);
        let args = object(json!({"inference_id": "x", "wait": 3}));
        let result = call(&w, "check_job_status", args).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = text(&result);
        assert!(
            text == "unknown argument \"wait\"; this tool takes: inference_id, wait_secs",
            "{text}"
        );
        assert_eq!(w.deps.ports.jobs.calls(), (0, 0));
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        let w = world(&[]);
        let error = call(&w, "delete_everything", None).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error
                .message
                .starts_with("no tool is called \"delete_everything\"; the tools are: "),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("check_job_status"),
            "{}",
            error.message
        );
    }

    #[tokio::test]
    async fn a_tool_result_comes_back_structured() {
        let w = world(&[]);
        let args = object(json!({"session_id": "s"}));
        let result = call(&w, "check_training_result", args).await.unwrap();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(json!({"session_id": "s", "runs": []}))
        );
    }
}
