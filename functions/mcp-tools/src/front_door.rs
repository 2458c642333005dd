//! The HTTP front door: what is refused before MCP sees a request (paths, hosts, callers
//! without credentials), and who the caller is. The principal is established here, once per
//! request, and handed to the tools as a request extension; nothing below reads a header.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use rmcp::transport::streamable_http_server::{
    session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};

use crate::config::{AuthMode, McpToolsConfig, OAuthConfig};
use shared::domain::caller::Principal;
use shared::domain::time::Clock;

use crate::deps::{Backend, Deps};
use crate::http_guard;
use crate::oauth::{self, Challenge, Verifier};
use crate::tools::Tools;

/// A Function URL request is at most 6 MB.
pub const MAX_REQUEST_BODY_BYTES: usize = 6_000_000;

pub type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

pub type McpService<B> = StreamableHttpService<Tools<B>, NeverSessionManager>;

/// A request refused before MCP sees it: its status, its `WWW-Authenticate` challenge, and a
/// line saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub challenge: Option<String>,
    pub text: &'static str,
}

impl Refusal {
    fn new(status: StatusCode, text: &'static str) -> Self {
        Self {
            status,
            challenge: None,
            text,
        }
    }

    fn challenged(status: StatusCode, challenge: impl Into<String>, text: &'static str) -> Self {
        Self {
            status,
            challenge: Some(challenge.into()),
            text,
        }
    }

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

/// The request's `Host`, if it is text.
fn host(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
}

/// The host an OAuth resource (audience and metadata URL) is built on when `OAUTH_AUDIENCE` is
/// unset: the Function URL's own domain, as Lambda puts it in the event; the (checked) `Host`
/// only where the event carries none (local runs).
fn resource_host(request: &lambda_http::Request) -> &str {
    let own = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.domain_name.as_deref(),
        _ => None,
    };
    own.filter(|d| http_guard::is_dns_host(d))
        .or_else(|| host(request.headers()))
        .unwrap_or_default()
}

/// What is refused before the caller is looked at: a path other than `/` and `/mcp` (and,
/// in oauth mode, the protected resource metadata's), and a `Host` not served.
pub fn refuse(config: &McpToolsConfig, path: &str, headers: &http::HeaderMap) -> Option<Refusal> {
    if !host(headers).is_some_and(http_guard::is_dns_host) {
        return Some(Refusal::new(
            StatusCode::BAD_REQUEST,
            "Bad Request: the Host header must be a DNS name (letters, digits, hyphens and dots, an optional port)",
        ));
    }
    let metadata = matches!(config.auth, AuthMode::OAuth(_)) && is_metadata_path(path);
    if !matches!(path.trim_end_matches('/'), "" | "/mcp") && !metadata {
        return Some(Refusal::new(
            StatusCode::NOT_FOUND,
            "Not Found: MCP is served at /mcp",
        ));
    }
    if !http_guard::host_allowed(host(headers), &config.allowed_hosts) {
        return Some(Refusal::new(
            StatusCode::FORBIDDEN,
            "Forbidden: Host header is not allowed",
        ));
    }
    None
}

/// The caller of a request in `iam`, `bearer` and `none` mode, or the refusal.
pub fn identify(
    auth: &AuthMode,
    headers: &http::HeaderMap,
    context: Option<&RequestContext>,
) -> Result<Principal, Refusal> {
    match auth {
        AuthMode::None => Ok(Principal::Local),
        AuthMode::Iam => iam_principal(context).ok_or_else(|| {
            Refusal::new(
                StatusCode::FORBIDDEN,
                "Forbidden: the request carries no IAM identity (the Function URL's auth type must be AWS_IAM)",
            )
        }),
        AuthMode::Bearer { tokens } => {
            let authorization = headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            match http_guard::bearer_name(authorization, tokens) {
                Some(name) => Ok(Principal::Bearer {
                    name: name.to_owned(),
                }),
                None => {
                    let challenge = if authorization.is_some() {
                        r#"Bearer realm="mcp-tools", error="invalid_token""#
                    } else {
                        r#"Bearer realm="mcp-tools""#
                    };
                    Err(Refusal::challenged(
                        StatusCode::UNAUTHORIZED,
                        challenge,
                        "Unauthorized: a valid bearer token is required",
                    ))
                }
            }
        }
        // Verified by [`FrontDoor::oauth_principal`], which may have to fetch the keys.
        AuthMode::OAuth(_) => Err(Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error: OAuth tokens are verified by the front door",
        )),
    }
}

/// What a request may do, by what it calls: the scope an OAuth token needs for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads the caller's work (and everything that is not a tool call: discovery, listing).
    Read,
    /// Starts or stops work: a tool that is not read-only, or `tasks/cancel`.
    Write,
}

/// The access a JSON-RPC body asks for; a body that is not JSON-RPC asks for nothing more
/// than reading (rmcp refuses it). A batch asks for the most any of its requests does.
pub fn access_of(body: &[u8], write_tools: &[String]) -> Access {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Access::Read;
    };
    let messages = match &value {
        serde_json::Value::Array(batch) => batch.iter().collect(),
        single => vec![single],
    };
    let writes = messages.iter().any(|m| {
        match m.get("method").and_then(|v| v.as_str()) {
            Some("tools/call") => m
                .pointer("/params/name")
                .and_then(|v| v.as_str())
                // An unknown tool is refused by rmcp; asking for it needs no more than reading.
                .is_some_and(|name| write_tools.iter().any(|t| t == name)),
            Some("tasks/cancel") => true,
            _ => false,
        }
    });
    if writes {
        Access::Write
    } else {
        Access::Read
    }
}

/// The IAM identity Lambda put in a SigV4-signed Function URL request's context.
fn iam_principal(context: Option<&RequestContext>) -> Option<Principal> {
    let RequestContext::ApiGatewayV2(context) = context? else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    Principal::iam(iam.user_arn.as_deref()?)
}

/// rmcp's defaults are for a local server: set each for Lambda. Hosts are checked by
/// [`refuse`] (it understands `*.lambda-url.<region>.on.aws`); Origin by rmcp, 403 for any
/// present Origin not listed.
pub fn mcp_service<B: Backend>(deps: Arc<Deps<B>>, allowed_origins: &[String]) -> McpService<B> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
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

/// The Function URL's front door: the configuration, the token verifier (oauth mode, and
/// only then), the tools that need the write scope, the clock tokens are checked by, and the
/// MCP service behind it. Built once at cold start.
pub struct FrontDoor<B: Backend> {
    config: McpToolsConfig,
    verifier: Option<Verifier>,
    write_tools: Vec<String>,
    clock: Clock,
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
        let verifier = match &config.auth {
            AuthMode::OAuth(oauth) => Some(verifier(oauth)),
            _ => None,
        };
        Self {
            verifier,
            write_tools: write_tools::<B>(),
            clock: deps.clock.clone(),
            mcp: mcp_service(deps, &config.allowed_origins),
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
        if let Some(refusal) = refuse(&self.config, request.raw_http_path(), request.headers()) {
            return refusal.into_response();
        }
        let oauth = match (&self.config.auth, &self.verifier) {
            (AuthMode::OAuth(oauth), Some(verifier)) => Some((oauth, verifier)),
            _ => None,
        };
        if let Some((oauth, _)) = oauth.filter(|_| is_metadata_path(request.raw_http_path())) {
            let resource = oauth::resource(oauth, resource_host(&request));
            return json_response(&oauth::protected_resource_metadata(oauth, &resource));
        }
        let principal = match oauth {
            Some((oauth, verifier)) => self.oauth_principal(oauth, verifier, &request).await,
            None => identify(
                &self.config.auth,
                request.headers(),
                request.request_context_ref(),
            ),
        };
        let principal = match principal {
            Ok(principal) => principal,
            Err(refusal) => return refusal.into_response(),
        };
        request.extensions_mut().insert(principal);
        if let Some(name) =
            http_guard::missing_task_name(request.headers(), request.body().as_ref())
        {
            request.headers_mut().insert("mcp-name", name);
        }
        self.mcp.handle(request).await
    }

    /// The caller an OAuth access token names, when it is valid for this resource and carries
    /// the scope the request needs. A token only in the query string is not looked at.
    async fn oauth_principal(
        &self,
        oauth: &OAuthConfig,
        verifier: &Verifier,
        request: &lambda_http::Request,
    ) -> Result<Principal, Refusal> {
        let headers = request.headers();
        let resource = oauth::resource(oauth, resource_host(request));
        let authorization = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Some(token) = http_guard::bearer_token(authorization) else {
            return Err(Refusal::challenged(
                StatusCode::UNAUTHORIZED,
                oauth::challenge(oauth, &resource, Challenge::MissingToken),
                "Unauthorized: an OAuth access token is required (see the resource_metadata in WWW-Authenticate)",
            ));
        };
        let now_secs = u64::try_from(self.clock.now().timestamp()).unwrap_or(0);
        let claims = match verifier.verify(token, now_secs, &resource).await {
            Ok(claims) => claims,
            Err(e) => {
                // Why, never the token.
                tracing::info!(reason = %e, "access token refused");
                return Err(Refusal::challenged(
                    StatusCode::UNAUTHORIZED,
                    oauth::challenge(oauth, &resource, Challenge::InvalidToken),
                    "Unauthorized: the access token is not valid for this server",
                ));
            }
        };
        let needed = match access_of(request.body().as_ref(), &self.write_tools) {
            Access::Read => &oauth.read_scope,
            Access::Write => &oauth.write_scope,
        };
        if !claims.has_scope(needed) {
            return Err(Refusal::challenged(
                StatusCode::FORBIDDEN,
                oauth::challenge(oauth, &resource, Challenge::InsufficientScope(needed)),
                "Forbidden: the access token lacks the scope this call needs",
            ));
        }
        Ok(Principal::OAuth {
            issuer: claims.issuer,
            subject: claims.subject,
        })
    }
}

/// The tools that start or stop work, as the tools declare themselves: every one not marked
/// read-only.
pub fn write_tools<B: Backend>() -> Vec<String> {
    Tools::<B>::definitions()
        .into_iter()
        .filter(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) != Some(true))
        .map(|t| t.name.to_string())
        .collect()
}

/// RFC 9728's well-known paths, for the resource at `/mcp` and at `/`.
fn is_metadata_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    path == oauth::METADATA_PATH || path.strip_prefix(oauth::METADATA_PATH) == Some("/mcp")
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
    use shared::config::Env;

    pub(crate) fn config(auth: &str) -> McpToolsConfig {
        let vars = [
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "e"),
            ("PIPELINE_NAME", "pl"),
            ("AWS_REGION", "us-east-1"),
            ("AUTH_MODE", auth),
            // sha256("secret")
            (
                "MCP_BEARER_TOKEN_SHA256",
                "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b",
            ),
            // sha256("test")
            (
                "MCP_BEARER_TOKENS",
                "agent-a:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            ),
        ];
        McpToolsConfig::from_env(&Env::from_lookup(move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }))
        .unwrap()
    }

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

    #[test]
    fn each_named_token_is_its_own_caller_and_a_wrong_one_is_refused() {
        let bearer = config("bearer");
        let no_token = identify(&bearer.auth, &headers(&[]), None).unwrap_err();
        assert_eq!(no_token.status, 401);
        assert_eq!(
            no_token.challenge.as_deref(),
            Some(r#"Bearer realm="mcp-tools""#)
        );
        let wrong = identify(
            &bearer.auth,
            &headers(&[("authorization", "Bearer nope")]),
            None,
        )
        .unwrap_err();
        assert_eq!(wrong.status, 401);
        assert!(wrong.challenge.unwrap().contains("invalid_token"));
        for (token, name) in [("secret", "default"), ("test", "agent-a")] {
            let header = format!("Bearer {token}");
            let principal = identify(
                &bearer.auth,
                &headers(&[("authorization", header.as_str())]),
                None,
            )
            .unwrap();
            assert_eq!(principal, Principal::Bearer { name: name.into() });
        }
    }

    fn url_context(authorizer: serde_json::Value) -> RequestContext {
        let context = serde_json::json!({
            "accountId": "123456789012", "apiId": "abc", "domainName": "abc.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc", "requestId": "r", "routeKey": "$default", "stage": "$default",
            "time": "20/Nov/2026:10:00:00 +0000", "timeEpoch": 1_795_000_000_000u64,
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "1.2.3.4", "userAgent": "t"},
            "authorizer": authorizer,
        });
        RequestContext::ApiGatewayV2(serde_json::from_value(context).unwrap())
    }

    #[test]
    fn an_iam_caller_is_its_identity_and_a_request_without_one_is_refused() {
        let iam = config("iam");
        let signed = url_context(serde_json::json!({"iam": {
            "accessKey": "AKIA", "accountId": "123456789012", "callerId": "AROA:s",
            "userArn": "arn:aws:sts::123456789012:assumed-role/Agent/s-1", "userId": "AROA:s"
        }}));
        assert_eq!(
            identify(&iam.auth, &headers(&[]), Some(&signed)).unwrap(),
            Principal::Iam {
                arn: "arn:aws:sts::123456789012:assumed-role/Agent".into()
            }
        );
        let unsigned = url_context(serde_json::Value::Null);
        for context in [Some(&unsigned), None] {
            let refused = identify(&iam.auth, &headers(&[]), context).unwrap_err();
            assert_eq!(refused.status, 403);
        }
    }
}

#[cfg(test)]
mod access_tests {
    use super::*;

    #[test]
    fn tools_that_start_or_stop_work_need_write_and_the_rest_read() {
        let write_tools = write_tools::<crate::AwsPorts>();
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
            assert_eq!(access_of(body.as_bytes(), &write_tools), access, "{body}");
        }
    }
}

#[cfg(test)]
mod oauth_door_tests {
    use http_body_util::BodyExt;
    use lambda_http::RequestExt;
    use serde_json::{json, Value};

    use super::*;
    use crate::oauth::tests as keys;
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
}
