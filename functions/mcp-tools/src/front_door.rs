//! The HTTP front door: what is refused before MCP sees a request (paths, hosts), the one
//! parse of its JSON-RPC body, and the one call that says who the caller is
//! ([`crate::auth`]). The principal is handed to the tools as a request extension; nothing
//! below reads a header.

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};

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
use crate::http_guard;
use crate::listen::{self, Listens};
use crate::request_body::{
    BodyRefusal, JsonKind, Member, RpcBody, RpcMessage, TooLong, KEPT_BYTES, MAX_ID_BYTES,
    MAX_PROGRESS_TOKEN_BYTES, MAX_VERSION_BYTES,
};
use crate::tools::Tools;

/// A Function URL request is at most 6 MB: rmcp is told so, and the door refuses more than
/// `MCP_MAX_BODY_BYTES` (at most this) before rmcp sees a request.
pub use crate::config::tools::LAMBDA_MAX_BODY_BYTES as MAX_REQUEST_BODY_BYTES;

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

/// The access a JSON-RPC body asks for (`scoped_tools`: the tools that need more than
/// reading); a body that is not JSON-RPC asks for nothing more than reading (rmcp refuses it).
/// A batch asks for all its requests do, beyond reading.
pub fn access_of(body: &RpcBody, scoped_tools: &[(String, Access)]) -> Vec<Access> {
    let mut needs: Vec<Access> = (body.messages.iter())
        .filter_map(|m| match m.method.as_deref() {
            // An unknown tool is refused by rmcp; asking for it needs no more than reading.
            Some("tools/call") => m.tool.as_deref().and_then(|name| {
                (scoped_tools.iter())
                    .find(|(tool, _)| tool == name)
                    .map(|(_, access)| *access)
            }),
            // Stopping work changes it; answering what a run asks is a person's to do.
            Some("tasks/cancel") => Some(Access::Write),
            Some("tasks/update") => Some(Access::Approve),
            _ => None,
        })
        .collect();
    needs.sort();
    needs.dedup();
    if needs.is_empty() {
        needs.push(Access::Read);
    }
    needs
}

/// How long a streamed reply may go without a byte before an SSE comment is sent: a run's
/// step can take minutes without a progress notification, and proxies and load balancers cut
/// a connection idle for 60 s or less. Comments are not messages: clients skip them.
pub const SSE_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// rmcp's defaults are for a local server: set each for Lambda. Hosts are checked by
/// [`refuse`] (it understands `*.lambda-url.<region>.on.aws`); Origin by rmcp, 403 for any
/// present Origin not listed.
pub fn mcp_service<B: Backend>(deps: Arc<Deps<B>>, allowed_origins: &[String]) -> McpService<B> {
    service_keeping_alive(Tools::new(deps), allowed_origins, SSE_KEEP_ALIVE)
}

fn service_keeping_alive<B: Backend>(
    tools: Tools<B>,
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
    /// Read from the tools' policies: at cold start ([`FrontDoor::built_now`]), or on the first
    /// request that needs them.
    scoped_tools: OnceLock<Vec<(String, Access)>>,
    tools: Tools<B>,
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
        let tools = Tools::new(deps.clone());
        Self {
            auth: Authenticator::new(&config.auth, deps.clock.clone(), verifier),
            scoped_tools: OnceLock::new(),
            mcp: service_keeping_alive(tools.clone(), &config.allowed_origins, keep_alive),
            tools,
            config,
        }
    }

    /// The door with its tools' registry, and the scopes their calls need, built now: what a
    /// cold start does, in Lambda's init (see [`Tools::built_now`]).
    pub fn built_now(self) -> Self {
        self.scoped_tools.get_or_init(|| self.tools.scoped_tools());
        self
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
        // What costs nothing is checked first: the body's size, then who is calling, from the
        // headers alone. An unauthenticated body is never parsed.
        let limit = self.config.tools.max_body_bytes;
        if request.body().len() > limit {
            return too_large(limit);
        }
        let caller = match self.auth.authenticate(request.headers(), context).await {
            Ok(caller) => caller,
            Err(refusal) => return refusal.into_response(),
        };
        if let Some(refusal) = version_header_too_long(request.headers()) {
            return refusal;
        }
        // The one read of the body before rmcp's, without a tree: what it calls decides the
        // scope it needs, and a task request's id may stand in for its missing header.
        let rpc = match RpcBody::parse(request.body().as_ref()) {
            Ok(rpc) => rpc,
            Err(BodyRefusal::TooManyValues) => return too_many_values(),
        };
        if let Some(reply) = rpc.messages.iter().find_map(refuse_too_long) {
            return reply;
        }
        let scoped_tools = self.scoped_tools.get_or_init(|| self.tools.scoped_tools());
        let access = access_of(&rpc, scoped_tools);
        let principal = match self.auth.authorize(caller, &access) {
            Ok(principal) => principal,
            Err(refusal) => return refusal.into_response(),
        };
        // Authorized first: a caller without the write scope learns nothing of the parameters.
        if let [one] = rpc.messages.as_slice() {
            if let Some(error) = input_responses_refused(one) {
                return rpc_error(one.id.clone(), error);
            }
        }
        let caller = principal.caller();
        request.extensions_mut().insert(principal);
        if let Some(name) = http_guard::missing_task_name(request.headers(), rpc.task_id.as_deref())
        {
            request.headers_mut().insert("mcp-name", name);
        }
        let listening = match rpc.messages.as_slice() {
            [one] if one.method.as_deref() == Some(listen::METHOD) => {
                match listen::named(request.body().as_ref()) {
                    Ok(task_ids) if task_ids.is_empty() => None,
                    Ok(task_ids) => Some((one.id.clone(), task_ids)),
                    Err(error) => return rpc_error(one.id.clone(), error),
                }
            }
            _ => None,
        };
        let Some((id, task_ids)) = listening else {
            return self.mcp.handle(request).await;
        };
        let deadline = request.lambda_context_ref().map(|c| c.deadline);
        let listens = Listens::new(&self.tools.server);
        let hold = listens.time(deadline);
        let lease = match listens.admit(&caller, hold).await {
            Ok(lease) => lease,
            Err(error) => return rpc_error(id, error),
        };
        let (tasks, accepted) = listen::ListenTasks::new(task_ids, hold, lease);
        request.extensions_mut().insert(tasks.clone());
        let response = self.mcp.handle(request).await;
        if !listen::is_held(&response) {
            // Answered without a hold (refused, or not a listen this revision has): no handler
            // will free the slot.
            listens.release_wait(tasks.take_lease()).await;
        }
        listen::with_accepted_ids(response, accepted)
    }
}

/// 413 for a body past `MCP_MAX_BODY_BYTES`, before anything of it is read.
fn too_large(limit: usize) -> HttpResponse {
    text_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "Payload Too Large: a request body may be at most {limit} bytes (MCP_MAX_BODY_BYTES)"
        ),
    )
}

/// 413 for a body of more JSON values than the function may build into a tree.
fn too_many_values() -> HttpResponse {
    text_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "Payload Too Large: {}; send large inputs as a document string or through S3",
            BodyRefusal::TooManyValues
        ),
    )
}

/// 400 for an `MCP-Protocol-Version` header too long to be a version (rmcp would quote it
/// whole).
fn version_header_too_long(headers: &http::HeaderMap) -> Option<HttpResponse> {
    let version = headers.get("mcp-protocol-version")?;
    if version.len() <= MAX_VERSION_BYTES {
        return None;
    }
    let start = String::from_utf8_lossy(&version.as_bytes()[..KEPT_BYTES.min(version.len())]);
    Some(text_response(
        StatusCode::BAD_REQUEST,
        format!(
            "Bad Request: Unsupported MCP-Protocol-Version: {}",
            quote_start(&start, version.len())
        ),
    ))
}

/// `tasks/update` whose `inputResponses` is not an object of responses: rmcp cannot read such
/// a request as the method at all (it would answer -32601), so the door names the parameter.
fn input_responses_refused(message: &RpcMessage) -> Option<rmcp::model::ErrorData> {
    if message.method.as_deref() != Some("tasks/update") {
        return None;
    }
    let found = match message.input_responses {
        Some(JsonKind::Object) => return None,
        Some(kind) => kind.as_str(),
        None => "missing",
    };
    Some(rmcp::model::ErrorData::invalid_params(
        format!(
            "`inputResponses` must be an object of responses by their keys \
             ({{\"<key>\": {{\"action\": \"accept\", \"content\": {{...}}}}}}), not {found}"
        ),
        None,
    ))
}

/// The JSON-RPC error for a message with a value past its bound, quoting it short: a long
/// method is unknown (-32601, 404 as rmcp answers one), a long id is an invalid request, and
/// a long progress token, protocol version or task id an invalid parameter.
fn refuse_too_long(message: &RpcMessage) -> Option<HttpResponse> {
    let TooLong { what, bytes, start } = message.too_long.as_ref()?;
    let quoted = quote_start(start, *bytes);
    let (status, code, text, id) = match what {
        Member::Method => (
            StatusCode::NOT_FOUND,
            -32601,
            format!("Method not found: {quoted}"),
            message.id.clone(),
        ),
        Member::Id => (
            StatusCode::BAD_REQUEST,
            -32600,
            format!("Invalid Request: the id {quoted} is over {MAX_ID_BYTES} bytes"),
            None,
        ),
        Member::ProgressToken => (
            StatusCode::BAD_REQUEST,
            -32602,
            format!(
                "Invalid params: _meta.progressToken {quoted} is over {MAX_PROGRESS_TOKEN_BYTES} bytes"
            ),
            message.id.clone(),
        ),
        Member::ProtocolVersion => (
            StatusCode::BAD_REQUEST,
            -32602,
            format!("Invalid params: unsupported protocol version {quoted}"),
            message.id.clone(),
        ),
        Member::TaskId => (
            StatusCode::BAD_REQUEST,
            -32602,
            format!("Invalid params: the taskId {quoted} is no task of this server"),
            message.id.clone(),
        ),
    };
    let error = rmcp::model::ErrorData::new(rmcp::model::ErrorCode(code), text, None);
    let mut response = rpc_error(id, error);
    *response.status_mut() = status;
    Some(response)
}

/// A caller's value known by its start and whole length, quoted as every answer quotes one.
fn quote_start(start: &str, bytes: usize) -> String {
    if bytes == start.len() {
        return domain::util::quote(start);
    }
    let head: String = start.chars().take(domain::util::QUOTE_MAX_CHARS).collect();
    format!("{head:?}… ({bytes} bytes)")
}

/// A JSON-RPC error the door answers itself, for the request with `id`.
fn rpc_error(id: Option<serde_json::Value>, error: rmcp::model::ErrorData) -> HttpResponse {
    json_response(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(serde_json::Value::Null),
        "error": error,
    }))
}

fn text_response(status: StatusCode, text: String) -> HttpResponse {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(text)).boxed())
        .expect("a text response is valid")
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
        let scoped_tools = crate::tools_tests::world(&[]).tools.scoped_tools();
        let write_tools: Vec<&str> = (scoped_tools.iter())
            .filter(|(_, a)| *a == Access::Write)
            .map(|(t, _)| t.as_str())
            .collect();
        assert_eq!(write_tools, ["submit_job", "trigger_training"]);
        let call = |name: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{name}"}}}}"#
            )
        };
        for (body, access) in [
            (call("submit_job"), vec![Access::Write]),
            (call("trigger_training"), vec![Access::Write]),
            (call("check_job_status"), vec![Access::Read]),
            (call("check_training_result"), vec![Access::Read]),
            (call("no_such_tool"), vec![Access::Read]),
            (call("answer_training_input"), vec![Access::Approve]),
            (call("approve_model_package"), vec![Access::Approve]),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"x"}}"#
                    .into(),
                vec![Access::Write],
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"x"}}"#
                    .into(),
                vec![Access::Approve],
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}"#.into(),
                vec![Access::Read],
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(),
                vec![Access::Read],
            ),
            (
                format!("[{},{}]", call("check_job_status"), call("submit_job")),
                vec![Access::Write],
            ),
            (
                format!("[{},{}]", call("approve_model_package"), call("submit_job")),
                vec![Access::Write, Access::Approve],
            ),
            ("not json".into(), vec![Access::Read]),
        ] {
            assert_eq!(
                access_of(&RpcBody::parse(body.as_bytes()).unwrap(), &scoped_tools),
                access,
                "{body}"
            );
        }
    }
}

#[cfg(test)]
mod oauth_door_tests;

#[cfg(test)]
mod streaming_tests;

#[cfg(test)]
mod rmcp_listen_tests;

#[cfg(test)]
mod hostile_tests;
