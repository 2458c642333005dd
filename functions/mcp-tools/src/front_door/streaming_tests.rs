//! Every reply as the streaming entry point sends it (`lambda_http::StreamAdapter`, what
//! `streaming_runtime` wraps the door in): the prelude's status and headers, and the body
//! whole. A buffered reply under the streaming entry point has come back empty before
//! (aws-lambda-rust-runtime #805); none may here.

use std::convert::Infallible;
use std::sync::Arc;

use futures_util::StreamExt;
use lambda_http::lambda_runtime::{Context, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{service_fn, Service};
use serde_json::{json, Value};

use super::*;
use crate::tools_tests::{world, World};
use domain::caller::Principal;

/// A Function URL event (payload format 2.0).
pub(super) fn event(
    method: &str,
    path: &str,
    headers: Value,
    body: Option<Value>,
) -> LambdaRequest {
    let mut all = json!({"host": "abc.lambda-url.us-east-1.on.aws", "content-type": "application/json",
                         "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"});
    for (k, v) in headers.as_object().unwrap() {
        all[k] = v.clone();
    }
    serde_json::from_value(json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": all, "isBase64Encoded": false,
        "body": body.map(|b| b.to_string()),
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc", "domainName": "abc.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc", "requestId": "r", "routeKey": "$default", "stage": "$default",
            "time": "20/Nov/2026:10:00:00 +0000", "timeEpoch": 1_795_000_000_000u64,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "1.2.3.4", "userAgent": "t"}
        }
    }))
    .unwrap()
}

/// The door of `w`'s tools, unauthenticated, serving the Function URL's host.
pub(super) fn open_door(w: &World) -> Arc<FrontDoor<crate::tools_tests::FakePorts>> {
    let mut config = tests::config("none");
    config.allowed_hosts = vec!["*.lambda-url.us-east-1.on.aws".into()];
    Arc::new(FrontDoor::new(config, w.deps.clone()))
}

/// The status, the content type, and the body as the client receives it.
async fn streamed(
    door: &Arc<FrontDoor<crate::tools_tests::FakePorts>>,
    request: LambdaRequest,
) -> (u16, String, String) {
    let door = door.clone();
    let mut adapter =
        lambda_http::StreamAdapter::from(service_fn(move |r: lambda_http::Request| {
            let door = door.clone();
            async move { Ok::<_, Infallible>(door.handle(r).await) }
        }));
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    let prelude = response.metadata_prelude;
    assert_eq!(prelude.headers["x-accel-buffering"], "no");
    let content_type = prelude
        .headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let mut body = Vec::new();
    let mut stream = response.stream;
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    (
        prelude.status_code.as_u16(),
        content_type,
        String::from_utf8(body).unwrap(),
    )
}

fn call(name: &str, arguments: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

#[tokio::test(start_paused = true)]
async fn every_reply_arrives_whole_when_streamed() {
    let w = world(&[]);
    let door = open_door(&w);

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, content_type, body) =
        streamed(&door, event("POST", "/mcp", json!({}), Some(list))).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    let tools: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        tools["result"]["tools"].as_array().unwrap().len(),
        crate::contract::policy::BUILT_IN.len()
    );

    let submit = call("submit_job", json!({"document": "a"}), None);
    let (_, _, body) = streamed(&door, event("POST", "/mcp", json!({}), Some(submit))).await;
    let submitted: Value = serde_json::from_str(&body).unwrap();
    let id = submitted["result"]["structuredContent"]["inference_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A wait with a progress token: an event stream, its notifications, then the result.
    let wait = call(
        "check_job_status",
        json!({"inference_id": id, "wait_secs": 6}),
        Some(json!({"progressToken": "t"})),
    );
    let (status, content_type, body) =
        streamed(&door, event("POST", "/mcp", json!({}), Some(wait))).await;
    assert_eq!((status, content_type.as_str()), (200, "text/event-stream"));
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    let methods: Vec<&str> = events
        .iter()
        .map(|e| e["method"].as_str().unwrap_or("(result)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/progress",
            "(result)"
        ],
        "{body}"
    );
    assert_eq!(
        events[2]["result"]["structuredContent"]["status"],
        "pending"
    );

    // The same wait without a token: plain JSON, as before.
    let plain = call(
        "check_job_status",
        json!({"inference_id": id, "wait_secs": 1}),
        None,
    );
    let (status, content_type, body) =
        streamed(&door, event("POST", "/mcp", json!({}), Some(plain))).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["result"]["structuredContent"]["status"],
        "pending"
    );

    // Refusals, each with its whole text.
    for (method, path, headers, expected) in [
        ("POST", "/admin", json!({}), 404),
        ("POST", "/mcp", json!({"host": "evil.example"}), 403),
        (
            "POST",
            "/mcp",
            json!({"origin": "https://evil.example"}),
            403,
        ),
        ("GET", "/mcp", json!({}), 405),
        ("DELETE", "/mcp", json!({}), 405),
    ] {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let body = (method == "POST").then_some(list);
        let (status, _, text) = streamed(&door, event(method, path, headers.clone(), body)).await;
        assert_eq!(status, expected, "{method} {path} {headers}: {text}");
        assert!(!text.is_empty(), "{method} {path} {headers}: an empty body");
    }
}

#[tokio::test]
async fn a_challenge_arrives_whole_when_streamed() {
    let w = world(&[]);
    let mut config = tests::config("bearer");
    config.allowed_hosts = vec!["*.lambda-url.us-east-1.on.aws".into()];
    let door = Arc::new(FrontDoor::new(config, w.deps.clone()));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, _, text) =
        streamed(&door, event("POST", "/mcp", json!({}), Some(list.clone()))).await;
    assert_eq!(
        (status, text.as_str()),
        (401, "Unauthorized: a valid bearer token is required")
    );
    let (status, content_type, body) = streamed(
        &door,
        event(
            "POST",
            "/mcp",
            json!({"authorization": "Bearer secret"}),
            Some(list),
        ),
    )
    .await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert!(serde_json::from_str::<Value>(&body).unwrap()["result"]["tools"].is_array());
}

// Real time: the keep-alive timer reads the system clock, which a paused tokio clock
// leaves behind (every comment would be due at once).
#[tokio::test]
async fn a_long_quiet_wait_keeps_its_stream_alive_with_comments() {
    let w = world(&[]);
    let mut config = tests::config("none");
    config.allowed_hosts = vec!["*.lambda-url.us-east-1.on.aws".into()];
    let every = std::time::Duration::from_millis(300);
    let door = FrontDoor::keeping_alive(config, w.deps.clone(), Verifier::new, every);
    let door = Arc::new(door);
    let trigger = call(
        "trigger_training",
        json!({"input_data_uri": "s3://b/train/", "session_id": "s"}),
        None,
    );
    let (_, _, body) = streamed(&door, event("POST", "/mcp", json!({}), Some(trigger))).await;
    let triggered: Value = serde_json::from_str(&body).unwrap();
    let arn = triggered["result"]["structuredContent"]["execution_arn"].clone();
    assert!(arn.is_string(), "{body}");
    // The run stays in its first step for the whole wait: one notification, then nothing
    // to say for 2 s but the keep-alive comments.
    let wait = call(
        "check_training_status",
        json!({"execution_arn": arn, "wait_secs": 2}),
        Some(json!({"progressToken": "t"})),
    );
    let (status, content_type, body) =
        streamed(&door, event("POST", "/mcp", json!({}), Some(wait))).await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/event-stream"),
        "{body}"
    );
    let comments = body.lines().filter(|l| l.starts_with(':')).count();
    let messages = body.lines().filter(|l| l.starts_with("data:")).count();
    assert!(
        (3..=8).contains(&comments),
        "{comments} comments in 2 s: {body}"
    );
    assert!(messages >= 2, "progress and the result: {body}");
}

/// A `subscriptions/listen` of a 2026-07-28 client naming `task_ids`, declaring the tasks
/// extension or not.
fn listen(task_ids: &[&str], declared: bool) -> Value {
    let capabilities = match declared {
        true => json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        false => json!({}),
    };
    json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": task_ids},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": capabilities}}})
}

/// The JSON-RPC messages of an event stream, in order.
fn messages(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
const V2026: &str = "2026-07-28";

// Real time, as rmcp's keep-alive timer needs (see above).
#[tokio::test]
async fn a_listen_pushes_each_change_of_the_callers_tasks_and_nothing_of_anothers() {
    let w = world(&[]);
    let door = open_door(&w);
    let task = |created: Value| created["taskId"].as_str().unwrap().to_owned();
    let mine = task(w.call_as_task("submit_job", json!({"document": "a"})).await);
    let bob = Principal::Bearer { name: "bob".into() };
    let theirs = task(
        w.as_caller(bob)
            .call_as_task("submit_job", json!({"document": "b"}))
            .await,
    );
    let inference_id = mine.rsplit_once('.').unwrap().0.to_owned();

    let request = listen(&[&mine, &theirs, "unknown.0000"], true);
    let headers = json!({"mcp-protocol-version": V2026, "mcp-method": "subscriptions/listen"});
    let listening = tokio::spawn({
        let door = door.clone();
        async move { streamed(&door, event("POST", "/mcp", headers, Some(request))).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    w.notify(&inference_id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let (status, content_type, body) = listening.await.unwrap();
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/event-stream"),
        "{body}"
    );
    let messages = messages(&body);

    let ack = &messages[0];
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{body}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([mine]),
        "{body}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 7);

    let pushed: Vec<&Value> = messages[1..messages.len() - 1].iter().collect();
    let statuses: Vec<&str> = pushed
        .iter()
        .map(|m| m["params"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["working", "completed"], "{body}");
    for m in &pushed {
        assert_eq!(m["method"], "notifications/tasks");
        assert_eq!(m["params"]["taskId"], mine.as_str());
        assert_eq!(m["params"]["_meta"][SUBSCRIPTION_ID], 7);
    }
    assert_eq!(
        pushed[1]["params"]["result"]["structuredContent"]["result"],
        json!({"label": "ok"})
    );

    // Its task ended: the final result, for the listen's id.
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 7, "{body}");
    assert_eq!(last["result"]["_meta"][SUBSCRIPTION_ID], 7, "{body}");
    assert!(
        !body.contains(&theirs),
        "another's task is never named: {body}"
    );
}

#[tokio::test]
async fn a_listen_of_tasks_needs_the_extension_and_at_most_a_hundred() {
    let w = world(&[]);
    let door = open_door(&w);
    let headers = json!({"mcp-protocol-version": V2026, "mcp-method": "subscriptions/listen"});

    let undeclared = listen(&["a.b"], false);
    let (_, _, body) = streamed(
        &door,
        event("POST", "/mcp", headers.clone(), Some(undeclared)),
    )
    .await;
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(7), json!(-32021)),
        "{body}"
    );

    let ids: Vec<String> = (0..101).map(|i| format!("t{i}.x")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (_, _, body) = streamed(
        &door,
        event("POST", "/mcp", headers.clone(), Some(listen(&ids, true))),
    )
    .await;
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{body}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`notifications.taskIds`: at most 100"));

    let mut numbers = listen(&[], true);
    numbers["params"]["notifications"]["taskIds"] = json!([1, 2]);
    let (_, _, body) = streamed(&door, event("POST", "/mcp", headers.clone(), Some(numbers))).await;
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{body}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("must be a list of task ids"));

    // Naming only unknown tasks: acknowledged with none, then the final result at once.
    let (_, _, body) = streamed(
        &door,
        event("POST", "/mcp", headers, Some(listen(&["x.y"], true))),
    )
    .await;
    let messages = messages(&body);
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["params"]["notifications"]["taskIds"], json!([]));
    assert_eq!(messages[1]["id"], 7);
}

#[tokio::test]
async fn a_listen_holds_one_of_the_callers_wait_slots() {
    let w = world(&[("CALLER_WAITS_MAX", "1")]);
    let door = open_door(&w);
    let created = w.call_as_task("submit_job", json!({"document": "a"})).await;
    let task = created["taskId"].as_str().unwrap().to_owned();
    let headers = json!({"mcp-protocol-version": V2026, "mcp-method": "subscriptions/listen"});
    let first = tokio::spawn({
        let (door, headers, request) = (door.clone(), headers.clone(), listen(&[&task], true));
        async move { streamed(&door, event("POST", "/mcp", headers, Some(request))).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    // The slot is held: a second listen is refused at once, before any acknowledgement.
    let second = listen(&[&task], true);
    let (_, content_type, body) =
        streamed(&door, event("POST", "/mcp", headers.clone(), Some(second))).await;
    assert_eq!(content_type, "application/json", "{body}");
    let error = &serde_json::from_str::<Value>(&body).unwrap()["error"];
    assert_eq!(error["code"], -32009, "{body}");
    assert_eq!(error["data"]["quota"], "waits_max", "{body}");

    let inference_id = task.rsplit_once('.').unwrap().0.to_owned();
    w.notify(&inference_id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let (_, _, body) = first.await.unwrap();
    let last = messages(&body).last().cloned().unwrap();
    assert_eq!(last["id"], 7, "the first ends as its task does: {body}");

    // Its slot is free again; and one that a legacy client's listen claimed is freed at once,
    // as rmcp answers that without holding it.
    let mut legacy = listen(&[&task], true);
    legacy["params"]["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let old = json!({"mcp-protocol-version": "2025-11-25", "mcp-method": "subscriptions/listen"});
    let (_, content_type, _) = streamed(&door, event("POST", "/mcp", old, Some(legacy))).await;
    assert_eq!(content_type, "application/json");
    let third = listen(&[&task], true);
    let (_, content_type, body) =
        streamed(&door, event("POST", "/mcp", headers, Some(third))).await;
    assert_eq!(content_type, "text/event-stream", "{body}");
}

#[tokio::test]
async fn a_listen_over_the_read_quota_is_refused_before_any_acknowledgement() {
    let w = world(&[("CALLER_READS_PER_MINUTE", "1")]);
    let door = open_door(&w);
    let created = w.call_as_task("submit_job", json!({"document": "a"})).await;
    let task = created["taskId"].as_str().unwrap().to_owned();
    let inference_id = task.rsplit_once('.').unwrap().0.to_owned();
    // The minute's one read.
    w.ok("check_job_status", json!({"inference_id": inference_id}))
        .await;
    let headers = json!({"mcp-protocol-version": V2026, "mcp-method": "subscriptions/listen"});
    let (_, content_type, body) = streamed(
        &door,
        event("POST", "/mcp", headers, Some(listen(&[&task], true))),
    )
    .await;
    assert_eq!(content_type, "application/json", "not acknowledged: {body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 7, "{body}");
    assert_eq!(reply["error"]["code"], -32009, "{body}");
    assert_eq!(
        reply["error"]["data"]["quota"], "reads_per_minute",
        "{body}"
    );
}

#[tokio::test]
async fn a_listen_whose_client_has_gone_ends_and_frees_its_wait_slot() {
    let w = world(&[("CALLER_WAITS_MAX", "1")]);
    let door = open_door(&w);
    let created = w.call_as_task("submit_job", json!({"document": "a"})).await;
    let task = created["taskId"].as_str().unwrap().to_owned();
    let headers = json!({"mcp-protocol-version": V2026, "mcp-method": "subscriptions/listen"});
    let request = lambda_http::Request::from(event(
        "POST",
        "/mcp",
        headers.clone(),
        Some(listen(&[&task], true)),
    ));
    let response = door.handle(request).await;
    assert!(listen::is_held(&response));
    // The client reads the acknowledgement and the task as it is, then goes away: its stream
    // is dropped, as the runtime drops it when a write (the next keep-alive) fails.
    let mut body = response.into_body().into_data_stream();
    let mut read = String::new();
    while messages(&read).len() < 2 {
        let chunk = body.next().await.unwrap().unwrap();
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(body);
    // The slot is freed: another listen of the caller is held, not refused for `waits_max`.
    let mut held = None;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let again = listen(&[&task], true);
        let response = door
            .handle(lambda_http::Request::from(event(
                "POST",
                "/mcp",
                headers.clone(),
                Some(again),
            )))
            .await;
        if listen::is_held(&response) {
            held = Some(response);
            break;
        }
    }
    assert!(
        held.is_some(),
        "the gone listen's wait slot was never freed"
    );
}

#[tokio::test]
async fn an_update_whose_input_responses_are_not_an_object_is_an_invalid_parameter() {
    let w = world(&[]);
    let door = open_door(&w);
    let headers =
        json!({"mcp-protocol-version": V2026, "mcp-method": "tasks/update", "mcp-name": "t"});
    for (responses, kind) in [
        (json!([{"action": "accept"}]), "a list"),
        (json!("accept"), "a string"),
        (json!(3), "a number"),
        (json!(null), "null"),
    ] {
        let update = json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/update",
                            "params": {"taskId": "t", "inputResponses": responses}});
        let (_, content_type, body) =
            streamed(&door, event("POST", "/mcp", headers.clone(), Some(update))).await;
        assert_eq!(content_type, "application/json", "{body}");
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["id"], 5, "{body}");
        assert_eq!(reply["error"]["code"], -32602, "{kind}: {body}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("`inputResponses` must be an object")
                && message.ends_with(&format!("not {kind}")),
            "{message}"
        );
    }
}
