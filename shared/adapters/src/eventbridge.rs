//! EventBridge: the completion events of recorded job outcomes, one PutEvents entry each.

use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use crate::aws::{classify, SdkClient};
use domain::completion::{JobCompletion, SOURCE};
use ports::{AwsFailure, CompletionEvents, EventError};

pub fn eventbridge_client(sdk: &aws_config::SdkConfig) -> SdkClient<aws_sdk_eventbridge::Client> {
    crate::aws::sdk_client(sdk, aws_sdk_eventbridge::Client::new)
}

#[derive(Clone)]
pub struct EventBridgeEvents {
    client: SdkClient<aws_sdk_eventbridge::Client>,
    bus: String,
}

impl EventBridgeEvents {
    /// `bus`: a bus name or ARN (`default` for the account's default bus).
    pub fn new(client: SdkClient<aws_sdk_eventbridge::Client>, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }
}

impl CompletionEvents for EventBridgeEvents {
    async fn put(&self, completion: &JobCompletion) -> Result<(), EventError> {
        let error = |failure| EventError {
            bus: self.bus.clone(),
            failure,
        };
        let entry = PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(completion.detail_type())
            .detail(completion.detail_json())
            .build();
        let out = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| error(classify(&e)))?;
        // PutEvents answers 200 with the entry refused inside it (throttled, too large, no bus).
        match out.entries().first() {
            Some(entry) if entry.event_id().is_some() => Ok(()),
            refused => {
                let code = refused.and_then(|e| e.error_code()).map(str::to_owned);
                let retryable = matches!(
                    code.as_deref(),
                    Some("ThrottlingException" | "InternalException" | "InternalFailure")
                );
                Err(error(AwsFailure {
                    message: refused
                        .and_then(|e| e.error_message())
                        .unwrap_or("PutEvents accepted no entry")
                        .to_owned(),
                    code,
                    retryable,
                    ambiguous: false,
                }))
            }
        }
    }
}
