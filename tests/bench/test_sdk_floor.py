"""The second floor of mcp-tools and the event functions: recorded calls made again through the Rust SDK alone
(shared/adapters/examples/sdk_replay.rs, through bench/floor.py's SdkFloor). What it sends must be what
was recorded, or its time is not the floor of the function's calls. Runs against the local stack
of `make test`, with the example as `cargo test --all-targets` builds it."""

import json
import os
import sys
import uuid
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from emulator import Call  # noqa: E402
from floor import SdkFloor  # noqa: E402

BINARY = ROOT / os.environ.get("CARGO_TARGET_DIR", "target") / "debug" / "examples" / "sdk_replay"


@pytest.fixture
def sdk_floor(tmp_path):
    if not os.environ.get("AWS_ENDPOINT_URL"):
        pytest.exit("AWS_ENDPOINT_URL is not set: run these tests with `make test` (they need the local stack)", 2)
    floor = SdkFloor(BINARY, os.environ["AWS_ENDPOINT_URL"], tmp_path)
    yield floor
    floor.close()


def recorded(operation: str, target: str, headers: list[tuple[str, str]], body: bytes, method: str = "") -> Call:
    return Call(operation, method or ("POST" if operation.startswith(("DynamoDB", "SQS")) else "PUT"), target,
                headers, body, 0.0)


def put_item(table: str, inference_id: str) -> Call:
    body = json.dumps({"TableName": table, "Item": {"inference_id": {"S": inference_id},
                                                     "status": {"S": "pending"}},
                       "ConditionExpression": "attribute_not_exists(inference_id)"}).encode()
    return recorded("DynamoDB PutItem", "/", [("X-Amz-Target", "DynamoDB_20120810.PutItem"),
                                              ("Content-Type", "application/x-amz-json-1.0"),
                                              ("Authorization", "recorded, not sent")], body)


def test_a_recorded_write_lands_as_recorded_with_the_events_ids_swapped(sdk_floor):
    table = os.environ["RESULTS_TABLE"]
    recorded_id, fresh_id = f"sdk-floor-{uuid.uuid4()}", f"sdk-floor-{uuid.uuid4()}"
    wall_ms, cpu_ms = sdk_floor.replay([put_item(table, recorded_id)], {recorded_id: fresh_id})
    assert wall_ms > 0 and cpu_ms > 0
    ddb = boto3.client("dynamodb")
    key = lambda i: {"inference_id": {"S": i}}  # noqa: E731
    assert ddb.get_item(TableName=table, Key=key(fresh_id), ConsistentRead=True)["Item"]["status"] == {"S": "pending"}
    assert "Item" not in ddb.get_item(TableName=table, Key=key(recorded_id), ConsistentRead=True)
    # The same write again: its condition fails, which is an answer like any other.
    assert sdk_floor.replay([put_item(table, recorded_id)], {recorded_id: fresh_id})[0] > 0


def test_a_recorded_put_object_lands_with_its_body_and_headers(sdk_floor):
    bucket, key = os.environ["IO_BUCKET"], f"inputs/sdk-floor-{uuid.uuid4()}.json"
    body = b'{"document": "Invoice 7: total 12.50 EUR"}'
    call = recorded("S3 PutObject", f"/{bucket}/{key}?x-id=PutObject",
                    [("Content-Type", "application/json"), ("x-amz-meta-origin", "recorded")], body)
    sdk_floor.replay([call], {})
    got = boto3.client("s3").get_object(Bucket=bucket, Key=key)
    assert got["Body"].read() == body
    assert got["ContentType"] == "application/json" and got["Metadata"] == {"origin": "recorded"}


def test_a_recorded_send_message_lands_on_its_queue_with_the_events_ids_swapped(sdk_floor):
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName=f"sdk-floor-{uuid.uuid4()}")["QueueUrl"]
    recorded_id, fresh_id = f"exec-{uuid.uuid4()}", f"flor-{uuid.uuid4()}"
    body = json.dumps({"QueueUrl": queue_url, "MessageBody": json.dumps({"execution_arn": recorded_id})}).encode()
    call = recorded("SQS SendMessage", "/", [("X-Amz-Target", "AmazonSQS.SendMessage"),
                                             ("Content-Type", "application/x-amz-json-1.0")], body)
    sdk_floor.replay([call], {recorded_id: fresh_id})
    got = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"]
    assert [json.loads(m["Body"]) for m in got] == [{"execution_arn": fresh_id}]


def test_a_recorded_ranged_get_object_is_sent_as_recorded_and_its_body_read(sdk_floor):
    bucket, key = os.environ["IO_BUCKET"], f"outputs/sdk-floor-{uuid.uuid4()}.out"
    boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=b"x" * 4096)
    call = recorded("S3 GetObject", f"/{bucket}/{key}?x-id=GetObject", [("Range", "bytes=0-1023")], b"", "GET")
    wall_ms, cpu_ms = sdk_floor.replay([call], {})
    assert wall_ms > 0 and cpu_ms > 0
    # The recorded object and range, not the placeholder's: a kilobyte read, not a refusal.
    assert sdk_floor.last["object_bytes"] == 1024


def test_a_call_it_cannot_replay_stops_the_bench_with_its_name(sdk_floor):
    call = recorded("SNS Publish", "/", [], b"Action=Publish")
    with pytest.raises(SystemExit, match="no replay through the SDK for SNS Publish"):
        sdk_floor.replay([call], {})
