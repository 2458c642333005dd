//! event-delivery: takes MCP Events deliveries from their FIFO queue (one ordered group per
//! subscription) and POSTs each, signed, to its subscriber's webhook. A delivery that fails is
//! put back with its backoff and reported (a partial batch failure); the rest of its
//! subscription's group in the batch is handed back unsent and waits behind it, so a
//! subscription's events arrive in order. Only translation lives here; the rules are in `usecases::events`.

pub mod config;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tracing::{info_span, Instrument};

use domain::delivery::Delivery;
use entry::sqs_batch;
use ports::{DeliveryQueue, SubscriptionStore, Webhooks};
use usecases::events::{deliver, Delivered, DeliverySettings};

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error("event is not an SQS batch: no Records array")]
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

pub struct Handler<S, W, Q> {
    pub subscriptions: S,
    pub webhooks: W,
    /// The queue the batch came from: a failed delivery is put back on it with its backoff.
    pub queue: Q,
    pub settings: DeliverySettings,
    pub clock: domain::time::Clock,
}

impl<S: SubscriptionStore, W: Webhooks, Q: DeliveryQueue> Handler<S, W, Q> {
    /// One batch, in the queue's order. A message that is no delivery is reported (SQS moves it
    /// to the dead-letter queue past maxReceiveCount, for a person to look at).
    pub async fn handle(&self, event: Value) -> Result<Value, HandlerError> {
        let records = event
            .get("Records")
            .and_then(Value::as_array)
            .ok_or(HandlerError::NotABatch)?;
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
            if waiting.contains(&delivery.subscription_id) {
                // Handed back at once: the queue holds it behind the failed one (a FIFO group
                // gives nothing while one of its messages is in flight), so the two come back
                // together, in order, when the failed one's wait is over.
                self.put_back(&receipt, Duration::ZERO)
                    .instrument(span.clone())
                    .await;
                failed.push(sqs_id);
                continue;
            }
            let now = self.clock.now();
            let delivered = deliver(
                &self.subscriptions,
                &self.webhooks,
                &delivery,
                self.settings,
                now,
            )
            .instrument(span.clone())
            .await;
            let retry = span.in_scope(|| match delivered {
                Ok(Delivered::Sent) => {
                    tracing::info!("delivered");
                    None
                }
                Ok(Delivered::Skipped(skip)) => {
                    tracing::info!(?skip, "not sent: the subscription does not take it");
                    None
                }
                Ok(Delivered::Dropped(failure)) => {
                    tracing::warn!(failure = failure.as_str(), "the receiver refused this event for good");
                    None
                }
                Ok(Delivered::Paused(failure)) => {
                    tracing::warn!(failure = failure.as_str(), "the subscription failed too long: paused until refreshed");
                    None
                }
                Ok(Delivered::Retry { after, failure }) => {
                    tracing::info!(failure = failure.as_str(), retry_in_secs = after.as_secs(), "not delivered; retried later");
                    Some(after)
                }
                Err(e) => {
                    tracing::error!(error = %e, "subscription not read or not recorded; retried later");
                    Some(self.settings.retry_first)
                }
            });
            if let Some(after) = retry {
                self.put_back(&receipt, after).instrument(span).await;
                waiting.insert(delivery.subscription_id.clone());
                failed.push(sqs_id);
            }
        }
        Ok(serde_json::to_value(sqs_batch::response(failed)).expect("batch response serializes"))
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
