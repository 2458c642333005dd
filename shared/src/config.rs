//! Configuration read once at cold start from the environment, one struct per function.
//!
//! Every problem names the variable, so a misconfigured deployment says exactly what to fix.

use std::str::FromStr;

use crate::domain::job::JobPolicy;
use crate::usecases::JobSettings;

/// DynamoDB items must stay under 400 KB; the inline result is capped well below that so
/// the rest of the item (ids, locations, a bounded failure excerpt) always fits.
pub const INLINE_RESULT_HARD_MAX_BYTES: u64 = 256 * 1024;
pub const DEFAULT_RESULT_TTL_SECS: u64 = 3600;
pub const DEFAULT_INLINE_RESULT_MAX_BYTES: u64 = 64 * 1024;

/// The trigger_training arguments that become pipeline parameters.
pub const TRAINING_ARGUMENTS: [&str; 4] = [
    "input_data_uri",
    "max_epochs",
    "accuracy_threshold",
    "training_instance_type",
];
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
    /// The Function URL's AWS_IAM auth has already checked the SigV4 signature.
    Iam,
    /// `Authorization: Bearer <token>`, checked against the token's SHA-256.
    Bearer { token_sha256: [u8; 32] },
    /// No authentication: for local runs only.
    None,
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
    pub pipeline_name: String,
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
    /// The pipeline's own name for each trigger_training argument it takes.
    pub pipeline_parameters: PipelineParameters,
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
        const AUTH: &str = "iam (the Function URL checks SigV4), bearer (MCP_BEARER_TOKEN_SHA256) or none (local only)";
        let auth = match env
            .required("AUTH_MODE", AUTH)?
            .to_ascii_lowercase()
            .as_str()
        {
            "iam" => AuthMode::Iam,
            "none" => AuthMode::None,
            "bearer" => {
                const HASH: &str = "the hex SHA-256 of the bearer token (64 hex digits), e.g. from `printf %s \"$TOKEN\" | sha256sum`";
                let hash = env.required("MCP_BEARER_TOKEN_SHA256", HASH)?;
                let token_sha256 = parse_sha256(&hash).ok_or(ConfigError::Invalid {
                    name: "MCP_BEARER_TOKEN_SHA256",
                    value: hash,
                    expected: HASH,
                })?;
                AuthMode::Bearer { token_sha256 }
            }
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
            pipeline_name: env.required("PIPELINE_NAME", "the name of the SageMaker pipeline")?,
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
                Some(text) => PipelineParameters::parse(&text)?,
                None => PipelineParameters::default(),
            },
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
        })
    }
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
        assert_eq!(cfg.inline_result_max_bytes, 65536);
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
        assert!(err.to_string().contains("MCP_BEARER_TOKEN_SHA256"), "{err}");
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
        let AuthMode::Bearer { token_sha256 } = cfg.auth else {
            panic!()
        };
        assert_eq!(token_sha256[0], 0x9f);
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
        let p = &cfg.tools.pipeline_parameters;
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
        let p = &cfg.tools.pipeline_parameters;
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
            let err = McpToolsConfig::from_env(&env(&mcp_env(&[
                ("AUTH_MODE", "iam"),
                ("PIPELINE_PARAMETERS", bad),
            ])))
            .unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("PIPELINE_PARAMETERS") && text.contains(bad),
                "{bad}: {text}"
            );
        }
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
