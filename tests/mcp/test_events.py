"""MCP Events on the local stack, through the official Python MCP SDK and a real local webhook
receiver: a subscriber's webhook gets its job's and its run's outcome, signed (Standard
Webhooks, checked here with hmac alone), once per event id, with no client connected; another
caller hears nothing of it; a receiver that fails three times still gets the events, in
order; a lapsed subscription gets nothing; events/poll from a cursor returns what was
missed; a callback on a private address or behind a redirect is refused."""

import asyncio
import hashlib
import json
import os
import time
import uuid

import boto3
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import TypeAdapter

from conftest import invoke, mcp_under_watch, ok
from test_identity import call_tool
from test_mcp_tools import put_output, success_message
from webhook_receiver import EventsRequest, Receiver, new_secret, signed_by

TOKENS = {"alice": f"alice-token-{uuid.uuid4().hex}", "bob": f"bob-token-{uuid.uuid4().hex}"}
BUCKET_TRAIN = "s3://mcp-sagemaker-async-io/train/"


def as_(name: str) -> dict:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def events_call(url: str, method: str, params: dict, who: str):
    async def go():
        http = create_mcp_http_client(headers=as_(who))
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
            return await client.session.send_request(EventsRequest(method=method, params=params),
                                                     TypeAdapter(dict))
    return asyncio.run(go())


def events_error(url: str, method: str, params: dict, who: str):
    """The JSON-RPC error a request gets (the SDK raises it inside its task groups)."""
    with pytest.raises(Exception) as raised:
        events_call(url, method, params, who)
    error = raised.value
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@pytest.fixture(scope="module")
def named(servers):
    """mcp-tools for two named callers, with events (the stack's tables; local callbacks).
    event-delivery, which the stack's queue feeds, is started first: the 3 s a delivery is
    timed against are not its cold start under cargo lambda watch."""
    assert invoke(servers, "event-delivery", {"Records": []}) == {"batchItemFailures": []}
    tokens = ",".join(f"{n}:{hashlib.sha256(t.encode()).hexdigest()}" for n, t in TOKENS.items())
    yield from mcp_under_watch({"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens}, "watch-events")


@pytest.fixture(scope="module")
def strict(servers):
    """The same, without local callbacks: a deployment's rules."""
    tokens = ",".join(f"{n}:{hashlib.sha256(t.encode()).hexdigest()}" for n, t in TOKENS.items())
    yield from mcp_under_watch({"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens,
                                "EVENTS_ALLOW_LOCAL_CALLBACKS": "false"}, "watch-events-strict")


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.stop()


def subscribe(url: str, who: str, hook: str, name="job.ended", arguments=None, ttl_ms=600_000):
    secret, key = new_secret()
    made = events_call(url, "events/subscribe", {
        "name": name, "arguments": arguments or {}, "ttlMs": ttl_ms,
        "delivery": {"mode": "webhook", "url": hook, "secret": secret}}, who)
    return made, key


def submit(url: str, who: str) -> str:
    job = ok(call_tool(url, "submit_job", {"document": f"doc {uuid.uuid4().hex}"}, headers=as_(who)))
    return job["inference_id"]


def completed(aws, notify, inference_id: str) -> float:
    """SageMaker's success notification of now, delivered as SNS would; when it was delivered."""
    message = success_message(inference_id, put_output(aws, b'{"label": "ok"}'))
    message["eventTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    notify(message)
    return time.time()


def test_a_subscribers_webhook_gets_its_jobs_outcome_signed_once_and_nobody_elses(named, receiver, aws, notify):
    made, key = subscribe(named, "alice", receiver.url("/alice"))
    assert made["resultType"] == "complete" and made["id"].startswith("sub_")
    # Bob subscribes to every job of his: he hears nothing of Alice's.
    subscribe(named, "bob", receiver.url("/bob"))
    job = submit(named, "alice")
    delivered_at = completed(aws, notify, job)
    got = receiver.wait_for("/alice", 1, timeout=10)
    assert len(got) == 1, got
    took = got[0]["at"] - delivered_at
    assert took < 3, f"{took:.2f} s from SNS's delivery to the receiver"
    event, headers = got[0]["event"], got[0]["headers"]
    assert event["name"] == "job.ended" and event["data"]["inference_id"] == job
    assert event["data"]["status"] == "completed"
    assert event["data"]["output"] == f"job://{job}/output"
    assert "s3://" not in json.dumps(event) and "task" not in json.dumps(event["data"])
    assert headers["webhook-id"] == event["eventId"]
    assert headers["x-mcp-subscription-id"] == made["id"]
    assert signed_by(key, headers, got[0]["body"], time.time())
    # SNS delivers the same notification again: the same event, not sent twice.
    notify(success_message(job, put_output(aws, b"{}")) | {"eventTime": event["timestamp"]})
    time.sleep(2.5)
    assert len(receiver.events("/alice")) == 1
    assert receiver.events("/bob") == []


def test_a_run_that_ends_reaches_its_owners_webhook(named, receiver):
    made, key = subscribe(named, "alice", receiver.url("/runs"), name="run.ended")
    session = f"s-{uuid.uuid4().hex[:12]}"
    ok(call_tool(named, "trigger_training", {"input_data_uri": f"{BUCKET_TRAIN}{session}/", "session_id": session},
                 headers=as_("alice")))
    got = receiver.wait_for("/runs", 1, timeout=60)
    assert len(got) == 1, got
    event = got[0]["event"]
    assert event["name"] == "run.ended" and event["data"]["session_id"] == session
    assert event["data"]["status"] == "Succeeded"
    assert signed_by(key, got[0]["headers"], got[0]["body"], time.time())


def test_a_receiver_that_fails_three_times_still_gets_every_event_in_order(named, receiver, aws, notify):
    subscribe(named, "alice", receiver.url("/flaky"))
    receiver.failing["/flaky"] = 3
    first, second = submit(named, "alice"), submit(named, "alice")
    completed(aws, notify, first)
    completed(aws, notify, second)
    got = receiver.wait_for("/flaky", 2, timeout=40)
    assert [g["event"]["data"]["inference_id"] for g in got] == [first, second]
    attempts = receiver.events("/flaky", delivered_only=False)
    assert [a["answered"] for a in attempts] == [500, 500, 500, 204, 204]
    # Every attempt at the first event is the same event, freshly signed.
    assert len({a["headers"]["webhook-id"] for a in attempts[:4]}) == 1


def test_a_subscription_whose_time_ran_out_gets_nothing(named, receiver, aws, notify):
    made, _ = subscribe(named, "alice", receiver.url("/lapsed"))
    # Its grant, run out: as if an hour had passed without a refresh.
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ["AWS_REGION"])
    owner = hashlib.sha256(b"mcp-tools owner v1\0bearer\0alice").hexdigest()[:32]
    ddb.update_item(TableName=os.environ["SUBSCRIPTIONS_TABLE"],
                    Key={"owner": {"S": owner}, "id": {"S": made["id"]}},
                    UpdateExpression="SET refresh_before = :t",
                    ExpressionAttributeValues={":t": {"S": "2026-01-01T00:00:00.000Z"}})
    completed(aws, notify, submit(named, "alice"))
    time.sleep(3)
    assert receiver.events("/lapsed", delivered_only=False) == []


def test_a_poll_from_a_cursor_returns_what_was_missed(named, aws, notify):
    start = events_call(named, "events/poll", {"name": "job.ended", "cursor": None}, "bob")
    assert start["events"] == [] and start["cursor"]
    job = submit(named, "bob")
    completed(aws, notify, job)
    # An event is given to pollers once it has settled (a few seconds after it happened).
    deadline = time.time() + 15
    while True:
        polled = events_call(named, "events/poll", {"name": "job.ended", "cursor": start["cursor"]}, "bob")
        if polled["events"] or time.time() > deadline:
            break
        time.sleep(1)
    assert [e["data"]["inference_id"] for e in polled["events"]] == [job]
    assert polled["truncated"] is False
    again = events_call(named, "events/poll", {"name": "job.ended", "cursor": polled["cursor"]}, "bob")
    assert again["events"] == []


def test_a_callback_on_a_private_address_or_behind_a_redirect_is_refused(strict, named, receiver):
    secret, _ = new_secret()
    for hook in ["https://10.1.2.3/hooks", "https://169.254.169.254/latest", "http://hooks.example.com/in"]:
        refused = events_error(strict, "events/subscribe", {
            "name": "job.ended", "delivery": {"url": hook, "secret": secret}}, "alice")
        assert refused.code == -32602 and "`delivery.url`" in refused.message, refused
    refused = events_error(named, "events/subscribe", {
        "name": "job.ended", "delivery": {"url": receiver.url("/redirect"), "secret": secret}}, "alice")
    assert refused.code == -32027 and refused.data == {"reason": "http_4xx"}, refused
    assert receiver.events("/a", delivered_only=False) == [], "the redirect was not followed"


def test_a_stream_pushes_the_callers_events_as_they_settle(named, aws, notify):
    """events/stream over the Function URL: the reply turns into SSE; the cursor first, then the
    caller's own event once it has settled, each tagged with the request's id."""
    import http.client
    import urllib.parse
    mine, theirs = submit(named, "alice"), submit(named, "bob")
    parsed = urllib.parse.urlparse(named)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "events/stream", "params": {
        "name": "job.ended", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                       "io.modelcontextprotocol/clientCapabilities": {}}}})
    conn.request("POST", parsed.path, body=body, headers={
        **as_("alice"), "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28", "mcp-method": "events/stream"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    assert resp.getheader("content-type", "").startswith("text/event-stream")
    heard, notified = [], False
    deadline = time.time() + 45
    while time.time() < deadline:
        line = resp.readline().decode()
        if not line.startswith("data:"):
            continue
        message = json.loads(line[5:])
        heard.append(message)
        if message.get("method") == "notifications/events/active" and not notified:
            completed(aws, notify, mine)
            completed(aws, notify, theirs)
            notified = True
        if message.get("method") == "notifications/events/event":
            break
    conn.close()
    methods = [m.get("method") for m in heard]
    assert methods[0] == "notifications/events/active", methods
    event = heard[-1]["params"]
    assert heard[-1]["method"] == "notifications/events/event", methods
    assert event["data"]["inference_id"] == mine, "the caller's own, not the other's"
    assert event["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
    assert event["cursor"]
