//! What a pending job's record says beyond `pending`: facts, which each front door words for
//! its callers.

use chrono::{DateTime, Utc};

use crate::job::state::{Job, JobStatus, Stage};

/// Why a pending job needs more said of it than its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PendingCondition {
    /// The submission stopped before SageMaker confirmed the request (the function crashed or
    /// timed out): it was probably never queued, and the same key re-drives it.
    Crashed,
    /// No outcome long after the request's TTL and invocation timeout: SageMaker drops requests
    /// that expire in its queue, and without an error topic nobody hears of it. The same key
    /// re-drives it.
    ProbablyLost,
    /// A submission is in progress: SageMaker has not confirmed the request yet.
    Submitting,
    /// SageMaker's answer to the invoke was lost (`invoke_error`), so whether it queued the
    /// request is not known; an outcome may still arrive.
    Uncertain { invoke_error: Option<String> },
}

impl Job {
    /// The condition a status check reports beside `pending`, when there is one.
    pub fn pending_condition(&self, now: DateTime<Utc>) -> Option<PendingCondition> {
        if self.status != JobStatus::Pending {
            return None;
        }
        Some(match self.stage {
            _ if self.crashed(now) => PendingCondition::Crashed,
            _ if self.probably_lost(now) => PendingCondition::ProbablyLost,
            Some(Stage::Reserved) => PendingCondition::Submitting,
            Some(Stage::Uncertain) => PendingCondition::Uncertain {
                invoke_error: self.invoke_error.clone(),
            },
            _ => return None,
        })
    }
}

/// The reason stored with a job the client cancelled (it is the record's `failure_reason`).
pub const CANCELLED_REASON: &str =
    "Cancelled by the client. SageMaker cannot stop an asynchronous \
    request once queued: it may still run, and what it reports is not recorded for this job.";

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::PendingCondition;
    use crate::job::test_support::{at, job, run, start, POLICY};
    use crate::job::transition::{mark_invoked, mark_uncertain, reserve};
    use crate::job::Locations;

    #[test]
    fn each_pending_condition_follows_the_stage_and_the_clock() {
        let (s, t0) = start();
        let lost_after = s.lost_after(t0, &POLICY);
        let uncertain = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_uncertain(&s.inference_id, 1, "InternalFailure: boom", lost_after),
        ])
        .0);
        assert_eq!(
            uncertain.pending_condition(t0),
            Some(PendingCondition::Uncertain {
                invoke_error: Some("InternalFailure: boom".into())
            })
        );
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert_eq!(
            reserved.pending_condition(t0),
            Some(PendingCondition::Submitting)
        );
        assert_eq!(
            reserved.pending_condition(t0 + Duration::seconds(61)),
            Some(PendingCondition::Crashed)
        );
        let invoked = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_invoked(&s.inference_id, 1, &Locations::default(), lost_after),
        ])
        .0);
        assert_eq!(invoked.pending_condition(t0), None);
        let lost = at("2026-11-20T10:17:00Z");
        assert_eq!(
            invoked.pending_condition(lost),
            Some(PendingCondition::ProbablyLost)
        );
        assert_eq!(
            uncertain.pending_condition(lost),
            Some(PendingCondition::ProbablyLost)
        );
    }
}
