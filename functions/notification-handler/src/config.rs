//! notification-handler's configuration, read once at cold start.

use domain::job::JobPolicy;
use entry::config::{event_bus_name, metrics_namespace, ConfigError, Env, EventTables, JobRecords};
use usecases::JobSettings;

/// Every variable this function reads; the template test compares it with what the template
/// sets, and a test here holds `from_env` to it.
pub const VARIABLES: &[&str] = &[
    "RESULTS_TABLE",
    "RESULT_TTL_SECS",
    "INLINE_RESULT_MAX_BYTES",
    "BATCH_CONCURRENCY",
    "EVENT_BUS_NAME",
    "EVENTS_TABLE",
    "SUBSCRIPTIONS_TABLE",
    "METRICS_NAMESPACE",
];
/// The ones without which it does not start.
pub const REQUIRED: &[&str] = &["RESULTS_TABLE"];

/// Configuration of `notification-handler`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationHandlerConfig {
    /// The results table, the outcome TTL and the inline limit.
    pub jobs: JobRecords,
    /// How many messages of an SQS batch are recorded at once.
    pub batch_concurrency: usize,
    /// Where each recorded outcome is announced; None: nowhere.
    pub event_bus_name: Option<String>,
    /// The MCP Events log, where each outcome's event is kept for its owner's subscribers
    /// (naming their webhook subscriptions, when deployed); None: not kept.
    pub events: Option<EventTables>,
    /// The CloudWatch namespace of its metrics.
    pub metrics_namespace: String,
}

impl NotificationHandlerConfig {
    /// What the outcome use case is told.
    pub fn job_settings(&self) -> JobSettings {
        self.jobs.job_settings(JobPolicy::default())
    }

    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        Ok(Self {
            jobs: JobRecords::from_env(env)?,
            batch_concurrency: env.number_in(
                "BATCH_CONCURRENCY",
                16,
                1..=256,
                "how many messages of a batch to record at once, 1 to 256",
            )?,
            event_bus_name: event_bus_name(env),
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
    fn defaults_apply_when_only_the_table_is_set() {
        let cfg =
            NotificationHandlerConfig::from_env(&env(&[("RESULTS_TABLE", "results")])).unwrap();
        assert_eq!(cfg.jobs.results_table, "results");
        assert_eq!(cfg.jobs.result_ttl_secs, 3600);
        assert_eq!(cfg.jobs.inline_result_max_bytes, 4096);
    }

    #[test]
    fn missing_table_names_the_variable() {
        let err = NotificationHandlerConfig::from_env(&env(&[])).unwrap_err();
        assert!(err.to_string().contains("RESULTS_TABLE"), "{err}");
    }

    #[test]
    fn it_reads_exactly_the_variables_it_lists() {
        let read = |env: &_| NotificationHandlerConfig::from_env(env);
        assert_reads_exactly(read, &[("RESULTS_TABLE", "t")], &[VARIABLES]);
        assert_eq!(
            REQUIRED,
            ["RESULTS_TABLE"],
            "the one the read above is given"
        );
    }

    #[test]
    fn batch_concurrency_is_bounded_and_named() {
        for bad in ["0", "257", "many"] {
            let err = NotificationHandlerConfig::from_env(&env(&[
                ("RESULTS_TABLE", "t"),
                ("BATCH_CONCURRENCY", bad),
            ]))
            .unwrap_err();
            assert!(err.to_string().contains("BATCH_CONCURRENCY"), "{err}");
        }
        let cfg = NotificationHandlerConfig::from_env(&env(&[("RESULTS_TABLE", "t")])).unwrap();
        assert_eq!((cfg.batch_concurrency, cfg.event_bus_name), (16, None));
    }

    #[test]
    fn webhooks_need_the_events_table() {
        let with = |vars: &[(&str, &str)]| {
            let mut all = vec![("RESULTS_TABLE", "t")];
            all.extend_from_slice(vars);
            NotificationHandlerConfig::from_env(&env(&all))
        };
        assert_eq!(with(&[]).unwrap().events, None);
        let log = with(&[("EVENTS_TABLE", "e")]).unwrap().events.unwrap();
        assert_eq!(
            (log.events_table.as_str(), log.subscriptions_table),
            ("e", None)
        );
        let both = with(&[("EVENTS_TABLE", "e"), ("SUBSCRIPTIONS_TABLE", "s")]);
        let both = both.unwrap().events.unwrap();
        assert_eq!(both.subscriptions_table.as_deref(), Some("s"));
        let err = with(&[("SUBSCRIPTIONS_TABLE", "s")]).unwrap_err();
        assert!(err.to_string().contains("EVENTS_TABLE"), "{err}");
    }
}
