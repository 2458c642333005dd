//! How mcp-tools authenticates its callers (`AUTH_MODE` and each mode's settings).

use entry::config::{ConfigError, Env};

use super::issuer_url;

/// The variables the auth modes read.
pub const VARIABLES: &[&str] = &[
    "MCP_BEARER_TOKEN_SHA256",
    "MCP_BEARER_TOKENS",
    "OAUTH_ISSUER",
    "OAUTH_AUDIENCE",
    "OAUTH_JWKS_URI",
    "OAUTH_READ_SCOPE",
    "OAUTH_WRITE_SCOPE",
    "OAUTH_APPROVE_SCOPE",
    "OAUTH_CLIENT_IDS",
    "OAUTH_JWKS_MIN_REFRESH_SECS",
    "OAUTH_ALLOW_LOCAL_ISSUER",
];
/// Required in `oauth` mode.
pub const OAUTH_REQUIRED: &[&str] = &["OAUTH_ISSUER"];
/// In `bearer` mode, at least one of these.
pub const BEARER_ONE_OF: &[&str] = &["MCP_BEARER_TOKENS", "MCP_BEARER_TOKEN_SHA256"];

/// How mcp-tools authenticates callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMode {
    /// The Function URL's AWS_IAM auth has already checked the SigV4 signature; the caller is
    /// the IAM identity in the event's request context.
    Iam,
    /// `Authorization: Bearer <token>`, checked against each named token's SHA-256; the
    /// caller is the token's name.
    Bearer { tokens: Vec<NamedToken> },
    /// OAuth 2.1 access tokens (JWT) from one issuer; the caller is the token's `iss` + `sub`.
    OAuth(OAuthConfig),
    /// No authentication: for local runs only; every caller is one local principal.
    None,
}

/// A bearer token known by the SHA-256 of its value, and the caller it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedToken {
    pub name: String,
    pub sha256: [u8; 32],
}

/// The name `MCP_BEARER_TOKEN_SHA256`'s single token goes by.
pub use domain::caller::DEFAULT_TOKEN_NAME;

/// `AUTH_MODE=oauth`: mcp-tools as an OAuth 2.1 resource server (MCP authorization).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier; tokens must carry it as `iss`.
    pub issuer: String,
    /// This resource (normally the public MCP URL); tokens must carry it in `aud`. When unset,
    /// the request's own `https://<Host>/mcp`.
    pub audience: Option<String>,
    /// App clients whose access tokens carry no `aud` but a `client_id` (Cognito's).
    pub client_ids: Vec<String>,
    /// Where the signing keys are; from the issuer's metadata when unset.
    pub jwks_uri: Option<String>,
    /// The scope the read tools need, and the one the tools that start or stop work need.
    pub read_scope: String,
    pub write_scope: String,
    /// The scope answering a run's questions and deciding its model needs: a person's client
    /// is given it, an agent's is not (`OAUTH_APPROVE_SCOPE`).
    pub approve_scope: String,
    /// The least time between two JWKS fetches caused by an unknown `kid`.
    pub jwks_min_refresh_secs: u64,
    /// `OAUTH_ALLOW_LOCAL_ISSUER=true`: the issuer and its keys may be on this machine or a
    /// private network (local development; see [`super::issuer_url`]).
    pub allow_local_issuer: bool,
}

impl OAuthConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        const ISSUER: &str = "the authorization server's issuer URL, https:// on a public \
            address (with OAUTH_ALLOW_LOCAL_ISSUER=true, for local development: also a private \
            address, or http:// on 127.0.0.1 or localhost), \
            e.g. https://cognito-idp.<region>.amazonaws.com/<pool-id>";
        const AUDIENCE: &str = "this server's resource identifier, normally its public MCP URL \
            (https://<url-id>.lambda-url.<region>.on.aws/mcp)";
        const JWKS: &str = "the issuer's JWKS URL, https:// on a public address (with \
            OAUTH_ALLOW_LOCAL_ISSUER=true, for local development: also a private address, or \
            http:// on 127.0.0.1 or localhost), or unset to read it from the issuer's metadata";
        const FLAG: &str = "true or false (true only for an issuer on this machine or a \
            private network, in local development)";
        const SCOPE: &str = "one OAuth scope name, no spaces";
        let allow_local_issuer = env.flag("OAUTH_ALLOW_LOCAL_ISSUER", FLAG)?;
        let fetched_url = |name: &'static str, url: String, expected: &'static str| {
            let ok = issuer_url::check(&url, allow_local_issuer).is_ok()
                && !url.contains(char::is_whitespace);
            ok.then_some(url.clone()).ok_or(ConfigError::Invalid {
                name,
                value: url,
                expected,
            })
        };
        let issuer = env.required("OAUTH_ISSUER", ISSUER)?;
        let issuer = fetched_url("OAUTH_ISSUER", issuer, ISSUER)?;
        let audience = match env.optional("OAUTH_AUDIENCE") {
            Some(audience) => Some(secure_url(
                "OAUTH_AUDIENCE",
                audience.trim().to_owned(),
                AUDIENCE,
            )?),
            None => None,
        };
        let jwks_uri = match env.optional("OAUTH_JWKS_URI") {
            Some(uri) => Some(fetched_url("OAUTH_JWKS_URI", uri, JWKS)?),
            None => None,
        };
        let scope = |name: &'static str, default: &str| -> Result<String, ConfigError> {
            let value = env.optional(name).unwrap_or_else(|| default.to_owned());
            let ok = value
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
            ok.then_some(value.clone()).ok_or(ConfigError::Invalid {
                name,
                value,
                expected: SCOPE,
            })
        };
        Ok(Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            audience,
            client_ids: env.list("OAUTH_CLIENT_IDS", ""),
            jwks_uri,
            read_scope: scope("OAUTH_READ_SCOPE", "jobs:read")?,
            write_scope: scope("OAUTH_WRITE_SCOPE", "jobs:write")?,
            approve_scope: scope("OAUTH_APPROVE_SCOPE", "jobs:approve")?,
            jwks_min_refresh_secs: env.number_in(
                "OAUTH_JWKS_MIN_REFRESH_SECS",
                60,
                1..=86_400,
                "a number of seconds from 1 to 86400",
            )?,
            allow_local_issuer,
        })
    }
}

/// Whether `OAUTH_AUDIENCE` may name this resource: `https://`, or `http://` to this machine
/// only (a local run). Parsed, so the host is the real one (`http://127.0.0.1:80@evil.example`
/// is evil.example's).
pub fn https_or_loopback(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::LOCALHOST,
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        None => false,
    };
    match parsed.scheme() {
        "https" => parsed.host().is_some(),
        "http" => loopback,
        _ => false,
    }
}

/// A URL [`https_or_loopback`] allows, as the variable `name` gives it.
fn secure_url(
    name: &'static str,
    url: String,
    expected: &'static str,
) -> Result<String, ConfigError> {
    if https_or_loopback(&url) && !url.contains(char::is_whitespace) {
        Ok(url)
    } else {
        Err(ConfigError::Invalid {
            name,
            value: url,
            expected,
        })
    }
}

/// Bearer mode's tokens: `MCP_BEARER_TOKENS=name:sha256hex,…`, and the single
/// `MCP_BEARER_TOKEN_SHA256` as the token named `default`. At least one is needed.
pub(crate) fn bearer_tokens<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Vec<NamedToken>, ConfigError> {
    const HASH: &str = "the hex SHA-256 of the bearer token (64 hex digits), e.g. from `printf %s \"$TOKEN\" | sha256sum`";
    const TOKENS: &str = "comma-separated name:sha256hex pairs (names of letters, digits, . _ -, \
        at most 64, each name and hash once), e.g. agent-a:<64 hex digits>,agent-b:<64 hex digits>";
    let mut tokens = Vec::new();
    if let Some(hash) = env.optional("MCP_BEARER_TOKEN_SHA256") {
        let sha256 = parse_sha256(&hash).ok_or(ConfigError::Invalid {
            name: "MCP_BEARER_TOKEN_SHA256",
            value: hash.clone(),
            expected: HASH,
        })?;
        tokens.push(NamedToken {
            name: DEFAULT_TOKEN_NAME.to_owned(),
            sha256,
        });
    }
    if let Some(text) = env.optional("MCP_BEARER_TOKENS") {
        let invalid = || ConfigError::Invalid {
            name: "MCP_BEARER_TOKENS",
            // Hashes only, but a value is still better named than echoed.
            value: format!("{} entries", text.split(',').count()),
            expected: TOKENS,
        };
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, hash) = entry.split_once(':').ok_or_else(invalid)?;
            let name = name.trim();
            let sha256 = parse_sha256(hash).ok_or_else(invalid)?;
            let name_ok = !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            let repeated = tokens
                .iter()
                .any(|t: &NamedToken| t.name == name || t.sha256 == sha256);
            if !name_ok || repeated {
                return Err(invalid());
            }
            tokens.push(NamedToken {
                name: name.to_owned(),
                sha256,
            });
        }
    }
    if tokens.is_empty() {
        return Err(ConfigError::Missing {
            name: "MCP_BEARER_TOKENS",
            expected: "in bearer mode, MCP_BEARER_TOKENS (name:sha256hex,…) or MCP_BEARER_TOKEN_SHA256 (64 hex digits)",
        });
    }
    Ok(tokens)
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::{env, mcp_env};
    use crate::config::McpToolsConfig;

    #[test]
    fn named_bearer_tokens_and_the_default_one() {
        let a = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let b = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";
        let both = format!("agent-a:{a}, agent.b:{b}");
        let both: &'static str = Box::leak(both.into_boxed_str());
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKENS", both),
        ])))
        .unwrap();
        let AuthMode::Bearer { tokens } = cfg.auth else {
            panic!()
        };
        let names: Vec<_> = tokens.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["agent-a", "agent.b"]);
        for bad in [
            format!("agent-a:{a},agent-a:{b}"),
            format!("agent-a:{a},agent-b:{a}"),
            format!("has space:{a}"),
            "agent-a:abc".to_owned(),
            format!("agent-a{a}"),
        ] {
            let bad: &'static str = Box::leak(bad.into_boxed_str());
            let err = McpToolsConfig::from_env(&env(&mcp_env(&[
                ("AUTH_MODE", "bearer"),
                ("MCP_BEARER_TOKENS", bad),
            ])))
            .unwrap_err();
            let text = err.to_string();
            assert!(text.contains("MCP_BEARER_TOKENS"), "{bad}: {text}");
            assert!(!text.contains(a) && !text.contains(b), "{text}");
        }
        // The single token joins the named ones as `default`; its name cannot be taken twice.
        let dup = format!("default:{b}");
        let dup: &'static str = Box::leak(dup.into_boxed_str());
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKEN_SHA256", a),
            ("MCP_BEARER_TOKENS", dup),
        ])))
        .unwrap_err();
        assert!(err.to_string().contains("MCP_BEARER_TOKENS"), "{err}");
    }

    #[test]
    fn oauth_needs_an_issuer_and_an_audience_and_https_off_loopback() {
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "oauth")]))).unwrap_err();
        assert!(err.to_string().contains("OAUTH_ISSUER"), "{err}");
        // Without an audience the resource is the request's own URL.
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "oauth"),
            ("OAUTH_ISSUER", "https://issuer.example.com"),
            ("OAUTH_CLIENT_IDS", " app-1 ,app-2,"),
        ])))
        .unwrap();
        let AuthMode::OAuth(oauth) = cfg.auth else {
            panic!()
        };
        assert_eq!(oauth.audience, None);
        assert_eq!(oauth.client_ids, ["app-1", "app-2"]);
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "OAuth"),
            ("OAUTH_ISSUER", "https://issuer.example.com/"),
            ("OAUTH_AUDIENCE", "https://mcp.example.com/mcp"),
        ])))
        .unwrap();
        let AuthMode::OAuth(oauth) = cfg.auth else {
            panic!()
        };
        assert_eq!(oauth.issuer, "https://issuer.example.com");
        assert_eq!(
            (oauth.read_scope.as_str(), oauth.write_scope.as_str()),
            ("jobs:read", "jobs:write")
        );
        assert_eq!(oauth.jwks_uri, None);
        assert_eq!(oauth.jwks_min_refresh_secs, 60);
        for (name, value) in [
            ("OAUTH_ISSUER", "http://issuer.example.com"),
            ("OAUTH_ISSUER", "http://127.0.0.1.evil.example"),
            ("OAUTH_ISSUER", "http://127.0.0.1:80@evil.example"),
            ("OAUTH_ISSUER", "https://"),
            ("OAUTH_ISSUER", "ftp://issuer.example.com"),
            ("OAUTH_JWKS_URI", "http://keys.example.com/jwks"),
            ("OAUTH_AUDIENCE", "http://mcp.example.com/mcp"),
            ("OAUTH_READ_SCOPE", "jobs read"),
        ] {
            let mut vars = vec![
                ("AUTH_MODE", "oauth"),
                ("OAUTH_ISSUER", "https://issuer.example.com"),
                ("OAUTH_AUDIENCE", "https://mcp.example.com/mcp"),
            ];
            vars.retain(|(k, _)| *k != name);
            vars.push((name, value));
            let err = McpToolsConfig::from_env(&env(&mcp_env(&vars))).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(name) && text.contains(value), "{text}");
        }
        let local = [
            ("AUTH_MODE", "oauth"),
            ("OAUTH_ISSUER", "http://127.0.0.1:9400"),
            (
                "OAUTH_AUDIENCE",
                "http://127.0.0.1:9000/lambda-url/mcp-tools/mcp",
            ),
            ("OAUTH_JWKS_URI", "http://localhost:9400/jwks"),
            ("OAUTH_WRITE_SCOPE", "https://mcp.example.com/jobs.write"),
            ("OAUTH_ALLOW_LOCAL_ISSUER", "true"),
        ];
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&local))).unwrap();
        let AuthMode::OAuth(oauth) = cfg.auth else {
            panic!()
        };
        assert_eq!(
            oauth.jwks_uri.as_deref(),
            Some("http://localhost:9400/jwks")
        );
        assert_eq!(oauth.write_scope, "https://mcp.example.com/jobs.write");
        assert!(oauth.allow_local_issuer);
        // Without the flag the same local issuer does not start.
        let err = McpToolsConfig::from_env(&env(&mcp_env(&local[..5]))).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("OAUTH_ISSUER=\"http://127.0.0.1:9400\"")
                && text.contains("OAUTH_ALLOW_LOCAL_ISSUER=true"),
            "{text}"
        );
    }

    #[test]
    fn an_issuer_or_jwks_uri_off_the_internet_needs_the_local_flag() {
        let start = |vars: &[(&'static str, &'static str)]| {
            let mut all = vec![("AUTH_MODE", "oauth")];
            all.extend_from_slice(vars);
            McpToolsConfig::from_env(&env(&mcp_env(&all)))
        };
        for (name, value) in [
            ("OAUTH_ISSUER", "https://127.0.0.1:9001"),
            ("OAUTH_ISSUER", "https://[::ffff:169.254.169.254]/"),
            ("OAUTH_ISSUER", "https://10.0.0.7/realms/ml"),
            ("OAUTH_ISSUER", "https://100.64.1.1"),
            ("OAUTH_ISSUER", "http://localhost:9400"),
            ("OAUTH_JWKS_URI", "https://169.254.169.254/latest/meta-data"),
            ("OAUTH_JWKS_URI", "https://[fd00::1]/jwks"),
            ("OAUTH_JWKS_URI", "http://127.0.0.1:9001/jwks"),
        ] {
            let mut vars = vec![("OAUTH_ISSUER", "https://issuer.example.com")];
            vars.retain(|(k, _)| *k != name);
            vars.push((name, value));
            let text = start(&vars).unwrap_err().to_string();
            assert!(
                text.contains(name)
                    && text.contains(value)
                    && text.contains("OAUTH_ALLOW_LOCAL_ISSUER=true"),
                "{text}"
            );
            vars.push(("OAUTH_ALLOW_LOCAL_ISSUER", "TRUE"));
            let AuthMode::OAuth(oauth) = start(&vars).unwrap().auth else {
                panic!()
            };
            assert!(oauth.allow_local_issuer, "{name}={value}");
        }
        // A name is judged by its addresses when fetched, not at cold start.
        let AuthMode::OAuth(oauth) = start(&[("OAUTH_ISSUER", "https://localhost:8443")])
            .unwrap()
            .auth
        else {
            panic!()
        };
        assert!(!oauth.allow_local_issuer);
        // Even with the flag, plain http only to this machine.
        let err = start(&[
            ("OAUTH_ISSUER", "http://10.0.0.7"),
            ("OAUTH_ALLOW_LOCAL_ISSUER", "true"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("OAUTH_ISSUER"), "{err}");
        for (value, allowed) in [("false", false), ("False", false), ("", false)] {
            let AuthMode::OAuth(oauth) = start(&[
                ("OAUTH_ISSUER", "https://issuer.example.com"),
                ("OAUTH_ALLOW_LOCAL_ISSUER", value),
            ])
            .unwrap()
            .auth
            else {
                panic!()
            };
            assert_eq!(oauth.allow_local_issuer, allowed, "{value:?}");
        }
        let err = start(&[
            ("OAUTH_ISSUER", "https://issuer.example.com"),
            ("OAUTH_ALLOW_LOCAL_ISSUER", "yes"),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("OAUTH_ALLOW_LOCAL_ISSUER=\"yes\" is invalid"),
            "{err}"
        );
    }
}
