//! The port contracts of `shared::contract` against the real adapters: DynamoDB and S3 on the
//! local moto stack, SageMaker pipelines on the stand-in (both started by `make test` through
//! scripts/local_stack.py). The same suites run against the in-memory fakes as unit tests.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};

use shared::adapters::aws::{dynamodb_client, load_sdk_config};
use shared::adapters::dynamodb::{DynamoJobs, DynamoRuns};
use shared::contract;

fn need(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: these tests need the local AWS stack; run `make test` (or `.venv/bin/python scripts/local_stack.py --sagemaker target/debug/sagemaker-standin -- cargo test`)")
    })
}

/// A fresh table, so each suite starts empty.
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

#[tokio::test]
async fn the_dynamodb_job_store_keeps_the_contract() {
    let sdk = load_sdk_config().await;
    let name = table(&sdk, &["inference_id"]).await;
    contract::job_store(&DynamoJobs::new(dynamodb_client(&sdk), name)).await;
}

#[tokio::test]
async fn the_dynamodb_run_store_keeps_the_contract() {
    let sdk = load_sdk_config().await;
    let name = table(&sdk, &["session_id", "execution_arn"]).await;
    contract::run_store(&DynamoRuns::new(dynamodb_client(&sdk), name)).await;
}

#[cfg(feature = "s3")]
#[tokio::test]
async fn the_s3_object_store_keeps_the_contract() {
    use shared::adapters::aws::s3_client;
    use shared::adapters::s3::S3Objects;
    let sdk = load_sdk_config().await;
    let bucket = need("IO_BUCKET");
    contract::object_store(&S3Objects::new(s3_client(&sdk)), &bucket).await;
}

#[cfg(feature = "sagemaker")]
#[tokio::test]
async fn the_sagemaker_pipeline_on_the_stand_in_keeps_the_contract() {
    use shared::adapters::sagemaker::{sagemaker_client, SageMakerPipeline};
    need("AWS_ENDPOINT_URL_SAGEMAKER");
    let sdk = load_sdk_config().await;
    contract::pipeline_control(&SageMakerPipeline::new(
        sagemaker_client(&sdk),
        "contract-pipeline",
    ))
    .await;
}
