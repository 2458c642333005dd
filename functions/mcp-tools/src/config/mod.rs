//! mcp-tools' configuration, read once at cold start: the tools' own settings ([`tools`], the
//! same for every front door), how callers are authenticated ([`auth`]), and what the Function
//! URL's front door serves (hosts, origins). Each part lists the variables it reads.

pub mod auth;
pub mod events;
pub mod issuer_url;
pub mod tools;

use domain::caller::{Owner, Principal};
use entry::config::{ConfigError, Env};

pub use auth::{AuthMode, NamedToken, OAuthConfig, DEFAULT_TOKEN_NAME};
pub use tools::{PipelineParameters, ToolsConfig, TRAINING_ARGUMENTS};

/// The variables the front door reads besides the tools' and the auth modes'.
pub const VARIABLES: &[&str] = &[
    "AUTH_MODE",
    "MCP_ALLOWED_HOSTS",
    "MCP_ALLOWED_ORIGINS",
    "APPROVERS",
    "EVENTS_TABLE",
    "SUBSCRIPTIONS_TABLE",
    "EVENTS_ALLOW_LOCAL_CALLBACKS",
];
/// The ones without which mcp-tools does not start (beside the tools' own).
pub const REQUIRED: &[&str] = &["AUTH_MODE"];

use auth::bearer_tokens;

/// Configuration of `mcp-tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolsConfig {
    /// What the tools need: the same for every front door.
    pub tools: ToolsConfig,
    pub auth: AuthMode,
    /// `Host` values served: exact names, or `*.suffix` patterns.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed; a request with any other `Origin` gets 403.
    pub allowed_origins: Vec<String>,
}

impl McpToolsConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        const AUTH: &str = "iam (the Function URL checks SigV4), bearer (MCP_BEARER_TOKENS or \
            MCP_BEARER_TOKEN_SHA256), oauth (OAUTH_ISSUER, OAUTH_AUDIENCE) or none (local only)";
        let auth = match env
            .required("AUTH_MODE", AUTH)?
            .to_ascii_lowercase()
            .as_str()
        {
            "iam" => AuthMode::Iam,
            "none" => AuthMode::None,
            "bearer" => AuthMode::Bearer {
                tokens: bearer_tokens(env)?,
            },
            "oauth" => AuthMode::OAuth(OAuthConfig::from_env(env)?),
            _ => {
                return Err(ConfigError::Invalid {
                    name: "AUTH_MODE",
                    value: env.required("AUTH_MODE", AUTH)?,
                    expected: AUTH,
                })
            }
        };
        let region_hosts = match env.optional("AWS_REGION") {
            Some(region) => format!("*.lambda-url.{region}.on.aws"),
            None => "*.on.aws".to_owned(),
        };
        let mut tools = ToolsConfig::from_env(env)?;
        tools.approvers = approvers(env, &auth)?;
        tools.events = events::EventsConfig::from_env(env)?;
        Ok(Self {
            tools,
            auth,
            allowed_hosts: env.list(
                "MCP_ALLOWED_HOSTS",
                &format!("{region_hosts},127.0.0.1,localhost"),
            ),
            allowed_origins: env.list("MCP_ALLOWED_ORIGINS", ""),
        })
    }
}

/// `APPROVERS`: who may answer runs' questions, each one person, named as the auth mode names
/// callers: IAM users' ARNs or assumed-role session ARNs (a whole role is every session of it),
/// bearer token names (each one configured), OAuth subjects (of the configured issuer). Unset
/// or empty: each run's owner. Not with no auth, where every caller is one and owns every run.
fn approvers<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
    auth: &AuthMode,
) -> Result<Option<Vec<Owner>>, ConfigError> {
    const EXPECTED: &str = "a comma-separated list of people as the auth mode names callers: \
        IAM user ARNs or assumed-role session ARNs, arn:aws:sts::<account>:assumed-role/<role>/\
        <session> (iam; not a whole role), configured bearer token names (bearer), token \
        subjects (oauth); unset with AUTH_MODE=none, whose one caller owns every run";
    let names = env.list("APPROVERS", "");
    if names.is_empty() {
        return Ok(None);
    }
    let invalid = |name: &str| ConfigError::Invalid {
        name: "APPROVERS",
        value: name.chars().take(256).collect(),
        expected: EXPECTED,
    };
    names
        .iter()
        .map(|name| {
            let principal = match auth {
                AuthMode::Iam => Principal::iam(name),
                AuthMode::Bearer { tokens } => tokens
                    .iter()
                    .any(|t| &t.name == name)
                    .then(|| Principal::Bearer { name: name.clone() }),
                AuthMode::OAuth(oauth) => Some(Principal::OAuth {
                    issuer: oauth.issuer.clone(),
                    subject: name.clone(),
                }),
                AuthMode::None => None,
            };
            principal
                .filter(Principal::names_a_person)
                .map(|p| p.caller().person)
                .ok_or_else(|| invalid(name))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[cfg(test)]
pub(crate) mod test_env {
    pub use entry::config::test_env as env;

    /// The variables every configuration needs, with `extra` added or put in their place.
    pub fn mcp_env<'a>(extra: &[(&'static str, &'a str)]) -> Vec<(&'static str, &'a str)> {
        let mut vars: Vec<(&'static str, &'a str)> = vec![
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "e"),
            ("PIPELINE_NAME", "pl"),
            ("AWS_REGION", "eu-west-1"),
        ];
        vars.retain(|(name, _)| extra.iter().all(|(n, _)| n != name));
        vars.extend_from_slice(extra);
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::test_env::{env, mcp_env};
    use super::*;

    #[test]
    fn mcp_tools_refuses_to_start_without_auth_mode() {
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[]))).unwrap_err();
        assert!(err.to_string().contains("AUTH_MODE is not set"), "{err}");
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "open")]))).unwrap_err();
        assert!(
            err.to_string().contains("AUTH_MODE=\"open\" is invalid"),
            "{err}"
        );
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "bearer")]))).unwrap_err();
        assert!(
            err.to_string().contains("MCP_BEARER_TOKENS")
                && err.to_string().contains("MCP_BEARER_TOKEN_SHA256"),
            "{err}"
        );
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKEN_SHA256", "abc"),
        ])))
        .unwrap_err();
        assert!(err.to_string().contains("64 hex digits"), "{err}");
    }

    #[test]
    fn mcp_tools_defaults() {
        let hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKEN_SHA256", hash),
        ])))
        .unwrap();
        let AuthMode::Bearer { tokens } = cfg.auth else {
            panic!()
        };
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].name, DEFAULT_TOKEN_NAME);
        assert_eq!(tokens[0].sha256[0], 0x9f);
        assert_eq!(
            cfg.allowed_hosts,
            ["*.lambda-url.eu-west-1.on.aws", "127.0.0.1", "localhost"]
        );
        assert!(cfg.allowed_origins.is_empty());
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "iam"),
            ("MCP_ALLOWED_HOSTS", "mcp.example.com, x.y"),
        ])))
        .unwrap();
        assert_eq!(cfg.allowed_hosts, ["mcp.example.com", "x.y"]);
    }

    #[test]
    fn approvers_are_named_as_the_auth_mode_names_callers() {
        let cfg = |extra: &[(&'static str, &'static str)]| {
            McpToolsConfig::from_env(&env(&mcp_env(extra)))
        };
        assert_eq!(cfg(&[("AUTH_MODE", "iam")]).unwrap().tools.approvers, None);
        // One person each: a role's session is told from the role's other sessions.
        let session = "arn:aws:sts::123456789012:assumed-role/Reviewer/alice";
        let iam = cfg(&[("AUTH_MODE", "iam"), ("APPROVERS", session)]);
        let alice = Principal::iam(session).unwrap().caller();
        assert_ne!(alice.person, alice.owner);
        assert_eq!(iam.unwrap().tools.approvers, Some(vec![alice.person]));
        // A whole role is everyone who may assume it: refused, as is a role's session-less ARN.
        for whole_role in [
            "arn:aws:iam::123456789012:role/Reviewer",
            "arn:aws:sts::123456789012:assumed-role/Reviewer",
        ] {
            let refused = cfg(&[("AUTH_MODE", "iam"), ("APPROVERS", whole_role)]).unwrap_err();
            assert!(
                refused.to_string().contains("not a whole role"),
                "{refused}"
            );
        }
        let user = "arn:aws:iam::123456789012:user/bob";
        assert!(cfg(&[("AUTH_MODE", "iam"), ("APPROVERS", user)]).is_ok());
        let tokens = "a:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let bearer = cfg(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKENS", tokens),
            ("APPROVERS", "a"),
        ]);
        let a = Principal::Bearer { name: "a".into() }.caller().owner;
        assert_eq!(bearer.unwrap().tools.approvers, Some(vec![a]));
        let unknown = cfg(&[
            ("AUTH_MODE", "bearer"),
            ("MCP_BEARER_TOKENS", tokens),
            ("APPROVERS", "a, zed"),
        ]);
        assert!(unknown
            .unwrap_err()
            .to_string()
            .contains("APPROVERS=\"zed\""));
        // With no auth the one caller owns every run: there is nobody else to approve.
        for name in ["someone", "local"] {
            assert!(cfg(&[("AUTH_MODE", "none"), ("APPROVERS", name)]).is_err());
        }
    }

    #[test]
    fn answers_come_by_any_path_unless_the_form_alone_is_asked_for() {
        use tools::ApprovalsVia;
        let cfg = |extra: &[(&'static str, &'static str)]| {
            McpToolsConfig::from_env(&env(&mcp_env(extra)))
        };
        let none = ("AUTH_MODE", "none");
        assert_eq!(cfg(&[none]).unwrap().tools.approvals_via, ApprovalsVia::Any);
        let form = cfg(&[none, ("APPROVALS_VIA", "Elicitation")]).unwrap();
        assert_eq!(form.tools.approvals_via, ApprovalsVia::Elicitation);
        assert!(!form.tools.approvals_via.serves_answer_tools());
        let bad = cfg(&[none, ("APPROVALS_VIA", "tool")])
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("APPROVALS_VIA") && bad.contains("elicitation"),
            "{bad}"
        );
    }

    #[test]
    fn the_approval_gate_is_off_unless_set_true_and_a_bad_value_is_named() {
        let cfg = |extra: &[(&'static str, &'static str)]| {
            McpToolsConfig::from_env(&env(&mcp_env(extra)))
        };
        let none = ("AUTH_MODE", "none");
        assert!(!cfg(&[none]).unwrap().tools.approval_gate);
        let on = cfg(&[none, ("APPROVAL_GATE", "TRUE")]).unwrap();
        assert!(on.tools.approval_gate);
        let bad = cfg(&[none, ("APPROVAL_GATE", "yes")])
            .unwrap_err()
            .to_string();
        assert!(bad.contains("APPROVAL_GATE"), "{bad}");
    }

    #[test]
    fn each_mode_reads_only_listed_variables() {
        let mut listed: Vec<&str> = VARIABLES
            .iter()
            .chain(auth::VARIABLES)
            .chain(tools::VARIABLES)
            .copied()
            .collect();
        listed.sort_unstable();
        listed.dedup();
        let mut seen = std::collections::BTreeSet::new();
        for mode in [
            &[("AUTH_MODE", "iam")][..],
            &[("AUTH_MODE", "none")],
            &[
                ("AUTH_MODE", "bearer"),
                (
                    "MCP_BEARER_TOKENS",
                    "a:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                ),
            ],
            &[
                ("AUTH_MODE", "oauth"),
                ("OAUTH_ISSUER", "https://issuer.example.com"),
            ],
        ] {
            let mut vars = mcp_env(&[]);
            vars.extend_from_slice(mode);
            let (env, asked) = entry::config::recording_env(&vars);
            McpToolsConfig::from_env(&env).unwrap();
            seen.extend(asked.borrow().iter().cloned());
        }
        let seen: Vec<String> = seen.into_iter().collect();
        assert_eq!(seen, listed);
        let err = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "oauth")]))).unwrap_err();
        assert!(
            auth::OAUTH_REQUIRED
                .iter()
                .all(|v| err.to_string().contains(v)),
            "{err}"
        );
    }
}
