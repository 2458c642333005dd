"""What keeping one task's outcome in view costs for a minute, measured: a `subscriptions/listen`
held its whole minute (one mcp-tools invocation, LISTEN_MAX_SECS=60) against polling `tasks/get`
every 5 s (the default pollIntervalMs) for the same minute, on a task that stays working. Spoken
as the wire straight to the function's Runtime API (a held listen outlasts the bench's Function
URL front, which waits a minute at most); every AWS call counted at the emulator."""

from __future__ import annotations

import json
import time

import cost
from function_url import function_url_event
from runtime_api import RuntimeApi

HELD_S = 60
POLL_EVERY_S = 5
# Tasks named on one listen, each held a minute: what one held invocation shares (the most a
# listen takes is 100).
SHARED = (10, 100)
# The emulator's endpoint writes every job's output at once: a reconcile from S3 (after 60 s by
# default) would complete the task mid-measure.
# The tasks for the shared listens are submitted at once: past the default 60 a minute.
LISTEN_ENV = {"LISTEN_MAX_SECS": str(HELD_S), "FUNCTION_TIMEOUT_SECS": "120", "RECONCILE_AFTER_SECS": "86400",
              "CALLER_SUBMITS_PER_MINUTE": "1000"}
TASKS = "io.modelcontextprotocol/tasks"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}


def call(runtime: RuntimeApi, method: str, params: dict, name: str | None = None,
         timeout: float = 60, meta: dict = META) -> tuple[list[dict], object]:
    """One JSON-RPC request through a Function URL event: the messages of its reply (JSON or an
    event stream) and the invocation. `meta`: the request's `_meta` (the tasks extension's by
    default)."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}})
    inv = runtime.invoke(function_url_event("POST", "/mcp", "", headers, body.encode()), timeout=timeout)
    if inv.response is None:
        raise SystemExit(f"mcp-tools {method}: the function reported an error: {inv.error!r}")
    _, _, streamed = inv.response.partition(b"\0" * 8)
    text = streamed.decode()
    if text.lstrip().startswith("{"):
        return [json.loads(text)], inv
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()], inv


def result_of(messages: list[dict], what: str) -> dict:
    for message in messages:
        if "result" in message:
            return message["result"]
        if "error" in message:
            raise SystemExit(f"mcp-tools {what}: {message['error']}")
    raise SystemExit(f"mcp-tools {what}: no result in {messages!r}")


def submitted(runtime: RuntimeApi, fresh) -> str:
    """A task that stays working (submitted, never notified): its id."""
    return result_of(call(runtime, "tools/call", {
        "name": "submit_job", "arguments": {"document": "Invoice 7: total 12.50 EUR",
                                            "idempotency_key": fresh("listen")}}, "submit_job")[0], "submit_job")["taskId"]


def listened(runtime: RuntimeApi, recorder, task_ids: list[str]) -> dict:
    """A minute of one listen naming `task_ids`: its calls and invocation, and what was heard."""
    mark = recorder.mark()
    messages, inv = call(runtime, "subscriptions/listen", {"notifications": {"taskIds": task_ids}},
                         timeout=HELD_S + 30)
    return {"tasks": len(task_ids), "calls": recorder.since(mark),
            "invocations": [cost.Invocation("mcp-tools", inv.duration_ms)],
            "notifications": sum(m.get("method") == "notifications/tasks" for m in messages),
            "acknowledged": any(m.get("method") == "notifications/subscriptions/acknowledged" for m in messages),
            "ended": any("result" in m for m in messages)}


def held_minute(runtime: RuntimeApi, recorder, fresh) -> dict:
    """Tasks that stay working: a minute of listening to one, a minute of polling it, and a
    minute of one listen naming each of [`SHARED`] tasks. Returns each way's calls and
    invocations, and what was heard."""
    task_id = submitted(runtime, fresh)
    one = listened(runtime, recorder, [task_id])
    # The reads quota counts per clock minute (one counter write for each minute a caller
    # reads in): a minute of polling that straddled two would be billed a write that a caller
    # polling all along pays once a minute. Start just after a minute begins.
    second = time.time() % 60
    if second > 1:
        time.sleep(60 - second + 0.2)
    mark, polls, started = recorder.mark(), [], time.monotonic()
    for n in range(HELD_S // POLL_EVERY_S):
        time.sleep(max(0.0, started + n * POLL_EVERY_S - time.monotonic()))
        got, inv = call(runtime, "tasks/get", {"taskId": task_id})
        if result_of(got, "tasks/get").get("status") != "working":
            raise SystemExit(f"the polled task left working: {got!r}")
        polls.append(cost.Invocation("mcp-tools", inv.duration_ms))
    polled = {"calls": recorder.since(mark), "invocations": polls}
    shared = {}
    for count in SHARED:
        ids = [task_id] + [submitted(runtime, fresh) for _ in range(count - 1)]
        shared[count] = listened(runtime, recorder, ids)
    return {"listen": one, "poll": polled, "shared": shared}
