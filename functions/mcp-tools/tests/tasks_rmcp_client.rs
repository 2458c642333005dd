// The SDK futures nested in the tools are deeper than the default limit allows.
#![recursion_limit = "256"]

//! The tasks extension through rmcp's own client, which declares the extension: the tools
//! served in process with real SDK clients against the local stack (moto, started by
//! `make test` through scripts/local_stack.py). A job's outcome is recorded as
//! notification-handler records it, through the same use case.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, TaskPayload, TaskStatus,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

use adapters::aws::{dynamodb_client, load_sdk_config, s3_client};
use adapters::dynamodb::DynamoJobs;
use adapters::s3::S3Objects;
use domain::caller::Principal;
use domain::notification::{parse_notification, Notification};
use domain::s3_location::S3Location;
use entry::config::Env;
use mcp_tools::config::ToolsConfig;
use mcp_tools::{Deps, Tools};
use ports::ObjectStore;
use usecases::outcome::record_notification;

fn config() -> ToolsConfig {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        panic!("these tests need the local AWS stack: run `make test`");
    }
    ToolsConfig::from_env(&Env::from_lookup(|name| match name {
        "ASYNC_ENDPOINT_NAME" => Some("mcp-doc-processor-async".into()),
        "PIPELINE_NAME" => Some("mcp-intent-classifier-pipeline".into()),
        other => std::env::var(other).ok(),
    }))
    .unwrap()
}

/// The tools on one end of an in-memory pipe, rmcp's client (declaring tasks) on the other.
async fn client() -> RunningService<RoleClient, ClientConfig> {
    // One client on a pipe: the local caller, as a stdio transport would have it.
    let deps = Arc::new(Deps::connect(config()).await.unwrap());
    let tools = Tools::for_sole_caller(deps, Principal::Local);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(server) = tools.serve(server_io).await {
            let _ = server.waiting().await;
        }
    });
    let capabilities = ClientCapabilities::builder().enable_tasks().build();
    ClientConfig::new(capabilities, Implementation::new("tasks-test", "1"))
        .serve(client_io)
        .await
        .unwrap()
}

async fn submit(client: &RunningService<RoleClient, ClientConfig>, document: &str) -> String {
    let args = json!({"document": document}).as_object().cloned().unwrap();
    match client
        .call_tool_once(CallToolRequestParams::new("submit_job").with_arguments(args))
        .await
        .unwrap()
    {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.ttl_ms.unwrap() > 0);
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Records the job's outcome as notification-handler would on SageMaker's notification.
async fn complete(inference_id: &str, output: serde_json::Value) {
    let sdk = load_sdk_config().await;
    let config = config();
    let objects = S3Objects::new(s3_client(&sdk));
    let location = S3Location {
        bucket: config.io_bucket.clone(),
        key: format!("outputs/{inference_id}.out"),
    };
    objects
        .put_json(&location, output.to_string().into_bytes())
        .await
        .unwrap();
    let message = json!({
        "invocationStatus": "Completed", "inferenceId": inference_id, "eventSource": "aws:sagemaker",
        "eventName": "InferenceResult", "eventTime": "2026-11-20T10:15:01.902Z",
        "responseParameters": {"outputLocation": location.to_string()},
    });
    let Notification::Outcome(outcome) = parse_notification(&message.to_string()).unwrap() else {
        panic!("not an outcome")
    };
    let store = DynamoJobs::new(dynamodb_client(&sdk), &config.jobs.results_table);
    let settings = config.job_settings();
    record_notification(&store, &objects, settings, outcome, chrono::Utc::now())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_job_task_is_working_then_completed_with_the_result() {
    let client = client().await;
    let task_id = submit(&client, "Invoice 12: total 4 EUR").await;
    let task = client
        .get_task(GetTaskParams::new(task_id.clone()))
        .await
        .unwrap();
    assert_eq!(task.task.status(), TaskStatus::Working);

    let inference_id = task_id.rsplit_once('.').unwrap().0;
    complete(inference_id, json!({"label": "invoice"})).await;
    let task = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
    let TaskPayload::Completed { result } = &task.task.payload else {
        panic!("expected completed, got {task:?}")
    };
    assert_eq!(result["structuredContent"]["status"], "completed");
    assert_eq!(
        result["structuredContent"]["result"],
        json!({"label": "invoice"})
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_job_task_stays_cancelled_and_unknown_ids_are_refused() {
    let client = client().await;
    let task_id = submit(&client, "cancel this").await;
    client
        .cancel_task(CancelTaskParams::new(task_id.clone()))
        .await
        .unwrap();
    complete(task_id.rsplit_once('.').unwrap().0, json!({"late": true})).await;
    let task = client.get_task(GetTaskParams::new(task_id)).await.unwrap();
    assert_eq!(task.task.status(), TaskStatus::Cancelled);

    let unknown = format!("{}.{}", uuid::Uuid::new_v4(), "a".repeat(32));
    let error = client
        .get_task(GetTaskParams::new(unknown))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no such task"), "{error}");
    client.cancel().await.unwrap();
}
