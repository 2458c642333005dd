//! event-delivery: sends MCP Events webhook deliveries, signed. Two event sources feed it:
//! - the events table's stream: each new event that names webhook subscriptions, tried at
//!   once for each of them ([`Handler::first_tries`]); a try that fails, and the events of a
//!   subscription that is failing, go to the retry queue;
//! - the retry queue (SQS FIFO, one ordered group per subscription): each delivery tried when
//!   it is due ([`Handler::retries`]); one that fails again is put back with its backoff and
//!   reported (a partial batch failure), and the rest of its subscription's group in the batch
//!   is handed back unsent, so a subscription's events arrive in order.
//!
//! Only translation lives here; the rules are in `usecases::events`.

pub mod config;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{info_span, Instrument, Span};

use domain::delivery::Delivery;
use domain::events::Event;
use entry::{sqs_batch, stream_batch};
use ports::{DeliveryQueue, SubscriptionStore, Webhooks};
use usecases::events::{deliver, Attempt, Delivered, DeliverySettings};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("event is not a batch of records: no Records array")]
    NotABatch,
}

impl From<HandlerError> for lambda_runtime::Diagnostic {
    fn from(e: HandlerError) -> Self {
        lambda_runtime::Diagnostic {
            error_type: "NotABatch".to_owned(),
            error_message: e.to_string(),
        }
    }
}

/// How long a stream batch spends on first tries before it queues the rest untried: a batch
/// of 10 events, each for up to 20 subscriptions whose receivers take their whole timeout,
/// would otherwise outlast the function's 60 seconds, and be handed again whole.
pub const FIRST_TRIES_BUDGET: Duration = Duration::from_secs(30);

pub struct Handler<S, W, Q> {
    pub subscriptions: S,
    pub webhooks: W,
    /// The retry queue: where a failed first try waits, and where a failed retry is put back
    /// with its backoff.
    pub queue: Q,
    pub settings: DeliverySettings,
    /// [`FIRST_TRIES_BUDGET`], but in tests.
    pub first_tries_budget: Duration,
    pub clock: domain::time::Clock,
}

/// What became of one delivery's try: done with, or to be tried again from the queue.
enum Outcome {
    Done,
    /// Not sent: its subscription's earlier deliveries wait in the queue.
    Behind,
    /// After this long.
    Again(Duration),
}

impl<S: SubscriptionStore, W: Webhooks, Q: DeliveryQueue> Handler<S, W, Q> {
    /// One batch, from either source.
    pub async fn handle(&self, event: Value) -> Result<Value, HandlerError> {
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .ok_or(HandlerError::NotABatch)?;
        let from_stream = records
            .first()
            .and_then(|r| r.get("eventSource"))
            .and_then(Value::as_str)
            == Some("aws:dynamodb");
        Ok(match from_stream {
            true => self.first_tries(records).await,
            false => self.retries(records).await,
        })
    }

    /// A stream batch: each new event sent to the subscriptions it names. What is not sent
    /// goes to the retry queue; when that fails, the answer names the record to resume from
    /// (Lambda hands it and the rest again: a subscription already sent to may get it twice,
    /// with the same `webhook-id`).
    pub async fn first_tries(&self, records: &[Value]) -> Value {
        let started = Instant::now();
        // The subscriptions whose delivery was queued in this batch: their later ones queue too.
        let mut waiting: HashSet<String> = HashSet::new();
        for (index, raw) in records.iter().enumerate() {
            let record = match stream_batch::record(index, raw) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "stream record skipped");
                    continue;
                }
            };
            // The mapping's filter passes new events only; a change or a removal (the TTL's)
            // is nothing to send.
            if record.event_name != "INSERT" {
                continue;
            }
            let Some(event) = Event::from_item(&record.new_image) else {
                tracing::error!(sequence_number = %record.sequence_number, "stream record is not an event; skipped (events/poll still reads what it can)");
                continue;
            };
            let span = info_span!("event", sequence_number = %record.sequence_number, event_id = %event.id);
            let mut queued = Vec::new();
            for subscription_id in Event::deliver_to(&record.new_image) {
                let delivery = Delivery::of(&event, &event.owner, &subscription_id);
                if waiting.contains(&subscription_id) {
                    queued.push(delivery);
                    continue;
                }
                if started.elapsed() >= self.first_tries_budget {
                    // Out of time for first tries: the retry queue sends it at once, in its
                    // own batches.
                    span.in_scope(|| {
                        tracing::info!(
                            subscription_id,
                            "queued untried: the batch's time for first tries is spent"
                        )
                    });
                    waiting.insert(subscription_id);
                    queued.push(delivery);
                    continue;
                }
                let now = self.clock.now();
                let tried = self
                    .try_one(&delivery, Attempt::First, &span)
                    .instrument(span.clone())
                    .await;
                let due = match tried {
                    Outcome::Done => continue,
                    Outcome::Behind => delivery,
                    Outcome::Again(after) => delivery.due_at(now + after),
                };
                waiting.insert(subscription_id);
                queued.push(due);
            }
            if queued.is_empty() {
                continue;
            }
            if let Err(e) = self.queue.enqueue(&queued).await {
                span.in_scope(|| tracing::error!(error = %e, "deliveries not queued for retry; the stream hands this event again"));
                return stream_batch::response(Some(record.sequence_number));
            }
        }
        stream_batch::response(None)
    }

    /// A batch from the retry queue, in its order. A message that is no delivery is reported
    /// (SQS moves it to the dead-letter queue past maxReceiveCount, for a person to look at).
    pub async fn retries(&self, records: &[Value]) -> Value {
        let mut failed = Vec::new();
        // The subscriptions whose delivery failed in this batch: their later ones are not sent.
        let mut waiting: HashSet<String> = HashSet::new();
        for (index, raw) in records.iter().enumerate() {
            let message = match sqs_batch::message(index, raw) {
                Ok(m) => m,
                Err(id) => {
                    failed.extend(id);
                    continue;
                }
            };
            let sqs_id = message.message_id.clone().unwrap_or_default();
            let receipt = message.receipt_handle.clone().unwrap_or_default();
            let delivery = match Delivery::from_message(message.body.as_deref().unwrap_or_default())
            {
                Ok(d) => d,
                Err(e) => {
                    tracing::error!(sqs_message_id = %sqs_id, error = %e, "delivery message refused");
                    failed.push(sqs_id);
                    continue;
                }
            };
            let span = info_span!(
                "delivery",
                sqs_message_id = %sqs_id,
                subscription_id = %delivery.subscription_id,
                event_id = %delivery.event_id
            );
            let wait = match (
                waiting.contains(&delivery.subscription_id),
                delivery.wait(self.clock.now()),
            ) {
                // Handed back at once: the queue holds it behind the failed one (a FIFO group
                // gives nothing while one of its messages is in flight), so the two come back
                // together, in order, when the failed one's wait is over.
                (true, _) => Some(Duration::ZERO),
                // A failed first try, not due yet: it waits out its backoff.
                (false, Some(wait)) => Some(wait),
                (false, None) => match self
                    .try_one(&delivery, Attempt::Queued, &span)
                    .instrument(span.clone())
                    .await
                {
                    Outcome::Done => None,
                    Outcome::Again(after) => Some(after),
                    // Not given for a queued try: taken as due again at once.
                    Outcome::Behind => Some(Duration::ZERO),
                },
            };
            if let Some(after) = wait {
                self.put_back(&receipt, after).instrument(span).await;
                waiting.insert(delivery.subscription_id.clone());
                failed.push(sqs_id);
            }
        }
        serde_json::to_value(sqs_batch::response(failed)).expect("batch response serializes")
    }

    /// One try of one delivery, logged in `span`.
    async fn try_one(&self, delivery: &Delivery, attempt: Attempt, span: &Span) -> Outcome {
        let now = self.clock.now();
        let delivered = deliver(
            &self.subscriptions,
            &self.webhooks,
            delivery,
            attempt,
            self.settings,
            now,
        )
        .await;
        let subscription_id = delivery.subscription_id.as_str();
        span.in_scope(|| match delivered {
            Ok(Delivered::Sent) => {
                tracing::info!(subscription_id, "delivered");
                Outcome::Done
            }
            Ok(Delivered::Behind) => {
                tracing::info!(subscription_id, "queued behind the subscription's waiting deliveries");
                Outcome::Behind
            }
            Ok(Delivered::Skipped(skip)) => {
                tracing::info!(subscription_id, ?skip, "not sent: the subscription does not take it");
                Outcome::Done
            }
            Ok(Delivered::Dropped(failure)) => {
                tracing::warn!(subscription_id, failure = failure.as_str(), "the receiver refused this event for good");
                Outcome::Done
            }
            Ok(Delivered::Paused(failure)) => {
                tracing::warn!(subscription_id, failure = failure.as_str(), "the subscription failed too long: paused until refreshed");
                Outcome::Done
            }
            Ok(Delivered::Retry { after, failure }) => {
                tracing::info!(subscription_id, failure = failure.as_str(), retry_in_secs = after.as_secs(), "not delivered; retried later");
                Outcome::Again(after)
            }
            Err(e) => {
                tracing::error!(subscription_id, error = %e, "subscription not read or not recorded; retried later");
                Outcome::Again(self.settings.retry_first)
            }
        })
    }

    /// The message waits `after` before SQS hands it out again; when that fails, the queue's
    /// visibility timeout applies.
    async fn put_back(&self, receipt: &str, after: Duration) {
        if let Err(e) = self.queue.retry_in(receipt, after).await {
            tracing::warn!(error = %e, "backoff not set; the queue's visibility timeout applies");
        }
    }
}

#[cfg(test)]
mod tests;
