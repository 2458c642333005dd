//! The contract's checks, without a server.

use super::*;
use crate::config::{PipelineParameters, ToolsConfig};
use domain::caller::Caller;
use domain::caller::Owner;
use domain::caller::Principal;
use ports::AwsFailure;
use serde_json::{json, Value};
use usecases::training::RunParameter;

fn caller() -> Caller {
    Principal::Local.caller()
}

fn owner() -> Owner {
    caller().owner
}

fn test_config() -> ToolsConfig {
    let vars = [
        ("RESULTS_TABLE", "r"),
        ("PIPELINE_RESULTS_TABLE", "p"),
        ("IO_BUCKET", "b"),
        ("ASYNC_ENDPOINT_NAME", "ep"),
        ("PIPELINE_NAME", "pl"),
    ];
    ToolsConfig::from_env(&entry::config::Env::from_lookup(move |k| {
        vars.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }))
    .unwrap()
}

fn args(v: Value) -> SubmitJobArgs {
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_document_becomes_the_inputs_of_the_uploaded_object() {
    let s = args(json!({"document": "hello", "options": {"top_k": 3}}))
        .submission(&owner(), "ep", "b", 3600)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&s.input).unwrap(),
        json!({"inputs": "hello", "parameters": {"top_k": 3}})
    );
    assert_eq!(
        (s.invocation_timeout_secs, s.request_ttl_secs),
        (300, 3600),
        "the deployment's default TTL"
    );
    assert_eq!(s.inference_id.as_str().len(), 36);
    assert_eq!(s.input_location, None, "a small input goes inline");
    let keyed = args(json!({"document": "hello", "idempotency_key": "k"}))
        .submission(&owner(), "ep", "b", 3600)
        .unwrap();
    assert_eq!(
        keyed.inference_id,
        domain::job::inference_id_for_key(&owner(), "ep", "k")
    );
    let p = args(json!({"payload": {"a": 1}}))
        .submission(&owner(), "ep", "b", 3600)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&p.input).unwrap(),
        json!({"inputs": {"a": 1}})
    );
}

#[test]
fn each_bad_argument_is_named() {
    let cases = [
        (json!({}), "give one of `document`"),
        (json!({"document": "a", "payload": {}}), "not both"),
        (json!({"document": "  "}), "`document` is empty"),
        (
            json!({"document": "a", "invocation_timeout_secs": 0}),
            "`invocation_timeout_secs` is 0",
        ),
        (
            json!({"document": "a", "invocation_timeout_secs": 3601}),
            "`invocation_timeout_secs` is 3601",
        ),
        (
            json!({"document": "a", "request_ttl_secs": 59}),
            "`request_ttl_secs` is 59",
        ),
        (
            json!({"document": "a", "request_ttl_secs": 21601}),
            "`request_ttl_secs` is 21601",
        ),
        (
            json!({"document": "a", "invocation_timeout_secs": 400, "request_ttl_secs": 600}),
            "at least twice",
        ),
        (
            json!({"document": "a", "idempotency_key": ""}),
            "`idempotency_key`",
        ),
    ];
    for (a, expected) in cases {
        let err = args(a.clone())
            .submission(&owner(), "ep", "b", 3600)
            .unwrap_err();
        assert!(err.message.contains(expected), "{a}: {err}");
    }
    let big = args(json!({"document": "x".repeat(MAX_INPUT_BYTES)}))
        .submission(&owner(), "ep", "b", 3600)
        .unwrap_err();
    assert!(big.message.contains("the limit is 4194304 bytes"), "{big}");
    assert!(
        serde_json::from_value::<SubmitJobArgs>(json!({"document": "a", "endpoint": "x"})).is_err()
    );
}

#[test]
fn training_parameters_are_only_those_given_and_checked() {
    let t: TriggerTrainingArgs =
        serde_json::from_value(json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"}))
            .unwrap();
    let names = PipelineParameters::default();
    assert_eq!(
        t.parameters(&names).unwrap(),
        vec![RunParameter::new(
            "input_data_uri",
            "InputDataUri",
            "s3://b/train/"
        )]
    );
    let all: TriggerTrainingArgs = serde_json::from_value(
        json!({"input_data_uri": "s3://b/train/t", "session_id": "s-1",
        "max_epochs": 5, "accuracy_threshold": 0.9, "training_instance_type": "ml.m5.xlarge"}),
    )
    .unwrap();
    assert_eq!(all.parameters(&names).unwrap().len(), 4);
    for (bad, expected) in [
        (
            json!({"input_data_uri": "/tmp/x", "session_id": "s"}),
            "input_data_uri",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "a;session_id=b"}),
            "session_id",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": ""}),
            "session_id",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": 0}),
            "max_epochs",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "accuracy_threshold": 1.5}),
            "accuracy_threshold",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "training_instance_type": "m5.large"}),
            "training_instance_type",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_parallel_steps": 0}),
            "max_parallel_steps",
        ),
        (
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "idempotency_key": ""}),
            "idempotency_key",
        ),
    ] {
        let t: TriggerTrainingArgs = serde_json::from_value(bad.clone()).unwrap();
        let config = test_config();
        assert!(
            t.validate(&config, &caller())
                .unwrap_err()
                .message
                .contains(expected),
            "{bad}"
        );
    }
}

#[test]
fn aws_errors_say_which_call_and_whether_to_retry() {
    let throttled = AwsFailure {
        code: Some("ThrottlingException".into()),
        message: "Rate exceeded".into(),
        retryable: true,
        ambiguous: false,
    };
    let e = ToolError::aws("SageMaker InvokeEndpointAsync", &throttled);
    assert_eq!(e.message, "SageMaker InvokeEndpointAsync failed (ThrottlingException). This is transient (throttling or a service error): retrying the same call may succeed.");
    assert!(
        !e.message.contains("Rate exceeded"),
        "AWS's text stays in the log"
    );
    let missing = AwsFailure {
        code: Some("ValidationError".into()),
        message: "Endpoint x not found".into(),
        retryable: false,
        ambiguous: false,
    };
    assert!(ToolError::aws("SageMaker InvokeEndpointAsync", &missing)
        .message
        .ends_with("Retrying the same call will not help."));
}

#[test]
fn a_jobs_status_is_one_of_four_words_in_the_output_schemas() {
    for schema in [
        schemars::schema_for!(JobStatusOutput),
        schemars::schema_for!(SubmitJobOutput),
    ] {
        let schema = serde_json::to_value(schema).unwrap();
        assert_eq!(
            schema["properties"]["status"]["enum"],
            json!(["pending", "completed", "failed", "cancelled"]),
            "{schema}"
        );
    }
    assert_eq!(
        serde_json::to_value(JobState::from(domain::job::JobStatus::Cancelled)).unwrap(),
        json!("cancelled")
    );
}

#[test]
fn run_and_step_statuses_list_sagemakers_words_and_admit_a_later_one() {
    use domain::pipeline_status::{ExecutionStatus, RunStatus, StepState};
    let run_words = json!([
        "Executing",
        "Stopping",
        "Succeeded",
        "Failed",
        "Stopped",
        "CompletedWithFailures"
    ]);
    let status_of = |schema: serde_json::Value, pointer: &str| {
        let status = schema.pointer(pointer).cloned().unwrap_or_default();
        assert_eq!(status["anyOf"][1]["type"], "string", "{schema}");
        status["anyOf"][0]["enum"].clone()
    };
    let status = serde_json::to_value(schemars::schema_for!(TrainingStatusOutput)).unwrap();
    assert_eq!(status_of(status.clone(), "/properties/status"), run_words);
    assert_eq!(
        status_of(status, "/$defs/StepView/properties/status"),
        json!([
            "Starting",
            "Executing",
            "Stopping",
            "Stopped",
            "Failed",
            "Succeeded"
        ])
    );
    let trigger = serde_json::to_value(schemars::schema_for!(TriggerTrainingOutput)).unwrap();
    assert_eq!(status_of(trigger, "/properties/status"), run_words);
    let result = serde_json::to_value(schemars::schema_for!(TrainingResultOutput)).unwrap();
    let recorded = status_of(result, "/$defs/RunView/properties/status");
    assert_eq!(recorded[0], "pending");
    assert_eq!(
        recorded.as_array().unwrap()[1..],
        run_words.as_array().unwrap()[..]
    );
    // A word SageMaker adds later goes out and comes back as written.
    let later = "Paused";
    let step: StepState = serde_json::from_value(json!(later)).unwrap();
    let run: RunStatus = serde_json::from_value(json!(later)).unwrap();
    let execution: ExecutionStatus = serde_json::from_value(json!(later)).unwrap();
    assert_eq!(serde_json::to_value(&step).unwrap(), json!(later));
    assert_eq!(serde_json::to_value(&run).unwrap(), json!(later));
    assert_eq!(serde_json::to_value(&execution).unwrap(), json!(later));
}

#[test]
fn the_owner_where_approvers_answer_is_told_so_in_the_words_the_task_uses() {
    let refused = ToolError::from(usecases::approval::ApprovalError::OwnRun);
    assert_eq!(refused.message, crate::wording::OWN_RUN);
}
