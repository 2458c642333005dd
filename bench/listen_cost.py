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
# The emulator's endpoint writes every job's output at once: a reconcile from S3 (after 60 s by
# default) would complete the task mid-measure.
LISTEN_ENV = {"LISTEN_MAX_SECS": str(HELD_S), "FUNCTION_TIMEOUT_SECS": "120", "RECONCILE_AFTER_SECS": "86400"}
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


def held_minute(runtime: RuntimeApi, recorder, fresh) -> dict:
    """A task that stays working (submitted, never notified), then a minute of listening to it
    and a minute of polling it. Returns each way's calls and invocations, and what was heard."""
    created = result_of(call(runtime, "tools/call", {
        "name": "submit_job", "arguments": {"document": "Invoice 7: total 12.50 EUR",
                                            "idempotency_key": fresh("listen")}}, "submit_job")[0], "submit_job")
    task_id = created["taskId"]
    mark = recorder.mark()
    messages, inv = call(runtime, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}},
                         timeout=HELD_S + 30)
    listened = {"calls": recorder.since(mark), "invocations": [cost.Invocation("mcp-tools", inv.duration_ms)],
                "notifications": sum(m.get("method") == "notifications/tasks" for m in messages),
                "acknowledged": any(m.get("method") == "notifications/subscriptions/acknowledged" for m in messages),
                "ended": any("result" in m for m in messages)}
    mark, polls, started = recorder.mark(), [], time.monotonic()
    for n in range(HELD_S // POLL_EVERY_S):
        time.sleep(max(0.0, started + n * POLL_EVERY_S - time.monotonic()))
        got, inv = call(runtime, "tasks/get", {"taskId": task_id})
        if result_of(got, "tasks/get").get("status") != "working":
            raise SystemExit(f"the polled task left working: {got!r}")
        polls.append(cost.Invocation("mcp-tools", inv.duration_ms))
    polled = {"calls": recorder.since(mark), "invocations": polls}
    return {"listen": listened, "poll": polled}
