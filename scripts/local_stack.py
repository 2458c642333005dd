#!/usr/bin/env python3
"""Runs a command against a local AWS stack, then tears the stack down.

    .venv/bin/python scripts/local_stack.py [--env-file FILE] [--sagemaker BIN [--lambda]] -- COMMAND...

Starts moto on 127.0.0.1 on a free port, creates what the functions expect (the results and
events and subscriptions tables with TTL on `ttl`, the events table with its stream (new
images), the MCP Events retry queue (FIFO) and its DLQ, the IO bucket, the async endpoint's
success and error topics, and an SQS queue subscribed to both as the optional buffer), then runs
COMMAND with the environment that points every AWS SDK at it. The stack lives in this process, so
it stops when the command ends, fails, or this process is interrupted or killed.

With --lambda, the local `event-delivery` function is fed as its two event source mappings would
feed it: the events table's stream (StreamToFunction) and the retry queue (QueueToFunction).
With --sagemaker, also starts the SageMaker stand-in (dev/sagemaker-standin) and points
AWS_ENDPOINT_URL_SAGEMAKER at it. With --lambda, a port is reserved for `cargo lambda watch`
(LAMBDA_PORT, LAMBDA_INVOKE_URL) and the stand-in delivers its events there.
"""

import argparse
import base64
import datetime
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import boto3
import botocore.exceptions
from lambda_watch import free_port
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
RESULTS_TABLE = "mcp-async-results"
PIPELINE_RESULTS_TABLE = "mcp-pipeline-results"
EVENTS_TABLE = "mcp-events"
SUBSCRIPTIONS_TABLE = "mcp-subscriptions"
DELIVERY_QUEUE = "mcp-event-delivery.fifo"
DELIVERY_DLQ = "mcp-event-delivery-dlq.fifo"
IO_BUCKET = "mcp-sagemaker-async-io"
SUCCESS_TOPIC = "mcp-inference-success"
ERROR_TOPIC = "mcp-inference-error"
NOTIFICATION_QUEUE = "mcp-inference-notifications"
PIPELINE_RESULTS_QUEUE = "mcp-pipeline-results"


def create_resources(endpoint: str) -> dict:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    ddb = session.client("dynamodb", endpoint_url=endpoint)
    # Each table with its keys (partition, then sort), as the template declares it; TTL on `ttl`.
    for table, keys in ((RESULTS_TABLE, ["inference_id"]),
                        (PIPELINE_RESULTS_TABLE, ["session_id", "execution_arn"]),
                        (EVENTS_TABLE, ["owner", "position"]),
                        (SUBSCRIPTIONS_TABLE, ["owner", "id"])):
        ddb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in keys],
            KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in zip(keys, ("HASH", "RANGE"))],
            BillingMode="PAY_PER_REQUEST",
            # The events table's new items reach event-delivery through its stream.
            **({"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}}
               if table == EVENTS_TABLE else {}),
        )
        ddb.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        )

    session.client("s3", endpoint_url=endpoint).create_bucket(Bucket=IO_BUCKET)

    sns = session.client("sns", endpoint_url=endpoint)
    success_arn = sns.create_topic(Name=SUCCESS_TOPIC)["TopicArn"]
    error_arn = sns.create_topic(Name=ERROR_TOPIC)["TopicArn"]

    sqs = session.client("sqs", endpoint_url=endpoint)
    queue_url = sqs.create_queue(QueueName=NOTIFICATION_QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    for topic in (success_arn, error_arn):
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    pipeline_queue_url = sqs.create_queue(QueueName=PIPELINE_RESULTS_QUEUE)["QueueUrl"]
    # MCP Events retries: FIFO (one ordered group per subscription), a DLQ as the template's.
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    dlq_url = sqs.create_queue(QueueName=DELIVERY_DLQ, Attributes=fifo)["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 20})
    delivery_url = sqs.create_queue(
        QueueName=DELIVERY_QUEUE,
        Attributes={**fifo, "VisibilityTimeout": "60", "RedrivePolicy": redrive},
    )["QueueUrl"]

    return {
        "RESULTS_TABLE": RESULTS_TABLE,
        "PIPELINE_RESULTS_TABLE": PIPELINE_RESULTS_TABLE,
        "EVENTS_TABLE": EVENTS_TABLE,
        "SUBSCRIPTIONS_TABLE": SUBSCRIPTIONS_TABLE,
        "DELIVERY_QUEUE_URL": delivery_url,
        "DELIVERY_DLQ_URL": dlq_url,
        "IO_BUCKET": IO_BUCKET,
        "SUCCESS_TOPIC_ARN": success_arn,
        "ERROR_TOPIC_ARN": error_arn,
        "NOTIFICATION_QUEUE_URL": queue_url,
        "PIPELINE_RESULTS_QUEUE_URL": pipeline_queue_url,
    }


class QueueToFunction(threading.Thread):
    """The delivery queue's event source mapping, as Lambda runs one: receives batches of up to
    10 (FIFO: a group's messages in order, one batch of a group at a time), invokes the function
    with them as an SQS event, and deletes the messages its partial-batch answer does not report.
    A reported message comes back when its visibility timeout (which the function may change)
    runs out; an invocation that fails leaves the whole batch to come back."""

    def __init__(self, endpoint: str, queue_url: str, invoke_url: str):
        super().__init__(daemon=True)
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self.sqs = session.client("sqs", endpoint_url=endpoint)
        self.queue_url = queue_url
        self.arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        self.invoke_url = invoke_url
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                got = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                               WaitTimeSeconds=1, AttributeNames=["All"])
            except Exception:  # the stack is going down
                time.sleep(0.2)
                continue
            messages = got.get("Messages", [])
            if messages:
                self.deliver(messages)

    def deliver(self, messages):
        records = [{
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": m.get("Attributes", {}), "messageAttributes": {},
            "md5OfBody": m.get("MD5OfBody", ""), "eventSource": "aws:sqs",
            "eventSourceARN": self.arn, "awsRegion": REGION,
        } for m in messages]
        request = urllib.request.Request(self.invoke_url, data=json.dumps({"Records": records}).encode(),
                                         method="POST")
        try:
            # The first invocation builds the function: it may take minutes.
            with urllib.request.urlopen(request, timeout=900) as resp:
                answer = json.loads(resp.read() or b"{}")
        except (urllib.error.URLError, OSError, ValueError):
            return
        failed = {f.get("itemIdentifier") for f in (answer or {}).get("batchItemFailures", [])}
        done = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(messages) if m["MessageId"] not in failed]
        if done:
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=done)


# The stream's event source mapping, as the template declares it.
STREAM_BATCH_SIZE = 10
STREAM_MAX_RETRIES = 10
STREAM_FILTER = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"webhooks": {"BOOL": [True]}}}}
# Lambda reads a shard four times a second; a little more often here.
STREAM_POLL_SECS = 0.2
# How often the stream is described again for shards that were not there before.
SHARDS_EVERY_SECS = 5.0
# How long the mapping waits before calling a function it could not reach.
UNREACHABLE_SECS = 1.0


def matches(pattern: dict, record: dict) -> bool:
    """Lambda's filter rule, for the part of its syntax the template uses: each key of the pattern
    is in the record; a dict is a pattern for the object there, a list the values allowed."""
    for key, want in pattern.items():
        if key not in record:
            return False
        have = record[key]
        if isinstance(want, dict):
            if not isinstance(have, dict) or not matches(want, have):
                return False
        elif not any(type(have) is type(w) and have == w for w in want):
            return False
    return True


def resume_at(batch: list[dict], answer) -> int:
    """How many records of `batch` are done after the function's answer (ReportBatchItemFailures):
    all without a failure reported; those before the lowest sequence number reported; none when
    a report names no record of the batch (Lambda takes an empty or missing itemIdentifier as the
    whole batch failed)."""
    failures = answer.get("batchItemFailures") if isinstance(answer, dict) else None
    if not failures:
        return len(batch)
    if not isinstance(failures, list):
        return 0
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in batch]
    reported = []
    for failure in failures:
        ident = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(ident, str) or not ident.isdigit():
            return 0
        reported.append(int(ident))
    lowest = min(reported)
    return numbers.index(lowest) if lowest in numbers else 0


def lambda_record(record: dict, stream_arn: str) -> dict:
    """A stream record as Lambda hands it to a function. GetRecords gives most of it; the time
    is in seconds since the epoch and the stream is named, as Lambda's records have them."""
    change = dict(record["dynamodb"])
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime.datetime):
        change["ApproximateCreationDateTime"] = int(created.timestamp())
    return {"eventID": record["eventID"], "eventName": record["eventName"], "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": record.get("awsRegion", REGION), "dynamodb": change,
            "eventSourceARN": stream_arn}


def stream_event(records: list[dict], stream_arn: str) -> bytes:
    """The event a stream's mapping invokes a function with. boto3 decodes binary attributes:
    they go back to base64, as in DynamoDB's JSON."""
    def binary(value):
        if isinstance(value, (bytes, bytearray)):
            return base64.b64encode(value).decode()
        raise TypeError(f"{type(value).__name__} is not JSON")
    return json.dumps({"Records": [lambda_record(r, stream_arn) for r in records]}, default=binary).encode()


class FunctionError(Exception):
    """The function was invoked and failed: the batch counts a retry."""


class Unreachable(Exception):
    """The function could not be invoked (not listening yet): the batch waits, no retry counted,
    as Lambda waits for a function it cannot invoke."""


@dataclass
class Shard:
    stream_arn: str
    shard_id: str
    iterator: str | None  # None: the shard is closed and read to its end
    pending: list = field(default_factory=list)  # read, kept by the filter, not done yet
    failures: int = 0  # failed invocations since the first pending record was last passed


class StreamToFunction(threading.Thread):
    """A table's stream as a function's event source mapping, as Lambda runs one with the
    template's settings: records kept by STREAM_FILTER (the others are passed over unseen), at
    most STREAM_BATCH_SIZE an invocation, no batching window, one batch of a shard at a time, in
    order. The function names the record to resume from (ReportBatchItemFailures): those before
    it are done and the rest is handed on again; after STREAM_MAX_RETRIES retries at the same
    record its batch is given up, and a line on stderr says what the on-failure destination would
    hold. The shards are found and given LATEST iterators here, before the thread starts, so an
    event written once the stack is handed on is not missed; a shard found later is read from its
    start."""

    def __init__(self, endpoint: str, table: str, invoke_url: str | None = None):
        super().__init__(daemon=True)
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        self.ddb = session.client("dynamodb", endpoint_url=endpoint)
        self.streams = session.client("dynamodbstreams", endpoint_url=endpoint)
        self.table, self.invoke_url = table, invoke_url
        self.shards: list[Shard] = []
        self.read_ns = 0  # time.perf_counter_ns() when a read last brought records
        self.stopping = threading.Event()
        self.discover("LATEST")

    def discover(self, position: str) -> None:
        """Takes on the shards of the table's stream it does not read yet, from `position`. A
        stream replaced (turned off and on again) gets no more records: its shards are dropped
        once their records are handed on."""
        arn = self.ddb.describe_table(TableName=self.table)["Table"].get("LatestStreamArn")
        if not arn:
            if position == "LATEST":
                raise RuntimeError(f"{self.table} has no stream to map")
            return
        self.shards = [s for s in self.shards if s.stream_arn == arn or s.pending]
        known = {(s.stream_arn, s.shard_id) for s in self.shards}
        kwargs: dict = {}
        while True:
            described = self.streams.describe_stream(StreamArn=arn, **kwargs)["StreamDescription"]
            for shard in described.get("Shards", []):
                closed = "EndingSequenceNumber" in shard.get("SequenceNumberRange", {})
                if (arn, shard["ShardId"]) in known or (closed and position == "LATEST"):
                    continue
                iterator = self.streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                                           ShardIteratorType=position)["ShardIterator"]
                self.shards.append(Shard(arn, shard["ShardId"], iterator))
            if not described.get("LastEvaluatedShardId"):
                return
            kwargs = {"ExclusiveStartShardId": described["LastEvaluatedShardId"]}

    def run(self) -> None:
        look_again = time.monotonic() + SHARDS_EVERY_SECS
        while not self.stopping.is_set():
            try:
                busy = self.poll()
                if time.monotonic() >= look_again:
                    look_again = time.monotonic() + SHARDS_EVERY_SECS
                    self.discover("TRIM_HORIZON")
            except Unreachable:
                self.stopping.wait(UNREACHABLE_SECS)
                continue
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError):
                busy = False  # the stack is going down, or moto refused a read: read again shortly
            if not busy:
                self.stopping.wait(STREAM_POLL_SECS)

    def poll(self) -> bool:
        """One step on each shard: a read when it has nothing pending, then one batch handed on.
        False when there was nothing to do."""
        busy = False
        for shard in list(self.shards):
            busy |= self.step(shard)
        return busy

    def step(self, shard: Shard) -> bool:
        read = 0
        if not shard.pending:
            if shard.iterator is None:
                self.shards.remove(shard)
                return False
            got = self.streams.get_records(ShardIterator=shard.iterator)
            forget_iterator(shard.stream_arn, shard.iterator)
            shard.iterator = got.get("NextShardIterator")
            records = got.get("Records", [])
            read = len(records)
            if read:
                self.read_ns = time.perf_counter_ns()
            shard.pending = [r for r in records if matches(STREAM_FILTER, r)]
            if not shard.pending:
                return read > 0
        batch = shard.pending[:STREAM_BATCH_SIZE]
        try:
            done = resume_at(batch, self.invoke(stream_event(batch, shard.stream_arn)))
        except FunctionError:
            done = 0
        del shard.pending[:done]
        if done == len(batch):
            shard.failures = 0
            return True
        # The count is of retries at one record: a partial success moves on to another.
        shard.failures = 1 if done else shard.failures + 1
        if shard.failures > STREAM_MAX_RETRIES:
            dropped = shard.pending[:STREAM_BATCH_SIZE]
            del shard.pending[:len(dropped)]
            shard.failures = 0
            numbers = [r["dynamodb"]["SequenceNumber"] for r in dropped]
            print(f"local stack: the stream's mapping gave up a batch of {len(dropped)} after "
                  f"{STREAM_MAX_RETRIES} retries: {shard.stream_arn} {shard.shard_id}, sequence numbers "
                  f"{numbers[0]} to {numbers[-1]}", file=sys.stderr, flush=True)
        else:
            # Retried at the mapping's next read, not at once.
            self.stopping.wait(STREAM_POLL_SECS)
        return True

    def invoke(self, event: bytes):
        """The function's answer to `event`, through Lambda's invoke API (cargo lambda watch's)."""
        request = urllib.request.Request(self.invoke_url, data=event, method="POST")
        try:
            # The first invocation builds the function: it may take minutes.
            with urllib.request.urlopen(request, timeout=900) as resp:
                body = resp.read()
                failed = resp.headers.get("X-Amz-Function-Error")
        except (urllib.error.HTTPError, TimeoutError) as e:
            raise FunctionError(str(e)) from e
        except (urllib.error.URLError, OSError) as e:
            raise Unreachable(str(e)) from e
        try:
            answer = json.loads(body or b"null")
        except ValueError as e:
            raise FunctionError(f"the answer is not JSON: {body[:200]!r}") from e
        if failed or (isinstance(answer, dict) and {"errorType", "errorMessage"} <= answer.keys()):
            raise FunctionError(str(answer))
        return answer


def forget_iterator(stream_arn: str, iterator: str) -> None:
    """moto keeps every shard iterator it hands out (AWS lets one lapse after 15 minutes), a new
    one at each read: one read past is dropped, when moto runs in this process (the local stack's
    and the bench's do), so that an idle stream read five times a second holds no more memory."""
    try:
        from moto.dynamodbstreams.models import dynamodbstreams_backends
        _, _, _, region, account, _ = stream_arn.split(":", 5)
        dynamodbstreams_backends[account][region].shard_iterators.pop(iterator, None)
    except Exception:  # another moto, or moto elsewhere: it keeps them, as before
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-file", help="also write the stack's environment to this file")
    parser.add_argument("--sagemaker", metavar="BIN", help="start this SageMaker stand-in binary too")
    parser.add_argument("--lambda", dest="with_lambda", action="store_true",
                        help="reserve a port for cargo lambda watch and deliver stand-in events to it")
    parser.add_argument("--step-millis", default="200", help="how long each stand-in pipeline step takes")
    parser.add_argument("--standin-runtime", action="store_true",
                        help="serve InvokeEndpointAsync from the stand-in (it runs a model and notifies) "
                             "instead of moto (which accepts calls and never notifies)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")

    # A SIGTERM (make interrupted, CI timeout) unwinds through `finally` like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    # One log line per request would bury the command's own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    children: list[subprocess.Popen] = []
    stoppers: list = []
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        env = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
            "MOTO_ENDPOINT": endpoint,
            **create_resources(endpoint),
        }
        if args.with_lambda:
            env["LAMBDA_PORT"] = str(free_port())
            env["LAMBDA_INVOKE_URL"] = f"http://127.0.0.1:{env['LAMBDA_PORT']}"
        if args.sagemaker:
            standin_cmd = [args.sagemaker, "--port", "0", "--region", REGION, "--step-millis", args.step_millis]
            if args.with_lambda:
                standin_cmd += ["--lambda-invoke-url", env["LAMBDA_INVOKE_URL"]]
            standin = subprocess.Popen(standin_cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
            children.append(standin)
            first = standin.stdout.readline().strip()
            if not first.startswith("listening on "):
                sys.exit(f"the SageMaker stand-in did not start (it printed {first!r})")
            env["AWS_ENDPOINT_URL_SAGEMAKER"] = first.removeprefix("listening on ")
            if args.standin_runtime:
                env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] = env["AWS_ENDPOINT_URL_SAGEMAKER"]
        if args.with_lambda:
            invoke = f"{env['LAMBDA_INVOKE_URL']}/2015-03-31/functions/event-delivery/invocations"
            # Both mappings are reading before the command starts: the stream's from LATEST.
            for mapping in (StreamToFunction(endpoint, EVENTS_TABLE, invoke),
                            QueueToFunction(endpoint, env["DELIVERY_QUEUE_URL"], invoke)):
                mapping.start()
                stoppers.append(mapping.stopping.set)
        if args.env_file:
            os.makedirs(os.path.dirname(os.path.abspath(args.env_file)), exist_ok=True)
            with open(args.env_file, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in env.items())
        print(f"local AWS stack (moto) at {endpoint}", file=sys.stderr, flush=True)
        child = subprocess.Popen(command, env={**os.environ, **env})
        try:
            return child.wait()
        except BaseException:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
    finally:
        for stop_it in stoppers:
            stop_it()
        for child in children:
            child.terminate()
            child.wait(timeout=10)
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
