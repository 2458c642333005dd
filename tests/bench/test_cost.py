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
