//! An unknown pipeline execution, answered in either of the shapes SageMaker's callers meet:
//! SageMaker's ResourceNotFound, or moto's ValidationException "Could not find ...", as the
//! control API chooses; and the count of runs started that tests read.

mod standin;

use reqwest::Method;
use serde_json::json;

const UNKNOWN: &str = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/none";

#[tokio::test]
async fn an_unknown_execution_is_answered_in_the_shape_the_control_api_chose() {
    let standin = standin::start(5000);
    let describe = || {
        standin.sagemaker(
            "DescribePipelineExecution",
            json!({"PipelineExecutionArn": UNKNOWN}),
        )
    };
    let (status, body) = describe().await;
    assert_eq!(status, 400);
    assert_eq!(body["__type"], "ResourceNotFound", "{body}");

    let (status, body) = standin
        .control(
            Method::POST,
            "/_standin/pipeline",
            json!({"missing_execution": "ValidationException"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["missing_execution"], "ValidationException");
    for operation in [
        "DescribePipelineExecution",
        "ListPipelineExecutionSteps",
        "StopPipelineExecution",
    ] {
        let (status, body) = standin
            .sagemaker(
                operation,
                json!({"PipelineExecutionArn": UNKNOWN, "ClientRequestToken": "t".repeat(32)}),
            )
            .await;
        assert_eq!(status, 400, "{operation}");
        assert_eq!(body["__type"], "ValidationException", "{operation}: {body}");
        assert_eq!(
            body["message"],
            format!("Could not find pipeline execution with PipelineExecutionArn {UNKNOWN}."),
            "{operation}"
        );
    }

    let (status, body) = standin
        .control(Method::DELETE, "/_standin/pipeline", json!(null))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["missing_execution"], "ResourceNotFound");
    assert_eq!(describe().await.1["__type"], "ResourceNotFound");

    for bad in [
        json!({}),
        json!({"missing_execution": "NotFound"}),
        json!({"step_millis": 0}),
    ] {
        let (status, _) = standin
            .control(Method::POST, "/_standin/pipeline", bad.clone())
            .await;
        assert_eq!(status, 400, "{bad}");
    }
}

#[tokio::test]
async fn the_runs_started_are_counted_once_per_token() {
    let standin = standin::start(5000);
    let runs_started = || async {
        let (_, body) = standin
            .control(Method::GET, "/_standin/pipeline", json!(null))
            .await;
        body["runs_started"].as_u64().expect("a count")
    };
    assert_eq!(runs_started().await, 0);
    let start = json!({"PipelineName": "p", "ClientRequestToken": "k".repeat(32)});
    for _ in 0..2 {
        let (status, body) = standin
            .sagemaker("StartPipelineExecution", start.clone())
            .await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(runs_started().await, 1, "a replayed token starts nothing");
}
