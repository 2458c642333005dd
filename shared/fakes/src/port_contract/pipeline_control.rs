//! Pipeline runs: a token starts at most one run; unknown runs are refused, not retried.

use domain::caller::Principal;
use domain::pipeline_status::{ExecutionStatus, PipelineStatus};
use domain::run::client_request_token;
use ports::{PipelineControl, StartRequest};

fn start_request() -> StartRequest {
    StartRequest {
        pipeline_name: "contract-pipeline".into(),
        description: "session_id=contract; triggered at 2026-11-20T10:00:00.000Z".into(),
        parameters: vec![("InputDataUri".into(), "s3://bucket/train/".into())],
        client_request_token: client_request_token(
            &Principal::Local.caller().owner,
            "p",
            "s",
            &uuid::Uuid::new_v4().to_string(),
        ),
        max_parallel_steps: None,
    }
}

const UNKNOWN: &str = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/doesnotexist";

pub async fn a_token_starts_one_run<P: PipelineControl>(pipeline: &P) {
    let request = start_request();
    let first = pipeline.start(&request).await.unwrap();
    assert_eq!(
        pipeline.start(&request).await.unwrap(),
        first,
        "the same token, the same run"
    );
    let other = pipeline
        .start(&StartRequest {
            client_request_token: uuid::Uuid::new_v4().simple().to_string(),
            ..request
        })
        .await
        .unwrap();
    assert_ne!(other, first, "another token, another run");
}

pub async fn a_started_run_is_described_with_its_steps<P: PipelineControl>(pipeline: &P) {
    let arn = pipeline.start(&start_request()).await.unwrap();
    let described = pipeline.describe(&arn).await.unwrap();
    // Not stopped: running, or ended by itself (the stand-in's runs are quick).
    assert!(
        matches!(
            described.status,
            ExecutionStatus::Known(
                PipelineStatus::Executing | PipelineStatus::Succeeded | PipelineStatus::Failed
            )
        ),
        "a run nobody stopped is {}",
        described.status
    );
    let steps = pipeline.steps(&arn).await.unwrap();
    for step in &steps {
        assert!(
            !step.name.is_empty() && !step.status.as_str().is_empty(),
            "{step:?}"
        );
    }
    let definition = pipeline.definition(&arn).await.unwrap();
    assert!(
        domain::pipeline_definition::step_count(&definition).is_some_and(|n| n > 0),
        "the definition a run executes names its steps: {definition}"
    );
}

pub async fn a_stopped_run_is_stopping_or_stopped<P: PipelineControl>(pipeline: &P) {
    let arn = pipeline.start(&start_request()).await.unwrap();
    // Stopped at once, while it certainly still runs.
    pipeline.stop(&arn).await.unwrap();
    let status = pipeline.describe(&arn).await.unwrap().status;
    assert!(
        status.is(PipelineStatus::Stopping) || status.is(PipelineStatus::Stopped),
        "a stopped run is Stopping or Stopped, not {status}"
    );
}

/// Refused as not found (`ResourceNotFound`, whichever shape SageMaker answered in), and
/// not worth retrying.
pub async fn an_unknown_run_is_refused_not_retried<P: PipelineControl>(pipeline: &P) {
    let not_found = |operation: &str, failure: ports::AwsFailure| {
        assert_eq!(
            failure.code.as_deref(),
            Some("ResourceNotFound"),
            "{operation}: {failure}"
        );
        assert!(
            !failure.retryable && !failure.ambiguous,
            "{operation}: {failure}"
        );
    };
    not_found("describe", pipeline.describe(UNKNOWN).await.unwrap_err());
    not_found("stop", pipeline.stop(UNKNOWN).await.unwrap_err());
    not_found(
        "definition",
        pipeline.definition(UNKNOWN).await.unwrap_err(),
    );
    not_found("steps", pipeline.steps(UNKNOWN).await.unwrap_err());
}

/// One `#[tokio::test]` per pipeline behaviour, on the `PipelineControl` `$make.await` gives.
#[macro_export]
macro_rules! pipeline_control_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            pipeline_control,
            $make,
            [
                a_token_starts_one_run,
                a_started_run_is_described_with_its_steps,
                a_stopped_run_is_stopping_or_stopped,
                an_unknown_run_is_refused_not_retried,
            ]
        );
    };
}
