//! pipeline-router's configuration, read once at cold start.

use entry::config::{metrics_namespace, result_ttl_secs, ConfigError, Env, EventTables};

/// Every variable this function reads; the template test compares it with what the template
/// sets, and a test here holds `from_env` to it.
pub const VARIABLES: &[&str] = &[
    "PIPELINE_RESULTS_TABLE",
    "PIPELINE_RESULTS_QUEUE_URL",
    "RESULT_TTL_SECS",
    "EVENTS_TABLE",
    "SUBSCRIPTIONS_TABLE",
    "METRICS_NAMESPACE",
];
/// The ones without which it does not start.
pub const REQUIRED: &[&str] = &["PIPELINE_RESULTS_TABLE", "PIPELINE_RESULTS_QUEUE_URL"];

/// Configuration of `pipeline-router`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRouterConfig {
    pub pipeline_results_table: String,
    pub pipeline_results_queue_url: String,
    pub result_ttl_secs: u64,
    /// The MCP Events log, where each run's end and question is kept for its owner's
    /// subscribers (naming their webhook subscriptions, when deployed); None: not kept.
    pub events: Option<EventTables>,
    /// The CloudWatch namespace of its metrics.
    pub metrics_namespace: String,
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
            events: EventTables::from_env(env)?,
            metrics_namespace: metrics_namespace(env),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entry::config::{assert_reads_exactly, test_env as env};

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

    #[test]
    fn it_reads_exactly_the_variables_it_lists() {
        let vars = [
            ("PIPELINE_RESULTS_TABLE", "t"),
            (
                "PIPELINE_RESULTS_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/1/q",
            ),
        ];
        let read = |env: &_| PipelineRouterConfig::from_env(env);
        assert_reads_exactly(read, &vars, &[VARIABLES]);
    }
}
