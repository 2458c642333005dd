// The SDK futures nested in the handler are deeper than the default limit allows.
#![recursion_limit = "256"]

use lambda_runtime::Error;

use adapters::aws::{dynamodb_client, load_sdk_config};
use adapters::dynamodb::{DynamoEventLog, DynamoRuns, DynamoSubscriptions, WARM_UP_WITHIN};
use adapters::sagemaker::{sagemaker_client, SageMakerPipeline};
use adapters::sqs::{sqs_client, SqsCompletionQueue};
use entry::telemetry;
use pipeline_router::config::PipelineRouterConfig;
use pipeline_router::Handler;
use usecases::events::Subscribers;

// One thread: Lambda hands a process one event at a time and the work waits on AWS, so worker
// threads only add start-up time and cross-thread wake-ups (BENCHMARKS.md).
const FUNCTION: &str = "pipeline-router";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (config, metrics) = telemetry::start(FUNCTION, PipelineRouterConfig::from_env, |c| {
        &c.metrics_namespace
    });
    let sdk = load_sdk_config().await;
    // Built here, in init (adapters::aws::SdkClient); one DynamoDB client for every table.
    let dynamodb = dynamodb_client(&sdk);
    let handler = Handler {
        clock: domain::time::Clock::system(),
        store: DynamoRuns::new(dynamodb.clone(), &config.pipeline_results_table),
        // Describes any run; it never starts one.
        pipeline: SageMakerPipeline::new(sagemaker_client(&sdk)),
        queue: SqsCompletionQueue::new(sqs_client(&sdk), &config.pipeline_results_queue_url),
        result_ttl_secs: config.result_ttl_secs,
        subscribers: config.events.as_ref().map(|tables| Subscribers {
            log: DynamoEventLog::new(dynamodb.clone(), &tables.events_table),
            subscriptions: tables
                .subscriptions_table
                .as_ref()
                .map(|table| DynamoSubscriptions::new(dynamodb.clone(), table)),
        }),
    };
    // The SDK's first request (its connection, TLS, credentials, first pass), here in init where
    // Lambda gives a whole CPU; every table goes through this one client and its connection.
    let warm_up = handler.store.warm_up(WARM_UP_WITHIN).await;
    tracing::debug!(?warm_up, "the DynamoDB connection's warm-up read");
    telemetry::run_events(metrics, |event| handler.handle(event)).await
}
