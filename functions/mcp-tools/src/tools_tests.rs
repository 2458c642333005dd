//! Every tool, its task form and `tasks/get` / `tasks/cancel`, through the same rmcp router an
//! MCP client reaches, on the in-memory ports: no emulator. The results asserted are what a
//! client sees (`structuredContent`, `isError`, the text), beside what the ports were asked.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rmcp::model::{CallToolResult, ErrorCode, JsonObject};
use serde_json::{json, Value};

use crate::config::ToolsConfig;
use shared::config::Env;
use shared::domain::caller::Principal;
use shared::domain::job::{JobStatus, Stage};
use shared::domain::notification::{parse_notification, Notification};
use shared::domain::time::{rfc3339, Clock};
use shared::fakes::{
    FakeInvoker, FakePipeline, InvokeFault, MemoryEvents, MemoryJobs, MemoryLineage, MemoryObjects,
    MemoryRuns,
};
use shared::ports::{LineageGraph, ObjectStore};
use shared::usecases::outcome::record_notification;

use crate::contract::names;
use crate::direct::{call_tool, request};
use crate::{Deps, Ports, Tools};

pub(crate) type FakePorts = Ports<
    MemoryJobs,
    MemoryRuns,
    MemoryObjects,
    FakeInvoker,
    FakePipeline,
    MemoryLineage,
    MemoryEvents,
>;

pub(crate) struct World {
    pub deps: Arc<Deps<FakePorts>>,
    pub tools: Tools<FakePorts>,
    /// Who calls: the local principal unless [`World::as_caller`] says otherwise.
    pub principal: Principal,
}

const ENDPOINT: &str = "ep";

/// The tools on fresh fakes, with the settings of `extra` over the required ones, and a clock
/// that follows tokio's (so a paused test moves it).
pub(crate) fn world(extra: &[(&'static str, &'static str)]) -> World {
    let mut vars = vec![
        ("RESULTS_TABLE", "r"),
        ("PIPELINE_RESULTS_TABLE", "p"),
        ("IO_BUCKET", "b"),
        ("ASYNC_ENDPOINT_NAME", ENDPOINT),
        ("PIPELINE_NAME", "p"),
    ];
    vars.extend_from_slice(extra);
    let config = ToolsConfig::from_env(&Env::from_lookup(move |k| {
        vars.iter()
            .rev()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }))
    .unwrap();
    let ports = Ports {
        jobs: MemoryJobs::default(),
        runs: MemoryRuns::default(),
        objects: MemoryObjects::default(),
        endpoint: FakeInvoker::new(ENDPOINT),
        pipeline: FakePipeline::default(),
        lineage: MemoryLineage::default(),
        events: MemoryEvents::default(),
    };
    let (t0, start) = (Utc::now(), tokio::time::Instant::now());
    let clock = Clock::from_fn(move || {
        t0 + chrono::Duration::from_std(start.elapsed()).unwrap_or_default()
    });
    let deps = Arc::new(Deps::new(config, ports, clock));
    World {
        tools: Tools::new(deps.clone()),
        deps,
        principal: Principal::Local,
    }
}

impl World {
    /// The same server and ports, called by someone else.
    pub fn as_caller(&self, principal: Principal) -> World {
        World {
            deps: self.deps.clone(),
            tools: self.tools.clone(),
            principal,
        }
    }

    pub(crate) fn ports(&self) -> &FakePorts {
        &self.deps.ports
    }

    pub async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        call_tool(
            self.tools.clone(),
            self.principal.clone(),
            tool,
            object(arguments),
            None,
        )
        .await
        .unwrap()
    }

    /// A call that must succeed: its structured content.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone()).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{tool} {arguments}: {result:?}"
        );
        let structured = result.structured_content.clone().unwrap();
        // The same JSON as text, for clients that read only the text.
        assert_eq!(
            serde_json::from_str::<Value>(&text(&result)).unwrap(),
            structured
        );
        structured
    }

    /// A call that must be a tool error: its text.
    pub async fn tool_error(&self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{tool} {arguments}: {result:?}"
        );
        text(&result)
    }

    /// A request from a client that declared the tasks extension.
    async fn task_request(
        &self,
        method: &str,
        mut params: Value,
    ) -> Result<Value, rmcp::ErrorData> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        });
        let principal = self.principal.clone();
        request(self.tools.clone(), principal, method, params, None).await
    }

    pub(crate) async fn call_as_task(&self, tool: &str, arguments: Value) -> Value {
        self.task_request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
            .unwrap()
    }

    async fn get_task(&self, task_id: &str) -> Result<Value, rmcp::ErrorData> {
        self.task_request("tasks/get", json!({"taskId": task_id}))
            .await
    }

    async fn cancel_task(&self, task_id: &str) -> Result<Value, rmcp::ErrorData> {
        self.task_request("tasks/cancel", json!({"taskId": task_id}))
            .await
    }

    /// SageMaker's notification of the job's outcome, recorded as notification-handler does.
    async fn notify(&self, inference_id: &str, status: &str, output: Option<Value>) {
        let mut message = json!({
            "awsRegion": "us-east-1",
            "eventTime": rfc3339(self.now()),
            "receivedTime": rfc3339(self.now()),
            "invocationStatus": status,
            "requestParameters": {"endpointName": ENDPOINT, "inputLocation": format!("s3://b/inputs/{inference_id}.json")},
            "responseParameters": {},
            "inferenceId": inference_id,
            "eventVersion": "1.0",
            "eventSource": "aws:sagemaker",
            "eventName": "InferenceResult",
        });
        let output_location = format!("s3://b/outputs/{inference_id}.out");
        match output {
            Some(output) => {
                let location = output_location.parse().unwrap();
                let body = output.to_string().into_bytes();
                self.ports()
                    .objects
                    .put_json(&location, body)
                    .await
                    .unwrap();
                message["responseParameters"] =
                    json!({"contentType": "application/json", "outputLocation": output_location});
            }
            None => message["failureReason"] = json!("ClientError: the model raised an error"),
        }
        let Notification::Outcome(outcome) = parse_notification(&message.to_string()).unwrap()
        else {
            panic!("not an outcome");
        };
        let d = &self.deps;
        let settings = d.settings;
        record_notification(
            &d.ports.jobs,
            &d.ports.objects,
            settings,
            outcome,
            self.now(),
        )
        .await
        .unwrap();
    }

    fn now(&self) -> DateTime<Utc> {
        self.deps.clock.now()
    }
}

fn object(value: Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

// ------------------------------------------------------------------ tools/list

#[test]
fn the_router_serves_exactly_the_named_tools_with_their_schemas() {
    let tools = Tools::<FakePorts>::definitions();
    let mut listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    listed.sort_unstable();
    let mut named = names::ALL.to_vec();
    named.sort_unstable();
    assert_eq!(listed, named);
    for tool in &tools {
        assert!(
            tool.output_schema.is_some(),
            "{} has no outputSchema",
            tool.name
        );
    }
    // Ranges come from the bounds the checks use.
    let check = tools
        .iter()
        .find(|t| t.name == names::CHECK_JOB_STATUS)
        .unwrap();
    let wait = &check.input_schema["properties"]["wait_secs"];
    assert_eq!(
        (wait["minimum"].clone(), wait["maximum"].clone()),
        (json!(0), json!(900))
    );
    assert_eq!(
        wait["description"],
        "Wait up to this many seconds for a pending job to finish: 0 to 20, default 0. A request that \
         carries a progress token (`_meta.progressToken`) may wait up to the function's timeout less \
         10 s, and gets progress notifications while it waits."
    );
    let trigger = tools
        .iter()
        .find(|t| t.name == names::TRIGGER_TRAINING)
        .unwrap();
    let properties = trigger.input_schema["properties"].as_object().unwrap();
    for argument in crate::config::TRAINING_ARGUMENTS {
        assert!(properties.contains_key(argument), "{argument}");
    }
    assert_eq!(properties["accuracy_threshold"]["maximum"], json!(1.0));
}

// ------------------------------------------------------------------ submit_job

#[tokio::test]
async fn submit_job_stores_the_job_before_it_invokes_and_answers_pending() {
    let w = world(&[]);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "hello"})).await;
    let id = out["inference_id"].as_str().unwrap();
    assert_eq!(out["status"], "pending");
    assert_eq!(out["output_location"], format!("s3://b/outputs/{id}.out"));
    assert_eq!(out["failure_location"], format!("s3://b/failures/{id}.out"));
    assert!(out.get("idempotent_replay").is_none());
    let job = w.ports().jobs.job(id).unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Pending, Some(Stage::Invoked))
    );
    assert_eq!(
        job.output_location.as_deref(),
        out["output_location"].as_str()
    );
    assert!(w.ports().objects.has(&format!("s3://b/inputs/{id}.json")));
    assert_eq!(w.ports().endpoint.calls(id), 1);
}

#[tokio::test]
async fn the_same_idempotency_key_returns_the_first_job_and_never_invokes_twice() {
    let w = world(&[]);
    let args = json!({"document": "hello", "idempotency_key": "order-7"});
    let first = w.ok(names::SUBMIT_JOB, args.clone()).await;
    let again = w.ok(names::SUBMIT_JOB, args).await;
    let id = first["inference_id"].as_str().unwrap();
    assert_eq!(again["inference_id"], id);
    assert_eq!(again["output_location"], first["output_location"]);
    assert_eq!(again["submitted_at"], first["submitted_at"]);
    assert_eq!(again["idempotent_replay"], true);
    assert_eq!(w.ports().endpoint.calls(id), 1);
    let conflict = w
        .tool_error(
            names::SUBMIT_JOB,
            json!({"document": "other", "idempotency_key": "order-7"}),
        )
        .await;
    assert!(
        conflict.contains("already used with a different input"),
        "{conflict}"
    );
    assert_eq!(w.ports().endpoint.calls(id), 1);
}

#[tokio::test]
async fn bad_submit_arguments_are_tool_errors_and_touch_nothing() {
    let w = world(&[]);
    for (args, expected) in [
        (json!({}), "give one of `document`"),
        (
            json!({"document": "a", "request_ttl_secs": 59}),
            "`request_ttl_secs` is 59; it must be from 60 to 21600",
        ),
        (
            json!({"document": "a", "invocation_timeout_secs": 2000}),
            "at least twice",
        ),
        (
            json!({"document": "a", "endpoint": "other"}),
            "unknown argument \"endpoint\"",
        ),
    ] {
        let message = w.tool_error(names::SUBMIT_JOB, args.clone()).await;
        assert!(message.contains(expected), "{args}: {message}");
    }
    assert_eq!(w.ports().jobs.calls(), (0, 0));
}

#[tokio::test]
async fn a_refused_invoke_is_a_tool_error_and_the_job_is_failed() {
    let w = world(&[]);
    w.ports().endpoint.fail_next(InvokeFault::Refused);
    let args = json!({"document": "a", "idempotency_key": "k-refused"});
    let message = w.tool_error(names::SUBMIT_JOB, args).await;
    assert!(
        message.contains("was not submitted") && message.contains("ValidationError"),
        "{message}"
    );
    let owner = Principal::Local.caller().owner;
    let id = shared::domain::job::inference_id_for_key(&owner, ENDPOINT, "k-refused");
    let job = w.ports().jobs.job(&id).unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Failed, Some(Stage::Refused))
    );
}

#[tokio::test]
async fn an_ambiguous_invoke_answers_pending_and_says_the_outcome_is_unknown() {
    let w = world(&[]);
    w.ports().endpoint.fail_next(InvokeFault::Ambiguous);
    let out = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    assert_eq!(out["status"], "pending");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("not known"), "{message}");
    let job = w
        .ports()
        .jobs
        .job(out["inference_id"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        (job.status, job.stage),
        (JobStatus::Pending, Some(Stage::Uncertain))
    );
}

// ------------------------------------------------------------------ check_job_status

#[tokio::test]
async fn check_job_status_reports_the_result_inline_or_as_a_url() {
    let w = world(&[]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap();
    let pending = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(pending["status"], "pending");
    assert!(pending.get("result").is_none());
    w.notify(id, "Completed", Some(json!({"label": "ok", "score": 0.93})))
        .await;
    let done = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], json!({"label": "ok", "score": 0.93}));
    assert!(done.get("result_url").is_none());

    w.ports()
        .jobs
        .insert_completed_pointer("big", "s3://b/outputs/big.out");
    let pointer = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": "big"}))
        .await;
    assert_eq!(
        pointer["result_url"],
        "https://presigned.example/b/outputs/big.out"
    );
    assert!(pointer.get("result").is_none());
}

#[tokio::test]
async fn a_failed_job_reports_its_reason() {
    let w = world(&[]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap();
    w.notify(id, "Failed", None).await;
    let failed = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["failure_reason"],
        "ClientError: the model raised an error"
    );
}

#[tokio::test]
async fn an_unknown_id_or_a_bad_wait_is_a_tool_error_that_says_so() {
    let w = world(&[]);
    let message = w
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": "nope"}))
        .await;
    assert!(
        message.starts_with("no job with inference_id \"nope\""),
        "{message}"
    );
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": 21}),
        )
        .await;
    // The test config's function timeout is the default 45 s.
    assert_eq!(
        message,
        "`wait_secs` is 21; without a progress token (`_meta.progressToken`) it must be from 0 to 20; with one, up to 35"
    );
    let message = w
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/e", "wait_secs": 901}),
        )
        .await;
    assert_eq!(message, "`wait_secs` is 901; it must be from 0 to 900");
    let message = w
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": " "}))
        .await;
    assert!(message.contains("`inference_id`"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn wait_secs_returns_as_soon_as_the_outcome_is_recorded() {
    let w = Arc::new(world(&[]));
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap().to_owned();
    let (reads_before, _) = w.ports().jobs.calls();
    let notifier = {
        let (w, id) = (w.clone(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
            w.notify(&id, "Completed", Some(json!({"n": 1}))).await;
        })
    };
    let started = tokio::time::Instant::now();
    let done = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 20}),
        )
        .await;
    notifier.await.unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], json!({"n": 1}));
    // Reads after 0, 0.25, 0.75 and 1.75 s: the fourth sees the outcome recorded at 1.6 s.
    let (reads_after, _) = w.ports().jobs.calls();
    assert_eq!(reads_after - reads_before, 4);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

// ------------------------------------------------------------------ training

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

/// A run triggered through the tool (session `s-1`) that ended registering a model trained on
/// `s3://b/train/`: its execution ARN and model package ARN.
pub(crate) async fn registered_model(w: &World) -> (String, String) {
    let out = w
        .ok(
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"}),
        )
        .await;
    let execution = out["execution_arn"].as_str().unwrap().to_owned();
    let package = w
        .ports()
        .lineage
        .register_model(&execution, "s3://b/train/");
    w.ports().pipeline.succeed_with_model(&execution, &package);
    (execution, package)
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

#[tokio::test]
async fn get_model_provenance_walks_upstream_by_default_and_names_the_run() {
    let w = world(&[]);
    let (execution, package) = registered_model(&w).await;
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    assert_eq!(
        (out["direction"].as_str(), out["max_depth"].as_u64()),
        (Some("upstream"), Some(2))
    );
    let root = &out["root"];
    assert_eq!(root["arn"], package.as_str());
    assert_eq!(root["status"], "Completed");
    assert_eq!(root["approval_status"], "PendingManualApproval");
    assert_eq!(root["group_name"], "p-models");
    assert_eq!(root["generated_by"], execution.as_str());
    assert_eq!(
        root["pipeline_execution"],
        json!({"execution_arn": execution, "pipeline_name": "p", "status": "Succeeded", "session_id": "s-1"})
    );
    let nodes = out["nodes"].as_array().unwrap();
    let mut seen: Vec<(String, u64)> = nodes
        .iter()
        .map(|n| {
            let what = n.get("artifact_type").or(n.get("lineage_type")).unwrap();
            (
                format!("{}:{}", n["kind"].as_str().unwrap(), what.as_str().unwrap()),
                n["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("artifact:Image".to_owned(), 1),
            ("artifact:Model".to_owned(), 1),
            ("trial_component:SageMakerTrainingJob".to_owned(), 2),
        ]
    );
    let model = nodes
        .iter()
        .find(|n| n["artifact_type"] == "Model")
        .unwrap();
    assert!(model["source_uri"]
        .as_str()
        .unwrap()
        .ends_with("model.tar.gz"));
    let edges = out["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 3);
    assert!(edges
        .iter()
        .any(|e| e["association_type"] == "Produced" && e["destination_arn"] == model["arn"]));
    assert_eq!(out["truncated"], false);
    assert!(out.get("message").is_none(), "{out}");
    let text = out.to_string();
    assert!(
        !text.contains("mcp_owner") && !text.contains(Principal::Local.caller().owner.as_str())
    );

    let deep = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "max_depth": 3}),
        )
        .await;
    let data = deep["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["artifact_type"] == "DataSet")
        .expect("the training data at depth 3");
    assert_eq!(
        (data["source_uri"].as_str(), data["depth"].as_u64()),
        (Some("s3://b/train/"), Some(3))
    );
    assert_eq!(deep["nodes"].as_array().unwrap().len(), 4, "the image once");
}

#[tokio::test]
async fn get_model_provenance_downstream_is_what_the_model_fed() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "direction": "downstream", "max_depth": "1"}),
        )
        .await;
    assert_eq!(out["direction"], "downstream");
    let nodes = out["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(
        (nodes[0]["kind"].as_str(), nodes[0]["lineage_type"].as_str()),
        (Some("context"), Some("ModelGroup"))
    );
    assert_eq!(
        out["edges"][0]["source_arn"],
        out["root"]["lineage_arns"][0]
    );
}

#[tokio::test]
async fn get_model_provenance_stops_at_fifty_entities_and_says_so() {
    let w = world(&[]);
    let (_, package) = registered_model(&w).await;
    let lineage = &w.ports().lineage;
    let start = lineage.artifacts_with_source(&package).await.unwrap()[0].clone();
    for i in 0..60 {
        let input = lineage.add_artifact("DataSet", &format!("s3://b/extra/{i}"));
        lineage.associate(&input, &start, "ContributedTo");
    }
    let out = w
        .ok(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package, "max_depth": 1}),
        )
        .await;
    assert_eq!(out["nodes"].as_array().unwrap().len(), 50);
    assert_eq!(out["edges"].as_array().unwrap().len(), 50);
    assert_eq!(out["truncated"], true);
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("smaller max_depth"),
        "{out}"
    );
    assert!(lineage.calls("ListAssociations") <= 25);
}

#[tokio::test]
async fn get_model_provenance_refuses_what_it_cannot_answer() {
    let w = world(&[]);
    let missing = "arn:aws:sagemaker:us-east-1:123456789012:model-package/none/1";
    assert_eq!(
        w.tool_error(names::GET_MODEL_PROVENANCE, json!({"model_package_arn": missing})).await,
        format!("no model package \"{missing}\" was found: check the model_package_arn (check_training_status reports the one a run registered)")
    );
    let group = "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/none";
    let message = w
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": group}),
        )
        .await;
    assert!(
        message.contains("is not a model package ARN") && message.contains("model package group"),
        "{message}"
    );
    for (args, expected) in [
        (
            json!({"model_package_arn": missing, "max_depth": 4}),
            "`max_depth`",
        ),
        (
            json!({"model_package_arn": missing, "max_depth": 0}),
            "`max_depth`",
        ),
        (
            json!({"model_package_arn": missing, "direction": "sideways"}),
            "`direction` must be one of \"upstream\", \"downstream\"; got \"sideways\"",
        ),
        (
            json!({"model_package_arn": "model-1"}),
            "is not a model package ARN",
        ),
        (
            json!({"model_package_arn": missing, "depth": 1}),
            "unknown argument \"depth\"",
        ),
    ] {
        let message = w
            .tool_error(names::GET_MODEL_PROVENANCE, args.clone())
            .await;
        assert!(message.contains(expected), "{args}: {message}");
    }
    assert_eq!(
        w.ports().lineage.calls("DescribeModelPackage"),
        1,
        "bad arguments reach nothing"
    );

    let (_, package) = registered_model(&w).await;
    w.ports().lineage.fail(
        "ListAssociations",
        shared::ports::AwsFailure {
            code: Some("AccessDeniedException".into()),
            message: "not authorized to perform: sagemaker:ListAssociations".into(),
            retryable: false,
            ambiguous: false,
        },
    );
    let message = w
        .tool_error(
            names::GET_MODEL_PROVENANCE,
            json!({"model_package_arn": package}),
        )
        .await;
    assert_eq!(
        message,
        "SageMaker ListAssociations failed (AccessDeniedException). Retrying the same call will \
         not help.",
        "AWS's own text (which names the role) stays in the log"
    );
}

// ------------------------------------------------------------------ tasks

#[tokio::test]
async fn a_job_task_is_working_then_completed_with_the_result() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(
        created["statusMessage"],
        "invoked: SageMaker has queued the request"
    );
    // request 3600 (the deployment's default) + timeout 300 + result TTL 3600 seconds.
    assert_eq!(created["ttlMs"], 7_500_000);
    assert_eq!(created["pollIntervalMs"], 5000);
    let task_id = created["taskId"].as_str().unwrap();
    let (inference_id, secret) = task_id.rsplit_once('.').unwrap();
    assert!(secret.len() >= 32);

    let working = w.get_task(task_id).await.unwrap();
    assert_eq!(working["status"], "working", "{working}");
    w.notify(inference_id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["result"],
        json!({"label": "ok"})
    );
    assert_ne!(done["result"]["isError"], true);
}

#[tokio::test]
async fn a_failed_jobs_task_completes_with_a_tool_error() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    w.notify(inference_id, "Failed", None).await;
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(done["result"]["structuredContent"]["status"], "failed");
}

#[tokio::test]
async fn a_cancelled_job_task_stays_cancelled_when_its_outcome_arrives() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    w.cancel_task(task_id).await.unwrap();
    w.notify(inference_id, "Completed", Some(json!({"late": true})))
        .await;
    let cancelled = w.get_task(task_id).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let job = w.ports().jobs.job(inference_id).unwrap();
    assert_eq!(job.status, JobStatus::Cancelled);
    assert_eq!(job.result, None);
}

#[tokio::test]
async fn an_unknown_or_forged_task_is_invalid_params_with_one_answer() {
    let w = world(&[]);
    let created = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    let forged = format!("{inference_id}.{}", "0".repeat(32));
    let unknown = format!("nope.{}", "0".repeat(32));
    let mut messages = Vec::new();
    for id in [forged.as_str(), unknown.as_str(), "malformed"] {
        let error = w.get_task(id).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}");
        messages.push(error.message.to_string());
        let error = w.cancel_task(id).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}");
    }
    assert!(messages.iter().all(|m| m == &messages[0]), "{messages:?}");
    assert_eq!(
        w.ports().jobs.job(inference_id).unwrap().status,
        JobStatus::Pending
    );
}

#[tokio::test]
async fn a_bad_argument_to_a_task_form_is_the_same_tool_error_as_a_plain_call() {
    let w = world(&[]);
    let plain = w
        .tool_error(names::SUBMIT_JOB, json!({"document": ""}))
        .await;
    let task = w
        .call_as_task(names::SUBMIT_JOB, json!({"document": ""}))
        .await;
    assert_eq!(task["isError"], true, "{task}");
    assert_eq!(task["content"][0]["text"], plain);
}

#[tokio::test]
async fn a_run_task_follows_the_run_and_cancel_stops_it() {
    let w = world(&[]);
    let args = json!({"input_data_uri": "s3://b/train/t", "session_id": "s"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args.clone()).await;
    assert_eq!(created["status"], "working", "{created}");
    let task_id = created["taskId"].as_str().unwrap();
    let working = w.get_task(task_id).await.unwrap();
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(
        working["statusMessage"],
        "Executing: no step has started yet"
    );
    w.cancel_task(task_id).await.unwrap();
    let stopped = w.get_task(task_id).await.unwrap();
    assert_eq!(stopped["status"], "cancelled", "{stopped}");

    let failing = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let failing_id = failing["taskId"].as_str().unwrap();
    let arn = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{arn}");
    w.ports()
        .pipeline
        .set_failure_reason(&arn, "AlgorithmError");
    let done = w.get_task(failing_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true);
    assert_eq!(
        done["result"]["structuredContent"]["failure_reason"],
        "AlgorithmError"
    );
}

#[tokio::test]
async fn a_finished_run_tasks_result_names_the_model_package_it_registered() {
    let w = world(&[]);
    let args = json!({"input_data_uri": "s3://b/train/", "session_id": "s"});
    let created = w.call_as_task(names::TRIGGER_TRAINING, args).await;
    let task_id = created["taskId"].as_str().unwrap();
    let n = w.ports().pipeline.started().len();
    let arn = format!("arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/{n}");
    let package = w.ports().lineage.register_model(&arn, "s3://b/train/");
    w.ports().pipeline.succeed_with_model(&arn, &package);
    let done = w.get_task(task_id).await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false);
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["model_package_arn"], package.as_str());
    assert_eq!(result["steps"][3]["model_package_arn"], package.as_str());
}

// ------------------------------------------------------------------ arguments as strings

#[tokio::test]
async fn numbers_and_booleans_sent_as_strings_are_taken_for_their_values() {
    let w = world(&[]);
    let submitted = w
        .ok(
            names::SUBMIT_JOB,
            json!({"document": "a", "invocation_timeout_secs": "100"}),
        )
        .await;
    let id = submitted["inference_id"].as_str().unwrap();
    let status = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": "0"}),
        )
        .await;
    assert_eq!(status["status"], "pending");
    assert_eq!(
        w.ports().jobs.job(id).unwrap().invocation_timeout_secs,
        Some(100)
    );
    w.ok(
        names::TRIGGER_TRAINING,
        json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": "15", "accuracy_threshold": "0.9"}),
    )
    .await;
    assert_eq!(
        w.ports().pipeline.started()[0].parameters,
        [
            ("InputDataUri".to_owned(), "s3://b/train/t".to_owned()),
            ("MaxEpochs".to_owned(), "15".to_owned()),
            ("AccuracyThreshold".to_owned(), "0.9".to_owned())
        ]
    );
    // The task form takes them the same way.
    let created = w
        .call_as_task(
            names::SUBMIT_JOB,
            json!({"document": "b", "request_ttl_secs": "900"}),
        )
        .await;
    assert_eq!(created["status"], "working", "{created}");
}

#[tokio::test]
async fn a_bad_string_is_refused_naming_the_argument_and_what_was_expected() {
    let w = world(&[]);
    for (tool, args, expected) in [
        (
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": "five"}),
            "`wait_secs` must be a whole number from 0 to 900; got \"five\"",
        ),
        (
            names::CHECK_JOB_STATUS,
            json!({"inference_id": "x", "wait_secs": "25"}),
            "`wait_secs` is 25; without a progress token (`_meta.progressToken`) it must be from 0 to 20; with one, up to 35",
        ),
        (
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "accuracy_threshold": "1e999"}),
            "`accuracy_threshold` must be a number from 0 to 1; got \"1e999\"",
        ),
        (
            names::TRIGGER_TRAINING,
            json!({"input_data_uri": "s3://b/train/t", "session_id": "s", "max_epochs": " 5"}),
            "`max_epochs` must be a whole number from 1 to 1000; got \" 5\"",
        ),
    ] {
        assert_eq!(w.tool_error(tool, args).await, expected);
    }
    assert!(w.ports().pipeline.started().is_empty());
    assert_eq!(w.ports().jobs.calls(), (0, 0));
}

// ------------------------------------------------------------------ who sees what

fn bearer(name: &str) -> Principal {
    Principal::Bearer { name: name.into() }
}

/// A tool error's text with one id replaced, so two answers about different ids compare.
fn without(text: &str, id: &str) -> String {
    text.replace(id, "<id>")
}

#[tokio::test]
async fn two_callers_with_one_idempotency_key_get_two_jobs() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let args = json!({"document": "a", "idempotency_key": "order-1"});
    let first = a.ok(names::SUBMIT_JOB, args.clone()).await;
    let other = b
        .ok(
            names::SUBMIT_JOB,
            json!({"document": "b", "idempotency_key": "order-1"}),
        )
        .await;
    assert_ne!(first["inference_id"], other["inference_id"]);
    assert_eq!(other.get("idempotent_replay"), None, "no replay of A's job");
    // A's key still replays A's job.
    let again = a.ok(names::SUBMIT_JOB, args).await;
    assert_eq!(again["inference_id"], first["inference_id"]);
    assert_eq!(again["idempotent_replay"], true);
    let ids = [&first, &other].map(|o| o["inference_id"].as_str().unwrap().to_owned());
    let owners = ids.map(|id| w.ports().jobs.job(&id).unwrap().owner.unwrap());
    assert_ne!(owners[0], owners[1]);
    for owner in &owners {
        assert!(!owner.contains("agent"), "an opaque tag: {owner}");
    }
}

#[tokio::test]
async fn another_callers_job_and_task_read_exactly_as_unknown_ones() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let job = a.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = job["inference_id"].as_str().unwrap();
    w.notify(id, "Completed", Some(json!({"label": "secret"})))
        .await;
    let theirs = b
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    let unknown_id = "00000000-0000-4000-8000-000000000000";
    let unknown = b
        .tool_error(names::CHECK_JOB_STATUS, json!({"inference_id": unknown_id}))
        .await;
    assert_eq!(without(&theirs, id), without(&unknown, unknown_id));
    assert!(!theirs.contains("secret"));
    let mine = a
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(mine["result"], json!({"label": "secret"}));

    let created = a
        .call_as_task(names::SUBMIT_JOB, json!({"document": "a"}))
        .await;
    let task_id = created["taskId"].as_str().unwrap();
    let unknown_task = format!("{unknown_id}.{}", "0".repeat(32));
    let theirs = b.get_task(task_id).await.unwrap_err();
    let unknown = b.get_task(&unknown_task).await.unwrap_err();
    assert_eq!(theirs.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(theirs.message, unknown.message);
    let refused = b.cancel_task(task_id).await.unwrap_err();
    assert_eq!(refused.message, unknown.message);
    let inference_id = task_id.rsplit_once('.').unwrap().0;
    assert_eq!(
        w.ports().jobs.job(inference_id).unwrap().status,
        JobStatus::Pending,
        "B's cancel changed nothing"
    );
    assert!(
        a.get_task(task_id).await.is_ok(),
        "the owner still reads it"
    );
}

#[tokio::test]
async fn sessions_and_runs_are_per_caller() {
    let w = world(&[]);
    let (a, b) = (
        w.as_caller(bearer("agent-a")),
        w.as_caller(bearer("agent-b")),
    );
    let args = json!({"input_data_uri": "s3://b/train/", "session_id": "shared-name", "idempotency_key": "k"});
    let run_a = a.ok(names::TRIGGER_TRAINING, args.clone()).await;
    let run_b = b.ok(names::TRIGGER_TRAINING, args).await;
    assert_ne!(
        run_a["execution_arn"], run_b["execution_arn"],
        "one key, two runs"
    );
    for (caller, own) in [(&a, &run_a), (&b, &run_b)] {
        let listed = caller
            .ok(
                names::CHECK_TRAINING_RESULT,
                json!({"session_id": "shared-name"}),
            )
            .await;
        let arns: Vec<_> = listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["execution_arn"].clone())
            .collect();
        assert_eq!(arns, [own["execution_arn"].clone()]);
        assert_eq!(listed["session_id"], "shared-name");
    }
    let arn = run_a["execution_arn"].as_str().unwrap();
    let theirs = b
        .tool_error(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    let unknown_arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/none";
    let unknown = b
        .tool_error(
            names::CHECK_TRAINING_STATUS,
            json!({"execution_arn": unknown_arn}),
        )
        .await;
    assert_eq!(without(&theirs, arn), without(&unknown, unknown_arn));
    a.ok(names::CHECK_TRAINING_STATUS, json!({"execution_arn": arn}))
        .await;
    // No raw principal in what SageMaker stores.
    for started in w.ports().pipeline.started() {
        assert!(
            !started.description.contains("agent"),
            "{}",
            started.description
        );
    }
}

#[tokio::test]
async fn items_from_before_owners_are_seen_only_where_everyone_shared_them() {
    let w = world(&[]);
    w.ports()
        .jobs
        .insert_completed_pointer("legacy-1", "s3://b/outputs/legacy-1.out");
    let args = json!({"inference_id": "legacy-1"});
    for principal in [Principal::Local, bearer("default")] {
        let seen = w
            .as_caller(principal)
            .ok(names::CHECK_JOB_STATUS, args.clone())
            .await;
        assert_eq!(seen["status"], "completed");
    }
    let oauth = Principal::OAuth {
        issuer: "https://issuer".into(),
        subject: "alice".into(),
    };
    for principal in [bearer("agent-a"), oauth, Principal::Gateway] {
        let refused = w
            .as_caller(principal.clone())
            .tool_error(names::CHECK_JOB_STATUS, args.clone())
            .await;
        assert!(
            refused.contains("no job with inference_id"),
            "{principal:?}: {refused}"
        );
    }
}

// ---------------------------------------------------------------- progress while waiting

/// An MCP client on a pipe that keeps every progress notification with the (tokio) time it
/// arrived.
#[derive(Clone, Default)]
struct ProgressClient {
    seen: Arc<std::sync::Mutex<Vec<(std::time::Duration, rmcp::model::ProgressNotificationParam)>>>,
    start: Arc<std::sync::OnceLock<tokio::time::Instant>>,
}

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let at = self.start.get().map(|s| s.elapsed()).unwrap_or_default();
        self.seen.lock().unwrap().push((at, params));
    }
}

impl World {
    /// `tool` called over a pipe by rmcp's own client, which sends a progress token with every
    /// request. The result, and each notification's arrival time and content.
    async fn call_with_progress(
        &self,
        tool: &'static str,
        arguments: Value,
    ) -> (
        CallToolResult,
        Vec<(std::time::Duration, rmcp::model::ProgressNotificationParam)>,
    ) {
        use rmcp::ServiceExt;
        let tools = Tools::for_sole_caller(self.deps.clone(), self.principal.clone());
        let (server_io, client_io) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(server) = tools.serve(server_io).await {
                let _ = server.waiting().await;
            }
        });
        let handler = ProgressClient::default();
        let client = handler.clone().serve(client_io).await.unwrap();
        let params = rmcp::model::CallToolRequestParams::new(tool)
            .with_arguments(object(arguments).unwrap());
        handler.start.set(tokio::time::Instant::now()).unwrap();
        let result = client.call_tool(params).await.unwrap();
        let seen = handler.seen.lock().unwrap().clone();
        client.cancel().await.unwrap();
        (result, seen)
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_with_a_progress_token_reports_the_job_as_it_moves_then_answers() {
    let w = world(&[]);
    let id = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await["inference_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let later = w.as_caller(Principal::Local);
    let finisher = {
        let id = id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            later
                .notify(&id, "Completed", Some(json!({"label": "ok"})))
                .await;
        })
    };
    let (result, seen) = w
        .call_with_progress(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 10}),
        )
        .await;
    finisher.await.unwrap();
    assert_eq!(result.structured_content.unwrap()["status"], "completed");
    let said: Vec<(u64, f64, Option<f64>, &str)> = seen
        .iter()
        .map(|(at, p)| {
            (
                at.as_millis() as u64,
                p.progress,
                p.total,
                p.message.as_deref().unwrap(),
            )
        })
        .collect();
    // Reads at 0, 0.25, 0.75, 1.75 and 3.75 s: the outcome, recorded at 3 s, is seen at the last.
    assert_eq!(
        said,
        [
            (
                0,
                0.0,
                Some(10.0),
                "invoked: SageMaker has the request; waiting for its outcome"
            ),
            (3750, 3.75, Some(10.0), "outcome recorded: completed"),
        ]
    );
    // Each under the request's token.
    assert!(seen
        .windows(2)
        .all(|w| w[0].1.progress_token == w[1].1.progress_token));
}

#[tokio::test(start_paused = true)]
async fn a_long_streamed_wait_beats_steadily_and_a_plain_one_stays_silent_and_short() {
    let w = world(&[("FUNCTION_TIMEOUT_SECS", "120")]);
    let id = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await["inference_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (result, seen) = w
        .call_with_progress(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 60}),
        )
        .await;
    assert_eq!(result.structured_content.unwrap()["status"], "pending");
    let times: Vec<u64> = seen.iter().map(|(at, _)| at.as_secs()).collect();
    // The first read, then a heartbeat on the first read 5 s or more after the last one
    // (reads every 2 s once the wait is under way), and nothing after the last read at 60 s.
    assert_eq!(times.first(), Some(&0));
    assert!(
        times.windows(2).all(|w| (5..=7).contains(&(w[1] - w[0]))),
        "{times:?}"
    );
    assert!(*times.last().unwrap() >= 53, "{times:?}");
    let progress: Vec<f64> = seen.iter().map(|(_, p)| p.progress).collect();
    assert!(progress.windows(2).all(|w| w[1] > w[0]), "{progress:?}");
    assert!(seen[1..].iter().all(|(_, p)| p
        .message
        .as_deref()
        .unwrap()
        .ends_with("(still waiting)")));

    // Without a token (rmcp's client always sends one; the direct call does not): the wait is
    // held to 20 s, and what a wait would send has nowhere to go.
    let started = tokio::time::Instant::now();
    let plain = w
        .ok(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 5}),
        )
        .await;
    assert_eq!(plain["status"], "pending");
    assert_eq!(started.elapsed().as_secs(), 5);
    let message = w
        .tool_error(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 60}),
        )
        .await;
    assert!(message.contains("without a progress token"), "{message}");
    // With one, up to the timeout less 10 s.
    let (result, _) = w
        .call_with_progress(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 111}),
        )
        .await;
    assert_eq!(
        text(&result),
        "`wait_secs` is 111; it must be from 0 to 110 (the function's timeout, 120 s, less 10 s)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_done_before_the_wait_gets_its_answer_without_a_notification() {
    let w = world(&[]);
    let id = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await["inference_id"]
        .as_str()
        .unwrap()
        .to_owned();
    w.notify(&id, "Completed", Some(json!({"label": "ok"})))
        .await;
    let (result, seen) = w
        .call_with_progress(
            names::CHECK_JOB_STATUS,
            json!({"inference_id": id, "wait_secs": 10}),
        )
        .await;
    assert_eq!(result.structured_content.unwrap()["status"], "completed");
    assert!(seen.is_empty(), "{seen:?}");
}

// ---------------------------------------------------------------- completion events

#[tokio::test(start_paused = true)]
async fn an_outcome_a_status_check_finds_in_s3_is_announced_like_a_notifications() {
    let w = world(&[("RECONCILE_AFTER_SECS", "2")]);
    let submitted = w.ok(names::SUBMIT_JOB, json!({"document": "a"})).await;
    let id = submitted["inference_id"].as_str().unwrap().to_owned();
    let output = submitted["output_location"].as_str().unwrap();
    w.ports()
        .objects
        .put_json(&output.parse().unwrap(), br#"{"label":"ok"}"#.to_vec())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let done = w
        .ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(done["status"], "completed");
    let put = w.ports().events.put();
    assert_eq!(put.len(), 1, "{put:?}");
    assert_eq!(
        (
            put[0].inference_id.as_str(),
            put[0].status,
            put[0].reconciled
        ),
        (id.as_str(), "completed", true)
    );
    assert_eq!(put[0].output_location.as_deref(), Some(output));
    assert_eq!(
        put[0].owner.as_deref(),
        Some(Principal::Local.caller().owner.as_str())
    );
    // Read again: nothing new is recorded, nothing announced.
    w.ok(names::CHECK_JOB_STATUS, json!({"inference_id": id}))
        .await;
    assert_eq!(w.ports().events.put().len(), 1);
}
