"""Lambda's event source mappings of event-delivery, played locally against moto: the events
table's stream (StreamToFunction) and the MCP Events retry queue (QueueToFunction), each invoking
the function over HTTP with the batches Lambda would hand it. scripts/local_stack.py runs them
under --lambda; the bench's events cost runs the stream's."""

import base64
import datetime
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import boto3
import botocore.exceptions

# The local stack's region.
REGION = "us-east-1"


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
