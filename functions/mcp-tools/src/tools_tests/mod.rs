//! Every tool, its task form and `tasks/get` / `tasks/cancel`, through the same rmcp router an
//! MCP client reaches, on the in-memory ports: no emulator. The results asserted are what a
//! client sees (`structuredContent`, `isError`, the text), beside what the ports were asked.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rmcp::model::{CallToolResult, ErrorCode, JsonObject};
use serde_json::{json, Value};

use crate::config::ToolsConfig;
use domain::caller::Principal;
use domain::job::{JobStatus, Stage};
use domain::notification::{parse_notification, Notification};
use domain::time::{rfc3339, Clock};
use entry::config::Env;
use fakes::{
    FakeInvoker, FakePipeline, FakeWebhooks, InvokeFault, MemoryEventLog, MemoryEvents, MemoryJobs,
    MemoryLineage, MemoryObjects, MemoryRuns, MemorySubscriptions,
};
use ports::{LineageGraph, ObjectStore};
use usecases::outcome::record_notification;

use crate::contract::{names, policy};
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
    MemoryEventLog,
    MemorySubscriptions,
    FakeWebhooks,
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
    world_with(extra, None)
}

/// The example catalog's tools (infra/catalog.example.json) on fresh fakes.
pub(crate) fn catalog_world() -> World {
    let catalog = include_str!("../../../../infra/catalog.example.json");
    let training = [("TRAINING_INPUT_PREFIXES", "s3://io-bucket/train/")];
    world_with(
        &training,
        Some(crate::catalog::Catalog::parse(catalog).unwrap()),
    )
}

fn world_with(
    extra: &[(&'static str, &'static str)],
    catalog: Option<crate::catalog::Catalog>,
) -> World {
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
        endpoint: FakeInvoker::serving(&[
            ENDPOINT,
            "mcp-doc-processor-async",
            "mcp-churn-scorer-async",
        ]),
        pipeline: FakePipeline::default(),
        lineage: MemoryLineage::default(),
        events: MemoryEvents::default(),
        event_log: Some(MemoryEventLog::default()),
        subscriptions: Some(MemorySubscriptions::default()),
        webhooks: FakeWebhooks::default(),
    };
    let (t0, start) = (Utc::now(), tokio::time::Instant::now());
    let clock = Clock::from_fn(move || {
        t0 + chrono::Duration::from_std(start.elapsed()).unwrap_or_default()
    });
    let deps = Deps::new(config, ports, clock);
    let deps = Arc::new(match catalog {
        Some(catalog) => deps.with_catalog(catalog),
        None => deps,
    });
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

    /// A request of a method rmcp does not know (the Events extension's).
    pub(crate) async fn custom(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, rmcp::ErrorData> {
        request(
            self.tools.clone(),
            self.principal.clone(),
            method,
            params,
            None,
        )
        .await
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

    async fn update_task(&self, task_id: &str, responses: Value) -> Result<Value, rmcp::ErrorData> {
        self.task_request(
            "tasks/update",
            json!({"taskId": task_id, "inputResponses": responses}),
        )
        .await
    }

    async fn cancel_task(&self, task_id: &str) -> Result<Value, rmcp::ErrorData> {
        self.task_request("tasks/cancel", json!({"taskId": task_id}))
            .await
    }

    /// SageMaker's notification of the job's outcome, recorded as notification-handler does.
    pub(crate) async fn notify(&self, inference_id: &str, status: &str, output: Option<Value>) {
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

mod approval;
mod catalog;
mod check;
mod completion_events;
mod listing;
mod progress;
mod provenance;
mod questions;
mod reads;
mod resources;
mod sharing;
mod string_arguments;
mod submit;
mod tasks;
mod training;
mod visibility;
