//! event-delivery's configuration, read once at cold start.

use std::time::Duration;

use entry::config::{metrics_namespace, ConfigError, Env};

/// Every variable this function reads; the template test compares it with what the template
/// sets, and a test here holds `from_env` to it.
pub const VARIABLES: &[&str] = &[
    "SUBSCRIPTIONS_TABLE",
    "DELIVERY_QUEUE_URL",
    "DELIVERY_TIMEOUT_MS",
    "RETRY_FIRST_SECS",
    "PAUSE_AFTER_SECS",
    "EVENTS_ALLOW_LOCAL_CALLBACKS",
    "METRICS_NAMESPACE",
];
/// The ones without which it does not start.
pub const REQUIRED: &[&str] = &["SUBSCRIPTIONS_TABLE", "DELIVERY_QUEUE_URL"];

/// Configuration of `event-delivery`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventDeliveryConfig {
    pub subscriptions_table: String,
    /// The retry queue: a failed first try is queued there, a failed retry put back on it
    /// with its backoff.
    pub delivery_queue_url: String,
    /// How long a receiver has to answer one delivery.
    pub timeout: Duration,
    /// The first retry's wait; each next one doubles, up to an hour.
    pub retry_first: Duration,
    /// How long a subscription fails without a break before it is paused.
    pub pause_after: Duration,
    /// `EVENTS_ALLOW_LOCAL_CALLBACKS=true` (local development only): a callback may be on this
    /// machine or a private address, over http.
    pub allow_local_callbacks: bool,
    pub metrics_namespace: String,
}

impl EventDeliveryConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        const QUEUE_URL: &str =
            "the URL of an SQS FIFO queue (https://sqs.<region>.amazonaws.com/<account>/<name>.fifo)";
        let delivery_queue_url = env.required("DELIVERY_QUEUE_URL", QUEUE_URL)?;
        if !(delivery_queue_url.starts_with("https://")
            || delivery_queue_url.starts_with("http://"))
        {
            return Err(ConfigError::Invalid {
                name: "DELIVERY_QUEUE_URL",
                value: delivery_queue_url,
                expected: QUEUE_URL,
            });
        }
        let timeout_ms: u64 = env.number_in(
            "DELIVERY_TIMEOUT_MS",
            5000,
            100..=30_000,
            "how long a receiver has to answer, 100 to 30000 milliseconds",
        )?;
        let retry_first_secs: u64 = env.number_in(
            "RETRY_FIRST_SECS",
            10,
            1..=3600,
            "the first retry's wait, 1 to 3600 seconds",
        )?;
        let pause_after_secs: u64 = env.number_in(
            "PAUSE_AFTER_SECS",
            3 * 3600,
            1..=7 * 24 * 3600,
            "how long a subscription fails before it is paused, 1 to 604800 seconds",
        )?;
        Ok(Self {
            subscriptions_table: env.required(
                "SUBSCRIPTIONS_TABLE",
                "the name of the MCP Events subscriptions table",
            )?,
            delivery_queue_url,
            timeout: Duration::from_millis(timeout_ms),
            retry_first: Duration::from_secs(retry_first_secs),
            pause_after: Duration::from_secs(pause_after_secs),
            allow_local_callbacks: env.flag(
                "EVENTS_ALLOW_LOCAL_CALLBACKS",
                "true or false (true: local development only)",
            )?,
            metrics_namespace: metrics_namespace(env),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entry::config::{assert_reads_exactly, test_env as env};

    const BASE: &[(&str, &str)] = &[
        ("SUBSCRIPTIONS_TABLE", "subs"),
        (
            "DELIVERY_QUEUE_URL",
            "https://sqs.us-east-1.amazonaws.com/1/d.fifo",
        ),
    ];

    #[test]
    fn defaults_apply_when_only_the_required_are_set() {
        let cfg = EventDeliveryConfig::from_env(&env(BASE)).unwrap();
        assert_eq!(cfg.subscriptions_table, "subs");
        assert_eq!(cfg.timeout, Duration::from_secs(5));
        assert_eq!(cfg.retry_first, Duration::from_secs(10));
        assert_eq!(cfg.pause_after, Duration::from_secs(3 * 3600));
        assert!(!cfg.allow_local_callbacks);
    }

    #[test]
    fn it_reads_exactly_the_variables_it_lists() {
        let read = |env: &_| EventDeliveryConfig::from_env(env);
        assert_reads_exactly(read, BASE, &[VARIABLES]);
        assert_eq!(REQUIRED, ["SUBSCRIPTIONS_TABLE", "DELIVERY_QUEUE_URL"]);
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        for (name, bad) in [
            ("DELIVERY_TIMEOUT_MS", "0"),
            ("RETRY_FIRST_SECS", "soon"),
            ("DELIVERY_QUEUE_URL", "d.fifo"),
            ("EVENTS_ALLOW_LOCAL_CALLBACKS", "yes please"),
        ] {
            let mut vars = BASE.to_vec();
            vars.retain(|(n, _)| *n != name);
            vars.push((name, bad));
            let err = EventDeliveryConfig::from_env(&env(&vars)).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
        }
        let err = EventDeliveryConfig::from_env(&env(&BASE[..1])).unwrap_err();
        assert!(err.to_string().contains("DELIVERY_QUEUE_URL"), "{err}");
    }
}
