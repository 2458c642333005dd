"""`make serve APPROVALS=1` (scripts/serve.py --approvals) as a pipeline author runs it: it prints
which pipeline asks and how to answer, and serves that pipeline: through FastMCP's tasks client a
run asks its CallbackStep's question, then its registered model's approval, and ends with the
model approved; a declined run makes `task.result()` raise, naming who declined. With bearer
tokens, the owner's answer is ignored and the printed approver token answers. The stand-in
delivers the runs' callback messages and events to the session's pipeline-router."""

import asyncio
import json
import time
from pathlib import Path

import pytest
from fastmcp import Client as FastClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp.exceptions import ToolError
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_get, _send_update

from test_serve import serve
from test_tasks import training_args

ROOT = Path(__file__).resolve().parents[2]
PROMPT = json.loads((ROOT / "dev" / "pipelines" / "approval.json").read_text())["Steps"][0]["Arguments"]["prompt"]


def served(servers, *args: str):
    """serve.py with `args`, once it printed its last line: the process and what it printed."""
    proc = serve({}, *args)
    printed = []
    deadline = time.monotonic() + 300
    while not printed or not printed[-1].startswith("  who answers: "):
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            proc.terminate()
            pytest.fail(f"serve.py {' '.join(args)} printed {printed}, then: {proc.stderr.read()}")
        printed.append(line.rstrip("\n"))
    return proc, printed


def stopped(proc) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def url_of(printed: list) -> str:
    return next(line for line in printed if line.startswith("MCP server")).split(": ", 1)[1]


async def until_status(client, task_id: str, status: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while (current := await _send_get(client.session, task_id)).status != status:
        assert time.monotonic() < deadline, current
        await asyncio.sleep(0.3)
    return current


def test_it_prints_the_pipeline_that_asks_and_a_run_asks_twice_then_ends_approved(servers):
    proc, printed = served(servers, "--approvals")
    try:
        assert printed[-3] == (f"approvals: trigger_training runs mcp-approval-pipeline (dev/pipelines/approval.json); "
                               f"its CallbackStep ApproveModel asks \"{PROMPT}\", then the model it registers waits "
                               "for approval (APPROVAL_GATE)"), printed
        assert "APPROVERS is left unset" in printed[-1], printed
        asked = []

        async def answer(message, response_type, params, context):
            asked.append(message)
            fields = params.requested_schema["properties"]
            return {"deploy_to": "staging"} if "deploy_to" in fields else {"comment": "reviewed"}

        async def decline(message, response_type, params, context):
            return ElicitResult(action="decline")

        async def go():
            async with FastClient(url_of(printed), elicitation_handler=answer) as client:
                done = await (await call_tool_task(client, "trigger_training", training_args())).result()
            async with FastClient(url_of(printed), elicitation_handler=decline) as client:
                declined = await call_tool_task(client, "trigger_training", training_args())
                with pytest.raises(ToolError) as refused:
                    await declined.result()
            return done, str(refused.value)

        done, refused = asyncio.run(go())
    finally:
        stopped(proc)
    status = done.structured_content
    assert asked[0] == PROMPT and "waits for approval" in asked[1], asked
    assert (status["status"], status["model_approval_status"]) == ("Succeeded", "Approved"), status
    assert "ApproveModel failed: declined by caller " in refused, refused


def test_with_bearer_tokens_the_owner_starts_and_only_the_approver_answers(servers):
    proc, printed = served(servers, "--auth", "bearer", "--approvals")
    try:
        tokens = {line.split()[1]: line.rsplit(": ", 1)[1] for line in printed
                  if line.startswith(("token owner ", "token approver "))}
        assert set(tokens) == {"owner", "approver"}, printed
        assert "APPROVERS=approver" in printed[-1], printed
        url = url_of(printed)

        args = training_args()

        async def go():
            async with FastClient(url, auth=tokens["owner"]) as owner:
                task = await call_tool_task(owner, "trigger_training", args)
                waiting = await until_status(owner, task.task_id, "input_required")
                (key, _), = waiting.input_requests.items()
                await _send_update(owner.session, task.task_id, {key: {"action": "accept",
                                                                       "content": {"deploy_to": "production"}}})
                await asyncio.sleep(1)
                still = await _send_get(owner.session, task.task_id)
                arn = (await owner.call_tool("check_training_result", {
                    "session_id": args["session_id"]})).structured_content["runs"][0]["execution_arn"]
                async with FastClient(url, auth=tokens["approver"]) as approver:
                    sent = (await approver.call_tool("answer_training_input", {
                        "execution_arn": arn, "key": key, "action": "accept",
                        "content": {"deploy_to": "staging"}})).structured_content
                return still, sent

        still, sent = asyncio.run(go())
    finally:
        stopped(proc)
    assert still.status == "input_required", still
    assert sent["outcome"] == "sent", sent

