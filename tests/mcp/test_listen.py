"""Completion pushed over `subscriptions/listen` (the tasks extension's push channel), on the
local stack through the streaming Function URL: tasks started with FastMCP's tasks client,
outcomes delivered mid-listen by notification-handler (as SNS would) and by the stand-in's
pipeline, each pushed as `notifications/tasks`. No Python MCP client opens a listen naming tasks
yet (the SDK's `Client.listen` has no `taskIds`), so the listen itself is spoken as the wire."""

import asyncio
import json
import time
import uuid

import pytest

from conftest import BEARER_TOKEN, mcp_under_watch
from listen_client import SUBSCRIPTION_ID, Listen
from test_mcp_tools import put_output, success_message
from test_tasks import inference_id_of, standin_control, submitted_task, training_args, triggered_task


def ack_of(messages):
    assert messages and messages[0]["method"] == "notifications/subscriptions/acknowledged", messages
    return messages[0]["params"]


def test_two_jobs_and_a_run_are_pushed_on_one_listen_as_their_outcomes_arrive(servers, aws, notify):
    url = servers["url"]
    first, _ = asyncio.run(submitted_task(url, {"document": "Invoice 1: total 2 EUR"}))
    second, _ = asyncio.run(submitted_task(url, {"document": "will fail"}))
    # Steps of a second: the run is still working when the listen opens.
    standin_control("POST", "pipeline", {"step_millis": 1000})
    try:
        run_task, _ = asyncio.run(triggered_task(url, training_args()))
        listen = Listen(url, [first, second, run_task])
        assert listen.acked.wait(30)
        time.sleep(1)
        notify(success_message(inference_id_of(first), put_output(aws, b'{"label": "invoice"}')))
        first_recorded = time.monotonic()
        time.sleep(1)
        notify({"invocationStatus": "Failed", "inferenceId": inference_id_of(second),
                "failureReason": "ModelError: out of memory", "eventTime": "2026-11-20T10:15:01.902Z"})
        second_recorded = time.monotonic()
        messages = listen.ended(120)
    finally:
        standin_control("DELETE", "pipeline")
    assert listen.status == 200

    assert ack_of(messages)["notifications"]["taskIds"] == [first, second, run_task]
    assert messages[-1]["id"] == 7 and messages[-1]["result"]["_meta"][SUBSCRIPTION_ID] == 7, messages[-1]
    pushed = listen.tasks()
    assert all(p["_meta"][SUBSCRIPTION_ID] == 7 for _, p in pushed)
    by_task = {task: [(t, p) for t, p in pushed if p["taskId"] == task] for task in (first, second, run_task)}
    for task, seen in by_task.items():
        statuses = [p["status"] for _, p in seen]
        assert statuses[0] == "working" and statuses[-1] == "completed", (task, statuses)
        assert statuses.count("completed") == 1, (task, statuses)

    (done_at, done) = by_task[first][-1]
    print(f"pushed after recorded: {done_at - first_recorded:.3f} s, "
          f"{by_task[second][-1][0] - second_recorded:.3f} s")
    assert done["result"]["structuredContent"]["result"] == {"label": "invoice"}
    assert done_at - first_recorded < 3, f"pushed {done_at - first_recorded:.2f} s after it was recorded"
    (failed_at, failed) = by_task[second][-1]
    assert failed["result"]["isError"] is True
    assert failed_at - second_recorded < 3, f"pushed {failed_at - second_recorded:.2f} s after it was recorded"
    (_, trained) = by_task[run_task][-1]
    assert trained["result"]["structuredContent"]["status"] == "Succeeded"
    # A run's steps live in SageMaker, not in the table: a step change is pushed when the
    # run's answer is refreshed (every 10 s), so these 1 s steps pass between two refreshes;
    # its end, recorded by pipeline-router, is pushed at the next round.


def test_another_callers_listen_naming_the_first_callers_task_sees_nothing(servers):
    mine, _ = asyncio.run(submitted_task(servers["url"], {"document": "mine"}))
    theirs = Listen(servers["bearer_url"], [mine, f"{uuid.uuid4()}.{'0' * 32}"],
                    headers={"Authorization": f"Bearer {BEARER_TOKEN}"})
    messages = theirs.ended(30)
    assert theirs.status == 200
    assert ack_of(messages)["notifications"]["taskIds"] == []
    assert not theirs.tasks()
    assert "result" in messages[-1] and len(messages) == 2, messages
    assert mine not in json.dumps(messages)


@pytest.fixture(scope="module")
def short_listens():
    """mcp-tools holding a listen for at most 3 s."""
    # Warm: a client's server/discover that waits out a cold start falls back to the legacy
    # lifecycle, which has no tasks.
    yield from mcp_under_watch({"AUTH_MODE": "none", "LISTEN_MAX_SECS": "3", "TASK_POLL_INTERVAL_MS": "200"},
                               "watch-short-listens", warm=True)


def test_a_listen_that_outlives_its_time_ends_cleanly_and_the_next_picks_up(short_listens, aws, notify):
    task, _ = asyncio.run(submitted_task(short_listens, {"document": "slow"}))
    started = time.monotonic()
    first = Listen(short_listens, [task])
    messages = first.ended(30)
    assert time.monotonic() - started < 10
    assert [p["status"] for _, p in first.tasks()] == ["working"]
    assert messages[-1]["id"] == 7 and "result" in messages[-1], messages[-1]

    second = Listen(short_listens, [task], request_id=8)
    assert second.acked.wait(30)
    notify(success_message(inference_id_of(task), put_output(aws, b'{"label": "late"}')))
    messages = second.ended(30)
    assert ack_of(messages)["notifications"]["taskIds"] == [task]
    statuses = [p["status"] for _, p in second.tasks()]
    assert statuses[-1] == "completed", statuses
    assert messages[-1]["id"] == 8
