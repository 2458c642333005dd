//! What the front door reads of the HTTP request's headers before MCP sees it: the `Host`,
//! checked, and a task request's missing `Mcp-Name`.

/// A `Host` as DNS writes a name: labels of letters, digits and hyphens (not at a label's
/// ends) joined by dots, at most 253 characters, and an optional port. Anything else (a
/// userinfo part, a path, spaces, an IP literal in brackets) is refused before the request is
/// looked at further, and no URL is ever built from it.
pub fn is_dns_host(host: &str) -> bool {
    let Some(name) = host_name(host) else {
        return false;
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A `Host`'s name without its port; None when what follows the last `:` is no port (1 to 5
/// digits, at most 65535).
fn host_name(host: &str) -> Option<&str> {
    match host.rsplit_once(':') {
        Some((name, port)) => {
            let port_ok = (1..=5).contains(&port.len())
                && port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u32>().is_ok_and(|p| p <= 65_535);
            port_ok.then_some(name)
        }
        None => Some(host),
    }
}

/// The `Host` (port ignored) is one of `allowed`: an exact name, or `*.suffix` for any
/// subdomain of suffix (a Function URL's host is `<url-id>.lambda-url.<region>.on.aws`).
pub fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(name) = host.and_then(host_name) else {
        return false;
    };
    let name = name.to_ascii_lowercase();
    allowed.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(suffix) => name.len() > suffix.len() + 1 && name.ends_with(&format!(".{suffix}")),
            None => name == pattern,
        }
    })
}

/// The request's `Host`, if it is text.
pub fn host(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
}

/// The `Mcp-Name` a `tasks/*` request should carry (its `taskId`), when it carries none.
/// rmcp 3.11 requires the header on `tasks/get`, `tasks/update` and `tasks/cancel`, while the
/// Python SDK 2.3 under FastMCP's tasks client sends it only for tools, prompts and resources; the
/// body holds the same value (`task_id`, from [`crate::request_body::RpcBody`]), so a missing header is filled from
/// it. A header that is present is left for rmcp to check against the body.
pub fn missing_task_name(
    headers: &http::HeaderMap,
    task_id: Option<&str>,
) -> Option<http::HeaderValue> {
    let method = headers.get("mcp-method")?.to_str().ok()?;
    if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
        || headers.contains_key("mcp-name")
    {
        return None;
    }
    http::HeaderValue::from_str(task_id?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_body::RpcBody;

    #[test]
    fn only_dns_names_with_an_optional_port_are_hosts() {
        for ok in [
            "abc123.lambda-url.us-east-1.on.aws",
            "127.0.0.1:9000",
            "localhost",
            "mcp.example.com.",
            "a-b.example:443",
        ] {
            assert!(is_dns_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example@abc.lambda-url.us-east-1.on.aws",
            "abc.lambda-url.us-east-1.on.aws/x",
            "abc .on.aws",
            "-a.example",
            "a..b",
            "[::1]:80",
            "a.example:",
            "a.example:99999",
            "a.example:80:80",
            "a\"b.example",
            &"a".repeat(64),
        ] {
            assert!(!is_dns_host(bad), "{bad}");
        }
    }

    #[test]
    fn a_task_request_without_mcp_name_gets_it_from_the_body() {
        let headers = |pairs: &[(&'static str, &str)]| -> http::HeaderMap {
            pairs
                .iter()
                .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
                .collect()
        };
        let missing_task_name = |headers: &http::HeaderMap, body: &[u8]| {
            super::missing_task_name(headers, RpcBody::parse(body).unwrap().task_id.as_deref())
        };
        let body =
            br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"abc.123"}}"#;
        assert_eq!(
            missing_task_name(&headers(&[("mcp-method", "tasks/get")]), body).unwrap(),
            "abc.123"
        );
        assert!(missing_task_name(
            &headers(&[("mcp-method", "tasks/get"), ("mcp-name", "other")]),
            body
        )
        .is_none());
        assert!(missing_task_name(&headers(&[("mcp-method", "tools/call")]), body).is_none());
        assert!(missing_task_name(&headers(&[]), body).is_none());
        assert!(missing_task_name(&headers(&[("mcp-method", "tasks/get")]), b"not json").is_none());
    }

    fn hosts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hosts_match_exactly_or_by_subdomain_pattern() {
        let allowed = hosts(&["*.lambda-url.eu-west-1.on.aws", "127.0.0.1", "localhost"]);
        assert!(host_allowed(
            Some("abc123.lambda-url.eu-west-1.on.aws"),
            &allowed
        ));
        assert!(host_allowed(Some("127.0.0.1:9000"), &allowed));
        assert!(host_allowed(Some("LOCALHOST"), &allowed));
        assert!(!host_allowed(Some("lambda-url.eu-west-1.on.aws"), &allowed));
        assert!(!host_allowed(
            Some("abc.lambda-url.us-east-1.on.aws"),
            &allowed
        ));
        assert!(!host_allowed(Some("evil.example"), &allowed));
        assert!(!host_allowed(
            Some("evil-lambda-url.eu-west-1.on.aws"),
            &allowed
        ));
        assert!(!host_allowed(None, &allowed));
    }
}
