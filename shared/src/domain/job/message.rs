//! What the agent is told about a pending job beside its status.

use chrono::{DateTime, Utc};

use crate::domain::job::state::{Job, JobStatus, Stage};

impl Job {
    /// What a status check says beside the status, when there is something to say.
    pub fn status_message(&self, now: DateTime<Utc>) -> Option<String> {
        if self.status != JobStatus::Pending {
            return None;
        }
        let again = "Submit it again with the same idempotency_key to re-drive it under the same \
                     inference_id (without a key, submit it as a new job).";
        Some(match self.stage {
            _ if self.crashed(now) => format!(
                "The submission stopped before SageMaker confirmed the request, so it was probably never \
                 queued. {again}"
            ),
            _ if self.probably_lost(now) => format!(
                "No outcome has arrived long after the request's TTL and invocation timeout. SageMaker drops \
                 requests that expire in its queue, and without an error topic nobody is told. {again}"
            ),
            Some(Stage::Reserved) => "The submission is still in progress.".to_owned(),
            Some(Stage::Uncertain) => uncertain_message(self.invoke_error.as_deref()),
            _ => return None,
        })
    }
}

/// What the agent is told when the invoke's outcome is unknown.
pub fn uncertain_message(error: Option<&str>) -> String {
    let cause = error.map(|e| format!(" ({e})")).unwrap_or_default();
    format!(
        "SageMaker's answer to the submission was lost{cause}, so whether the request was queued is not \
         known yet. The job stays pending: if SageMaker runs it, its outcome is recorded as usual. Check it \
         with check_job_status; if it is reported probably lost, submit again with the same idempotency_key."
    )
}

/// The reason stored with a job the client cancelled.
pub const CANCELLED_REASON: &str =
    "Cancelled by the client. SageMaker cannot stop an asynchronous \
    request once queued: it may still run, and what it reports is not recorded for this job.";

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use crate::domain::job::test_support::{at, job, run, submission, POLICY};
    use crate::domain::job::transition::{mark_uncertain, reserve};

    #[test]
    fn uncertain_and_crashed_jobs_say_what_happened() {
        let s = submission();
        let t0 = at("2026-11-20T10:00:00Z");
        let uncertain = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_uncertain(
                &s.inference_id,
                1,
                "InternalFailure: boom",
                s.lost_after(t0, &POLICY),
            ),
        ])
        .0);
        let message = uncertain.status_message(t0).unwrap();
        assert!(
            message.contains("not known") && message.contains("InternalFailure: boom"),
            "{message}"
        );
        assert!(!uncertain.probably_lost(t0));
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert!(reserved
            .status_message(t0 + Duration::seconds(61))
            .unwrap()
            .contains("same idempotency_key"));
    }
}
