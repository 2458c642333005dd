"""The parts `make bench` relies on: its Runtime API answers as Lambda's does and times what it
should, and the Python reference does the same work as notification-handler (so the comparison
is fair). Runs against the local stack of `make test`."""

import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from runtime_api import RuntimeApi, read_request  # noqa: E402


def exchange(sock, reader, request: bytes):
    sock.sendall(request)
    status = reader.readline()
    headers = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = reader.read(int(headers.get("content-length", 0)))
    return int(status.split()[1]), headers, body


def post(path, body: bytes, chunked=False) -> bytes:
    if chunked:
        half = len(body) // 2
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:])) + b"0\r\n\r\n"
        return f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + payload
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def test_runtime_api_delivers_events_and_times_their_answers():
    api = RuntimeApi("probe")
    try:
        first = api.submit(b'{"n": 1}', client_context='{"custom": {"k": "v"}}')
        second = api.submit(b'{"n": 2}')
        host, port = api.address.split(":")
        sock = socket.create_connection((host, int(port)))
        reader = sock.makefile("rb")
        nxt = b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n"

        status, headers, body = exchange(sock, reader, nxt)
        assert (status, body) == (200, b'{"n": 1}')
        assert api.ready.is_set() and api.first_next_ns is not None
        assert headers["lambda-runtime-aws-request-id"] == first.request_id
        assert headers["lambda-runtime-client-context"] == '{"custom": {"k": "v"}}'
        assert int(headers["lambda-runtime-deadline-ms"]) > time.time() * 1000
        assert headers["lambda-runtime-invoked-function-arn"].endswith(":function:probe")
        time.sleep(0.02)
        status, _, _ = exchange(sock, reader, post(f"/2018-06-01/runtime/invocation/{first.request_id}/response",
                                                   b'{"ok": true}', chunked=True))
        assert status == 202
        assert first.done.wait(5) and first.response == b'{"ok": true}' and first.error is None
        assert 20 <= first.duration_ms < 5000

        status, headers, _ = exchange(sock, reader, nxt)
        assert "lambda-runtime-client-context" not in headers
        exchange(sock, reader, post(f"/2018-06-01/runtime/invocation/{second.request_id}/error", b'{"errorType": "E"}'))
        assert second.done.wait(5) and second.error == b'{"errorType": "E"}' and second.response is None

        status, _, _ = exchange(sock, reader, post("/2018-06-01/runtime/invocation/no-such-id/response", b"{}"))
        assert status == 400
        sock.close()
    finally:
        api.close()


def test_runtime_api_reads_the_processs_cpu_at_its_first_next_and_at_each_answer():
    api = RuntimeApi("probe", cpu_watched=True)
    readings = iter([7_000_000, 19_000_000, 23_000_000])
    try:
        first, second = api.submit(b'{"n": 1}'), api.submit(b'{"n": 2}')
        api.watch_cpu(lambda: next(readings))
        host, port = api.address.split(":")
        sock = socket.create_connection((host, int(port)))
        reader = sock.makefile("rb")
        nxt = b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\nHost: x\r\n\r\n"
        exchange(sock, reader, nxt)
        assert api.first_next_cpu_ns == 7_000_000
        exchange(sock, reader, post(f"/2018-06-01/runtime/invocation/{first.request_id}/response", b"{}"))
        exchange(sock, reader, nxt)
        exchange(sock, reader, post(f"/2018-06-01/runtime/invocation/{second.request_id}/response", b"{}"))
        assert first.done.wait(5) and second.done.wait(5)
        assert (first.cpu_done_ns, second.cpu_done_ns) == (19_000_000, 23_000_000)
        sock.close()
    finally:
        api.close()


def test_runtime_api_sets_tcp_nodelay_on_the_functions_connection():
    api = RuntimeApi("probe")
    try:
        host, port = api.address.split(":")
        client = socket.create_connection((host, int(port)))
        deadline = time.time() + 5
        while not api._connections and time.time() < deadline:
            time.sleep(0.01)
        assert api._connections[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        client.close()
    finally:
        api.close()


def test_read_request_reads_a_length_and_a_chunked_body():
    import io
    assert read_request(io.BytesIO(post("/p", b"abcdef"))) == ("POST", "/p", b"abcdef")
    assert read_request(io.BytesIO(post("/p", b"abcdef", chunked=True))) == ("POST", "/p", b"abcdef")
    assert read_request(io.BytesIO(b"")) is None


@pytest.fixture
def reference():
    if not os.environ.get("AWS_ENDPOINT_URL"):
        pytest.exit("AWS_ENDPOINT_URL is not set: run these tests with `make test` (they need the local stack)", 2)
    spec = importlib.util.spec_from_file_location("reference_handler", ROOT / "bench" / "reference" / "handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_python_reference_records_what_notification_handler_records(reference):
    """Same calls, same item: the output read from S3 (or taken from responseBody) inline, the
    location, the TTL; a second delivery changes nothing."""
    s3 = boto3.client("s3")
    ddb = boto3.client("dynamodb")
    bucket, table = os.environ["IO_BUCKET"], os.environ["RESULTS_TABLE"]
    s3.put_object(Bucket=bucket, Key="outputs/reference.out", Body=b'{"label": "invoice"}')
    event = json.loads((ROOT / "events" / "sns-success.json").read_text())
    message = json.loads(event["Records"][0]["Sns"]["Message"])
    message["inferenceId"] = "reference-0001"
    message["responseParameters"]["outputLocation"] = f"s3://{bucket}/outputs/reference.out"
    event["Records"][0]["Sns"]["Message"] = json.dumps(message)

    before = int(time.time())
    reference.lambda_handler(event, None)
    item = ddb.get_item(TableName=table, Key={"inference_id": {"S": "reference-0001"}}, ConsistentRead=True)["Item"]
    assert item["status"] == {"S": "completed"}
    assert item["result"] == {"S": '{"label": "invoice"}'}
    assert item["output_location"] == {"S": f"s3://{bucket}/outputs/reference.out"}
    assert before + 3600 <= int(item["ttl"]["N"]) <= int(time.time()) + 3600

    message["invocationStatus"] = "Failed"
    message["failureReason"] = "late contradictory delivery"
    event["Records"][0]["Sns"]["Message"] = json.dumps(message)
    reference.lambda_handler(event, None)
    again = ddb.get_item(TableName=table, Key={"inference_id": {"S": "reference-0001"}}, ConsistentRead=True)["Item"]
    assert again == item


def test_the_python_reference_reports_a_failed_sqs_message(reference):
    batch = json.loads((ROOT / "events" / "sqs-batch.json").read_text())
    record = batch["Records"][0]
    bad = {**record, "messageId": "bad-one", "body": json.dumps({"Type": "Notification", "Message": "not json"})}
    answer = reference.lambda_handler({"Records": [bad]}, None)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "bad-one"}]}


def test_the_webhook_sink_echoes_a_challenge_notes_each_2xx_and_times_its_own_answer():
    """A challenge is echoed and not counted as an event; an event is answered 204 and noted,
    with when its answer went out; the floor's POST is answered the same way and not noted."""
    import http.client

    from webhook_sink import WebhookSink

    sink = WebhookSink()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", sink.port, timeout=5)
        conn.request("POST", "/hook", body=json.dumps({"type": "verification", "challenge": "n-1"}),
                     headers={"content-type": "application/json"})
        answer = conn.getresponse()
        assert (answer.status, json.loads(answer.read())) == (200, {"challenge": "n-1"})
        before = time.perf_counter_ns()
        # The same connection, kept alive (HTTP/1.1), as a sender's pool keeps it.
        conn.request("POST", "/hook", body=b'{"eventId": "e-1"}', headers={"webhook-id": "e-1"})
        answer = conn.getresponse()
        assert (answer.status, answer.read()) == (204, b"")
        arrival, = sink.wait_for(1, 5)
        assert sink.challenges == 1 and arrival.path == "/hook" and arrival.headers["webhook-id"] == "e-1"
        assert before < arrival.answered_ns < time.perf_counter_ns()
        assert 0 < sink.answer_time(arrival) < 1000
        assert sink.count() == 1
        conn.close()
    finally:
        sink.stop()
