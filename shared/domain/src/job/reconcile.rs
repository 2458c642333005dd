//! Reconciliation: where a status check looks in S3 for an outcome whose notification did not
//! arrive.

use chrono::{DateTime, Utc};

use crate::job::state::{Job, JobPolicy, JobStatus, Stage};
use crate::s3_location::S3Location;
use crate::time::parse_rfc3339;

/// Where a status check looks in S3 for an outcome whose notification did not arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Output(S3Location),
    Failure(S3Location),
}

/// At most one probe per status check, for a job pending past the threshold whose locations
/// are known. With both known, successive threshold periods alternate between them.
pub fn reconcile_probe(job: &Job, policy: &JobPolicy, now: DateTime<Utc>) -> Option<Probe> {
    if job.status != JobStatus::Pending || job.stage != Some(Stage::Invoked) {
        return None;
    }
    let submitted = job.submitted_at.as_deref().and_then(parse_rfc3339)?;
    let age = (now - submitted).num_seconds();
    let every = policy.reconcile_after_secs.max(1) as i64;
    if age < every {
        return None;
    }
    let output = job.output_location.as_deref().and_then(|l| l.parse().ok());
    let failure = job.failure_location.as_deref().and_then(|l| l.parse().ok());
    match (output, failure) {
        (Some(o), Some(f)) => Some(if (age / every) % 2 == 1 {
            Probe::Output(o)
        } else {
            Probe::Failure(f)
        }),
        (Some(o), None) => Some(Probe::Output(o)),
        (None, Some(f)) => Some(Probe::Failure(f)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    use crate::job::test_support::{both_locations, job, run, start, POLICY};
    use crate::job::transition::{mark_invoked, reserve};

    #[test]
    fn probes_start_after_the_threshold_and_alternate() {
        let (s, t0) = start();
        let locations = both_locations();
        let invoked = job(&run(&[
            reserve(&s, &POLICY, t0),
            mark_invoked(&s.inference_id, 1, &locations, 5),
        ])
        .0);
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(29)),
            None
        );
        let out: S3Location = "s3://b/out".parse().unwrap();
        let fail: S3Location = "s3://b/fail".parse().unwrap();
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(30)),
            Some(Probe::Output(out))
        );
        assert_eq!(
            reconcile_probe(&invoked, &POLICY, t0 + Duration::seconds(60)),
            Some(Probe::Failure(fail))
        );
        let reserved = job(&run(&[reserve(&s, &POLICY, t0)]).0);
        assert_eq!(
            reconcile_probe(&reserved, &POLICY, t0 + Duration::days(1)),
            None
        );
    }
}
