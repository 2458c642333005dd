//! Quotas per owner (see [`domain::quota`]): taken before work starts, given back when
//! the call turned out to start nothing, wait slots claimed for a long wait and freed after, and
//! reads counted before they read.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

use domain::caller::Owner;
use domain::item::Applied;
use domain::job::{plan_submit, Job, Submission, SubmitPlan};
use domain::quota::{lease_until, Quota, QuotaLimits, WaitSlot, WindowCounter};
use ports::{JobStore, QuotaStore, StoreError};

/// A wait's lease outlives the wait by this much, for the reply to leave.
const LEASE_MARGIN_SECS: i64 = 15;

#[derive(Debug, thiserror::Error)]
pub enum QuotaError {
    /// The caller is at the limit; nothing was started.
    #[error("quota reached: {limit} {quota:?}; frees in {retry_after_secs} s")]
    Exceeded {
        quota: Quota,
        limit: u32,
        retry_after_secs: u64,
    },
    /// The count could not be written, so the call was not made (a retry may succeed).
    #[error("the {quota:?} count could not be written: {source}")]
    Store {
        quota: Quota,
        #[source]
        source: StoreError,
    },
}

/// A count taken for a call, to give back if the call started nothing.
#[derive(Debug)]
pub struct Taken(WindowCounter);

/// Takes one from the owner's window for `quota`; None when that quota is off.
async fn take<Q: QuotaStore>(
    store: &Q,
    owner: &Owner,
    quota: Quota,
    limit: u32,
    window_secs: i64,
    now: DateTime<Utc>,
) -> Result<Option<Taken>, QuotaError> {
    let now_secs = now.timestamp();
    let Some(counter) = WindowCounter::of(owner, quota, limit, window_secs, now_secs) else {
        return Ok(None);
    };
    match store.take(&counter, 1).await {
        Ok(Applied::Written { .. }) => Ok(Some(Taken(counter))),
        Ok(Applied::Refused(_)) => Err(QuotaError::Exceeded {
            quota,
            limit,
            retry_after_secs: counter.retry_after(now_secs),
        }),
        Err(source) => Err(QuotaError::Store { quota, source }),
    }
}

/// What counting a submission found: the count taken (None when nothing is to start, or the
/// quota is off) and the key's job as the check read it, for the submit to plan from without
/// reading it again.
#[derive(Debug)]
pub struct SubmitCount {
    pub taken: Option<Taken>,
    /// The live job stored under the key (None when there is none, or nothing was read).
    pub stored: Option<Job>,
}

/// A submission counts when it starts work: a new job, or a lost one re-driven. The count is
/// taken first, nothing read: a new key (the common case) costs no read, and a replay, which the
/// submit's refused reservation finds, gives its count back ([`CountGuard`]). Only a keyed
/// submission the quota refuses reads its job, so that a retry of work already started is
/// still answered at the limit.
pub async fn take_submit<S: JobStore>(
    store: &S,
    limits: &QuotaLimits,
    submission: &Submission,
    now: DateTime<Utc>,
) -> Result<SubmitCount, QuotaError> {
    let mut count = SubmitCount {
        taken: None,
        stored: None,
    };
    if limits.submits_per_minute == 0 {
        return Ok(count);
    }
    let limit = limits.submits_per_minute;
    match take(store, &submission.owner, Quota::Submits, limit, 60, now).await {
        Ok(taken) => {
            count.taken = taken;
            Ok(count)
        }
        Err(refused @ QuotaError::Exceeded { .. }) if submission.keyed => {
            count.stored = store
                .get(&submission.inference_id, now)
                .await
                .map_err(|source| QuotaError::Store {
                    quota: Quota::Submits,
                    source,
                })?;
            match plan_submit(count.stored.as_ref(), submission, now) {
                SubmitPlan::Reserve | SubmitPlan::Redrive { .. } => Err(refused),
                _ => Ok(count),
            }
        }
        Err(refused) => Err(refused),
    }
}

/// A training run to be started counts against the owner's runs per hour.
pub async fn take_run<Q: QuotaStore>(
    store: &Q,
    limits: &QuotaLimits,
    owner: &Owner,
    now: DateTime<Utc>,
) -> Result<Option<Taken>, QuotaError> {
    take(store, owner, Quota::Runs, limits.runs_per_hour, 3600, now).await
}

/// Gives back a count for a call that started nothing after all (a replay found late). A
/// failure only leaves the count one high until the window ends: logged, not raised.
async fn give_back<Q: QuotaStore>(store: &Q, taken: Option<Taken>) {
    let Some(Taken(counter)) = taken else { return };
    if let Err(e) = store.give_back(&counter).await {
        tracing::warn!(error = %e, "a quota count was not given back");
    }
}

/// Reads per minute (`CALLER_READS_PER_MINUTE`), on a key of their own (never the submits'
/// count). Counting each read would cost a DynamoDB write per read; instead an instance takes
/// reads for an owner in batches of up to [`READ_BATCH_MAX`] (at most a sixtieth of the limit,
/// so a low limit is counted one by one) with one conditional increment, and spends them
/// without writing. A batch never takes past the limit, so no owner reads more than the limit
/// in a minute; what an instance took and did not spend is lost when the minute ends, so an
/// owner spread over many instances may be refused up to `batch − 1` reads early on each.
/// A read is never given back, so once a minute refuses an owner it refuses until it ends: the
/// instance remembers that and refuses the owner's further reads of that minute without
/// writing, so a caller over the quota cannot make its counter's partition hot.
#[derive(Debug)]
pub struct ReadQuota {
    limit: u32,
    /// Per owner: the end of the minute (epoch seconds) and what this instance holds of it.
    held: Mutex<HashMap<Owner, Held>>,
}

/// An owner's reads of one minute, as this instance knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Reads taken and not yet spent.
    Left { window_end: i64, reads: u32 },
    /// The minute refused a read.
    Refused { window_end: i64 },
}

impl Held {
    fn window_end(self) -> i64 {
        match self {
            Self::Left { window_end, .. } | Self::Refused { window_end } => window_end,
        }
    }
}

/// The most reads one increment takes for an instance.
pub const READ_BATCH_MAX: u32 = 10;

/// Owners whose reads an instance holds at once, at most; past it a batch is taken one read
/// at a time and a refusal is not remembered (the next read writes again).
const OWNERS_HELD: usize = 4096;

/// A read counted against its owner's quota: what a read's work is done under.
#[derive(Debug)]
#[must_use = "a read is counted before the work it guards"]
pub struct Read(());

impl ReadQuota {
    /// `limit` reads per owner per minute; 0 turns the quota off.
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// How many reads one increment takes: a sixtieth of the limit, 1 to [`READ_BATCH_MAX`].
    pub fn batch(&self) -> u32 {
        (self.limit / 60).clamp(1, READ_BATCH_MAX)
    }

    /// Counts one read of `owner`'s: over the quota, or with the count not written, the read is
    /// not to be made.
    pub async fn take<Q: QuotaStore>(
        &self,
        store: &Q,
        owner: &Owner,
        now: DateTime<Utc>,
    ) -> Result<Read, QuotaError> {
        let now_secs = now.timestamp();
        let Some(counter) = WindowCounter::of(owner, Quota::Reads, self.limit, 60, now_secs) else {
            return Ok(Read(()));
        };
        let exceeded = || QuotaError::Exceeded {
            quota: Quota::Reads,
            limit: self.limit,
            retry_after_secs: counter.retry_after(now_secs),
        };
        match self.spend(owner, now_secs) {
            Some(true) => return Ok(Read(())),
            Some(false) => return Err(exceeded()),
            None => {}
        }
        // A batch, or what is left of the minute one read at a time (and one at a time when
        // this instance can hold no more owners).
        let batch = if self.can_hold(owner) {
            self.batch()
        } else {
            1
        };
        let attempts: &[u32] = if batch > 1 { &[batch, 1] } else { &[1] };
        let window_end = counter.window_end;
        for &n in attempts {
            match store.take(&counter, n).await {
                Ok(Applied::Written { .. }) => {
                    let reads = n - 1;
                    self.hold(owner, Held::Left { window_end, reads }, now_secs);
                    return Ok(Read(()));
                }
                Ok(Applied::Refused(_)) => continue,
                Err(source) => {
                    return Err(QuotaError::Store {
                        quota: Quota::Reads,
                        source,
                    })
                }
            }
        }
        self.hold(owner, Held::Refused { window_end }, now_secs);
        Err(exceeded())
    }

    /// Spends a read this instance holds for the current minute: Some(true) when it held one,
    /// Some(false) when the minute refused the owner, None when the store must be asked.
    fn spend(&self, owner: &Owner, now_secs: i64) -> Option<bool> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let entry = held.get_mut(owner).filter(|h| h.window_end() > now_secs)?;
        match entry {
            Held::Left { reads, .. } if *reads > 0 => {
                *reads -= 1;
                Some(true)
            }
            Held::Left { .. } => None,
            Held::Refused { .. } => Some(false),
        }
    }

    fn can_hold(&self, owner: &Owner) -> bool {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.len() < OWNERS_HELD || held.contains_key(owner)
    }

    fn hold(&self, owner: &Owner, what: Held, now_secs: i64) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.retain(|_, h| h.window_end() > now_secs);
        if held.len() < OWNERS_HELD || held.contains_key(owner) {
            held.insert(owner.clone(), what);
        }
    }
}

/// A wait slot held by one long wait.
#[derive(Debug)]
pub struct WaitLease(WaitSlot);

/// Claims one of the owner's wait slots for `wait`; None when the quota is off or there is
/// no wait. The slots are tried in turn; when all are held, the error says when the first
/// lease runs out.
pub async fn claim_wait<Q: QuotaStore>(
    store: &Q,
    limits: &QuotaLimits,
    owner: &Owner,
    wait: Duration,
    now: DateTime<Utc>,
) -> Result<Option<WaitLease>, QuotaError> {
    if limits.waits_max == 0 || wait.is_zero() {
        return Ok(None);
    }
    let now_secs = now.timestamp();
    let until = now_secs + wait.as_secs() as i64 + 1 + LEASE_MARGIN_SECS;
    let lease = uuid::Uuid::new_v4().simple().to_string();
    let mut frees_at: Option<i64> = None;
    for slot in 0..limits.waits_max {
        let claim = WaitSlot::new(owner, slot, &lease);
        match store.claim(&claim, until, now_secs).await {
            Ok(Applied::Written { .. }) => return Ok(Some(WaitLease(claim))),
            Ok(Applied::Refused(stored)) => {
                let held_until = lease_until(stored.as_ref()).unwrap_or(until);
                frees_at = Some(frees_at.map_or(held_until, |f| f.min(held_until)));
            }
            Err(source) => {
                return Err(QuotaError::Store {
                    quota: Quota::Waits,
                    source,
                })
            }
        }
    }
    Err(QuotaError::Exceeded {
        quota: Quota::Waits,
        limit: limits.waits_max,
        retry_after_secs: (frees_at.unwrap_or(until) - now_secs).max(1) as u64,
    })
}

/// Frees a wait's slot. A failure leaves it held until its lease runs out: logged.
pub async fn release_wait<Q: QuotaStore>(store: &Q, lease: Option<WaitLease>) {
    let Some(WaitLease(slot)) = lease else { return };
    if let Err(e) = store.free(&slot).await {
        tracing::warn!(error = %e, "a wait slot was not freed; it frees when its lease runs out");
    }
}

/// A counted call that failed: over its quota (or its count not written), so its work was not
/// done; or in its work.
#[derive(Debug, thiserror::Error)]
pub enum CountedError<E> {
    #[error(transparent)]
    Quota(#[from] QuotaError),
    #[error(transparent)]
    Work(E),
}

/// A count taken for work about to start, settled by what the work did: kept when it started
/// something, given back when it turned out to start nothing. One settles every count, so no
/// use case gives back by hand.
#[must_use = "settle the count by what the work did"]
pub struct CountGuard<'s, Q: QuotaStore> {
    store: &'s Q,
    taken: Option<Taken>,
}

impl<'s, Q: QuotaStore> CountGuard<'s, Q> {
    pub fn new(store: &'s Q, taken: Option<Taken>) -> Self {
        Self { store, taken }
    }

    /// Keeps the count when the work started something; gives it back otherwise.
    pub async fn settle(self, started_something: bool) {
        if !started_something {
            give_back(self.store, self.taken).await;
        }
    }
}

/// `work` within one of the owner's wait slots for `wait`: claimed before it (with none free
/// the work is not done) and freed after, whatever it returns. No wait, or the quota off,
/// claims nothing.
pub async fn within_wait<Q, T, E, Fut>(
    store: &Q,
    limits: &QuotaLimits,
    owner: &Owner,
    wait: Duration,
    now: DateTime<Utc>,
    work: Fut,
) -> Result<T, CountedError<E>>
where
    Q: QuotaStore,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let lease = claim_wait(store, limits, owner, wait, now).await?;
    let done = work.await;
    release_wait(store, lease).await;
    done.map_err(CountedError::Work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::caller::Principal;
    use fakes::MemoryJobs;

    fn owner(name: &str) -> Owner {
        Principal::Bearer { name: name.into() }.caller().owner
    }

    /// Whether a new job of `owner`'s, unkeyed, is counted (false: over the quota).
    async fn counts(store: &MemoryJobs, owner: &Owner, now: DateTime<Utc>) -> bool {
        take_submit(store, &limits(), &submission(owner, None), now)
            .await
            .is_ok()
    }

    fn limits() -> QuotaLimits {
        QuotaLimits {
            submits_per_minute: 2,
            runs_per_hour: 1,
            waits_max: 2,
            reads_per_minute: 3,
        }
    }

    fn submission(owner: &Owner, key: Option<&str>) -> Submission {
        Submission::new(owner, "e", "b", b"{}".to_vec(), key, 300, 3600)
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    #[tokio::test]
    async fn submits_count_per_owner_per_minute_and_say_when_the_window_frees() {
        let store = MemoryJobs::default();
        let (alice, bob) = (owner("alice"), owner("bob"));
        let now = at(1_800_000_010);
        for _ in 0..2 {
            assert!(counts(&store, &alice, now).await);
        }
        let Err(QuotaError::Exceeded {
            quota,
            limit,
            retry_after_secs,
        }) = take_submit(&store, &limits(), &submission(&alice, None), now).await
        else {
            panic!("the third submit of the minute is refused");
        };
        assert_eq!((quota, limit, retry_after_secs), (Quota::Submits, 2, 50));
        // Another caller is not affected; the next minute starts again.
        assert!(counts(&store, &bob, now).await);
        let next_minute = at(1_800_000_060);
        assert!(counts(&store, &alice, next_minute).await);
    }

    #[tokio::test]
    async fn a_count_is_taken_unread_and_at_the_limit_only_a_replay_is_answered() {
        let store = MemoryJobs::default();
        let alice = owner("alice");
        let now = at(1_800_000_000);
        let keyed = submission(&alice, Some("k"));
        let count = take_submit(&store, &limits(), &keyed, now).await.unwrap();
        assert!(count.taken.is_some(), "a new key's job starts work");
        assert!(count.stored.is_none(), "nothing read");
        // Its job is stored, and the minute's other count is taken: at the limit.
        let policy = domain::job::JobPolicy::default();
        store
            .write(&domain::job::reserve(&keyed, &policy, now))
            .await
            .unwrap();
        let second = take_submit(&store, &limits(), &submission(&alice, None), now)
            .await
            .unwrap()
            .taken;
        assert!(!counts(&store, &alice, now).await);
        // The same key again is answered, counting nothing, from what the refusal read.
        let replay = take_submit(&store, &limits(), &keyed, now).await.unwrap();
        assert!(replay.taken.is_none());
        assert_eq!(
            replay.stored.map(|job| job.inference_id),
            Some(keyed.inference_id.clone()),
            "what the refusal read goes to the submit"
        );
        let new_key = take_submit(&store, &limits(), &submission(&alice, Some("n")), now).await;
        assert!(matches!(new_key, Err(QuotaError::Exceeded { .. })));
        // A count given back (a replay found by the submit) frees its place.
        give_back(&store, second).await;
        assert!(counts(&store, &alice, now).await);
    }

    #[tokio::test]
    async fn a_quota_of_zero_is_off_and_a_failed_count_refuses_the_call() {
        let store = MemoryJobs::default();
        let off = QuotaLimits {
            submits_per_minute: 0,
            runs_per_hour: 0,
            waits_max: 0,
            reads_per_minute: 0,
        };
        let alice = owner("alice");
        let now = at(1_800_000_000);
        for _ in 0..5 {
            assert!(take_run(&store, &off, &alice, now).await.unwrap().is_none());
        }
        assert_eq!(store.calls().1, 0, "nothing written");
        store.fail_writes();
        let err = take_run(&store, &limits(), &alice, now).await.unwrap_err();
        assert!(
            matches!(
                err,
                QuotaError::Store {
                    quota: Quota::Runs,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn reads_count_per_owner_per_minute_and_a_refusal_writes_once() {
        let store = MemoryJobs::default();
        let reads = ReadQuota::new(3);
        let (alice, bob) = (owner("alice"), owner("bob"));
        let now = at(1_800_000_015);
        for _ in 0..3 {
            assert!(reads.take(&store, &alice, now).await.is_ok());
        }
        assert_eq!(store.calls(), (0, 3), "one write a read, nothing read");
        for later in [now, at(1_800_000_050)] {
            let Err(QuotaError::Exceeded {
                quota,
                limit,
                retry_after_secs,
            }) = reads.take(&store, &alice, later).await
            else {
                panic!("the fourth read of the minute is refused");
            };
            let left = (1_800_000_060 - later.timestamp()) as u64;
            assert_eq!((quota, limit, retry_after_secs), (Quota::Reads, 3, left));
        }
        assert_eq!(
            store.calls(),
            (0, 4),
            "the refusal is remembered: one write refused"
        );
        // Another caller is not affected, nor are alice's submits; the next minute starts again.
        assert!(reads.take(&store, &bob, now).await.is_ok());
        assert!(counts(&store, &alice, now).await);
        let next_minute = at(1_800_000_060);
        assert!(reads.take(&store, &alice, next_minute).await.is_ok());
    }

    #[tokio::test]
    async fn reads_are_taken_in_batches_and_never_past_the_limit_over_instances() {
        let store = MemoryJobs::default();
        let alice = owner("alice");
        let now = at(1_800_000_000);
        let one = ReadQuota::new(600);
        assert_eq!(
            (
                one.batch(),
                ReadQuota::new(59).batch(),
                ReadQuota::new(100_000).batch()
            ),
            (10, 1, 10)
        );
        for _ in 0..25 {
            assert!(one.take(&store, &alice, now).await.is_ok());
        }
        assert_eq!(store.calls(), (0, 3), "three batches of ten for 25 reads");
        // Two more instances take for the same owner: together no more than the limit is read,
        // and at most what each holds unspent (9) is lost.
        let (two, three) = (ReadQuota::new(600), ReadQuota::new(600));
        let mut served = 25;
        for i in 0..2_000 {
            let instance = [&one, &two, &three][i % 3];
            if instance.take(&store, &alice, now).await.is_ok() {
                served += 1;
            }
        }
        assert!(
            (600 - 2 * 9..=600).contains(&served),
            "{served} reads served"
        );
        // The next minute starts again.
        assert!(one.take(&store, &alice, at(1_800_000_060)).await.is_ok());
    }

    #[tokio::test]
    async fn a_read_quota_of_zero_is_off_and_a_failed_count_refuses_the_read() {
        let store = MemoryJobs::default();
        let alice = owner("alice");
        let now = at(1_800_000_000);
        let off = ReadQuota::new(0);
        for _ in 0..1000 {
            assert!(off.take(&store, &alice, now).await.is_ok());
        }
        assert_eq!(store.calls(), (0, 0), "nothing written");
        store.fail_writes();
        let err = ReadQuota::new(600)
            .take(&store, &alice, now)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                QuotaError::Store {
                    quota: Quota::Reads,
                    ..
                }
            ),
            "{err}"
        );
        assert!(off.take(&store, &alice, now).await.is_ok());
    }

    #[tokio::test]
    async fn waits_hold_slots_until_released_or_their_leases_run_out() {
        let store = MemoryJobs::default();
        let (alice, bob) = (owner("alice"), owner("bob"));
        let now = at(1_800_000_000);
        let wait = Duration::from_secs(60);
        let a = claim_wait(&store, &limits(), &alice, wait, now)
            .await
            .unwrap();
        let b = claim_wait(&store, &limits(), &alice, wait, now)
            .await
            .unwrap();
        assert!(a.is_some() && b.is_some());
        let Err(QuotaError::Exceeded {
            quota: Quota::Waits,
            retry_after_secs,
            ..
        }) = claim_wait(&store, &limits(), &alice, wait, now).await
        else {
            panic!("a third wait at once is refused");
        };
        assert_eq!(retry_after_secs, 60 + 1 + LEASE_MARGIN_SECS as u64);
        assert!(claim_wait(&store, &limits(), &bob, wait, now)
            .await
            .unwrap()
            .is_some());
        assert!(
            claim_wait(&store, &limits(), &alice, Duration::ZERO, now)
                .await
                .unwrap()
                .is_none(),
            "no wait, no slot"
        );
        release_wait(&store, a).await;
        assert!(claim_wait(&store, &limits(), &alice, wait, now)
            .await
            .unwrap()
            .is_some());
        // A wait whose function died never frees its slot: its lease runs out instead.
        let later = at(1_800_000_000 + 60 + 1 + LEASE_MARGIN_SECS);
        assert!(claim_wait(&store, &limits(), &alice, wait, later)
            .await
            .unwrap()
            .is_some());
        drop(b);
    }
}
