"""A team's models as tools (the tool catalog), through the official Python MCP SDK and
FastMCP's client on the local stack: mcp-tools with infra/catalog.example.json and the
stand-in's async runtime. Both models' tools are listed with their schemas; a job on each
endpoint is completed by the stand-in; a refused argument stores and invokes nothing, and an
array past its maxItems is refused by that bound alone; a catalog tool's task form is a job
task."""

import asyncio
import json
import time
from pathlib import Path

import pytest
from fastmcp import Client as FastClient
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_get
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import error_text, mcp_under_watch, need, ok, standin_invocations
from test_faults import until_done
from test_identity import call_tool

CATALOG = Path(__file__).resolve().parents[2] / "infra" / "catalog.example.json"
CUSTOMER = {"customer_id": "C0012345", "plan": "team", "tenure_months": 14, "monthly_spend_usd": 420.5}


@pytest.fixture(scope="module")
def catalog_url(servers):
    """mcp-tools serving the example catalog, invoking the stand-in (which completes each job
    and notifies the local stack's notification-handler)."""
    yield from mcp_under_watch({"AUTH_MODE": "none", "TOOL_CATALOG": str(CATALOG),
                               "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": need("AWS_ENDPOINT_URL_SAGEMAKER")},
                               "watch-catalog")


def list_tools(url):
    async def go():
        async with Client(streamable_http_client(url), mode="2026-07-28") as client:
            return (await client.list_tools()).tools
    return {t.name: t for t in asyncio.run(go())}


def test_both_models_are_listed_with_their_own_schemas_in_place_of_submit_job(catalog_url):
    tools = list_tools(catalog_url)
    assert {"summarize_document", "score_churn_risk", "check_job_status"} <= set(tools)
    assert "submit_job" not in tools
    summarize = tools["summarize_document"].input_schema
    assert set(summarize["properties"]) == {"document", "max_sentences", "idempotency_key",
                                            "invocation_timeout_secs", "request_ttl_secs"}
    assert summarize["required"] == ["document"] and summarize["properties"]["max_sentences"]["maximum"] == 20
    churn = tools["score_churn_risk"].input_schema["properties"]["customers"]
    assert churn["items"]["properties"]["plan"]["enum"] == ["free", "team", "business", "enterprise"]
    assert tools["score_churn_risk"].output_schema["properties"]["inference_id"]["type"] == "string"


@pytest.mark.parametrize("tool, args, endpoint", [
    ("summarize_document", {"document": "Invoice 42: total 12.50 EUR", "max_sentences": 2}, "mcp-doc-processor-async"),
    ("score_churn_risk", {"customers": [CUSTOMER]}, "mcp-churn-scorer-async"),
])
def test_a_job_on_each_endpoint_is_completed_by_the_stand_in(catalog_url, aws, tool, args, endpoint):
    submitted = ok(call_tool(catalog_url, tool, args))
    inference_id = submitted["inference_id"]
    [invocation] = [i for i in standin_invocations() if i["inference_id"] == inference_id]
    # The arguments went inline, as the model's JSON body, to the tool's own endpoint.
    assert invocation["endpoint"] == endpoint
    assert invocation["input_location"] is None
    assert invocation["inline_bytes"] == len(json.dumps(args, separators=(",", ":")).encode())
    assert invocation["content_type"] == "application/json"
    done = until_done(catalog_url, inference_id)
    assert done["status"] == "completed", done
    item = aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}})["Item"]
    assert item["endpoint_name"]["S"] == endpoint and "input_location" not in item


def stored_and_invoked(aws):
    """How many jobs the results table holds, and how many invocations the stand-in received."""
    return (aws["ddb"].scan(TableName=aws["table"], Select="COUNT", ConsistentRead=True)["Count"],
            len(standin_invocations()))


def test_a_refused_argument_stores_and_invokes_nothing(catalog_url, aws):
    before = stored_and_invoked(aws)
    refused = call_tool(catalog_url, "score_churn_risk", {"customers": [{**CUSTOMER, "plan": "gold"}]})
    assert refused.is_error
    assert error_text(refused).startswith("`customers/0/plan`: value must be one of 'free', 'team'")
    assert stored_and_invoked(aws) == before


def test_an_array_past_max_items_is_refused_by_its_bound_alone_and_starts_nothing(catalog_url, aws):
    # 200,000 items (within the door's bound of 250,000 values a body), each of which breaks the
    # item schema (four required properties missing): the answer is the one bound the array
    # breaks, not a violation per item.
    before = stored_and_invoked(aws)
    refused = call_tool(catalog_url, "score_churn_risk", {"customers": [{}] * 200_000})
    assert error_text(refused) == ("`customers`: maximum 500 items required, but got 200000 items. "
                                   "Nothing was sent to the model.")
    assert stored_and_invoked(aws) == before


def test_a_catalog_tools_task_form_through_fastmcp_is_a_job_task(catalog_url):
    async def go():
        async with FastClient(catalog_url) as client:
            task = await call_tool_task(client, "summarize_document", {"document": "a short note"},
                                        raise_on_error=False)
            assert task.create_result.status == "working"
            deadline = time.time() + 60
            while True:
                current = await _send_get(client.session, task.task_id)
                if current.status != "working" or time.time() > deadline:
                    return current
                await asyncio.sleep(0.2)
    done = asyncio.run(go())
    assert done.status == "completed" and not done.result.get("isError"), done
    assert done.result["structuredContent"]["status"] == "completed"


def run_outcome(url, execution_arn, timeout=90):
    deadline = time.time() + timeout
    while True:
        status = ok(call_tool(url, "check_training_status", {"execution_arn": execution_arn, "wait_secs": 10}))
        if status["status"] not in ("Executing", "Stopping") or time.time() > deadline:
            return status


def test_a_pipeline_tools_run_gets_the_pipelines_own_parameter_names(catalog_url):
    tools = list_tools(catalog_url)
    assert "trigger_training" not in tools
    assert set(tools["retrain_intent_classifier"].input_schema["properties"]) == {
        "training_data", "epochs", "min_accuracy", "session_id", "idempotency_key"}
    session = f"catalog-{time.time_ns()}"
    # The stand-in's evaluation reaches 0.80 + 0.015 per epoch: 2 epochs miss a 0.95 threshold.
    started = ok(call_tool(catalog_url, "retrain_intent_classifier", {
        "session_id": session, "training_data": "s3://mcp-sagemaker-async-io/train/tickets.csv",
        "epochs": 2, "min_accuracy": 0.95}))
    assert ":pipeline/mcp-intent-classifier-pipeline/execution/" in started["execution_arn"]
    failed = run_outcome(catalog_url, started["execution_arn"])
    assert failed["status"] == "Failed", failed
    evaluate = [s for s in failed["steps"] if s["name"] == "EvaluateModel"][0]
    assert "below AccuracyThreshold 0.950" in evaluate["failure_reason"], evaluate
    # Enough epochs: the run succeeds and registers a model.
    passed = ok(call_tool(catalog_url, "retrain_intent_classifier", {"session_id": session, "epochs": 12}))
    succeeded = run_outcome(catalog_url, passed["execution_arn"])
    assert succeeded["status"] == "Succeeded" and succeeded["model_package_arn"], succeeded
    refused = call_tool(catalog_url, "retrain_intent_classifier",
                        {"session_id": session, "training_data": "s3://someone-elses-bucket/data.csv"})
    assert "is not under a prefix this deployment allows" in error_text(refused)
