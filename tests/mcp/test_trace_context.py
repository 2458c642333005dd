"""W3C trace context (MCP 2026-07-28, SEP-414) end to end: a tools/call's `_meta.traceparent` is
continued by mcp-tools (same trace id, a span id of its own), stored on the job's item (and the
run's), and carried on by notification-handler (its log lines, the completion event) and
pipeline-router (its log lines, the completion message). A call without one starts a trace."""

import asyncio
import json
import os
import re
import time
import uuid
from pathlib import Path

import boto3
import pytest
from mcp import Client

from conftest import invoke, need, ok
from demo import completion_bus
from lambda_watch import LOCAL, WatchError, free_port, start_watch, stop
from test_mcp_tools import put_output, success_message

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
TRACESTATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
SHAPE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


@pytest.fixture(scope="module")
def traced(servers):
    """A watch of its own with JSON logs (as deployed), announcing on a bus of its own and sending
    run completions to a queue of its own, so its log, events and messages are this module's."""
    need("AWS_ENDPOINT_URL")
    kw = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"], "region_name": os.environ["AWS_REGION"]}
    events, sqs = boto3.client("events", **kw), boto3.client("sqs", **kw)
    suffix = uuid.uuid4().hex[:8]
    bus, events_queue = completion_bus(events, sqs, f"traced-{suffix}")
    runs_queue = sqs.create_queue(QueueName=f"traced-runs-{suffix}")["QueueUrl"]
    port = free_port()
    env = {"AUTH_MODE": "none", "AWS_LAMBDA_LOG_FORMAT": "JSON", "EVENT_BUS_NAME": bus,
           "PIPELINE_RESULTS_QUEUE_URL": runs_queue}
    try:
        proc = start_watch(port, env, "watch-trace")
    except WatchError as e:
        pytest.exit(str(e), 2)

    def received(queue_url):
        found = []
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            found.extend(json.loads(m["Body"]) for m in messages)
        return found

    yield {"url": f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp", "port": port,
           "log": LOCAL / "watch-trace.log", "events": lambda: received(events_queue),
           "messages": lambda: received(runs_queue)}
    stop(proc)


def call(traced, name, args, meta=None):
    async def go():
        async with Client(traced["url"], mode="2026-07-28") as client:
            return await client.call_tool(name, args, meta=meta)
    return asyncio.run(go())


def sns(message):
    return {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:x",
                         "Sns": {"Type": "Notification", "MessageId": f"sns-{uuid.uuid4()}", "TopicArn": "arn:x",
                                 "Subject": None, "Message": json.dumps(message),
                                 "Timestamp": "2026-11-20T10:15:02.118Z", "SignatureVersion": "1",
                                 "Signature": "x", "SigningCertUrl": "https://x", "UnsubscribeUrl": "https://x",
                                 "MessageAttributes": {}}}]}


def lines(path: Path):
    """The functions' JSON lines (the watch's and cargo's own lines are plain text)."""
    return [json.loads(raw) for raw in path.read_text().splitlines() if raw.startswith("{")]


def spans(line) -> dict:
    merged = {}
    for span in line.get("spans", []):
        merged.update(span)
    return merged


def job_item(aws, inference_id):
    return aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                               ConsistentRead=True)["Item"]


def test_a_callers_trace_is_continued_stored_logged_and_announced(traced, aws):
    submitted = ok(call(traced, "submit_job", {"document": "a traced report"},
                        meta={"traceparent": TRACEPARENT, "tracestate": TRACESTATE}))
    inference_id = submitted["inference_id"]
    assert "traceparent" not in json.dumps(submitted), "tool results do not change"

    # Stored: the same trace, mcp-tools' own span id, the caller's state.
    item = job_item(aws, inference_id)
    stored = item["traceparent"]["S"]
    trace_id, span_id = SHAPE.match(stored).groups()
    assert trace_id == TRACE_ID and span_id not in (PARENT_ID, "0" * 16), stored
    assert item["tracestate"]["S"] == TRACESTATE

    # The outcome: notification-handler records it and announces it.
    message = success_message(inference_id, put_output(aws, b'{"label": "report"}'))
    assert invoke(traced, "notification-handler", sns(message)) == {"processed": 1}
    time.sleep(0.5)
    logged = [line for line in lines(traced["log"]) if "_aws" not in line]

    # mcp-tools: the call's lines carry the trace (and its span) on the tool_call span, and its
    # closing line as a field of its own.
    of_call = [line for line in logged if spans(line).get("inference_id") == inference_id
               and spans(line).get("tool") == "submit_job"]
    assert of_call and all(spans(line)["trace_id"] == TRACE_ID for line in of_call), of_call
    assert all(spans(line)["span_id"] == span_id for line in of_call)
    assert [line["trace_id"] for line in of_call if line["message"] == "tool call"] == [TRACE_ID]

    # notification-handler: every line of this job's notification after the write.
    of_outcome = [line for line in logged if spans(line).get("inference_id") == inference_id
                  and "sns_message_id" in spans(line)]
    recorded = [line for line in of_outcome if line["message"] == "outcome recorded"]
    assert [line["trace_id"] for line in recorded] == [TRACE_ID], of_outcome
    assert all(spans(line)["trace_id"] == TRACE_ID for line in of_outcome
               if line["message"] in ("outcome recorded", "completion event put")), of_outcome

    # The completion event: the stored traceparent.
    announced = [e for e in traced["events"]() if e["detail"]["inference_id"] == inference_id]
    assert [e["detail"]["traceparent"] for e in announced] == [stored], announced

    # A query by trace id finds the call and the outcome: every line holding it.
    text = traced["log"].read_text()
    holding = [json.loads(raw) for raw in text.splitlines() if raw.startswith("{") and TRACE_ID in raw]
    messages = {line.get("message") for line in holding}
    assert {"job submitted", "tool call", "outcome recorded", "completion event put"} <= messages, messages


def test_a_call_without_a_trace_starts_one_and_a_malformed_one_is_ignored(traced, aws):
    for meta in (None, {"traceparent": "00-NOT-A-TRACEPARENT-01", "tracestate": TRACESTATE},
                 {"traceparent": TRACEPARENT.upper()}):
        submitted = ok(call(traced, "submit_job", {"document": "an untraced report"}, meta=meta))
        item = job_item(aws, submitted["inference_id"])
        trace_id, span_id = SHAPE.match(item["traceparent"]["S"]).groups()
        assert trace_id not in (TRACE_ID, "0" * 32) and span_id != "0" * 16, item["traceparent"]
        assert "tracestate" not in item, "a state without a valid parent is dropped"
        time.sleep(0.3)
        closing = [line for line in lines(traced["log"]) if line.get("message") == "tool call"
                   and spans(line).get("inference_id") == submitted["inference_id"]]
        assert [line["trace_id"] for line in closing] == [trace_id]


def test_a_tracestate_that_breaks_w3c_grammar_is_dropped_and_the_trace_still_continued(traced, aws):
    too_many = ",".join(f"k{i}=v" for i in range(33))
    for state in ('rojo=1,<script>alert("x")</script>', "Rojo=00f067aa0ba902b7", "rojo=a\tb", "rojo=1,rojo=2",
                  f"rojo={'x' * 257}", too_many):
        submitted = ok(call(traced, "submit_job", {"document": "a report with a bad state"},
                            meta={"traceparent": TRACEPARENT, "tracestate": state}))
        item = job_item(aws, submitted["inference_id"])
        trace_id, span_id = SHAPE.match(item["traceparent"]["S"]).groups()
        assert trace_id == TRACE_ID and span_id != PARENT_ID, item["traceparent"]
        assert "tracestate" not in item, state
    # A valid one is stored as its members: the spaces and empty members around them are not kept.
    submitted = ok(call(traced, "submit_job", {"document": "a report with a spaced state"},
                        meta={"traceparent": TRACEPARENT, "tracestate": " rojo=00f067aa0ba902b7 ,, congo=t61rcWkgMzE\t"}))
    assert job_item(aws, submitted["inference_id"])["tracestate"]["S"] == TRACESTATE


def test_a_triggered_runs_trace_is_stored_and_carried_to_its_completion_message(traced, aws):
    session = f"sess-{uuid.uuid4().hex[:12]}"
    triggered = ok(call(traced, "trigger_training",
                        {"input_data_uri": "s3://mcp-sagemaker-async-io/train/", "session_id": session},
                        meta={"traceparent": TRACEPARENT}))
    arn = triggered["execution_arn"]
    runs = aws["ddb"].scan(TableName=aws["runs_table"], ConsistentRead=True,
                           FilterExpression="execution_arn = :a",
                           ExpressionAttributeValues={":a": {"S": arn}})["Items"]
    assert len(runs) == 1, runs
    stored = runs[0]["traceparent"]["S"]
    assert SHAPE.match(stored).group(1) == TRACE_ID and "tracestate" not in runs[0]

    # The run's end, as EventBridge delivers it to this watch's pipeline-router.
    sagemaker = boto3.client("sagemaker", endpoint_url=os.environ["AWS_ENDPOINT_URL_SAGEMAKER"],
                             region_name=os.environ["AWS_REGION"])
    described = sagemaker.describe_pipeline_execution(PipelineExecutionArn=arn)
    event = json.loads((Path(__file__).resolve().parents[2] / "events" / "pipeline-succeeded.json").read_text())
    event["id"] = str(uuid.uuid4())
    # The stand-in's own run may have ended already (its events go to the other watch): the
    # same end, so this one is routed, not ignored.
    status = described["PipelineExecutionStatus"]
    event["detail"].update({"pipelineExecutionArn": arn, "pipelineArn": described["PipelineArn"],
                            "pipelineExecutionDescription": described["PipelineExecutionDescription"],
                            "currentPipelineExecutionStatus": "Succeeded" if status == "Executing" else status})
    routed = invoke(traced, "pipeline-router", event)
    assert routed.get("session_id") == session, routed

    sent = [m for m in traced["messages"]() if m["execution_arn"] == arn]
    assert sent and all(m["traceparent"] == stored for m in sent), sent
    time.sleep(0.3)
    of_event = [line for line in lines(traced["log"]) if spans(line).get("event_id") == event["id"]]
    # The key lines carry it as a field of their own (also "terminal status already stored",
    # when the stand-in's own event was routed first); from the routed run on, the span too.
    keyed = [line for line in of_event if "trace_id" in line]
    assert keyed and all(line["trace_id"] == TRACE_ID for line in keyed), of_event
    routed_lines = [line for line in of_event if line["message"] == "pipeline status recorded"]
    assert [spans(line)["trace_id"] for line in routed_lines] == [TRACE_ID], of_event
