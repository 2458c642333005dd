//! MCP Events webhooks in memory: the subscriptions table, the delivery queue, and receivers
//! whose answers a test scripts.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use domain::caller::Owner;
use domain::delivery::{Answer, Delivery};
use domain::item::{Applied, Item, Write};
use domain::subscription::{attr, Subscription};
use ports::*;

use crate::table::{apply, key_of};

#[derive(Default)]
pub struct MemorySubscriptions {
    items: Mutex<HashMap<(String, String), Item>>,
}

impl MemorySubscriptions {
    /// Every stored subscription (a test's look at the table).
    pub fn all(&self) -> Vec<Subscription> {
        let items = self.items.lock().unwrap();
        let in_order: BTreeMap<_, _> = items.iter().collect();
        in_order
            .into_values()
            .filter_map(Subscription::from_item)
            .collect()
    }
}

impl SubscriptionStore for MemorySubscriptions {
    async fn write(&self, write: &Write) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        let key = (key_of(write, attr::OWNER), key_of(write, attr::ID));
        Ok(apply(&self.items, key, write))
    }

    async fn get(&self, owner: &Owner, id: &str) -> Result<Option<Subscription>, StoreError> {
        tokio::task::yield_now().await;
        let items = self.items.lock().unwrap();
        let key = (owner.as_str().to_owned(), id.to_owned());
        Ok(items.get(&key).and_then(Subscription::from_item))
    }

    async fn of_owner(&self, owner: &Owner) -> Result<Vec<Subscription>, StoreError> {
        tokio::task::yield_now().await;
        let items = self.items.lock().unwrap();
        let in_order: BTreeMap<_, _> = items
            .iter()
            .filter(|((o, _), _)| o == owner.as_str())
            .collect();
        Ok(in_order
            .into_values()
            .take(MAX_SUBSCRIPTION_ITEMS)
            .filter_map(Subscription::from_item)
            .collect())
    }

    async fn delete(&self, owner: &Owner, id: &str) -> Result<bool, StoreError> {
        tokio::task::yield_now().await;
        let key = (owner.as_str().to_owned(), id.to_owned());
        Ok(self.items.lock().unwrap().remove(&key).is_some())
    }
}

/// The delivery queue in memory: what was queued (a repeat of one held is dropped, as SQS's
/// deduplication does), and each put-back's wait.
#[derive(Default)]
pub struct MemoryDeliveryQueue {
    queued: Mutex<Vec<Delivery>>,
    waits: Mutex<Vec<(String, Duration)>>,
    /// Every enqueue fails (SQS unreachable).
    unavailable: std::sync::atomic::AtomicBool,
}

impl MemoryDeliveryQueue {
    pub fn queued(&self) -> Vec<Delivery> {
        self.queued.lock().unwrap().clone()
    }

    /// Takes what was queued, leaving it empty.
    pub fn take(&self) -> Vec<Delivery> {
        std::mem::take(&mut *self.queued.lock().unwrap())
    }

    pub fn waits(&self) -> Vec<(String, Duration)> {
        self.waits.lock().unwrap().clone()
    }

    /// From now on, every enqueue fails.
    pub fn fail_enqueues(&self) {
        self.unavailable
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl DeliveryQueue for MemoryDeliveryQueue {
    async fn enqueue(&self, deliveries: &[Delivery]) -> Result<(), DeliveryQueueError> {
        tokio::task::yield_now().await;
        if self.unavailable.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(DeliveryQueueError {
                operation: "SendMessageBatch",
                queue_url: "memory".into(),
                failure: AwsFailure {
                    code: Some("ServiceUnavailable".into()),
                    message: "the queue is unavailable".into(),
                    retryable: true,
                    ambiguous: false,
                },
            });
        }
        let mut queued = self.queued.lock().unwrap();
        for delivery in deliveries {
            if !queued.iter().any(|q| q.dedup_id() == delivery.dedup_id()) {
                queued.push(delivery.clone());
            }
        }
        Ok(())
    }

    async fn retry_in(
        &self,
        receipt_handle: &str,
        after: Duration,
    ) -> Result<(), DeliveryQueueError> {
        tokio::task::yield_now().await;
        self.waits
            .lock()
            .unwrap()
            .push((receipt_handle.to_owned(), after));
        Ok(())
    }
}

/// Receivers whose answers a test scripts: each POST takes the next scripted reply (2xx with
/// the challenge echoed when a verification is posted and nothing is scripted), and every
/// POST is kept for the test to check.
#[derive(Default)]
pub struct FakeWebhooks {
    script: Mutex<VecDeque<Answer>>,
    posts: Mutex<Vec<WebhookPost>>,
    /// Answers 2xx to a verification without echoing it (a receiver that is not one).
    no_echo: std::sync::atomic::AtomicBool,
}

impl FakeWebhooks {
    /// The next POSTs are answered these, in order.
    pub fn answer(&self, answers: impl IntoIterator<Item = Answer>) {
        self.script.lock().unwrap().extend(answers);
    }

    /// From now on, a verification is answered 2xx without its echo.
    pub fn never_echo(&self) {
        self.no_echo
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn posts(&self) -> Vec<WebhookPost> {
        self.posts.lock().unwrap().clone()
    }
}

impl Webhooks for FakeWebhooks {
    async fn post(&self, post: &WebhookPost) -> WebhookReply {
        tokio::task::yield_now().await;
        self.posts.lock().unwrap().push(post.clone());
        let answer = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Answer::Status(200));
        // A receiver that answers 2xx echoes a challenge, as a genuine one does.
        let body = match (
            answer,
            serde_json::from_slice::<serde_json::Value>(&post.body),
        ) {
            (Answer::Status(200..=299), Ok(body))
                if body["type"] == "verification"
                    && !self.no_echo.load(std::sync::atomic::Ordering::Relaxed) =>
            {
                serde_json::json!({"challenge": body["challenge"]})
                    .to_string()
                    .into_bytes()
            }
            _ => Vec::new(),
        };
        WebhookReply { answer, body }
    }
}
