"""The job lifecycle under faults at SageMaker's edge, end to end through a real MCP client:
mcp-tools invokes the SageMaker stand-in's async runtime, which can answer 500 after queueing,
hang, refuse with a 400, or run a job and never notify. Outcomes reach notification-handler as
SNS would deliver them, or are found in S3 by check_job_status."""

import asyncio
import hashlib
import json
import os
import time
import uuid

import boto3
import pytest
from mcp import Client

from conftest import error_text, ok, ENDPOINT_NAME

# The Rust SDK makes up to 3 attempts; arm a fault for each.
ATTEMPTS = 3


async def _call(url, name, args):
    async with Client(url, mode="2026-07-28") as client:
        return await client.call_tool(name, args)


def call(url, name, args):
    return asyncio.run(_call(url, name, args))




def stored(aws, inference_id):
    return aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                               ConsistentRead=True).get("Item")


def until_done(url, inference_id, timeout=60):
    """check_job_status, long-polling, until the job is no longer pending."""
    deadline = time.time() + timeout
    while True:
        view = ok(call(url, "check_job_status", {"inference_id": inference_id, "wait_secs": 5}))
        if view["status"] != "pending" or time.time() > deadline:
            return view
        time.sleep(0.2)


def test_an_ambiguous_500_leaves_the_job_pending_and_its_notification_completes_it(faulty, aws):
    faulty.arm("accept-then-500", ATTEMPTS)
    submitted = ok(call(faulty.url, "submit_job", {"document": "Invoice 7: total 3.20 EUR",
                                                   "idempotency_key": f"k-{uuid.uuid4()}"}))
    inference_id = submitted["inference_id"]
    assert submitted["status"] == "pending"
    assert "not known yet" in submitted["message"] and "InternalFailure" in submitted["message"]
    assert stored(aws, inference_id)["stage"]["S"] == "uncertain"

    done = until_done(faulty.url, inference_id)
    assert done["status"] == "completed", done
    assert done["result"]["label"] == "invoice"


def test_an_invoke_that_times_out_is_uncertain_not_failed(faulty, aws):
    faulty.arm("accept-then-hang", ATTEMPTS)
    submitted = ok(call(faulty.url, "submit_job", {"document": "a report on hangs"}))
    assert submitted["status"] == "pending" and "not known yet" in submitted["message"]
    assert stored(aws, submitted["inference_id"])["stage"]["S"] == "uncertain"
    assert until_done(faulty.url, submitted["inference_id"])["status"] == "completed"


def test_a_refusal_fails_the_job_with_the_reason_and_the_same_key_redrives_it(faulty, aws):
    key = f"k-{uuid.uuid4()}"
    args = {"document": "receipt for coffee", "idempotency_key": key}
    faulty.arm("refuse-400")
    text = error_text(call(faulty.url, "submit_job", args))
    assert "ValidationError" in text and "Nothing was queued" in text
    assert "not found" not in text, "SageMaker's own text (it can name the account) stays in the log"
    inference_id = text.split("job ")[1].split(" ")[0]
    failed = ok(call(faulty.url, "check_job_status", {"inference_id": inference_id}))
    assert failed["status"] == "failed" and "ValidationError" in failed["failure_reason"]

    again = ok(call(faulty.url, "submit_job", args))
    assert again["inference_id"] == inference_id and again["status"] == "pending"
    assert "idempotent_replay" not in again, "a refused job is submitted again, not replayed"
    assert stored(aws, inference_id)["attempt"]["N"] == "2"
    assert len(faulty.invocations(inference_id)) == 2
    assert until_done(faulty.url, inference_id)["result"]["label"] == "receipt"


# The owner tag of AUTH_MODE=none's one caller (domain::caller::Owner).
LOCAL_OWNER = hashlib.sha256(b"mcp-tools owner v1\0local").hexdigest()[:32]


def inference_id_for_key(key: str) -> str:
    digest = hashlib.sha256(f"submit_job\0{LOCAL_OWNER}\0{ENDPOINT_NAME}\0{key}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))


def test_a_crashed_reservation_is_redriven_by_the_same_key(faulty, aws):
    key = f"k-{uuid.uuid4()}"
    document = "invoice left behind by a crash"
    inference_id = inference_id_for_key(key)
    body = json.dumps({"inputs": document}, separators=(",", ":")).encode()
    now = int(time.time())
    # What a submission that stopped right after its reservation leaves behind: the item, no
    # input in S3, no invoke, and a crash window long past.
    aws["ddb"].put_item(TableName=aws["table"], Item={
        "inference_id": {"S": inference_id}, "status": {"S": "pending"}, "stage": {"S": "reserved"},
        "attempt": {"N": "1"}, "submitted_at": {"S": "2026-01-01T00:00:00.000Z"},
        "endpoint_name": {"S": ENDPOINT_NAME}, "input_location": {"S": f"s3://{aws['bucket']}/inputs/{inference_id}.json"},
        "request_ttl_secs": {"N": "600"}, "invocation_timeout_secs": {"N": "300"},
        "input_sha256": {"S": hashlib.sha256(body).hexdigest()}, "owner": {"S": LOCAL_OWNER},
        "redrive_after": {"N": str(now - 1)}, "ttl": {"N": str(now + 3600)}})
    view = ok(call(faulty.url, "check_job_status", {"inference_id": inference_id}))
    assert "stopped before SageMaker confirmed" in view["message"]

    redriven = ok(call(faulty.url, "submit_job", {"document": document, "idempotency_key": key}))
    assert redriven["inference_id"] == inference_id and "idempotent_replay" not in redriven
    assert redriven["output_location"].startswith("s3://")
    assert len(faulty.invocations(inference_id)) == 1
    assert until_done(faulty.url, inference_id)["result"]["label"] == "invoice"


def test_a_lost_notification_is_reconciled_from_s3_by_check_job_status(faulty, aws):
    faulty.arm("accept-silently")
    submitted = ok(call(faulty.url, "submit_job", {"document": "a quarterly report"}))
    inference_id = submitted["inference_id"]
    time.sleep(3)  # past the model's run and the 2 s reconcile threshold
    # One probe per call, alternating between the output and the failure location by the job's
    # age, so poll without waiting inside the call.
    deadline = time.time() + 30
    while True:
        done = ok(call(faulty.url, "check_job_status", {"inference_id": inference_id}))
        if done["status"] != "pending" or time.time() > deadline:
            break
        time.sleep(0.5)
    assert done["status"] == "completed" and done["result"]["label"] == "report"
    item = stored(aws, inference_id)
    assert "reconciled_at" in item and item["output_location"]["S"] == submitted["output_location"]


def test_a_replay_returns_exactly_the_first_answer(faulty):
    args = {"document": "invoice replayed", "idempotency_key": f"k-{uuid.uuid4()}"}
    first = ok(call(faulty.url, "submit_job", args))
    again = ok(call(faulty.url, "submit_job", args))
    assert again.pop("idempotent_replay") is True
    assert again == first


def test_twenty_concurrent_calls_with_one_key_make_one_job(faulty, aws):
    args = {"document": "invoice, twenty times", "idempotency_key": f"k-{uuid.uuid4()}"}

    async def many():
        return await asyncio.gather(*[_call(faulty.url, "submit_job", args) for _ in range(20)])

    answers = [ok(r) for r in asyncio.run(many())]
    ids = {a["inference_id"] for a in answers}
    assert len(ids) == 1
    inference_id = ids.pop()
    assert len(faulty.invocations(inference_id)) == 1
    assert sum(1 for a in answers if not a.get("idempotent_replay")) == 1
    assert {a["output_location"] for a in answers if "output_location" in a} == {answers[0]["output_location"]}


# ------------------------------------------------------------------ training

def runs_of(url, session):
    return ok(call(url, "check_training_result", {"session_id": session}))["runs"]


def test_trigger_training_twice_with_one_key_starts_one_run(faulty):
    session = f"sess-{uuid.uuid4().hex[:12]}"
    args = {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session,
            "idempotency_key": "nightly-2026-11-30"}
    first = ok(call(faulty.url, "trigger_training", args))
    again = ok(call(faulty.url, "trigger_training", args))
    assert again["execution_arn"] == first["execution_arn"]
    assert [r["execution_arn"] for r in runs_of(faulty.url, session)] == [first["execution_arn"]]
    other = ok(call(faulty.url, "trigger_training", {**args, "idempotency_key": "nightly-2026-12-01"}))
    assert other["execution_arn"] != first["execution_arn"]


def test_two_runs_stay_newest_first_while_pending_and_after_the_older_finishes(faulty):
    session = f"sess-{uuid.uuid4().hex[:12]}"
    args = {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session}
    older = ok(call(faulty.url, "trigger_training", args))["execution_arn"]
    time.sleep(0.05)
    newer = ok(call(faulty.url, "trigger_training", args))["execution_arn"]
    seen = set()
    deadline = time.time() + 60
    while time.time() < deadline:
        runs = runs_of(faulty.url, session)
        assert [r["execution_arn"] for r in runs] == [newer, older], runs
        seen.add(tuple(r["status"] for r in runs))
        if all(r["status"] == "Succeeded" for r in runs):
            break
        time.sleep(0.1)
    assert ("Succeeded", "Succeeded") in seen
    assert any("pending" in s or "Executing" in s for s in seen), seen


def test_max_parallel_steps_is_passed_only_when_asked(faulty):
    sm = boto3.client("sagemaker", endpoint_url=os.environ["AWS_ENDPOINT_URL_SAGEMAKER"],
                      region_name=os.environ["AWS_REGION"])
    session = f"sess-{uuid.uuid4().hex[:12]}"
    args = {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session}
    plain = ok(call(faulty.url, "trigger_training", args))["execution_arn"]
    limited = ok(call(faulty.url, "trigger_training", {**args, "max_parallel_steps": 2}))["execution_arn"]
    assert "ParallelismConfiguration" not in sm.describe_pipeline_execution(PipelineExecutionArn=plain)
    described = sm.describe_pipeline_execution(PipelineExecutionArn=limited)
    assert described["ParallelismConfiguration"] == {"MaxParallelExecutionSteps": 2}
