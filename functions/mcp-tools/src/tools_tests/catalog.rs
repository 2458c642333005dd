//! A catalog's models and pipelines as tools: listed with their own schemas, each call a job
//! on its own endpoint or a run of its own pipeline under the pipeline's parameter names, a
//! refused argument stores, invokes and starts nothing.

use super::*;
use crate::contract::Access;
use ports::InvokeInput;

fn listed(w: &World) -> Vec<rmcp::model::Tool> {
    w.tools.served()
}

#[tokio::test]
async fn the_catalogs_models_are_listed_in_place_of_submit_job_with_their_own_schemas() {
    let w = catalog_world();
    let tools = listed(&w);
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in ["summarize_document", "score_churn_risk", "check_job_status"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    for gone in [names::SUBMIT_JOB, names::TRIGGER_TRAINING] {
        assert!(!names.contains(&gone), "{gone} still in {names:?}");
    }
    for generic in [names::CHECK_TRAINING_STATUS, names::CHECK_TRAINING_RESULT] {
        assert!(names.contains(&generic), "{generic} not in {names:?}");
    }
    let summarize = tools
        .iter()
        .find(|t| t.name == "summarize_document")
        .unwrap();
    assert_eq!(summarize.title.as_deref(), Some("Summarize a document"));
    assert!(summarize
        .description
        .as_deref()
        .unwrap()
        .starts_with("Summarize a plain-text document"));
    let properties = summarize.input_schema["properties"].as_object().unwrap();
    let mut argument_names: Vec<&str> = properties.keys().map(String::as_str).collect();
    argument_names.sort_unstable();
    assert_eq!(
        argument_names,
        [
            "document",
            "idempotency_key",
            "invocation_timeout_secs",
            "max_sentences",
            "request_ttl_secs"
        ]
    );
    assert_eq!(properties["max_sentences"]["maximum"], 20);
    assert_eq!(summarize.input_schema["required"], json!(["document"]));
    // Answered as submit_job answers: the same output schema, a tool that starts work.
    let submit_job = Tools::<FakePorts>::definitions()
        .into_iter()
        .find(|t| t.name == names::SUBMIT_JOB)
        .unwrap();
    assert_eq!(summarize.output_schema, submit_job.output_schema);
    assert_eq!(
        summarize.annotations.as_ref().unwrap().read_only_hint,
        Some(false)
    );
    let scoped = w.tools.scoped_tools();
    let (approve, write) = (Access::Approve, Access::Write);
    assert_eq!(
        scoped,
        [
            ("answer_training_input".to_owned(), approve),
            ("approve_model_package".to_owned(), approve),
            ("retrain_intent_classifier".to_owned(), write),
            ("score_churn_risk".to_owned(), write),
            ("summarize_document".to_owned(), write)
        ]
    );
}

#[tokio::test]
async fn a_call_is_a_job_on_the_tools_endpoint_with_the_arguments_as_its_body() {
    let w = catalog_world();
    let out = w
        .ok(
            "summarize_document",
            json!({"document": "Q3 revenue rose 12%.", "max_sentences": "3",
                   "idempotency_key": "q3", "invocation_timeout_secs": 120}),
        )
        .await;
    assert_eq!(out["status"], "pending");
    let id = out["inference_id"].as_str().unwrap();
    let [request] = &w.ports().endpoint.requests()[..] else {
        panic!("one invoke")
    };
    assert_eq!(request.endpoint_name, "mcp-doc-processor-async");
    assert_eq!(
        (request.content_type.as_str(), request.accept.as_deref()),
        ("application/json", Some("application/json"))
    );
    // The common arguments are the tool's, not the model's; "3" was coerced to its schema's type.
    let InvokeInput::Inline(body) = &request.input else {
        panic!("{request:?}")
    };
    assert_eq!(
        serde_json::from_slice::<Value>(body).unwrap(),
        json!({"document": "Q3 revenue rose 12%.", "max_sentences": 3})
    );
    // The catalog's request TTL (3600) and the call's timeout.
    assert_eq!(
        (request.invocation_timeout_secs, request.request_ttl_secs),
        (120, 3600)
    );
    let job = w.ports().jobs.job(id).unwrap();
    assert_eq!(
        job.endpoint_name.as_deref(),
        Some("mcp-doc-processor-async")
    );
    // The generic status check reads it.
    let status = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(status["status"], "pending");
    // The same key replays the same job.
    let again = w
        .ok(
            "summarize_document",
            json!({"document": "Q3 revenue rose 12%.", "max_sentences": 3, "idempotency_key": "q3"}),
        )
        .await;
    assert_eq!(again["inference_id"], id);
    assert_eq!(w.ports().endpoint.invocations(), 1);
}

#[tokio::test]
async fn the_second_model_gets_its_own_endpoint_and_no_accept_unless_the_catalog_says() {
    let w = catalog_world();
    let customers = json!([{"customer_id": "C0012345", "plan": "team", "tenure_months": 14,
                            "monthly_spend_usd": 420.5}]);
    w.ok("score_churn_risk", json!({"customers": customers}))
        .await;
    let request = &w.ports().endpoint.requests()[0];
    assert_eq!(request.endpoint_name, "mcp-churn-scorer-async");
    assert_eq!(request.accept, None);
    assert_eq!(request.invocation_timeout_secs, 300);
}

#[tokio::test]
async fn a_refused_argument_names_its_path_and_rule_and_stores_and_invokes_nothing() {
    let w = catalog_world();
    let message = w
        .tool_error(
            "score_churn_risk",
            json!({"customers": [{"customer_id": "C0012345", "plan": "gold",
                                  "tenure_months": 14, "monthly_spend_usd": 1}]}),
        )
        .await;
    assert!(
        message.starts_with("`customers/0/plan`: value must be one of 'free', 'team'"),
        "{message}"
    );
    assert!(
        message.ends_with("Nothing was sent to the model."),
        "{message}"
    );
    let message = w
        .tool_error(
            "summarize_document",
            json!({"document": "x", "tone": "warm"}),
        )
        .await;
    assert!(
        message
            .starts_with("unknown argument \"tone\"; this tool takes: document, idempotency_key"),
        "{message}"
    );
    let message = w
        .tool_error(
            "summarize_document",
            json!({"document": "x", "invocation_timeout_secs": 0}),
        )
        .await;
    assert!(
        message.contains("`invocation_timeout_secs` is 0"),
        "{message}"
    );
    assert_eq!(w.ports().jobs.calls(), (0, 0), "nothing read or written");
    assert_eq!(w.ports().endpoint.invocations(), 0);
    assert!(w.ports().objects.is_empty());
}

#[tokio::test]
async fn an_oversized_argument_is_refused_by_its_size_or_its_bound_and_starts_nothing() {
    let w = catalog_world();
    let message = w
        .tool_error(
            "score_churn_risk",
            json!({"customers": vec![json!({}); 300_000]}),
        )
        .await;
    assert_eq!(
        message,
        "`customers`: maximum 500 items required, but got 300000 items. \
         Nothing was sent to the model."
    );
    // The size before the schema: the document's maxLength is not what refuses it.
    let message = w
        .tool_error(
            "summarize_document",
            json!({"document": "x".repeat(crate::contract::MAX_INPUT_BYTES)}),
        )
        .await;
    assert!(
        message.starts_with(
            "the arguments: more than 4194304 bytes as JSON; the limit is 4194304 bytes (4 MiB)"
        ),
        "{message}"
    );
    let message = w
        .tool_error(
            RETRAIN,
            json!({"session_id": "s", "training_data": "s".repeat(crate::contract::MAX_INPUT_BYTES)}),
        )
        .await;
    assert!(message.contains("the limit is 4194304 bytes"), "{message}");
    assert_eq!(w.ports().jobs.calls(), (0, 0), "nothing read or written");
    assert_eq!(w.ports().endpoint.invocations(), 0);
    assert!(w.ports().objects.is_empty());
    assert!(w.ports().pipeline.started().is_empty());
}

#[tokio::test]
async fn a_catalog_tools_task_form_is_a_job_task() {
    let w = catalog_world();
    let created = w
        .call_as_task("summarize_document", json!({"document": "a"}))
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let task_id = created["taskId"].as_str().unwrap();
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    assert_eq!(
        w.ports().endpoint.requests()[0].endpoint_name,
        "mcp-doc-processor-async"
    );
    w.notify(inference_id, "Completed", Some(json!({"summary": "a"})))
        .await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["result"],
        json!({"summary": "a"})
    );
    let refused = w
        .call_as_task("summarize_document", json!({"document": ""}))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
}

const RETRAIN: &str = "retrain_intent_classifier";

#[tokio::test]
async fn a_pipeline_tool_is_listed_with_its_arguments_and_the_common_ones() {
    let w = catalog_world();
    let tools = listed(&w);
    let retrain = tools.iter().find(|t| t.name == RETRAIN).unwrap();
    let properties = retrain.input_schema["properties"].as_object().unwrap();
    let mut argument_names: Vec<&str> = properties.keys().map(String::as_str).collect();
    argument_names.sort_unstable();
    assert_eq!(
        argument_names,
        [
            "epochs",
            "idempotency_key",
            "min_accuracy",
            "session_id",
            "training_data"
        ]
    );
    // Nothing is required: the pipeline has its defaults, and a run without a session gets one.
    assert_eq!(retrain.input_schema.get("required"), None);
    let session = properties["session_id"]["description"].as_str().unwrap();
    assert!(session.contains("Optional"), "{session}");
    assert_eq!(properties["epochs"]["maximum"], 50);
    let trigger = Tools::<FakePorts>::definitions()
        .into_iter()
        .find(|t| t.name == names::TRIGGER_TRAINING)
        .unwrap();
    assert_eq!(retrain.output_schema, trigger.output_schema);
}

#[tokio::test]
async fn a_pipeline_tool_starts_its_pipeline_under_the_pipelines_own_parameter_names() {
    let w = catalog_world();
    let out = w
        .ok(
            RETRAIN,
            json!({"session_id": "s-9", "training_data": "s3://io-bucket/train/tickets.csv",
                   "epochs": "3", "min_accuracy": 0.92, "idempotency_key": "nightly"}),
        )
        .await;
    let execution_arn = out["execution_arn"].as_str().unwrap();
    assert!(
        execution_arn.contains(":pipeline/mcp-intent-classifier-pipeline/execution/"),
        "{execution_arn}"
    );
    let [started] = &w.ports().pipeline.started()[..] else {
        panic!("one run")
    };
    assert_eq!(started.pipeline_name, "mcp-intent-classifier-pipeline");
    let mut parameters = started.parameters.clone();
    parameters.sort();
    assert_eq!(
        parameters,
        [
            ("AccuracyThreshold".to_owned(), "0.92".to_owned()),
            (
                "InputDataUri".to_owned(),
                "s3://io-bucket/train/tickets.csv".to_owned()
            ),
            ("MaxEpochs".to_owned(), "3".to_owned()),
        ]
    );
    // The generic tools read the run: it is of one of the deployment's pipelines.
    let status = w
        .ok(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": execution_arn}),
        )
        .await;
    assert_eq!(status["execution_arn"], execution_arn);
    let runs = w
        .ok(names::CHECK_TRAINING_RESULT, json!({"session_id": "s-9"}))
        .await;
    assert_eq!(runs["runs"][0]["execution_arn"], execution_arn);
    // The same key, the same run.
    let again = w
        .ok(
            RETRAIN,
            json!({"session_id": "s-9", "training_data": "s3://io-bucket/train/tickets.csv",
                   "epochs": 3, "min_accuracy": 0.92, "idempotency_key": "nightly"}),
        )
        .await;
    assert_eq!(again["execution_arn"], execution_arn);
    // A run of a pipeline the deployment does not start is unknown.
    let other = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/1";
    let message = w
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": other}),
        )
        .await;
    assert!(message.starts_with("no training run"), "{message}");
}

#[tokio::test]
async fn a_pipeline_tools_refusals_start_nothing() {
    let w = catalog_world();
    let cases = [
        (
            json!({"session_id": "s", "training_data": "s3://other-bucket/train/x.csv"}),
            "`training_data` \"s3://other-bucket/train/x.csv\" is not under a prefix this deployment allows",
        ),
        (
            json!({"session_id": "s", "epochs": 99}),
            "`epochs` is 99; it must be from 1 to 50",
        ),
        (json!({"session_id": 7}), "`session_id` must be a string"),
        (
            json!({"session_id": "s", "MaxEpochs": 3}),
            "unknown argument \"MaxEpochs\"",
        ),
    ];
    for (arguments, expected) in cases {
        let message = w.tool_error(RETRAIN, arguments.clone()).await;
        assert!(message.contains(expected), "{arguments}: {message}");
    }
    assert!(w.ports().pipeline.started().is_empty());
}

#[tokio::test]
async fn a_run_without_a_session_gets_one_named_in_the_answer_and_kept_by_a_retry() {
    let w = catalog_world();
    let first = w
        .ok(RETRAIN, json!({"epochs": 3, "idempotency_key": "nightly"}))
        .await;
    let session = first["session_id"].as_str().unwrap().to_owned();
    assert!(session.starts_with("run-"), "{session}");
    // The same key: the same run, in the same session.
    let again = w
        .ok(RETRAIN, json!({"epochs": 3, "idempotency_key": "nightly"}))
        .await;
    assert_eq!(
        (&again["session_id"], &again["execution_arn"]),
        (&first["session_id"], &first["execution_arn"])
    );
    // Without a key, a session of its own each time.
    let other = w.ok(RETRAIN, json!({"epochs": 3})).await;
    assert_ne!(other["session_id"], first["session_id"]);
    // The session named is where check_training_result finds the run.
    let runs = w
        .ok(names::CHECK_TRAINING_RESULT, json!({"session_id": session}))
        .await;
    assert_eq!(runs["runs"][0]["execution_arn"], first["execution_arn"]);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_parameter_the_catalog_requires_is_refused_when_missing_and_listed_as_required() {
    let catalog = r#"{"pipeline_tools": [{"name": "retrain_on", "description": "Retrain on data.",
        "pipeline": "p2", "parameters": {
            "data": {"parameter": "InputDataUri", "schema": {"type": "string"}, "required": true},
            "epochs": {"parameter": "MaxEpochs", "schema": {"type": "integer"}}}}]}"#;
    let w = world_with(
        &[("TRAINING_INPUT_PREFIXES", "s3://io-bucket/train/")],
        Some(crate::catalog::Catalog::parse(catalog).unwrap()),
    );
    let tool = listed(&w)
        .into_iter()
        .find(|t| t.name == "retrain_on")
        .unwrap();
    assert_eq!(tool.input_schema["required"], json!(["data"]));
    let message = w.tool_error("retrain_on", json!({"epochs": 3})).await;
    assert!(
        message.contains("data") && message.contains("Nothing was started"),
        "{message}"
    );
    assert!(w.ports().pipeline.started().is_empty());
    w.ok(
        "retrain_on",
        json!({"data": "s3://io-bucket/train/x.csv", "epochs": 3}),
    )
    .await;
    assert_eq!(w.ports().pipeline.started().len(), 1);
}

#[tokio::test]
async fn submit_job_on_a_catalog_deployment_names_the_tools_served() {
    let w = catalog_world();
    let called = crate::direct::call_tool(
        w.tools.clone(),
        Principal::Local,
        names::SUBMIT_JOB,
        json!({"document": "x"}).as_object().cloned(),
        None,
    )
    .await;
    let message = called.unwrap_err().message;
    assert!(
        message
            .starts_with("no tool is called \"submit_job\" (this deployment serves a tool catalog"),
        "{message}"
    );
    for served in [
        "summarize_document",
        "score_churn_risk",
        RETRAIN,
        names::CHECK_JOB_STATUS,
    ] {
        assert!(message.contains(served), "{served} not in {message}");
    }
    // The caller's name is quoted at most 200 characters, never whole.
    let long = "x".repeat(5_000);
    let called =
        crate::direct::call_tool(w.tools.clone(), Principal::Local, &long, None, None).await;
    let message = called.unwrap_err().message;
    assert!(
        !message.contains(&"x".repeat(201)),
        "{} characters",
        message.len()
    );
    assert!(w.ports().jobs.calls() == (0, 0));
}

#[tokio::test]
async fn a_pipeline_tools_task_form_is_a_run_task() {
    let w = catalog_world();
    let created = w
        .call_as_task(RETRAIN, json!({"session_id": "s-task", "epochs": 2}))
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created["taskId"].as_str().unwrap().starts_with("run."));
    assert_eq!(
        w.ports().pipeline.started()[0].pipeline_name,
        "mcp-intent-classifier-pipeline"
    );
}

/// A pipeline tool whose arguments are free strings: only the allow-lists hold what it sends.
fn open_catalog_world() -> World {
    let catalog = r#"{"pipeline_tools": [{"name": "retrain_any", "description": "Retrain on anything.",
        "pipeline": "p2", "parameters": {
            "data": {"parameter": "InputDataUri", "schema": {"type": "string"}},
            "compute": {"parameter": "TrainingInstanceType", "schema": {"type": "string"}},
            "note": {"parameter": "RunNote", "schema": {"type": "string"}}}}]}"#;
    world_with(
        &[
            ("TRAINING_INPUT_PREFIXES", "s3://io-bucket/train/"),
            ("TRAINING_INSTANCE_TYPES", "ml.m5.xlarge,ml.g5.xlarge"),
        ],
        Some(crate::catalog::Catalog::parse(catalog).unwrap()),
    )
}

#[tokio::test]
async fn a_pipeline_tools_every_value_is_held_to_the_allow_lists_in_every_form() {
    let w = open_catalog_world();
    let prefixes = "training may read only under: s3://io-bucket/train/. Nothing was started.";
    let outside = "is not under a prefix this deployment allows";
    let cases = [
        (
            "data",
            "https://io-bucket.s3.amazonaws.com/inputs/x.csv",
            outside,
        ),
        (
            "data",
            "https://s3.us-east-1.amazonaws.com/other/train/x",
            outside,
        ),
        ("data", "s3a://io-bucket/inputs/x.csv", outside),
        ("data", "S3N://io-bucket/inputs/x.csv", outside),
        (
            "note",
            "https://io-bucket.s3.dualstack.us-east-1.amazonaws.com/inputs/",
            outside,
        ),
        (
            "data",
            "https://io-bucket.s3.amazonaws.com/train/../inputs/x",
            "has a `.`, `..` or empty path segment",
        ),
        (
            "data",
            "https://ap-123456789012.s3-accesspoint.us-east-1.amazonaws.com/train/x",
            "is an S3 access point, not a bucket under a prefix this deployment allows",
        ),
    ];
    let writes = w.ports().jobs.calls().1;
    for (argument, value, why) in cases {
        let message = w
            .tool_error("retrain_any", json!({"session_id": "s", argument: value}))
            .await;
        assert_eq!(
            message,
            format!("`{argument}` {value:?} {why}; {prefixes}"),
            "{value}"
        );
        // The task form too: one place for every run.
        let task = w
            .call_as_task("retrain_any", json!({"session_id": "s", argument: value}))
            .await;
        assert_eq!(task["isError"], true, "{task}");
    }
    for (argument, value) in [
        ("compute", "ml.p5.48xlarge"),
        ("compute", "p5.48xlarge"),
        ("note", "ML.P5.48XLARGE"),
    ] {
        let message = w
            .tool_error("retrain_any", json!({"session_id": "s", argument: value}))
            .await;
        assert_eq!(
            message,
            format!(
                "`{argument}` {value:?} is not one this deployment allows; use one of: \
                 ml.m5.xlarge, ml.g5.xlarge"
            )
        );
    }
    assert!(w.ports().pipeline.started().is_empty(), "nothing started");
    assert!(w.ports().runs.all().is_empty(), "nothing recorded");
    assert_eq!(w.ports().jobs.calls().1, writes, "no quota counted");
    // The same forms under the prefix, on an allowed instance type, start a run.
    w.ok(
        "retrain_any",
        json!({"session_id": "s", "data": "https://s3.amazonaws.com/io-bucket/train/x.csv",
               "compute": "ml.g5.xlarge", "note": "nightly"}),
    )
    .await;
    assert_eq!(w.ports().pipeline.started().len(), 1);
}
