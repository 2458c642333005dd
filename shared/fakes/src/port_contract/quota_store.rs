//! The callers' quota counters and wait slots: a window's counter never passes its limit and
//! never goes below zero, and a slot is held by one lease at a time until it is freed or its
//! lease runs out.

use domain::caller::{Owner, Principal};
use domain::quota::{Quota, WaitSlot, WindowCounter};
use ports::QuotaStore;

use super::{now, refused, written};

/// An owner no other behaviour counts for, so each starts from an empty window.
fn owner() -> Owner {
    let name = format!("quota-{}", uuid::Uuid::new_v4().simple());
    Principal::Bearer { name }.caller().owner
}

fn counter(owner: &Owner, limit: u32) -> WindowCounter {
    let now_secs = now().timestamp();
    WindowCounter::of(owner, Quota::Submits, limit, 60, now_secs).expect("a limit above zero")
}

pub async fn a_counter_takes_up_to_its_limit_and_no_further<Q: QuotaStore>(store: &Q) {
    let counter = counter(&owner(), 3);
    written(store.take(&counter, 2).await.unwrap(), "two of three");
    refused(
        &store.take(&counter, 2).await.unwrap(),
        "two more would pass three",
    );
    written(store.take(&counter, 1).await.unwrap(), "the third");
    refused(&store.take(&counter, 1).await.unwrap(), "a fourth");
}

pub async fn a_count_given_back_frees_one_and_never_goes_below_zero<Q: QuotaStore>(store: &Q) {
    let counter = counter(&owner(), 1);
    refused(
        &store.give_back(&counter).await.unwrap(),
        "nothing taken yet",
    );
    written(store.take(&counter, 1).await.unwrap(), "the one");
    refused(&store.take(&counter, 1).await.unwrap(), "at the limit");
    written(store.give_back(&counter).await.unwrap(), "given back");
    written(store.take(&counter, 1).await.unwrap(), "taken again");
}

pub async fn a_slot_is_held_by_one_lease_until_freed<Q: QuotaStore>(store: &Q) {
    let owner = owner();
    let now_secs = now().timestamp();
    let (mine, theirs) = (WaitSlot::new(&owner, 0, "a"), WaitSlot::new(&owner, 0, "b"));
    written(
        store.claim(&mine, now_secs + 60, now_secs).await.unwrap(),
        "a free slot",
    );
    refused(
        &store.claim(&theirs, now_secs + 60, now_secs).await.unwrap(),
        "a held slot, to another lease",
    );
    refused(
        &store.free(&theirs).await.unwrap(),
        "freed by a lease that does not hold it",
    );
    written(store.free(&mine).await.unwrap(), "freed by its lease");
    written(
        store.claim(&theirs, now_secs + 60, now_secs).await.unwrap(),
        "the freed slot, to another lease",
    );
}

pub async fn a_slot_whose_lease_ran_out_is_claimed_again<Q: QuotaStore>(store: &Q) {
    let owner = owner();
    let now_secs = now().timestamp();
    let (first, second) = (WaitSlot::new(&owner, 1, "a"), WaitSlot::new(&owner, 1, "b"));
    written(
        store.claim(&first, now_secs + 5, now_secs).await.unwrap(),
        "a free slot",
    );
    written(
        store
            .claim(&second, now_secs + 60, now_secs + 10)
            .await
            .unwrap(),
        "the slot after its lease ran out",
    );
}

#[macro_export]
macro_rules! quota_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            quota_store,
            $make,
            [
                a_counter_takes_up_to_its_limit_and_no_further,
                a_count_given_back_frees_one_and_never_goes_below_zero,
                a_slot_is_held_by_one_lease_until_freed,
                a_slot_whose_lease_ran_out_is_claimed_again,
            ]
        );
    };
}
