//! SQS: the completion queue (standard or FIFO, by the URL's `.fifo`), and the MCP Events
//! delivery queue.

use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};

use crate::aws::{classify, SdkClient};
use domain::delivery::Delivery;
use domain::run::CompletionMessage;
use ports::{CompletionQueue, DeliveryQueue, DeliveryQueueError, QueueError};

pub fn sqs_client(sdk: &aws_config::SdkConfig) -> SdkClient<aws_sdk_sqs::Client> {
    crate::aws::sdk_client(sdk, aws_sdk_sqs::Client::new)
}

#[derive(Clone)]
pub struct SqsCompletionQueue {
    client: SdkClient<aws_sdk_sqs::Client>,
    queue_url: String,
}

impl SqsCompletionQueue {
    pub fn new(client: SdkClient<aws_sdk_sqs::Client>, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    pub fn is_fifo(&self) -> bool {
        self.queue_url.ends_with(".fifo")
    }
}

impl CompletionQueue for SqsCompletionQueue {
    async fn send(&self, m: &CompletionMessage) -> Result<(), QueueError> {
        let attribute = |v: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(v)
                .build()
                .expect("data type is set")
        };
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(serde_json::to_string(m).expect("completion message serializes"))
            .message_attributes("session_id", attribute(m.session_id.as_str()))
            .message_attributes("status", attribute(m.status.as_str()));
        if self.is_fifo() {
            // One ordered stream per session; a redelivered event is dropped by SQS for 5 minutes.
            request = request
                .message_group_id(&m.session_id)
                .message_deduplication_id(&m.event_id);
        }
        request.send().await.map(|_| ()).map_err(|e| QueueError {
            queue_url: self.queue_url.clone(),
            failure: classify(&e),
        })
    }
}

/// The MCP Events delivery queue (FIFO): each subscription's deliveries one ordered group,
/// each delivery deduplicated by its event and subscription.
#[derive(Clone)]
pub struct SqsDeliveryQueue {
    client: SdkClient<aws_sdk_sqs::Client>,
    queue_url: String,
}

impl SqsDeliveryQueue {
    pub fn new(client: SdkClient<aws_sdk_sqs::Client>, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }

    fn error<E>(
        &self,
        operation: &'static str,
        e: &aws_sdk_sqs::error::SdkError<
            E,
            aws_smithy_runtime_api::client::orchestrator::HttpResponse,
        >,
    ) -> DeliveryQueueError
    where
        E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + 'static,
    {
        DeliveryQueueError {
            operation,
            queue_url: self.queue_url.clone(),
            failure: classify(e),
        }
    }
}

/// SQS takes at most this many messages in one SendMessageBatch.
const BATCH: usize = 10;
/// SQS's longest visibility timeout (12 hours).
const MAX_VISIBILITY_SECS: u64 = 43_200;

impl DeliveryQueue for SqsDeliveryQueue {
    async fn enqueue(&self, deliveries: &[Delivery]) -> Result<(), DeliveryQueueError> {
        for chunk in deliveries.chunks(BATCH) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(d.to_message())
                        .message_group_id(d.group())
                        .message_deduplication_id(d.dedup_id())
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            let out = self
                .client
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| self.error("SendMessageBatch", &e))?;
            // A batch succeeds per entry: one refused fails the call, so it is sent again
            // (the ones that went are deduplicated by SQS).
            if let Some(failed) = out.failed.first() {
                return Err(DeliveryQueueError {
                    operation: "SendMessageBatch",
                    queue_url: self.queue_url.clone(),
                    failure: ports::AwsFailure {
                        code: Some(failed.code.clone()),
                        message: failed.message.clone().unwrap_or_default(),
                        retryable: !failed.sender_fault,
                        ambiguous: false,
                    },
                });
            }
        }
        Ok(())
    }

    async fn retry_in(
        &self,
        receipt_handle: &str,
        after: std::time::Duration,
    ) -> Result<(), DeliveryQueueError> {
        let secs = after.as_secs().min(MAX_VISIBILITY_SECS);
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(i32::try_from(secs).unwrap_or(i32::MAX))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| self.error("ChangeMessageVisibility", &e))
    }
}
