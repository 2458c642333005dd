//! Checks mcp-tools makes on the HTTP request before MCP sees it.

use sha2::{Digest, Sha256};

/// The `Host` (port ignored) is one of `allowed`: an exact name, or `*.suffix` for any
/// subdomain of suffix (a Function URL's host is `<url-id>.lambda-url.<region>.on.aws`).
pub fn host_allowed(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(host) = host else { return false };
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
    .to_ascii_lowercase();
    allowed.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(suffix) => name.len() > suffix.len() + 1 && name.ends_with(&format!(".{suffix}")),
            None => name == pattern,
        }
    })
}

/// `Authorization: Bearer <token>` whose SHA-256 is `expected`, compared in constant time.
pub fn bearer_ok(authorization: Option<&str>, expected: &[u8; 32]) -> bool {
    let Some(token) = authorization.and_then(|h| {
        let (scheme, rest) = h.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    }) else {
        return false;
    };
    let digest = Sha256::digest(token.as_bytes());
    let diff = digest
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    !token.is_empty() && diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn bearer_tokens_are_checked_by_hash() {
        // sha256("test")
        let expected: [u8; 32] = Sha256::digest(b"test").into();
        assert!(bearer_ok(Some("Bearer test"), &expected));
        assert!(bearer_ok(Some("bearer  test "), &expected));
        assert!(!bearer_ok(Some("Bearer wrong"), &expected));
        assert!(!bearer_ok(Some("Basic dGVzdA=="), &expected));
        assert!(!bearer_ok(Some("Bearer"), &expected));
        assert!(!bearer_ok(None, &expected));
    }
}
