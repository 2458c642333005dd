//! The HTTP front door: what is refused before MCP sees a request (paths, hosts), the one
//! parse of its JSON-RPC body, and the one call that says who the caller is
//! ([`crate::auth`]). The principal is handed to the tools as a request extension; nothing
//! below reads a header.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use lambda_http::RequestExt;
use rmcp::transport::streamable_http_server::{
    session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};

use crate::auth::oauth::metadata;
use crate::auth::oauth::verify::Verifier;
use crate::auth::{Access, Authenticator, Refusal};
use crate::config::{AuthMode, McpToolsConfig, OAuthConfig};
use crate::deps::{Backend, Deps};
use crate::http_guard::{self, RpcBody};
use crate::tools::Tools;

/// A Function URL request is at most 6 MB.
pub const MAX_REQUEST_BODY_BYTES: usize = 6_000_000;

pub type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

pub type McpService<B> = StreamableHttpService<Tools<B>, NeverSessionManager>;

/// A refusal as the HTTP reply: its status, its challenge, and its line as plain text.
impl Refusal {
    pub fn into_response(self) -> HttpResponse {
        let mut builder = http::Response::builder()
            .status(self.status)
            .header(http::header::CONTENT_TYPE, "text/plain");
        if let Some(challenge) = self.challenge {
            builder = builder.header(http::header::WWW_AUTHENTICATE, challenge);
        }
        builder
            .body(Full::new(Bytes::from_static(self.text.as_bytes())).boxed())
            .expect("a refusal is a valid response")
    }
}

/// What is refused before the caller is looked at: a path other than `/` and `/mcp` (and,
/// in oauth mode, the protected resource metadata's), and a `Host` not served.
pub fn refuse(config: &McpToolsConfig, path: &str, headers: &http::HeaderMap) -> Option<Refusal> {
    let host = http_guard::host(headers);
    if !host.is_some_and(http_guard::is_dns_host) {
        return Some(Refusal::new(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Host header must be a DNS name (letters, digits, hyphens and dots, an optional port)",
        ));
    }
    let metadata = matches!(config.auth, AuthMode::OAuth(_)) && metadata::is_metadata_path(path);
    if !matches!(path.trim_end_matches('/'), "" | "/mcp") && !metadata {
        return Some(Refusal::new(
            StatusCode::NOT_FOUND,
            "Not Found: MCP is served at /mcp",
        ));
    }
    if !http_guard::host_allowed(host, &config.allowed_hosts) {
        return Some(Refusal::new(
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        ));
    }
    None
}

/// The access a JSON-RPC body asks for; a body that is not JSON-RPC asks for nothing more
/// than reading (rmcp refuses it). A batch asks for the most any of its requests does.
pub fn access_of(body: &RpcBody, write_tools: &[String]) -> Access {
    let writes = body.messages.iter().any(|m| match m.method.as_deref() {
        Some("tools/call") => m
            .tool
            .as_deref()
            // An unknown tool is refused by rmcp; asking for it needs no more than reading.
            .is_some_and(|name| write_tools.iter().any(|t| t == name)),
        Some("tasks/cancel") => true,
        _ => false,
    });
    if writes {
        Access::Write
    } else {
        Access::Read
    }
}

/// How long a streamed reply may go without a byte before an SSE comment is sent: a run's
/// step can take minutes without a progress notification, and proxies and load balancers cut
/// a connection idle for 60 s or less. Comments are not messages: clients skip them.
pub const SSE_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// rmcp's defaults are for a local server: set each for Lambda. Hosts are checked by
/// [`refuse`] (it understands `*.lambda-url.<region>.on.aws`); Origin by rmcp, 403 for any
/// present Origin not listed.
pub fn mcp_service<B: Backend>(deps: Arc<Deps<B>>, allowed_origins: &[String]) -> McpService<B> {
    service_keeping_alive(deps, allowed_origins, SSE_KEEP_ALIVE)
}

fn service_keeping_alive<B: Backend>(
    deps: Arc<Deps<B>>,
    allowed_origins: &[String],
    keep_alive: std::time::Duration,
) -> McpService<B> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(Some(keep_alive))
        .disable_allowed_hosts()
        .with_allowed_origins(allowed_origins.to_vec())
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES);
    let tools = Tools::new(deps);
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The Function URL's front door: the configuration, who may call (built from the auth
/// mode), the tools that need the write scope, and the MCP service behind it. Built once at
/// cold start.
pub struct FrontDoor<B: Backend> {
    config: McpToolsConfig,
    auth: Authenticator,
    write_tools: Vec<String>,
    mcp: McpService<B>,
}

impl<B: Backend> FrontDoor<B> {
    /// Tokens verified with the issuer's keys over HTTP (fetched on first use).
    pub fn new(config: McpToolsConfig, deps: Arc<Deps<B>>) -> Self {
        Self::with_verifier(config, deps, Verifier::new)
    }

    /// `verifier` makes the oauth mode's verifier from its settings (tests give it other keys).
    pub fn with_verifier(
        config: McpToolsConfig,
        deps: Arc<Deps<B>>,
        verifier: impl FnOnce(&OAuthConfig) -> Verifier,
    ) -> Self {
        Self::keeping_alive(config, deps, verifier, SSE_KEEP_ALIVE)
    }

    fn keeping_alive(
        config: McpToolsConfig,
        deps: Arc<Deps<B>>,
        verifier: impl FnOnce(&OAuthConfig) -> Verifier,
        keep_alive: std::time::Duration,
    ) -> Self {
        Self {
            auth: Authenticator::new(&config.auth, deps.clock.clone(), verifier),
            write_tools: write_tools(&Tools::new(deps.clone()).served()),
            mcp: service_keeping_alive(deps, &config.allowed_origins, keep_alive),
            config,
        }
    }

    /// One Function URL request: refused, the protected resource metadata (oauth mode), or
    /// served by MCP as its caller. Every reply says it must not be buffered on its way: an
    /// SSE reply's progress notifications are worth something only as they happen.
    pub async fn handle(&self, request: lambda_http::Request) -> HttpResponse {
        let mut response = self.answer(request).await;
        response.headers_mut().insert(
            http::HeaderName::from_static("x-accel-buffering"),
            http::HeaderValue::from_static("no"),
        );
        response
    }

    async fn answer(&self, mut request: lambda_http::Request) -> HttpResponse {
        let path = request.raw_http_path();
        if let Some(refusal) = refuse(&self.config, path, request.headers()) {
            return refusal.into_response();
        }
        let context = request.request_context_ref();
        if let Some(oauth) = self.auth.oauth() {
            if metadata::is_metadata_path(path) {
                let host = metadata::resource_host(context, request.headers());
                let resource = metadata::resource(&oauth.config, host);
                let document = metadata::protected_resource_metadata(&oauth.config, &resource);
                return json_response(&document);
            }
        }
        // The only parse before rmcp's: what the body calls decides the scope it needs, and a
        // task request's id may stand in for its missing header.
        let rpc = RpcBody::parse(request.body().as_ref());
        let access = access_of(&rpc, &self.write_tools);
        let principal = match self
            .auth
            .authenticate(request.headers(), context, access)
            .await
        {
            Ok(principal) => principal,
            Err(refusal) => return refusal.into_response(),
        };
        request.extensions_mut().insert(principal);
        if let Some(name) = http_guard::missing_task_name(request.headers(), rpc.task_id.as_deref())
        {
            request.headers_mut().insert("mcp-name", name);
        }
        self.mcp.handle(request).await
    }
}

/// The tools that start or stop work, as the served tools (a catalog's included) declare
/// themselves: every one not marked read-only.
pub fn write_tools(served: &[rmcp::model::Tool]) -> Vec<String> {
    served
        .iter()
        .filter(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) != Some(true))
        .map(|t| t.name.to_string())
        .collect()
}

fn json_response(value: &serde_json::Value) -> HttpResponse {
    http::Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())).boxed())
        .expect("a JSON response is valid")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    pub(crate) use crate::auth::tests::config;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn paths_and_hosts_are_checked_before_the_caller() {
        let iam = config("iam");
        let ok_host = [("host", "abc.lambda-url.us-east-1.on.aws")];
        assert!(refuse(&iam, "/mcp", &headers(&ok_host)).is_none());
        assert!(refuse(&iam, "/", &headers(&ok_host)).is_none());
        assert_eq!(
            refuse(&iam, "/admin", &headers(&ok_host)).unwrap().status,
            404
        );
        // The OAuth metadata path is served in oauth mode only.
        let metadata = "/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            refuse(&iam, metadata, &headers(&ok_host)).unwrap().status,
            404
        );
        assert_eq!(
            refuse(&iam, "/mcp", &headers(&[("host", "evil.example")]))
                .unwrap()
                .status,
            403
        );
    }
}

#[cfg(test)]
mod access_tests {
    use super::*;

    #[test]
    fn tools_that_start_or_stop_work_need_write_and_the_rest_read() {
        let write_tools = write_tools(&Tools::<crate::AwsPorts>::definitions());
        assert_eq!(write_tools, ["submit_job", "trigger_training"]);
        let call = |name: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}"}}}}"#
            )
        };
        for (body, access) in [
            (call("submit_job"), Access::Write),
            (call("trigger_training"), Access::Write),
            (call("check_job_status"), Access::Read),
            (call("check_training_result"), Access::Read),
            (call("no_such_tool"), Access::Read),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"x"}}"#
                    .into(),
                Access::Write,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}"#.into(),
                Access::Read,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(),
                Access::Read,
            ),
            (
                format!("[{},{}]", call("check_job_status"), call("submit_job")),
                Access::Write,
            ),
            ("not json".into(), Access::Read),
        ] {
            assert_eq!(
                access_of(&RpcBody::parse(body.as_bytes()), &write_tools),
                access,
                "{body}"
            );
        }
    }
}

#[cfg(test)]
mod oauth_door_tests {
    use http_body_util::BodyExt;
    use lambda_http::RequestExt;
    use serde_json::{json, Value};

    use shared::domain::caller::Principal;

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

    fn request(method: &str, path: &str, token: Option<&str>, body: Value) -> lambda_http::Request {
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
        let now = shared::domain::time::now().timestamp();
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
        assert_eq!(owner, subject.caller().owner.as_str());

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
}

#[cfg(test)]
mod streaming_tests {
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
    use crate::tools_tests::world;

    /// A Function URL event (payload format 2.0).
    fn event(method: &str, path: &str, headers: Value, body: Option<Value>) -> LambdaRequest {
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
        let mut config = tests::config("none");
        config.allowed_hosts = vec!["*.lambda-url.us-east-1.on.aws".into()];
        let door = Arc::new(FrontDoor::new(config, w.deps.clone()));

        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let (status, content_type, body) =
            streamed(&door, event("POST", "/mcp", json!({}), Some(list))).await;
        assert_eq!((status, content_type.as_str()), (200, "application/json"));
        let tools: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            tools["result"]["tools"].as_array().unwrap().len(),
            crate::contract::names::ALL.len()
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
            let (status, _, text) =
                streamed(&door, event(method, path, headers.clone(), body)).await;
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
}
