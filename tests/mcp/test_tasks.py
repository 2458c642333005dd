"""submit_job as an MCP task (the io.modelcontextprotocol/tasks extension), through FastMCP's
client (fastmcp + fastmcp-tasks), which declares the extension: tasks live in the results table,
so any instance answers for any task, and SageMaker's notification completes them."""

import asyncio
import time
import uuid

import pytest
from fastmcp import Client as FastClient
from mcp.shared.exceptions import MCPError
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_cancel, _send_get

from conftest import ok
from test_mcp_tools import call, put_output, success_message


def run(coro):
    return asyncio.run(coro)


async def submitted_task(url, args):
    async with FastClient(url) as client:
        task = await call_tool_task(client, "submit_job", args, raise_on_error=False)
        return task.task_id, task.create_result


async def get(url, task_id):
    async with FastClient(url) as client:
        return await _send_get(client.session, task_id)


async def cancel(url, task_id):
    async with FastClient(url) as client:
        await _send_cancel(client.session, task_id)


async def until_terminal(url, task_id, timeout=60):
    deadline = time.time() + timeout
    async with FastClient(url) as client:
        while True:
            current = await _send_get(client.session, task_id)
            if current.status in ("completed", "failed", "cancelled") or time.time() > deadline:
                return current
            await asyncio.sleep(0.2)


def inference_id_of(task_id):
    return task_id.rsplit(".", 1)[0]


def test_a_task_works_until_its_notification_completes_it(servers, aws, notify):
    task_id, created = run(submitted_task(servers["url"], {"document": "Invoice 9: total 1 EUR"}))
    assert created.status == "working"
    assert created.ttl_ms and created.ttl_ms > 0 and created.poll_interval_ms == 200
    inference_id = inference_id_of(task_id)
    # Durable before the reply, and the task id is not guessable from the job.
    assert aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                               ConsistentRead=True)["Item"]["status"]["S"] == "pending"
    assert len(task_id.rsplit(".", 1)[1]) >= 32

    working = run(get(servers["url"], task_id))
    assert working.status == "working" and working.status_message

    notify(success_message(inference_id, put_output(aws, b'{"label": "invoice"}')))
    done = run(get(servers["url"], task_id))
    assert done.status == "completed"
    # Exactly the tool result check_job_status gives.
    assert done.result["structuredContent"] == ok(call(servers, "check_job_status", {"inference_id": inference_id}))
    assert done.result["structuredContent"]["result"] == {"label": "invoice"}
    assert not done.result.get("isError")


def test_a_sagemaker_failure_completes_the_task_with_a_tool_error(servers, notify):
    task_id, _ = run(submitted_task(servers["url"], {"document": "will fail"}))
    notify({"invocationStatus": "Failed", "inferenceId": inference_id_of(task_id),
            "failureReason": "ModelError: out of memory", "eventTime": "2026-11-20T10:15:01.902Z"})
    done = run(get(servers["url"], task_id))
    assert done.status == "completed"  # `failed` is for protocol errors
    assert done.result["isError"] is True
    assert done.result["structuredContent"]["status"] == "failed"
    assert "out of memory" in done.result["structuredContent"]["failure_reason"]


def test_cancel_before_completion_keeps_a_later_outcome_out(servers, aws, notify):
    task_id, _ = run(submitted_task(servers["url"], {"document": "cancel me"}))
    run(cancel(servers["url"], task_id))
    cancelled = run(get(servers["url"], task_id))
    assert cancelled.status == "cancelled"
    assert "cannot stop" in cancelled.status_message

    inference_id = inference_id_of(task_id)
    notify(success_message(inference_id, put_output(aws, b'{"late": true}')))
    assert run(get(servers["url"], task_id)).status == "cancelled"
    assert ok(call(servers, "check_job_status", {"inference_id": inference_id}))["status"] == "cancelled"


def test_cancel_after_completion_changes_nothing(servers, aws, notify):
    task_id, _ = run(submitted_task(servers["url"], {"document": "done first"}))
    notify(success_message(inference_id_of(task_id), put_output(aws, b'{"a": 1}')))
    run(cancel(servers["url"], task_id))
    done = run(get(servers["url"], task_id))
    assert done.status == "completed" and done.result["structuredContent"]["result"] == {"a": 1}


def test_unknown_wrong_and_expired_task_ids_are_invalid_params(servers, aws):
    task_id, _ = run(submitted_task(servers["url"], {"document": "expire me"}))
    inference_id = inference_id_of(task_id)
    aws["ddb"].update_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                           UpdateExpression="SET #t = :past", ExpressionAttributeNames={"#t": "ttl"},
                           ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 10)}})
    live_id, _ = run(submitted_task(servers["url"], {"document": "still here"}))
    wrong_secret = f"{inference_id_of(live_id)}.{'0' * 32}"
    for bad in (f"{uuid.uuid4()}.{'a' * 32}", wrong_secret, inference_id_of(live_id), "nonsense", task_id):
        for method in (get, cancel):
            with pytest.raises(MCPError) as e:
                run(method(servers["url"], bad))
            assert e.value.error.code == -32602 and "no such task" in e.value.error.message, repr(e.value)
    # The refused cancel changed nothing.
    assert run(get(servers["url"], live_id)).status == "working"


def test_a_client_without_the_extension_gets_todays_result(servers):
    plain = ok(call(servers, "submit_job", {"document": "no tasks here"}))
    assert plain["status"] == "pending" and plain["inference_id"]


def test_a_task_created_on_one_instance_is_read_on_another(servers, faulty, aws, notify):
    task_id, _ = run(submitted_task(servers["url"], {"document": "two instances"}))
    # faulty is a second `cargo lambda watch` process, sharing only the tables.
    assert run(get(faulty.url, task_id)).status == "working"
    notify(success_message(inference_id_of(task_id), put_output(aws, b'{"b": 2}')))
    assert run(get(faulty.url, task_id)).result["structuredContent"]["result"] == {"b": 2}


# ------------------------------------------------------------------ training runs as tasks

def standin_control(method, path, body=None):
    import json
    import os
    import urllib.request
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{os.environ['AWS_ENDPOINT_URL_SAGEMAKER']}/_standin/{path}", data=data,
                                 method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"{}")


async def triggered_task(url, args):
    async with FastClient(url) as client:
        task = await call_tool_task(client, "trigger_training", args, raise_on_error=False)
        return task.task_id, task.create_result


def training_args(**extra):
    return {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": f"task-{uuid.uuid4().hex[:10]}",
            **extra}


def test_a_training_task_follows_the_run_to_its_outcome(servers):
    args = training_args(idempotency_key="once")
    task_id, created = run(triggered_task(servers["url"], args))
    assert created.status == "working" and task_id.startswith("run.")
    # The same key is the same run, and so the same task.
    assert run(triggered_task(servers["url"], args))[0] == task_id
    done = run(until_terminal(servers["url"], task_id))
    assert done.status == "completed" and not done.result.get("isError")
    status = done.result["structuredContent"]
    assert status["status"] == "Succeeded" and [s["name"] for s in status["steps"]] == [
        "PreprocessData", "TrainModel", "EvaluateModel", "RegisterModel"]
    # check_training_status's result, naming the session as trigger_training's outputSchema asks.
    assert status.pop("session_id") == args["session_id"]
    assert status == ok(call(servers, "check_training_status", {"execution_arn": status["execution_arn"]}))


def test_a_training_task_that_fails_at_a_step_completes_with_a_tool_error(servers):
    task_id, _ = run(triggered_task(servers["url"], training_args(accuracy_threshold=0.99)))
    done = run(until_terminal(servers["url"], task_id))
    assert done.status == "completed" and done.result["isError"] is True
    assert done.result["structuredContent"]["status"] == "Failed"
    assert "EvaluateModel" in done.result["structuredContent"]["failure_reason"]


def test_cancelling_a_training_task_stops_the_run(servers):
    standin_control("POST", "pipeline", {"step_millis": 1500})
    try:
        task_id, _ = run(triggered_task(servers["url"], training_args()))
        working = run(get(servers["url"], task_id))
        assert working.status == "working" and "step" in working.status_message, working
        run(cancel(servers["url"], task_id))
        done = run(until_terminal(servers["url"], task_id, timeout=30))
        assert done.status == "cancelled", done
        # The run itself reports Stopped (its ARN is the task id's second part).
        from base64 import urlsafe_b64decode
        encoded = task_id.split(".")[2]
        execution_arn = urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
        assert ok(call(servers, "check_training_status", {"execution_arn": execution_arn}))["status"] == "Stopped"
    finally:
        standin_control("DELETE", "pipeline")
