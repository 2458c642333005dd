"""The events the functions are invoked with, made from the samples in events/: SNS
notifications, SQS batches of them, EventBridge's pipeline status changes and AgentCore
Gateway's tool calls. OUTPUT_BODY is the output SageMaker wrote for every job."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from pathlib import Path

EVENTS = Path(__file__).resolve().parents[1] / "events"
OUTPUT_BODY = json.dumps({"label": "invoice", "confidence": 0.97, "spans": [[0, 7], [12, 18]]}).encode()


def json_of_length(n: int) -> bytes:
    """A JSON object of exactly n bytes, one string inside."""
    return json.dumps({"text": "a" * (n - 12)}).encode()


# SageMaker puts a response in the success notification (IncludeInferenceResponseIn, as the
# stack wires its endpoints) only up to this size.
RESPONSE_IN_MESSAGE_MAX = 128 * 1024


def sns_event(inference_id: str, output_location: str, response_body: bool | bytes = False) -> bytes:
    """`response_body`: True for OUTPUT_BODY in the message, or the output itself, in the message
    when SageMaker would put it there."""
    event = json.loads((EVENTS / "sns-success.json").read_text())
    message = json.loads(event["Records"][0]["Sns"]["Message"])
    message["inferenceId"] = inference_id
    message["responseParameters"]["outputLocation"] = output_location
    body = OUTPUT_BODY if response_body is True else response_body or None
    if body is not None and len(body) <= RESPONSE_IN_MESSAGE_MAX:
        message["responseBody"] = {"content": base64.b64encode(body).decode(), "message": "", "encoding": "BASE64"}
    event["Records"][0]["Sns"]["Message"] = json.dumps(message)
    event["Records"][0]["Sns"]["MessageId"] = str(uuid.uuid4())
    return json.dumps(event).encode()


def sqs_batch(ids: list[str], output_location: str) -> bytes:
    template = json.loads((EVENTS / "sqs-batch.json").read_text())["Records"][0]
    records = []
    for inference_id in ids:
        sns = json.loads(sns_event(inference_id, output_location))["Records"][0]["Sns"]
        record = copy.deepcopy(template)
        record["messageId"] = str(uuid.uuid4())
        record["body"] = json.dumps({**sns, "Type": "Notification"})
        records.append(record)
    return json.dumps({"Records": records}).encode()


def router_event(execution_id: str, session_id: str) -> bytes:
    event = json.loads((EVENTS / "pipeline-succeeded.json").read_text())
    arn = event["detail"]["pipelineArn"] + "/execution/" + execution_id
    event["id"] = str(uuid.uuid4())
    event["resources"][1] = arn
    event["detail"]["pipelineExecutionArn"] = arn
    event["detail"]["pipelineExecutionDescription"] = f"session_id={session_id}; triggered by the benchmark"
    return json.dumps(event).encode()


def gateway_event(inference_id: str) -> tuple[bytes, str]:
    context = {"custom": {"bedrockAgentCoreToolName": "mcp-tools___check_job_status"}}
    return json.dumps({"inference_id": inference_id}).encode(), json.dumps(context)


def notification_message(inference_id: str, output_location: str, output: bytes | None = None) -> str:
    """The SNS message SageMaker publishes for a completed job; with `output`, as an endpoint
    wired by the stack publishes it (the response in the message up to 128 KB)."""
    return json.loads(sns_event(inference_id, output_location, output or False))["Records"][0]["Sns"]["Message"]


def sns_delivery(message: str, topic_arn: str) -> bytes:
    """The event SNS invokes a subscribed function with."""
    event = json.loads((EVENTS / "sns-success.json").read_text())
    event["Records"][0]["Sns"].update({"Message": message, "MessageId": str(uuid.uuid4()), "TopicArn": topic_arn})
    return json.dumps(event).encode()


def sqs_delivery(messages: list[dict], queue_arn: str) -> bytes:
    """The event Lambda's poller invokes a function with, from ReceiveMessage's messages."""
    template = json.loads((EVENTS / "sqs-batch.json").read_text())["Records"][0]
    records = [{**copy.deepcopy(template), "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"], "md5OfBody": m["MD5OfBody"], "eventSourceARN": queue_arn} for m in messages]
    return json.dumps({"Records": records}).encode()
