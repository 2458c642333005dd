"""Runs mcp-tools (and the other functions) under `cargo lambda watch` against the local stack,
for tests that drive it with the official Python MCP SDK. Started by `make test` inside
scripts/local_stack.py (--sagemaker ... --lambda), which provides the environment."""

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
BEARER_TOKEN = "local-test-token-4f1c"
ENDPOINT_NAME = "mcp-doc-processor-async"
PIPELINE_NAME = "mcp-intent-classifier-pipeline"
ALLOWED_ORIGIN = "https://console.example.com:443"


def need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run these tests with `make test` (they need the local stack)", 2)
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_watch(port: int, extra_env: dict, log_name: str) -> subprocess.Popen:
    env = {k: os.environ[k] for k in (
        "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_REGION", "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED", "RESULTS_TABLE", "PIPELINE_RESULTS_TABLE",
        "PIPELINE_RESULTS_QUEUE_URL", "IO_BUCKET") if k in os.environ}
    env.update({"ASYNC_ENDPOINT_NAME": ENDPOINT_NAME, "PIPELINE_NAME": PIPELINE_NAME,
                "MCP_ALLOWED_ORIGINS": ALLOWED_ORIGIN, "RUST_LOG": "info"})
    env.update(extra_env)
    local = ROOT / ".local"
    local.mkdir(exist_ok=True)
    env_file = local / f"{log_name}.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    log = open(local / f"{log_name}.log", "w")
    # cargo-lambda lives in the venv beside this interpreter.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = subprocess.Popen(
        ["cargo", "lambda", "watch", "--invoke-address", "127.0.0.1", "--invoke-port", str(port),
         "--ignore-changes", "--disable-cors", "--env-file", str(env_file)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PATH": path},
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.exit(f"cargo lambda watch exited with {proc.returncode}; see .local/{log_name}.log", 2)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.exit(f"cargo lambda watch did not listen on {port}", 2)


@pytest.fixture(scope="session")
def servers():
    need("AWS_ENDPOINT_URL")
    need("AWS_ENDPOINT_URL_SAGEMAKER")
    port = int(need("LAMBDA_PORT"))
    bearer_port = free_port()
    procs = [
        start_watch(port, {"AUTH_MODE": "none"}, "watch-none"),
        start_watch(bearer_port, {"AUTH_MODE": "bearer",
                                  "MCP_BEARER_TOKEN_SHA256": hashlib.sha256(BEARER_TOKEN.encode()).hexdigest()},
                    "watch-bearer"),
    ]
    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "port": port,
           "bearer_url": f"http://127.0.0.1:{bearer_port}/lambda-url/mcp-tools/mcp"}
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def aws():
    kw = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"], "region_name": os.environ["AWS_REGION"]}
    return {"ddb": boto3.client("dynamodb", **kw), "s3": boto3.client("s3", **kw),
            "table": os.environ["RESULTS_TABLE"], "bucket": os.environ["IO_BUCKET"],
            "runs_table": os.environ["PIPELINE_RESULTS_TABLE"]}


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
        url = f"http://127.0.0.1:{servers['port']}/2015-03-31/functions/notification-handler/invocations"
        req = urllib.request.Request(url, data=json.dumps(event).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=600) as resp:
            return json.loads(resp.read())
    return deliver
