"""Runs mcp-tools (and the other functions) under `cargo lambda watch` against the local stack,
for tests that drive it with the official Python MCP SDK. Started by `make test` inside
scripts/local_stack.py (--sagemaker ... --lambda), which provides the environment."""

import contextlib
import hashlib
import http.client
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from lambda_watch import FUNCTION_ENV, WatchError, free_port, start_watch, stop, wait_started  # noqa: E402
BEARER_TOKEN = "local-test-token-4f1c"
ENDPOINT_NAME = FUNCTION_ENV["ASYNC_ENDPOINT_NAME"]
ALLOWED_ORIGIN = "https://console.example.com:443"


def ok(result):
    """The structured result of a successful tool call; the same JSON travels as text beside it."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result):
    assert result.is_error, result.structured_content
    return " ".join(c.text for c in result.content)


def need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run these tests with `make test` (they need the local stack)", 2)
    return value


def mcp_under_watch(env: dict, name: str, concurrency: int = 1, warm: bool = False):
    """For a module's fixture to `yield from`: mcp-tools under a cargo lambda watch of its own,
    with `env` over the stack's, its MCP URL; stopped at teardown. `warm`: wait until it has
    started, so a first client does not meet its cold start."""
    port = free_port()
    try:
        proc = start_watch(port, env, name, concurrency=concurrency)
        if warm:
            wait_started(proc, port, name)
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    stop(proc)


@contextlib.contextmanager
def mcp_in_front_of(fake, env: dict, name: str):
    """mcp-tools under a cargo lambda watch of its own, with `env` over the stack's (pointing it
    at `fake`, a local server with a stop()), its MCP URL. On leaving, the watch is stopped and
    then `fake`; `fake` is stopped too when the watch does not start."""
    port = free_port()
    try:
        proc = start_watch(port, env, name)
    except WatchError as e:
        fake.stop()
        pytest.exit(str(e), 2)
    try:
        yield f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    finally:
        stop(proc)
        fake.stop()


def standin_invocations() -> list:
    """Every InvokeEndpointAsync the SageMaker stand-in's runtime has received."""
    url = f"{need('AWS_ENDPOINT_URL_SAGEMAKER')}/_standin/invocations"
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())["invocations"]


@pytest.fixture(scope="session")
def servers():
    need("AWS_ENDPOINT_URL")
    need("AWS_ENDPOINT_URL_SAGEMAKER")
    port = int(need("LAMBDA_PORT"))
    bearer_port = free_port()
    common = {"MCP_ALLOWED_ORIGINS": ALLOWED_ORIGIN, "TASK_POLL_INTERVAL_MS": "200"}
    try:
        procs = [
            start_watch(port, {**common, "AUTH_MODE": "none"}, "watch-none"),
            start_watch(bearer_port, {**common, "AUTH_MODE": "bearer",
                                      "MCP_BEARER_TOKEN_SHA256": hashlib.sha256(BEARER_TOKEN.encode()).hexdigest()},
                        "watch-bearer"),
        ]
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "port": port,
           "bearer_url": f"http://127.0.0.1:{bearer_port}/lambda-url/mcp-tools/mcp"}
    for proc in procs:
        stop(proc)


@pytest.fixture(scope="session")
def aws():
    kw = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"], "region_name": os.environ["AWS_REGION"]}
    return {"ddb": boto3.client("dynamodb", **kw), "s3": boto3.client("s3", **kw),
            "table": os.environ["RESULTS_TABLE"], "bucket": os.environ["IO_BUCKET"],
            "runs_table": os.environ["PIPELINE_RESULTS_TABLE"]}


def invoke(servers: dict, function: str, event: dict) -> dict:
    """Invokes a function directly, as the Lambda API would (the local watch at `servers["port"]`
    builds it on first use); its answer."""
    url = f"http://127.0.0.1:{servers['port']}/2015-03-31/functions/{function}/invocations"
    req = urllib.request.Request(url, data=json.dumps(event).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="session")
def notify(servers):
    """Delivers a SageMaker notification to notification-handler, as SNS would."""
    def deliver(message: dict) -> dict:
        event = {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0",
                              "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:mcp-inference-success:1",
                              "Sns": {"Type": "Notification", "MessageId": f"m-{time.time_ns()}",
                                      "TopicArn": "arn:aws:sns:us-east-1:123456789012:mcp-inference-success",
                                      "Subject": None, "Message": json.dumps(message),
                                      "Timestamp": "2026-11-20T10:15:02.118Z", "SignatureVersion": "1",
                                      "Signature": "x", "SigningCertUrl": "https://x", "UnsubscribeUrl": "https://x",
                                      "MessageAttributes": {}}}]}
        return invoke(servers, "notification-handler", event)
    return deliver


@pytest.fixture(scope="session")
def faulty(servers):
    """mcp-tools whose InvokeEndpointAsync goes to the SageMaker stand-in's async runtime (which
    runs the model, writes S3 and notifies notification-handler) with faults armed on demand.
    Short thresholds, so a lost notification is looked for in S3 after 2 s and a lost invoke
    answer is given up after 1 s."""
    standin = need("AWS_ENDPOINT_URL_SAGEMAKER")
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "none", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": standin,
                                  "RECONCILE_AFTER_SECS": "2", "INVOKE_ATTEMPT_TIMEOUT_SECS": "1"},
                           "watch-faulty")
    except WatchError as e:
        pytest.exit(str(e), 2)

    def control(method: str, path: str, body=None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{standin}/_standin/{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read()
            return json.loads(text) if text else {}

    class Standin:
        url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"

        @staticmethod
        def arm(fault: str, times: int = 1):
            control("POST", "faults", {"fault": fault, "times": times})

        @staticmethod
        def invocations(inference_id: str) -> list:
            return [c for c in standin_invocations() if c["inference_id"] == inference_id]

    control("DELETE", "faults")
    yield Standin
    control("DELETE", "faults")
    stop(proc)


@pytest.fixture(scope="session")
def gateway(servers):
    """Invokes gateway-target as AgentCore Gateway does: the tool's arguments as the event, the
    qualified tool name in the client context. Returns (HTTP status, answer)."""
    def invoke(tool, arguments, port=None, context=None):
        if context is None:
            context = {"custom": {"bedrockAgentCoreToolName": f"mcp-tools___{tool}"}}
        url = f"http://127.0.0.1:{port or servers['port']}/2015-03-31/functions/gateway-target/invocations"
        # As `cargo lambda invoke --client-context-file` sends it.
        headers = {"lambda-runtime-client-context": json.dumps(context)} if context else {}
        req = urllib.request.Request(url, data=json.dumps(arguments).encode(), method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())
    return invoke


class DynamoDbCounter:
    """A proxy in front of moto's DynamoDB that counts each operation per inference id and can
    act just before a given call reaches moto (`before`), so a test states what happened in
    calls made, not in seconds."""

    def __init__(self, upstream: str):
        self.upstream = urllib.parse.urlparse(upstream)
        self.counts: Counter = Counter()
        self.hooks: dict = {}
        self.lock = threading.Lock()
        counter = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                operation = self.headers.get("X-Amz-Target", "").rpartition(".")[2]
                hook = counter.record(operation, body)
                if hook:
                    hook()
                conn = http.client.HTTPConnection(counter.upstream.hostname, counter.upstream.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request("POST", self.path, body=body, headers=headers)
                resp = conn.getresponse()
                answer = resp.read()
                self.send_response(resp.status)
                for name, value in resp.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                conn.close()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, operation: str, body: bytes):
        request = json.loads(body or b"{}")
        key = request.get("Key") or request.get("Item") or {}
        inference_id = key.get("inference_id", {}).get("S")
        with self.lock:
            self.counts[(operation, inference_id)] += 1
            return self.hooks.pop((operation, inference_id, self.counts[(operation, inference_id)]), None)

    def count(self, operation: str, inference_id: str) -> int:
        with self.lock:
            return self.counts[(operation, inference_id)]

    def before(self, operation: str, inference_id: str, nth: int, action) -> None:
        """Runs `action` when the nth `operation` call for `inference_id` arrives, before moto
        answers it."""
        with self.lock:
            self.hooks[(operation, inference_id, nth)] = action

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def counted(servers):
    """mcp-tools whose DynamoDB calls go through a DynamoDbCounter (the fixture's value, with
    the server's `url`)."""
    counter = DynamoDbCounter(need("AWS_ENDPOINT_URL"))
    with mcp_in_front_of(counter, {"AUTH_MODE": "none", "AWS_ENDPOINT_URL_DYNAMODB": counter.url},
                         "watch-counted") as url:
        counter.mcp_url = url
        yield counter
