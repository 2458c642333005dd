//! Submit a job: reserve its id, upload the input, invoke the endpoint, and record how far it
//! got, each step one conditional write. The same idempotency key replays the first answer,
//! or re-drives a job the state machine says may be submitted again.

use std::time::Duration;

use tokio::time::Instant;

use chrono::{DateTime, Utc};

use crate::quota::{self, CountGuard, CountedError, SubmitCount};
use crate::JobSettings;
use domain::ids::InferenceId;
use domain::item::Applied;
use domain::job::{
    self, plan_submit, Job, JobStatus, PendingCondition, Stage, Submission, SubmitPlan,
};
use domain::quota::QuotaLimits;
use domain::time::rfc3339;
use ports::{
    AsyncInvoker, AwsFailure, InvokeInput, InvokeRequest, JobStore, ObjectStore, StoreError,
};

/// What submit_job answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub inference_id: InferenceId,
    pub status: JobStatus,
    pub output_location: Option<String>,
    pub failure_location: Option<String>,
    pub submitted_at: String,
    /// An earlier call with the same idempotency key submitted this job.
    pub replay: bool,
    /// Uncertain: whether SageMaker queued the request is not known yet. Submitting (on a
    /// replay): the first call with the key is still submitting it.
    pub note: Option<PendingCondition>,
    /// The stored secret of the job's task id (none for items from before tasks).
    pub task_secret: Option<String>,
    /// The endpoint ran no instance when the job was queued: its first outcome waits for one
    /// to start (minutes).
    pub endpoint_at_zero: bool,
}

impl Submitted {
    /// The stored job as the first call answered it.
    fn replay_of(job: &Job) -> Self {
        Submitted {
            inference_id: job.inference_id.clone(),
            status: job.status,
            output_location: job.output_location.clone(),
            failure_location: job.failure_location.clone(),
            submitted_at: job.submitted_at.clone().unwrap_or_default(),
            replay: true,
            task_secret: job.task_secret.clone(),
            endpoint_at_zero: false,
            note: match job.stage {
                Some(Stage::Uncertain) => Some(PendingCondition::Uncertain {
                    invoke_error: job.invoke_error.clone(),
                }),
                Some(Stage::Reserved) if job.status == JobStatus::Pending => {
                    Some(PendingCondition::Submitting)
                }
                _ => None,
            },
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("the idempotency_key was used before with a different input")]
    InputConflict,
    /// SageMaker (or S3, for the input) definitely did not take the request.
    #[error("job {inference_id} was not submitted: {reason}")]
    Refused {
        inference_id: String,
        reason: String,
        failure: AwsFailure,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Conditional writes lost to concurrent calls are re-planned a few times, then replayed.
const MAX_ROUNDS: usize = 4;

/// Where a submission stands between its conditional writes.
enum Step {
    /// Plan from what is stored: `None` when no live job is.
    Plan(Option<Job>),
    /// Read what is stored, then plan.
    Read,
    /// This attempt holds the reservation, written at `reserved_at` (the job's submit time):
    /// upload the input and invoke.
    Invoke {
        attempt: i64,
        reserved_at: DateTime<Utc>,
    },
    /// Answer with the stored job, as the first call did.
    Replay(Job),
}

/// One submit_job call: the ports, the settings, the submission and the time it started.
struct Submit<'a, S, O, I> {
    store: &'a S,
    objects: &'a O,
    invoker: &'a I,
    settings: JobSettings,
    submission: &'a Submission,
    now: DateTime<Utc>,
    started: Instant,
}

/// submit_job counted against the owner's submits per minute (`limits`): the count taken
/// without a read, the submit planning from its own conditional reservation (whose refusal
/// returns what is stored). A call that turned out to be a replay, or a key's other input,
/// gives its count back; one SageMaker refused keeps it.
#[allow(clippy::too_many_arguments)]
pub async fn submit_counted<S, O, I>(
    store: &S,
    objects: &O,
    invoker: &I,
    settings: JobSettings,
    limits: &QuotaLimits,
    submission: &Submission,
    now: DateTime<Utc>,
) -> Result<Submitted, CountedError<SubmitError>>
where
    S: JobStore,
    O: ObjectStore,
    I: AsyncInvoker,
{
    let SubmitCount { taken, stored } = quota::take_submit(store, limits, submission, now).await?;
    let count = CountGuard::new(store, taken);
    let submitted = submit_job(store, objects, invoker, settings, submission, stored, now).await;
    let started_something = match &submitted {
        Ok(s) => !s.replay,
        Err(SubmitError::InputConflict) => false,
        Err(_) => true,
    };
    count.settle(started_something).await;
    submitted.map_err(CountedError::Work)
}

/// `stored`: the key's live job as a read just before found it (the quota check's), planned
/// from without reading again; None when there is none or nothing was read, and the first
/// round then writes without reading.
pub async fn submit_job<S, O, I>(
    store: &S,
    objects: &O,
    invoker: &I,
    settings: JobSettings,
    submission: &Submission,
    stored: Option<Job>,
    now: DateTime<Utc>,
) -> Result<Submitted, SubmitError>
where
    S: JobStore,
    O: ObjectStore,
    I: AsyncInvoker,
{
    let call = Submit {
        store,
        objects,
        invoker,
        settings,
        submission,
        now,
        started: Instant::now(),
    };
    call.run(stored).await
}

impl<S: JobStore, O: ObjectStore, I: AsyncInvoker> Submit<'_, S, O, I> {
    /// The time now, moved on from the call's `now` by how long the call has taken.
    fn time(&self) -> DateTime<Utc> {
        self.now + chrono::Duration::from_std(self.started.elapsed()).unwrap_or_default()
    }

    fn id(&self) -> &InferenceId {
        &self.submission.inference_id
    }

    /// The state machine. The first round plans from what the caller read, or, when nothing
    /// was read, writes the reservation without reading (a new key, the common case, costs one
    /// call less, and a refused write returns what is stored).
    async fn run(&self, stored: Option<Job>) -> Result<Submitted, SubmitError> {
        let mut step = Step::Plan(stored);
        let mut rounds = 0;
        loop {
            step = match step {
                Step::Read => Step::Plan(self.store.get(self.id(), self.time()).await?),
                Step::Plan(_) if rounds == MAX_ROUNDS => return self.replay_stored().await,
                Step::Plan(stored) => {
                    rounds += 1;
                    self.plan(stored).await?
                }
                Step::Invoke {
                    attempt,
                    reserved_at,
                } => return self.invoke(attempt, reserved_at).await,
                Step::Replay(job) => return Ok(Submitted::replay_of(&job)),
            };
        }
    }

    /// One round: what the stored state says to do, and its conditional write.
    async fn plan(&self, stored: Option<Job>) -> Result<Step, SubmitError> {
        let (s, t) = (self.submission, self.time());
        let policy = &self.settings.policy;
        let (write, attempt) = match plan_submit(stored.as_ref(), s, t) {
            SubmitPlan::Reserve => (job::reserve(s, policy, t), 1),
            SubmitPlan::Redrive { seen_attempt } => {
                (job::redrive(s, seen_attempt, policy, t), seen_attempt + 1)
            }
            SubmitPlan::InputConflict => return Err(SubmitError::InputConflict),
            // Both come of a stored job only.
            SubmitPlan::Replay => return Ok(stored.map_or(Step::Read, Step::Replay)),
            SubmitPlan::InProgress => {
                return match stored {
                    Some(job) => Ok(self.wait_while_reserved(job).await?),
                    None => Ok(Step::Read),
                }
            }
        };
        Ok(match self.store.write(&write).await? {
            Applied::Written { .. } => {
                if attempt > 1 {
                    tracing::info!(attempt, "re-driving the job");
                }
                Step::Invoke {
                    attempt,
                    reserved_at: t,
                }
            }
            // Another call got there first: plan again from what it stored.
            Applied::Refused(item) => match item.map(|i| Job::from_item(&i)) {
                Some(Ok(job)) => Step::Plan((!job.is_expired(t)).then_some(job)),
                _ => Step::Read,
            },
        })
    }

    /// Another call holds the reservation: wait for it to move on, then plan again; if it
    /// does not within the wait, answer with the job as it stands.
    async fn wait_while_reserved(&self, mut job: Job) -> Result<Step, StoreError> {
        while self.started.elapsed() < self.settings.in_progress_wait {
            tokio::time::sleep(Duration::from_millis(200)).await;
            match self.store.get(self.id(), self.time()).await? {
                Some(j) if j.attempt == job.attempt && j.stage == Some(Stage::Reserved) => job = j,
                moved => return Ok(Step::Plan(moved)),
            }
        }
        Ok(Step::Replay(job))
    }

    /// The rounds ran out under concurrent submissions: answer with what is stored now.
    async fn replay_stored(&self) -> Result<Submitted, SubmitError> {
        match self.store.get(self.id(), self.time()).await? {
            Some(job) => Ok(Submitted::replay_of(&job)),
            None => Err(SubmitError::Store(StoreError::Corrupt {
                table: "results".into(),
                message: format!(
                    "job {} kept changing under concurrent submissions",
                    self.id()
                ),
            })),
        }
    }

    /// The answer and the stored job carry the same submit time: the reservation's.
    async fn invoke(
        &self,
        attempt: i64,
        submitted: DateTime<Utc>,
    ) -> Result<Submitted, SubmitError> {
        let s = self.submission;
        let id = self.id();
        let lost_after = s.lost_after(submitted, &self.settings.policy);
        let mut answer = Submitted {
            inference_id: id.clone(),
            status: JobStatus::Pending,
            output_location: None,
            failure_location: None,
            submitted_at: rfc3339(submitted),
            replay: false,
            note: None,
            task_secret: Some(s.task_secret.clone()),
            endpoint_at_zero: false,
        };
        let input = match &s.input_location {
            None => Ok(InvokeInput::Inline(s.input.clone())),
            Some(location) => self
                .objects
                .put_json(location, s.input.clone())
                .await
                .map(|()| InvokeInput::S3(location.to_string())),
        };
        let input = match input {
            Ok(input) => input,
            Err(e) => {
                tracing::warn!(attempt, error = %e, "the input could not be uploaded");
                let failure = match &e {
                    ports::ObjectError::Aws { failure, .. } => failure.clone(),
                    other => AwsFailure {
                        code: None,
                        message: other.to_string(),
                        retryable: true,
                        ambiguous: false,
                    },
                };
                // Stored on the job and shown to its caller: no bucket, no AWS text.
                let reason = format!("S3 PutObject of the input failed: {}", failure.summary());
                return self.refuse(attempt, reason, failure, submitted).await;
            }
        };
        let request = InvokeRequest {
            endpoint_name: s.endpoint_name.clone(),
            inference_id: id.clone(),
            input,
            content_type: s.content_type.clone(),
            accept: s.accept.clone(),
            invocation_timeout_secs: s.invocation_timeout_secs,
            request_ttl_secs: s.request_ttl_secs,
        };
        // Asked beside the invoke, so it adds no time: whether the endpoint is at zero.
        let (invoked, instances) = tokio::join!(
            self.invoker.invoke(&request),
            self.invoker.current_instances(&s.endpoint_name)
        );
        answer.endpoint_at_zero = match instances {
            Ok(count) => count == Some(0),
            Err(failure) => {
                tracing::info!(%failure, "the endpoint's instance count could not be read");
                false
            }
        };
        match invoked {
            Ok(locations) => {
                let write = job::mark_invoked(id, attempt, &locations, lost_after);
                if let Applied::Refused(_) = self.store.write(&write).await? {
                    tracing::warn!(attempt, "the job moved on before its invoke was recorded");
                }
                tracing::info!(attempt, "job submitted");
                answer.output_location = locations.output_location;
                answer.failure_location = locations.failure_location;
                Ok(answer)
            }
            Err(failure) if failure.ambiguous => {
                tracing::warn!(attempt, %failure, "InvokeEndpointAsync failed ambiguously");
                let error = format!("SageMaker InvokeEndpointAsync: {}", failure.summary());
                let write = job::mark_uncertain(id, attempt, &error, lost_after);
                if let Applied::Refused(_) = self.store.write(&write).await? {
                    tracing::warn!(
                        attempt,
                        "the job moved on before its uncertain invoke was recorded"
                    );
                }
                tracing::warn!(attempt, %error, "invoke outcome unknown; the job stays pending");
                answer.note = Some(PendingCondition::Uncertain {
                    invoke_error: Some(error),
                });
                Ok(answer)
            }
            Err(failure) => {
                tracing::warn!(attempt, %failure, "InvokeEndpointAsync refused the request");
                let reason = format!(
                    "SageMaker InvokeEndpointAsync refused it: {}",
                    failure.summary()
                );
                self.refuse(attempt, reason, failure, submitted).await
            }
        }
    }

    async fn refuse(
        &self,
        attempt: i64,
        reason: String,
        failure: AwsFailure,
        now: DateTime<Utc>,
    ) -> Result<Submitted, SubmitError> {
        let id = self.id();
        let write = job::mark_refused(id, attempt, &reason, &self.settings.policy, now);
        if let Applied::Refused(_) = self.store.write(&write).await? {
            tracing::warn!(attempt, "the job moved on before its refusal was recorded");
        }
        tracing::warn!(attempt, %reason, "submission refused");
        Err(SubmitError::Refused {
            inference_id: id.to_string(),
            reason,
            failure,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::job::Submission;
    use domain::time::parse_rfc3339;
    use fakes::{FakeInvoker, InvokeFault, MemoryJobs, MemoryObjects};

    use domain::job::JobPolicy;

    const SETTINGS: JobSettings = JobSettings {
        inline_result_max_bytes: 65536,
        policy: JobPolicy {
            result_ttl_secs: 3600,
            submit_crash_after_secs: 60,
            lost_grace_secs: 120,
            reconcile_after_secs: 30,
        },
        in_progress_wait: Duration::from_millis(600),
    };

    fn t0() -> DateTime<Utc> {
        parse_rfc3339("2026-11-20T10:00:00Z").unwrap()
    }

    fn local() -> domain::caller::Owner {
        domain::caller::Principal::Local.caller().owner
    }

    fn submission(key: Option<&str>) -> Submission {
        Submission::new(
            &local(),
            "ep",
            "b",
            br#"{"inputs":"x"}"#.to_vec(),
            key,
            300,
            600,
        )
    }

    struct World {
        jobs: MemoryJobs,
        objects: MemoryObjects,
        invoker: FakeInvoker,
    }

    impl World {
        fn new() -> Self {
            World {
                jobs: MemoryJobs::default(),
                objects: MemoryObjects::default(),
                invoker: FakeInvoker::new("ep"),
            }
        }

        async fn submit(
            &self,
            s: &Submission,
            now: DateTime<Utc>,
        ) -> Result<Submitted, SubmitError> {
            submit_job(
                &self.jobs,
                &self.objects,
                &self.invoker,
                SETTINGS,
                s,
                None,
                now,
            )
            .await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_small_input_goes_inline_and_both_locations_are_stored() {
        let w = World::new();
        let s = submission(None);
        let answer = w.submit(&s, t0()).await.unwrap();
        assert_eq!(answer.status, JobStatus::Pending);
        assert!(answer.output_location.is_some() && answer.failure_location.is_some());
        let job = w.jobs.job(s.inference_id.as_str()).unwrap();
        assert_eq!(job.stage, Some(Stage::Invoked));
        assert_eq!(job.output_location, answer.output_location);
        assert_eq!(job.input_location, None);
        assert!(w.objects.is_empty(), "no S3 object for an inline input");
        let [request] = &w.invoker.requests()[..] else {
            panic!("one invoke")
        };
        assert_eq!(request.input, InvokeInput::Inline(s.input.clone()));
        assert_eq!(
            (
                request.endpoint_name.as_str(),
                request.content_type.as_str()
            ),
            ("ep", "application/json")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_input_is_uploaded_and_named_by_its_location() {
        let w = World::new();
        let mut s = submission(None);
        s = Submission::new(&s.owner, "ep", "b", vec![b' '; 128_001], None, 300, 600);
        w.submit(&s, t0()).await.unwrap();
        let location = s.input_location.clone().unwrap().to_string();
        assert!(w.objects.has(&location));
        let job = w.jobs.job(s.inference_id.as_str()).unwrap();
        assert_eq!(job.input_location.as_deref(), Some(location.as_str()));
        assert_eq!(w.invoker.requests()[0].input, InvokeInput::S3(location));
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_job_is_written_without_a_read_and_a_replay_is_one_refused_write() {
        let w = World::new();
        let s = submission(Some("k"));
        w.submit(&s, t0()).await.unwrap();
        // Reserve and record the invoke's answer; nothing read first.
        assert_eq!(w.jobs.calls(), (0, 2));
        w.submit(&s, t0() + chrono::Duration::seconds(5))
            .await
            .unwrap();
        // The refused reservation returned the stored job: the replay reads nothing either.
        assert_eq!(w.jobs.calls(), (0, 3));
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_replay_answers_exactly_as_the_first_call_did() {
        let w = World::new();
        let s = submission(Some("k"));
        let first = w.submit(&s, t0()).await.unwrap();
        let again = w
            .submit(&s, t0() + chrono::Duration::seconds(5))
            .await
            .unwrap();
        assert_eq!(
            Submitted {
                replay: false,
                ..again.clone()
            },
            first
        );
        assert!(again.replay);
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 1);
        let other = Submission::new(&local(), "ep", "b", b"{}".to_vec(), Some("k"), 300, 600);
        assert!(matches!(
            w.submit(&other, t0()).await,
            Err(SubmitError::InputConflict)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn an_ambiguous_invoke_leaves_the_job_pending_and_says_so() {
        let w = World::new();
        w.invoker.fail_next(InvokeFault::Ambiguous);
        let s = submission(Some("k"));
        let answer = w.submit(&s, t0()).await.unwrap();
        assert_eq!(answer.status, JobStatus::Pending);
        assert_eq!(
            answer.note,
            Some(PendingCondition::Uncertain {
                invoke_error: Some(
                    "SageMaker InvokeEndpointAsync: InternalFailure (transient; retrying may succeed)"
                        .into()
                )
            })
        );
        let job = w.jobs.job(s.inference_id.as_str()).unwrap();
        assert_eq!(job.stage, Some(Stage::Uncertain));
        // Replayed before it is lost: the same answer, no second invoke.
        let again = w
            .submit(&s, t0() + chrono::Duration::seconds(60))
            .await
            .unwrap();
        assert_eq!(again.note, answer.note);
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 1);
        // Once probably lost, the same key re-drives it.
        let lost = t0() + chrono::Duration::seconds(600 + 300 + 120);
        let redriven = w.submit(&s, lost).await.unwrap();
        assert!(!redriven.replay && redriven.output_location.is_some());
        assert_eq!(w.jobs.job(s.inference_id.as_str()).unwrap().attempt, 2);
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_fails_the_job_with_the_reason_and_the_key_redrives_it() {
        let w = World::new();
        w.invoker.fail_next(InvokeFault::Refused);
        let s = submission(Some("k"));
        let err = w.submit(&s, t0()).await.unwrap_err();
        assert!(err.to_string().contains("ValidationError"), "{err}");
        let job = w.jobs.job(s.inference_id.as_str()).unwrap();
        assert_eq!(
            (job.status, job.stage),
            (JobStatus::Failed, Some(Stage::Refused))
        );
        assert!(job.failure_reason.unwrap().contains("ValidationError"));
        let again = w.submit(&s, t0()).await.unwrap();
        assert_eq!(again.status, JobStatus::Pending);
        assert_eq!(w.jobs.job(s.inference_id.as_str()).unwrap().attempt, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_crashed_reservation_is_redriven_after_the_crash_window() {
        let w = World::new();
        let s = submission(Some("k"));
        // A submission that reserved the id and then stopped.
        w.jobs
            .write(&job::reserve(&s, &SETTINGS.policy, t0()))
            .await
            .unwrap();
        let started = Instant::now();
        let early = w
            .submit(&s, t0() + chrono::Duration::seconds(1))
            .await
            .unwrap();
        assert!(early.replay);
        assert_eq!(early.note, Some(PendingCondition::Submitting));
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 0);
        // The refused reservation, then a read every 200 ms for the 600 ms it waits.
        assert_eq!(w.jobs.calls(), (3, 2));
        assert_eq!(started.elapsed(), SETTINGS.in_progress_wait);
        let late = w
            .submit(&s, t0() + chrono::Duration::seconds(61))
            .await
            .unwrap();
        assert!(!late.replay && late.output_location.is_some());
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_calls_with_one_key_make_one_job() {
        let w = World::new();
        let s = submission(Some("k"));
        let calls = (0..20).map(|_| w.submit(&s, t0()));
        let answers = futures_join_all(calls).await;
        let ids: std::collections::HashSet<_> = answers
            .iter()
            .map(|a| a.as_ref().unwrap().inference_id.clone())
            .collect();
        assert_eq!(ids.len(), 1);
        assert_eq!(w.invoker.calls(s.inference_id.as_str()), 1);
        assert_eq!(
            answers
                .iter()
                .filter(|a| !a.as_ref().unwrap().replay)
                .count(),
            1
        );
    }

    /// Runs the futures concurrently on this task (no extra dependency for join_all).
    async fn futures_join_all<F: std::future::Future>(
        futures: impl Iterator<Item = F>,
    ) -> Vec<F::Output> {
        let mut set = Vec::new();
        for f in futures {
            set.push(Box::pin(f));
        }
        let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for (i, f) in set.iter_mut().enumerate() {
                if out[i].is_none() {
                    match f.as_mut().poll(cx) {
                        std::task::Poll::Ready(v) => out[i] = Some(v),
                        std::task::Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(())
            }
        })
        .await;
        out.into_iter().map(Option::unwrap).collect()
    }
}
