//! Time as the stores need it: RFC 3339 strings for people, epoch seconds for DynamoDB's TTL.

use chrono::{DateTime, SecondsFormat, Utc};

/// The current time, passed into domain functions so tests can fix it.
pub fn now() -> DateTime<Utc> {
    Utc::now()
}

/// Where an entry point reads the time: the system's in production, a test's own otherwise
/// (one that follows tokio's paused clock, say).
#[derive(Clone)]
pub struct Clock(std::sync::Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>);

impl Clock {
    pub fn system() -> Self {
        Clock(std::sync::Arc::new(Utc::now))
    }

    pub fn from_fn(now: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Self {
        Clock(std::sync::Arc::new(now))
    }

    pub fn now(&self) -> DateTime<Utc> {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// RFC 3339 in UTC with millisecond precision, e.g. `2026-11-20T10:15:01.902Z`.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// DynamoDB TTL value (epoch seconds) `ttl_secs` after `t`.
pub fn ttl_after(t: DateTime<Utc>, ttl_secs: u64) -> i64 {
    t.timestamp()
        .saturating_add(i64::try_from(ttl_secs).unwrap_or(i64::MAX))
}

/// Parses an RFC 3339 timestamp as AWS writes them; `None` when it is not one.
pub fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
