"""mcp-tools as a real MCP client sees it: the official Python SDK against the function under
`cargo lambda watch`, AWS calls going to moto and the SageMaker stand-in."""

import asyncio
import http.client
import json
import time
import urllib.parse
import urllib.request
import uuid

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import error_text, ok, ALLOWED_ORIGIN, BEARER_TOKEN, ENDPOINT_NAME

MODES = ["2026-07-28", "legacy"]
TOOLS = {"submit_job", "check_job_status", "trigger_training", "check_training_status", "check_training_result",
         "answer_training_input", "approve_model_package", "get_model_provenance"}


async def _call(url, mode, name, args, headers=None):
    target = url
    if headers:
        target = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(target, mode=mode) as client:
        return await client.call_tool(name, args)


def call(servers, name, args, mode="2026-07-28"):
    return asyncio.run(_call(servers["url"], mode, name, args))




def success_message(inference_id, output_location, response_body=None):
    message = {
        "awsRegion": "us-east-1", "eventTime": "2026-11-20T10:15:01.902Z", "receivedTime": "2026-11-20T10:14:12.455Z",
        "invocationStatus": "Completed",
        "requestParameters": {"endpointName": ENDPOINT_NAME, "inputLocation": f"s3://x/inputs/{inference_id}.json"},
        "responseParameters": {"contentType": "application/json", "outputLocation": output_location},
        "inferenceId": inference_id, "eventVersion": "1.0", "eventSource": "aws:sagemaker", "eventName": "InferenceResult",
    }
    return message


def put_output(aws, body: bytes) -> str:
    key = f"outputs/{uuid.uuid4()}.out"
    aws["s3"].put_object(Bucket=aws["bucket"], Key=key, Body=body)
    return f"s3://{aws['bucket']}/{key}"


def http_request(servers, method, headers=None, body=b"", url=None):
    parsed = urllib.parse.urlparse(url or servers["url"])
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=600)
    conn.request(method, parsed.path, body=body, headers=headers or {})
    resp = conn.getresponse()
    return resp.status, dict(resp.getheaders()), resp.read()


LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25"}


# ------------------------------------------------------------------ discovery

@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
def test_tools_are_listed_with_schemas_and_honest_annotations(servers, mode):
    async def go():
        async with Client(servers["url"], mode=mode) as client:
            return await client.list_tools()
    tools = {t.name: t for t in asyncio.run(go()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.description
    submit = tools["submit_job"].input_schema["properties"]
    assert {"document", "payload", "options", "idempotency_key", "invocation_timeout_secs", "request_ttl_secs"} <= set(submit)
    assert submit["invocation_timeout_secs"]["maximum"] == 3600
    # The most a streamed wait may ask; a plain call is held to 20 s (test_progress.py).
    assert tools["check_job_status"].input_schema["properties"]["wait_secs"]["maximum"] == 900
    assert set(tools["check_job_status"].input_schema["required"]) == {"inference_id"}
    for name in ("check_job_status", "check_training_status", "check_training_result", "get_model_provenance"):
        assert tools[name].annotations.read_only_hint is True, name
        assert tools[name].annotations.idempotent_hint is True, name
    assert tools["submit_job"].annotations.read_only_hint is False
    assert tools["trigger_training"].annotations.read_only_hint is False


# ------------------------------------------------------------------ jobs

@pytest.mark.parametrize("mode", MODES)
def test_submit_then_notify_then_check_returns_the_result(servers, aws, notify, mode):
    submitted = ok(call(servers, "submit_job", {"document": "Invoice 42: total 12.50 EUR", "options": {"top_k": 2}}, mode))
    inference_id = submitted["inference_id"]
    assert submitted["status"] == "pending" and submitted["submitted_at"]

    item = aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}})["Item"]
    assert item["status"]["S"] == "pending"
    assert item["endpoint_name"]["S"] == ENDPOINT_NAME
    # A small input goes inline (InvokeEndpointAsync's Body): no input object, no location.
    assert "input_location" not in item
    listed = aws["s3"].list_objects_v2(Bucket=aws["bucket"], Prefix=f"inputs/{inference_id}")
    assert listed.get("KeyCount", 0) == 0

    pending = ok(call(servers, "check_job_status", {"inference_id": inference_id}, mode))
    assert pending["status"] == "pending" and not pending.get("probably_lost")

    location = put_output(aws, b'{"label": "invoice", "total": 12.5}')
    notify(success_message(inference_id, location))

    done = ok(call(servers, "check_job_status", {"inference_id": inference_id}, mode))
    assert done["status"] == "completed"
    assert done["result"] == {"label": "invoice", "total": 12.5}
    assert done["submitted_at"] == submitted["submitted_at"]
    assert done["completed_at"] == "2026-11-20T10:15:01.902Z"


def test_wait_secs_returns_on_the_first_read_that_sees_the_outcome(counted, aws, notify):
    def call_counted(name, args):
        return asyncio.run(_call(counted.mcp_url, "2026-07-28", name, args))

    inference_id = ok(call_counted("submit_job", {"payload": {"text": "wait for me"}}))["inference_id"]
    location = put_output(aws, b'{"done": true}')
    # The outcome arrives while check_job_status waits: just before its second read.
    counted.before("GetItem", inference_id, 2, lambda: notify(success_message(inference_id, location)))
    done = ok(call_counted("check_job_status", {"inference_id": inference_id, "wait_secs": 15}))
    assert done["status"] == "completed" and done["result"] == {"done": True}
    # One read saw it pending, the next saw the outcome, and the poll ended there (waiting out
    # wait_secs would have read it about ten times).
    reads = counted.count("GetItem", inference_id)
    assert reads == 2, f"the poll should end when the outcome arrives, not after wait_secs ({reads} reads)"


def test_a_large_output_comes_back_as_a_presigned_url(servers, aws, notify):
    inference_id = ok(call(servers, "submit_job", {"document": "a long report"}))["inference_id"]
    big = json.dumps({"pages": ["lorem ipsum " * 50] * 200}).encode()
    assert len(big) > 64 * 1024
    notify(success_message(inference_id, put_output(aws, big)))

    done = ok(call(servers, "check_job_status", {"inference_id": inference_id}))
    assert done["status"] == "completed" and "result" not in done
    url = done["result_url"]
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=900" in url
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.read() == big


def test_a_failed_job_reports_the_reason(servers, notify):
    inference_id = ok(call(servers, "submit_job", {"document": "bad input"}))["inference_id"]
    notify({"invocationStatus": "Failed", "failureReason": "ClientError: model returned 500",
            "inferenceId": inference_id, "eventSource": "aws:sagemaker", "eventName": "InferenceResult",
            "requestParameters": {"endpointName": ENDPOINT_NAME}})
    failed = ok(call(servers, "check_job_status", {"inference_id": inference_id}))
    assert failed["status"] == "failed"
    assert failed["failure_reason"] == "ClientError: model returned 500"


def test_the_same_idempotency_key_returns_the_first_job(servers, aws):
    key = f"order-{uuid.uuid4()}"
    first = ok(call(servers, "submit_job", {"document": "once", "idempotency_key": key}))
    again = ok(call(servers, "submit_job", {"document": "once", "idempotency_key": key}, "legacy"))
    assert again["inference_id"] == first["inference_id"]
    assert again["idempotent_replay"] is True and "idempotent_replay" not in first
    assert again["submitted_at"] == first["submitted_at"]
    items = aws["ddb"].scan(TableName=aws["table"], FilterExpression="inference_id = :id",
                            ExpressionAttributeValues={":id": {"S": first["inference_id"]}})["Items"]
    assert len(items) == 1
    other = call(servers, "submit_job", {"document": "something else", "idempotency_key": key})
    assert "already used with a different input" in error_text(other)


def test_an_unknown_id_is_a_tool_error(servers):
    result = call(servers, "check_job_status", {"inference_id": "no-such-job"})
    assert 'no job with inference_id "no-such-job"' in error_text(result)


def test_an_expired_item_counts_as_absent(servers, aws):
    inference_id = f"expired-{uuid.uuid4()}"
    aws["ddb"].put_item(TableName=aws["table"], Item={
        "inference_id": {"S": inference_id}, "status": {"S": "completed"},
        "result": {"M": {"x": {"N": "1"}}}, "ttl": {"N": str(int(time.time()) - 5)}})
    assert "no job with inference_id" in error_text(call(servers, "check_job_status", {"inference_id": inference_id}))


def test_a_pending_job_long_past_its_deadline_is_probably_lost(servers, aws):
    inference_id = f"lost-{uuid.uuid4()}"
    aws["ddb"].put_item(TableName=aws["table"], Item={
        "inference_id": {"S": inference_id}, "status": {"S": "pending"},
        "submitted_at": {"S": "2026-01-01T00:00:00.000Z"}, "request_ttl_secs": {"N": "600"},
        "invocation_timeout_secs": {"N": "300"}, "ttl": {"N": str(int(time.time()) + 3600)}})
    view = ok(call(servers, "check_job_status", {"inference_id": inference_id}))
    assert view["status"] == "pending" and view["probably_lost"] is True
    assert "Submit it again with the same idempotency_key" in view["message"]


@pytest.mark.parametrize("args, expected", [
    ({}, "give one of `document`"),
    ({"document": "a", "payload": {"b": 1}}, "not both"),
    ({"document": "a", "invocation_timeout_secs": 0}, "`invocation_timeout_secs` is 0"),
    ({"document": "a", "invocation_timeout_secs": 4000}, "`invocation_timeout_secs` is 4000"),
    ({"document": "a", "request_ttl_secs": 30}, "`request_ttl_secs` is 30"),
    ({"document": "a", "invocation_timeout_secs": 600, "request_ttl_secs": 900}, "at least twice"),
    ({"document": "a", "endpoint_name": "other"}, 'unknown argument "endpoint_name"'),
    ({"document": 42}, "`document` must be a string; got 42"),
    ({"payload": "not an object"}, '`payload` must be a JSON object; got "not an object"'),
    ({"document": "a", "invocation_timeout_secs": "five"}, '`invocation_timeout_secs` must be a whole number from 1 to 3600; got "five"'),
])
def test_bad_submit_arguments_are_tool_errors_that_say_what_is_wrong(servers, args, expected):
    assert expected in error_text(call(servers, "submit_job", args))


def test_numbers_sent_as_strings_are_taken_as_numbers(servers):
    """As the MCP Inspector's CLI sends every --tool-arg, and as Python and TypeScript servers accept."""
    submitted = ok(call(servers, "submit_job", {"document": "a", "invocation_timeout_secs": "100", "request_ttl_secs": "600"}))
    status = ok(call(servers, "check_job_status", {"inference_id": submitted["inference_id"], "wait_secs": "0"}))
    assert status["inference_id"] == submitted["inference_id"]
    assert error_text(call(servers, "check_job_status", {"inference_id": "x", "wait_secs": "25"})) == \
        "`wait_secs` is 25; without a progress token (`_meta.progressToken`) it must be from 0 to 20; with one, up to 35"


def test_bad_check_arguments(servers):
    assert "`wait_secs` is 21" in error_text(call(servers, "check_job_status", {"inference_id": "x", "wait_secs": 21}))
    assert "missing field `inference_id`" in error_text(call(servers, "check_job_status", {}))


def test_an_oversize_document_is_refused_with_the_limit(servers):
    result = call(servers, "submit_job", {"document": "x" * (4 * 1024 * 1024 + 10)})
    assert "the limit is 4194304 bytes" in error_text(result)


# ------------------------------------------------------------------ training

def finished_training(servers, arn, timeout=120):
    """check_training_status until the run is no longer Executing."""
    deadline = time.time() + timeout
    while True:
        status = ok(call(servers, "check_training_status", {"execution_arn": arn}))
        if status["status"] != "Executing" or time.time() > deadline:
            return status
        time.sleep(0.3)


def test_training_runs_are_started_followed_and_recorded(servers):
    session = f"sess-{uuid.uuid4().hex[:12]}"
    started = ok(call(servers, "trigger_training", {"input_data_uri": "s3://mcp-sagemaker-async-io/train/",
                                                    "session_id": session, "max_epochs": 10}))
    assert started["status"] == "Executing" and started["session_id"] == session
    arn = started["execution_arn"]

    listed = ok(call(servers, "check_training_result", {"session_id": session}))
    assert listed["runs"][0]["execution_arn"] == arn
    assert listed["runs"][0]["status"] in ("pending", "Executing", "Succeeded")

    status = finished_training(servers, arn)
    assert status["status"] == "Succeeded"
    assert [s["name"] for s in status["steps"]] == ["PreprocessData", "TrainModel", "EvaluateModel", "RegisterModel"]
    assert all(s["status"] == "Succeeded" for s in status["steps"])

    # The stand-in delivers the completion to pipeline-router, which records it.
    deadline = time.time() + 120
    while time.time() < deadline:
        runs = ok(call(servers, "check_training_result", {"session_id": session}))["runs"]
        if runs[0]["status"] == "Succeeded":
            break
        time.sleep(0.3)
    assert runs[0]["status"] == "Succeeded" and runs[0]["ended_at"]


def test_a_failed_training_run_reports_the_failed_step(servers):
    session = f"sess-{uuid.uuid4().hex[:12]}"
    arn = ok(call(servers, "trigger_training", {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session,
                                                "accuracy_threshold": 0.99}))["execution_arn"]
    status = finished_training(servers, arn)
    assert status["status"] == "Failed"
    assert "EvaluateModel" in status["failure_reason"]
    evaluate = [s for s in status["steps"] if s["name"] == "EvaluateModel"][0]
    assert evaluate["status"] == "Failed" and "below AccuracyThreshold" in evaluate["failure_reason"]


def test_training_errors(servers):
    assert "`session_id`" in error_text(call(servers, "trigger_training",
                                             {"input_data_uri": "s3://mcp-sagemaker-async-io/train/",
                                              "session_id": "a; session_id=b"}))
    assert "`input_data_uri`" in error_text(call(servers, "trigger_training",
                                                 {"input_data_uri": "file:///tmp", "session_id": "s1"}))
    missing = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p/execution/doesnotexist"
    text = error_text(call(servers, "check_training_status", {"execution_arn": missing}))
    assert text == f'no training run "{missing}" was found: check the execution_arn that trigger_training returned'
    assert "not a pipeline execution ARN" in error_text(call(servers, "check_training_status", {"execution_arn": "x"}))
    assert ok(call(servers, "check_training_result", {"session_id": "never-used"}))["runs"] == []


# ------------------------------------------------------------------ HTTP

def test_get_and_delete_answer_405(servers):
    for method in ("GET", "DELETE"):
        status, _, _ = http_request(servers, method, {"Accept": "text/event-stream"})
        assert status == 405, method


def test_a_disallowed_origin_gets_403_and_an_allowed_one_is_served(servers):
    status, _, _ = http_request(servers, "POST", {**JSON_HEADERS, "Origin": "https://evil.example"}, LIST_TOOLS)
    assert status == 403
    status, _, body = http_request(servers, "POST", {**JSON_HEADERS, "Origin": ALLOWED_ORIGIN}, LIST_TOOLS)
    assert status == 200 and b"submit_job" in body


def test_a_foreign_host_gets_403_and_other_paths_404(servers):
    status, _, _ = http_request(servers, "POST", {**JSON_HEADERS, "Host": "evil.example"}, LIST_TOOLS)
    assert status == 403
    status, _, _ = http_request(servers, "POST", JSON_HEADERS, LIST_TOOLS,
                                url=servers["url"].replace("/mcp", "/admin"))
    assert status == 404
    status, headers, body = http_request(servers, "POST", JSON_HEADERS, LIST_TOOLS, url=servers["url"][:-len("/mcp")])
    assert status == 200 and headers.get("content-type", "").startswith("application/json"), "a bare URL works too"


def test_bearer_mode_needs_the_right_token(servers):
    status, headers, _ = http_request(servers, "POST", JSON_HEADERS, LIST_TOOLS, url=servers["bearer_url"])
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, headers, _ = http_request(servers, "POST", {**JSON_HEADERS, "Authorization": "Bearer wrong"},
                                      LIST_TOOLS, url=servers["bearer_url"])
    assert status == 401 and "invalid_token" in headers["www-authenticate"]
    result = asyncio.run(_call(servers["bearer_url"], "2026-07-28", "check_job_status", {"inference_id": "none"},
                               headers={"Authorization": f"Bearer {BEARER_TOKEN}"}))
    assert "no job with inference_id" in error_text(result)
