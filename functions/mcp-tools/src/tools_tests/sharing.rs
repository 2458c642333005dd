//! Sharing one deployment: what callers share through the account stays theirs. Each rule
//! through the same router a client reaches, on the in-memory ports, with paused time for the
//! quota windows.

use serde_json::{json, Value};

use domain::caller::Principal;

use super::{registered_model, world};
use crate::contract::names;

/// trigger_training's arguments for a run on the allowed data, in session `s`.
fn training() -> Value {
    json!({"input_data_uri": "s3://b/train/", "session_id": "s"})
}

fn bob() -> Principal {
    Principal::Bearer { name: "bob".into() }
}

#[tokio::test]
async fn another_callers_model_package_reads_exactly_as_an_unknown_one() {
    let alice = world(&[]);
    let (_, package) = registered_model(&alice).await;
    let bob = alice.as_caller(bob());
    let missing = "arn:aws:sagemaker:us-east-1:123456789012:model-package/p-models/999";
    let theirs = bob
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    let unknown = bob
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": missing}),
        )
        .await;
    assert_eq!(theirs.replace(&package, missing), unknown);
    assert_eq!(
        alice.ports().lineage.calls("ListAssociations"),
        0,
        "nothing walked for bob"
    );
    let mine = alice
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    assert!(!mine["nodes"].as_array().unwrap().is_empty(), "{mine}");
}

#[tokio::test]
async fn arns_of_another_pipeline_region_or_account_are_unknown_before_any_call() {
    let w = world(&[("AWS_REGION", "us-east-1")]);
    for arn in [
        "arn:aws:sagemaker:us-east-1:123456789012:pipeline/other-pipeline/execution/x1",
        "arn:aws:sagemaker:eu-west-1:123456789012:pipeline/p/execution/x1",
    ] {
        let message = w
            .tool_error(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
            .await;
        assert_eq!(
            message,
            format!("no training run \"{arn}\" was found: check the execution_arn that trigger_training returned")
        );
    }
    let package = "arn:aws:sagemaker:eu-west-1:123456789012:model-package/g/1";
    w.tool_error(
        names::GET_MODEL_PROVENANCE,
        json!({"model_package_arn": package}),
    )
    .await;
    assert_eq!(w.ports().pipeline.started().len(), 0);
    assert_eq!(
        w.ports().lineage.calls("DescribeModelPackage"),
        0,
        "SageMaker not asked"
    );
}

#[tokio::test]
async fn an_access_denied_run_is_an_unknown_one_and_aws_text_stays_in_the_log() {
    let w = world(&[]);
    let run = w
        .ok(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"}),
        )
        .await;
    let arn = run["execution_arn"].as_str().unwrap();
    w.ports().pipeline.fail_describe(ports::AwsFailure {
        code: Some("AccessDeniedException".into()),
        message: "User: arn:aws:sts::123456789012:assumed-role/McpToolsRole/x is not authorized"
            .into(),
        retryable: false,
        ambiguous: false,
    });
    let message = w
        .tool_error(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    assert!(message.starts_with("no training run"), "{message}");
    assert!(!message.contains("McpToolsRole") && !message.contains("assumed-role"));
}

#[tokio::test]
async fn training_reads_only_under_the_allowed_prefixes_on_allowed_instances() {
    let w = world(&[
        (
            "TRAINING_INPUT_PREFIXES",
            "s3://b/train/,s3://datasets/shared/",
        ),
        ("TRAINING_INSTANCE_TYPES", "ml.m5.xlarge,ml.g5.xlarge"),
    ]);
    let refused = [
        (
            "s3://b/inputs/",
            "is not under a prefix this deployment allows",
        ),
        (
            "s3://b/train/../inputs/",
            "has a `.`, `..` or empty path segment",
        ),
        (
            "s3://b/train/%2e%2e/inputs/",
            "has a `.`, `..` or empty path segment",
        ),
        ("s3://b/train//x", "has a `.`, `..` or empty path segment"),
        (
            "s3://other-bucket/train/",
            "is not under a prefix this deployment allows",
        ),
    ];
    for (uri, why) in refused {
        let message = w
            .tool_error(
                names::TRIGGER_TRAINING,
                json!({"input_data_uri": uri, "session_id": "s"}),
            )
            .await;
        assert!(message.contains(why), "{uri}: {message}");
        assert!(
            message.contains("training may read only under: s3://b/train/, s3://datasets/shared/"),
            "{message}"
        );
    }
    let message = w
        .tool_error(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/", "session_id": "s", "training_instance_type": "ml.p4d.24xlarge"}),
        )
        .await;
    assert_eq!(
        message,
        "`training_instance_type` \"ml.p4d.24xlarge\" is not one this deployment allows; use one of: ml.m5.xlarge, ml.g5.xlarge"
    );
    // The same refusals in the task form; nothing refused started a run.
    let task = w
        .call_as_task(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/inputs/", "session_id": "s"}),
        )
        .await;
    assert_eq!(task["isError"], true, "{task}");
    assert!(w.ports().pipeline.started().is_empty());
    w.ok(
        names::TRIGGER_TRAINING,
        json!({"input_data_uri": "s3://datasets/shared/intents/", "session_id": "s", "training_instance_type": "ml.g5.xlarge"}),
    )
    .await;
    assert_eq!(w.ports().pipeline.started().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_new_keys_submit_reads_nothing_and_replays_under_the_limit_give_their_count_back() {
    let w = world(&[("CALLER_SUBMITS_PER_MINUTE", "2")]);
    let keyed = json!({"document": "a", "idempotency_key": "k"});
    w.ok(names::SUBMIT_JOB, keyed.clone()).await;
    // The count and the reservation are written unread; the submit's record is the third write.
    assert_eq!(w.ports().jobs.calls(), (0, 3));
    for _ in 0..3 {
        let replay = w.ok(names::SUBMIT_JOB, keyed.clone()).await;
        assert_eq!(replay["idempotent_replay"], true);
    }
    assert_eq!(w.ports().endpoint.invocations(), 1);
    // Each replay gave its count back: one more new job fits the minute, then no more.
    w.ok(names::SUBMIT_JOB, json!({"document": "b"})).await;
    let refused = w
        .tool_error(names::SUBMIT_JOB, json!({"document": "c"}))
        .await;
    assert!(refused.starts_with("Quota reached"), "{refused}");
}

#[tokio::test(start_paused = true)]
async fn submits_over_the_quota_start_nothing_and_say_when_to_come_back() {
    let w = world(&[("CALLER_SUBMITS_PER_MINUTE", "2")]);
    for n in 0..2 {
        w.ok(names::SUBMIT_JOB, json!({"document": format!("doc {n}")}))
            .await;
    }
    let (reads, writes) = w.ports().jobs.calls();
    let message = w
        .tool_error(names::SUBMIT_JOB, json!({"document": "one too many"}))
        .await;
    assert!(
        message.starts_with("Quota reached: each caller may submit 2 jobs per minute. Nothing was submitted; try again in "),
        "{message}"
    );
    // One refused conditional write of the counter, and nothing else: no job item, no upload,
    // no invoke.
    assert_eq!(w.ports().jobs.calls(), (reads, writes + 1));
    assert_eq!(w.ports().endpoint.invocations(), 2);
    // The task form counts the same.
    let task = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "as a task"}))
        .await;
    assert_eq!(task["isError"], true, "{task}");
    // Another caller is not affected; a replay of a key is never counted.
    let bob = w.as_caller(bob());
    bob.ok(
        names::SUBMIT_JOB,
        json!({"document": "bob's", "idempotency_key": "k"}),
    )
    .await;
    bob.ok(names::SUBMIT_JOB, json!({"document": "bob's"}))
        .await;
    let before = w.ports().jobs.calls();
    let replay = bob
        .ok(
            names::SUBMIT_JOB,
            json!({"document": "bob's", "idempotency_key": "k"}),
        )
        .await;
    assert_eq!(replay["idempotent_replay"], true);
    // Bob is at his limit: the count's refused write, then one read of the key's job, and the
    // submit answers from that read with no further call.
    assert_eq!(w.ports().jobs.calls(), (before.0 + 1, before.1 + 1));
    // The window ends and the count starts again.
    tokio::time::advance(std::time::Duration::from_secs(61)).await;
    w.ok(names::SUBMIT_JOB, json!({"document": "next minute"}))
        .await;
}

#[tokio::test(start_paused = true)]
async fn runs_over_the_quota_start_nothing() {
    let w = world(&[("CALLER_RUNS_PER_HOUR", "1")]);
    let args =
        json!({"input_data_uri": "s3://b/train/", "session_id": "s", "idempotency_key": "run-1"});
    w.ok(names::TRIGGER_TRAINING, args.clone()).await;
    // Retrying the same key returns the same run and is not counted again... but the hour's
    // one run is taken, so a new one is refused.
    let message = w.tool_error(names::TRIGGER_TRAINING, training()).await;
    assert!(
        message.starts_with("Quota reached: each caller may start 1 training runs per hour. Nothing was started; try again in "),
        "{message}"
    );
    assert_eq!(w.ports().pipeline.started().len(), 1);
    w.as_caller(bob())
        .ok(names::TRIGGER_TRAINING, training())
        .await;
}

#[tokio::test(start_paused = true)]
async fn long_waits_are_held_to_the_quota_and_free_their_place() {
    let w = world(&[("CALLER_WAITS_MAX", "1")]);
    let job = w.ok(names::SUBMIT_JOB, json!({"document": "slow"})).await;
    let id = job["inference_id"].as_str().unwrap().to_owned();
    let waiting = {
        let w = w.as_caller(Principal::Local);
        let id = id.clone();
        tokio::spawn(async move {
            w.ok(
                names::CHECK_JOB_STATUS,
                json!({"inference_id": id, "wait_secs": 10}),
            )
            .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 5}),
        )
        .await;
    assert!(
        message.starts_with("Quota reached: each caller may hold 1 waits at once."),
        "{message}"
    );
    // Without a wait, the status is read as always; another caller may wait.
    w.ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    let bobs = w
        .as_caller(bob())
        .ok(names::SUBMIT_JOB, json!({"document": "b"}))
        .await;
    w.as_caller(bob())
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": bobs["inference_id"], "wait_secs": 1}),
        )
        .await;
    assert_eq!(waiting.await.unwrap()["status"], "pending");
    // The wait ended: its place is free again.
    w.ok(
        names::CHECK_JOB_STATUS,
        json!({"inference_id": id, "wait_secs": 1}),
    )
    .await;
}

#[tokio::test]
async fn a_long_argument_is_cut_in_the_answer() {
    let w = world(&[]);
    let long = "x".repeat(100_000);
    for (tool, args) in [
        (
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": long, "session_id": "s"}),
        ),
        (names::CHECK_TRAINING_STATUS, json!({"execution_arn": long})),
        (
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": long}),
        ),
        (
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "a", "wait_secs": long}),
        ),
        (names::SUBMIT_JOB, json!({"document": "a", long.clone(): 1})),
    ] {
        let message = w.tool_error(tool, args).await;
        assert!(message.len() < 800, "{tool}: {} characters", message.len());
        assert!(!message.contains(&"x".repeat(201)), "{tool}");
    }
}

#[tokio::test]
async fn a_stack_without_a_pipeline_serves_no_training_tools() {
    let w = world(&[("PIPELINE_NAME", "")]);
    let mut served: Vec<String> = w
        .tools
        .served()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    served.sort();
    assert_eq!(
        served,
        [
            names::CHECK_JOB_STATUS,
            names::GET_MODEL_PROVENANCE,
            names::SUBMIT_JOB
        ]
    );
    let args = training();
    let called = crate::direct::call_tool(
        w.tools.clone(),
        Principal::Local,
        names::TRIGGER_TRAINING,
        args.as_object().cloned(),
        None,
    )
    .await;
    let message = called.unwrap_err().message;
    // No catalog here: no hint of one, only what is served.
    assert!(
        message.starts_with("no tool is called \"trigger_training\"; the tools are: "),
        "{message}"
    );
    assert!(
        message.contains("submit_job") && !message.contains("catalog"),
        "{message}"
    );
    let task = crate::direct::request(
        w.tools.clone(),
        Principal::Local,
        "tools/call",
        json!({"name": names::TRIGGER_TRAINING, "arguments": args,
               "_meta": {"io.modelcontextprotocol/clientCapabilities":
                         {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}),
        None,
    )
    .await;
    assert!(task.is_err(), "no task for a tool not served: {task:?}");
    assert!(w.ports().pipeline.started().is_empty());
}

#[tokio::test]
async fn a_bad_pipeline_parameter_map_fails_trigger_training_only() {
    let w = world(&[("PIPELINE_PARAMETERS", "max_epochs=Epochs")]);
    let message = w.tool_error(names::TRIGGER_TRAINING, training()).await;
    assert!(
        message.contains("PIPELINE_PARAMETERS") && message.contains("Nothing was started"),
        "{message}"
    );
    assert!(
        !message.contains("max_epochs=Epochs"),
        "the operator's setting is for the log"
    );
    w.ok(names::SUBMIT_JOB, json!({"document": "still served"}))
        .await;
}

#[tokio::test]
async fn a_submit_to_an_endpoint_at_zero_says_the_first_outcome_waits() {
    let w = world(&[]);
    w.ports().endpoint.set_instances(Some(0));
    let job = w.ok(names::SUBMIT_JOB, json!({"document": "cold"})).await;
    let message = job["message"].as_str().unwrap();
    assert!(message.contains("scaled to zero"), "{message}");
    w.ports().endpoint.set_instances(Some(2));
    let warm = w.ok(names::SUBMIT_JOB, json!({"document": "warm"})).await;
    assert!(warm.get("message").is_none(), "{warm}");
}
