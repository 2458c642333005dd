//! Who the caller is, by `AUTH_MODE`: [`iam`] (the identity Lambda checked), [`bearer`]
//! (named static tokens), [`oauth`] (access tokens of one issuer), or none (local runs). The
//! front door asks once per request, through [`Authenticator::authenticate`]; nothing below
//! the front door reads a credential.

pub mod bearer;
pub mod iam;
pub mod oauth;
pub mod refusal;

use domain::caller::Principal;
use domain::time::Clock;
use lambda_http::request::RequestContext;

use crate::config::{AuthMode, NamedToken, OAuthConfig};
pub use crate::contract::Access;
use oauth::verify::Verifier;
use oauth::OAuth;
pub use refusal::Refusal;

/// The configured mode with what it checks callers against, built once at cold start (the
/// oauth mode's verifier keeps the keys it fetched).
pub enum Authenticator {
    None,
    Iam,
    Bearer(Vec<NamedToken>),
    /// Boxed: the verifier and its key cache are far larger than the other modes.
    OAuth(Box<OAuth>),
}

impl Authenticator {
    /// `verifier` makes the oauth mode's verifier from its settings (tests give it other
    /// keys); `clock` is what tokens are checked by.
    pub fn new(
        mode: &AuthMode,
        clock: Clock,
        verifier: impl FnOnce(&OAuthConfig) -> Verifier,
    ) -> Self {
        match mode {
            AuthMode::None => Self::None,
            AuthMode::Iam => Self::Iam,
            AuthMode::Bearer { tokens } => Self::Bearer(tokens.clone()),
            AuthMode::OAuth(config) => Self::OAuth(Box::new(OAuth::new(
                config.clone(),
                verifier(config),
                clock,
            ))),
        }
    }

    /// The oauth mode's settings and verifier; `None` in every other mode.
    pub fn oauth(&self) -> Option<&OAuth> {
        match self {
            Self::OAuth(oauth) => Some(oauth),
            _ => None,
        }
    }

    /// Who the caller of a request is, from its headers (or, in iam mode, the identity Lambda
    /// checked), or why it is refused. Nothing of the body is looked at: an unauthenticated
    /// body is never parsed.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        context: Option<&RequestContext>,
    ) -> Result<Authenticated, Refusal> {
        let authorization = || {
            headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
        };
        let principal = match self {
            Self::None => Principal::Local,
            Self::Iam => iam::principal(context)?,
            Self::Bearer(tokens) => bearer::principal(authorization(), tokens)?,
            Self::OAuth(oauth) => {
                let host = oauth::metadata::resource_host(context, headers);
                let resource = oauth::metadata::resource(&oauth.config, host);
                let (principal, scopes) = oauth.caller(authorization(), &resource).await?;
                return Ok(Authenticated {
                    principal,
                    scopes: Some(Scopes {
                        granted: scopes,
                        resource,
                    }),
                });
            }
        };
        Ok(Authenticated {
            principal,
            scopes: None,
        })
    }

    /// The caller, when it may do what the request asks (`access`, read from the body once
    /// the caller is known). Only OAuth scopes tell reading from writing.
    pub fn authorize(
        &self,
        caller: Authenticated,
        access: &[Access],
    ) -> Result<Principal, Refusal> {
        if let (Some(oauth), Some(scopes)) = (self.oauth(), &caller.scopes) {
            for needed in access {
                oauth.authorize(&scopes.granted, &scopes.resource, *needed)?;
            }
        }
        Ok(caller.principal)
    }
}

/// A caller whose credential was checked, before what the request asks for is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub principal: Principal,
    /// The token's scopes and the resource it was checked for (oauth mode only).
    scopes: Option<Scopes>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Scopes {
    granted: Vec<String>,
    resource: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::test_env::{env, mcp_env};
    use crate::config::McpToolsConfig;

    pub(crate) fn config(auth: &str) -> McpToolsConfig {
        let vars = mcp_env(&[
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
        ]);
        McpToolsConfig::from_env(&env(&vars)).unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()))
            .collect()
    }

    /// The caller `config`'s mode finds in a request (not oauth: no scope is looked at).
    async fn identify(
        config: &McpToolsConfig,
        headers: &http::HeaderMap,
        context: Option<&RequestContext>,
    ) -> Result<Principal, Refusal> {
        let verifier = |_: &OAuthConfig| unreachable!("not in oauth mode");
        let auth = Authenticator::new(&config.auth, Clock::default(), verifier);
        let caller = auth.authenticate(headers, context).await?;
        auth.authorize(caller, &[Access::Read])
    }

    #[tokio::test]
    async fn each_named_token_is_its_own_caller_and_a_wrong_one_is_refused() {
        let bearer = config("bearer");
        let no_token = identify(&bearer, &headers(&[]), None).await.unwrap_err();
        assert_eq!(no_token.status, 401);
        assert_eq!(
            no_token.challenge.as_deref(),
            Some(r#"Bearer realm="mcp-tools""#)
        );
        let wrong = identify(&bearer, &headers(&[("authorization", "Bearer nope")]), None)
            .await
            .unwrap_err();
        assert_eq!(wrong.status, 401);
        assert!(wrong.challenge.unwrap().contains("invalid_token"));
        for (token, name) in [("secret", "default"), ("test", "agent-a")] {
            let header = format!("Bearer {token}");
            let principal = identify(
                &bearer,
                &headers(&[("authorization", header.as_str())]),
                None,
            )
            .await
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

    #[tokio::test]
    async fn an_iam_caller_is_its_identity_and_a_request_without_one_is_refused() {
        let iam = config("iam");
        let signed = url_context(serde_json::json!({"iam": {
            "accessKey": "AKIA", "accountId": "123456789012", "callerId": "AROA:s",
            "userArn": "arn:aws:sts::123456789012:assumed-role/Agent/s-1", "userId": "AROA:s"
        }}));
        assert_eq!(
            identify(&iam, &headers(&[]), Some(&signed)).await.unwrap(),
            Principal::Iam {
                arn: "arn:aws:sts::123456789012:assumed-role/Agent".into(),
                session: Some("s-1".into()),
            }
        );
        let unsigned = url_context(serde_json::Value::Null);
        for context in [Some(&unsigned), None] {
            let refused = identify(&iam, &headers(&[]), context).await.unwrap_err();
            assert_eq!(refused.status, 403);
        }
    }
}
