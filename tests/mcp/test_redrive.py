"""scripts/redrive.py against the functions under `cargo lambda watch`: dead-lettered messages
on a queue of each test's own (moto), replayed through Lambda's invoke API."""

import asyncio
import base64
import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import boto3
import pytest
from mcp import Client

from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"


@pytest.fixture
def queue():
    sqs = boto3.client("sqs", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ["AWS_REGION"])
    url = sqs.create_queue(QueueName=f"redrive-test-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    yield sqs, url
    sqs.delete_queue(QueueUrl=url)


@pytest.fixture(scope="module")
def built(servers):
    """cargo lambda watch builds a function on its first invocation (minutes on a cold target/):
    here, rather than inside the script's run."""
    assert invoke(servers, "notification-handler", {"Records": []}) == {"processed": 0}
    invoke(servers, "pipeline-router", json.loads((ROOT / "events" / "pipeline-no-session.json").read_text()))
    return servers


def redrive(servers, queue_url, *extra):
    """Runs the script (servers None where it must invoke nothing); its report is printed (pytest
    shows it when a test fails)."""
    functions = {"AWS_ENDPOINT_URL_LAMBDA": f"http://127.0.0.1:{servers['port']}"} if servers else {}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "redrive.py"), "--queue-url", queue_url,
         "--notification-handler", "notification-handler", "--pipeline-router", "pipeline-router",
         "--wait-secs", "1", *extra],
        env={**os.environ, **functions},
        capture_output=True, text=True, timeout=900,
    )
    print(done.stdout, done.stderr, sep="\n")
    return done


def sns_event(message: dict) -> dict:
    topic = f"arn:aws:sns:us-east-1:{ACCOUNT}:mcp-inference-success"
    return {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": f"{topic}:1",
                         "Sns": {"Type": "Notification", "MessageId": str(uuid.uuid4()), "TopicArn": topic,
                                 "Subject": None, "Message": json.dumps(message),
                                 "Timestamp": "2026-11-20T10:15:02.118Z", "SignatureVersion": "1",
                                 "Signature": "x", "SigningCertUrl": "https://x", "UnsubscribeUrl": "https://x",
                                 "MessageAttributes": {}}}]}


def failure_record(function: str, payload: dict, error_type: str) -> dict:
    """What Lambda sends to an on-failure destination after the last retry."""
    return {
        "version": "1.0", "timestamp": "2026-11-20T10:16:09.411Z",
        "requestContext": {"requestId": str(uuid.uuid4()),
                           "functionArn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{function}:$LATEST",
                           "condition": "RetriesExhausted", "approximateInvokeCount": 3},
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": error_type, "errorMessage": "it failed three times"},
    }


def notification(inference_id: str, status: str, **fields) -> dict:
    return {"awsRegion": "us-east-1", "eventTime": "2026-11-20T10:15:01.902Z",
            "receivedTime": "2026-11-20T10:14:12.455Z", "invocationStatus": status,
            "requestParameters": {"endpointName": "mcp-doc-processor-async",
                                  "inputLocation": f"s3://x/inputs/{inference_id}.json"},
            "inferenceId": inference_id, "eventVersion": "1.0", "eventSource": "aws:sagemaker",
            "eventName": "InferenceResult", **fields}


def item(aws, inference_id: str) -> dict:
    return aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": inference_id}},
                               ConsistentRead=True)["Item"]


def line_for(report: str, message_id: str) -> str:
    lines = [line for line in report.splitlines() if line.startswith(message_id)]
    assert len(lines) == 1, report
    return lines[0]


def left_on(sqs, url) -> list:
    """The ids of the messages on the queue; a look that leaves them visible."""
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                   VisibilityTimeout=0).get("Messages", [])
    return sorted(m["MessageId"] for m in messages)


def test_redrive_replays_a_failure_record_and_an_eventbridge_dead_letter_and_keeps_garbage(built, aws, queue):
    servers = built
    sqs, url = queue

    # (a) a job whose success notification notification-handler failed on three times
    async def submit():
        async with Client(servers["url"], mode="2026-07-28") as client:
            return await client.call_tool("submit_job", {"document": "Receipt 77: coffee 3.20 EUR"})
    inference_id = asyncio.run(submit()).structured_content["inference_id"]
    key = f"outputs/{uuid.uuid4()}.out"
    aws["s3"].put_object(Bucket=aws["bucket"], Key=key, Body=b'{"label": "receipt", "confidence": 0.91}')
    success = notification(inference_id, "Completed", responseParameters={
        "contentType": "application/json", "outputLocation": f"s3://{aws['bucket']}/{key}"})
    record = failure_record("notification-handler", sns_event(success), "StoreFailed")
    a = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))["MessageId"]

    # (b) a finished run the EventBridge rule could not deliver to pipeline-router
    session_id = f"redrive-{uuid.uuid4().hex[:8]}"
    execution_arn = (f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:pipeline/mcp-intent-classifier-pipeline/"
                     f"execution/{uuid.uuid4().hex[:12]}")
    event = json.loads((ROOT / "events" / "pipeline-succeeded.json").read_text())
    event["id"] = str(uuid.uuid4())
    event["resources"][1] = event["detail"]["pipelineExecutionArn"] = execution_arn
    event["detail"]["pipelineExecutionDescription"] = f"session_id={session_id}; triggered at 2026-11-20T10:41:51.734Z"
    attributes = {  # what EventBridge adds to a dead letter
        "RULE_ARN": f"arn:aws:events:us-east-1:{ACCOUNT}:rule/stack-PipelineStatusRule-1A2B3C",
        "TARGET_ARN": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:pipeline-router",
        "ERROR_CODE": "SDK_CLIENT_ERROR",
        "ERROR_MESSAGE": "Unable to invoke Lambda function",
    }
    b = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(event), MessageAttributes={
        k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()})["MessageId"]

    # (c) something nobody can replay
    c = sqs.send_message(QueueUrl=url, MessageBody="not an event {")["MessageId"]

    # A dry run changes nothing and leaves every message visible.
    dry = redrive(servers, url, "--dry-run")
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert "would replay" in line_for(dry.stdout, a) and "would replay" in line_for(dry.stdout, b)
    assert left_on(sqs, url) == sorted([a, b, c])
    assert item(aws, inference_id)["status"]["S"] == "pending"

    done = redrive(servers, url)
    report = done.stdout
    assert done.returncode == 1, report + done.stderr
    assert "lambda-failure-record  notification-handler  replayed" in line_for(report, a)
    assert "RetriesExhausted" in line_for(report, a)
    assert "eventbridge-dead-letter  pipeline-router  replayed" in line_for(report, b)
    assert "SDK_CLIENT_ERROR" in line_for(report, b)
    assert "unknown" in line_for(report, c) and "skipped: the body is not JSON" in line_for(report, c)
    assert "3 messages: 2 replayed, 0 failed, 1 skipped" in report

    job = item(aws, inference_id)
    assert job["status"]["S"] == "completed"
    assert job["result"]["M"]["label"] == {"S": "receipt"}
    assert job["output_location"]["S"] == f"s3://{aws['bucket']}/{key}"

    run = aws["ddb"].get_item(TableName=aws["runs_table"], ConsistentRead=True, Key={
        "session_id": {"S": session_id}, "execution_arn": {"S": execution_arn}})["Item"]
    assert run["status"]["S"] == "Succeeded"

    assert left_on(sqs, url) == [c]


def test_redrive_keeps_a_message_whose_replay_fails_again(built, queue):
    servers = built
    sqs, url = queue
    bad = notification(f"redrive-bad-{uuid.uuid4().hex[:8]}", "Exploded")
    record = failure_record("notification-handler", sns_event(bad), "NotificationsNotRecorded")
    failing = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))["MessageId"]
    stranger = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(
        failure_record("someone-elses-function", {"Records": []}, "Boom")))["MessageId"]

    done = redrive(servers, url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "notification-handler  failed: " in line_for(done.stdout, failing)
    assert "skipped: it belongs to function someone-elses-function" in line_for(done.stdout, stranger)
    assert left_on(sqs, url) == sorted([failing, stranger])


def test_redrive_replays_the_sqs_buffers_dead_letters(built, aws, queue):
    """NotificationBufferDLQ holds what SNS put on the buffer queue: the SNS envelope, or the
    notification itself with raw message delivery. Each is replayed as an SNS event."""
    servers = built
    sqs, url = queue
    done_id, failed_id = (f"redrive-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("envelope", "raw"))
    body = base64.b64encode(b'{"label": "invoice", "confidence": 0.97}').decode()
    success = notification(done_id, "Completed", responseParameters={
        "contentType": "application/json", "outputLocation": f"s3://{aws['bucket']}/outputs/{done_id}.out"},
        responseBody={"content": body, "message": "", "encoding": "BASE64"})
    envelope = {"Type": "Notification", "MessageId": str(uuid.uuid4()),
                "TopicArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:mcp-inference-success",
                "Message": json.dumps(success), "Timestamp": "2026-11-20T10:15:02.118Z",
                "SignatureVersion": "1", "Signature": "EXAMPLE",
                "SigningCertURL": "https://sns.us-east-1.amazonaws.com/x.pem",
                "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe"}
    e = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(envelope))["MessageId"]
    failure = notification(failed_id, "Failed", failureReason="ClientError: Received server error (500) from model.")
    r = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(failure))["MessageId"]

    done = redrive(servers, url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sns-envelope  notification-handler  replayed" in line_for(done.stdout, e)
    assert "raw-notification  notification-handler  replayed" in line_for(done.stdout, r)
    completed, failed = (item(aws, i) for i in (done_id, failed_id))
    assert completed["status"]["S"] == "completed"
    assert completed["result"]["M"]["label"] == {"S": "invoice"}
    assert failed["status"]["S"] == "failed"
    assert "server error (500)" in failed["failure_reason"]["S"]
    assert left_on(sqs, url) == []


def test_redrive_skips_a_callback_message_naming_it_without_its_body(queue):
    """PipelineCallbackDLQ holds CallbackStep messages, whose token answers the step: each is
    skipped and left on the queue, named by its id, kind and size. No body is printed, neither
    that one's nor one's that is not JSON."""
    sqs, url = queue
    token = f"CallbackToken{uuid.uuid4().hex}"
    body = json.dumps({"token": token, "status": "Executing",
                       "pipelineExecutionArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:pipeline/p/execution/e1",
                       "arguments": {"prompt": "Register the model?"}})
    callback = sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"]
    garbage_body = f"token={token} and not JSON"
    garbage = sqs.send_message(QueueUrl=url, MessageBody=garbage_body)["MessageId"]

    for extra in (["--dry-run"], []):
        done = redrive(None, url, *extra)
        report = done.stdout + done.stderr
        assert done.returncode == 1, report
        line = line_for(done.stdout, callback)
        assert "callback-message  -  skipped: a callback message (has a token)" in line
        assert "start-message-move-task" in line and "docs/operations.md" in line
        assert line.endswith(f"({len(body)} bytes)")
        assert line_for(done.stdout, garbage).endswith(f"the body is not JSON ({len(garbage_body)} bytes)")
        # The token stands in both bodies.
        assert token not in report and "Register the model" not in report
    assert left_on(sqs, url) == sorted([callback, garbage])


class FakeLambda:
    """Answers Invoke as the Lambda API does: a function error is HTTP 200 with FunctionError."""

    def __init__(self, payload: dict, function_error=None):
        self.response = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(payload).encode())}
        if function_error:
            self.response["FunctionError"] = function_error

    def invoke(self, **_):
        return self.response


def test_a_function_error_or_a_failed_batch_item_is_a_failed_replay():
    import redrive  # scripts/ is on sys.path (conftest)

    error = {"errorType": "NotificationsNotRecorded", "errorMessage": "1 of 1 notifications failed"}
    assert redrive.invoke(FakeLambda(error, "Unhandled"), "f", {}) == \
        "NotificationsNotRecorded: 1 of 1 notifications failed"
    partial = {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert redrive.invoke(FakeLambda(partial), "f", {}) == "batchItemFailures for m-2"
    assert redrive.invoke(FakeLambda({"batchItemFailures": []}), "f", {}) is None
    assert redrive.invoke(FakeLambda({"processed": 1}), "f", {}) is None


# ---------------------------------------------------------------- MCP Events' webhook deliveries
# SQS's message move (StartMessageMoveTask) takes them back; moto has none of it: SQS's answers,
# stubbed.

DELIVERY_DLQ = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/mcp-event-delivery-dlq-4f0c2a30.fifo"
DELIVERY_DLQ_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:mcp-event-delivery-dlq-4f0c2a30.fifo"


def stubbed_sqs():
    from botocore.stub import Stubber
    client = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def dlq_holding(stub, visible: int, in_flight: int = 0) -> None:
    stub.add_response("get_queue_attributes", {"Attributes": {
        "QueueArn": DELIVERY_DLQ_ARN, "ApproximateNumberOfMessages": str(visible),
        "ApproximateNumberOfMessagesNotVisible": str(in_flight)}}, {
        "QueueUrl": DELIVERY_DLQ,
        "AttributeNames": ["QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]})


def move_task(status: str, moved: int, **more) -> dict:
    return {"Results": [{"Status": status, "SourceArn": DELIVERY_DLQ_ARN, "ApproximateNumberOfMessagesMoved": moved,
                         "ApproximateNumberOfMessagesToMove": 3, **more}]}


def test_event_deliveries_are_moved_back_to_their_queue_by_sqs_and_the_move_waited_for(capsys):
    import redrive
    sqs, stub = stubbed_sqs()
    dlq_holding(stub, 2, 1)
    stub.add_response("start_message_move_task", {"TaskHandle": "handle-1"}, {"SourceArn": DELIVERY_DLQ_ARN})
    listed = {"SourceArn": DELIVERY_DLQ_ARN, "MaxResults": 1}
    stub.add_response("list_message_move_tasks", move_task("RUNNING", 1, TaskHandle="handle-1"), listed)
    stub.add_response("list_message_move_tasks", move_task("COMPLETED", 3), listed)
    slept = []
    with stub:
        assert redrive.move_back(sqs, DELIVERY_DLQ, dry_run=False, sleep=slept.append) == 0
    stub.assert_no_pending_responses()
    assert slept == [redrive.MOVE_POLL_SECS]
    out = capsys.readouterr().out
    # No DestinationArn: each message goes back to the queue it came from (the delivery queue).
    assert f"move {DELIVERY_DLQ} -> the queue its messages came from" in out and "3 message(s) moved back" in out


def test_a_dry_run_or_an_empty_dlq_moves_nothing(capsys):
    import redrive
    sqs, stub = stubbed_sqs()
    dlq_holding(stub, 4)
    dlq_holding(stub, 0)
    with stub:
        assert redrive.move_back(sqs, DELIVERY_DLQ, dry_run=True) == 0
        assert redrive.move_back(sqs, DELIVERY_DLQ, dry_run=False) == 0
    stub.assert_no_pending_responses()  # no start_message_move_task was made
    out = capsys.readouterr().out
    assert "about 4 message(s) would be moved back (dry run: nothing moved)" in out
    assert "nothing to move: the queue is empty" in out


def test_a_move_refused_or_failed_is_exit_status_1(capsys):
    import redrive
    sqs, stub = stubbed_sqs()
    dlq_holding(stub, 1)
    stub.add_client_error("start_message_move_task", service_error_code="AWS.SimpleQueueService.UnsupportedOperation",
                          service_message="There is already a task running.", expected_params={"SourceArn": DELIVERY_DLQ_ARN})
    dlq_holding(stub, 1)
    stub.add_response("start_message_move_task", {"TaskHandle": "handle-2"}, {"SourceArn": DELIVERY_DLQ_ARN})
    stub.add_response("list_message_move_tasks", move_task("FAILED", 0, FailureReason="AccessDenied"),
                      {"SourceArn": DELIVERY_DLQ_ARN, "MaxResults": 1})
    with stub:
        assert redrive.move_back(sqs, DELIVERY_DLQ, dry_run=False) == 1
        assert redrive.move_back(sqs, DELIVERY_DLQ, dry_run=False) == 1
    err = capsys.readouterr().err
    assert "already a task running" in err and f"list-message-move-tasks --source-arn {DELIVERY_DLQ_ARN}" in err
    assert "the move ended FAILED: AccessDenied (0 moved)" in err


def test_event_deliveries_take_no_function_options():
    for extra in (["--max", "3"], ["--notification-handler", "nh"]):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "redrive.py"), "--queue-url", DELIVERY_DLQ,
                               "--event-deliveries", *extra], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "AWS_REGION": "us-east-1"})
        assert done.returncode == 2 and "invokes no function" in done.stderr, done.stderr


def test_with_a_stack_name_the_deliveries_dlq_is_its_output():
    import argparse

    import redrive
    from botocore.stub import Stubber
    cloudformation = boto3.client("cloudformation", region_name="us-east-1", aws_access_key_id="x",
                                  aws_secret_access_key="x")

    class OneClient:
        def client(self, name):
            assert name == "cloudformation"
            return cloudformation
    args = argparse.Namespace(queue_url=None, stack_name="s")
    with Stubber(cloudformation) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "s", "CreationTime": "2026-01-01T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
            "Outputs": [{"OutputKey": "EventDeliveryDLQUrl", "OutputValue": DELIVERY_DLQ}]}]}, {"StackName": "s"})
        assert redrive.delivery_dlq(args, OneClient()) == DELIVERY_DLQ
    assert redrive.delivery_dlq(argparse.Namespace(queue_url="https://q.fifo", stack_name="s"), None) == "https://q.fifo"
