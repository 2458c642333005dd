//! Configuration read once at cold start from the environment, one struct per function.
//!
//! Every problem names the variable, so a misconfigured deployment says exactly what to fix.

use std::str::FromStr;

use crate::domain::job::JobPolicy;
use crate::domain::quota::QuotaLimits;
use crate::domain::training_input::S3Prefix;
use crate::usecases::JobSettings;

/// DynamoDB items must stay under 400 KB; the inline result is capped well below that so
/// the rest of the item (ids, locations, a bounded failure excerpt) always fits.
pub const INLINE_RESULT_HARD_MAX_BYTES: u64 = 256 * 1024;
pub const DEFAULT_RESULT_TTL_SECS: u64 = 3600;
/// An inline result is paid for by size: its completing write costs a write unit per KB, and
/// every status check that reads it a read unit per 4 KB. At 4 KiB the largest inline item is a
/// few units; past that a pointer (one small write, and one S3 GET if the output is fetched) is
/// cheaper. BENCHMARKS.md has the figures.
pub const DEFAULT_INLINE_RESULT_MAX_BYTES: u64 = 4 * 1024;

/// The trigger_training arguments that become pipeline parameters.
pub const TRAINING_ARGUMENTS: [&str; 4] = [
    "input_data_uri",
    "max_epochs",
    "accuracy_threshold",
    "training_instance_type",
];
/// The instance types a run may ask for when `TRAINING_INSTANCE_TYPES` is unset: the
/// reference pipeline's default.
pub const DEFAULT_TRAINING_INSTANCE_TYPES: &str = "ml.m5.xlarge";
/// How long a request may wait in the endpoint's queue when submit_job does not say: long
/// enough for an endpoint scaled to zero to start an instance and load the model.
pub const DEFAULT_REQUEST_TTL_SECS: u32 = 3600;

/// The parameter names of the reference pipeline.
pub const DEFAULT_PIPELINE_PARAMETERS: &str = "input_data_uri=InputDataUri,max_epochs=MaxEpochs,\
    accuracy_threshold=AccuracyThreshold,training_instance_type=TrainingInstanceType";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {name} is not set (expected {expected})")]
    Missing {
        name: &'static str,
        expected: &'static str,
    },
    #[error("environment variable {name}={value:?} is invalid: expected {expected}")]
    Invalid {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// Reads variables through a lookup function so tests need not touch the process environment.
pub struct Env<F>(F);

impl Env<fn(&str) -> Option<String>> {
    pub fn process() -> Self {
        Env(|name| std::env::var(name).ok())
    }
}

impl<F: Fn(&str) -> Option<String>> Env<F> {
    pub fn from_lookup(lookup: F) -> Self {
        Env(lookup)
    }

    /// A required, non-empty string.
    pub fn required(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<String, ConfigError> {
        match (self.0)(name).map(|v| v.trim().to_owned()) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(ConfigError::Missing { name, expected }),
        }
    }

    /// An optional number within `range`, `default` when unset or empty.
    pub fn number_in<T>(
        &self,
        name: &'static str,
        default: T,
        range: std::ops::RangeInclusive<T>,
        expected: &'static str,
    ) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + Copy,
    {
        let Some(raw) = (self.0)(name).filter(|v| !v.trim().is_empty()) else {
            return Ok(default);
        };
        match raw.trim().parse::<T>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(ConfigError::Invalid {
                name,
                value: raw,
                expected,
            }),
        }
    }
}

/// Configuration of `notification-handler`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationHandlerConfig {
    pub results_table: String,
    pub result_ttl_secs: u64,
    pub inline_result_max_bytes: u64,
    /// How many messages of an SQS batch are recorded at once.
    pub batch_concurrency: usize,
    /// Where each recorded outcome is announced; None: nowhere.
    pub event_bus_name: Option<String>,
}

/// `EVENT_BUS_NAME`: the EventBridge bus (a name, an ARN, or `default`) recorded outcomes are
/// announced on; unset or empty, no events.
fn event_bus_name<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Option<String> {
    (env.0)("EVENT_BUS_NAME")
        .map(|bus| bus.trim().to_owned())
        .filter(|bus| !bus.is_empty())
}

/// Added to the function's timeout before a reservation counts as a crashed submission.
const CRASH_MARGIN_SECS: u64 = 15;
/// How long a call with an idempotency key waits for a concurrent first call to get its answer.
const IN_PROGRESS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn job_settings(policy: JobPolicy, inline_result_max_bytes: u64) -> JobSettings {
    JobSettings {
        policy,
        inline_result_max_bytes,
        in_progress_wait: IN_PROGRESS_WAIT,
    }
}

impl NotificationHandlerConfig {
    /// What the outcome use case is told.
    pub fn job_settings(&self) -> JobSettings {
        let policy = JobPolicy {
            result_ttl_secs: self.result_ttl_secs,
            ..JobPolicy::default()
        };
        job_settings(policy, self.inline_result_max_bytes)
    }

    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        Ok(Self {
            results_table: results_table(env)?,
            result_ttl_secs: result_ttl_secs(env)?,
            inline_result_max_bytes: inline_result_max_bytes(env)?,
            batch_concurrency: env.number_in(
                "BATCH_CONCURRENCY",
                16,
                1..=256,
                "how many messages of a batch to record at once, 1 to 256",
            )?,
            event_bus_name: event_bus_name(env),
        })
    }
}

/// Configuration of `pipeline-router`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRouterConfig {
    pub pipeline_results_table: String,
    pub pipeline_results_queue_url: String,
    pub result_ttl_secs: u64,
}

impl PipelineRouterConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        const QUEUE_URL: &str =
            "the URL of an SQS queue (https://sqs.<region>.amazonaws.com/<account>/<name>)";
        let queue_url = env.required("PIPELINE_RESULTS_QUEUE_URL", QUEUE_URL)?;
        if !(queue_url.starts_with("https://") || queue_url.starts_with("http://")) {
            return Err(ConfigError::Invalid {
                name: "PIPELINE_RESULTS_QUEUE_URL",
                value: queue_url,
                expected: QUEUE_URL,
            });
        }
        Ok(Self {
            pipeline_results_table: env.required(
                "PIPELINE_RESULTS_TABLE",
                "the name of the DynamoDB pipeline results table",
            )?,
            pipeline_results_queue_url: queue_url,
            result_ttl_secs: result_ttl_secs(env)?,
        })
    }
}

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
pub use crate::domain::caller::DEFAULT_TOKEN_NAME;

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
    /// The least time between two JWKS fetches caused by an unknown `kid`.
    pub jwks_min_refresh_secs: u64,
}

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

/// The tools' own settings, shared by the Function URL server and the AgentCore Gateway target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsConfig {
    pub results_table: String,
    pub pipeline_results_table: String,
    pub io_bucket: String,
    pub async_endpoint_name: String,
    /// The pipeline trigger_training starts; empty for a stack with no training (its training
    /// tools are not served).
    pub pipeline_name: String,
    /// The region the functions run in (`AWS_REGION`): an ARN of another is no run of ours.
    pub region: Option<String>,
    pub result_ttl_secs: u64,
    /// Largest output stored inline when a status check reads it from S3 itself.
    pub inline_result_max_bytes: u64,
    /// The function's own timeout: a reservation older than this (plus a margin) belongs to a
    /// submission that crashed.
    pub function_timeout_secs: u64,
    /// A job pending this long with known output locations is looked for in S3.
    pub reconcile_after_secs: u64,
    /// How long one InvokeEndpointAsync attempt may take before its answer counts as lost.
    pub invoke_attempt_timeout_secs: u64,
    /// MaxParallelExecutionSteps for every run, when set; otherwise the pipeline's own.
    pub pipeline_max_parallel_steps: Option<u32>,
    /// How often a tasks client should poll `tasks/get`.
    pub task_poll_interval_ms: u64,
    /// The pipeline's own name for each trigger_training argument it takes; a bad mapping is
    /// kept as its error, for trigger_training to answer with, and takes no other tool down.
    pub pipeline_parameters: Result<PipelineParameters, ConfigError>,
    /// Where training data may be read from (`TRAINING_INPUT_PREFIXES`).
    pub training_input_prefixes: Vec<S3Prefix>,
    /// The instance types a run may ask for (`TRAINING_INSTANCE_TYPES`).
    pub training_instance_types: Vec<String>,
    /// What each caller may start (`CALLER_SUBMITS_PER_MINUTE`, `CALLER_RUNS_PER_HOUR`,
    /// `CALLER_WAITS_MAX`).
    pub quotas: QuotaLimits,
    /// submit_job's `request_ttl_secs` when a call gives none (`DEFAULT_REQUEST_TTL_SECS`).
    pub default_request_ttl_secs: u32,
    /// Where an outcome a status check finds in S3 (and records) is announced; None: nowhere.
    pub event_bus_name: Option<String>,
}

/// `PIPELINE_PARAMETERS`: `argument=ParameterName,…`. A real pipeline names its parameters
/// itself; an argument left out is one the pipeline does not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineParameters(Vec<(String, String)>);

impl PipelineParameters {
    const EXPECTED: &'static str = "comma-separated argument=ParameterName pairs, e.g. \
        input_data_uri=InputDataUri,max_epochs=MaxEpochs; arguments: input_data_uri (required), \
        max_epochs, accuracy_threshold, training_instance_type; names: letters, digits, - and _";

    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let invalid = || ConfigError::Invalid {
            name: "PIPELINE_PARAMETERS",
            value: text.to_owned(),
            expected: Self::EXPECTED,
        };
        let mut pairs: Vec<(String, String)> = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (argument, name) = entry.split_once('=').ok_or_else(invalid)?;
            let (argument, name) = (argument.trim(), name.trim());
            // SageMaker's pattern for a parameter name: [A-Za-z0-9\-_]*, at most 256.
            let name_ok = !name.is_empty()
                && name.len() <= 256
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let repeated = pairs.iter().any(|(a, n)| a == argument || n == name);
            if !TRAINING_ARGUMENTS.contains(&argument) || !name_ok || repeated {
                return Err(invalid());
            }
            pairs.push((argument.to_owned(), name.to_owned()));
        }
        // The one required argument must reach the pipeline, or every run would be refused.
        if !pairs.iter().any(|(a, _)| a == "input_data_uri") {
            return Err(invalid());
        }
        Ok(Self(pairs))
    }

    /// The pipeline's parameter name for a trigger_training argument, if it takes one.
    pub fn name_for(&self, argument: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(a, _)| a == argument)
            .map(|(_, n)| n.as_str())
    }

    /// The arguments the pipeline takes, in the configured order.
    pub fn arguments(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(a, _)| a.as_str())
    }
}

impl Default for PipelineParameters {
    fn default() -> Self {
        Self::parse(DEFAULT_PIPELINE_PARAMETERS).expect("the default mapping parses")
    }
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
        let list = |name: &'static str, default: String| -> Vec<String> {
            (env.0)(name)
                .filter(|v| !v.trim().is_empty())
                .unwrap_or(default)
                .split(',')
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .collect()
        };
        let region_hosts = match (env.0)("AWS_REGION").filter(|r| !r.is_empty()) {
            Some(region) => format!("*.lambda-url.{region}.on.aws"),
            None => "*.on.aws".to_owned(),
        };
        Ok(Self {
            tools: ToolsConfig::from_env(env)?,
            auth,
            allowed_hosts: list(
                "MCP_ALLOWED_HOSTS",
                format!("{region_hosts},127.0.0.1,localhost"),
            ),
            allowed_origins: list("MCP_ALLOWED_ORIGINS", String::new()),
        })
    }
}

impl ToolsConfig {
    /// Whether the stack has a pipeline, and so the training tools.
    pub fn serves_training(&self) -> bool {
        !self.pipeline_name.is_empty()
    }

    /// What the job use cases are told: the lifecycle's timings from this configuration.
    pub fn job_settings(&self) -> JobSettings {
        let policy = JobPolicy {
            result_ttl_secs: self.result_ttl_secs,
            submit_crash_after_secs: self.function_timeout_secs + CRASH_MARGIN_SECS,
            reconcile_after_secs: self.reconcile_after_secs,
            ..JobPolicy::default()
        };
        job_settings(policy, self.inline_result_max_bytes)
    }

    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        Ok(Self {
            results_table: results_table(env)?,
            pipeline_results_table: env.required(
                "PIPELINE_RESULTS_TABLE",
                "the name of the DynamoDB pipeline results table",
            )?,
            io_bucket: env.required("IO_BUCKET", "the S3 bucket for job inputs")?,
            async_endpoint_name: env.required(
                "ASYNC_ENDPOINT_NAME",
                "the name of the SageMaker async endpoint",
            )?,
            pipeline_name: (env.0)("PIPELINE_NAME")
                .map(|name| name.trim().to_owned())
                .unwrap_or_default(),
            region: (env.0)("AWS_REGION")
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty()),
            result_ttl_secs: result_ttl_secs(env)?,
            inline_result_max_bytes: inline_result_max_bytes(env)?,
            function_timeout_secs: env.number_in(
                "FUNCTION_TIMEOUT_SECS",
                45,
                1..=900,
                "the function's timeout in seconds, 1 to 900",
            )?,
            reconcile_after_secs: env.number_in(
                "RECONCILE_AFTER_SECS",
                60,
                1..=86_400,
                "a number of seconds from 1 to 86400",
            )?,
            invoke_attempt_timeout_secs: env.number_in(
                "INVOKE_ATTEMPT_TIMEOUT_SECS",
                5,
                1..=30,
                "a number of seconds from 1 to 30",
            )?,
            task_poll_interval_ms: env.number_in(
                "TASK_POLL_INTERVAL_MS",
                5000,
                100..=60_000,
                "milliseconds from 100 to 60000",
            )?,
            pipeline_parameters: match (env.0)("PIPELINE_PARAMETERS")
                .filter(|v| !v.trim().is_empty())
            {
                Some(text) => PipelineParameters::parse(&text),
                None => Ok(PipelineParameters::default()),
            },
            training_input_prefixes: training_input_prefixes(env)?,
            training_instance_types: training_instance_types(env)?,
            quotas: QuotaLimits {
                submits_per_minute: env.number_in(
                    "CALLER_SUBMITS_PER_MINUTE",
                    QuotaLimits::default().submits_per_minute,
                    0..=100_000,
                    "jobs each caller may submit per minute, 0 (no limit) to 100000",
                )?,
                runs_per_hour: env.number_in(
                    "CALLER_RUNS_PER_HOUR",
                    QuotaLimits::default().runs_per_hour,
                    0..=10_000,
                    "training runs each caller may start per hour, 0 (no limit) to 10000",
                )?,
                waits_max: env.number_in(
                    "CALLER_WAITS_MAX",
                    QuotaLimits::default().waits_max,
                    0..=1_000,
                    "long waits each caller may hold at once, 0 (no limit) to 1000",
                )?,
            },
            default_request_ttl_secs: env.number_in(
                "DEFAULT_REQUEST_TTL_SECS",
                DEFAULT_REQUEST_TTL_SECS,
                60..=21_600,
                "seconds from 60 to 21600 (SageMaker's limit for a request's queue TTL)",
            )?,
            pipeline_max_parallel_steps: match (env.0)("PIPELINE_MAX_PARALLEL_STEPS")
                .filter(|v| !v.trim().is_empty())
            {
                None => None,
                Some(_) => Some(env.number_in(
                    "PIPELINE_MAX_PARALLEL_STEPS",
                    1,
                    1..=256,
                    "a number of steps from 1 to 256, or unset for the pipeline's own setting",
                )?),
            },
            event_bus_name: event_bus_name(env),
        })
    }
}

impl OAuthConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        const ISSUER: &str = "the authorization server's issuer URL (https://, or http:// on \
            127.0.0.1 or localhost for local runs), e.g. https://cognito-idp.<region>.amazonaws.com/<pool-id>";
        const AUDIENCE: &str = "this server's resource identifier, normally its public MCP URL \
            (https://<url-id>.lambda-url.<region>.on.aws/mcp)";
        const JWKS: &str =
            "the issuer's JWKS URL (https://, or http:// on 127.0.0.1 or localhost), \
            or unset to read it from the issuer's metadata";
        const SCOPE: &str = "one OAuth scope name, no spaces";
        let issuer = env.required("OAUTH_ISSUER", ISSUER)?;
        let issuer = secure_url("OAUTH_ISSUER", issuer, ISSUER)?;
        let audience = match (env.0)("OAUTH_AUDIENCE").filter(|v| !v.trim().is_empty()) {
            Some(audience) => Some(secure_url(
                "OAUTH_AUDIENCE",
                audience.trim().to_owned(),
                AUDIENCE,
            )?),
            None => None,
        };
        let jwks_uri = match (env.0)("OAUTH_JWKS_URI").filter(|v| !v.trim().is_empty()) {
            Some(uri) => Some(secure_url("OAUTH_JWKS_URI", uri.trim().to_owned(), JWKS)?),
            None => None,
        };
        let scope = |name: &'static str, default: &str| -> Result<String, ConfigError> {
            let value = (env.0)(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned());
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
            client_ids: (env.0)("OAUTH_CLIENT_IDS")
                .unwrap_or_default()
                .split(',')
                .map(|id| id.trim().to_owned())
                .filter(|id| !id.is_empty())
                .collect(),
            jwks_uri,
            read_scope: scope("OAUTH_READ_SCOPE", "jobs:read")?,
            write_scope: scope("OAUTH_WRITE_SCOPE", "jobs:write")?,
            jwks_min_refresh_secs: env.number_in(
                "OAUTH_JWKS_MIN_REFRESH_SECS",
                60,
                1..=86_400,
                "a number of seconds from 1 to 86400",
            )?,
        })
    }
}

/// Whether an OAuth issuer, or a URL of its keys, may be fetched: `https://`, or `http://` to
/// this machine only (127.0.0.1, localhost, [::1]: a local authorization server). Parsed, so
/// the host is the real one (`http://127.0.0.1:80@evil.example` is evil.example's).
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
fn bearer_tokens<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Vec<NamedToken>, ConfigError> {
    const HASH: &str = "the hex SHA-256 of the bearer token (64 hex digits), e.g. from `printf %s \"$TOKEN\" | sha256sum`";
    const TOKENS: &str = "comma-separated name:sha256hex pairs (names of letters, digits, . _ -, \
        at most 64, each name and hash once), e.g. agent-a:<64 hex digits>,agent-b:<64 hex digits>";
    let mut tokens = Vec::new();
    if let Some(hash) = (env.0)("MCP_BEARER_TOKEN_SHA256").filter(|v| !v.trim().is_empty()) {
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
    if let Some(text) = (env.0)("MCP_BEARER_TOKENS").filter(|v| !v.trim().is_empty()) {
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

/// `TRAINING_INPUT_PREFIXES`: comma-separated `s3://bucket/prefix/` entries training data may
/// be read from; unset, the IO bucket's `train/`.
fn training_input_prefixes<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Vec<S3Prefix>, ConfigError> {
    const EXPECTED: &str = "comma-separated s3://bucket/prefix/ entries (lowercase bucket \
        names; no ., .. or empty path segments), e.g. s3://my-bucket/train/,s3://datasets/intents/";
    let text = match (env.0)("TRAINING_INPUT_PREFIXES").filter(|v| !v.trim().is_empty()) {
        Some(text) => text,
        None => format!(
            "s3://{}/train/",
            env.required("IO_BUCKET", "the S3 bucket for job inputs")?
        ),
    };
    let invalid = || ConfigError::Invalid {
        name: "TRAINING_INPUT_PREFIXES",
        value: text.clone(),
        expected: EXPECTED,
    };
    let prefixes = text
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| S3Prefix::parse(e).ok_or_else(invalid))
        .collect::<Result<Vec<_>, _>>()?;
    if prefixes.is_empty() {
        return Err(invalid());
    }
    Ok(prefixes)
}

/// `TRAINING_INSTANCE_TYPES`: the comma-separated instance types a run may ask for.
fn training_instance_types<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<Vec<String>, ConfigError> {
    let text = (env.0)("TRAINING_INSTANCE_TYPES")
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_TRAINING_INSTANCE_TYPES.to_owned());
    let types: Vec<String> = text
        .split(',')
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let ok = !types.is_empty()
        && types.iter().all(|t| {
            t.starts_with("ml.")
                && t.len() <= 64
                && t.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.')
        });
    if ok {
        Ok(types)
    } else {
        Err(ConfigError::Invalid {
            name: "TRAINING_INSTANCE_TYPES",
            value: text,
            expected: "comma-separated SageMaker instance types, e.g. ml.m5.xlarge,ml.g5.xlarge",
        })
    }
}

/// `INLINE_RESULT_MAX_BYTES`, for every writer of outcomes.
pub fn inline_result_max_bytes<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<u64, ConfigError> {
    env.number_in(
        "INLINE_RESULT_MAX_BYTES",
        DEFAULT_INLINE_RESULT_MAX_BYTES,
        0..=INLINE_RESULT_HARD_MAX_BYTES,
        "a byte count from 0 to 262144 (DynamoDB items are limited to 400 KB)",
    )
}

/// `RESULTS_TABLE`, for notification-handler and the tools.
fn results_table<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<String, ConfigError> {
    env.required("RESULTS_TABLE", "the name of the DynamoDB results table")
}

/// `RESULT_TTL_SECS`, shared by every writer.
pub fn result_ttl_secs<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<u64, ConfigError> {
    env.number_in(
        "RESULT_TTL_SECS",
        DEFAULT_RESULT_TTL_SECS,
        60..=31_536_000,
        "a number of seconds from 60 to 31536000 (one year)",
    )
}

/// `METRICS_NAMESPACE`: the CloudWatch namespace every function's metrics go to (the template
/// sets the stack's); default `McpAsyncJobs`.
pub fn metrics_namespace<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> String {
    (env.0)("METRICS_NAMESPACE")
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "McpAsyncJobs".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Env<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env::from_lookup(move |k| map.get(k).cloned())
    }

    #[test]
    fn defaults_apply_when_only_the_table_is_set() {
        let cfg =
            NotificationHandlerConfig::from_env(&env(&[("RESULTS_TABLE", "results")])).unwrap();
        assert_eq!(cfg.results_table, "results");
        assert_eq!(cfg.result_ttl_secs, 3600);
        assert_eq!(cfg.inline_result_max_bytes, 4096);
    }

    #[test]
    fn missing_table_names_the_variable() {
        let err = NotificationHandlerConfig::from_env(&env(&[])).unwrap_err();
        assert!(err.to_string().contains("RESULTS_TABLE"), "{err}");
    }

    #[test]
    fn pipeline_router_needs_table_and_queue_url() {
        let err =
            PipelineRouterConfig::from_env(&env(&[("PIPELINE_RESULTS_TABLE", "t")])).unwrap_err();
        assert!(
            err.to_string().contains("PIPELINE_RESULTS_QUEUE_URL"),
            "{err}"
        );
        let err =
            PipelineRouterConfig::from_env(&env(&[("PIPELINE_RESULTS_QUEUE_URL", "my-queue")]))
                .unwrap_err();
        assert!(
            err.to_string()
                .contains("PIPELINE_RESULTS_QUEUE_URL=\"my-queue\""),
            "{err}"
        );
        let cfg = PipelineRouterConfig::from_env(&env(&[
            ("PIPELINE_RESULTS_TABLE", "t"),
            (
                "PIPELINE_RESULTS_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
            ),
        ]))
        .unwrap();
        assert_eq!(cfg.result_ttl_secs, 3600);
    }

    fn mcp_env(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut vars = vec![
            ("RESULTS_TABLE", "r"),
            ("PIPELINE_RESULTS_TABLE", "p"),
            ("IO_BUCKET", "b"),
            ("ASYNC_ENDPOINT_NAME", "e"),
            ("PIPELINE_NAME", "pl"),
            ("AWS_REGION", "eu-west-1"),
        ];
        vars.extend_from_slice(extra);
        vars
    }

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
    fn pipeline_parameters_map_arguments_to_the_pipelines_names() {
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "iam")]))).unwrap();
        let p = cfg.tools.pipeline_parameters.as_ref().unwrap();
        assert_eq!(p.name_for("input_data_uri"), Some("InputDataUri"));
        assert_eq!(p.name_for("max_epochs"), Some("MaxEpochs"));
        assert_eq!(p.name_for("accuracy_threshold"), Some("AccuracyThreshold"));
        assert_eq!(
            p.name_for("training_instance_type"),
            Some("TrainingInstanceType")
        );
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "iam"),
            (
                "PIPELINE_PARAMETERS",
                " input_data_uri = TrainData , max_epochs=Epochs-N ",
            ),
        ])))
        .unwrap();
        let p = cfg.tools.pipeline_parameters.as_ref().unwrap();
        assert_eq!(p.name_for("input_data_uri"), Some("TrainData"));
        assert_eq!(p.name_for("max_epochs"), Some("Epochs-N"));
        assert_eq!(p.name_for("accuracy_threshold"), None);
        assert_eq!(
            p.arguments().collect::<Vec<_>>(),
            ["input_data_uri", "max_epochs"]
        );
        for bad in [
            "max_epochs=MaxEpochs",
            "input_data_uri",
            "input_data_uri=",
            "input_data_uri=Has Space",
            "input_data_uri=A,input_data_uri=B",
            "input_data_uri=A,max_epochs=A",
            "input_data_uri=A,learning_rate=LR",
        ] {
            // Kept as an error for trigger_training: the other tools still start.
            let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
                ("AUTH_MODE", "iam"),
                ("PIPELINE_PARAMETERS", bad),
            ])))
            .unwrap();
            let text = cfg.tools.pipeline_parameters.unwrap_err().to_string();
            assert!(
                text.contains("PIPELINE_PARAMETERS") && text.contains(bad),
                "{bad}: {text}"
            );
        }
    }

    #[test]
    fn sharing_settings_default_from_the_bucket_and_are_checked() {
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "iam")]))).unwrap();
        let t = &cfg.tools;
        let prefixes: Vec<String> = t
            .training_input_prefixes
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(prefixes, ["s3://b/train/"]);
        assert_eq!(t.training_instance_types, ["ml.m5.xlarge"]);
        assert_eq!(t.quotas, QuotaLimits::default());
        assert_eq!(t.default_request_ttl_secs, 3600);
        assert!(t.serves_training());
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "iam"),
            ("TRAINING_INPUT_PREFIXES", "s3://data-a/train, s3://data-b/"),
            ("TRAINING_INSTANCE_TYPES", "ml.m5.xlarge, ml.g5.2xlarge"),
            ("CALLER_SUBMITS_PER_MINUTE", "0"),
            ("CALLER_RUNS_PER_HOUR", "3"),
            ("CALLER_WAITS_MAX", "1"),
            ("DEFAULT_REQUEST_TTL_SECS", "600"),
            ("PIPELINE_NAME", " "),
        ])))
        .unwrap();
        let t = &cfg.tools;
        let prefixes: Vec<String> = t
            .training_input_prefixes
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(prefixes, ["s3://data-a/train/", "s3://data-b/"]);
        assert_eq!(t.training_instance_types, ["ml.m5.xlarge", "ml.g5.2xlarge"]);
        assert_eq!(
            t.quotas,
            QuotaLimits {
                submits_per_minute: 0,
                runs_per_hour: 3,
                waits_max: 1
            }
        );
        assert_eq!(t.default_request_ttl_secs, 600);
        assert!(
            !t.serves_training(),
            "an empty pipeline name: no training tools"
        );
        for (name, bad) in [
            ("TRAINING_INPUT_PREFIXES", "s3://b/../x/"),
            ("TRAINING_INPUT_PREFIXES", "https://b/x/"),
            ("TRAINING_INPUT_PREFIXES", " , "),
            ("TRAINING_INSTANCE_TYPES", "m5.xlarge"),
            ("CALLER_SUBMITS_PER_MINUTE", "-1"),
            ("CALLER_RUNS_PER_HOUR", "many"),
            ("CALLER_WAITS_MAX", "1001"),
            ("DEFAULT_REQUEST_TTL_SECS", "59"),
        ] {
            let vars = mcp_env(&[("AUTH_MODE", "iam"), (name, bad)]);
            let err = McpToolsConfig::from_env(&env(&vars))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{name}={bad:?}: {err}");
        }
    }

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
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "oauth"),
            ("OAUTH_ISSUER", "http://127.0.0.1:9400"),
            (
                "OAUTH_AUDIENCE",
                "http://127.0.0.1:9000/lambda-url/mcp-tools/mcp",
            ),
            ("OAUTH_JWKS_URI", "http://localhost:9400/jwks"),
            ("OAUTH_WRITE_SCOPE", "https://mcp.example.com/jobs.write"),
        ])))
        .unwrap();
        let AuthMode::OAuth(oauth) = cfg.auth else {
            panic!()
        };
        assert_eq!(
            oauth.jwks_uri.as_deref(),
            Some("http://localhost:9400/jwks")
        );
        assert_eq!(oauth.write_scope, "https://mcp.example.com/jobs.write");
    }

    #[test]
    fn malformed_numbers_name_the_variable_and_value() {
        for (name, value) in [
            ("RESULT_TTL_SECS", "soon"),
            ("RESULT_TTL_SECS", "5"),
            ("INLINE_RESULT_MAX_BYTES", "-1"),
            ("INLINE_RESULT_MAX_BYTES", "500000"),
        ] {
            let err =
                NotificationHandlerConfig::from_env(&env(&[("RESULTS_TABLE", "t"), (name, value)]))
                    .unwrap_err();
            let text = err.to_string();
            assert!(text.contains(name) && text.contains(value), "{text}");
        }
    }
}
