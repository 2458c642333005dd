//! The W3C trace context of a tool call (MCP 2026-07-28, SEP-414). `call_tool` reads the
//! request's `_meta.traceparent` and `_meta.tracestate` once and puts this server's span (the
//! caller's trace continued, or a new one) in the request's extensions; [`crate::Tools::call`]
//! takes it from there, records it on the call's span, and hands it to the call's work with the
//! caller, so that the job or run the call creates stores it. A call that came without it (a task form's
//! inner call, the AgentCore Gateway door) still gets a trace: a new one.

use domain::trace::TraceContext;
use rmcp::model::{Extensions, RequestMetaObject};

/// This server's span for a request: continuing the `traceparent` its `_meta` carries, or a
/// new trace when it carries none (or a malformed one, which never fails the call).
pub fn from_meta(meta: &RequestMetaObject) -> TraceContext {
    TraceContext::for_request(meta.get_traceparent(), meta.get_tracestate())
}

/// The call's trace, as `call_tool` put it in the extensions; a new one when it did not.
pub fn of(extensions: &Extensions) -> TraceContext {
    extensions
        .get::<TraceContext>()
        .cloned()
        .unwrap_or_else(TraceContext::start)
}

#[cfg(test)]
mod tests {
    use domain::caller::Principal;
    use serde_json::{json, Value};

    use super::*;
    use crate::contract::names;
    use crate::direct::request;
    use crate::tools_tests::{catalog_world, world, World};

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_requests_traceparent_is_continued_and_a_bad_one_replaced() {
        let mut meta = RequestMetaObject::default();
        meta.set_traceparent(PARENT);
        meta.set_tracestate("rojo=00f067aa0ba902b7");
        let continued = from_meta(&meta);
        assert_eq!(continued.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_ne!(continued.span_id(), "b7ad6b7169203331");
        assert_eq!(continued.tracestate(), Some("rojo=00f067aa0ba902b7"));

        let mut bad = RequestMetaObject::default();
        bad.set_traceparent("00-NOT-A-TRACE");
        let started = from_meta(&bad);
        assert_ne!(started.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert!(TraceContext::parse(Some(&started.traceparent()), None).is_some());
        assert!(TraceContext::parse(
            Some(&from_meta(&RequestMetaObject::default()).traceparent()),
            None
        )
        .is_some());
    }

    #[test]
    fn a_calls_trace_is_the_one_its_extensions_carry_and_else_a_new_one() {
        let mut extensions = Extensions::default();
        let trace = TraceContext::start();
        extensions.insert(trace.clone());
        assert_eq!(of(&extensions), trace);
        assert_ne!(of(&Extensions::default()).trace_id(), trace.trace_id());
    }

    /// A tools/call whose `_meta` carries `meta` (besides whatever a task form needs).
    async fn call(w: &World, tool: &str, arguments: Value, meta: Value) -> Value {
        let params = json!({"name": tool, "arguments": arguments, "_meta": meta});
        request(
            w.tools.clone(),
            Principal::Local,
            "tools/call",
            params,
            None,
        )
        .await
        .unwrap()
    }

    fn traced() -> Value {
        json!({"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"})
    }

    /// The continued trace: the caller's trace id and state, a span of this server's own.
    fn assert_continued(trace: Option<TraceContext>) {
        let trace = trace.expect("a stored trace");
        assert_eq!(trace.trace_id(), "0af7651916cd43dd8448eb211c80319c");
        assert_ne!(trace.span_id(), "b7ad6b7169203331");
        assert_eq!(trace.tracestate(), Some("rojo=00f067aa0ba902b7"));
    }

    #[tokio::test]
    async fn a_submitted_job_and_a_triggered_run_store_the_calls_trace() {
        let w = world(&[]);
        let submitted = call(&w, names::SUBMIT_JOB, json!({"document": "a"}), traced()).await;
        let id = submitted["structuredContent"]["inference_id"]
            .as_str()
            .unwrap();
        assert_continued(w.ports().jobs.job(id).unwrap().trace);
        let arguments = json!({"input_data_uri": "s3://b/train/", "session_id": "s-1"});
        call(&w, names::TRIGGER_TRAINING, arguments, traced()).await;
        assert_continued(w.ports().runs.all()[0].trace.clone());
        // Tool results do not change.
        assert!(!submitted.to_string().contains("traceparent"));
    }

    #[tokio::test]
    async fn a_catalog_tools_job_and_run_store_it_too_and_task_forms_as_well() {
        let w = catalog_world();
        let summarize = json!({"document": "Q3 revenue rose 12%."});
        let out = call(&w, "summarize_document", summarize.clone(), traced()).await;
        let id = out["structuredContent"]["inference_id"].as_str().unwrap();
        assert_continued(w.ports().jobs.job(id).unwrap().trace);
        let retrain = json!({"session_id": "s-9", "training_data": "s3://io-bucket/train/t.csv"});
        call(&w, "retrain_intent_classifier", retrain, traced()).await;
        assert_continued(w.ports().runs.all()[0].trace.clone());

        // A task form, from a client that declared the extension.
        let mut meta = traced();
        meta["io.modelcontextprotocol/clientCapabilities"] =
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        let created = call(&w, "summarize_document", summarize, meta).await;
        assert_eq!(created["resultType"], "task", "{created}");
        let jobs = w.ports().endpoint.requests();
        let id = &jobs.last().unwrap().inference_id;
        assert_continued(w.ports().jobs.job(id.as_str()).unwrap().trace);
    }

    #[tokio::test]
    async fn a_call_without_a_trace_or_through_the_gateway_door_starts_one() {
        let w = world(&[]);
        for meta in [
            json!({}),
            json!({"traceparent": "00-bad", "tracestate": "a=b"}),
        ] {
            let out = call(&w, names::SUBMIT_JOB, json!({"document": "a"}), meta).await;
            let id = out["structuredContent"]["inference_id"].as_str().unwrap();
            let trace = w.ports().jobs.job(id).unwrap().trace.unwrap();
            assert_ne!(trace.trace_id(), "0af7651916cd43dd8448eb211c80319c");
            assert_eq!(trace.tracestate(), None);
        }
        // The direct door (AgentCore Gateway) sends no _meta at all.
        let out = w.ok(names::SUBMIT_JOB, json!({"document": "b"})).await;
        let id = out["inference_id"].as_str().unwrap();
        assert!(w.ports().jobs.job(id).unwrap().trace.is_some());
    }
}
