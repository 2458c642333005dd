//! What the tools need, the same for every front door (the Function URL server and the
//! AgentCore Gateway target): tables, bucket, endpoint, pipeline, timings, and what callers
//! may share.

use domain::allow_lists::AllowLists;
use domain::caller::Owner;
use domain::job::{JobPolicy, INLINE_INPUT_MAX_BYTES};
use domain::quota::{Quota, QuotaLimits};
use domain::training_input::S3Prefix;
use entry::config::{
    event_bus_name, metrics_namespace, ConfigError, Env, JobRecords, CRASH_MARGIN_SECS,
};
use usecases::JobSettings;

/// Every variable the tools read (both tools functions); the template test compares it with
/// what the template sets, and a test here holds `from_env` to it.
pub const VARIABLES: &[&str] = &[
    "RESULTS_TABLE",
    "PIPELINE_RESULTS_TABLE",
    "IO_BUCKET",
    "ASYNC_ENDPOINT_NAME",
    "PIPELINE_NAME",
    "TOOL_CATALOG",
    "AWS_REGION",
    "RESULT_TTL_SECS",
    "INLINE_RESULT_MAX_BYTES",
    "FUNCTION_TIMEOUT_SECS",
    "RECONCILE_AFTER_SECS",
    "INVOKE_ATTEMPT_TIMEOUT_SECS",
    "TASK_POLL_INTERVAL_MS",
    "LISTEN_MAX_SECS",
    "PIPELINE_PARAMETERS",
    "PIPELINE_MAX_PARALLEL_STEPS",
    "TRAINING_INPUT_PREFIXES",
    "TRAINING_INSTANCE_TYPES",
    "CALLER_SUBMITS_PER_MINUTE",
    "CALLER_RUNS_PER_HOUR",
    "CALLER_WAITS_MAX",
    "CALLER_READS_PER_MINUTE",
    "DEFAULT_REQUEST_TTL_SECS",
    "INLINE_INPUT_MAX_BYTES",
    "MCP_MAX_BODY_BYTES",
    "EVENT_BUS_NAME",
    "METRICS_NAMESPACE",
    "APPROVAL_GATE",
    "APPROVALS_VIA",
];
/// The ones without which the tools do not start.
pub const REQUIRED: &[&str] = &[
    "RESULTS_TABLE",
    "PIPELINE_RESULTS_TABLE",
    "IO_BUCKET",
    "ASYNC_ENDPOINT_NAME",
];

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

/// The largest request body a door reads when `MCP_MAX_BODY_BYTES` does not say: the largest
/// input (4 MiB) with room for its JSON escaping and the JSON-RPC envelope.
pub const DEFAULT_MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
/// A Function URL request is at most 6 MB: no door is set to read more.
pub const LAMBDA_MAX_BODY_BYTES: usize = 6_000_000;

/// The parameter names of the reference pipeline.
pub const DEFAULT_PIPELINE_PARAMETERS: &str = "input_data_uri=InputDataUri,max_epochs=MaxEpochs,\
    accuracy_threshold=AccuracyThreshold,training_instance_type=TrainingInstanceType";

/// The tools' own settings, shared by the Function URL server and the AgentCore Gateway target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsConfig {
    /// The results table, the outcome TTL and the largest output stored inline when a status
    /// check reads it from S3 itself.
    pub jobs: JobRecords,
    pub pipeline_results_table: String,
    pub io_bucket: String,
    pub async_endpoint_name: String,
    /// The pipeline trigger_training starts; empty for a stack with no training (its training
    /// tools are not served).
    pub pipeline_name: String,
    /// The tool catalog's path (`TOOL_CATALOG`): a team's models and pipelines as tools, in
    /// place of submit_job and trigger_training. None: today's tools.
    pub tool_catalog: Option<String>,
    /// The region the functions run in (`AWS_REGION`): an ARN of another is no run of ours.
    pub region: Option<String>,
    /// The function's own timeout: a reservation older than this (plus a margin) belongs to a
    /// submission that crashed.
    pub function_timeout_secs: u64,
    /// A job pending this long with known output locations is looked for in S3.
    pub reconcile_after_secs: u64,
    /// How long one InvokeEndpointAsync attempt may take before its answer counts as lost.
    pub invoke_attempt_timeout_secs: u64,
    /// How often a tasks client should poll `tasks/get`.
    pub task_poll_interval_ms: u64,
    /// How long one `subscriptions/listen` is held (`LISTEN_MAX_SECS`), at most the function's
    /// timeout less 10 s.
    pub listen_max_secs: u64,
    /// What a training run may be given.
    pub training: TrainingSettings,
    /// What each caller may start and read (`CALLER_SUBMITS_PER_MINUTE`, `CALLER_RUNS_PER_HOUR`,
    /// `CALLER_WAITS_MAX`, `CALLER_READS_PER_MINUTE`).
    pub quotas: QuotaLimits,
    /// submit_job's `request_ttl_secs` when a call gives none (`DEFAULT_REQUEST_TTL_SECS`).
    pub default_request_ttl_secs: u32,
    /// The largest input sent inline (`INLINE_INPUT_MAX_BYTES`, at most 128,000; 0: every
    /// input goes through S3).
    pub inline_input_max_bytes: usize,
    /// The largest request body either door reads (`MCP_MAX_BODY_BYTES`); a larger one is
    /// refused (413) before anything else is read of it.
    pub max_body_bytes: usize,
    /// Where an outcome a status check finds in S3 (and records) is announced; None: nowhere.
    pub event_bus_name: Option<String>,
    /// The CloudWatch namespace of the function's metrics.
    pub metrics_namespace: String,
    /// Who may answer runs' questions (`APPROVERS`, read for the front door's auth mode: see
    /// [`super::approvers`]); None: each run's owner alone.
    pub approvers: Option<Vec<Owner>>,
    /// MCP Events (read for mcp-tools only, see [`super::events`]); None: not offered.
    pub events: Option<super::events::EventsConfig>,
    /// `APPROVAL_GATE`: a run that succeeded having registered a model that waits for approval
    /// is not done until someone decides it (its task asks; check_training_status says so).
    pub approval_gate: bool,
    /// `APPROVALS_VIA`: how a run's questions and its model's approval may be answered.
    pub approvals_via: ApprovalsVia,
}

/// How answers may come: a model can call a tool by itself, but not fill in the client's form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApprovalsVia {
    /// The client's form (`tasks/update`) or the tools answer_training_input and
    /// approve_model_package.
    #[default]
    Any,
    /// The client's form only: the two tools are not served.
    Elicitation,
}

impl ApprovalsVia {
    fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        let Some(value) = env.optional("APPROVALS_VIA") else {
            return Ok(Self::Any);
        };
        match value.to_ascii_lowercase().as_str() {
            "any" => Ok(Self::Any),
            "elicitation" => Ok(Self::Elicitation),
            _ => Err(ConfigError::Invalid {
                name: "APPROVALS_VIA",
                value: value.chars().take(64).collect(),
                expected: "any (the client's form or the tools answer_training_input and \
                    approve_model_package) or elicitation (the client's form only)",
            }),
        }
    }

    /// Whether the tools that answer are served.
    pub fn serves_answer_tools(self) -> bool {
        self == Self::Any
    }
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

/// What a training run may be given: the pipeline's parameter names, and the data and
/// instances any caller may ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainingSettings {
    /// The pipeline's own name for each trigger_training argument it takes; a bad mapping is
    /// kept as its error, for trigger_training to answer with, and takes no other tool down.
    pub pipeline_parameters: Result<PipelineParameters, ConfigError>,
    /// Where training data may be read from (`TRAINING_INPUT_PREFIXES`).
    pub input_prefixes: Vec<S3Prefix>,
    /// The instance types a run may ask for (`TRAINING_INSTANCE_TYPES`).
    pub instance_types: Vec<String>,
    /// MaxParallelExecutionSteps for every run, when set; otherwise the pipeline's own.
    pub max_parallel_steps: Option<u32>,
}

impl TrainingSettings {
    /// What every run's parameters are held to.
    pub fn allow_lists(&self) -> AllowLists<'_> {
        AllowLists {
            input_prefixes: &self.input_prefixes,
            instance_types: &self.instance_types,
        }
    }
}

impl ToolsConfig {
    /// Whether the stack has a pipeline, and so the training tools.
    pub fn serves_training(&self) -> bool {
        !self.pipeline_name.is_empty()
    }

    /// What the job use cases are told: the lifecycle's timings from this configuration.
    pub fn job_settings(&self) -> JobSettings {
        self.jobs.job_settings(JobPolicy {
            submit_crash_after_secs: self.function_timeout_secs + CRASH_MARGIN_SECS,
            reconcile_after_secs: self.reconcile_after_secs,
            ..JobPolicy::default()
        })
    }

    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        let jobs = JobRecords::from_env(env)?;
        let pipeline_results_table = env.required(
            "PIPELINE_RESULTS_TABLE",
            "the name of the DynamoDB pipeline results table",
        )?;
        let io_bucket = env.required("IO_BUCKET", "the S3 bucket for job inputs")?;
        let function_timeout_secs = env.number_in(
            "FUNCTION_TIMEOUT_SECS",
            45,
            1..=900,
            "the function's timeout in seconds, 1 to 900",
        )?;
        Ok(Self {
            training: TrainingSettings {
                pipeline_parameters: match env.optional("PIPELINE_PARAMETERS") {
                    Some(text) => PipelineParameters::parse(&text),
                    None => Ok(PipelineParameters::default()),
                },
                input_prefixes: training_input_prefixes(env, &io_bucket)?,
                instance_types: training_instance_types(env)?,
                max_parallel_steps: match env.optional("PIPELINE_MAX_PARALLEL_STEPS") {
                    None => None,
                    Some(_) => Some(env.number_in(
                        "PIPELINE_MAX_PARALLEL_STEPS",
                        1,
                        1..=256,
                        "a number of steps from 1 to 256, or unset for the pipeline's own setting",
                    )?),
                },
            },
            jobs,
            pipeline_results_table,
            io_bucket,
            async_endpoint_name: env.required(
                "ASYNC_ENDPOINT_NAME",
                "the name of the SageMaker async endpoint",
            )?,
            pipeline_name: env.optional("PIPELINE_NAME").unwrap_or_default(),
            tool_catalog: env.optional("TOOL_CATALOG"),
            region: env.optional("AWS_REGION"),
            function_timeout_secs,
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
            listen_max_secs: env
                .number_in(
                    "LISTEN_MAX_SECS",
                    300,
                    1..=890,
                    "a number of seconds from 1 to 890",
                )?
                .min(function_timeout_secs.saturating_sub(10).max(1)),
            quotas: QuotaLimits {
                submits_per_minute: quota(env, "CALLER_SUBMITS_PER_MINUTE", Quota::Submits)?,
                runs_per_hour: quota(env, "CALLER_RUNS_PER_HOUR", Quota::Runs)?,
                waits_max: quota(env, "CALLER_WAITS_MAX", Quota::Waits)?,
                reads_per_minute: quota(env, "CALLER_READS_PER_MINUTE", Quota::Reads)?,
            },
            default_request_ttl_secs: env.number_in(
                "DEFAULT_REQUEST_TTL_SECS",
                DEFAULT_REQUEST_TTL_SECS,
                60..=21_600,
                "seconds from 60 to 21600 (SageMaker's limit for a request's queue TTL)",
            )?,
            inline_input_max_bytes: env.number_in(
                "INLINE_INPUT_MAX_BYTES",
                INLINE_INPUT_MAX_BYTES,
                0..=INLINE_INPUT_MAX_BYTES,
                "a byte count from 0 (every input through S3) to 128000 (InvokeEndpointAsync's inline limit)",
            )?,
            max_body_bytes: env.number_in(
                "MCP_MAX_BODY_BYTES",
                DEFAULT_MAX_BODY_BYTES,
                1_024..=LAMBDA_MAX_BODY_BYTES,
                "a byte count from 1024 to 6000000 (a Function URL request's limit)",
            )?,
            event_bus_name: event_bus_name(env),
            metrics_namespace: metrics_namespace(env),
            approvers: None,
            events: None,
            approval_gate: env.flag(
                "APPROVAL_GATE",
                "true (a run that registered a model waiting for approval asks for the decision \
                 before it is done) or false",
            )?,
            approvals_via: ApprovalsVia::from_env(env)?,
        })
    }
}

/// One per-caller quota (`0`: off), with its default and bounds.
fn quota<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
    name: &'static str,
    quota: Quota,
) -> Result<u32, ConfigError> {
    let defaults = QuotaLimits::default();
    let (default, max, expected) = match quota {
        Quota::Submits => (
            defaults.submits_per_minute,
            100_000,
            "jobs each caller may submit per minute, 0 (no limit) to 100000",
        ),
        Quota::Runs => (
            defaults.runs_per_hour,
            10_000,
            "training runs each caller may start per hour, 0 (no limit) to 10000",
        ),
        Quota::Waits => (
            defaults.waits_max,
            1_000,
            "long waits each caller may hold at once, 0 (no limit) to 1000",
        ),
        Quota::Reads => (
            defaults.reads_per_minute,
            100_000,
            "reads (status checks, provenance, resources/read, tasks/get) each caller may make \
             per minute, 0 (no limit) to 100000",
        ),
    };
    env.number_in(name, default, 0..=max, expected)
}

/// `TRAINING_INPUT_PREFIXES`: comma-separated `s3://bucket/prefix/` entries training data may
/// be read from; unset, the IO bucket's `train/`.
fn training_input_prefixes<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
    io_bucket: &str,
) -> Result<Vec<S3Prefix>, ConfigError> {
    const EXPECTED: &str = "comma-separated s3://bucket/prefix/ entries (lowercase bucket \
        names; no ., .. or empty path segments), e.g. s3://my-bucket/train/,s3://datasets/intents/";
    let text = match env.optional("TRAINING_INPUT_PREFIXES") {
        Some(text) => text,
        None => format!("s3://{io_bucket}/train/"),
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
    let text = env
        .optional("TRAINING_INSTANCE_TYPES")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env::{env, mcp_env};
    use crate::config::McpToolsConfig;

    #[test]
    fn pipeline_parameters_map_arguments_to_the_pipelines_names() {
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[("AUTH_MODE", "iam")]))).unwrap();
        let p = cfg.tools.training.pipeline_parameters.as_ref().unwrap();
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
        let p = cfg.tools.training.pipeline_parameters.as_ref().unwrap();
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
            let text = cfg
                .tools
                .training
                .pipeline_parameters
                .unwrap_err()
                .to_string();
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
        let prefixes = |t: &ToolsConfig| -> Vec<String> {
            let prefixes = t.training.input_prefixes.iter();
            prefixes.map(|p| p.to_string()).collect()
        };
        assert_eq!(prefixes(t), ["s3://b/train/"]);
        assert_eq!(t.training.instance_types, ["ml.m5.xlarge"]);
        assert_eq!(t.quotas, QuotaLimits::default());
        assert_eq!(t.default_request_ttl_secs, 3600);
        assert_eq!(t.inline_input_max_bytes, 128_000);
        assert!(t.serves_training());
        let cfg = McpToolsConfig::from_env(&env(&mcp_env(&[
            ("AUTH_MODE", "iam"),
            ("TRAINING_INPUT_PREFIXES", "s3://data-a/train, s3://data-b/"),
            ("TRAINING_INSTANCE_TYPES", "ml.m5.xlarge, ml.g5.2xlarge"),
            ("CALLER_SUBMITS_PER_MINUTE", "0"),
            ("CALLER_RUNS_PER_HOUR", "3"),
            ("CALLER_WAITS_MAX", "1"),
            ("CALLER_READS_PER_MINUTE", "0"),
            ("DEFAULT_REQUEST_TTL_SECS", "600"),
            ("INLINE_INPUT_MAX_BYTES", "0"),
            ("PIPELINE_NAME", " "),
        ])))
        .unwrap();
        let t = &cfg.tools;
        assert_eq!(prefixes(t), ["s3://data-a/train/", "s3://data-b/"]);
        assert_eq!(t.training.instance_types, ["ml.m5.xlarge", "ml.g5.2xlarge"]);
        assert_eq!(
            t.quotas,
            QuotaLimits {
                submits_per_minute: 0,
                runs_per_hour: 3,
                waits_max: 1,
                reads_per_minute: 0,
            }
        );
        assert_eq!(t.default_request_ttl_secs, 600);
        assert_eq!(t.inline_input_max_bytes, 0);
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
            ("CALLER_READS_PER_MINUTE", "100001"),
            ("DEFAULT_REQUEST_TTL_SECS", "59"),
            ("INLINE_INPUT_MAX_BYTES", "128001"),
            ("INLINE_INPUT_MAX_BYTES", "-1"),
        ] {
            let vars = mcp_env(&[("AUTH_MODE", "iam"), (name, bad)]);
            let err = McpToolsConfig::from_env(&env(&vars))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{name}={bad:?}: {err}");
        }
    }

    #[test]
    fn the_tools_read_exactly_the_variables_they_list() {
        let vars = mcp_env(&[("PIPELINE_MAX_PARALLEL_STEPS", "2")]);
        let read = |env: &_| ToolsConfig::from_env(env);
        entry::config::assert_reads_exactly(read, &vars, &[VARIABLES]);
        for name in REQUIRED {
            let vars: Vec<(&str, &str)> = REQUIRED
                .iter()
                .filter(|r| *r != name)
                .map(|r| (*r, "x"))
                .collect();
            let err = ToolsConfig::from_env(&env(&vars)).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}
