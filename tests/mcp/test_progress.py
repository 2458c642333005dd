"""Progress while a tool waits, as clients see it: the Python SDK's progress_callback against
mcp-tools under `cargo lambda watch` (streamed, as the Function URL's RESPONSE_STREAM mode
streams), and the raw HTTP reply arriving piece by piece. A request without a progress token
gets the plain JSON answer it always got."""

import asyncio
import http.client
import json
import threading
import time
import urllib.parse
import uuid

from mcp import Client

from conftest import ok
from test_mcp_tools import success_message
from test_tasks import standin_control


def run(coro):
    return asyncio.run(coro)


async def call_with_progress(url, name, args):
    """The result, the seconds from the call to its return, and each notification with the
    seconds from the call to its arrival."""
    seen = []
    started = time.monotonic()

    async def on_progress(progress, total, message):
        seen.append({"at": time.monotonic() - started, "progress": progress, "total": total, "message": message})

    async with Client(url, mode="2026-07-28") as client:
        started = time.monotonic()
        result = await client.call_tool(name, args, progress_callback=on_progress)
        return result, time.monotonic() - started, seen


def submitted(servers) -> str:
    async def submit():
        async with Client(servers["url"], mode="2026-07-28") as client:
            return ok(await client.call_tool("submit_job", {"document": f"progress {uuid.uuid4()}"}))
    return run(submit())["inference_id"]


def complete_later(aws, notify, inference_id, after_secs):
    """Writes the job's output and delivers SageMaker's success notification after a while."""
    def deliver():
        time.sleep(after_secs)
        key = f"outputs/{inference_id}.out"
        aws["s3"].put_object(Bucket=aws["bucket"], Key=key, Body=b'{"label": "invoice"}')
        notify(success_message(inference_id, f"s3://{aws['bucket']}/{key}"))
    thread = threading.Thread(target=deliver, daemon=True)
    thread.start()
    return thread


def test_a_streamed_wait_reports_the_job_over_time_then_answers(servers, aws, notify):
    inference_id = submitted(servers)
    finisher = complete_later(aws, notify, inference_id, after_secs=3)
    result, returned_at, seen = run(call_with_progress(
        servers["url"], "check_job_status", {"inference_id": inference_id, "wait_secs": 10}))
    finisher.join()
    assert ok(result)["status"] == "completed"
    print("timeline:", json.dumps([{**n, "at": round(n["at"], 2)} for n in seen]), "result at", round(returned_at, 2))
    assert len(seen) >= 2, seen
    # The first arrives at once, long before the answer: streamed, not held to the end.
    assert seen[0]["at"] < 1.5 and returned_at - seen[0]["at"] > 2, (seen, returned_at)
    assert seen[0]["message"].startswith("invoked"), seen
    assert seen[-1]["message"] == "outcome recorded: completed", seen
    assert 3 <= seen[-1]["at"] <= returned_at, (seen, returned_at)
    assert all(b["progress"] > a["progress"] for a, b in zip(seen, seen[1:])), seen
    assert all(n["total"] == 10 for n in seen), seen


def test_a_run_followed_with_wait_secs_reports_its_steps_in_order(servers):
    standin_control("POST", "pipeline", {"step_millis": 1500})
    try:
        async def follow():
            async with Client(servers["url"], mode="2026-07-28") as client:
                started = ok(await client.call_tool("trigger_training", {
                    "input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": f"sess-{uuid.uuid4().hex[:8]}"}))
            return await call_with_progress(servers["url"], "check_training_status",
                                            {"execution_arn": started["execution_arn"], "wait_secs": 20})
        result, returned_at, seen = run(follow())
    finally:
        standin_control("DELETE", "pipeline")
    status = ok(result)
    assert status["status"] == "Succeeded", status
    print("steps:", json.dumps([{**n, "at": round(n["at"], 2)} for n in seen]))
    steps = ["PreprocessData", "TrainModel", "EvaluateModel", "RegisterModel"]
    named = [n for n in seen if n["message"].startswith("step ")]
    assert len(named) >= 3, seen
    numbers = [int(n["message"].split()[1]) for n in named]
    assert numbers == sorted(numbers), seen
    for n in named:
        number = int(n["message"].split()[1])
        assert n["message"].startswith(f"step {number} of 4: {steps[number - 1]} "), n
    assert named[-1]["message"] == "step 4 of 4: RegisterModel Succeeded", seen
    assert all(b["progress"] > a["progress"] for a, b in zip(seen, seen[1:])), seen
    assert seen[-1]["progress"] == 4 and all(n["total"] == 4 for n in seen), seen
    assert seen[-1]["at"] <= returned_at


def post(url, body, headers):
    """A raw POST: the status, the headers, and each piece of the body with its arrival time."""
    parts = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    started = time.monotonic()
    conn.request("POST", parts.path, body=json.dumps(body), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25", **headers})
    resp = conn.getresponse()
    pieces = []
    while True:
        line = resp.readline()
        if not line:
            break
        pieces.append((time.monotonic() - started, line))
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, pieces


def check_request(inference_id, wait_secs, token=None):
    params = {"name": "check_job_status", "arguments": {"inference_id": inference_id, "wait_secs": wait_secs}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def test_without_a_token_the_answer_is_plain_json_and_with_one_an_event_stream(servers):
    inference_id = submitted(servers)
    status, headers, pieces = post(servers["url"], check_request(inference_id, 2), {})
    assert status == 200 and headers["content-type"].startswith("application/json"), headers
    answer = json.loads(b"".join(p for _, p in pieces))
    assert answer["id"] == 7 and answer["result"]["structuredContent"]["status"] == "pending"

    status, headers, pieces = post(servers["url"], check_request(inference_id, 3, token="t-1"), {})
    assert status == 200 and headers["content-type"].startswith("text/event-stream"), headers
    assert headers.get("x-accel-buffering") == "no", headers
    events = [(at, json.loads(line[len(b"data:"):])) for at, line in pieces if line.startswith(b"data:")]
    notifications = [(at, e) for at, e in events if e.get("method") == "notifications/progress"]
    results = [(at, e) for at, e in events if "result" in e]
    assert notifications and len(results) == 1, events
    assert all(e["params"]["progressToken"] == "t-1" for _, e in notifications)
    # The first notification's bytes arrived well before the result's, and nothing after it.
    assert results[0][0] - notifications[0][0] > 2, events
    assert events[-1] == results[0]
    assert results[0][1]["result"]["structuredContent"]["status"] == "pending"
