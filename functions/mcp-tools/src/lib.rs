//! mcp-tools: the MCP server an agent reaches at the Function URL. Stateless: every request
//! may land on a fresh instance, so nothing but the SDK clients lives in the process.
//! `contract` holds the tools' argument and result types, `tools` the tools themselves (each
//! one use case of `shared`), `deps` what they run on (settings, ports, clock), `direct` a tool
//! call without HTTP (for other front doors, such as an AgentCore Gateway target), and this
//! module the HTTP front door.

pub mod arguments;
pub mod contract;
pub mod deps;
pub mod direct;
pub mod http_guard;
pub mod oauth;
pub mod tools;
#[cfg(test)]
mod tools_tests;
pub mod wording;

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use lambda_http::RequestExt;
use rmcp::transport::streamable_http_server::{
    session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};

use shared::config::{AuthMode, McpToolsConfig};

pub use deps::{AwsPorts, Backend, Deps, Ports};
pub use tools::Tools;

/// Every tool as `tools/list` declares it, whatever ports the tools run on.
pub fn tool_definitions() -> Vec<rmcp::model::Tool> {
    Tools::<AwsPorts>::definitions()
}

/// A Function URL request is at most 6 MB.
pub const MAX_REQUEST_BODY_BYTES: usize = 6_000_000;

// ------------------------------------------------------------------ HTTP

pub type HttpResponse = http::Response<BoxBody<Bytes, Infallible>>;

fn refusal(
    status: http::StatusCode,
    challenge: Option<&'static str>,
    text: &'static str,
) -> HttpResponse {
    let mut builder = http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain");
    if let Some(challenge) = challenge {
        builder = builder.header(http::header::WWW_AUTHENTICATE, challenge);
    }
    builder
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
        .expect("static response is valid")
}

/// What is refused before MCP sees the request: a path other than `/` and `/mcp`, a `Host`
/// not served, and (bearer mode) a missing or wrong token.
pub fn refuse(
    config: &McpToolsConfig,
    path: &str,
    headers: &http::HeaderMap,
) -> Option<HttpResponse> {
    use http::StatusCode;
    if !matches!(path.trim_end_matches('/'), "" | "/mcp") {
        return Some(refusal(
            StatusCode::NOT_FOUND,
            None,
            "Not Found: MCP is served at /mcp",
        ));
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok());
    if !http_guard::host_allowed(host, &config.allowed_hosts) {
        return Some(refusal(
            StatusCode::FORBIDDEN,
            None,
            "Forbidden: Host header is not allowed",
        ));
    }
    if let AuthMode::Bearer { tokens } = &config.auth {
        let authorization = headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if http_guard::bearer_name(authorization, tokens).is_none() {
            let challenge = if authorization.is_some() {
                r#"Bearer realm="mcp-tools", error="invalid_token""#
            } else {
                r#"Bearer realm="mcp-tools""#
            };
            return Some(refusal(
                StatusCode::UNAUTHORIZED,
                Some(challenge),
                "Unauthorized: a valid bearer token is required",
            ));
        }
    }
    if let AuthMode::OAuth(_) = &config.auth {
        return Some(refusal(
            StatusCode::UNAUTHORIZED,
            Some(r#"Bearer realm="mcp-tools""#),
            "Unauthorized: OAuth tokens are not accepted by this build",
        ));
    }
    None
}

/// rmcp's defaults are for a local server: set each for Lambda. Hosts are checked by
/// [`refuse`] (it understands `*.lambda-url.<region>.on.aws`); Origin by rmcp, 403 for any
/// present Origin not listed.
pub fn mcp_service<B: Backend>(
    deps: Arc<Deps<B>>,
    allowed_origins: &[String],
) -> StreamableHttpService<Tools<B>, NeverSessionManager> {
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

pub async fn handle<B: Backend>(
    config: &McpToolsConfig,
    mcp: &StreamableHttpService<Tools<B>, NeverSessionManager>,
    mut request: lambda_http::Request,
) -> HttpResponse {
    if let Some(refusal) = refuse(config, request.raw_http_path(), request.headers()) {
        return refusal;
    }
    if let Some(name) = http_guard::missing_task_name(request.headers(), request.body().as_ref()) {
        request.headers_mut().insert("mcp-name", name);
    }
    mcp.handle(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::config::Env;

    fn config(auth: &str) -> McpToolsConfig {
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
    fn paths_hosts_and_tokens_are_checked_before_mcp() {
        let iam = config("iam");
        let ok_host = [("host", "abc.lambda-url.us-east-1.on.aws")];
        assert!(refuse(&iam, "/mcp", &headers(&ok_host)).is_none());
        assert!(refuse(&iam, "/", &headers(&ok_host)).is_none());
        assert_eq!(
            refuse(&iam, "/admin", &headers(&ok_host)).unwrap().status(),
            404
        );
        assert_eq!(
            refuse(&iam, "/mcp", &headers(&[("host", "evil.example")]))
                .unwrap()
                .status(),
            403
        );

        let bearer = config("bearer");
        let no_token = refuse(&bearer, "/mcp", &headers(&ok_host)).unwrap();
        assert_eq!(no_token.status(), 401);
        assert_eq!(
            no_token.headers()["www-authenticate"],
            r#"Bearer realm="mcp-tools""#
        );
        let wrong = refuse(
            &bearer,
            "/mcp",
            &headers(&[ok_host[0], ("authorization", "Bearer nope")]),
        )
        .unwrap();
        assert_eq!(wrong.status(), 401);
        assert!(wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token"));
        assert!(refuse(
            &bearer,
            "/mcp",
            &headers(&[ok_host[0], ("authorization", "Bearer secret")])
        )
        .is_none());
    }
}
