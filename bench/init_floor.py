"""Init against its floors: each function's cold start beside an empty Rust Lambda's (bench/
empty-function), buffered for the event functions and streamed for mcp-tools, and beside an
empty Rust Lambda's that first does the SDK's one-time work the functions do in init (its
configuration, a DynamoDB client, the warm-up read), in rounds of fresh processes. A round
spawns each function once, in an order that turns by one each round, so a slow moment of the
machine falls on every function alike."""

from __future__ import annotations

import asyncio
import json
import statistics

from builds import RELEASE, ROOT
from emulator import Emulator
from function_url import FunctionUrl, function_url_event
from functions import Functions, variant
from lambda_events import gateway_event, router_event, sns_event
from processes import Function, stop
from runtime_api import RuntimeApi
from local_aws import OUTPUT, RESULTS_TABLE

EXAMPLE_CATALOG = ROOT / "infra" / "catalog.example.json"
# Each function measured, by label: its floor's label.
FLOOR_OF = {
    "notification-handler": "empty buffered Rust Lambda",
    "pipeline-router": "empty buffered Rust Lambda",
    "gateway-target": "empty buffered Rust Lambda",
    "mcp-tools": "empty streaming Rust Lambda",
    "mcp-tools, example catalog": "empty streaming Rust Lambda",
}
# The floor of every function's own init: the one-time work of the SDK done alone.
SDK_FLOOR = "empty Rust Lambda with the SDK's one-time work"
FLOORS = ("empty buffered Rust Lambda", "empty streaming Rust Lambda", SDK_FLOOR)


def initialize_request() -> tuple[bytes, None]:
    """What an MCP client sends first, through the Function URL."""
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return function_url_event("POST", "/mcp", "", headers, body), None


def subjects(fns: Functions, work, fresh) -> list[tuple[str, Function, object]]:
    """(label, function, its first event) for each function and each floor."""
    def floor(name: str, env: dict | None = None) -> Function:
        return Function(name, [str(RELEASE / name)], env or {}, work / f"{name}.log")

    tools = fns.rust["mcp-tools"]
    return [
        ("empty buffered Rust Lambda", floor("empty-buffered"), lambda: (sns_event(fresh("init"), OUTPUT), None)),
        (SDK_FLOOR, floor("empty-sdk", {"RESULTS_TABLE": RESULTS_TABLE}),
         lambda: (sns_event(fresh("init"), OUTPUT), None)),
        ("notification-handler", fns.rust["notification-handler"], lambda: (sns_event(fresh("init"), OUTPUT), None)),
        ("pipeline-router", fns.rust["pipeline-router"], lambda: (router_event(fresh("init"), "sess-init"), None)),
        ("gateway-target", fns.rust["gateway-target"], lambda: gateway_event(fresh("init"))),
        ("empty streaming Rust Lambda", floor("empty-streaming"), initialize_request),
        ("mcp-tools", tools, initialize_request),
        ("mcp-tools, example catalog",
         variant(tools, {"TOOL_CATALOG": str(EXAMPLE_CATALOG)}, "mcp-tools-catalog.log"), initialize_request),
    ]


def init_rounds(emulator: Emulator, fns: Functions, rounds: int, work, fresh) -> dict[str, list[float]]:
    """Init (spawn to the first `next`, Lambda's Init Duration) of each, `rounds` times, by label."""
    measured = subjects(fns, work, fresh)
    out: dict[str, list[float]] = {label: [] for label, _, _ in measured}
    for r in range(rounds):
        turn = r % len(measured)
        for label, fn, first_event in measured[turn:] + measured[:turn]:
            runtime = RuntimeApi(fn.name)
            inv = runtime.submit(*first_event())
            proc, started = fn.spawn(runtime, emulator.http_endpoint)
            try:
                if not inv.done.wait(60):
                    raise SystemExit(f"{label}: no answer to its first event within 60 s (see {fn.logs})")
                if inv.response is None or runtime.first_next_ns is None:
                    raise SystemExit(f"{label}: its first event failed: {inv.error!r} (see {fn.logs})")
                out[label].append((runtime.first_next_ns - started) / 1e6)
            finally:
                stop(proc, runtime)
    return out


# A catalog tool's call its schema refuses: nothing is sent anywhere, so what the call costs is
# the schema's check, and on the process's first such call its compile.
REFUSED_CATALOG_CALL = ("score_churn_risk", {"customers": [{"plan": "gold"}]})


def catalog_first_calls(emulator: Emulator, fns: Functions, rounds: int, work) -> dict[str, float]:
    """mcp-tools serving the example catalog, a fresh process each round: the function's time for
    the first call of a catalog tool (its schema compiled in init, with the others) and for the
    same call next, medians."""
    from mcp import Client

    fn = variant(fns.rust["mcp-tools"], {"TOOL_CATALOG": str(EXAMPLE_CATALOG)}, "mcp-tools-catalog-calls.log")
    name, arguments = REFUSED_CATALOG_CALL

    async def two_calls(front: FunctionUrl) -> list[float]:
        took = []
        async with Client(front.url) as client:
            for _ in range(2):
                before = len(front.invocations)
                result = await client.call_tool(name, arguments)
                if not result.is_error:
                    raise SystemExit(f"mcp-tools {name}: arguments its schema should refuse were taken")
                took.append(sum(inv.duration_ms for inv in front.invocations[before:]))
        return took

    first, next_ = [], []
    for _ in range(rounds):
        runtime = RuntimeApi(fn.name)
        front = FunctionUrl(runtime)
        proc, _ = fn.spawn(runtime, emulator.http_endpoint)
        try:
            one, two = asyncio.run(two_calls(front))
            first.append(one)
            next_.append(two)
        finally:
            stop(proc, runtime)
            front.close()
    return {"first_ms": statistics.median(first), "next_ms": statistics.median(next_)}
