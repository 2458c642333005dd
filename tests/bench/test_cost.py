"""The cost model (bench/cost.py) on hand-worked examples: DynamoDB's item sizes and units, each
service's price, a whole job's bill, and the long-poll schedule. Needs nothing running, except
the last test, which counts sizes through the emulator's recorder against moto in this process."""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import cost  # noqa: E402


def call(operation, old=None, new=None, reads=(), request_bytes=0, response_bytes=0, consistent=True):
    return SimpleNamespace(operation=operation, old_size=old, new_size=new, read_sizes=list(reads),
                           request_bytes=request_bytes, response_bytes=response_bytes, consistent=consistent)


def test_an_items_size_follows_dynamodbs_rules():
    item = {
        "inference_id": {"S": "job-0001"},  # 12 + 8
        "status": {"S": "completed"},  # 6 + 9
        "ttl": {"N": "1767225600"},  # 3 + (8 significant digits: 4) + 1
        "done": {"BOOL": True},  # 4 + 1
        # 6 + 3 + (1 + 5 + 7) + (1 + 5 + (2 digits: 1) + 1) + (1 + 5 + 3 + 2 * (1 + (1 digit: 1) + 1))
        "result": {"M": {"label": {"S": "invoice"}, "score": {"N": "0.97"},
                         "spans": {"L": [{"N": "7"}, {"N": "12"}]}}},
    }
    assert cost.item_size(item) == 20 + 15 + 8 + 5 + 6 + 3 + 13 + 8 + 15
    assert [cost.number_size(n) for n in ("0.97", "1767225600", "-12.500", "100", "3.14159")] == [2, 5, 3, 2, 4]
    assert cost.value_size({"B": "AAECAw=="}) == 4  # the raw bytes, not their base64
    assert cost.value_size({"L": []}) == 3 and cost.value_size({"NULL": True}) == 1


def test_units_round_up_per_kb_written_and_per_4_kb_read():
    assert cost.write_units(None, 300) == 1
    assert cost.write_units(1024, 1024) == 1 and cost.write_units(1024, 1025) == 2
    # A completed job with a 64 KiB inline result, over a 300-byte pending item: the larger item counts.
    completed = 300 + len("result") + 64 * 1024
    assert cost.write_units(300, completed) == 65
    assert cost.write_units(completed, 300) == 65  # shrinking costs the same
    assert cost.read_units([completed]) == 17
    assert cost.read_units([completed], consistent=False) == 8.5
    assert cost.read_units([]) == 1  # a read that finds nothing still costs one unit
    assert cost.read_units([3000, 3000]) == 2  # a query's items add up before rounding
    # BatchGetItem rounds each key's item on its own, a missing one included; eventually consistent halves.
    assert cost.batch_read_units([3000, 3000, 0]) == 1.5
    assert cost.batch_read_units([3000, 5000], consistent=True) == 3
    assert cost.chunks(64 * 1024) == 1 and cost.chunks(64 * 1024 + 1) == 2 and cost.chunks(0) == 1


def test_a_hand_worked_job_from_item_sizes_to_dollars():
    """submit (PutItem, the input's PUT, InvokeEndpointAsync, UpdateItem), SageMaker (the output's
    PUT, the notification's Publish), the notification (GetObject, UpdateItem to a 64 KiB inline
    result), one check (GetItem of it), three warm invocations at 128 MB."""
    calls = [call("DynamoDB PutItem", None, 400), call("S3 PutObject"), call("SageMakerRuntime InvokeEndpointAsync"),
             call("DynamoDB UpdateItem", 400, 450), call("S3 PutObject"), call("SNS Publish", request_bytes=1500),
             call("S3 GetObject"), call("DynamoDB UpdateItem", 450, 66_000),
             call("DynamoDB GetItem", reads=[66_000])]
    invocations = [cost.Invocation("mcp-tools", 14.1), cost.Invocation("notification-handler", 12.6),
                   cost.Invocation("mcp-tools", 3.2)]
    bill = cost.bill(calls, invocations)
    # write units 1 + 1 + ceil(66000 / 1024) = 67; read units ceil(66000 / 4096) = 17
    assert bill.units("write units") == 67 and bill.units("read units") == 17
    by = {k: round(v * 1e6, 7) for k, v in bill.by_service().items()}
    assert by == {
        "DynamoDB": 67 * 0.625 + 17 * 0.125,  # 44.0
        "S3": 2 * 5.0 + 0.4,  # two PUTs at $0.005 per 1000, one GET at $0.0004 per 1000
        "SNS": 0.5,
        "SageMaker": 0.0,
        # 3 requests at $0.20 per million; 15 + 13 + 4 ms billed at 0.125 GB and $0.0000133334 per GB-s
        "Lambda": round(3 * 0.2 + 0.032 * 0.125 * 0.0000133334 * 1e6, 7),
    }
    dominant = bill.dominant()
    assert (dominant.what, dominant.quantity) == ("DynamoDB UpdateItem", 66)


def test_the_price_table_and_unit_rules_have_not_changed_silently():
    """A pinned figure, worked out by hand from the prices and rules as published on the date in
    cost.PRICES_CHECKED. Changing a price or a rule changes it: update both on purpose, with the
    source and date, and BENCHMARKS.md by a new make bench."""
    assert (cost.PRICES_REGION, cost.PRICES_CHECKED) == ("us-east-1", "2026-12-02")
    calls = [call("DynamoDB PutItem", None, 400), call("S3 PutObject"), call("DynamoDB UpdateItem", 400, 450),
             call("S3 PutObject"), call("SNS Publish", request_bytes=1500), call("S3 GetObject"),
             call("DynamoDB UpdateItem", 450, 66_000), call("DynamoDB GetItem", reads=[66_000]),
             call("SQS SendMessage", request_bytes=70_000), call("SQS ReceiveMessage", response_bytes=20_000)]
    invocations = [cost.Invocation("mcp-tools", 14.1), cost.Invocation("notification-handler", 12.6),
                   cost.Invocation("mcp-tools", 3.2)]
    # 44.0 (DynamoDB) + 10.4 (S3) + 0.5 (SNS) + 3 * 0.4 (SQS: two chunks sent, one received)
    # + 0.6 + 0.0533336 (Lambda) = 56.7533336 dollars per million jobs
    assert cost.bill(calls, invocations).total * 1e6 == pytest.approx(56.7533336, abs=1e-7)


def test_a_lambda_invocation_is_billed_per_started_millisecond_at_its_memory():
    request, duration = cost.price_invocation(cost.Invocation("f", 12.01, memory_mb=256))
    assert request.dollars == pytest.approx(0.2e-6)
    assert duration.quantity == pytest.approx(0.013 * 0.25) and duration.dollars == pytest.approx(0.013 * 0.25 * 0.0000133334)
    assert cost.lambda_second(128) == pytest.approx(0.125 * 0.0000133334)


def test_unknown_calls_are_refused_rather_than_priced_at_nothing():
    with pytest.raises(ValueError):
        cost.price_call(call("Kinesis PutRecord"))


def test_the_long_poll_schedule_is_the_one_check_rs_sleeps():
    source = (ROOT / "shared" / "usecases" / "src" / "check.rs").read_text()
    body = re.search(r"pub fn poll_delay\(attempt: u32\) -> Duration \{(.*?)\n\}", source, re.S).group(1)
    arms = [int(ms) for ms in re.findall(r"=> (\d+),", body)]
    assert arms == next(iter(cost.POLL_SCHEDULES.values()))
    as_built = arms
    # Reads at 0, 0.25, 0.75, 1.75, then 3.75 s, the last read at the deadline.
    assert cost.poll_times(as_built, 3) == [0, 0.25, 0.75, 1.75, 3.0]
    assert cost.long_poll(as_built, 5, 2.0) == (5, 3.75)
    assert cost.long_poll(as_built, 5, 0.0) == (1, 0.0)
    assert cost.long_poll(as_built, 5, 9.0) == (6, 5.0)  # never seen: every read until the deadline


def test_a_waiting_second_outweighs_a_read():
    """At 128 MB a second of a long poll costs 13 small reads, so reading less often only pays
    when it barely delays the answer."""
    assert cost.lambda_second(128) / cost.PRICES["dynamodb_read_unit"] == pytest.approx(13.33, abs=0.01)
    built = cost.expected_long_poll([250, 500, 1000, 2000], 20, 1, 1)
    slower = cost.expected_long_poll([250, 500, 1000, 2000, 4000], 20, 1, 1)
    assert slower["reads"] < built["reads"] and slower["dollars"] > built["dollars"]


def test_batches_fill_in_a_backlog_and_barely_in_a_trickle():
    assert cost.messages_per_invocation(100, 1, 1000) == 100
    assert cost.messages_per_invocation(100, 1, 0.5) == 1.5
    assert cost.messages_per_invocation(10, 0, 5) == 1


def test_the_recorder_counts_item_sizes_before_and_after_each_write(tmp_path):
    import boto3
    from emulator import Emulator

    emulator = Emulator(tmp_path / "tls")
    try:
        emulator.recorder.sizing = True
        ddb = boto3.client("dynamodb", endpoint_url=emulator.http_endpoint, region_name="us-east-1",
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        ddb.create_table(TableName="sized", BillingMode="PAY_PER_REQUEST",
                         AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                         KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
        mark = emulator.recorder.mark()
        ddb.put_item(TableName="sized", Item={"id": {"S": "a"}, "status": {"S": "pending"}})
        ddb.update_item(TableName="sized", Key={"id": {"S": "a"}}, UpdateExpression="SET #r = :r",
                        ExpressionAttributeNames={"#r": "result"}, ExpressionAttributeValues={":r": {"S": "x" * 5000}})
        ddb.get_item(TableName="sized", Key={"id": {"S": "a"}}, ConsistentRead=True)
        put, update, get = emulator.recorder.since(mark)
        pending = 2 + 1 + 6 + 7
        assert (put.operation, put.old_size, put.new_size) == ("DynamoDB PutItem", None, pending)
        assert (update.old_size, update.new_size) == (pending, pending + 6 + 5000)
        assert get.read_sizes == [pending + 6 + 5000] and get.consistent
        assert [cost.price_call(c).quantity for c in (put, update, get)] == [1, 5, 2]
    finally:
        emulator.stop()


def bench_module(name: str):
    """A bench module imported with bench's own `stack`: scripts/ (on the path for the other test
    folders, which may have imported it first) has a module of that name too."""
    import importlib
    theirs = sys.modules.pop("stack", None)
    try:
        return importlib.import_module(name)
    finally:
        if theirs is not None:
            sys.modules["stack"] = theirs


def test_the_input_sent_inline_saves_its_s3_put_and_the_summary_says_both_totals():
    """The same job, its input inline or through S3: one S3 PutObject ($5 per million) apart,
    and the sentence and the defaults table give both totals and the difference."""
    cost_summary = bench_module("cost_summary")

    def job(*extra):
        calls = [call("DynamoDB PutItem", None, 400), *extra, call("SageMakerRuntime InvokeEndpointAsync"),
                 call("DynamoDB UpdateItem", 400, 450), call("S3 PutObject"), call("SNS Publish", request_bytes=1500),
                 call("DynamoDB UpdateItem", 450, 600), call("DynamoDB GetItem", reads=[600])]
        return cost.bill(calls, [cost.Invocation("mcp-tools", 10.0)])

    new = "Rust, inline up to 4 KiB (new default)"
    inline, through_s3 = {(new, "small"): job()}, {(new, "small"): job(call("S3 PutObject"))}
    # 3 write units and 1 read unit (2.0), 0.5 (SNS), 0.2 + 0.01 s * 0.125 GB at 13.3334 (Lambda), and $5.00 a PUT
    assert inline[(new, "small")].total * 1e6 == pytest.approx(2.0 + 0.5 + 0.2166668 + 5.0)
    assert (through_s3[(new, "small")].total - inline[(new, "small")].total) * 1e6 == pytest.approx(5.0)
    sentence = cost_summary.input_headline(inline, through_s3, new)
    assert ("with every input through S3 (INLINE_INPUT_MAX_BYTES=0) the same job costs $12.72 per million"
            " (2 S3 PutObject) against $7.72 per million (1), **$5.00 per million jobs** more, $5.00 per million"
            " of it S3.") in sentence
    assert cost_summary.input_headline(inline, {}, new) == ""
    change, = cost_summary.input_changes(inline, through_s3)
    assert change.before.startswith("$12.72 per million (2 S3 PutObject, 3 write units")
    assert change.after.startswith("$7.72 per million (1 S3 PutObject, 3 write units")
    assert change.saved == "39% ($5.00 per million)"


def test_the_response_in_the_notification_saves_the_handlers_s3_read_and_the_summary_says_both():
    """A small job as the stack wires its endpoint (the response in the notification) against one
    wired without it (the handler reads the output from S3): one GetObject apart."""
    cost_summary = bench_module("cost_summary")

    def job(*extra):
        calls = [call("DynamoDB PutItem", None, 400), call("SageMakerRuntime InvokeEndpointAsync"),
                 call("DynamoDB UpdateItem", 400, 450), call("S3 PutObject"), call("SNS Publish", request_bytes=1500),
                 *extra, call("DynamoDB UpdateItem", 450, 600), call("DynamoDB GetItem", reads=[600])]
        return cost.bill(calls, [cost.Invocation("mcp-tools", 10.0)])

    in_message, in_s3 = job(), job(call("S3 GetObject"))
    sentence = cost_summary.response_headline(in_message, in_s3)
    assert "the small job's handler reads nothing from S3" in sentence
    assert "the same job costs $8.12 per million, $0.40 per million more." in sentence
    assert cost_summary.response_headline(in_message, None) == ""


def test_counting_a_read_is_one_write_unit_and_the_summary_prices_it_per_million_reads():
    """A check's calls as the bench records them: the read counter's conditional UpdateItem
    (key quota#<owner>#reads#<minute>) beside the job's GetItem; the sentence prices the counter."""
    cost_summary = bench_module("cost_summary")

    def recorded(operation, key, old=None, new=None, reads=()):
        body = json.dumps({"TableName": "r", "Key": {"inference_id": {"S": key}}}).encode()
        return SimpleNamespace(operation=operation, old_size=old, new_size=new, read_sizes=list(reads),
                               consistent=True, body=body, request_bytes=len(body), response_bytes=0)

    owner = "0" * 32
    counter = recorded("DynamoDB UpdateItem", f"quota#{owner}#reads#1800000000", 70, 70)
    submits = recorded("DynamoDB UpdateItem", f"quota#{owner}#submits#1800000000", 70, 70)
    job = recorded("DynamoDB GetItem", "2f6b7d4e-0000-4000-8000-000000000000", reads=[600])
    check = SimpleNamespace(calls=[job, submits, counter])
    assert cost_summary.read_counter(check) is counter
    assert cost.price_call(counter).quantity == 1
    sentence = cost_summary.reads_headline({"check": check})
    assert ("one conditional UpdateItem of a 70-byte counter, 1 write unit, takes 10 reads at once for the function "
            "instance, **$0.0625 per million reads**") in sentence
    assert cost_summary.reads_headline({"check": SimpleNamespace(calls=[job, submits])}) == ""


def test_a_fifo_queues_requests_are_priced_at_fifos_rate():
    """SQS bills a FIFO queue's requests at $0.50 per million, a standard queue's at $0.40: the
    queue is read from the request (the JSON protocol's QueueUrl, or the query protocol's)."""
    def sqs(operation, url, form=False):
        body = (f"Action=x&QueueUrl={url}" if form else json.dumps({"QueueUrl": url})).encode()
        return SimpleNamespace(operation=operation, body=body, request_bytes=len(body), response_bytes=900)

    fifo = "http://127.0.0.1:1/123456789012/mcp-event-delivery.fifo"
    standard = "http://127.0.0.1:1/123456789012/mcp-inference-notifications"
    assert cost.price_call(sqs("SQS SendMessageBatch", fifo)).dollars == pytest.approx(0.5e-6)
    assert cost.price_call(sqs("SQS ReceiveMessage", fifo, form=True)).dollars == pytest.approx(0.5e-6)
    assert cost.price_call(sqs("SQS DeleteMessageBatch", standard)).dollars == pytest.approx(0.4e-6)
    # A call recorded without its body (the hand-made ones above) is a standard queue's.
    assert cost.price_call(call("SQS SendMessage")).dollars == pytest.approx(0.4e-6)


def ddb(operation, table, old=None, new=None, reads=(), consistent=False):
    body = json.dumps({"TableName": table}).encode()
    return SimpleNamespace(operation=operation, body=body, old_size=old, new_size=new, read_sizes=list(reads),
                           consistent=consistent, request_bytes=len(body), response_bytes=0, server_ms=0.5,
                           done_ns=0)


def fifo(operation, response_bytes=1500):
    body = json.dumps({"QueueUrl": "http://127.0.0.1:1/123456789012/mcp-event-delivery.fifo"}).encode()
    return SimpleNamespace(operation=operation, body=body, request_bytes=len(body), response_bytes=response_bytes,
                           server_ms=0.5, done_ns=0)


def stream(operation="DynamoDB Streams GetRecords", records=1):
    body = json.dumps({"ShardIterator": "arn:aws:dynamodb:us-east-1:123456789012:table/mcp-events/stream/x|1|i"})
    return SimpleNamespace(operation=operation, body=body.encode(), request_bytes=len(body), response_bytes=900,
                           server_ms=0.5, done_ns=0, records=records)


TABLES = ("mcp-events", "mcp-subscriptions")


def published(*extra):
    """notification-handler's calls for one outcome: its recording, then publish's two."""
    return [ddb("DynamoDB UpdateItem", "mcp-async-results", 300, 400),
            ddb("DynamoDB Query", "mcp-subscriptions", reads=[700], consistent=True),
            ddb("DynamoDB PutItem", "mcp-events", None, 900), *extra]


def test_a_streams_reads_by_a_lambda_trigger_are_free_and_the_emulator_names_them(tmp_path):
    """DynamoDB bills no GetRecords that Lambda makes for a trigger; the emulator names the
    streams service's calls and counts the records each GetRecords brought."""
    line = cost.price_call(stream())
    assert (line.service, line.quantity, line.unit, line.dollars) == ("DynamoDB", 1, "requests", 0.0)
    assert cost.PRICES["dynamodb_streams_lambda_read"] == 0.0

    import boto3
    from emulator import Emulator

    emulator = Emulator(tmp_path / "tls")
    try:
        kw = dict(endpoint_url=emulator.http_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                  aws_secret_access_key="testing")
        ddb_client, streams = boto3.client("dynamodb", **kw), boto3.client("dynamodbstreams", **kw)
        arn = ddb_client.create_table(
            TableName="streamed", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})["TableDescription"][
            "LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard,
                                              ShardIteratorType="LATEST")["ShardIterator"]
        mark = emulator.recorder.mark()
        iterator = streams.get_records(ShardIterator=iterator)["NextShardIterator"]
        ddb_client.put_item(TableName="streamed", Item={"id": {"S": "a"}})
        streams.get_records(ShardIterator=iterator)
        idle, _, read = emulator.recorder.since(mark)
        assert [c.operation for c in (idle, read)] == ["DynamoDB Streams GetRecords"] * 2
        assert (idle.records, read.records) == (0, 1)
    finally:
        emulator.stop()


def test_the_benchs_stream_mapping_hands_new_items_naming_webhooks_to_the_function_in_one_read(tmp_path):
    """The mapping events_cost.py prices and times (the local stack's, invoking through the
    bench's Runtime API), against the emulator with the stack's tables, an empty function in
    event-delivery's place: one GetRecords brings what was written since it was made, the items
    that name webhooks are handed on in one invocation, an idle read brings nothing."""
    import boto3
    from emulator import Emulator

    events_cost = bench_module("events_cost")
    from local_stack import EVENTS_TABLE, create_resources
    from processes import Function, stop
    from runtime_api import RuntimeApi

    emulator = Emulator(tmp_path / "tls")
    runtime = RuntimeApi("event-delivery")
    proc = None
    try:
        create_resources(emulator.http_endpoint)
        ddb_client = boto3.client("dynamodb", endpoint_url=emulator.http_endpoint, region_name="us-east-1",
                                  aws_access_key_id="testing", aws_secret_access_key="testing")

        def put(position, webhooks):
            extra = {"webhooks": {"BOOL": True}, "deliver_to": {"S": "sub_1"}} if webhooks else {}
            ddb_client.put_item(TableName=EVENTS_TABLE, Item={"owner": {"S": "o"}, "position": {"S": position},
                                                              **extra})

        put("before", True)
        mapping = events_cost.Mapping(emulator)
        null = Function("event-delivery", [sys.executable, str(ROOT / "bench" / "null_function.py")],
                        {"PYTHONPATH": str(ROOT / "bench")}, tmp_path / "null.log")
        proc, _ = null.spawn(runtime, emulator.http_endpoint)
        mapping.runtime = runtime
        for position, webhooks in (("a", True), ("quiet", False), ("b", True)):
            put(position, webhooks)
        mark = emulator.recorder.mark()
        assert mapping.poll()
        read, = emulator.recorder.since(mark)
        assert (read.operation, read.records) == ("DynamoDB Streams GetRecords", 3)
        batch, = mapping.batches
        handed = json.loads(batch.event)["Records"]
        assert [r["dynamodb"]["NewImage"]["position"]["S"] for r in handed] == ["a", "b"]
        assert {r["eventSource"] for r in handed} == {"aws:dynamodb"} and batch.records == 2
        assert batch.received_ns > 0 and batch.invocation.response == b"{}" and mapping.failed == 0
        mark = emulator.recorder.mark()
        assert not mapping.poll()
        idle, = emulator.recorder.since(mark)
        assert idle.records == 0 and len(mapping.batches) == 1
    finally:
        if proc is not None:
            stop(proc, runtime)
        emulator.stop()


def test_each_call_of_an_events_way_is_put_with_the_step_that_made_it():
    events_summary = bench_module("events_summary")
    steps = events_summary.Steps()
    steps.add(published() + [stream(), ddb("DynamoDB GetItem", "mcp-subscriptions"),
                             ddb("DynamoDB UpdateItem", "mcp-subscriptions", 700, 730)], TABLES)
    assert {step: [c.operation for c in calls] for step, calls in steps.calls.items()} == {
        "record": ["DynamoDB UpdateItem"],
        "publish": ["DynamoDB Query", "DynamoDB PutItem"],
        "mapping": ["DynamoDB Streams GetRecords"],
        "delivery": ["DynamoDB GetItem", "DynamoDB UpdateItem"]}
    # A first try that failed: event-delivery queues it for retry and holds it for its backoff;
    # the queue's mapping takes and deletes it; the stream's mapping looks for new shards.
    retried = events_summary.Steps()
    retried.add([fifo("SQS SendMessageBatch"), fifo("SQS ReceiveMessage"), fifo("SQS ChangeMessageVisibility"),
                 fifo("SQS DeleteMessageBatch"), ddb("DynamoDB DescribeTable", "mcp-events"),
                 stream("DynamoDB Streams DescribeStream")], TABLES)
    assert {step: [c.operation for c in calls] for step, calls in retried.calls.items()} == {
        "record": [], "publish": [],
        "mapping": ["SQS ReceiveMessage", "SQS DeleteMessageBatch", "DynamoDB DescribeTable",
                    "DynamoDB Streams DescribeStream"],
        "delivery": ["SQS SendMessageBatch", "SQS ChangeMessageVisibility"]}


def one_event(duration_ms=5.0, extra_publish=(), extra_delivery=()):
    events_summary = bench_module("events_summary")
    steps = events_summary.Steps()
    steps.add(published(*extra_publish) + [stream(), ddb("DynamoDB GetItem", "mcp-subscriptions"),
                                           *extra_delivery], TABLES)
    steps.deliveries.append(cost.Invocation("event-delivery", duration_ms))
    return steps


def backlog(duration_ms=12.0, events=10):
    events_summary = bench_module("events_summary")
    steps = events_summary.Steps(events=events)
    for _ in range(events):
        steps.add(published(), TABLES)
    steps.add([stream(records=events)] + [ddb("DynamoDB GetItem", "mcp-subscriptions")] * events, TABLES)
    steps.deliveries.append(cost.Invocation("event-delivery", duration_ms))
    return steps


def test_a_delivered_event_is_priced_by_hand_alone_and_ten_to_a_batch():
    """Alone: a strong Query (1 unit) at $0.125, a 900-byte PutItem (1 write unit, $0.625), the
    mapping's GetRecords (free: a Lambda trigger's), the subscription's GetItem (0.5 unit),
    event-delivery's request ($0.20) and 5 ms at 128 MB, and the 2 ms publishing added to the
    handler; no SQS request. Ten to a batch: the GetRecords and the invocation shared by ten.
    The outcome's own UpdateItem is the job's, not the event's."""
    events_summary = bench_module("events_summary")
    second = 0.125 * 13.3334  # dollars per million seconds at 128 MB
    alone = events_summary.event_bill(one_event(), 2.0)
    assert alone.by_service() == pytest.approx({
        "DynamoDB": 1e-6 * (0.125 + 0.625 + 0.5 * 0.125),
        "Lambda": 1e-6 * (0.2 + 0.005 * second + 0.002 * second)})
    assert alone.total * 1e6 == pytest.approx(0.8125 + 0.2 + 0.007 * second)
    batched = events_summary.event_bill(backlog(), 2.0)
    assert batched.total * 1e6 == pytest.approx(0.8125 + 0.02 + 0.0012 * second + 0.002 * second)
    # A difference of durations below nothing adds nothing.
    assert events_summary.added_duration(-0.4).dollars == 0


EXPECTED_PUBLISH = ["DynamoDB Query", "DynamoDB PutItem"]


def latency_samples(n=40, end_ms=30.0):
    return [{"end_to_end_ms": end_ms + i, "handler_ms": 10.0 + i / 10, "stream_ms": 100.0, "delivery_ms": 8.0,
             "floor_end_to_end_ms": 12.0, "floor_handler_ms": 6.0, "floor_delivery_ms": 4.0, "null_ms": 0.1,
             "receiver_ms": 0.4, "calls": {"publish": EXPECTED_PUBLISH, "mapping": ["DynamoDB Streams GetRecords"],
                                           "delivery": ["DynamoDB GetItem"], "record": ["DynamoDB UpdateItem"]},
             "batch_records": 1} for i in range(n)]


def measured(singles=None, end_ms=30.0):
    events_summary = bench_module("events_summary")
    first = one_event()
    first.calls["delivery"].append(ddb("DynamoDB UpdateItem", "mcp-subscriptions", 700, 740))
    return {"subscription": "sub_x", "first": first, "singles": singles or [one_event(d) for d in (4.0, 5.0, 6.0)],
            "added_ms": [1.0, 2.0, 3.0], "backlogs": [backlog()], "latency": latency_samples(end_ms=end_ms),
            "tables": TABLES, "poll_ms": 200.0}, events_summary


def test_the_events_figures_say_what_dominates_whether_the_targets_are_met_and_the_calls_seen():
    e, events_summary = measured()
    figures, alone, batched = events_summary.summarize_events(e)
    # The median event by price is the 5 ms one, with the median 2 ms added.
    assert alone.total == events_summary.event_bill(one_event(5.0), 2.0).total
    # The largest first: the log's PutItem (a write unit), event-delivery's request, the Query; the
    # stream's read last, free; no SQS charge at all.
    whats = [t.what for t in figures.terms]
    assert whats[:4] == ["DynamoDB PutItem (notification-handler)", "event-delivery requests",
                         "DynamoDB Query (notification-handler)", "DynamoDB GetItem (event-delivery)"]
    read = next(t for t in figures.terms if t.what == "DynamoDB Streams GetRecords (event source mapping)")
    assert (read.single_quantity, read.single, read.batched_quantity, read.batched) == (1, 0.0, 0.1, 0.0)
    assert whats[-1] == read.what and not any(w.startswith("SQS") for w in whats)
    assert figures.batch == 10 and figures.total_single == alone.total and figures.total_batched == batched.total
    price_alone, price_batched, p50 = figures.targets
    assert (price_alone.met, price_batched.met, p50.met) == (True, True, True)
    assert price_alone.shown_as.format(price_alone.value) == f"${alone.total * 1e6:.2f} per million"
    # 40 samples 30 to 69 ms: the median 49.5, the 95th percentile 67.05 (linear between ranks).
    end = figures.timings[0]
    assert (end.p50_ms, end.p95_ms, end.floor_p50_ms) == (pytest.approx(49.5), pytest.approx(67.05), 12.0)
    on_stream = figures.timings[2]
    assert on_stream.what.startswith("on the stream") and on_stream.p50_ms == 100.0
    assert on_stream.floor_p50_ms != on_stream.floor_p50_ms  # a poll's wait has no floor
    assert "every 200 ms" in on_stream.floor
    text = " ".join(figures.findings)
    assert "What dominates: DynamoDB, 79% of an event delivered alone ($0.81 per million;" in text
    assert ("(PutItem of a 900-byte item on the events table, naming its subscriptions, 1 write unit, "
            "$0.62 per million)") in text
    assert "without it an event delivered alone would cost $0.40 per million" in text
    assert "GetRecords (1 a batch here) are free" in text
    assert "No SQS request is made for an event delivered at its first try." in text
    assert "SQS is paid only when a first try fails" in text
    assert "a delivery sent at its first retry adds five, $2.50 per million such deliveries" in text
    assert ("notification-handler's publish: DynamoDB Query, DynamoDB PutItem; the stream's event source mapping: "
            "DynamoDB Streams GetRecords; event-delivery: DynamoDB GetItem: the calls the code makes, no more") in text
    assert ("Reads: DynamoDB Query (notification-handler's publish) strongly consistent, DynamoDB GetItem "
            "(event-delivery) eventually consistent.") in text
    assert "adds an UpdateItem of its 740-byte item: 1 write unit, $0.62 per million such deliveries" in text
    assert "it reads every 200 ms while it has nothing" in text
    assert "**not**" not in text
    assert "the table's stream hands the new item to event-delivery" in figures.intro
    assert "sets no batching window" in figures.intro
    assert events_summary.percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_an_unexpected_call_is_named_and_a_slow_way_misses_its_target():
    events_summary = bench_module("events_summary")
    # The log read before the write, which publishing no longer makes.
    extra = ddb("DynamoDB GetItem", "mcp-events")
    e, _ = measured(singles=[one_event(5.0, extra_publish=(extra,)) for _ in range(3)], end_ms=1200.0)
    figures, _, _ = events_summary.summarize_events(e)
    assert figures.targets[2].met is False
    text = " ".join(figures.findings)
    assert ("**not** what the code should make for notification-handler's publish (expected DynamoDB Query, "
            "DynamoDB PutItem; the timed events made DynamoDB Query, DynamoDB PutItem)") in text


def test_an_sqs_request_on_an_events_first_try_is_counted_and_said():
    events_summary = bench_module("events_summary")
    queued = fifo("SQS SendMessageBatch")
    e, _ = measured(singles=[one_event(5.0, extra_delivery=(queued,)) for _ in range(3)])
    figures, alone, _ = events_summary.summarize_events(e)
    assert alone.by_service()["SQS"] == pytest.approx(0.5e-6)
    text = " ".join(figures.findings)
    assert "SQS: **$0.50 per million**, though no first try failed" in text
    assert "**not** what the code should make for event-delivery" in text


def test_the_events_sentence_prices_a_pushed_event_against_a_minute_of_listening_and_of_polling():
    events_summary = bench_module("events_summary")
    e, _ = measured()
    _, alone, batched = events_summary.summarize_events(e)
    listen = cost.Bill([cost.Line("Lambda", "mcp-tools duration", 7.0, "GB-s", 101.51e-6)])
    poll = cost.Bill([cost.Line("Lambda", "mcp-tools requests", 12, "requests", 5.60e-6)])
    sentence = events_summary.events_headline(alone, batched, 10, 49.5, listen, poll)
    assert sentence.startswith(f" Pushed to a webhook instead (MCP Events), a `job.ended` event costs "
                               f"**${alone.total * 1e6:.2f} per million events** delivered alone and "
                               f"${batched.total * 1e6:.2f} per million 10 to a batch, against $101.51 per million "
                               f"minutes held on a listen and $5.60 per million minutes of polling")
    assert f"one outcome pushed costs {alone.total / poll.total:.0%} of one minute's polling" in sentence
    assert "reaches the receiver 50 ms after" in sentence
    assert "against" not in events_summary.events_headline(alone, batched, 10, 49.5, None, None)


def test_a_listen_naming_many_tasks_is_priced_per_task_beside_one_listen_and_polling():
    """One held invocation shared by 10 tasks: each task-minute pays a tenth of it and of its
    reads; the rows and the headline say so beside the one-task listen and polling."""
    import cost_summary
    held_ms = 60_000.0
    reads = [call("DynamoDB BatchGetItem", reads=[300], consistent=False) for _ in range(16)]
    many_reads = [call("DynamoDB BatchGetItem", reads=[300] * 10, consistent=False) for _ in range(16)]
    polls = [call("DynamoDB GetItem", reads=[300]) for _ in range(12)]
    c = {"held_minute": {
        "listen": {"calls": reads, "invocations": [cost.Invocation("mcp-tools", held_ms)]},
        "poll": {"calls": polls, "invocations": [cost.Invocation("mcp-tools", 10.0)] * 12},
        "shared": {10: {"tasks": 10, "calls": many_reads, "invocations": [cost.Invocation("mcp-tools", held_ms)]}},
    }}
    table = cost_summary.Table()
    listen, poll, per_task = cost_summary.listen_rows(c, table)
    assert [r.scenario.split(":")[0] for r in table.rows][-1].startswith("one working task for a minute, one of 10")
    one = cost.bill(many_reads, [cost.Invocation("mcp-tools", held_ms)])
    assert per_task[10].total == pytest.approx(one.total / 10)
    # The held wall time is shared; the reads grow with the tasks, so a task's share of them does not shrink.
    assert per_task[10].by_service()["Lambda"] == pytest.approx(listen.by_service()["Lambda"] / 10)
    assert per_task[10].by_service()["DynamoDB"] == pytest.approx(listen.by_service()["DynamoDB"])
    headline = cost_summary.listen_headline((listen, poll, per_task))
    assert "one of 10 tasks on one listen" in headline and "x polling" in headline
