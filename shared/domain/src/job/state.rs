//! A job's states and its stored record: statuses, how far submission got, the timing rules,
//! and the decoding of a results-table item (with the migration of items written before
//! stages existed).

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::caller::Owner;
use crate::ids::InferenceId;
use crate::item::{Attr, Fields, Item};
use crate::time::parse_rfc3339;
use crate::trace::TraceContext;

/// Attribute names of the results table (the deployment contract).
pub mod attr {
    pub const INFERENCE_ID: &str = "inference_id";
    pub const STATUS: &str = "status";
    pub const SUBMITTED_AT: &str = "submitted_at";
    pub const COMPLETED_AT: &str = "completed_at";
    pub const ENDPOINT_NAME: &str = "endpoint_name";
    pub const INPUT_LOCATION: &str = "input_location";
    pub const OUTPUT_LOCATION: &str = "output_location";
    pub const FAILURE_LOCATION: &str = "failure_location";
    pub const FAILURE_REASON: &str = "failure_reason";
    pub const FAILURE_EXCERPT: &str = "failure_excerpt";
    pub const RESULT: &str = "result";
    pub const TTL: &str = "ttl";
    /// How far submission got while `pending`: reserved, invoked, uncertain (or refused).
    pub const STAGE: &str = "stage";
    /// 1 for the first submission, +1 for each re-drive; every submit transition checks it.
    pub const ATTEMPT: &str = "attempt";
    /// Epoch seconds after which the same idempotency key may re-drive the pending job.
    pub const REDRIVE_AFTER: &str = "redrive_after";
    /// The ambiguous error of an `uncertain` invoke.
    pub const INVOKE_ERROR: &str = "invoke_error";
    pub const REQUEST_TTL_SECS: &str = "request_ttl_secs";
    pub const INVOCATION_TIMEOUT_SECS: &str = "invocation_timeout_secs";
    pub const INPUT_SHA256: &str = "input_sha256";
    /// Set when the outcome was read from S3 because no notification arrived.
    pub const RECONCILED_AT: &str = "reconciled_at";
    /// The random half of the job's MCP task id (see [`super::task::task_id`]).
    pub const TASK_SECRET: &str = "task_secret";
    /// The submitting caller's owner tag (see [`crate::caller::Owner`]); absent on
    /// items from before owners existed, and on outcomes for jobs submitted elsewhere.
    pub const OWNER: &str = "owner";
    /// W3C trace context of the call that submitted the job (its mcp-tools span), so its
    /// outcome's log lines and event join the caller's trace.
    pub use crate::trace::attr::{TRACEPARENT, TRACESTATE};
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum JobStatus {
    Pending,
    Completed,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }

    pub fn is_terminal(self) -> bool {
        self != JobStatus::Pending
    }
}

/// How far the submission got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Stage {
    /// The item exists; SageMaker has not confirmed the request (the input may not be in S3).
    Reserved,
    /// InvokeEndpointAsync answered; both locations are stored.
    Invoked,
    /// The invoke failed in a way that does not tell whether SageMaker queued the request.
    Uncertain,
    /// SageMaker (or S3, for the input) definitely refused: `failed`, and re-drivable.
    Refused,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }

    pub(crate) fn attr(self) -> Attr {
        Attr::s(self.as_str())
    }
}

/// The timing rules of the lifecycle, from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPolicy {
    /// How long an outcome is kept.
    pub result_ttl_secs: u64,
    /// A `reserved` item older than this belongs to a submission that crashed: the submitting
    /// function's timeout plus a margin.
    pub submit_crash_after_secs: u64,
    /// Grace after a request's TTL and invocation timeout before a pending job is called lost.
    pub lost_grace_secs: u64,
    /// A job pending this long with known locations is looked for in S3 by status checks.
    pub reconcile_after_secs: u64,
}

impl Default for JobPolicy {
    fn default() -> Self {
        Self {
            result_ttl_secs: 3600,
            submit_crash_after_secs: 60,
            lost_grace_secs: 120,
            reconcile_after_secs: 60,
        }
    }
}

/// A results-table item, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub inference_id: InferenceId,
    pub status: JobStatus,
    /// `None` for items not written by submit_job (an outcome for a job submitted elsewhere).
    pub stage: Option<Stage>,
    pub attempt: i64,
    pub submitted_at: Option<String>,
    pub completed_at: Option<String>,
    pub endpoint_name: Option<String>,
    pub input_location: Option<String>,
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
    pub failure_reason: Option<String>,
    pub failure_excerpt: Option<String>,
    pub result: Option<Value>,
    pub ttl: Option<i64>,
    pub request_ttl_secs: Option<i64>,
    pub invocation_timeout_secs: Option<i64>,
    pub input_sha256: Option<String>,
    pub redrive_after: Option<i64>,
    pub invoke_error: Option<String>,
    pub reconciled_at: Option<String>,
    /// `None` for items written before tasks existed, or by an outcome alone.
    pub task_secret: Option<String>,
    pub owner: Option<Owner>,
    /// The submitting call's trace; None on items from before traces were stored (or with a
    /// stored value that does not parse), and on outcomes for jobs submitted elsewhere.
    pub trace: Option<TraceContext>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("item {inference_id:?} has status {status:?}, which is not a job status")]
pub struct BadJobItem {
    pub inference_id: String,
    pub status: String,
}

impl Job {
    pub fn from_item(item: &Item) -> Result<Job, BadJobItem> {
        let f = Fields(item);
        let inference_id = f.s(attr::INFERENCE_ID).unwrap_or_default();
        let status_text = f.s(attr::STATUS).unwrap_or_default();
        let status = JobStatus::parse(&status_text).ok_or(BadJobItem {
            inference_id: inference_id.clone(),
            status: status_text,
        })?;
        let mut stage = f.s(attr::STAGE).as_deref().and_then(Stage::parse);
        let submitted_at = f.s(attr::SUBMITTED_AT);
        let request_ttl_secs = f.n(attr::REQUEST_TTL_SECS);
        let invocation_timeout_secs = f.n(attr::INVOCATION_TIMEOUT_SECS);
        let mut redrive_after = f.n(attr::REDRIVE_AFTER);
        // Items written before stages existed were written once the invoke had answered (no
        // other writer leaves a job pending).
        if stage.is_none() && status == JobStatus::Pending {
            stage = Some(Stage::Invoked);
            redrive_after = redrive_after.or_else(|| {
                let submitted = submitted_at.as_deref().and_then(parse_rfc3339)?;
                Some(lost_after(
                    submitted,
                    request_ttl_secs.unwrap_or(600),
                    invocation_timeout_secs.unwrap_or(300),
                    JobPolicy::default().lost_grace_secs,
                ))
            });
        }
        Ok(Job {
            inference_id: inference_id.into(),
            status,
            stage,
            attempt: f.n(attr::ATTEMPT).unwrap_or(1),
            submitted_at,
            completed_at: f.s(attr::COMPLETED_AT),
            endpoint_name: f.s(attr::ENDPOINT_NAME),
            input_location: f.s(attr::INPUT_LOCATION),
            output_location: f.s(attr::OUTPUT_LOCATION),
            failure_location: f.s(attr::FAILURE_LOCATION),
            failure_reason: f.s(attr::FAILURE_REASON),
            failure_excerpt: f.s(attr::FAILURE_EXCERPT),
            result: f.json(attr::RESULT),
            ttl: f.n(attr::TTL),
            request_ttl_secs,
            invocation_timeout_secs,
            input_sha256: f.s(attr::INPUT_SHA256),
            redrive_after,
            invoke_error: f.s(attr::INVOKE_ERROR),
            reconciled_at: f.s(attr::RECONCILED_AT),
            task_secret: f.s(attr::TASK_SECRET),
            owner: f.s(attr::OWNER).map(Owner::stored),
            trace: TraceContext::from_fields(&f),
        })
    }

    /// DynamoDB deletes expired items only eventually: an item past its `ttl` is absent.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.ttl.is_some_and(|ttl| ttl <= now.timestamp())
    }

    fn redrive_due(&self, now: DateTime<Utc>) -> bool {
        self.redrive_after.is_some_and(|t| t <= now.timestamp())
    }

    /// A submission that stopped before SageMaker confirmed it (the function crashed or timed out).
    pub fn crashed(&self, now: DateTime<Utc>) -> bool {
        self.status == JobStatus::Pending
            && self.stage == Some(Stage::Reserved)
            && self.redrive_due(now)
    }

    /// SageMaker drops a request whose TTL passes in the queue, and without an error topic
    /// nobody hears of it: a job pending past TTL + timeout + grace is probably lost.
    pub fn probably_lost(&self, now: DateTime<Utc>) -> bool {
        self.status == JobStatus::Pending
            && matches!(self.stage, Some(Stage::Invoked | Stage::Uncertain))
            && self.redrive_due(now)
    }

    /// Whether the same idempotency key may submit this job again.
    pub fn redrivable(&self, now: DateTime<Utc>) -> bool {
        self.crashed(now)
            || self.probably_lost(now)
            || (self.status == JobStatus::Failed && self.stage == Some(Stage::Refused))
    }
}

/// Epoch seconds after which a job submitted at `submitted` is probably lost.
pub(crate) fn lost_after(
    submitted: DateTime<Utc>,
    request_ttl: i64,
    timeout: i64,
    grace: u64,
) -> i64 {
    (submitted + Duration::seconds(request_ttl + timeout + grace as i64)).timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::test_support::at;

    #[test]
    fn items_written_before_stages_read_as_invoked() {
        let item: Item = [
            ("inference_id", Attr::s("old")),
            ("status", Attr::s("pending")),
            ("submitted_at", Attr::s("2026-11-20T10:00:00.000Z")),
            ("request_ttl_secs", Attr::N(600)),
            ("invocation_timeout_secs", Attr::N(300)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let j = Job::from_item(&item).unwrap();
        assert_eq!(j.stage, Some(Stage::Invoked));
        assert!(j.probably_lost(at("2026-11-20T10:17:00Z")));
        assert!(!j.probably_lost(at("2026-11-20T10:16:59Z")));
        let mut bad = item.clone();
        bad.insert("status".into(), Attr::s("weird"));
        assert!(Job::from_item(&bad).is_err());
    }
}
