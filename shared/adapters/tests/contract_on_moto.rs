//! The port contracts of `fakes::port_contract` against the real adapters, one test per
//! behaviour: DynamoDB, S3 and SQS on the local moto stack; SageMaker pipelines, lineage and
//! the async endpoint on the SageMaker stand-in (both started by `make test` through
//! scripts/local_stack.py). The same behaviours run against the in-memory fakes as unit tests.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};

use adapters::aws::{dynamodb_client, load_sdk_config, SdkClient};
use adapters::dynamodb::{DynamoJobs, DynamoRuns};

fn need(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: these tests need the local AWS stack; run `make test` (or `.venv/bin/python scripts/local_stack.py --sagemaker target/debug/sagemaker-standin -- cargo test`)")
    })
}

/// A fresh table, so each behaviour starts empty.
async fn table(sdk: &aws_config::SdkConfig, keys: &[&str]) -> String {
    need("AWS_ENDPOINT_URL");
    let name = format!("contract-{}", uuid::Uuid::new_v4());
    let mut create = dynamodb_client(sdk)
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest);
    for (i, key) in keys.iter().enumerate() {
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(*key)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(*key)
                    .key_type(if i == 0 {
                        KeyType::Hash
                    } else {
                        KeyType::Range
                    })
                    .build()
                    .unwrap(),
            );
    }
    create.send().await.expect("create table");
    name
}

mod dynamodb_job_store {
    use super::*;

    async fn jobs() -> DynamoJobs {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["inference_id"]).await;
        DynamoJobs::new(dynamodb_client(&sdk), name)
    }

    fakes::job_store_contract!(jobs());

    mod quota_store {
        use super::jobs;

        fakes::quota_store_contract!(jobs());
    }
}

mod dynamodb_event_log {
    use super::*;
    use adapters::dynamodb::DynamoEventLog;

    async fn log() -> DynamoEventLog {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["owner", "position"]).await;
        DynamoEventLog::new(dynamodb_client(&sdk), name)
    }

    fakes::event_log_contract!(log());
}

mod dynamodb_subscription_store {
    use super::*;
    use adapters::dynamodb::DynamoSubscriptions;

    async fn subscriptions() -> DynamoSubscriptions {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["owner", "id"]).await;
        DynamoSubscriptions::new(dynamodb_client(&sdk), name)
    }

    fakes::subscription_store_contract!(subscriptions());
}

mod dynamodb_run_store {
    use super::*;

    async fn runs() -> DynamoRuns {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["session_id", "execution_arn"]).await;
        DynamoRuns::new(dynamodb_client(&sdk), name)
    }

    fakes::run_store_contract!(runs());
}

#[cfg(feature = "s3")]
mod s3_object_store {
    use super::*;
    use adapters::aws::s3_client;
    use adapters::s3::S3Objects;
    use fakes::port_contract::object_store::Objects;

    async fn objects() -> Objects<S3Objects> {
        let bucket = need("IO_BUCKET");
        let sdk = load_sdk_config().await;
        Objects {
            objects: S3Objects::new(s3_client(&sdk)),
            bucket,
        }
    }

    fakes::object_store_contract!(objects());
}

#[cfg(feature = "sagemaker")]
mod sagemaker_pipeline_on_the_stand_in {
    use super::*;
    use adapters::sagemaker::{sagemaker_client, SageMakerPipeline};

    async fn pipeline() -> SageMakerPipeline {
        need("AWS_ENDPOINT_URL_SAGEMAKER");
        let sdk = load_sdk_config().await;
        SageMakerPipeline::new(sagemaker_client(&sdk))
    }

    fakes::pipeline_control_contract!(pipeline());
}

/// moto answers a missing pipeline execution or model package as a ValidationException ("Could
/// not find ...", "... not found"), where SageMaker mostly says ResourceNotFound: the adapters
/// read both as ResourceNotFound, so the tools answer a missing run or package one way.
#[cfg(feature = "sagemaker")]
mod sagemaker_missing_resources_on_moto {
    use super::*;
    use adapters::sagemaker::{SageMakerLineage, SageMakerPipeline};
    use aws_sdk_sagemaker::error::ProvideErrorMetadata;
    use ports::{LineageGraph, PipelineControl};

    /// A SageMaker client on moto, whatever AWS_ENDPOINT_URL_SAGEMAKER (the stand-in) says.
    async fn moto() -> aws_sdk_sagemaker::Client {
        let moto = need("AWS_ENDPOINT_URL");
        let sdk = load_sdk_config().await;
        let conf = aws_sdk_sagemaker::config::Builder::from(&sdk)
            .endpoint_url(moto)
            .build();
        aws_sdk_sagemaker::Client::from_conf(conf)
    }

    /// An execution ARN of a pipeline moto has, that names no execution.
    async fn missing_execution(client: &aws_sdk_sagemaker::Client) -> String {
        let name = format!("contract-{}", uuid::Uuid::new_v4().simple());
        let created = client
            .create_pipeline()
            .pipeline_name(&name)
            .role_arn("arn:aws:iam::123456789012:role/contract")
            .pipeline_definition(r#"{"Version": "2020-12-01", "Steps": []}"#)
            .client_request_token(uuid::Uuid::new_v4().simple().to_string())
            .send()
            .await
            .expect("CreatePipeline on moto");
        format!("{}/execution/none", created.pipeline_arn().unwrap())
    }

    #[tokio::test]
    async fn a_missing_execution_is_not_found() {
        let client = moto().await;
        let arn = missing_execution(&client).await;
        // moto's own shape, so this test sees the one it is about.
        let raw = client
            .describe_pipeline_execution()
            .pipeline_execution_arn(&arn)
            .send()
            .await
            .unwrap_err();
        assert_eq!(raw.code(), Some("ValidationException"), "{raw:?}");
        assert!(
            raw.message().unwrap_or_default().contains("Could not find"),
            "{raw:?}"
        );
        let pipeline = SageMakerPipeline::new(SdkClient::new(client.clone()));
        for (operation, failure) in [
            ("describe", pipeline.describe(&arn).await.unwrap_err()),
            ("definition", pipeline.definition(&arn).await.unwrap_err()),
        ] {
            assert_eq!(
                failure.code.as_deref(),
                Some("ResourceNotFound"),
                "{operation}: {failure}"
            );
            assert!(!failure.retryable && !failure.ambiguous, "{failure}");
        }
    }

    #[tokio::test]
    async fn a_missing_model_package_is_not_found() {
        let client = moto().await;
        let package = format!(
            "arn:aws:sagemaker:us-east-1:123456789012:model-package/none-{}/1",
            uuid::Uuid::new_v4().simple()
        );
        let raw = client
            .describe_model_package()
            .model_package_name(&package)
            .send()
            .await
            .unwrap_err();
        assert_eq!(raw.code(), Some("ValidationException"), "{raw:?}");
        let failure = SageMakerLineage::new(SdkClient::new(client.clone()))
            .describe_model_package(&package)
            .await
            .unwrap_err();
        assert_eq!(
            failure.code.as_deref(),
            Some("ResourceNotFound"),
            "{failure}"
        );
    }
}

/// The lineage a run on the stand-in records, read through the real adapter with pages of one
/// association. A model is registered by running the pipeline until its RegisterModel step
/// names the package, read through the pipeline adapter.
#[cfg(feature = "sagemaker")]
mod sagemaker_lineage_on_the_stand_in {
    use super::*;
    use adapters::sagemaker::{sagemaker_client, SageMakerLineage, SageMakerPipeline};
    use fakes::port_contract::lineage_graph::{Registered, Registrar};
    use ports::{PipelineControl, StartRequest};

    struct Standin {
        lineage: SageMakerLineage,
        pipeline: SageMakerPipeline,
    }

    impl Registrar for Standin {
        type Lineage = SageMakerLineage;

        fn lineage(&self) -> &SageMakerLineage {
            &self.lineage
        }

        async fn register(&self, input_data_uri: &str) -> Registered {
            let execution_arn = self
                .pipeline
                .start(&StartRequest {
                    pipeline_name: "contract-lineage".into(),
                    description: "session_id=contract-lineage".into(),
                    parameters: vec![("InputDataUri".into(), input_data_uri.into())],
                    client_request_token: uuid::Uuid::new_v4().simple().to_string(),
                    max_parallel_steps: None,
                })
                .await
                .expect("StartPipelineExecution");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let steps = self.pipeline.steps(&execution_arn).await.expect("steps");
                let registered = steps.iter().find_map(|s| s.model_package_arn.clone());
                if let Some(model_package_arn) = registered {
                    let register = steps.iter().find(|s| s.name == "RegisterModel");
                    assert_eq!(
                        register.map(|s| s.status.as_str()),
                        Some("Succeeded"),
                        "only a RegisterModel step that succeeded names a package: {steps:?}"
                    );
                    return Registered {
                        model_package_arn,
                        execution_arn,
                        input_data_uri: input_data_uri.to_owned(),
                    };
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "no model registered: {steps:?}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }

    async fn lineage() -> Standin {
        need("AWS_ENDPOINT_URL_SAGEMAKER");
        let sdk = load_sdk_config().await;
        let client = sagemaker_client(&sdk);
        Standin {
            lineage: SageMakerLineage::new(client.clone()).with_page_size(1),
            pipeline: SageMakerPipeline::new(client),
        }
    }

    fakes::lineage_graph_contract!(lineage());
}

/// The stand-in serves the async runtime on the same port as the control plane; the runtime
/// client is pointed at it here (moto's InvokeEndpointAsync answers no S3 locations).
#[cfg(feature = "sagemaker-runtime")]
mod sagemaker_endpoint_on_the_stand_in {
    use super::*;
    use adapters::sagemaker_runtime::{sagemaker_runtime_client, SageMakerEndpoints};
    use fakes::port_contract::async_invoker::Endpoint;

    async fn endpoint() -> Endpoint<SageMakerEndpoints> {
        let standin = need("AWS_ENDPOINT_URL_SAGEMAKER");
        let bucket = need("IO_BUCKET");
        let sdk = aws_config::from_env().endpoint_url(standin).load().await;
        let client = sagemaker_runtime_client(&sdk, std::time::Duration::from_secs(5));
        let control = adapters::sagemaker::sagemaker_client(&sdk);
        Endpoint {
            invoker: SageMakerEndpoints::new(client, control),
            endpoint_name: "contract-endpoint".into(),
            input_location: format!("s3://{bucket}/contract/inputs/none.json"),
        }
    }

    fakes::async_invoker_contract!(endpoint());

    #[tokio::test]
    async fn a_count_that_cannot_be_read_is_asked_once_then_unknown_for_a_while() {
        use ports::AsyncInvoker;
        let endpoints = endpoint().await.invoker;
        let missing = format!("none-{}", uuid::Uuid::new_v4().simple());
        assert!(endpoints.current_instances(&missing).await.is_err());
        // Within the window the refusal is remembered, not asked again.
        assert_eq!(endpoints.current_instances(&missing).await.unwrap(), None);
    }
}

#[cfg(feature = "sqs")]
mod sqs_completion_queue {
    use super::*;
    use adapters::sqs::{sqs_client, SqsCompletionQueue};
    use domain::run::CompletionMessage;
    use fakes::port_contract::completion_queue::Inbox;
    use ports::{CompletionQueue, QueueError};

    /// The adapter on a fresh queue, and ReceiveMessage on that queue to read what arrived.
    struct Sqs {
        queue: SqsCompletionQueue,
        client: SdkClient<aws_sdk_sqs::Client>,
        url: String,
    }

    impl CompletionQueue for Sqs {
        async fn send(&self, message: &CompletionMessage) -> Result<(), QueueError> {
            self.queue.send(message).await
        }
    }

    impl Inbox for Sqs {
        async fn received(&self) -> Vec<serde_json::Value> {
            let mut bodies = Vec::new();
            loop {
                let got = self
                    .client
                    .receive_message()
                    .queue_url(&self.url)
                    .max_number_of_messages(10)
                    .send()
                    .await
                    .expect("ReceiveMessage");
                let messages = got.messages.unwrap_or_default();
                if messages.is_empty() {
                    return bodies;
                }
                bodies.extend(messages.iter().map(|m| {
                    serde_json::from_str(m.body().expect("a body")).expect("a JSON body")
                }));
            }
        }
    }

    async fn queue() -> Sqs {
        need("AWS_ENDPOINT_URL");
        let sdk = load_sdk_config().await;
        let client = sqs_client(&sdk);
        let url = client
            .create_queue()
            .queue_name(format!("contract-{}", uuid::Uuid::new_v4().simple()))
            .send()
            .await
            .expect("CreateQueue")
            .queue_url
            .expect("a queue URL");
        Sqs {
            queue: SqsCompletionQueue::new(client.clone(), url.clone()),
            client,
            url,
        }
    }

    fakes::completion_queue_contract!(queue());
}

/// The read a cold start makes to open the DynamoDB connection in init (not a port: the
/// functions' wiring calls it).
mod dynamodb_warm_up {
    use std::time::Duration;

    use super::*;
    use adapters::dynamodb::WarmUp;

    /// How many items the table holds: a warm-up read leaves it as it was.
    async fn items_in(sdk: &aws_config::SdkConfig, name: &str) -> i32 {
        let scan = dynamodb_client(sdk)
            .scan()
            .table_name(name)
            .send()
            .await
            .unwrap();
        scan.count()
    }

    #[tokio::test]
    async fn the_warm_up_read_is_answered_and_leaves_the_table_as_it_was() {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["inference_id"]).await;
        let jobs = DynamoJobs::new(dynamodb_client(&sdk), &name);
        let warm_up = jobs.warm_up(Duration::from_secs(5)).await;
        assert!(matches!(warm_up, WarmUp::Answered), "{warm_up:?}");
        assert_eq!(items_in(&sdk, &name).await, 0);
    }

    #[tokio::test]
    async fn the_pipeline_tables_warm_up_read_names_its_whole_key_and_is_answered() {
        let sdk = load_sdk_config().await;
        let name = table(&sdk, &["session_id", "execution_arn"]).await;
        let runs = DynamoRuns::new(dynamodb_client(&sdk), &name);
        let warm_up = runs.warm_up(Duration::from_secs(5)).await;
        // A key without its sort key is refused (ValidationException), not answered.
        assert!(matches!(warm_up, WarmUp::Answered), "{warm_up:?}");
        assert_eq!(items_in(&sdk, &name).await, 0);
    }

    #[tokio::test]
    async fn a_warm_up_read_nobody_answers_ends_at_its_bound() {
        // Takes each connection and never answers, as a network that drops the reply would.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((connection, _)) = listener.accept().await {
                held.push(connection);
            }
        });
        let sdk = load_sdk_config().await;
        // Set on the client itself: the environment's endpoint would win over the shared config's.
        let client = adapters::aws::sdk_client(&sdk, |sdk| {
            let conf = aws_sdk_dynamodb::config::Builder::from(sdk)
                .endpoint_url(endpoint)
                .build();
            aws_sdk_dynamodb::Client::from_conf(conf)
        });
        let jobs = DynamoJobs::new(client, "results");
        let within = Duration::from_millis(200);
        let ended = tokio::time::timeout(Duration::from_secs(10), jobs.warm_up(within)).await;
        silent.abort();
        assert!(
            matches!(ended, Ok(WarmUp::NoAnswerWithin(w)) if w == within),
            "{ended:?}"
        );
    }
}
