//! What every function's configuration has in common: the reader of the environment, its
//! errors, and the settings all writers of outcomes share (the results table, TTLs, the
//! inline limit, the metrics namespace). Each function's own configuration lives in its crate
//! (`config.rs`), read once at cold start, and lists the variables it reads.
//!
//! Every problem names the variable, so a misconfigured deployment says exactly what to fix.

use std::str::FromStr;

use domain::job::JobPolicy;
use usecases::JobSettings;

/// DynamoDB items must stay under 400 KB; the inline result is capped well below that so
/// the rest of the item (ids, locations, a bounded failure excerpt) always fits.
pub const INLINE_RESULT_HARD_MAX_BYTES: u64 = 256 * 1024;
pub const DEFAULT_RESULT_TTL_SECS: u64 = 3600;
/// The inline limit's default lives beside the settings it is one of.
pub use usecases::DEFAULT_INLINE_RESULT_MAX_BYTES;

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

/// The process's own environment, as [`Env::process`] reads it.
pub type ProcessEnv = Env<fn(&str) -> Option<String>>;

impl ProcessEnv {
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

    /// An optional string, trimmed; None when unset or blank.
    pub fn optional(&self, name: &'static str) -> Option<String> {
        (self.0)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// `true` or `false` (any case); false when unset or blank.
    pub fn flag(&self, name: &'static str, expected: &'static str) -> Result<bool, ConfigError> {
        match self.optional(name) {
            None => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(value) => Err(ConfigError::Invalid {
                name,
                value,
                expected,
            }),
        }
    }

    /// A comma-separated list, each entry trimmed, blanks dropped; `default` when unset or blank.
    pub fn list(&self, name: &'static str, default: &str) -> Vec<String> {
        self.optional(name)
            .unwrap_or_else(|| default.to_owned())
            .split(',')
            .map(|e| e.trim().to_owned())
            .filter(|e| !e.is_empty())
            .collect()
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

/// `EVENT_BUS_NAME`: the EventBridge bus (a name, an ARN, or `default`) recorded outcomes are
/// announced on; unset or empty, no events.
pub fn event_bus_name<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Option<String> {
    env.optional("EVENT_BUS_NAME")
}

/// Added to the function's timeout before a reservation counts as a crashed submission.
pub const CRASH_MARGIN_SECS: u64 = 15;
/// How long a call with an idempotency key waits for a concurrent first call to get its answer.
const IN_PROGRESS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What every writer of job items reads alike: the results table, how long an outcome is kept
/// and the largest output kept inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecords {
    pub results_table: String,
    pub result_ttl_secs: u64,
    pub inline_result_max_bytes: u64,
}

impl JobRecords {
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

    /// What the job use cases are told: `policy` with this TTL.
    pub fn job_settings(&self, policy: JobPolicy) -> JobSettings {
        JobSettings {
            policy: JobPolicy {
                result_ttl_secs: self.result_ttl_secs,
                ..policy
            },
            inline_result_max_bytes: self.inline_result_max_bytes,
            in_progress_wait: IN_PROGRESS_WAIT,
        }
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

/// Where a completion path logs its events for MCP Events: `EVENTS_TABLE`, and with it (when
/// webhooks are deployed) `SUBSCRIPTIONS_TABLE`, whose subscriptions each event names for the
/// delivery function. Neither: no events; the subscriptions table alone is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTables {
    pub events_table: String,
    pub subscriptions_table: Option<String>,
}

impl EventTables {
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
    ) -> Result<Option<Self>, ConfigError> {
        match (
            env.optional("EVENTS_TABLE"),
            env.optional("SUBSCRIPTIONS_TABLE"),
        ) {
            (None, None) => Ok(None),
            (Some(events_table), subscriptions_table) => Ok(Some(Self {
                events_table,
                subscriptions_table,
            })),
            (None, Some(_)) => Err(ConfigError::Missing {
                name: "EVENTS_TABLE",
                expected: "the events table, which SUBSCRIPTIONS_TABLE needs (each event names \
                           its subscriptions there)",
            }),
        }
    }
}

/// `METRICS_NAMESPACE`: the CloudWatch namespace every function's metrics go to (the template
/// sets the stack's); default `McpAsyncJobs`.
pub fn metrics_namespace<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> String {
    env.optional("METRICS_NAMESPACE")
        .unwrap_or_else(|| "McpAsyncJobs".to_owned())
}

/// The names of the variables a configuration asked for.
#[cfg(any(test, feature = "testing"))]
pub type Asked = std::rc::Rc<std::cell::RefCell<std::collections::BTreeSet<String>>>;

/// An environment of `vars` that records every variable asked for: each function's test holds
/// what its configuration reads to the list it declares.
/// A lookup that answers from a test's own variables.
#[cfg(any(test, feature = "testing"))]
pub type TestLookup = Box<dyn Fn(&str) -> Option<String>>;

/// The environment a configuration's tests read from.
#[cfg(any(test, feature = "testing"))]
pub type TestEnv = Env<TestLookup>;

/// Reads a configuration from `vars` and asserts that it asked for exactly the variables of
/// `lists` (a function's declared lists): the list cannot drift from the code that reads.
#[cfg(any(test, feature = "testing"))]
pub fn assert_reads_exactly<T, E: std::fmt::Debug>(
    read: impl Fn(&TestEnv) -> Result<T, E>,
    vars: &[(&str, &str)],
    lists: &[&[&str]],
) {
    let (env, asked) = recording_env(vars);
    read(&env).expect("the configuration reads");
    let asked: Vec<String> = asked.borrow().iter().cloned().collect();
    let mut listed: Vec<&str> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    listed.sort_unstable();
    listed.dedup();
    assert_eq!(asked, listed, "the variables read and the ones listed");
}

/// An environment of `vars` alone, for a configuration's tests.
#[cfg(any(test, feature = "testing"))]
pub fn test_env(vars: &[(&str, &str)]) -> TestEnv {
    recording_env(vars).0
}

#[cfg(any(test, feature = "testing"))]
pub fn recording_env(vars: &[(&str, &str)]) -> (TestEnv, Asked) {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let asked = std::rc::Rc::new(std::cell::RefCell::new(std::collections::BTreeSet::new()));
    let seen = asked.clone();
    let lookup: TestLookup = Box::new(move |k: &str| {
        seen.borrow_mut().insert(k.to_owned());
        map.get(k).cloned()
    });
    (Env::from_lookup(lookup), asked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reader_defaults_refuses_and_names_its_variable() {
        let (env, asked) = recording_env(&[
            ("A", " a "),
            ("BLANK", "  "),
            ("N", "7"),
            ("BAD", "x"),
            ("L", " p, ,q "),
        ]);
        assert_eq!(env.required("A", "a thing"), Ok("a".to_owned()));
        assert!(matches!(
            env.required("BLANK", "a thing"),
            Err(ConfigError::Missing { name: "BLANK", .. })
        ));
        assert!(matches!(
            env.required("MISSING", "a thing"),
            Err(ConfigError::Missing {
                name: "MISSING",
                ..
            })
        ));
        assert_eq!(env.optional("A"), Some("a".to_owned()));
        assert_eq!(env.optional("BLANK"), None);
        assert_eq!(env.optional("MISSING"), None);
        assert_eq!(env.number_in("N", 1u32, 0..=10, "n"), Ok(7));
        assert_eq!(
            env.number_in("MISSING", 1u32, 0..=10, "n"),
            Ok(1),
            "defaulted"
        );
        assert_eq!(
            env.number_in("BLANK", 1u32, 0..=10, "n"),
            Ok(1),
            "blank is unset"
        );
        assert!(matches!(
            env.number_in("BAD", 1u32, 0..=10, "n"),
            Err(ConfigError::Invalid { name: "BAD", .. })
        ));
        assert!(
            matches!(
                env.number_in("N", 1u32, 0..=5, "n"),
                Err(ConfigError::Invalid { name: "N", .. })
            ),
            "out of range"
        );
        assert_eq!(env.list("L", "d"), ["p", "q"]);
        assert_eq!(env.list("MISSING", "d, e"), ["d", "e"]);
        assert!(asked.borrow().contains("MISSING"));
    }

    #[test]
    fn the_shared_settings_default_and_refuse_malformed_values() {
        let (env, _) = recording_env(&[("RESULTS_TABLE", "t")]);
        assert_eq!(
            JobRecords::from_env(&env),
            Ok(JobRecords {
                results_table: "t".into(),
                result_ttl_secs: DEFAULT_RESULT_TTL_SECS,
                inline_result_max_bytes: DEFAULT_INLINE_RESULT_MAX_BYTES,
            })
        );
        let (env, _) = recording_env(&[]);
        let err = JobRecords::from_env(&env).unwrap_err().to_string();
        assert!(err.contains("RESULTS_TABLE"), "{err}");
        assert_eq!(metrics_namespace(&env), "McpAsyncJobs");
        assert_eq!(event_bus_name(&env), None);
        for (name, value) in [
            ("RESULT_TTL_SECS", "soon"),
            ("RESULT_TTL_SECS", "5"),
            ("INLINE_RESULT_MAX_BYTES", "-1"),
            ("INLINE_RESULT_MAX_BYTES", "500000"),
        ] {
            let (env, _) = recording_env(&[("RESULTS_TABLE", "t"), (name, value)]);
            let err = JobRecords::from_env(&env).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(name) && text.contains(value), "{text}");
        }
    }
}
