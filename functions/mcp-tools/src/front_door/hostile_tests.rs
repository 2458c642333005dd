//! What a hostile request costs at the door: the size first, the token before the body, and
//! every value the door bounds refused with a short quote before rmcp could echo it whole.

use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::*;
use crate::tools_tests::world;

fn door(
    max_body_bytes: usize,
) -> (
    FrontDoor<crate::tools_tests::FakePorts>,
    crate::tools_tests::World,
) {
    let w = world(&[]);
    let mut config = tests::config("bearer");
    config.allowed_hosts = vec!["mcp.example.com".into()];
    config.tools.max_body_bytes = max_body_bytes;
    (FrontDoor::new(config, w.deps.clone()), w)
}

/// A POST to /mcp as the oauth-mode tests build it, with `body` as it is and `headers` in
/// place of the defaults.
fn request(token: Option<&str>, headers: &[(&str, &str)], body: String) -> lambda_http::Request {
    let mut request = super::oauth_door_tests::request("POST", "/mcp", token, Value::Null);
    *request.body_mut() = lambda_http::Body::from(body);
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    request
}

/// The status and the body as text.
async fn answer(response: HttpResponse) -> (u16, String) {
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn zeros(n: usize) -> String {
    format!("[{}0]", "0,".repeat(n - 1))
}

fn submit_payload(payload: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"submit_job","arguments":{{"payload":{payload}}}}}}}"#
    )
}

#[tokio::test]
async fn a_body_is_never_read_before_its_token_and_never_past_its_size() {
    let (door, w) = door(5 * 1024 * 1024);
    // Too many values to build into a tree: without a token it is refused for the token, so it
    // was never parsed; with one, for its values.
    let wide = submit_payload(&zeros(crate::request_body::MAX_BODY_VALUES + 10));
    let (status, text) = answer(door.handle(request(None, &[], wide.clone())).await).await;
    assert_eq!(
        (status, text.as_str()),
        (401, "Unauthorized: a valid bearer token is required")
    );
    let (status, text) = answer(door.handle(request(Some("wrong"), &[], wide.clone())).await).await;
    assert_eq!(status, 401, "{text}");
    let (status, text) = answer(door.handle(request(Some("secret"), &[], wide)).await).await;
    assert_eq!(status, 413);
    assert!(text.contains("more than 250000 JSON values"), "{text}");
    assert_eq!(
        w.deps.ports.jobs.calls(),
        (0, 0),
        "nothing was read or written"
    );

    // Past MCP_MAX_BODY_BYTES: refused for its size, token or not, before anything else.
    let (door, _) = door_small();
    let big = submit_payload(&format!("\"{}\"", "x".repeat(2_000)));
    for token in [None, Some("secret")] {
        let (status, text) = answer(door.handle(request(token, &[], big.clone())).await).await;
        assert_eq!(status, 413);
        assert_eq!(
            text,
            "Payload Too Large: a request body may be at most 1024 bytes (MCP_MAX_BODY_BYTES)"
        );
    }
    // Within both bounds it is served.
    let (status, text) = answer(
        door.handle(request(Some("secret"), &[], submit_payload(r#"{"a":1}"#)))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("inference_id"), "{text}");
}

fn door_small() -> (
    FrontDoor<crate::tools_tests::FakePorts>,
    crate::tools_tests::World,
) {
    door(1024)
}

#[tokio::test]
async fn long_methods_versions_ids_and_progress_tokens_are_refused_with_a_short_quote() {
    let (door, w) = door(5 * 1024 * 1024);
    let ask = |body: String| door.handle(request(Some("secret"), &[], body));

    let method = "m".repeat(300_000);
    let (status, text) =
        answer(ask(format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}"}}"#)).await).await;
    assert_eq!(status, 404);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], -32601);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Method not found: \"mmm"), "{message}");
    assert!(
        message.ends_with("… (300000 bytes)") && message.len() < 300,
        "{message}"
    );

    let token = "t".repeat(100_000);
    let call = json!({"jsonrpc": "2.0", "id": "c-1", "method": "tools/call",
        "params": {"name": "check_job_status", "arguments": {"inference_id": "x", "wait_secs": 12},
                   "_meta": {"progressToken": token}}});
    let (status, text) = answer(ask(call.to_string()).await).await;
    assert_eq!(status, 400);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["id"], "c-1");
    assert_eq!(reply["error"]["code"], -32602);
    assert!(text.len() < 500, "{text}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("_meta.progressToken"));

    let version = "2".repeat(300_000);
    let initialize = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let (status, text) = answer(ask(initialize.to_string()).await).await;
    assert_eq!(status, 400);
    assert!(text.len() < 500 && text.contains("-32602"), "{text}");

    let header = "2".repeat(7_000);
    let (status, text) = answer(
        door.handle(request(
            Some("secret"),
            &[("mcp-protocol-version", &header)],
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(),
        ))
        .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        text.starts_with("Bad Request: Unsupported MCP-Protocol-Version: \"222")
            && text.ends_with("… (7000 bytes)")
            && text.len() < 300,
        "{text}"
    );

    let id = "i".repeat(50_000);
    let (status, text) = answer(
        ask(format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/list"}}"#
        ))
        .await,
    )
    .await;
    assert_eq!(status, 400);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    assert!(text.len() < 500, "{text}");

    // An unknown tool of any length is rmcp's "tool not found", never the name back whole.
    let name = "n".repeat(300_000);
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": name, "arguments": {}}});
    let (_, text) = answer(ask(call.to_string()).await).await;
    assert!(
        text.len() < 2_000,
        "{} bytes: {}",
        text.len(),
        &text[..200.min(text.len())]
    );
    assert_eq!(
        w.deps.ports.jobs.calls(),
        (0, 0),
        "nothing was read or written"
    );

    // A token of 256 bytes is a token.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "check_job_status", "arguments": {"inference_id": "x"},
                   "_meta": {"progressToken": "t".repeat(256)}}});
    let (status, text) = answer(ask(call.to_string()).await).await;
    assert_eq!(status, 200, "{text}");
}
