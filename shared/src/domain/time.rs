//! Time as the stores need it: RFC 3339 strings for people, epoch seconds for DynamoDB's TTL.

use chrono::{DateTime, SecondsFormat, Utc};

/// The current time, passed into domain functions so tests can fix it.
pub fn now() -> DateTime<Utc> {
    Utc::now()
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
