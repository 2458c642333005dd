"""A registered model approved or rejected by a person, on the local stack: with APPROVAL_GATE
on, a training run that registered its model (PendingManualApproval on the SageMaker stand-in)
asks for the decision. Through FastMCP's tasks client the task goes input_required and the
client's accept approves; without tasks, check_training_status reports the model waiting and
approve_model_package rejects it. SageMaker (the stand-in) holds the decision each time."""

import asyncio
import os
import time

import boto3
from fastmcp import Client as FastClient
from fastmcp_tasks import call_tool_task
import pytest

from conftest import error_text, mcp_under_watch, need, ok
from test_questions import until_status
from test_tasks import training_args


def describe_package(arn):
    sagemaker = boto3.client("sagemaker", endpoint_url=need("AWS_ENDPOINT_URL_SAGEMAKER"),
                             region_name=os.environ["AWS_REGION"])
    return sagemaker.describe_model_package(ModelPackageName=arn)


@pytest.fixture(scope="module")
def gated_url(servers):
    """mcp-tools whose runs wait for their model's approval."""
    yield from mcp_under_watch({"AUTH_MODE": "none", "APPROVAL_GATE": "true", "TASK_POLL_INTERVAL_MS": "200"},
                               "watch-gate")


def test_a_runs_task_asks_for_its_models_approval_and_an_accept_approves_it(gated_url):
    asked = []

    async def handler(message, response_type, params, context):
        asked.append(message)
        return {"comment": "evaluation reviewed"}

    async def go():
        async with FastClient(gated_url, elicitation_handler=handler) as client:
            task = await call_tool_task(client, "trigger_training", training_args())
            waiting = await until_status(client, task.task_id, ("input_required",))
            done = await task.result()
            return waiting, done

    waiting, done = asyncio.run(go())
    (request,) = waiting.input_requests.values()
    assert request["params"]["requestedSchema"]["properties"]["comment"]["type"] == "string"
    assert len(asked) == 1 and "waits for approval" in asked[0], asked
    status = done.structured_content
    assert (status["status"], status["model_approval_status"]) == ("Succeeded", "Approved"), status
    package = describe_package(status["model_package_arn"])
    assert package["ModelApprovalStatus"] == "Approved"
    assert package["ApprovalDescription"].startswith("evaluation reviewed (approved by caller "), package


def test_without_tasks_the_model_waits_and_approve_model_package_rejects_it_once(gated_url):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        async with Client(streamable_http_client(gated_url), mode="2026-07-28") as client:
            async def status_of(arn):
                return (await client.call_tool("check_training_status", {"execution_arn": arn})).structured_content

            arn = (await client.call_tool("trigger_training", training_args())).structured_content["execution_arn"]
            deadline = time.time() + 60
            status = await status_of(arn)
            while status["status"] == "Executing":
                assert time.time() < deadline, status
                await asyncio.sleep(0.2)
                status = await status_of(arn)
            decision = {"model_package_arn": status["model_package_arn"], "approve": False,
                        "comment": "accuracy below what production needs"}
            rejected = await client.call_tool("approve_model_package", decision)
            again = await client.call_tool("approve_model_package", decision)
            turned = await client.call_tool("approve_model_package", {**decision, "approve": True})
            return status, ok(rejected), ok(again), error_text(turned), await status_of(arn)

    waiting, rejected, again, turned, after = asyncio.run(go())
    assert waiting["status"] == "Succeeded" and waiting["model_approval_status"] == "PendingManualApproval", waiting
    (question,) = waiting["waiting_for_input"]
    assert "waits for approval" in question["prompt"]
    assert (rejected["approval_status"], rejected["changed"]) == ("Rejected", True), rejected
    assert again["changed"] is False
    assert "is Rejected" in turned, turned
    assert after["model_approval_status"] == "Rejected" and "waiting_for_input" not in after, after
    assert describe_package(waiting["model_package_arn"])["ModelApprovalStatus"] == "Rejected"
