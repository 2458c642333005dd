//! The Events methods through the same router an MCP client reaches, on the fakes.

use rmcp::model::ErrorCode;
use serde_json::{json, Value};

use domain::caller::Principal;
use domain::delivery::Answer;
use domain::events::{EventName, Subject};
use domain::ids::InferenceId;
use ports::EventLog;

use crate::contract::events_wire::{CALLBACK_ENDPOINT_ERROR, NOT_FOUND, RESOURCE_EXHAUSTED};
use crate::tools_tests::{world, World};

fn secret() -> String {
    use base64::Engine;
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode([9u8; 32])
    )
}

async fn call(w: &World, method: &str, params: Value) -> Result<Value, rmcp::model::ErrorData> {
    w.custom(method, params).await
}

fn subscribe_params(url: &str) -> Value {
    json!({"name": "job.ended", "arguments": {"endpoint": "ep"},
           "delivery": {"mode": "webhook", "url": url, "secret": secret()}, "ttlMs": 600000})
}

async fn log_job_ended(w: &World, principal: &Principal, id: &str) -> domain::events::Event {
    let event = domain::events::Event::new(
        EventName::JobEnded,
        principal.caller().owner,
        w.deps.clock.now(),
        Subject::Job {
            inference_id: InferenceId::parse(id).unwrap(),
            endpoint: Some("ep".into()),
        },
        "completed",
        json!({"inference_id": id, "status": "completed"}),
    );
    let log = w.ports().event_log.as_ref().unwrap();
    log.append(&event, &[], event.at.timestamp() + 3600)
        .await
        .unwrap();
    event
}

#[tokio::test(start_paused = true)]
async fn a_poll_from_a_cursor_returns_the_callers_own_events_it_missed() {
    let w = world(&[]);
    let start = call(&w, "events/poll", json!({"name": "job.ended"}))
        .await
        .unwrap();
    assert_eq!(start["events"], json!([]));
    assert_eq!(start["resultType"], "complete");
    let cursor = start["cursor"].as_str().unwrap().to_owned();
    let mine = log_job_ended(&w, &Principal::Local, "j-mine").await;
    let other = Principal::Bearer {
        name: "other".into(),
    };
    log_job_ended(&w, &other, "j-theirs").await;
    // Given to pollers once settled.
    tokio::time::advance(usecases::events::POLL_SETTLE + std::time::Duration::from_secs(1)).await;
    let polled = call(
        &w,
        "events/poll",
        json!({"name": "job.ended", "cursor": cursor}),
    )
    .await
    .unwrap();
    let events = polled["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{polled}");
    assert_eq!(events[0]["eventId"], mine.id.as_str());
    assert_eq!(polled["truncated"], false);
    assert_eq!(polled["hasMore"], false);
    // The other caller polls from the same cursor and hears only of its own.
    let theirs = w.as_caller(other);
    let polled = call(
        &theirs,
        "events/poll",
        json!({"name": "job.ended", "cursor": start["cursor"]}),
    )
    .await
    .unwrap();
    assert_eq!(polled["events"][0]["data"]["inference_id"], "j-theirs");
    let e = call(&w, "events/poll", json!({"name": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, NOT_FOUND);
}

#[tokio::test]
async fn a_webhook_is_verified_stored_refreshed_and_ended_by_its_key_only() {
    let w = world(&[]).as_caller(Principal::Bearer { name: "a".into() });
    let made = call(
        &w,
        "events/subscribe",
        subscribe_params("https://hooks.example.com/in"),
    )
    .await
    .unwrap();
    assert!(made["id"].as_str().unwrap().starts_with("sub_"));
    assert!(made["refreshBefore"].as_str().is_some());
    assert!(made.get("deliveryStatus").is_none());
    let challenge = &w.ports().webhooks.posts()[0];
    assert_eq!(challenge.url, "https://hooks.example.com/in");
    let refreshed = call(
        &w,
        "events/subscribe",
        subscribe_params("https://hooks.example.com/in"),
    )
    .await
    .unwrap();
    assert_eq!(refreshed["id"], made["id"]);
    assert_eq!(refreshed["deliveryStatus"]["active"], true);
    assert_eq!(w.ports().webhooks.posts().len(), 1, "verified once");
    // Another caller's key with the same fields is another subscription: unknown to end.
    let other = w.as_caller(Principal::Bearer { name: "b".into() });
    let unsubscribe = json!({"name": "job.ended", "arguments": {"endpoint": "ep"},
                             "delivery": {"url": "https://hooks.example.com/in"}});
    let e = call(&other, "events/unsubscribe", unsubscribe.clone())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.data),
        (NOT_FOUND, Some(json!({"kind": "subscription"})))
    );
    let ended = call(&w, "events/unsubscribe", unsubscribe.clone())
        .await
        .unwrap();
    assert_eq!(ended, json!({"resultType": "complete"}));
    let e = call(&w, "events/unsubscribe", unsubscribe)
        .await
        .unwrap_err();
    assert_eq!(e.code, NOT_FOUND);
}

#[tokio::test]
async fn a_callback_that_fails_its_challenge_is_refused_with_the_reason() {
    let w = world(&[]).as_caller(Principal::Bearer { name: "a".into() });
    w.ports().webhooks.answer([Answer::Status(404)]);
    let e = call(
        &w,
        "events/subscribe",
        subscribe_params("https://hooks.example.com/in"),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (e.code, e.data),
        (CALLBACK_ENDPOINT_ERROR, Some(json!({"reason": "http_4xx"})))
    );
    assert!(w.ports().subscriptions.as_ref().unwrap().all().is_empty());
}

#[tokio::test]
async fn an_unauthenticated_caller_may_poll_but_not_subscribe() {
    let w = world(&[]);
    let e = call(
        &w,
        "events/subscribe",
        subscribe_params("https://hooks.example.com/in"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, crate::contract::events_wire::FORBIDDEN);
    assert!(w.ports().webhooks.posts().is_empty(), "nothing sent");
}

#[tokio::test]
async fn a_caller_holds_a_bounded_number_of_subscriptions() {
    let w = world(&[]).as_caller(Principal::Bearer { name: "a".into() });
    for n in 0..domain::subscription::MAX_PER_CALLER {
        let mut p = subscribe_params("https://hooks.example.com/in");
        p["arguments"]["endpoint"] = json!(format!("ep{n}"));
        call(&w, "events/subscribe", p).await.unwrap();
    }
    let e = call(
        &w,
        "events/subscribe",
        subscribe_params("https://hooks.example.com/in"),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, RESOURCE_EXHAUSTED);
}

#[tokio::test]
async fn the_extension_is_advertised_and_its_list_names_the_delivery_modes_served() {
    let w = world(&[]);
    let info = rmcp::ServerHandler::get_info(&w.tools);
    let extensions = info.capabilities.extensions.unwrap();
    assert!(extensions.contains_key("io.modelcontextprotocol/events"));
    let listed = call(&w, "events/list", json!({})).await.unwrap();
    assert_eq!(
        listed["events"][0]["delivery"],
        json!(["poll", "push", "webhook"])
    );
    let e = call(&w, "events/nothing", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
}

/// Every message a request's stream carries, to its final reply (the direct path returns the
/// first alone).
async fn stream_messages(w: &World, params: Value) -> Vec<Value> {
    use rmcp::model::{ClientJsonRpcMessage, GetExtensions};
    use rmcp::service::serve_directly;
    use rmcp::transport::OneshotTransport;
    use rmcp::RoleServer;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "events/stream", "params": params});
    let mut message: ClientJsonRpcMessage = serde_json::from_value(request).unwrap();
    if let ClientJsonRpcMessage::Request(request) = &mut message {
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.extensions.insert(w.principal.clone());
        request.request.extensions_mut().insert(parts);
    }
    let (transport, mut replies) = OneshotTransport::<RoleServer>::new(message);
    let running = serve_directly(w.tools.clone(), transport, None);
    let mut messages = Vec::new();
    while let Some(reply) = replies.recv().await {
        let reply = serde_json::to_value(reply).unwrap();
        let done = reply.get("result").is_some() || reply.get("error").is_some();
        messages.push(reply);
        if done {
            break;
        }
    }
    drop(running);
    messages
}

#[tokio::test(start_paused = true)]
async fn a_stream_sends_its_cursor_then_each_settled_event_heartbeats_and_ends_with_its_id() {
    let w = world(&[("LISTEN_MAX_SECS", "40")]);
    let before = domain::events::Cursor::at(w.deps.clock.now() - chrono::Duration::minutes(1));
    let mine = log_job_ended(&w, &Principal::Local, "j-streamed").await;
    log_job_ended(
        &w,
        &Principal::Bearer {
            name: "other".into(),
        },
        "j-not-mine",
    )
    .await;
    let messages =
        stream_messages(&w, json!({"name": "job.ended", "cursor": before.encode()})).await;
    let methods: Vec<&str> = messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(result)"))
        .collect();
    assert_eq!(methods[0], "notifications/events/active", "{methods:?}");
    assert_eq!(methods[1], "notifications/events/event", "{methods:?}");
    assert!(
        methods.contains(&"notifications/events/heartbeat"),
        "{methods:?}"
    );
    assert_eq!(methods.last(), Some(&"(result)"));
    assert_eq!(
        methods
            .iter()
            .filter(|m| **m == "notifications/events/event")
            .count(),
        1
    );
    let event = &messages[1]["params"];
    assert_eq!(event["eventId"], mine.id.as_str());
    assert!(event["cursor"].is_string());
    assert_eq!(event["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
    assert_eq!(messages[0]["params"]["truncated"], false);
    let result = &messages.last().unwrap()["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
}
