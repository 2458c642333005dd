//! Hold a listen (`subscriptions/listen` naming tasks): report each change of the caller's
//! named tasks, in order, once each, until every one has ended or the hold's time is up. The
//! tables take one conditional write per change, so a round of reads sees each state a task
//! settles in; what a task looks like, and who may see it, is the reader's to say.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use crate::check::poll_delay;
use domain::caller::Caller;
use domain::run::session_key;
use domain::task_id::TaskId;
use ports::{JobStore, RunStore, StoreError};

/// At most this many tasks on one listen: one round reads them all.
pub const MAX_LISTEN_TASKS: usize = 100;

/// One task as a round reads it.
pub trait Observed {
    /// Two readings with the same mark are one state: nothing to report between them.
    type Mark: PartialEq;
    fn mark(&self) -> Self::Mark;
    /// Ended (completed, failed or cancelled): nothing will change any more.
    fn is_terminal(&self) -> bool;
}

/// Reads named tasks as their owner's `tasks/get` would see them now.
pub trait TaskReader: Sync {
    type Task: Observed + Send;
    type Error: std::fmt::Display + Send;
    /// One reading per id, in order; None for a task that is unknown, another caller's or
    /// expired (the three alike).
    fn read(
        &self,
        task_ids: &[String],
    ) -> impl Future<Output = Result<Vec<Option<Self::Task>>, Self::Error>> + Send;
}

/// What the listener is sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard<T> {
    /// A task as it is now: its first reading on this listen, or one that differs from the last.
    Changed { task_id: String, task: T },
    /// Nothing to report for a while: proof the stream is alive.
    KeepAlive,
}

/// Where a hold sends what it hears. False: the listener is gone, and the hold ends.
pub trait ListenSink<T>: Send {
    fn send(&mut self, heard: Heard<T>) -> impl Future<Output = bool> + Send;
}

/// The tasks a listen may report (the caller's, in the order named), with their first reading.
#[derive(Debug)]
pub struct Opened<T> {
    pub accepted: Vec<(String, T)>,
}

impl<T> Opened<T> {
    /// The ids the acknowledgement names.
    pub fn task_ids(&self) -> Vec<String> {
        self.accepted.iter().map(|(id, _)| id.clone()).collect()
    }
}

/// How long a hold lasts and how long it may stay silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// From the start of the hold; the final result follows, so keep a margin.
    pub until: Duration,
    pub keep_alive: Duration,
}

/// Why a hold ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every accepted task has ended (or none was accepted).
    AllDone,
    /// The hold's time is up with tasks still working: the listener listens again.
    TimeUp,
    /// The listener went away.
    Gone,
}

/// The first round: each named task read once (duplicates named once); those the caller may
/// see are accepted, the others left out without a word.
pub async fn open<R: TaskReader>(
    reader: &R,
    task_ids: &[String],
) -> Result<Opened<R::Task>, R::Error> {
    let mut named: Vec<String> = Vec::new();
    for id in task_ids {
        if !named.contains(id) {
            named.push(id.clone());
        }
    }
    let read = reader.read(&named).await?;
    let accepted = named
        .into_iter()
        .zip(read)
        .filter_map(|(id, task)| task.map(|task| (id, task)))
        .collect();
    Ok(Opened { accepted })
}

/// Sends each accepted task's first reading, then reads the ones still working at backoff
/// (0.25 s to 2 s, from the start again after a change) and sends each change; a keep-alive
/// after `keep_alive` of silence. A failed round is logged and the next one tries again.
pub async fn hold<R, S>(reader: &R, opened: Opened<R::Task>, hold: Hold, sink: &mut S) -> Ended
where
    R: TaskReader,
    S: ListenSink<R::Task>,
{
    let started = Instant::now();
    let deadline = started + hold.until;
    let mut watching: Vec<(String, <R::Task as Observed>::Mark)> = Vec::new();
    for (task_id, task) in opened.accepted {
        if !task.is_terminal() {
            watching.push((task_id.clone(), task.mark()));
        }
        if !sink.send(Heard::Changed { task_id, task }).await {
            return Ended::Gone;
        }
    }
    let mut last_sent = Instant::now();
    let mut attempt = 0;
    loop {
        if watching.is_empty() {
            return Ended::AllDone;
        }
        let next_round = Instant::now() + poll_delay(attempt);
        let keep_alive_due = last_sent + hold.keep_alive;
        let wake = next_round.min(keep_alive_due).min(deadline);
        tokio::time::sleep_until(wake).await;
        if Instant::now() >= deadline {
            return Ended::TimeUp;
        }
        if wake == keep_alive_due && wake < next_round {
            if !sink.send(Heard::KeepAlive).await {
                return Ended::Gone;
            }
            last_sent = Instant::now();
            continue;
        }
        attempt += 1;
        let ids: Vec<String> = watching.iter().map(|(id, _)| id.clone()).collect();
        let read = match reader.read(&ids).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(error = %e, "a listen's round of reads failed; the next one tries again");
                continue;
            }
        };
        let mut still = Vec::with_capacity(watching.len());
        for ((task_id, mark), task) in watching.into_iter().zip(read) {
            // Gone from the table (expired): nothing more will be heard of it.
            let Some(task) = task else { continue };
            let now = task.mark();
            if now == mark {
                still.push((task_id, mark));
                continue;
            }
            attempt = 0;
            if !task.is_terminal() {
                still.push((task_id.clone(), now));
            }
            if !sink.send(Heard::Changed { task_id, task }).await {
                return Ended::Gone;
            }
            last_sent = Instant::now();
        }
        watching = still;
    }
}

/// What a round reads of a task's record: while it is the same as at the last round, the
/// record has not been written, and the task's whole answer need not be built again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMark(String);

/// The record marks of the named tasks, by one batch read of the results table (the jobs) and
/// one of the pipeline results table (the runs), eventually consistent. None for an id that is
/// no task, and for a record that is absent, expired or another caller's: the task's own
/// answer then says which, and the caller cannot tell them apart.
pub async fn record_marks<S: JobStore, R: RunStore>(
    jobs: &S,
    runs: &R,
    caller: &Caller,
    task_ids: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<Option<RecordMark>>, StoreError> {
    let parsed: Vec<Option<TaskId>> = task_ids.iter().map(|id| TaskId::parse(id).ok()).collect();
    let job_ids: Vec<String> = parsed
        .iter()
        .filter_map(|t| match t {
            Some(TaskId::Job(task)) => Some(task.inference_id.to_string()),
            Some(TaskId::Run(_)) | None => None,
        })
        .collect();
    let run_keys: Vec<(String, String)> = parsed
        .iter()
        .filter_map(|t| match t {
            Some(TaskId::Run(task)) => Some((
                session_key(Some(&caller.owner), task.session_id.as_str()),
                task.execution_arn.to_string(),
            )),
            Some(TaskId::Job(_)) | None => None,
        })
        .collect();
    let mut job_marks = jobs.get_many(&job_ids, now).await?.into_iter().map(|job| {
        let job = job.filter(|j| caller.owns(j.owner.as_ref()))?;
        let stage = job.stage.map(|s| s.as_str());
        Some(RecordMark(format!(
            "{}|{stage:?}|{:?}|{:?}",
            job.status.as_str(),
            job.completed_at,
            job.reconciled_at
        )))
    });
    let mut run_marks = runs.get_many(&run_keys).await?.into_iter().map(|run| {
        let run = run.filter(|r| caller.owns(r.owner.as_ref()))?;
        // A question asked or answered changes the task (input_required, working) too.
        Some(RecordMark(format!(
            "{}|{:?}|{}",
            run.status.as_str(),
            run.updated_at,
            run.questions.version
        )))
    });
    Ok(parsed
        .iter()
        .map(|t| match t {
            Some(TaskId::Job(_)) => job_marks.next().flatten(),
            Some(TaskId::Run(_)) => run_marks.next().flatten(),
            None => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A task's status word; "done" and "failed" are terminal.
    #[derive(Debug, Clone, PartialEq)]
    struct Status(&'static str);

    impl Observed for Status {
        type Mark = &'static str;
        fn mark(&self) -> &'static str {
            self.0
        }
        fn is_terminal(&self) -> bool {
            matches!(self.0, "done" | "failed")
        }
    }

    /// Each task's statuses from the given second of the test on; a task not listed is
    /// someone else's. Records the ids of every round.
    #[derive(Default)]
    struct Script {
        tasks: HashMap<&'static str, Vec<(u64, &'static str)>>,
        rounds: Mutex<Vec<Vec<String>>>,
        started: Option<Instant>,
    }

    impl Script {
        fn new(tasks: &[(&'static str, &[(u64, &'static str)])]) -> Self {
            Self {
                tasks: tasks.iter().map(|(id, s)| (*id, s.to_vec())).collect(),
                rounds: Mutex::default(),
                started: Some(Instant::now()),
            }
        }

        fn rounds(&self) -> Vec<Vec<String>> {
            self.rounds.lock().unwrap().clone()
        }
    }

    impl TaskReader for Script {
        type Task = Status;
        type Error = String;
        async fn read(&self, task_ids: &[String]) -> Result<Vec<Option<Status>>, String> {
            self.rounds.lock().unwrap().push(task_ids.to_vec());
            let at = self.started.unwrap().elapsed().as_secs_f64();
            Ok(task_ids
                .iter()
                .map(|id| {
                    let script = self.tasks.get(id.as_str())?;
                    let (_, status) = script.iter().rev().find(|(from, _)| *from as f64 <= at)?;
                    Some(Status(status))
                })
                .collect())
        }
    }

    /// What a listener heard, with the second of the test it heard it at; it goes away after
    /// the given number of messages.
    struct Listener(Vec<(u64, Heard<Status>)>, Instant, Option<usize>);

    impl Listener {
        fn new() -> Self {
            Self(Vec::new(), Instant::now(), None)
        }

        fn changes(&self) -> Vec<(String, &'static str)> {
            self.0
                .iter()
                .filter_map(|(_, h)| match h {
                    Heard::Changed { task_id, task } => Some((task_id.clone(), task.0)),
                    Heard::KeepAlive => None,
                })
                .collect()
        }
    }

    impl ListenSink<Status> for Listener {
        async fn send(&mut self, heard: Heard<Status>) -> bool {
            self.0.push((self.1.elapsed().as_secs(), heard));
            self.2.is_none_or(|n| self.0.len() < n)
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// A listen of `names` on `script`, opened and held to its end: what it acknowledged, why
    /// it ended, what was heard.
    async fn held(script: &Script, names: &[&str]) -> (Vec<String>, Ended, Listener) {
        let opened = open(script, &ids(names)).await.unwrap();
        let acknowledged = opened.task_ids();
        let mut heard = Listener::new();
        let ended = hold(script, opened, HOLD, &mut heard).await;
        (acknowledged, ended, heard)
    }

    const HOLD: Hold = Hold {
        until: Duration::from_secs(290),
        keep_alive: Duration::from_secs(15),
    };

    #[tokio::test(start_paused = true)]
    async fn each_change_is_reported_once_and_in_order_and_the_end_ends_it() {
        let script = Script::new(&[("a", &[(0, "working"), (3, "step 2"), (7, "done")])]);
        let (acknowledged, ended, heard) = held(&script, &["a"]).await;
        assert_eq!((acknowledged, ended), (ids(&["a"]), Ended::AllDone));
        assert_eq!(
            heard.changes(),
            [
                ("a".into(), "working"),
                ("a".into(), "step 2"),
                ("a".into(), "done")
            ]
        );
        // Heard within a round (at most 2 s) of each change.
        let at: Vec<u64> = heard.0.iter().map(|(s, _)| *s).collect();
        assert!(
            at[1] >= 3 && at[1] <= 5 && at[2] >= 7 && at[2] <= 9,
            "{at:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_ended_is_read_no_more_and_one_ended_at_the_start_is_told_once() {
        let script = Script::new(&[
            ("a", &[(0, "working"), (2, "failed")]),
            ("b", &[(0, "working"), (9, "done")]),
            ("c", &[(0, "done")]),
        ]);
        let (_, ended, heard) = held(&script, &["a", "b", "c"]).await;
        assert_eq!(ended, Ended::AllDone);
        assert_eq!(
            heard.changes(),
            [
                ("a".into(), "working"),
                ("b".into(), "working"),
                ("c".into(), "done"),
                ("a".into(), "failed"),
                ("b".into(), "done"),
            ]
        );
        let rounds = script.rounds();
        let after_a = rounds.iter().skip_while(|r| r.contains(&"a".into()));
        assert!(after_a.clone().count() > 0, "{rounds:?}");
        for round in after_a {
            assert_eq!(round, &ids(&["b"]), "only b is read once a has ended");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn another_callers_task_is_left_out_and_never_reported() {
        let script = Script::new(&[("mine", &[(0, "working"), (4, "done")])]);
        let (acknowledged, _, heard) = held(&script, &["theirs", "mine", "mine"]).await;
        assert_eq!(acknowledged, ["mine"], "named once, the other left out");
        assert!(heard.changes().iter().all(|(id, _)| id == "mine"));
        assert!(script.rounds().iter().skip(1).all(|r| r == &ids(&["mine"])));

        let (acknowledged, ended, heard) = held(&script, &["theirs"]).await;
        assert_eq!((acknowledged.len(), ended), (0, Ended::AllDone));
        assert!(heard.0.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_ends_before_its_time_with_keep_alives_in_the_silence() {
        let script = Script::new(&[("a", &[(0, "working")])]);
        let opened = open(&script, &ids(&["a"])).await.unwrap();
        let mut heard = Listener::new();
        let started = Instant::now();
        let hold_for = Hold {
            until: Duration::from_secs(50),
            keep_alive: Duration::from_secs(15),
        };
        assert_eq!(
            hold(&script, opened, hold_for, &mut heard).await,
            Ended::TimeUp
        );
        assert!(started.elapsed() <= Duration::from_secs(50));
        let keep_alives: Vec<u64> = heard
            .0
            .iter()
            .filter(|(_, h)| *h == Heard::KeepAlive)
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(keep_alives, [15, 30, 45]);
        // Backoff: after the first rounds, one read every 2 s.
        let rounds = script.rounds().len();
        assert!((20..=30).contains(&rounds), "{rounds} rounds in 50 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_listener_that_went_away_ends_the_hold() {
        let script = Script::new(&[("a", &[(0, "working"), (3, "step 2"), (60, "done")])]);
        let opened = open(&script, &ids(&["a"])).await.unwrap();
        let mut heard = Listener::new();
        heard.2 = Some(2);
        assert_eq!(hold(&script, opened, HOLD, &mut heard).await, Ended::Gone);
        assert_eq!(heard.0.len(), 2);
    }

    mod marks {
        use super::super::*;
        use domain::caller::Principal;
        use domain::job::{self, JobPolicy, Submission};
        use fakes::{MemoryJobs, MemoryRuns};

        async fn reserved(jobs: &MemoryJobs, owner: &Caller) -> String {
            let s = Submission::new(&owner.owner, "ep", "b", b"{}".to_vec(), None, 300, 600);
            jobs.write(&job::reserve(&s, &JobPolicy::default(), Utc::now()))
                .await
                .unwrap();
            job::task_id(s.inference_id.as_str(), &s.task_secret)
        }

        #[tokio::test]
        async fn a_mark_changes_with_its_record_and_anothers_task_has_none() {
            let (jobs, runs) = (MemoryJobs::default(), MemoryRuns::default());
            let me = Principal::Local.caller();
            let bob = Principal::Bearer { name: "bob".into() }.caller();
            let mine = reserved(&jobs, &me).await;
            let theirs = reserved(&jobs, &bob).await;
            let ids = vec![mine.clone(), theirs, "no task".into(), "run.x.y.z".into()];
            let first = record_marks(&jobs, &runs, &me, &ids, Utc::now())
                .await
                .unwrap();
            assert!(first[0].is_some());
            assert_eq!(&first[1..], &[None, None, None]);
            let again = record_marks(&jobs, &runs, &me, &ids, Utc::now())
                .await
                .unwrap();
            assert_eq!(first, again, "no write, the same mark");

            let (inference_id, _) = job::parse_task_id(&mine).unwrap();
            let inference_id = domain::ids::InferenceId::parse(inference_id).unwrap();
            let cancel = job::cancel(&inference_id, 3600, Utc::now());
            jobs.write(&cancel).await.unwrap();
            let after = record_marks(&jobs, &runs, &me, &ids, Utc::now())
                .await
                .unwrap();
            assert_ne!(after[0], first[0], "a write, another mark");
        }
    }
}
