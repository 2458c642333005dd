//! The event a recorded job outcome announces (EventBridge), so agents and their platforms can
//! hear that a job ended instead of polling for it. What it says is what is recorded of the
//! job, never its result or a URL to it: the event travels to whoever the bus's rules name.

use serde::Serialize;

use crate::caller::Owner;
use crate::ids::InferenceId;
use crate::item::Item;
use crate::job::{Job, JobStatus};

/// The events' `source`.
pub const SOURCE: &str = "mcp.async-jobs";
/// The `detail-type` of a completed job's event.
pub const JOB_COMPLETED: &str = "Async Job Completed";
/// The `detail-type` of a failed job's event.
pub const JOB_FAILED: &str = "Async Job Failed";

/// An event's `detail`. Field names are the results table's (and, where they mean the same, the
/// completion queue's messages for runs: `status`, `owner`, `failure_reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobCompletion {
    pub inference_id: InferenceId,
    /// `completed` or `failed`.
    pub status: &'static str,
    /// The submitting caller's owner tag; None for an outcome of a job submitted elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_location: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// The outcome was found in S3 by a status check, its notification having not arrived.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reconciled: bool,
    /// The W3C `traceparent` stored with the job (the submitting call's span), so a consumer
    /// can join the job's trace; None for a job submitted before traces were stored, or
    /// elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl JobCompletion {
    /// The event of a job as stored once its outcome is recorded; None unless it is completed
    /// or failed (a cancelled job's end is not SageMaker's outcome).
    pub fn of(job: &Job) -> Option<Self> {
        let status = match job.status {
            JobStatus::Completed | JobStatus::Failed => job.status.as_str(),
            JobStatus::Pending | JobStatus::Cancelled => return None,
        };
        Some(Self {
            inference_id: job.inference_id.clone(),
            status,
            owner: job.owner.as_ref().map(Owner::to_string),
            endpoint_name: job.endpoint_name.clone(),
            output_location: job.output_location.clone(),
            failure_reason: job.failure_reason.clone(),
            submitted_at: job.submitted_at.clone(),
            completed_at: job.completed_at.clone(),
            reconciled: job.reconciled_at.is_some(),
            traceparent: job.trace.as_ref().map(|t| t.traceparent()),
        })
    }

    /// [`JobCompletion::of`] the stored item; None for an item that is not a job.
    pub fn of_item(item: &Item) -> Option<Self> {
        Self::of(&Job::from_item(item).ok()?)
    }

    pub fn detail_type(&self) -> &'static str {
        if self.status == JobStatus::Failed.as_str() {
            JOB_FAILED
        } else {
            JOB_COMPLETED
        }
    }

    pub fn detail_json(&self) -> String {
        serde_json::to_string(self).expect("a job completion serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::Attr;
    use crate::job::attr;

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Attr::s(*v)))
            .collect()
    }

    #[test]
    fn a_completed_job_announces_what_is_recorded_and_never_its_result() {
        let stored = item(&[
            (attr::INFERENCE_ID, "job-1"),
            (attr::STATUS, "completed"),
            (attr::OWNER, "0123456789abcdef0123456789abcdef"),
            (attr::ENDPOINT_NAME, "ep"),
            (attr::OUTPUT_LOCATION, "s3://b/outputs/job-1.out"),
            (attr::SUBMITTED_AT, "2026-11-20T10:00:00.000Z"),
            (attr::COMPLETED_AT, "2026-11-20T10:00:05.000Z"),
            (attr::RESULT, "{\"label\":\"secret\"}"),
        ]);
        let event = JobCompletion::of_item(&stored).unwrap();
        assert_eq!(event.detail_type(), JOB_COMPLETED);
        let detail: serde_json::Value = serde_json::from_str(&event.detail_json()).unwrap();
        assert_eq!(
            detail,
            serde_json::json!({
                "inference_id": "job-1", "status": "completed",
                "owner": "0123456789abcdef0123456789abcdef", "endpoint_name": "ep",
                "output_location": "s3://b/outputs/job-1.out",
                "submitted_at": "2026-11-20T10:00:00.000Z", "completed_at": "2026-11-20T10:00:05.000Z"
            })
        );
        assert!(!event.detail_json().contains("secret"));
        assert_eq!(event.traceparent, None, "a job stored without a trace");
    }

    #[test]
    fn a_job_stored_with_a_trace_announces_its_traceparent() {
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let stored = item(&[
            (attr::INFERENCE_ID, "job-3"),
            (attr::STATUS, "completed"),
            (attr::TRACEPARENT, traceparent),
            (attr::TRACESTATE, "rojo=1"),
        ]);
        let event = JobCompletion::of_item(&stored).unwrap();
        let detail: serde_json::Value = serde_json::from_str(&event.detail_json()).unwrap();
        assert_eq!(detail["traceparent"], traceparent);
        assert!(detail.get("tracestate").is_none());
        // A stored value that does not parse is not passed on.
        let mut odd = stored.clone();
        odd.insert(attr::TRACEPARENT.into(), Attr::s("not-a-traceparent"));
        assert_eq!(JobCompletion::of_item(&odd).unwrap().traceparent, None);
    }

    #[test]
    fn a_failed_job_says_why_and_a_job_not_ended_by_sagemaker_announces_nothing() {
        let failed = item(&[
            (attr::INFERENCE_ID, "job-2"),
            (attr::STATUS, "failed"),
            (attr::FAILURE_REASON, "ClientError: boom"),
            (attr::RECONCILED_AT, "2026-11-20T10:01:00.000Z"),
        ]);
        let event = JobCompletion::of_item(&failed).unwrap();
        assert_eq!(event.detail_type(), JOB_FAILED);
        assert_eq!(event.failure_reason.as_deref(), Some("ClientError: boom"));
        assert!(event.reconciled);
        for status in ["pending", "cancelled"] {
            let other = item(&[(attr::INFERENCE_ID, "j"), (attr::STATUS, status)]);
            assert_eq!(JobCompletion::of_item(&other), None, "{status}");
        }
        assert_eq!(
            JobCompletion::of_item(&item(&[(attr::STATUS, "bogus")])),
            None
        );
    }
}
