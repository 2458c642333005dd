// The SDK futures nested in the handler are deeper than the default limit allows.
#![recursion_limit = "256"]

use lambda_runtime::Error;

use adapters::aws::{dynamodb_client, load_sdk_config};
use adapters::dynamodb::DynamoSubscriptions;
use adapters::sqs::{sqs_client, SqsDeliveryQueue};
use adapters::webhook::HttpWebhooks;
use entry::telemetry;
use event_delivery::config::EventDeliveryConfig;
use event_delivery::Handler;
use usecases::events::DeliverySettings;

// One thread: Lambda hands a process one event at a time and the work waits on the network.
const FUNCTION: &str = "event-delivery";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, metrics) = telemetry::start(FUNCTION, EventDeliveryConfig::from_env, |c| {
        &c.metrics_namespace
    });
    let sdk = load_sdk_config().await;
    let webhooks = HttpWebhooks::new(config.timeout, config.allow_local_callbacks)
        .map_err(|e| format!("the webhook client did not start: {e}"))?;
    let handler = Handler {
        subscriptions: DynamoSubscriptions::new(dynamodb_client(&sdk), &config.subscriptions_table),
        webhooks,
        queue: SqsDeliveryQueue::new(sqs_client(&sdk), &config.delivery_queue_url),
        settings: DeliverySettings {
            retry_first: config.retry_first,
            pause_after: config.pause_after,
        },
        first_tries_budget: event_delivery::FIRST_TRIES_BUDGET,
        clock: domain::time::Clock::system(),
    };
    telemetry::run_events(metrics, |event| handler.handle(event)).await
}
