"""Completion events as a consumer sees them: a rule on moto's EventBridge delivers this
project's events to an SQS queue. Here the outcome a status check finds in S3 (its notification
lost) is announced by mcp-tools itself; notification-handler's events (a success, a failure, a
repeated delivery, a failed write) are checked against moto in its own tests (against_moto.rs)."""

import json
import os
import time
import urllib.request
import uuid

import boto3
import pytest

from conftest import need, ok
from demo import completion_bus
from lambda_watch import WatchError, free_port, start_watch, stop
from test_faults import call


@pytest.fixture(scope="module")
def bus(servers):
    kw = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"], "region_name": os.environ["AWS_REGION"]}
    events, sqs = boto3.client("events", **kw), boto3.client("sqs", **kw)
    name, queue_url = completion_bus(events, sqs, f"completions-{uuid.uuid4().hex[:8]}")

    def delivered():
        found = []
        while True:
            messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return found
            found.extend(json.loads(m["Body"]) for m in messages)

    return {"name": name, "delivered": delivered}


@pytest.fixture(scope="module")
def announcing(bus):
    """mcp-tools whose invokes go to the stand-in's runtime (faults on demand), which looks in S3
    after 2 s, and announces what it records on the test's bus."""
    standin = need("AWS_ENDPOINT_URL_SAGEMAKER")
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "none", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": standin,
                                  "RECONCILE_AFTER_SECS": "2", "EVENT_BUS_NAME": bus["name"]},
                           "watch-announcing")
    except WatchError as e:
        pytest.exit(str(e), 2)

    def arm(fault):
        req = urllib.request.Request(f"{standin}/_standin/faults", data=json.dumps({"fault": fault, "times": 1}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()

    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "arm": arm}
    stop(proc)


def test_an_outcome_found_in_s3_is_announced_once_with_what_is_recorded(announcing, bus, aws):
    announcing["arm"]("accept-silently")  # the model runs and writes S3; no notification follows
    submitted = ok(call(announcing["url"], "submit_job", {"document": "a quarterly report"}))
    inference_id = submitted["inference_id"]
    time.sleep(3)
    deadline = time.time() + 30
    while True:
        done = ok(call(announcing["url"], "check_job_status", {"inference_id": inference_id}))
        if done["status"] != "pending" or time.time() > deadline:
            break
        time.sleep(0.5)
    assert done["status"] == "completed"
    # Read again: nothing new recorded, nothing announced.
    ok(call(announcing["url"], "check_job_status", {"inference_id": inference_id}))
    events = [e for e in bus["delivered"]() if e["detail"]["inference_id"] == inference_id]
    assert len(events) == 1, events
    [event] = events
    assert (event["source"], event["detail-type"]) == ("mcp.async-jobs", "Async Job Completed")
    item = aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                               ConsistentRead=True)["Item"]
    detail = event["detail"]
    assert detail == {
        "inference_id": inference_id, "status": "completed", "owner": item["owner"]["S"],
        "endpoint_name": item["endpoint_name"]["S"], "output_location": submitted["output_location"],
        "submitted_at": item["submitted_at"]["S"], "completed_at": item["completed_at"]["S"], "reconciled": True,
        "traceparent": item["traceparent"]["S"],
    }, detail
    assert "result" not in detail and "report" not in json.dumps(detail)
