//! Check a job: read it (long-polling while it is pending), heal it from S3 when its
//! notification seems lost, and say what the agent needs to know.

use std::time::Duration;

use tokio::time::Instant;

use chrono::{DateTime, Utc};

use crate::outcome::{announce, reconcile, Recorded};
use crate::JobSettings;
use domain::caller::Caller;
use domain::ids::InferenceId;
use domain::job::{reconcile_probe, Job, JobStatus, PendingCondition};
use domain::progress::{JobEvent, JobProgress};
use domain::quota::is_quota_key;
use domain::s3_location::S3Location;
use ports::{CompletionEvents, JobStore, ObjectStore, ProgressSink, StoreError};

/// How long a presigned result URL stays valid.
pub const RESULT_URL_EXPIRY: Duration = Duration::from_secs(900);

/// A job as a status check reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobReport {
    pub job: Job,
    /// A presigned URL of an output that is not inline.
    pub result_url: Option<String>,
    pub probably_lost: bool,
    /// What more there is to say of the job than its status.
    pub note: Option<JobNote>,
    /// What this call found in S3 and recorded, when its notification had not arrived.
    pub reconciled: Option<Recorded>,
}

/// What a status check has to say of a job beyond its status, as a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobNote {
    Pending(PendingCondition),
    /// Completed with its output stored as a pointer, and no download URL could be made.
    OutputUnreachable,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// Never submitted here, another caller's, or expired: one answer for all three.
    #[error(
        "no job {} (unknown, another caller's, or expired)",
        domain::util::quote(inference_id)
    )]
    NotFound {
        inference_id: String,
        result_ttl_secs: u64,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Delays between reads while long-polling: gentle at first, then every 2 s.
pub fn poll_delay(attempt: u32) -> Duration {
    Duration::from_millis(match attempt {
        0 => 250,
        1 => 500,
        2 => 1000,
        _ => 2000,
    })
}

/// While a client waits, a notification at least this often, though nothing changed.
pub const JOB_HEARTBEAT: Duration = Duration::from_secs(5);

/// What a status check reads through, and announces through when it heals a job from S3.
pub struct JobReads<'a, S, O, E> {
    pub jobs: &'a S,
    pub objects: &'a O,
    pub events: &'a E,
    pub settings: JobSettings,
}

/// Reads the caller's job until it is no longer pending or `wait` has passed. At most one S3
/// probe per call, through the same conditional write a notification uses. Another caller's
/// job is answered exactly as an unknown id, after the same one read. A wait on a pending job
/// reports to `progress` as the job moves, and at [`JOB_HEARTBEAT`] otherwise; a job done at
/// the first read, or no wait, reports nothing. An outcome found in S3 is announced as a
/// notification's would be; a put that fails is logged, and the outcome stays recorded.
pub async fn check_job<S, O, E, P>(
    reads: &JobReads<'_, S, O, E>,
    caller: &Caller,
    inference_id: &InferenceId,
    wait: Duration,
    clock: impl Fn() -> DateTime<Utc>,
    progress: &mut P,
) -> Result<JobReport, CheckError>
where
    S: JobStore,
    O: ObjectStore,
    E: CompletionEvents,
    P: ProgressSink<JobEvent>,
{
    let (store, objects, events) = (reads.jobs, reads.objects, reads.events);
    let settings = reads.settings;
    let started = Instant::now();
    let deadline = started + wait;
    let mut tracker = JobProgress::new(wait, JOB_HEARTBEAT);
    let mut reporting = false;
    let mut probed = false;
    let mut reconciled = None;
    let mut attempt = 0;
    loop {
        let now = clock();
        let job = owned_job(store, settings, caller, inference_id, now).await?;
        if !probed {
            if let Some(probe) = reconcile_probe(&job, &settings.policy, now) {
                probed = true;
                match reconcile(store, objects, settings, inference_id.as_str(), probe, now).await {
                    Ok(Some(recorded)) => {
                        tracing::info!(?recorded, "outcome reconciled from S3");
                        if let Err(e) = announce(events, &recorded).await {
                            tracing::warn!(error = %e, "the reconciled outcome's completion event was not put");
                        }
                        reconciled = Some(recorded);
                        continue;
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = %e, "S3 probe for the outcome failed"),
                }
            }
        }
        reporting |= !wait.is_zero() && job.status == JobStatus::Pending;
        if reporting {
            if let Some(update) = tracker.observe(&job, started.elapsed()) {
                progress.send(update).await;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if job.status != JobStatus::Pending || left.is_zero() {
            let mut report = report(objects, job, now).await;
            report.reconciled = reconciled;
            return Ok(report);
        }
        tokio::time::sleep(poll_delay(attempt).min(left)).await;
        attempt += 1;
    }
}

/// The caller's job: another caller's, a quota counter (the results table's counters are no
/// jobs) and an expired one are all [`CheckError::NotFound`], after the same one read.
pub async fn owned_job<S: JobStore>(
    store: &S,
    settings: JobSettings,
    caller: &Caller,
    inference_id: &InferenceId,
    now: DateTime<Utc>,
) -> Result<Job, CheckError> {
    let not_found = || CheckError::NotFound {
        inference_id: inference_id.to_string(),
        result_ttl_secs: settings.policy.result_ttl_secs,
    };
    if is_quota_key(inference_id.as_str()) {
        return Err(not_found());
    }
    store
        .get(inference_id, now)
        .await?
        .filter(|job| caller.owns(job.owner.as_ref()))
        .ok_or_else(not_found)
}

async fn report<O: ObjectStore>(objects: &O, job: Job, now: DateTime<Utc>) -> JobReport {
    let result_url = match (&job.status, &job.result, job.output_location.as_deref()) {
        (JobStatus::Completed, None, Some(location)) => match location.parse::<S3Location>() {
            Ok(location) => match objects.presign_get(&location, RESULT_URL_EXPIRY).await {
                Ok(url) => Some(url),
                Err(e) => {
                    tracing::warn!(%location, error = %e, "could not presign the output");
                    None
                }
            },
            Err(_) => None,
        },
        _ => None,
    };
    let note = match job.pending_condition(now) {
        Some(condition) => Some(JobNote::Pending(condition)),
        None => {
            (job.status == JobStatus::Completed && job.result.is_none() && result_url.is_none())
                .then_some(JobNote::OutputUnreachable)
        }
    };
    JobReport {
        probably_lost: job.probably_lost(now),
        job,
        result_url,
        note,
        reconciled: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::job::{self, JobPolicy, Locations, Stage, Submission};
    use domain::time::parse_rfc3339;
    use fakes::{MemoryEvents, MemoryJobs, MemoryObjects};
    use ports::NoProgress;
    use serde_json::json;

    const SETTINGS: JobSettings = JobSettings {
        policy: JobPolicy {
            result_ttl_secs: 3600,
            submit_crash_after_secs: 60,
            lost_grace_secs: 120,
            reconcile_after_secs: 30,
        },
        inline_result_max_bytes: 1024,
        in_progress_wait: Duration::from_secs(5),
    };

    fn local() -> Caller {
        domain::caller::Principal::Local.caller()
    }

    fn t0() -> DateTime<Utc> {
        parse_rfc3339("2026-11-20T10:00:00Z").unwrap()
    }

    /// The local caller's check of `id`, waiting up to `wait`, at the times `clock` gives.
    async fn check(
        jobs: &MemoryJobs,
        objects: &MemoryObjects,
        id: &str,
        wait: Duration,
        clock: impl Fn() -> DateTime<Utc>,
    ) -> Result<JobReport, CheckError> {
        let reads = JobReads {
            jobs,
            objects,
            events: &MemoryEvents::default(),
            settings: SETTINGS,
        };
        let id = InferenceId::parse(id).expect("an inference id");
        check_job(&reads, &local(), &id, wait, clock, &mut NoProgress).await
    }

    async fn invoked(jobs: &MemoryJobs) -> Submission {
        let s = Submission::new(&local().owner, "ep", "b", b"{}".to_vec(), None, 300, 600);
        jobs.write(&job::reserve(&s, &SETTINGS.policy, t0()))
            .await
            .unwrap();
        let at = Locations {
            output_location: Some("s3://b/out/1".into()),
            failure_location: Some("s3://b/fail/1".into()),
        };
        jobs.write(&job::mark_invoked(
            &s.inference_id,
            1,
            &at,
            s.lost_after(t0(), &SETTINGS.policy),
        ))
        .await
        .unwrap();
        s
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_or_expired_id_is_not_found() {
        let jobs = MemoryJobs::default();
        let objects = MemoryObjects::default();
        let err = check(&jobs, &objects, "nope", Duration::ZERO, t0)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, CheckError::NotFound { inference_id, .. } if inference_id == "nope"),
            "{err}"
        );
        let s = invoked(&jobs).await;
        let much_later = || t0() + chrono::Duration::days(1);
        assert!(matches!(
            check(
                &jobs,
                &objects,
                s.inference_id.as_str(),
                Duration::ZERO,
                much_later
            )
            .await,
            Err(CheckError::NotFound { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_notification_is_healed_from_s3_after_the_threshold() {
        let jobs = MemoryJobs::default();
        let objects = MemoryObjects::default().with("s3://b/out/1", r#"{"label":"ok"}"#);
        let s = invoked(&jobs).await;
        let early = check(
            &jobs,
            &objects,
            s.inference_id.as_str(),
            Duration::ZERO,
            || t0() + chrono::Duration::seconds(10),
        )
        .await
        .unwrap();
        assert_eq!(early.job.status, JobStatus::Pending);
        assert_eq!(objects.reads(), 0, "no probe before the threshold");
        let events = MemoryEvents::default();
        let reads = JobReads {
            jobs: &jobs,
            objects: &objects,
            events: &events,
            settings: SETTINGS,
        };
        let later = || t0() + chrono::Duration::seconds(31);
        let id = &s.inference_id;
        let healed = check_job(&reads, &local(), id, Duration::ZERO, later, &mut NoProgress)
            .await
            .unwrap();
        assert_eq!(healed.job.status, JobStatus::Completed);
        assert_eq!(healed.job.result, Some(json!({"label": "ok"})));
        assert!(healed.job.reconciled_at.is_some());
        assert_eq!(objects.reads(), 1);
        let put = events.put();
        assert_eq!(
            put.len(),
            1,
            "announced as a notification's would be: {put:?}"
        );
        assert_eq!((put[0].status, put[0].reconciled), ("completed", true));
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_one_probe_per_call_even_while_waiting() {
        let jobs = MemoryJobs::default();
        let objects = MemoryObjects::default();
        let s = invoked(&jobs).await;
        let started = Instant::now();
        let report = check(
            &jobs,
            &objects,
            s.inference_id.as_str(),
            Duration::from_millis(800),
            || t0() + chrono::Duration::seconds(31),
        )
        .await
        .unwrap();
        assert_eq!(report.job.status, JobStatus::Pending);
        assert_eq!(objects.reads(), 1, "one probe");
        // Reads at 0, 250 and 750 ms, and once more when the wait ends at 800 ms.
        let (reads, writes) = jobs.calls();
        assert_eq!(
            (reads, writes),
            (4, 2),
            "the two submit writes, no reconcile write"
        );
        assert_eq!(started.elapsed(), Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_output_gets_a_presigned_url_and_a_lost_job_says_so() {
        let jobs = MemoryJobs::default();
        let objects = MemoryObjects::default();
        let s = invoked(&jobs).await;
        let lost = check(
            &jobs,
            &objects,
            s.inference_id.as_str(),
            Duration::ZERO,
            || t0() + chrono::Duration::seconds(1021),
        )
        .await;
        // The probe at this age looks for the failure object, finds none, and the job is lost.
        let lost = lost.unwrap();
        assert!(lost.probably_lost);
        assert_eq!(
            lost.note,
            Some(JobNote::Pending(PendingCondition::ProbablyLost))
        );
        assert_eq!(lost.job.stage, Some(Stage::Invoked));

        jobs.insert_completed_pointer("big", "s3://b/out/big");
        let done = check(&jobs, &objects, "big", Duration::ZERO, t0)
            .await
            .unwrap();
        assert_eq!(
            done.result_url.as_deref(),
            Some("https://presigned.example/b/out/big")
        );
    }
}
