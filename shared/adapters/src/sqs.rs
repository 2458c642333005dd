//! SQS: the completion queue (standard or FIFO, by the URL's `.fifo`).

use aws_sdk_sqs::types::MessageAttributeValue;

use crate::aws::{classify, OnFirstUse};
use domain::run::CompletionMessage;
use ports::{CompletionQueue, QueueError};

pub fn sqs_client(sdk: &aws_config::SdkConfig) -> OnFirstUse<aws_sdk_sqs::Client> {
    crate::aws::on_first_use(sdk, aws_sdk_sqs::Client::new)
}

#[derive(Clone)]
pub struct SqsCompletionQueue {
    client: OnFirstUse<aws_sdk_sqs::Client>,
    queue_url: String,
}

impl SqsCompletionQueue {
    pub fn new(client: OnFirstUse<aws_sdk_sqs::Client>, queue_url: impl Into<String>) -> Self {
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
