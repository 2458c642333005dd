#!/usr/bin/env python3
"""Replays dead-lettered notifications and pipeline events through the functions of a stack, or
moves MCP Events' dead-lettered webhook deliveries back to their queue (--event-deliveries).

    redrive.py --stack-name STACK [--max N] [--dry-run]
    redrive.py --queue-url URL --notification-handler FN --pipeline-router FN [--max N] [--dry-run]
    redrive.py --stack-name STACK --event-deliveries [--dry-run]
    redrive.py --queue-url DLQ_URL --event-deliveries [--dry-run]

Reads the queue (long polls, batches of 10) until it is empty or N messages were handled, and
for each message works out what it holds and which function it belongs to:
- a Lambda failure-destination record (AsyncFailureDLQ; notification-handler or pipeline-router
  exhausted its retries, or the event grew too old): the function named by its
  requestContext.functionArn, with the original event, requestPayload;
- an EventBridge dead letter (AsyncFailureDLQ; the rule could not invoke pipeline-router): the
  body is the event itself, for pipeline-router;
- an SNS event (`Records`) or SQS event, for notification-handler;
- an SNS envelope or a raw SageMaker notification (NotificationBufferDLQ, the SQS buffer's DLQ,
  with and without raw message delivery): wrapped as the SNS event Lambda would have received,
  for notification-handler.
Each is invoked synchronously (RequestResponse) with that event. A message is deleted only when
the invocation succeeded: no FunctionError and, for an SQS-shaped event, no batchItemFailures.
Messages that failed or could not be understood stay on the queue (visible again when the run
ends) and make the exit status 1. A CallbackStep's message (PipelineCallbackDLQ) is one of
those: its token answers the step, and SQS's own message move takes it back (docs/operations.md).
So is Lambda's record of an events-stream batch event-delivery gave up on (EventStreamFailureQueue):
it names the batch's shard and sequence numbers, not its events, which stay in the events table
for events/poll; nothing here replays it (docs/events.md).
A message not replayed is named by its id, what it seems to be and its size, never by its body.
Replaying is safe: a recorded outcome is never changed (pipeline-router may send its completion
message again, which consumers already treat as a duplicate).

With --stack-name the queue is the stack's AsyncFailureDLQUrl output and the functions are the
stack's NotificationHandlerFunction and PipelineRouterFunction (none in an inference-only stack);
an explicit option overrides either.
For the SQS buffer's DLQ (NotificationBufferDLQ), pass its --queue-url.

--event-deliveries: MCP Events' webhook deliveries that failed 20 receives (EventDeliveryDLQ, a
FIFO queue; the stack's EventDeliveryDLQUrl output, or --queue-url) are not replayed through a
function: SQS's own message move (StartMessageMoveTask, which takes FIFO dead-letter queues too)
puts them back on the delivery queue they came from, where event-delivery takes them again, in
order. It waits for the move to end (5 minutes at most; aws sqs list-message-move-tasks follows
it after that). Move them once their cause is fixed (event-delivery's log says it): a delivery
moved back for the same cause comes back after another 20 receives.

AWS access is boto3's standard chain (AWS_PROFILE, AWS_ENDPOINT_URL[_<SERVICE>]) in the region
scripts/aws_region.py picks (AWS_REGION, AWS_DEFAULT_REGION, the profile's), which it prints first.
IAM: sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility on the queue,
lambda:InvokeFunction on both functions, cloudformation:DescribeStacks and
cloudformation:ListStackResources with --stack-name. With --event-deliveries:
sqs:GetQueueAttributes, sqs:StartMessageMoveTask, sqs:ListMessageMoveTasks, sqs:ReceiveMessage and
sqs:DeleteMessage on the DLQ, sqs:SendMessage on the delivery queue.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from typing import Optional

import aws_region
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from stack import StackError, error_status, read_stack

NOTIFICATION_HANDLER = "notification-handler"
PIPELINE_ROUTER = "pipeline-router"
PIPELINE_DETAIL_TYPE = "SageMaker Model Building Pipeline Execution Status Change"
# A function runs at most 15 minutes; a synchronous invoke must be allowed to wait for it.
LAMBDA_READ_TIMEOUT_SECS = 900
# Long enough to invoke a whole batch of ten before any message shows up again.
VISIBILITY_TIMEOUT_SECS = 900
# --event-deliveries: how often the message move is looked at, and for how long.
MOVE_POLL_SECS = 2
MOVE_WAIT_SECS = 300


class NotUnderstood(Exception):
    """The message holds nothing this command knows how to replay (or not for these functions)."""

    def __init__(self, reason: str, kind: str = "unknown"):
        super().__init__(reason)
        self.kind = kind


class Replay:
    """What one message holds: its kind, the function (role) it belongs to, the event."""

    def __init__(self, kind: str, role: str, event: dict, note: str = ""):
        self.kind, self.role, self.event, self.note = kind, role, event, note


def function_name(name_or_arn: str) -> str:
    """`arn:aws:lambda:r:a:function:NAME[:qualifier]`, `a:function:NAME` or `NAME` -> NAME."""
    if ":function:" in name_or_arn:
        return name_or_arn.split(":function:", 1)[1].split(":", 1)[0]
    return name_or_arn


def is_sagemaker_notification(value: object) -> bool:
    return isinstance(value, dict) and (
        value.get("eventSource") == "aws:sagemaker" or "inferenceId" in value
    )


def sns_event(envelope: dict, sqs_message: dict) -> dict:
    """The SNS event Lambda delivers for one SNS message, from the envelope SNS put on SQS."""
    attributes = sqs_message.get("Attributes", {})
    sent = attributes.get("SentTimestamp")
    timestamp = (
        datetime.fromtimestamp(int(sent) / 1000, timezone.utc) if sent else datetime.now(timezone.utc)
    ).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    topic = envelope.get("TopicArn") or "arn:aws:sns:unknown:unknown:unknown"
    sns = {
        "Type": envelope.get("Type", "Notification"),
        "MessageId": envelope.get("MessageId") or sqs_message["MessageId"],
        "TopicArn": topic,
        "Subject": envelope.get("Subject"),
        "Message": envelope["Message"],
        "Timestamp": envelope.get("Timestamp") or timestamp,
        "SignatureVersion": envelope.get("SignatureVersion", "1"),
        "Signature": envelope.get("Signature", "redriven"),
        "SigningCertUrl": envelope.get("SigningCertURL") or envelope.get("SigningCertUrl", ""),
        "UnsubscribeUrl": envelope.get("UnsubscribeURL") or envelope.get("UnsubscribeUrl", ""),
        "MessageAttributes": envelope.get("MessageAttributes") or {},
    }
    return {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0",
                         "EventSubscriptionArn": f"{topic}:redrive", "Sns": sns}]}


def by_shape(payload: object, sqs_message: dict) -> Replay:
    """Which function an event (or a bare SNS/SageMaker message) belongs to, by its shape."""
    if not isinstance(payload, dict):
        raise NotUnderstood("not a JSON object")
    if "detail-type" in payload and "detail" in payload:
        if payload["detail-type"] != PIPELINE_DETAIL_TYPE:
            raise NotUnderstood(f"an EventBridge event of detail-type {payload['detail-type']!r}")
        return Replay("eventbridge-event", PIPELINE_ROUTER, payload)
    records = payload.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        if "Sns" in records[0]:
            return Replay("sns-event", NOTIFICATION_HANDLER, payload)
        if records[0].get("eventSource") == "aws:sqs":
            return Replay("sqs-event", NOTIFICATION_HANDLER, payload)
        raise NotUnderstood("Records that are neither SNS nor SQS")
    if payload.get("Type") == "Notification" and isinstance(payload.get("Message"), str):
        return Replay("sns-envelope", NOTIFICATION_HANDLER, sns_event(payload, sqs_message))
    if is_sagemaker_notification(payload):
        envelope = {"Message": json.dumps(payload), "MessageId": f"redrive-{sqs_message['MessageId']}"}
        return Replay("raw-notification", NOTIFICATION_HANDLER, sns_event(envelope, sqs_message))
    raise NotUnderstood("neither a Lambda failure record, an EventBridge event, an SNS event, "
                        "an SNS envelope nor a SageMaker notification")


def understand(message: dict, functions: dict) -> Replay:
    """The replay for one SQS message of the DLQ; `functions` maps role -> configured name."""
    try:
        body = json.loads(message["Body"])
    except ValueError:
        raise NotUnderstood("the body is not JSON") from None
    # A CallbackStep's message (the callback queue's DLQ): its token answers the step, so it is
    # never replayed through a function here; SQS moves it back to the queue it came from.
    if isinstance(body, dict) and "token" in body:
        raise NotUnderstood("a callback message (has a token): redrive it with the SQS message move "
                            "(aws sqs start-message-move-task), see docs/operations.md", "callback-message")
    # Lambda's record of a stream batch given up on (EventStreamFailureQueue): where the batch
    # was, not its events, so there is nothing to replay.
    if isinstance(body, dict) and "DDBStreamBatchInfo" in body:
        raise NotUnderstood("a record of an events-stream batch event-delivery gave up on (EventStreamFailureQueue): "
                            "its events are in the events table for events/poll, nothing replays it "
                            "(docs/events.md)", "stream-failure-record")
    attributes = message.get("MessageAttributes", {})

    def owner(arn: str, kind: str) -> str:
        name = function_name(arn)
        for role, configured in functions.items():
            if function_name(configured) == name:
                return role
        raise NotUnderstood(f"it belongs to function {name}, which is neither of "
                            f"{', '.join(sorted(functions.values()))}", kind)

    # The original event is replayed exactly as the function first received it.
    if isinstance(body, dict) and isinstance(body.get("requestContext"), dict) and "requestPayload" in body:
        context, payload = body["requestContext"], body["requestPayload"]
        note = f"{context.get('condition', '?')} after {context.get('approximateInvokeCount', '?')} attempts"
        error = body.get("responsePayload")
        if isinstance(error, dict) and error.get("errorType"):
            note += f", last error {error['errorType']}"
        arn = context.get("functionArn")
        role = owner(arn, "lambda-failure-record") if arn else by_shape(payload, message).role
        return Replay("lambda-failure-record", role, payload, note)
    # EventBridge dead letters say why and for which target in their message attributes.
    error_code = attributes.get("ERROR_CODE", {}).get("StringValue")
    target = attributes.get("TARGET_ARN", {}).get("StringValue")
    if error_code or target:
        role = owner(target, "eventbridge-dead-letter") if target else by_shape(body, message).role
        return Replay("eventbridge-dead-letter", role, body, f"EventBridge {error_code or 'error'}")
    return by_shape(body, message)


def invoke(lambda_client, function: str, event: dict) -> Optional[str]:
    """Invokes synchronously; None when it succeeded, else why not."""
    try:
        response = lambda_client.invoke(FunctionName=function, InvocationType="RequestResponse",
                                        Payload=json.dumps(event).encode())
    except (ClientError, BotoCoreError) as e:
        return f"Invoke failed: {e}"
    payload = response["Payload"].read()
    if response.get("FunctionError"):
        try:
            error = json.loads(payload)
            return f"{error.get('errorType', response['FunctionError'])}: {error.get('errorMessage', '')}"
        except ValueError:
            return f"{response['FunctionError']}: {payload[:500]!r}"
    try:
        result = json.loads(payload) if payload else None
    except ValueError:
        result = None
    if isinstance(result, dict) and result.get("batchItemFailures"):
        ids = [f.get("itemIdentifier") for f in result["batchItemFailures"]]
        return f"batchItemFailures for {', '.join(map(str, ids))}"
    return None


def move_back(sqs, dlq_url: str, dry_run: bool, sleep=time.sleep, wait_secs: int = MOVE_WAIT_SECS) -> int:
    """Moves the DLQ's messages back to the queue they came from (SQS's StartMessageMoveTask) and
    waits for the move to end; the exit status."""
    attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=[
        "QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    arn = attributes["QueueArn"]
    waiting = sum(int(attributes.get(a, 0)) for a in ("ApproximateNumberOfMessages",
                                                       "ApproximateNumberOfMessagesNotVisible"))
    print(f"move {dlq_url} -> the queue its messages came from{' (dry run)' if dry_run else ''}", flush=True)
    if not waiting:
        print("nothing to move: the queue is empty")
        return 0
    if dry_run:
        print(f"about {waiting} message(s) would be moved back (dry run: nothing moved)")
        return 0
    try:
        sqs.start_message_move_task(SourceArn=arn)
    except (ClientError, BotoCoreError) as e:
        # One move at a time per queue: a move already running is refused.
        print(f"error: the move could not start: {e} (aws sqs list-message-move-tasks --source-arn {arn} "
              "shows a move already running)", file=sys.stderr)
        return 1
    task: dict = {}
    for _ in range(max(1, wait_secs // MOVE_POLL_SECS)):
        tasks = sqs.list_message_move_tasks(SourceArn=arn, MaxResults=1).get("Results", [])
        task = tasks[0] if tasks else {}
        if task.get("Status") != "RUNNING":
            break
        sleep(MOVE_POLL_SECS)
    moved = task.get("ApproximateNumberOfMessagesMoved", 0)
    status = task.get("Status", "UNKNOWN")
    if status == "COMPLETED":
        print(f"{moved} message(s) moved back")
        return 0
    if status == "RUNNING":
        print(f"{moved} of about {task.get('ApproximateNumberOfMessagesToMove', waiting)} moved so far; the move "
              f"goes on: aws sqs list-message-move-tasks --source-arn {arn}")
        return 0
    print(f"the move ended {status}{': ' + task['FailureReason'] if task.get('FailureReason') else ''} "
          f"({moved} moved)", file=sys.stderr)
    return 1


def delivery_dlq(args: argparse.Namespace, session) -> str:
    """--event-deliveries' queue: --queue-url, else the stack's EventDeliveryDLQUrl output."""
    if args.queue_url:
        return args.queue_url
    if not args.stack_name:
        raise ValueError("give --stack-name, or --queue-url (the EventDeliveryDLQUrl output)")
    try:
        return read_stack(session, args.stack_name, with_resources=False).output("EventDeliveryDLQUrl")
    except StackError as e:
        raise ValueError(str(e)) from e


def resolve(args: argparse.Namespace, session) -> tuple:
    """The queue URL and the functions by role; ValueError says what is missing."""
    queue_url, handler, router = args.queue_url, args.notification_handler, args.pipeline_router
    if args.stack_name:
        stack = read_stack(session, args.stack_name)
        if not queue_url:
            try:
                queue_url = stack.output("AsyncFailureDLQUrl")
            except StackError as e:
                raise ValueError(str(e)) from e
        # CloudFormation names the functions: their names are the resources' physical ids.
        handler = handler or stack.physical_id("NotificationHandlerFunction")
        router = router or stack.physical_id("PipelineRouterFunction")
        if not router and not stack.parameter("PipelineName"):
            router = "(none: an inference-only stack)"
    missing = [flag for flag, value in (("--queue-url", queue_url), ("--notification-handler", handler),
                                        ("--pipeline-router", router)) if not value]
    if missing:
        raise ValueError(f"give --stack-name, or {' and '.join(missing)}")
    return queue_url, {NOTIFICATION_HANDLER: handler, PIPELINE_ROUTER: router}


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--stack-name", help="the deployed stack: its DLQ output and function names")
    parser.add_argument("--queue-url", help="the dead-letter queue to read")
    parser.add_argument("--notification-handler", metavar="NAME_OR_ARN", help="the notification-handler function")
    parser.add_argument("--pipeline-router", metavar="NAME_OR_ARN", help="the pipeline-router function")
    parser.add_argument("--max", type=int, metavar="N", help="handle at most N messages")
    parser.add_argument("--dry-run", action="store_true", help="say what would be replayed; invoke and delete nothing")
    parser.add_argument("--wait-secs", type=int, default=5, choices=range(0, 21), metavar="0-20",
                        help="long-poll wait; the queue counts as empty after one empty wait (default 5)")
    parser.add_argument("--event-deliveries", action="store_true",
                        help="move MCP Events' dead-lettered webhook deliveries (EventDeliveryDLQ) back to their "
                             "queue, through SQS's message move; invokes no function")
    args = parser.parse_args(argv)
    if args.max is not None and args.max < 1:
        parser.error("--max must be at least 1")
    if args.event_deliveries and (args.max is not None or args.notification_handler or args.pipeline_router):
        parser.error("--event-deliveries moves the whole queue back to its own and invokes no function: "
                     "leave out --max, --notification-handler and --pipeline-router")

    try:
        session = aws_region.session()
    except aws_region.NoRegion as e:
        return error_status(e, 2)
    if args.event_deliveries:
        try:
            return move_back(session.client("sqs"), delivery_dlq(args, session), args.dry_run)
        except ValueError as e:
            parser.error(str(e))
        except (ClientError, BotoCoreError) as e:
            return error_status(e, 2)
    try:
        queue_url, functions = resolve(args, session)
    except ValueError as e:
        parser.error(str(e))
    except StackError as e:
        return error_status(e, 2)
    except (ClientError, BotoCoreError) as e:
        return error_status(f"could not read stack {args.stack_name}: {e}", 2)
    sqs = session.client("sqs")
    # Invoke's own 5xx answers are retried (standard mode, 3 attempts): a replay is idempotent.
    lambda_client = session.client("lambda", config=Config(read_timeout=LAMBDA_READ_TIMEOUT_SECS,
                                                           retries={"mode": "standard"}))

    counts = {"replayed": 0, "failed": 0, "skipped": 0, "would-replay": 0}
    seen: set = set()
    kept: list = []  # receipt handles of messages left on the queue
    print(f"redrive {queue_url} -> {functions[NOTIFICATION_HANDLER]}, {functions[PIPELINE_ROUTER]}"
          f"{' (dry run)' if args.dry_run else ''}", flush=True)
    try:
        while args.max is None or len(seen) < args.max:
            batch = 10 if args.max is None else min(10, args.max - len(seen))
            messages = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=batch, WaitTimeSeconds=args.wait_secs,
                VisibilityTimeout=VISIBILITY_TIMEOUT_SECS, MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["SentTimestamp"],
            ).get("Messages", [])
            if not messages:
                break
            for message in messages:
                if message["MessageId"] in seen:  # SQS delivers at least once
                    continue
                seen.add(message["MessageId"])
                outcome = handle(message, functions, args.dry_run, lambda_client, sqs, queue_url)
                counts[outcome] += 1
                if outcome != "replayed":
                    kept.append(message["ReceiptHandle"])
    finally:
        # What stays on the queue is visible again at once, for the next run or a look.
        for handle_ in kept:
            try:
                sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=handle_, VisibilityTimeout=0)
            except (ClientError, BotoCoreError):
                pass
    if args.dry_run:
        print(f"{len(seen)} messages: {counts['would-replay']} would be replayed, {counts['skipped']} "
              "not understood (dry run: nothing invoked or deleted)")
    else:
        print(f"{len(seen)} messages: {counts['replayed']} replayed, {counts['failed']} failed, "
              f"{counts['skipped']} skipped (not understood); failed and skipped ones stay on the queue")
    return 1 if counts["failed"] or counts["skipped"] else 0


def handle(message: dict, functions: dict, dry_run: bool, lambda_client, sqs, queue_url: str) -> str:
    """Replays one message and prints its line; returns replayed, failed, skipped or would-replay."""
    try:
        replay = understand(message, functions)
    except NotUnderstood as e:
        # Named by its id and size, never by its body: a body may hold a secret (a CallbackStep's token).
        size = len(message["Body"].encode())
        print(f"{message['MessageId']}  {e.kind}  -  skipped: {e} ({size} bytes)", flush=True)
        return "skipped"
    function = functions[replay.role]
    label = f"{message['MessageId']}  {replay.kind}  {function}"
    note = f" ({replay.note})" if replay.note else ""
    if dry_run:
        print(f"{label}  would replay{note}", flush=True)
        return "would-replay"
    error = invoke(lambda_client, function, replay.event)
    if error is None:
        try:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        except (ClientError, BotoCoreError) as e:
            # It will be replayed again by the next run: harmless, the functions are idempotent.
            print(f"{label}  failed: replayed, but could not delete it: {e}{note}", flush=True)
            return "failed"
        print(f"{label}  replayed{note}", flush=True)
        return "replayed"
    print(f"{label}  failed: {error}{note}", flush=True)
    return "failed"


if __name__ == "__main__":
    sys.exit(main())
