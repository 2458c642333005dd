//! Per-owner quotas, as conditional writes on the results table: one caller of a shared
//! deployment cannot spend for all. Counted are the calls that start work, and the reads that
//! cost the account's SageMaker and DynamoDB calls.
//!
//! - Submits per minute, runs per hour and reads per minute: a counter per owner, quota and
//!   fixed window (`quota#<owner>#submits#<window start>`, `…#runs#…`, `…#reads#…`), taken by
//!   one atomic conditional increment that holds only below the limit; it expires with its
//!   window (`ttl`).
//! - Concurrent long waits: `limit` lease slots per owner (`quota#<owner>#waits#<slot>`). A
//!   wait claims a free slot (none, or one whose lease has run out) until it ends, and frees it
//!   after. A wait whose function died frees its slot when its lease runs out, so nothing leaks
//!   for longer than one wait.
//!
//! These items share the results table's key (`inference_id`) but never read as jobs: every
//! key starts with [`KEY_PREFIX`], which no job id has.

use crate::caller::Owner;
use crate::item::{Attr, Change, Guard, Item, Write, WriteOp};

/// Every quota item's key starts with this; job ids never do.
pub const KEY_PREFIX: &str = "quota#";

const KEY: &str = "inference_id";
const COUNT: &str = "quota_count";
const LEASE: &str = "lease";
const LEASE_UNTIL: &str = "lease_until";
const TTL: &str = "ttl";
/// Quota items outlive their window or lease by this much before DynamoDB deletes them.
const TTL_MARGIN_SECS: i64 = 3600;

/// Whether an id names a quota item (and so no job).
pub fn is_quota_key(id: &str) -> bool {
    id.starts_with(KEY_PREFIX)
}

/// The limits per owner; `0` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaLimits {
    pub submits_per_minute: u32,
    pub runs_per_hour: u32,
    pub waits_max: u32,
    pub reads_per_minute: u32,
}

impl Default for QuotaLimits {
    fn default() -> Self {
        Self {
            submits_per_minute: 60,
            runs_per_hour: 10,
            waits_max: 4,
            reads_per_minute: 600,
        }
    }
}

/// What a quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// Jobs submitted, per minute.
    Submits,
    /// Training runs started, per hour.
    Runs,
    /// Long waits at once.
    Waits,
    /// Reads per minute: status checks, provenance walks, resource reads, `tasks/get`.
    Reads,
}

impl Quota {
    fn word(self) -> &'static str {
        match self {
            Quota::Submits => "submits",
            Quota::Runs => "runs",
            Quota::Waits => "waits",
            Quota::Reads => "reads",
        }
    }
}

fn key(owner: &Owner, quota: Quota, part: i64) -> Item {
    let id = format!("{KEY_PREFIX}{owner}#{}#{part}", quota.word());
    Item::from([(KEY.to_owned(), Attr::S(id))])
}

/// One owner's counter for one fixed window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCounter {
    pub quota: Quota,
    pub limit: u32,
    /// Epoch seconds at which the window ends and the count starts again.
    pub window_end: i64,
    key: Item,
}

impl WindowCounter {
    /// The counter of the window `now_secs` falls in; None when the limit is 0 (off).
    pub fn of(
        owner: &Owner,
        quota: Quota,
        limit: u32,
        window_secs: i64,
        now_secs: i64,
    ) -> Option<Self> {
        if limit == 0 {
            return None;
        }
        let start = now_secs - now_secs.rem_euclid(window_secs);
        Some(Self {
            quota,
            limit,
            window_end: start + window_secs,
            key: key(owner, quota, start),
        })
    }

    /// One more, only while fewer than the limit were counted.
    pub fn take(&self) -> Write {
        self.take_many(1)
    }

    /// `n` more at once (at least 1), only while the count stays within the limit.
    pub fn take_many(&self, n: u32) -> Write {
        let n = n.clamp(1, self.limit.max(1));
        Write {
            key: self.key.clone(),
            op: WriteOp::Update(vec![
                Change::Add(COUNT, i64::from(n)),
                Change::SetIfAbsent(TTL, Attr::N(self.window_end + TTL_MARGIN_SECS)),
            ]),
            guard: Guard::Any(vec![
                Guard::Absent(COUNT),
                Guard::AtMost(COUNT, i64::from(self.limit) - i64::from(n)),
            ]),
        }
    }

    /// One fewer: a call counted that turned out to start nothing (a replay).
    pub fn give_back(&self) -> Write {
        Write {
            key: self.key.clone(),
            op: WriteOp::Update(vec![Change::Add(COUNT, -1)]),
            guard: Guard::Not(Box::new(Guard::Any(vec![
                Guard::Absent(COUNT),
                Guard::AtMost(COUNT, 0),
            ]))),
        }
    }

    /// Seconds until the window ends (at least 1).
    pub fn retry_after(&self, now_secs: i64) -> u64 {
        (self.window_end - now_secs).max(1) as u64
    }
}

/// One of an owner's wait slots, and the lease a wait holds it by.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSlot {
    key: Item,
    pub lease: String,
}

impl WaitSlot {
    pub fn new(owner: &Owner, slot: u32, lease: &str) -> Self {
        Self {
            key: key(owner, Quota::Waits, i64::from(slot)),
            lease: lease.to_owned(),
        }
    }

    /// Holds the slot until `until` (epoch seconds), when it is free at `now_secs`: never
    /// leased, freed, or its lease run out.
    pub fn claim(&self, until: i64, now_secs: i64) -> Write {
        Write {
            key: self.key.clone(),
            op: WriteOp::Update(vec![
                Change::Set(LEASE, Attr::s(&self.lease)),
                Change::Set(LEASE_UNTIL, Attr::N(until)),
                Change::Set(TTL, Attr::N(until + TTL_MARGIN_SECS)),
            ]),
            guard: Guard::Any(vec![
                Guard::Absent(LEASE_UNTIL),
                Guard::AtMost(LEASE_UNTIL, now_secs),
            ]),
        }
    }

    /// Frees the slot, if this wait still holds it.
    pub fn free(&self) -> Write {
        Write {
            key: self.key.clone(),
            op: WriteOp::Update(vec![Change::Set(LEASE_UNTIL, Attr::N(0))]),
            guard: Guard::Eq(LEASE, Attr::s(&self.lease)),
        }
    }
}

/// When a slot refused to a claim frees at the latest: its lease's end, from the stored item.
pub fn lease_until(stored: Option<&Item>) -> Option<i64> {
    stored.and_then(|i| i.get(LEASE_UNTIL)).and_then(Attr::as_n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caller::Principal;

    fn owner() -> Owner {
        Principal::Local.caller().owner
    }

    #[test]
    fn a_window_counts_up_to_its_limit_and_ends_on_its_boundary() {
        let c = WindowCounter::of(&owner(), Quota::Submits, 2, 60, 1_000_030).unwrap();
        assert_eq!(c.window_end, 1_000_080);
        assert_eq!(c.retry_after(1_000_030), 50);
        assert_eq!(c.retry_after(1_000_080), 1);
        let once = c.take().apply_to(None).unwrap();
        assert_eq!(once[COUNT], Attr::N(1));
        assert_eq!(once[TTL], Attr::N(1_000_080 + TTL_MARGIN_SECS));
        let twice = c.take().apply_to(Some(&once)).unwrap();
        assert_eq!(twice[COUNT], Attr::N(2));
        assert_eq!(c.take().apply_to(Some(&twice)), None, "the limit holds");
        let back = c.give_back().apply_to(Some(&twice)).unwrap();
        assert_eq!(back[COUNT], Attr::N(1));
        assert_eq!(c.give_back().apply_to(None), None, "never below zero");
        let next = WindowCounter::of(&owner(), Quota::Submits, 2, 60, 1_000_080).unwrap();
        assert_ne!(next.key, c.key, "a new window is a new counter");
        assert!(WindowCounter::of(&owner(), Quota::Runs, 0, 3600, 5).is_none());
    }

    #[test]
    fn keys_are_per_owner_and_quota_and_never_job_ids() {
        let other = Principal::Bearer { name: "b".into() }.caller().owner;
        let a = WindowCounter::of(&owner(), Quota::Submits, 1, 60, 0).unwrap();
        let b = WindowCounter::of(&other, Quota::Submits, 1, 60, 0).unwrap();
        let r = WindowCounter::of(&owner(), Quota::Runs, 1, 60, 0).unwrap();
        let reads = WindowCounter::of(&owner(), Quota::Reads, 1, 60, 0).unwrap();
        assert_ne!(a.key, b.key);
        assert_ne!(a.key, r.key);
        assert_ne!(a.key, reads.key, "reads never share the submits' minute");
        let id = a.key[KEY].as_s().unwrap();
        assert!(is_quota_key(id) && id.contains(owner().as_str()), "{id}");
        assert!(!is_quota_key("2f6b7d4e-0000-4000-8000-000000000000"));
    }

    #[test]
    fn a_wait_slot_is_held_until_freed_or_its_lease_runs_out() {
        let mine = WaitSlot::new(&owner(), 0, "lease-a");
        let held = mine.claim(1_000, 900).apply_to(None).unwrap();
        assert_eq!(lease_until(Some(&held)), Some(1_000));
        let theirs = WaitSlot::new(&owner(), 0, "lease-b");
        assert_eq!(theirs.claim(1_100, 950).apply_to(Some(&held)), None);
        assert!(
            theirs.claim(2_000, 1_000).apply_to(Some(&held)).is_some(),
            "run out"
        );
        assert_eq!(theirs.free().apply_to(Some(&held)), None, "not its lease");
        let freed = mine.free().apply_to(Some(&held)).unwrap();
        assert!(theirs.claim(1_100, 950).apply_to(Some(&freed)).is_some());
    }
}
