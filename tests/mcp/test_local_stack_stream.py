"""The local stack's stream mapping (scripts/event_source_mappings.py's StreamToFunction), which feeds event-delivery the events
table's stream as Lambda would: its filter, its batches, and where it resumes after a partial
failure. Against the local stack's moto server, on a table of each test's own; the function is a
stand-in that answers as it is told."""

import http.server
import json
import os
import threading
import time
import uuid

import boto3
import pytest

from conftest import need
from lambda_watch import free_port
import event_source_mappings
from event_source_mappings import (STREAM_FILTER, STREAM_MAX_RETRIES, FunctionError, StreamToFunction,
                                   Unreachable, matches, resume_at)


def record(event_name="INSERT", image=None, sequence="100"):
    return {"eventName": event_name, "dynamodb": {"SequenceNumber": sequence, "NewImage": image or {}}}


def test_the_filter_passes_only_new_items_that_name_webhooks():
    webhooks = {"owner": {"S": "o"}, "webhooks": {"BOOL": True}, "deliver_to": {"S": "sub_a sub_b"}}
    assert matches(STREAM_FILTER, record(image=webhooks))
    assert not matches(STREAM_FILTER, record(image={"owner": {"S": "o"}}))  # poll only: no subscriber
    assert not matches(STREAM_FILTER, record(image={**webhooks, "webhooks": {"BOOL": False}}))
    assert not matches(STREAM_FILTER, record(image={**webhooks, "webhooks": {"S": "true"}}))
    assert not matches(STREAM_FILTER, record("MODIFY", webhooks))
    assert not matches(STREAM_FILTER, {"eventName": "REMOVE", "dynamodb": {"SequenceNumber": "1"}})


def test_the_mapping_resumes_at_the_lowest_sequence_number_reported():
    batch = [record(sequence=str(n)) for n in (1100000000000000000007, 1100000000000000000008,
                                               1100000000000000000009)]
    # Success: nothing reported, in any of the shapes Lambda takes as none.
    for answer in (None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}, "ok"):
        assert resume_at(batch, answer) == 3
    # The records before the lowest reported are done, whatever the order of the report.
    answer = {"batchItemFailures": [{"itemIdentifier": "1100000000000000000009"},
                                    {"itemIdentifier": "1100000000000000000008"}]}
    assert resume_at(batch, answer) == 1
    # A report Lambda cannot place fails the whole batch.
    for failure in ({"itemIdentifier": ""}, {"itemIdentifier": None}, {"id": "1100000000000000000008"},
                    {"itemIdentifier": "1100000000000000000006"}):
        assert resume_at(batch, {"batchItemFailures": [failure]}) == 0


@pytest.fixture
def table():
    """A table of the test's own with the events table's keys and stream."""
    ddb = boto3.client("dynamodb", endpoint_url=need("AWS_ENDPOINT_URL"), region_name=os.environ["AWS_REGION"])
    name = f"stream-test-{uuid.uuid4().hex[:12]}"
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("owner", "position")],
                     KeySchema=[{"AttributeName": "owner", "KeyType": "HASH"},
                                {"AttributeName": "position", "KeyType": "RANGE"}],
                     StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    yield ddb, name
    ddb.delete_table(TableName=name)


def put(ddb, table, position, webhooks=True, **extra):
    item = {"owner": {"S": "bearer:me"}, "position": {"S": position}, **extra}
    if webhooks:
        item.update({"webhooks": {"BOOL": True}, "deliver_to": {"S": "sub_1"}})
    ddb.put_item(TableName=table, Item=item)


class Scripted(StreamToFunction):
    """The mapping, its function a stand-in: each invocation's event kept, answered by `answer`
    (the event's records' positions → the answer, or FunctionError raised)."""

    def __init__(self, table, answer):
        super().__init__(os.environ["AWS_ENDPOINT_URL"], table)
        self.answer, self.events = answer, []

    def invoke(self, event):
        self.events.append(json.loads(event))
        return self.answer(positions(self.events[-1]))

    def seen(self):
        return [positions(e) for e in self.events]


def positions(event):
    return [r["dynamodb"]["NewImage"]["position"]["S"] for r in event["Records"]]


def sequence_of(event, position):
    return next(r["dynamodb"]["SequenceNumber"] for r in event["Records"]
                if r["dynamodb"]["NewImage"]["position"]["S"] == position)


@pytest.fixture
def at_once(monkeypatch):
    """Retries without the wait for the mapping's next read."""
    monkeypatch.setattr(event_source_mappings, "STREAM_POLL_SECS", 0)


def drain(mapping, most=50):
    for _ in range(most):
        if not mapping.poll():
            return
    raise AssertionError("the mapping was still busy")


def test_the_mapping_starts_at_latest_and_hands_on_only_new_items_naming_webhooks(table):
    ddb, name = table
    put(ddb, name, "before")
    mapping = Scripted(name, lambda _: {"batchItemFailures": []})
    put(ddb, name, "a")
    put(ddb, name, "quiet", webhooks=False)
    put(ddb, name, "a", note={"S": "rewritten"})  # a MODIFY
    put(ddb, name, "b")
    drain(mapping)
    assert mapping.seen() == [["a", "b"]]
    event = mapping.events[0]
    stream_arn = ddb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    first = event["Records"][0]
    assert {k: first[k] for k in ("eventName", "eventVersion", "eventSource", "awsRegion", "eventSourceARN")} == {
        "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "eventSourceARN": stream_arn}
    change = first["dynamodb"]
    assert change["StreamViewType"] == "NEW_IMAGE" and isinstance(change["ApproximateCreationDateTime"], int)
    assert change["Keys"] == {"owner": {"S": "bearer:me"}, "position": {"S": "a"}}
    assert change["NewImage"]["deliver_to"] == {"S": "sub_1"} and change["SizeBytes"] > 0
    assert int(event["Records"][1]["dynamodb"]["SequenceNumber"]) > int(change["SequenceNumber"])


def test_ten_records_an_invocation(table):
    ddb, name = table
    mapping = Scripted(name, lambda _: None)
    for n in range(12):
        put(ddb, name, f"p{n:02}")
    drain(mapping)
    assert [len(batch) for batch in mapping.seen()] == [10, 2]


def test_a_partial_failure_is_retried_from_the_record_reported_and_not_before(table, at_once):
    ddb, name = table
    failed_once = []

    def answer(got):
        if "b" in got and not failed_once:
            failed_once.append(True)
            return {"batchItemFailures": [{"itemIdentifier": sequence_of(mapping.events[-1], "b")}]}
        return {"batchItemFailures": []}

    mapping = Scripted(name, answer)
    for position in ("a", "b", "c"):
        put(ddb, name, position)
    drain(mapping)
    assert mapping.seen() == [["a", "b", "c"], ["b", "c"]]
    # A failed invocation hands the whole batch on again.
    calls = []

    def fails_once(got):
        calls.append(got)
        if len(calls) == 1:
            raise FunctionError("boom")

    mapping.answer = fails_once
    put(ddb, name, "d")
    put(ddb, name, "e")
    drain(mapping)
    assert calls == [["d", "e"], ["d", "e"]]


def test_a_record_failing_past_the_retries_has_its_batch_given_up_and_said(table, at_once, capfd):
    ddb, name = table
    mapping = Scripted(name, lambda got: {"batchItemFailures": [
        {"itemIdentifier": sequence_of(mapping.events[-1], "b")}]} if "b" in got else None)
    for position in ("a", "b", "c"):
        put(ddb, name, position)
    drain(mapping)
    # The first try, then the retries; the batch from b given up; what follows goes on.
    assert mapping.seen() == [["a", "b", "c"]] + [["b", "c"]] * STREAM_MAX_RETRIES
    said = capfd.readouterr().err
    b, c = (sequence_of(mapping.events[-1], p) for p in ("b", "c"))
    shard = mapping.shards[0]
    assert f"gave up a batch of 2 after {STREAM_MAX_RETRIES} retries" in said
    assert shard.shard_id in said and f"sequence numbers {b} to {c}" in said
    put(ddb, name, "d")
    drain(mapping)
    assert mapping.seen()[-1] == ["d"]


class Function(http.server.BaseHTTPRequestHandler):
    """event-delivery's stand-in behind Lambda's invoke API: answers each invocation with the
    next of `answers` (a status and a body)."""
    answers: list = []
    events: list = []

    def do_POST(self):
        Function.events.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        status, body = Function.answers.pop(0)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_function_is_invoked_over_http_and_an_unreachable_one_costs_no_retry(table, at_once):
    ddb, name = table
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Function)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/2015-03-31/functions/event-delivery/invocations"
    try:
        # Nobody listening: the batch waits, not counted as a try.
        mapping = StreamToFunction(os.environ["AWS_ENDPOINT_URL"], name, f"http://127.0.0.1:{free_port()}/x")
        put(ddb, name, "a")
        with pytest.raises(Unreachable):
            mapping.poll()
        assert mapping.shards[0].failures == 0 and len(mapping.shards[0].pending) == 1
        # Listening: a function error (500) is a failed try, then its answer is read.
        mapping.invoke_url = url
        Function.events, Function.answers = [], [(500, b'{"errorType": "Panic", "errorMessage": "x"}'),
                                                 (200, b'{"batchItemFailures": []}')]
        drain(mapping)
        assert [positions(e) for e in Function.events] == [["a"], ["a"]]
        assert mapping.shards[0].failures == 0 and not mapping.shards[0].pending
    finally:
        server.shutdown()
        server.server_close()


def test_the_thread_delivers_an_item_written_right_after_it_is_made(table):
    """As --lambda starts it: made before the command runs, then running on its own."""
    ddb, name = table
    mapping = Scripted(name, lambda _: None)
    mapping.start()
    try:
        put(ddb, name, "first")
        for _ in range(50):
            if mapping.events:
                break
            time.sleep(0.1)
        assert mapping.seen() == [["first"]]
    finally:
        mapping.stopping.set()
        mapping.join(timeout=5)
