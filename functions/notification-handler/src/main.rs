// The SDK futures nested in the handler are deeper than the default limit allows.
#![recursion_limit = "256"]

use lambda_runtime::Error;

use adapters::aws::{dynamodb_client, load_sdk_config, s3_client};
use adapters::dynamodb::{DynamoEventLog, DynamoJobs, DynamoSubscriptions, WARM_UP_WITHIN};
use adapters::eventbridge::{eventbridge_client, EventBridgeEvents};
use adapters::s3::S3Objects;
use entry::telemetry;
use notification_handler::config::NotificationHandlerConfig;
use notification_handler::Handler;
use usecases::events::Subscribers;

// One thread: Lambda hands a process one event at a time and the work waits on AWS, so worker
// threads only add start-up time and cross-thread wake-ups (BENCHMARKS.md).
const FUNCTION: &str = "notification-handler";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, metrics) = telemetry::start(FUNCTION, NotificationHandlerConfig::from_env, |c| {
        &c.metrics_namespace
    });
    let sdk = load_sdk_config().await;
    // Built here, in init (adapters::aws::SdkClient); one DynamoDB client for every table.
    let dynamodb = dynamodb_client(&sdk);
    let handler = Handler {
        clock: domain::time::Clock::system(),
        store: DynamoJobs::new(dynamodb.clone(), &config.jobs.results_table),
        objects: S3Objects::new(s3_client(&sdk)),
        events: config
            .event_bus_name
            .as_ref()
            .map(|bus| EventBridgeEvents::new(eventbridge_client(&sdk), bus)),
        subscribers: config.events.as_ref().map(|tables| Subscribers {
            log: DynamoEventLog::new(dynamodb.clone(), &tables.events_table),
            subscriptions: tables
                .subscriptions_table
                .as_ref()
                .map(|table| DynamoSubscriptions::new(dynamodb.clone(), table)),
        }),
        settings: config.job_settings(),
        batch_concurrency: config.batch_concurrency,
    };
    // The SDK's first request (its connection, TLS, credentials, first pass), here in init where
    // Lambda gives a whole CPU; every table goes through this one client and its connection.
    let warm_up = handler.store.warm_up(WARM_UP_WITHIN).await;
    tracing::debug!(?warm_up, "the DynamoDB connection's warm-up read");
    telemetry::run_events(metrics, |event| handler.handle(event)).await
}
