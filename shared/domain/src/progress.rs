//! What a client that asked for progress is told while a tool waits: each change in a job's or
//! a run's state, and for a job a heartbeat between changes. Pure: the use cases feed in what
//! they read and send what comes out. MCP wants `progress` to increase with every notification,
//! so both trackers hold the last value sent and never go back to it.

use std::time::Duration;

use crate::job::{Job, JobStatus, Stage};
use crate::pipeline_status::StepState;

/// One progress notification: how far, of how much (when known), and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress<E> {
    pub progress: f64,
    pub total: Option<f64>,
    pub event: E,
}

/// Where a job is, as a client waiting on it is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMilestone {
    /// Reserved: the request is being submitted to SageMaker.
    Queued,
    /// SageMaker took the request; its outcome is awaited.
    Invoked,
    /// The invoke failed in a way that does not tell whether SageMaker queued the request.
    Uncertain,
    /// The outcome is recorded.
    Recorded(JobStatus),
}

impl JobMilestone {
    pub fn of(job: &Job) -> Self {
        match (job.status, job.stage) {
            (JobStatus::Pending, Some(Stage::Reserved)) => JobMilestone::Queued,
            (JobStatus::Pending, Some(Stage::Uncertain)) => JobMilestone::Uncertain,
            (JobStatus::Pending, _) => JobMilestone::Invoked,
            (status, _) => JobMilestone::Recorded(status),
        }
    }
}

/// What a job notification says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// The job reached this milestone (or was there when the wait began).
    Reached(JobMilestone),
    /// Nothing changed for a while: the wait goes on.
    StillAt(JobMilestone),
}

/// The smallest step up from the last value sent, when time alone would not be more.
const STEP: f64 = 0.001;

/// A job's notifications over one wait. `progress` is the seconds waited so far and `total` the
/// wait asked for: how long the job will take is not known, how much of the wait is used is.
#[derive(Debug, Clone)]
pub struct JobProgress {
    wait: Duration,
    heartbeat: Duration,
    last: Option<(JobMilestone, Duration)>,
    sent: Option<f64>,
}

impl JobProgress {
    pub fn new(wait: Duration, heartbeat: Duration) -> Self {
        Self {
            wait,
            heartbeat,
            last: None,
            sent: None,
        }
    }

    /// What to send for the job just read, `elapsed` into the wait: its milestone when it
    /// changed (the first read counts as a change), a heartbeat when `heartbeat` has passed
    /// since the last notification, else nothing.
    pub fn observe(&mut self, job: &Job, elapsed: Duration) -> Option<Progress<JobEvent>> {
        let milestone = JobMilestone::of(job);
        let event = match self.last {
            Some((last, _)) if last != milestone => JobEvent::Reached(milestone),
            None => JobEvent::Reached(milestone),
            Some((_, at)) if elapsed.saturating_sub(at) >= self.heartbeat => {
                JobEvent::StillAt(milestone)
            }
            Some(_) => return None,
        };
        self.last = Some((milestone, elapsed));
        let progress = match self.sent {
            Some(sent) => elapsed.as_secs_f64().max(sent + STEP),
            None => elapsed.as_secs_f64(),
        };
        self.sent = Some(progress);
        Some(Progress {
            progress,
            total: Some(self.wait.as_secs_f64().max(progress)),
            event,
        })
    }
}

/// A step as ListPipelineExecutionSteps reports it: its name and SageMaker's `StepStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepSeen<'a> {
    pub name: &'a str,
    pub status: &'a StepState,
}

/// What a run notification says: the step that changed last, as step `number` (in the order
/// the steps started) of `of` when the pipeline's step count is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEvent {
    /// None before any step has started.
    pub step: Option<StepChange>,
    pub of: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepChange {
    pub number: usize,
    pub name: String,
    pub status: StepState,
}

/// A run's notifications over one wait. `progress` counts a finished step as one and a started
/// one as a half, so each step that starts or ends moves it on; `total` is the pipeline's
/// number of steps when it is known.
#[derive(Debug, Clone)]
pub struct RunProgress {
    steps: Option<u32>,
    seen: Vec<(String, StepState)>,
    sent: Option<f64>,
}

impl RunProgress {
    pub fn new(steps: Option<u32>) -> Self {
        Self {
            steps,
            seen: Vec::new(),
            sent: None,
        }
    }

    /// What to send for the steps just listed (in the order they started): the first listing,
    /// and then each that moved the run on.
    pub fn observe(&mut self, steps: &[StepSeen<'_>]) -> Option<Progress<RunEvent>> {
        // A fold from 0.0: a float sum of nothing is -0.0.
        let progress = steps.iter().fold(0.0, |sum, s| {
            sum + if s.status.has_ended() { 1.0 } else { 0.5 }
        });
        if self.sent.is_some_and(|sent| progress <= sent) {
            return None;
        }
        // The step that changed: the latest whose status differs from the last listing.
        let changed = steps
            .iter()
            .enumerate()
            .rev()
            .find(|(i, s)| {
                self.seen
                    .get(*i)
                    .is_none_or(|(name, status)| name != s.name || status != s.status)
            })
            .or_else(|| steps.iter().enumerate().next_back());
        self.seen = steps
            .iter()
            .map(|s| (s.name.to_owned(), s.status.clone()))
            .collect();
        self.sent = Some(progress);
        // A pipeline may have more steps than its definition's top level counts (or the count
        // may be stale): never say step 5 of 4.
        let of = self
            .steps
            .map(|n| n.max(u32::try_from(steps.len()).unwrap_or(u32::MAX)));
        Some(Progress {
            progress,
            total: of.map(f64::from),
            event: RunEvent {
                step: changed.map(|(i, s)| StepChange {
                    number: i + 1,
                    name: s.name.to_owned(),
                    status: s.status.clone(),
                }),
                of,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job_with(status: JobStatus, stage: Option<Stage>) -> Job {
        use crate::item::{Attr, Item};
        use crate::job::attr;
        let mut item = Item::from([(attr::STATUS.to_owned(), Attr::s(status.as_str()))]);
        if let Some(stage) = stage {
            item.insert(attr::STAGE.to_owned(), Attr::s(stage.as_str()));
        }
        Job::from_item(&item).unwrap()
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_job_is_reported_at_each_milestone_and_between_them_at_the_heartbeat() {
        let mut p = JobProgress::new(secs(10.0), secs(5.0));
        let invoked = job_with(JobStatus::Pending, Some(Stage::Invoked));
        let done = job_with(JobStatus::Completed, Some(Stage::Invoked));

        let first = p.observe(&invoked, secs(0.0)).unwrap();
        assert_eq!(first.event, JobEvent::Reached(JobMilestone::Invoked));
        assert_eq!((first.progress, first.total), (0.0, Some(10.0)));
        assert_eq!(
            p.observe(&invoked, secs(2.0)),
            None,
            "no change, no heartbeat yet"
        );
        let beat = p.observe(&invoked, secs(5.5)).unwrap();
        assert_eq!(beat.event, JobEvent::StillAt(JobMilestone::Invoked));
        assert_eq!(beat.progress, 5.5);
        assert_eq!(
            p.observe(&invoked, secs(7.0)),
            None,
            "the heartbeat counts from the last one"
        );
        let recorded = p.observe(&done, secs(7.5)).unwrap();
        assert_eq!(
            recorded.event,
            JobEvent::Reached(JobMilestone::Recorded(JobStatus::Completed))
        );
        assert_eq!(recorded.progress, 7.5);
    }

    #[test]
    fn job_progress_always_increases_even_when_no_time_passed() {
        let mut p = JobProgress::new(secs(0.0), secs(5.0));
        let reserved = job_with(JobStatus::Pending, Some(Stage::Reserved));
        let invoked = job_with(JobStatus::Pending, Some(Stage::Invoked));
        let failed = job_with(JobStatus::Failed, Some(Stage::Invoked));
        let values: Vec<f64> = [&reserved, &invoked, &failed]
            .into_iter()
            .map(|job| p.observe(job, secs(0.0)).unwrap())
            .map(|update| {
                assert!(update.total.unwrap() >= update.progress, "{update:?}");
                update.progress
            })
            .collect();
        assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");
    }

    fn seen<'a>(steps: &[(&'a str, &'a str)]) -> Vec<StepSeen<'a>> {
        steps
            .iter()
            .map(|&(name, status)| StepSeen {
                name,
                // A test's few words, kept for the test's length.
                status: Box::leak(Box::new(StepState::parse(status))),
            })
            .collect()
    }

    #[test]
    fn a_run_is_reported_as_each_step_starts_and_ends() {
        let mut p = RunProgress::new(Some(3));
        let none = p.observe(&[]).unwrap();
        assert_eq!((none.progress, none.total), (0.0, Some(3.0)));
        assert!(none.progress.is_sign_positive());
        assert_eq!(none.event.step, None);
        assert_eq!(p.observe(&[]), None);

        let first = p.observe(&seen(&[("Prepare", "Executing")])).unwrap();
        assert_eq!(first.progress, 0.5);
        let step = first.event.step.unwrap();
        assert_eq!(
            (step.number, step.name.as_str(), step.status.as_str()),
            (1, "Prepare", "Executing")
        );
        assert_eq!(p.observe(&seen(&[("Prepare", "Executing")])), None);

        // Two changes between two reads: one notification, for the latest.
        let both = p
            .observe(&seen(&[("Prepare", "Succeeded"), ("Train", "Executing")]))
            .unwrap();
        assert_eq!(both.progress, 1.5);
        assert_eq!(both.event.step.unwrap().name, "Train");
        let trained = p
            .observe(&seen(&[("Prepare", "Succeeded"), ("Train", "Failed")]))
            .unwrap();
        assert_eq!(trained.progress, 2.0);
        let step = trained.event.step.unwrap();
        assert_eq!((step.number, step.status.as_str()), (2, "Failed"));
        assert_eq!(trained.event.of, Some(3));
    }

    #[test]
    fn a_run_with_more_steps_than_counted_never_reports_past_its_total() {
        let mut p = RunProgress::new(Some(1));
        let update = p
            .observe(&seen(&[("A", "Succeeded"), ("B", "Executing")]))
            .unwrap();
        assert_eq!(update.event.of, Some(2));
        assert!(update.total.unwrap() >= update.progress);
        let mut unknown = RunProgress::new(None);
        assert_eq!(
            unknown.observe(&seen(&[("A", "Executing")])).unwrap().total,
            None
        );
    }
}
