//! Training.

use super::*;

#[tokio::test]
async fn trigger_training_passes_only_the_given_parameters_under_the_pipelines_names() {
    let w = world(&[]);
    let out = w
        .ok(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/", "session_id": "s-1", "max_epochs": 15}),
        )
        .await;
    assert_eq!(out["status"], "Executing");
    assert_eq!(out["session_id"], "s-1");
    let started = w.ports().pipeline.started();
    assert_eq!(started.len(), 1);
    assert_eq!(
        started[0].parameters,
        [
            ("InputDataUri".to_owned(), "s3://b/train/".to_owned()),
            ("MaxEpochs".to_owned(), "15".to_owned())
        ]
    );
    let owner = Principal::Local.caller().owner;
    assert!(started[0]
        .description
        .starts_with(&format!("session_id=s-1; mcp_owner={owner}; triggered at ")));
    let runs = w
        .ok(names::CHECK_TRAINING_RESULT, json!({"session_id": "s-1"}))
        .await;
    assert_eq!(runs["runs"][0]["execution_arn"], out["execution_arn"]);
    assert_eq!(runs["runs"][0]["status"], "pending");
}

#[tokio::test]
async fn a_pipeline_with_its_own_parameter_names_gets_them_and_refuses_what_it_lacks() {
    let w = world(&[(
        "PIPELINE_PARAMETERS",
        "input_data_uri=TrainingData,accuracy_threshold=MinAccuracy",
    )]);
    w.ok(
        names::TRIGGER_TRAINING,
        json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "accuracy_threshold": 0.9}),
    )
    .await;
    assert_eq!(
        w.ports().pipeline.started()[0].parameters,
        [
            ("TrainingData".to_owned(), "s3://b/train/t".to_owned()),
            ("MinAccuracy".to_owned(), "0.9".to_owned())
        ]
    );
    let message = w
        .tool_error(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": 15}),
        )
        .await;
    assert_eq!(
        message,
        "`max_epochs` was given, but this pipeline takes no parameter for it: PIPELINE_PARAMETERS \
         maps only input_data_uri, accuracy_threshold. Call again without `max_epochs`."
    );
    assert_eq!(w.ports().pipeline.started().len(), 1, "nothing started");
}

#[tokio::test]
async fn the_same_training_key_returns_the_same_run() {
    let w = world(&[]);
    let args =
        json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "idempotency_key": "run-1"});
    let first = w.ok(names::TRIGGER_TRAINING, args.clone()).await;
    let again = w.ok(names::TRIGGER_TRAINING, args).await;
    assert_eq!(first["execution_arn"], again["execution_arn"]);
    assert_eq!(w.ports().pipeline.started().len(), 1);
}

#[tokio::test]
async fn check_training_status_reports_the_run_or_says_which_call_failed() {
    let w = world(&[]);
    let out = w
        .ok(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s"}),
        )
        .await;
    let arn = out["execution_arn"].as_str().unwrap();
    let status = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert_eq!(
        status,
        json!({"execution_arn": arn, "status": "Executing", "steps": []})
    );
    w.ports()
        .pipeline
        .set_failure_reason(arn, "AlgorithmError: loss is NaN");
    let failed = w
        .ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert_eq!(failed["status"], "Failed");
    assert_eq!(failed["failure_reason"], "AlgorithmError: loss is NaN");

    let unknown = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/none";
    let message = w
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": unknown}),
        )
        .await;
    assert_eq!(
        message,
        format!("no training run \"{unknown}\" was found: check the execution_arn that trigger_training returned")
    );
    let message = w
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": "run-1"}),
        )
        .await;
    assert!(
        message.contains("is not a pipeline execution ARN"),
        "{message}"
    );
}

#[tokio::test]
async fn check_training_result_lists_nothing_for_a_new_session_and_refuses_a_bad_id() {
    let w = world(&[]);
    let empty = w
        .ok(names::CHECK_TRAINING_RESULT, json!({"session_id": "fresh"}))
        .await;
    assert_eq!(empty, json!({"session_id": "fresh", "runs": []}));
    let message = w
        .tool_error(
            names::CHECK_TRAINING_RESULT,
            json!({"session_id": "no spaces"}),
        )
        .await;
    assert_eq!(
        message,
        "`session_id` \"no spaces\" must be 1 to 128 letters, digits or `_ . : -`"
    );
}

#[tokio::test]
async fn check_training_status_names_the_model_package_the_run_registered() {
    let w = world(&[]);
    let (execution, package) = registered_model(&w).await;
    let status = w
        .ok(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": execution}),
        )
        .await;
    assert_eq!(status["status"], "Succeeded");
    assert_eq!(status["model_package_arn"], package.as_str());
    let steps = status["steps"].as_array().unwrap();
    assert_eq!(steps[3]["name"], "RegisterModel");
    assert_eq!(steps[3]["model_package_arn"], package.as_str());
    assert!(steps[..3]
        .iter()
        .all(|s| s.get("model_package_arn").is_none()));
}
