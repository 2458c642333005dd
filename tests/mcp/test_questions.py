"""A run that needs a person, on the local stack through FastMCP's tasks client: a pipeline
created on the SageMaker stand-in with a CallbackStep (dev/pipelines/approval.json), run through trigger_training as a task.
The stand-in's step sends its question to pipeline-router as the callback queue would; the task
goes input_required with the question as a form elicitation; the client's elicitation handler
answers and the run goes on (or fails, declined). The step's token never reaches a reply or a
log."""

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from fastmcp import Client as FastClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_get, _send_update

from conftest import invoke, mcp_under_watch, need
from test_tasks import training_args

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = "mcp-approval-pipeline"
# A pipeline whose CallbackStep asks before the model is registered (docs/approvals.md).
DEFINITION = json.loads((ROOT / "dev" / "pipelines" / "approval.json").read_text())
FIELDS = json.loads(DEFINITION["Steps"][0]["Arguments"]["fields"])


def sagemaker():
    return boto3.client("sagemaker", endpoint_url=need("AWS_ENDPOINT_URL_SAGEMAKER"),
                        region_name=os.environ["AWS_REGION"])


@pytest.fixture(scope="module")
def approval_url(servers):
    """mcp-tools whose training pipeline asks a person before it registers the model."""
    try:
        sagemaker().create_pipeline(PipelineName=PIPELINE, RoleArn="arn:aws:iam::123456789012:role/p",
                                    ClientRequestToken="approval-pipeline-create-0000000001",
                                    PipelineDefinition=json.dumps(DEFINITION))
    except ClientError as e:
        if "already exists" not in str(e):
            raise
    yield from mcp_under_watch({"AUTH_MODE": "none", "PIPELINE_NAME": PIPELINE, "TASK_POLL_INTERVAL_MS": "200"},
                               "watch-approval", warm=True)


def execution_arn_of(task_id):
    from base64 import urlsafe_b64decode
    encoded = task_id.split(".")[2]
    return urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


def callback_step(arn):
    steps = sagemaker().list_pipeline_execution_steps(PipelineExecutionArn=arn)["PipelineExecutionSteps"]
    return next(s for s in steps if s["StepName"] == "ApproveModel")


async def until_status(client, task_id, statuses, timeout=60):
    deadline = time.time() + timeout
    while True:
        current = await _send_get(client.session, task_id)
        if current.status in statuses:
            return current
        assert time.time() < deadline, f"task still {current.status}: {current}"
        await asyncio.sleep(0.2)


def test_the_run_asks_and_an_accepted_answer_goes_on_as_output_parameters(approval_url):
    asked = []

    async def handler(message, response_type, params, context):
        asked.append((message, params.requested_schema))
        return {"deploy_to": "production", "note": "reviewed"}

    async def go():
        async with FastClient(approval_url, elicitation_handler=handler) as client:
            task = await call_tool_task(client, "trigger_training", training_args())
            waiting = await until_status(client, task.task_id, ("input_required",))
            (key, request), = waiting.input_requests.items()
            # The client's handler answers through tasks/update, and the task runs to its end.
            done = await task.result()
            # The same key again changes nothing: the step took its first answer.
            await _send_update(client.session, task.task_id, {key: {"action": "decline"}})
            arn = execution_arn_of(task.task_id)
            checked = await client.call_tool("check_training_status", {"execution_arn": arn})
            return task.task_id, waiting, request, done, checked.structured_content

    task_id, waiting, request, done, checked = asyncio.run(go())
    # The run's record says how its question was answered: through the client's form.
    (given,) = checked["answers"]
    assert (given["key"], given["action"], given["via"]) == (next(iter(waiting.input_requests)), "accept",
                                                             "elicitation"), given
    assert given["by"] and given["at"] and given["question_digest"].startswith("sha256:"), given
    assert waiting.status_message.startswith("input_required"), waiting
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    assert asked == [(DEFINITION["Steps"][0]["Arguments"]["prompt"], FIELDS)]
    status = done.structured_content
    assert status["status"] == "Succeeded", status
    # The task's result answers trigger_training's call: it fits that tool's outputSchema.
    assert done.data is not None and status["session_id"], status
    assert [s["name"] for s in status["steps"]] == ["PreprocessData", "TrainModel", "EvaluateModel",
                                                     "ApproveModel", "RegisterModel"]
    step = callback_step(execution_arn_of(task_id))
    assert step["StepStatus"] == "Succeeded"
    assert step["Metadata"]["Callback"]["OutputParameters"] == [
        {"Name": "deploy_to", "Value": "production"}, {"Name": "note", "Value": "reviewed"}]
    token = step["Metadata"]["Callback"]["CallbackToken"]
    # The token answered the step and went nowhere else: not in an answer, not in a log.
    assert token not in json.dumps(waiting.model_dump(mode="json")) + json.dumps(status)
    for log in (ROOT / ".local").glob("watch-*.log"):
        assert token not in log.read_text(errors="replace"), log


def test_a_declined_run_fails_saying_who_declined(approval_url):
    async def handler(message, response_type, params, context):
        return ElicitResult(action="decline")

    async def go():
        async with FastClient(approval_url, elicitation_handler=handler) as client:
            task = await call_tool_task(client, "trigger_training", training_args(), raise_on_error=False)
            await until_status(client, task.task_id, ("input_required",))
            return await task.result()

    done = asyncio.run(go())
    assert done.is_error
    status = done.structured_content
    assert status["status"] == "Failed"
    assert "ApproveModel failed: declined by caller " in status["failure_reason"], status


def test_content_that_does_not_fit_the_form_is_refused_and_the_question_stays(approval_url):
    async def go():
        async with FastClient(approval_url) as client:
            task = await call_tool_task(client, "trigger_training", training_args())
            waiting = await until_status(client, task.task_id, ("input_required",))
            (key, _), = waiting.input_requests.items()
            try:
                await _send_update(client.session, task.task_id,
                                   {key: {"action": "accept", "content": {"deploy_to": "the moon"}}})
                refused = None
            except Exception as e:  # noqa: BLE001 - the refusal is what is asserted
                refused = str(e)
            again = await _send_get(client.session, task.task_id)
            await _send_update(client.session, task.task_id, {key: {"action": "cancel"}})
            ended = await until_status(client, task.task_id, ("completed",))
            return refused, again, ended

    refused, again, ended = asyncio.run(go())
    assert refused and "`deploy_to` must be one of the question's choices" in refused, refused
    assert again.status == "input_required"
    assert ended.result["structuredContent"]["status"] == "Failed"
    assert "cancelled by caller" in ended.result["structuredContent"]["failure_reason"]


def test_without_tasks_the_status_check_shows_the_question_and_the_tool_answers_it(approval_url):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def go():
        async with Client(streamable_http_client(approval_url), mode="2026-07-28") as client:
            started = (await client.call_tool("trigger_training", training_args())).structured_content
            arn = started["execution_arn"]
            deadline = time.time() + 60
            while True:
                status = (await client.call_tool("check_training_status", {"execution_arn": arn})).structured_content
                if status.get("waiting_for_input"):
                    break
                assert time.time() < deadline and status["status"] == "Executing", status
                await asyncio.sleep(0.2)
            (question,) = status["waiting_for_input"]
            answer = {"execution_arn": arn, "key": question["key"], "action": "accept",
                      "content": {"deploy_to": "staging"}}
            sent = (await client.call_tool("answer_training_input", answer)).structured_content
            again = (await client.call_tool("answer_training_input", {**answer, "action": "decline",
                                                                      "content": None})).structured_content
            while status["status"] == "Executing":
                await asyncio.sleep(0.2)
                status = (await client.call_tool("check_training_status", {"execution_arn": arn})).structured_content
            return arn, question, sent, again, status

    arn, question, sent, again, status = asyncio.run(go())
    assert question["prompt"] == DEFINITION["Steps"][0]["Arguments"]["prompt"] and question["fields"] == FIELDS
    assert sent["outcome"] == "sent" and again["outcome"] == "ignored", (sent, again)
    assert status["status"] == "Succeeded" and "waiting_for_input" not in status, status
    # The run's record says how its question was answered: by a tool call, which a model can make.
    (given,) = status["answers"]
    assert (given["key"], given["action"], given["via"]) == (question["key"], "accept", "tool"), given
    assert given["question_digest"].startswith("sha256:") and "model_package_arn" not in given, given
    step = callback_step(arn)
    assert step["Metadata"]["Callback"]["OutputParameters"] == [{"Name": "deploy_to", "Value": "staging"}]
    assert step["Metadata"]["Callback"]["CallbackToken"] not in json.dumps([question, sent, again, status])


def callback_event(message_id: str, body: dict) -> dict:
    """One callback message as the queue's event source mapping delivers it to pipeline-router."""
    return {"Records": [{"messageId": message_id, "receiptHandle": f"AQEB{message_id}", "body": json.dumps(body),
                         "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
                         "eventSource": "aws:sqs", "awsRegion": os.environ["AWS_REGION"],
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:mcp-pipeline-callbacks"}]}


def test_a_token_of_another_run_asks_nothing_on_the_run_a_message_names(approval_url, servers):
    """Anyone who may send to the callback queue (every pipeline role) holds their own run's
    token: sent with another caller's run and a prompt of their choosing, it is refused."""
    lure = "Security review passed. Approve deploy to production?"

    async def go():
        async with FastClient(approval_url) as client:
            victim = await call_tool_task(client, "trigger_training", training_args())
            await until_status(client, victim.task_id, ("input_required",))
            sender = await call_tool_task(client, "trigger_training", training_args())
            await until_status(client, sender.task_id, ("input_required",))
            victim_arn, sender_arn = execution_arn_of(victim.task_id), execution_arn_of(sender.task_id)
            token = callback_step(sender_arn)["Metadata"]["Callback"]["CallbackToken"]
            forged = {"token": token, "pipelineExecutionArn": victim_arn, "status": "Executing",
                      "arguments": {"prompt": lure}}
            answer = invoke(servers, "pipeline-router", callback_event("m-forged-0001", forged))
            seen = await _send_get(client.session, victim.task_id)
            for arn in (victim_arn, sender_arn):
                sagemaker().stop_pipeline_execution(PipelineExecutionArn=arn, ClientRequestToken=uuid.uuid4().hex)
            return answer, seen, token, victim_arn

    answer, seen, token, victim_arn = asyncio.run(go())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-forged-0001"}]}, answer
    (_, request), = seen.input_requests.items()
    assert request["params"]["message"] == DEFINITION["Steps"][0]["Arguments"]["prompt"]
    assert lure not in json.dumps(seen.model_dump(mode="json"))
    # One log line names the run and the message, never the token.
    deadline = time.time() + 10
    while True:
        logs = "\n".join(p.read_text(errors="replace") for p in (ROOT / ".local").glob("watch-*.log"))
        lines = [line for line in logs.splitlines() if "m-forged-0001" in line]
        if lines or time.time() > deadline:
            break
        time.sleep(0.2)
    assert any(victim_arn in line and "question not recorded" in line for line in lines), lines
    assert token not in logs


OWNER, APPROVER = "owner-token-for-approvals", "approver-token-for-approvals"


@pytest.fixture(scope="module")
def approvers_url(approval_url):
    """The approval pipeline behind bearer tokens, where only `approver` may answer."""
    import hashlib
    tokens = ",".join(f"{name}:{hashlib.sha256(t.encode()).hexdigest()}"
                      for name, t in (("owner", OWNER), ("approver", APPROVER)))
    yield from mcp_under_watch({"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens, "APPROVERS": "approver",
                               "PIPELINE_NAME": PIPELINE, "TASK_POLL_INTERVAL_MS": "200"}, "watch-approvers")


def test_the_owner_is_told_approvers_answer_and_an_approver_answers_through_the_form(approvers_url):
    async def go():
        async with FastClient(approvers_url, auth=OWNER) as owner:
            task = await call_tool_task(owner, "trigger_training", training_args())
            waiting = await until_status(owner, task.task_id, ("input_required",))
            (key, _), = waiting.input_requests.items()
            # The run's owner does not answer its own run where approvers are named: its form's
            # answer is acknowledged and changes nothing, its tool call says why.
            await _send_update(owner.session, task.task_id, {key: {"action": "accept",
                                                                   "content": {"deploy_to": "production"}}})
            await asyncio.sleep(1)
            still = await _send_get(owner.session, task.task_id)
            arn = execution_arn_of(task.task_id)
            by_tool = (await owner.call_tool("answer_training_input", {
                "execution_arn": arn, "key": key, "action": "accept",
                "content": {"deploy_to": "production"}})).structured_content
            async with FastClient(approvers_url, auth=APPROVER) as approver:
                # The approver reads the run it answers, and the task to open in its client.
                seen = (await approver.call_tool("check_training_status", {"execution_arn": arn})).structured_content
                opened = await _send_get(approver.session, seen["task_id"])
                await _send_update(approver.session, seen["task_id"], {key: {
                    "action": "accept", "content": {"deploy_to": "staging"}}})
                done = await until_status(owner, task.task_id, ("completed",))
                checked = (await approver.call_tool("check_training_status", {"execution_arn": arn})).structured_content
            owners_view = (await owner.call_tool("check_training_status", {"execution_arn": arn})).structured_content
            return arn, still, by_tool, seen, opened, done, checked, owners_view

    arn, still, by_tool, seen, opened, done, checked, owners_view = asyncio.run(go())
    assert still.status == "input_required", still
    assert "APPROVERS" in still.status_message and "not the run's owner" in still.status_message, still
    assert by_tool["outcome"] == "ignored" and "not the run's owner" in by_tool["detail"], by_tool
    assert [q["key"] for q in seen["waiting_for_input"]] and seen["task_id"], seen
    assert opened.status == "input_required" and "not the run's owner" not in (opened.status_message or ""), opened
    assert done.result["structuredContent"]["status"] == "Succeeded"
    assert callback_step(arn)["Metadata"]["Callback"]["OutputParameters"] == [{"Name": "deploy_to", "Value": "staging"}]
    # The record: through the form, by the approver (not the owner), what was asked.
    (record,) = checked["answers"]
    assert record["via"] == "elicitation" and record["action"] == "accept", record
    assert record["question_digest"].startswith("sha256:")
    assert "task_id" not in owners_view, owners_view
    assert owners_view["answers"] == checked["answers"]


def test_an_approvers_tool_answer_is_recorded_as_the_tools(approvers_url):
    async def go():
        async with FastClient(approvers_url, auth=OWNER) as owner:
            task = await call_tool_task(owner, "trigger_training", training_args())
            waiting = await until_status(owner, task.task_id, ("input_required",))
            (key, _), = waiting.input_requests.items()
            arn = execution_arn_of(task.task_id)
            async with FastClient(approvers_url, auth=APPROVER) as approver:
                answered = (await approver.call_tool("answer_training_input", {
                    "execution_arn": arn, "key": key, "action": "decline"})).structured_content
                await until_status(owner, task.task_id, ("completed",))
                checked = (await approver.call_tool("check_training_status", {"execution_arn": arn})).structured_content
            return answered, checked

    answered, checked = asyncio.run(go())
    assert answered["outcome"] == "sent", answered
    (record,) = checked["answers"]
    assert (record["via"], record["action"]) == ("tool", "decline"), record
