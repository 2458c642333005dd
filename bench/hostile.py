"""What a hostile request costs mcp-tools: each one's peak memory and time beside a cheap request
of the same size, the function in its own process under a Runtime API of its own (runtime_api.py),
bearer mode, serving the example catalog.

Peak memory is the process's VmHWM from /proc/<pid>/status, reset before the request (writing 5
to /proc/<pid>/clear_refs), less its resident memory just before it: what that one request added
at its peak. Each request runs in a fresh process, warmed by one tools/list. Time is the Runtime API's, from the event's last byte out to the reply's last byte in.
The cheap request beside each is the same size and refused as cheaply as the function can: a body
that is not JSON, a string where an object is wanted, or the same array where a string is wanted.
No request here reaches AWS: each is refused before any call (AWS_ENDPOINT_URL points at a closed
port, so one that did would fail, not pass).

tests/mcp/test_hostile_input.py runs the same requests against the debug build and holds what
they answer; `bench/run.py --hostile-only` prints and records the figures of the release build.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from runtime_api import RuntimeApi

ROOT = Path(__file__).resolve().parents[1]
HOST = "abc.lambda-url.us-east-1.on.aws"
TOKEN = "bench-token"
MB = 1024 * 1024


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def function_env(runtime_api: str) -> dict:
    """What Lambda and the template would give mcp-tools, bearer mode, the example catalog."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": runtime_api,
        "AWS_LAMBDA_FUNCTION_NAME": "mcp-tools",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_FORMAT": "json",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        # Nothing listens there: a request that reached AWS would fail, not pass unnoticed.
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "RESULTS_TABLE": "results",
        "PIPELINE_RESULTS_TABLE": "pipeline-results",
        "IO_BUCKET": "io-bucket",
        "ASYNC_ENDPOINT_NAME": "mcp-doc-processor-async",
        "PIPELINE_NAME": "mcp-intent-classifier-pipeline",
        "TOOL_CATALOG": str(ROOT / "infra" / "catalog.example.json"),
        "AUTH_MODE": "bearer",
        "MCP_BEARER_TOKENS": f"bench:{sha256(TOKEN)}",
        "CALLER_SUBMITS_PER_MINUTE": "0",
        "CALLER_RUNS_PER_HOUR": "0",
        "CALLER_WAITS_MAX": "0",
        "CALLER_READS_PER_MINUTE": "0",
    }


def event(body: bytes, token: str | None, headers: dict | None = None) -> bytes:
    """A Function URL event (payload format 2.0) of a POST to /mcp."""
    all_headers = {"host": HOST, "content-type": "application/json", "mcp-protocol-version": "2025-11-25",
                   "accept": "application/json, text/event-stream"}
    if token:
        all_headers["authorization"] = f"Bearer {token}"
    all_headers.update(headers or {})
    return json.dumps({
        "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
        "headers": all_headers, "isBase64Encoded": False, "body": body.decode(),
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc", "domainName": HOST, "domainPrefix": "abc",
            "requestId": "r", "routeKey": "$default", "stage": "$default",
            "time": "20/Nov/2026:10:00:00 +0000", "timeEpoch": 1_795_000_000_000,
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "1.2.3.4", "userAgent": "t"},
        },
    }).encode()


@dataclass
class Reply:
    status: int
    body: bytes
    ms: float
    peak_mb: float


class McpTools:
    """One mcp-tools process under a Runtime API of its own; stopped by `close`."""

    def __init__(self, binary: Path, log: Path):
        self.api = RuntimeApi("mcp-tools")
        self.log = open(log, "w")
        self.proc = subprocess.Popen([str(binary)], env=function_env(self.api.address),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        if not self.api.ready.wait(30):
            self.close()
            raise RuntimeError(f"mcp-tools did not ask for an invocation within 30 s (log: {log})")

    def status(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])  # kB
        raise KeyError(field)

    def call(self, body: bytes, token: str | None = TOKEN, headers: dict | None = None) -> Reply:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")
        before_kb = self.status("VmRSS")
        inv = self.api.invoke(event(body, token, headers), timeout=120)
        peak_kb = self.status("VmHWM")
        if inv.response is None:
            raise RuntimeError(f"the function answered with an error: {inv.error!r}")
        prelude, _, reply = inv.response.partition(b"\0" * 8)
        status = json.loads(prelude).get("statusCode", 0)
        return Reply(status, reply, inv.duration_ms, (peak_kb - before_kb) / 1024)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.api.close()
        self.log.close()


def tools_call(name: str, arguments: dict | str, meta: dict | None = None, request_id=1) -> bytes:
    """A tools/call body; `arguments` as text is put in as it is (for bodies built by size)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    meta_text = f',"_meta":{json.dumps(meta)}' if meta else ""
    return (f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{args}{meta_text}}}}}').encode()


def zeros(size: int) -> str:
    """A JSON array of zeros, `size` bytes long."""
    return "[" + ",".join(["0"] * ((size - 1) // 2)) + "]"


def empty_objects(count: int) -> str:
    return "[" + ",".join(["{}"] * count) + "]"


def pairs() -> list[tuple[str, dict, dict]]:
    """(what, hostile request, the same-size cheap one): call() keyword arguments each."""
    five_mb = 5 * MB - 4096
    wide = zeros(five_mb).encode()
    many = 200_000  # {} items: within the body's bound of values, past the tool's maxItems of 500
    customers = empty_objects(many)
    over_values = empty_objects(1_300_000)
    return [
        ("5 MB `[0,0,…]`, no token",
         {"body": wide, "token": None},
         {"body": b"x" * len(wide), "token": None}),
        ("5 MB `[0,0,…]` as submit_job's payload, with a token",
         {"body": tools_call("submit_job", '{"payload":' + zeros(five_mb - 200) + "}")},
         {"body": tools_call("submit_job", {"payload": "x" * (five_mb - 230)})}),
        (f"{many:,} `{{}}` customers against maxItems 500 (score_churn_risk)",
         {"body": tools_call("score_churn_risk", '{"customers":' + customers + "}")},
         {"body": tools_call("summarize_document", '{"document":' + customers + "}")}),
        ("1,300,000 `{}` customers (past the body's bound of values)",
         {"body": tools_call("score_churn_risk", '{"customers":' + over_values + "}")},
         {"body": tools_call("score_churn_risk", {"customers": "x" * len(over_values)})}),
        ("a 300 KB method name",
         {"body": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m" * 300_000}).encode()},
         {"body": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "m" * 299_970}).encode()}),
        ("a 100 KB progress token",
         {"body": tools_call("check_job_status", {"inference_id": "x"}, {"progressToken": "t" * 100_000})},
         {"body": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                              "params": {"_meta": {"pad": "t" * 100_000}}}).encode()}),
    ]


def bench_hostile(binary: Path, work: Path, repeats: int = 3) -> list[dict]:
    """Each pair's median peak and time over `repeats` runs. Every request runs in a fresh,
    warmed process: in a process that served a large request before, the allocator's retained
    pages would hide part of the next one's peak."""
    warm = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}).encode()
    baseline: list[float] = []

    def measured(request: dict) -> Reply:
        fn = McpTools(binary, work / "mcp-tools-hostile.log")
        try:
            fn.call(warm)
            baseline.append(fn.status("VmRSS") / 1024)
            return fn.call(**request)
        finally:
            fn.close()

    def median(xs):
        return sorted(xs)[len(xs) // 2]

    rows = []
    for what, hostile, cheap in pairs():
        runs = [(measured(hostile), measured(cheap)) for _ in range(repeats)]
        rows.append({
            "what": what,
            "bytes": len(hostile["body"]),
            "status": runs[0][0].status,
            "answer": runs[0][0].body[:160].decode(errors="replace"),
            "answer_bytes": len(runs[0][0].body),
            "peak_mb": median([h.peak_mb for h, _ in runs]),
            "ms": median([h.ms for h, _ in runs]),
            "cheap_peak_mb": median([c.peak_mb for _, c in runs]),
            "cheap_ms": median([c.ms for _, c in runs]),
        })
    rows.append({"baseline_rss_mb": median(baseline)})
    return rows
