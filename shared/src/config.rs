//! Configuration read once at cold start from the environment, one struct per function.
//!
//! Every problem names the variable, so a misconfigured deployment says exactly what to fix.

use std::str::FromStr;

/// DynamoDB items must stay under 400 KB; the inline result is capped well below that so
/// the rest of the item (ids, locations, a bounded failure excerpt) always fits.
pub const INLINE_RESULT_HARD_MAX_BYTES: u64 = 256 * 1024;
pub const DEFAULT_RESULT_TTL_SECS: u64 = 3600;
pub const DEFAULT_INLINE_RESULT_MAX_BYTES: u64 = 64 * 1024;

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
}

impl NotificationHandlerConfig {
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Self, ConfigError> {
        Ok(Self {
            results_table: env
                .required("RESULTS_TABLE", "the name of the DynamoDB results table")?,
            result_ttl_secs: result_ttl_secs(env)?,
            inline_result_max_bytes: env.number_in(
                "INLINE_RESULT_MAX_BYTES",
                DEFAULT_INLINE_RESULT_MAX_BYTES,
                0..=INLINE_RESULT_HARD_MAX_BYTES,
                "a byte count from 0 to 262144 (DynamoDB items are limited to 400 KB)",
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

/// `RESULT_TTL_SECS`, shared by every writer.
pub fn result_ttl_secs<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<u64, ConfigError> {
    env.number_in(
        "RESULT_TTL_SECS",
        DEFAULT_RESULT_TTL_SECS,
        60..=31_536_000,
        "a number of seconds from 60 to 31536000 (one year)",
    )
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
