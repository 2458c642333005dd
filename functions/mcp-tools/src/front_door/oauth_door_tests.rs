//! The Function URL door in oauth mode: challenges, refusals, the metadata document, and a
//! request served as the token's subject.

use http_body_util::BodyExt;
use lambda_http::RequestExt;
use serde_json::{json, Value};

use domain::caller::Principal;

use super::*;
use crate::auth::oauth::fixtures as keys;
use crate::tools_tests::world;

fn door() -> (
    FrontDoor<crate::tools_tests::FakePorts>,
    crate::tools_tests::World,
) {
    let w = world(&[]);
    let mut config = tests::config("none");
    config.auth = AuthMode::OAuth(keys::config());
    config.allowed_hosts = vec!["mcp.example.com".into()];
    let keys =
        |oauth: &OAuthConfig| Verifier::with_source(oauth, keys::Fake::new(keys::all_keys()));
    (FrontDoor::with_verifier(config, w.deps.clone(), keys), w)
}

pub(super) fn request(
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Value,
) -> lambda_http::Request {
    let mut builder = http::Request::builder()
        .method(method)
        .uri(format!("https://mcp.example.com{path}"))
        .header("host", "mcp.example.com")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    builder
        .body(lambda_http::Body::from(body))
        .unwrap()
        .with_raw_http_path(path)
}

async fn answer(response: HttpResponse) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        challenge,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The test claims, valid now by the door's clock (the world's, which starts at the
/// system time).
fn claims_now(changes: Value) -> Value {
    let now = domain::time::now().timestamp();
    let claims = keys::with(keys::claims(), json!({"iat": now - 10, "exp": now + 300}));
    keys::with(claims, changes)
}

fn submit() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "submit_job", "arguments": {"document": "a", "idempotency_key": "k"}}})
}

#[tokio::test]
async fn a_request_is_challenged_refused_or_served_as_the_tokens_subject() {
    let (door, w) = door();
    let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

    let (status, challenge, _) =
        answer(door.handle(request("POST", "/mcp", None, submit())).await).await;
    assert_eq!(status, 401);
    assert!(challenge
        .unwrap()
        .starts_with(&format!(r#"Bearer resource_metadata="{metadata}""#)));

    let expired = keys::rs256(&keys::with(keys::claims(), json!({"exp": 1})));
    let (status, challenge, _) = answer(
        door.handle(request("POST", "/mcp", Some(&expired), submit()))
            .await,
    )
    .await;
    assert_eq!(status, 401);
    assert!(challenge.unwrap().contains(r#"error="invalid_token""#));

    let reader = keys::rs256(&claims_now(json!({"scope": "jobs:read"})));
    let (status, challenge, _) = answer(
        door.handle(request("POST", "/mcp", Some(&reader), submit()))
            .await,
    )
    .await;
    assert_eq!(status, 403);
    let challenge = challenge.unwrap();
    assert!(
        challenge.contains(r#"scope="jobs:write""#) && challenge.contains("insufficient_scope")
    );
    assert!(
        w.deps.ports.jobs.calls() == (0, 0),
        "nothing was read or written"
    );

    let writer = keys::rs256(&claims_now(json!({})));
    let (status, _, body) = answer(
        door.handle(request("POST", "/mcp", Some(&writer), submit()))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = body["result"]["structuredContent"]["inference_id"]
        .as_str()
        .unwrap();
    let owner = w.deps.ports.jobs.job(id).unwrap().owner.unwrap();
    let subject = Principal::OAuth {
        issuer: keys::ISSUER.into(),
        subject: "user-1".into(),
    };
    assert_eq!(owner, subject.caller().owner);

    // The metadata needs no token.
    let (status, _, document) = answer(
        door.handle(request(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            None,
            Value::Null,
        ))
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(document["resource"], keys::AUDIENCE);
    assert_eq!(document["authorization_servers"], json!([keys::ISSUER]));
    // ...but only on a Host this server serves.
    let mut foreign = request(
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        None,
        Value::Null,
    );
    foreign
        .headers_mut()
        .insert("host", "evil.example".parse().unwrap());
    assert_eq!(door.handle(foreign).await.status(), 403);
}

#[tokio::test]
async fn answering_a_runs_question_needs_the_approval_scope_not_the_write_scope() {
    let (door, _w) = door();
    let answer_tool = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "answer_training_input", "arguments": {}}});
    let update = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/update",
        "params": {"taskId": "x", "inputResponses": {}}});
    // An agent's token, reading and writing: refused, and told which scope to ask for.
    let agent = keys::rs256(&claims_now(json!({})));
    for body in [answer_tool.clone(), update.clone()] {
        let (status, challenge, _) = answer(
            door.handle(request("POST", "/mcp", Some(&agent), body.clone()))
                .await,
        )
        .await;
        assert_eq!(status, 403, "{body}");
        let challenge = challenge.unwrap();
        assert!(
            challenge.contains(r#"scope="jobs:approve""#)
                && challenge.contains("insufficient_scope"),
            "{challenge}"
        );
    }
    // A person's client given the approval scope gets past the door (the tool then reads
    // its arguments).
    let person = keys::rs256(&claims_now(json!({"scope": "jobs:read jobs:approve"})));
    let (status, _, body) = answer(
        door.handle(request("POST", "/mcp", Some(&person), answer_tool))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], json!(true), "{body}");
    // The approval scope starts nothing.
    let (status, _, _) = answer(
        door.handle(request("POST", "/mcp", Some(&person), submit()))
            .await,
    )
    .await;
    assert_eq!(status, 403);
}
