"""What the people who run this see: the functions' JSON log lines (AWS_LAMBDA_LOG_FORMAT=JSON,
as the template's LoggingConfig sets it) with the request id and the job's ids on every line of
its path, nothing secret in them, and valid CloudWatch Embedded Metric Format documents with the
counts the calls imply. Also the Origins `make serve` accepts."""

import hashlib
import json
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from conftest import BEARER_TOKEN, error_text, invoke, need, ok
from test_mcp_tools import _call, http_request, put_output, success_message

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from lambda_watch import LOCAL, LOCAL_ORIGINS, WatchError, free_port, start_watch, stop  # noqa: E402

NAMESPACE = "OpsTest"
AUTH = {"Authorization": f"Bearer {BEARER_TOKEN}"}


@pytest.fixture(scope="module")
def ops(servers):
    """A watch of its own, configured as deployed (JSON logs, bearer auth) plus make serve's
    local Origins, so its log holds only this module's calls."""
    need("AWS_ENDPOINT_URL")
    port = free_port()
    env = {"AUTH_MODE": "bearer", "MCP_BEARER_TOKEN_SHA256": hashlib.sha256(BEARER_TOKEN.encode()).hexdigest(),
           "MCP_ALLOWED_ORIGINS": LOCAL_ORIGINS, "AWS_LAMBDA_LOG_FORMAT": "JSON", "METRICS_NAMESPACE": NAMESPACE}
    try:
        proc = start_watch(port, env, "watch-ops")
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "port": port,
           "log": LOCAL / "watch-ops.log"}
    stop(proc)


def call(ops, name, args):
    import asyncio
    return asyncio.run(_call(ops["url"], "2026-07-28", name, args, headers=AUTH))


def deliver(ops, message):
    """A notification to this watch's notification-handler, as SNS delivers it."""
    event = {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:x",
                          "Sns": {"Type": "Notification", "MessageId": f"sns-{uuid.uuid4()}", "TopicArn": "arn:x",
                                  "Subject": None, "Message": json.dumps(message),
                                  "Timestamp": "2026-11-20T10:15:02.118Z", "SignatureVersion": "1", "Signature": "x",
                                  "SigningCertUrl": "https://x", "UnsubscribeUrl": "https://x",
                                  "MessageAttributes": {}}}]}
    assert invoke(ops, "notification-handler", event) == {"processed": 1}
    return event["Records"][0]["Sns"]["MessageId"]


def function_lines(path: Path):
    """Every line the functions wrote (the watch's own lines and cargo's are plain text that
    does not start with `{`), parsed: each must be JSON."""
    lines = []
    for raw in path.read_text().splitlines():
        if raw.startswith("{"):
            lines.append(json.loads(raw))
        else:
            # A function line in plain text would carry its span like this.
            assert "Lambda runtime invoke" not in raw, raw
    return lines


def spans(line) -> dict:
    merged = {}
    for span in line.get("spans", []):
        merged.update(span)
    return merged


def emf_counts(docs):
    """(metric, dimension values...) -> summed value, over EMF documents checked for shape."""
    counts = Counter()
    for doc in docs:
        meta = doc["_aws"]
        assert isinstance(meta["Timestamp"], int)
        for directive in meta["CloudWatchMetrics"]:
            assert directive["Namespace"] == NAMESPACE
            assert all(isinstance(d, list) and "Function" in d for d in directive["Dimensions"])
            for dims in directive["Dimensions"]:
                for d in dims:
                    assert isinstance(doc[d], str), (d, doc)
            for metric in directive["Metrics"]:
                name = metric["Name"]
                assert metric.get("Unit") in ("Count", "Milliseconds"), metric
                value = doc[name]
                total = sum(value) if isinstance(value, list) else (
                    sum(value["Counts"]) if isinstance(value, dict) else value)
                key = (name,) + tuple(doc[d] for d in directive["Dimensions"][0])
                counts[key] += total if metric["Unit"] == "Count" else 1
    return counts


def test_one_job_is_followed_through_json_logs_and_counted_in_emf(ops, aws):
    secret_input = f"secret-document-{uuid.uuid4().hex}"
    secret_output = f"secret-result-{uuid.uuid4().hex}"
    job = ok(call(ops, "submit_job", {"document": secret_input}))
    inference_id = job["inference_id"]
    message = success_message(inference_id, put_output(aws, json.dumps({"answer": secret_output}).encode()))
    # The outcome after the submission, as SageMaker's clock would have it: the duration is
    # measured from the stored submit time.
    message["eventTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 1))
    sns_message_id = deliver(ops, message)
    done = ok(call(ops, "check_job_status", {"inference_id": inference_id}))
    assert done["status"] == "completed" and done["result"] == {"answer": secret_output}
    assert "never-submitted" in error_text(call(ops, "check_job_status", {"inference_id": "never-submitted"}))
    time.sleep(1)  # the last EMF flush follows the response

    lines = function_lines(ops["log"])
    logs = [line for line in lines if "_aws" not in line]
    docs = [line for line in lines if "_aws" in line]
    assert logs and docs

    # Every log line of this job's path carries its ids, from spans, and a request id.
    of_job = [line for line in logs if spans(line).get("inference_id") == inference_id]
    tools = {spans(line).get("tool") for line in of_job}
    assert {"submit_job", "check_job_status"} <= tools, tools
    assert any(spans(line).get("sns_message_id") == sns_message_id for line in of_job)
    for line in of_job:
        assert spans(line).get("requestId"), line
        assert line["level"] and line["message"] is not None
    assert any(line["message"] == "job submitted" for line in of_job)
    assert any(line["message"] == "outcome recorded" for line in of_job)

    # Nothing secret: the token, the input, the result, a presigned URL.
    text = ops["log"].read_text()
    for secret in (BEARER_TOKEN, secret_input, secret_output, "X-Amz-Signature"):
        assert secret not in text, secret
    # Dependencies stay at WARN: rmcp's per-request INFO lines are gone.
    assert not [line for line in logs if line["level"] == "INFO" and "serve" in json.dumps(line.get("spans", []))]

    counts = emf_counts(docs)
    assert counts[("JobsSubmitted", "mcp-tools")] == 1
    assert counts[("JobsCompleted", "notification-handler")] == 1
    assert counts[("JobDuration", "notification-handler")] == 1
    assert counts[("ToolCalls", "mcp-tools", "submit_job")] == 1
    assert counts[("ToolCalls", "mcp-tools", "check_job_status")] == 2
    assert counts[("ToolErrors", "mcp-tools", "check_job_status")] == 1
    assert counts[("ColdStart", "mcp-tools")] == 1 and counts[("ColdStart", "notification-handler")] == 1
    assert ("DuplicateNotifications", "notification-handler") not in counts


def test_a_duplicate_and_an_unknown_job_are_counted(ops, aws):
    before = emf_counts([line for line in function_lines(ops["log"]) if "_aws" in line])
    unknown = f"never-submitted-{uuid.uuid4().hex}"
    message = success_message(unknown, put_output(aws, b'{"a": 1}'))
    deliver(ops, message)
    deliver(ops, message)
    time.sleep(1)
    after = emf_counts([line for line in function_lines(ops["log"]) if "_aws" in line])
    assert after[("NotificationsForUnknownJobs", "notification-handler")] - \
        before[("NotificationsForUnknownJobs", "notification-handler")] == 1
    assert after[("DuplicateNotifications", "notification-handler")] - \
        before[("DuplicateNotifications", "notification-handler")] == 1


@pytest.mark.parametrize("origin, allowed", [
    ("http://localhost:5173", True), ("http://127.0.0.1:6274", True),
    ("http://evil.example", False), ("http://localhost.evil.example:5173", False), ("https://localhost:5173", False),
])
def test_make_serve_accepts_local_origins_only(ops, origin, allowed):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    status, _, _ = http_request(ops, "POST", {**AUTH, "Origin": origin, "Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream"}, body)
    assert (status == 200) if allowed else (status == 403), (origin, status)
