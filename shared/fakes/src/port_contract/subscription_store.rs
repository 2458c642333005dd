//! The subscriptions table: a new subscription is stored only where none is, a refresh only
//! over the one it refreshes, an owner reads only its own, a delivery's status is recorded
//! only on the subscription it read, and a deleted one is gone.

use serde_json::json;

use domain::caller::{Owner, Principal};
use domain::delivery::{DeliveryStatus, Failure};
use domain::events::{EventName, SubscriptionKey};
use domain::subscription::{Subscription, DEFAULT_TTL};
use domain::webhook::WebhookSecret;
use ports::SubscriptionStore;

use super::{now, refused, written};

/// An owner no other behaviour subscribes for.
fn owner() -> Owner {
    let name = format!("subs-{}", uuid::Uuid::new_v4().simple());
    Principal::Bearer { name }.caller().owner
}

fn subscription(owner: &Owner, endpoint: &str) -> Subscription {
    let key = SubscriptionKey {
        owner: owner.clone(),
        url: "https://hooks.example.com/in".into(),
        name: EventName::JobEnded,
        arguments: json!({"endpoint": endpoint}),
    };
    let secret = WebhookSecret::from_bytes(vec![7; 32]).unwrap();
    let mut s = Subscription::new(key, secret, now(), DEFAULT_TTL);
    s.verified = true;
    s
}

pub async fn a_subscription_is_stored_once_and_read_back_whole<S: SubscriptionStore>(store: &S) {
    let owner = owner();
    let s = subscription(&owner, "a");
    written(store.write(&s.put(None)).await.unwrap(), "a new one");
    refused(
        &store.write(&s.put(None)).await.unwrap(),
        "the same key as new again",
    );
    assert_eq!(store.get(&owner, &s.id()).await.unwrap(), Some(s.clone()));
    let secret = WebhookSecret::from_bytes(vec![8; 40]).unwrap();
    let refreshed = s.refreshed(secret, now(), DEFAULT_TTL);
    written(
        store.write(&refreshed.put(Some(&s))).await.unwrap(),
        "a refresh of it",
    );
    let stored = store.get(&owner, &s.id()).await.unwrap().unwrap();
    assert_eq!(
        stored, refreshed,
        "the new secret, the old one in its grace"
    );
    assert!(stored.previous_secret.is_some());
    assert_eq!(
        store.get(&owner, "sub_0000000000000000").await.unwrap(),
        None
    );
}

pub async fn an_owner_reads_its_own_subscriptions_only<S: SubscriptionStore>(store: &S) {
    let (mine, theirs) = (owner(), owner());
    for endpoint in ["a", "b"] {
        written(
            store
                .write(&subscription(&mine, endpoint).put(None))
                .await
                .unwrap(),
            "mine",
        );
    }
    written(
        store
            .write(&subscription(&theirs, "a").put(None))
            .await
            .unwrap(),
        "theirs",
    );
    let read = store.of_owner(&mine).await.unwrap();
    assert_eq!(read.len(), 2);
    assert!(read.iter().all(|s| s.key.owner == mine));
    assert!(store
        .get(&theirs, &subscription(&mine, "a").id())
        .await
        .unwrap()
        .is_none());
}

pub async fn a_status_is_recorded_only_on_the_subscription_it_was_read_from<
    S: SubscriptionStore,
>(
    store: &S,
) {
    let owner = owner();
    let s = subscription(&owner, "a");
    written(store.write(&s.put(None)).await.unwrap(), "a new one");
    let failing = DeliveryStatus {
        failures: 3,
        failed_since: Some(now()),
        last_error: Some(Failure::Http5xx),
        ..DeliveryStatus::default()
    };
    written(
        store.write(&s.record(&failing)).await.unwrap(),
        "its status",
    );
    let stored = store.get(&owner, &s.id()).await.unwrap().unwrap();
    assert_eq!(stored.status.failures, 3);
    assert_eq!(stored.status.last_error, Some(Failure::Http5xx));
    assert!(store.delete(&owner, &s.id()).await.unwrap(), "deleted");
    assert!(
        !store.delete(&owner, &s.id()).await.unwrap(),
        "gone already"
    );
    refused(
        &store.write(&s.record(&failing)).await.unwrap(),
        "a status after it ended",
    );
    assert_eq!(
        store.get(&owner, &s.id()).await.unwrap(),
        None,
        "not made again"
    );
}

#[macro_export]
macro_rules! subscription_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            subscription_store,
            $make,
            [
                a_subscription_is_stored_once_and_read_back_whole,
                an_owner_reads_its_own_subscriptions_only,
                a_status_is_recorded_only_on_the_subscription_it_was_read_from,
            ]
        );
    };
}
