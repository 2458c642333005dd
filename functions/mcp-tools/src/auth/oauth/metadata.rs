//! What an OAuth client is told about this resource: the RFC 9728 protected resource
//! metadata (served without a token) and the `WWW-Authenticate` challenges that point at it.

use lambda_http::request::RequestContext;

use crate::config::OAuthConfig;
use crate::http_guard;

/// The RFC 9728 well-known path; a resource with a path has it appended.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// This server's resource identifier: `OAUTH_AUDIENCE`, or else the public URL of the
/// request's MCP endpoint, `https://<Host>/mcp` (the Host has been checked against
/// MCP_ALLOWED_HOSTS, so a first deployment works before its Function URL is known).
pub fn resource(config: &OAuthConfig, host: &str) -> String {
    match &config.audience {
        Some(audience) => audience.clone(),
        None => format!("https://{host}/mcp"),
    }
}

/// Where the metadata of `resource` is served: beside its MCP path, on the same function
/// (`https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`, as RFC 9728 has
/// it; a function mounted under a path prefix keeps the prefix, so the URL still reaches it).
pub fn metadata_url(resource: &str) -> String {
    let resource = resource.split(['?', '#']).next().unwrap_or_default();
    let authority_start = resource.find("://").map_or(0, |i| i + 3);
    let path_start = resource[authority_start..]
        .find('/')
        .map_or(resource.len(), |i| authority_start + i);
    let (origin, path) = resource.split_at(path_start);
    match path.strip_suffix("/mcp") {
        Some(base) => format!("{origin}{base}{METADATA_PATH}/mcp"),
        // A terminating slash right after the host is removed (RFC 9728, section 3.1).
        None if path.is_empty() || path == "/" => format!("{origin}{METADATA_PATH}"),
        None => format!("{origin}{METADATA_PATH}{path}"),
    }
}

/// The RFC 9728 metadata document, served unauthenticated.
pub fn protected_resource_metadata(config: &OAuthConfig, resource: &str) -> serde_json::Value {
    serde_json::json!({
        "resource": resource,
        "authorization_servers": [config.issuer],
        "scopes_supported": supported_scopes(config, true),
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-tools",
    })
}

/// The scopes this resource checks; the approval scope only with `approve`: a challenge
/// without a token asks for what an agent needs, and a person's client asks for the approval
/// scope when a call is refused for the lack of it.
fn supported_scopes(config: &OAuthConfig, approve: bool) -> Vec<&str> {
    let mut scopes = vec![config.read_scope.as_str()];
    let mut more = vec![config.write_scope.as_str()];
    if approve {
        more.push(config.approve_scope.as_str());
    }
    for scope in more {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes
}

/// What a `WWW-Authenticate` challenge answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge<'a> {
    /// No token was sent (401; RFC 6750 gives no error code then).
    MissingToken,
    /// The token was refused (401).
    InvalidToken,
    /// The token is valid but lacks the scope the call needs (403).
    InsufficientScope(&'a str),
}

/// The `WWW-Authenticate` value: where the metadata is, the scopes to ask for, and the error.
pub fn challenge(config: &OAuthConfig, resource: &str, problem: Challenge<'_>) -> String {
    let all = supported_scopes(config, false).join(" ");
    let (scope, error) = match problem {
        Challenge::MissingToken => (all.as_str(), None),
        Challenge::InvalidToken => (all.as_str(), Some("invalid_token")),
        Challenge::InsufficientScope(needed) => (needed, Some("insufficient_scope")),
    };
    let mut value = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        quoted(&metadata_url(resource)),
        quoted(scope)
    );
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    value
}

/// Text safe inside a quoted-string.
fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// RFC 9728's well-known paths, for the resource at `/mcp` and at `/`.
pub fn is_metadata_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    path == METADATA_PATH || path.strip_prefix(METADATA_PATH) == Some("/mcp")
}

/// The host an OAuth resource (audience and metadata URL) is built on when `OAUTH_AUDIENCE` is
/// unset: the Function URL's own domain, as Lambda puts it in the event; the (checked) `Host`
/// only where the event carries none (local runs).
pub fn resource_host<'a>(
    context: Option<&'a RequestContext>,
    headers: &'a http::HeaderMap,
) -> &'a str {
    let own = match context {
        Some(RequestContext::ApiGatewayV2(context)) => context.domain_name.as_deref(),
        _ => None,
    };
    own.filter(|d| http_guard::is_dns_host(d))
        .or_else(|| http_guard::host(headers))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::oauth::fixtures::{config, AUDIENCE, ISSUER};

    #[test]
    fn metadata_urls_sit_beside_the_mcp_path() {
        let cases = [
            // RFC 9728's own form for a resource at the root of its host.
            (
                "https://h/mcp",
                "https://h/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://h",
                "https://h/.well-known/oauth-protected-resource",
            ),
            (
                "https://h/",
                "https://h/.well-known/oauth-protected-resource",
            ),
            // A function mounted under a prefix (cargo lambda watch, a proxy) keeps it.
            (
                "http://127.0.0.1:9000/lambda-url/mcp-tools/mcp",
                "http://127.0.0.1:9000/lambda-url/mcp-tools/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://a.lambda-url.eu-west-1.on.aws:8443/v1",
                "https://a.lambda-url.eu-west-1.on.aws:8443/.well-known/oauth-protected-resource/v1",
            ),
        ];
        for (resource, url) in cases {
            assert_eq!(metadata_url(resource), url, "{resource}");
        }
    }

    #[test]
    fn the_metadata_document_names_the_issuer_and_the_scopes() {
        assert_eq!(
            protected_resource_metadata(&config(), AUDIENCE),
            json!({
                "resource": AUDIENCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["jobs:read", "jobs:write", "jobs:approve"],
                "bearer_methods_supported": ["header"],
                "resource_name": "mcp-tools",
            })
        );
    }

    #[test]
    fn challenges_point_at_the_metadata() {
        let c = config();
        let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            challenge(&c, AUDIENCE, Challenge::MissingToken),
            format!(r#"Bearer resource_metadata="{metadata}", scope="jobs:read jobs:write""#)
        );
        assert_eq!(
            challenge(&c, AUDIENCE, Challenge::InvalidToken),
            format!(
                r#"Bearer resource_metadata="{metadata}", scope="jobs:read jobs:write", error="invalid_token""#
            )
        );
        assert_eq!(
            challenge(&c, AUDIENCE, Challenge::InsufficientScope("jobs:write")),
            format!(
                r#"Bearer resource_metadata="{metadata}", scope="jobs:write", error="insufficient_scope""#
            )
        );
        // Without OAUTH_AUDIENCE, the resource is the request's own MCP URL.
        let unset = OAuthConfig {
            audience: None,
            ..config()
        };
        assert_eq!(
            resource(&unset, "abc.lambda-url.eu-west-1.on.aws"),
            "https://abc.lambda-url.eu-west-1.on.aws/mcp"
        );
        assert_eq!(resource(&c, "abc.lambda-url.eu-west-1.on.aws"), AUDIENCE);
        // Every challenge is a valid header value.
        assert!(
            http::HeaderValue::from_str(&challenge(&c, AUDIENCE, Challenge::InvalidToken)).is_ok()
        );
    }
}
