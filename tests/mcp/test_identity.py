"""Who is calling, and what each caller sees. OAuth: the official Python SDK's OAuth client
through its whole flow against the development authorization server, and forged or wrong
tokens, each refused. Named bearer tokens and IAM (real-shaped Function URL events through the
Lambda invoke API): two callers never see each other's jobs, tasks, sessions or runs."""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from cryptography.hazmat.primitives import serialization
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import error_text, mcp_under_watch, need, ok
from lambda_watch import WatchError, free_port, start_watch, stop
from oauth_client import oauth_provider

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dev" / "oauth"))
from authorization_server import AuthorizationServer  # noqa: E402

from test_mcp_tools import JSON_HEADERS, LIST_TOOLS, http_request  # noqa: E402

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
TOKENS = {"agent-a": "token-of-agent-a-7c1e", "agent-b": "token-of-agent-b-93d0"}


def call_tool(url, name, args, headers=None, auth=None):
    async def go():
        http = create_mcp_http_client(headers=headers, auth=auth)
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
            return await client.call_tool(name, args)
    return asyncio.run(go())


def same_but_id(text_a, id_a, text_b, id_b):
    assert text_a.replace(id_a, "<id>") == text_b.replace(id_b, "<id>")


@pytest.fixture(scope="module")
def oauth(servers):
    server = AuthorizationServer().start()
    port = free_port()
    url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    try:
        proc = start_watch(port, {"AUTH_MODE": "oauth", "OAUTH_ISSUER": server.url, "OAUTH_AUDIENCE": url,
                                  "OAUTH_JWKS_MIN_REFRESH_SECS": "1", "OAUTH_ALLOW_LOCAL_ISSUER": "true"},
                           "watch-oauth")
    except WatchError as e:
        server.stop()
        pytest.exit(str(e), 2)
    yield SimpleNamespace(url=url, server=server, port=port)
    stop(proc)
    server.stop()


@pytest.fixture(scope="module")
def named(servers):
    tokens = ",".join(f"{name}:{hashlib.sha256(t.encode()).hexdigest()}" for name, t in TOKENS.items())
    yield from mcp_under_watch({"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens}, "watch-named")


@pytest.fixture(scope="module")
def iam(servers):
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "iam"}, "watch-iam")
    except WatchError as e:
        pytest.exit(str(e), 2)
    yield port
    stop(proc)


def bearer(name):
    return {"Authorization": f"Bearer {TOKENS[name]}"}


# ------------------------------------------------------------------ OAuth

def test_a_real_oauth_client_discovers_the_server_registers_and_calls_tools(oauth):
    provider = oauth_provider(oauth.url, login_hint="alice")
    submitted = ok(call_tool(oauth.url, "submit_job", {"document": "a", "idempotency_key": "k-1"}, auth=provider))
    assert submitted["status"] == "pending"
    # The token the client got is for this resource, from this issuer, for alice.
    token = asyncio.run(provider.context.storage.get_tokens()).access_token
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["aud"] == oauth.url and claims["iss"] == oauth.server.url and claims["sub"] == "alice"
    view = ok(call_tool(oauth.url, "check_job_status", {"inference_id": submitted["inference_id"]}, auth=provider))
    assert view["inference_id"] == submitted["inference_id"]


def test_the_protected_resource_metadata_is_served_without_a_token(oauth):
    base = oauth.url[: -len("/mcp")]
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        with urllib.request.urlopen(base + path, timeout=60) as resp:
            metadata = json.loads(resp.read())
        assert metadata["resource"] == oauth.url
        assert metadata["authorization_servers"] == [oauth.server.url]
        assert set(metadata["scopes_supported"]) == {"jobs:read", "jobs:write", "jobs:approve"}
        assert metadata["bearer_methods_supported"] == ["header"]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged_tokens(oauth):
    """Each case: (name, headers, url). Every one must get 401."""
    s, aud = oauth.server, oauth.url
    now = int(time.time())
    good = s.mint("mallory", aud)
    header, payload, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    public_pem = s.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def hs256(key: bytes) -> str:
        head = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": s.current_kid}).encode())
        body = b64url(json.dumps(claims).encode())
        mac = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{b64url(mac)}"

    stranger = AuthorizationServer()  # never started: a key nobody publishes
    tampered = json.loads(base64.urlsafe_b64decode(payload + "=="))
    tampered["sub"] = "alice"
    cases = {
        "no token": None,
        "expired": s.mint("mallory", aud, ttl_secs=-120),
        "not yet valid": s.mint("mallory", aud, nbf=now + 3600),
        "no expiry": s.mint("mallory", aud, exp=None),
        "wrong audience": s.mint("mallory", "https://other.example/mcp"),
        "wrong issuer": s.mint("mallory", aud, iss="https://evil.example"),
        "alg none": f"{b64url(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{payload}.",
        "HS256 keyed with the public key": hs256(public_pem),
        "forged signature under a known kid": stranger.mint("mallory", aud, header={"kid": s.current_kid}),
        "tampered payload": f"{header}.{b64url(json.dumps(tampered).encode())}.{signature}",
        "not a JWT": "definitely-not-a-jwt",
    }
    stranger.stop()
    return cases, good


def test_forged_and_wrong_tokens_are_each_refused_with_a_challenge(oauth):
    cases, good = forged_tokens(oauth)
    for name, token in cases.items():
        headers = dict(JSON_HEADERS)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        status, answer_headers, body = http_request(None, "POST", headers, LIST_TOOLS, url=oauth.url)
        assert status == 401, f"{name}: {status} {body[:200]}"
        challenge = answer_headers.get("www-authenticate", "")
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge, f"{name}: {challenge}"
        assert good not in body.decode(errors="replace")
    # A token in the query string is not read.
    status, _, _ = http_request(None, "POST", JSON_HEADERS, LIST_TOOLS, url=f"{oauth.url}?access_token={good}")
    assert status == 401
    # The good one is served.
    status, _, body = http_request(None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {good}"},
                                   LIST_TOOLS, url=oauth.url)
    assert status == 200 and b"submit_job" in body
    # Each refusal is logged with its reason, never with the token.
    log = (Path(__file__).resolve().parents[2] / ".local" / "watch-oauth.log").read_text()
    assert "access token refused" in log
    for token in [t for t in cases.values() if t] + [good]:
        assert token not in log and token.split(".")[0] + "." + token.split(".")[-1] not in log


def test_answering_a_runs_question_needs_the_approval_scope_that_an_agents_token_lacks(oauth):
    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "answer_training_input", "arguments": {}}}).encode()
    update = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tasks/update", "params": {
        "taskId": "t", "inputResponses": {}}}).encode()
    agent = oauth.server.mint("alice", oauth.url, scope="jobs:read jobs:write")
    person = oauth.server.mint("alice", oauth.url, scope="jobs:read jobs:approve")
    for body in (answer, update):
        status, headers, _ = http_request(None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {agent}"},
                                          body, url=oauth.url)
        assert status == 403, body
        challenge = headers.get("www-authenticate", "")
        assert 'scope="jobs:approve"' in challenge and "insufficient_scope" in challenge, challenge
    status, _, reply = http_request(None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {person}"},
                                    answer, url=oauth.url)
    # Past the door: the tool itself reads (and refuses) the empty arguments.
    assert status == 200 and b"isError" in reply, reply[:300]


def test_a_rotated_key_is_fetched_and_accepted(oauth):
    first = oauth.server.mint("rotator", oauth.url)
    status, _, _ = http_request(None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {first}"},
                                LIST_TOOLS, url=oauth.url)
    assert status == 200
    oauth.server.rotate()
    rotated = oauth.server.mint("rotator", oauth.url)
    deadline = time.time() + 30
    while True:
        status, _, _ = http_request(None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {rotated}"},
                                    LIST_TOOLS, url=oauth.url)
        if status == 200 or time.time() > deadline:
            break
        time.sleep(0.5)  # the refetch on an unknown kid is rate-limited to once a second here
    assert status == 200


def test_a_read_only_token_may_read_but_not_start_work(oauth):
    read_only = oauth.server.mint("reader", oauth.url, scope="jobs:read")
    headers = {"Authorization": f"Bearer {read_only}"}
    assert "no job with inference_id" in error_text(
        call_tool(oauth.url, "check_job_status", {"inference_id": UNKNOWN_ID}, headers=headers))
    submit = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "submit_job", "arguments": {"document": "a"}}}).encode()
    status, answer_headers, _ = http_request(None, "POST", {**JSON_HEADERS, **headers}, submit, url=oauth.url)
    assert status == 403
    assert 'error="insufficient_scope"' in answer_headers["www-authenticate"]
    assert 'scope="jobs:write"' in answer_headers["www-authenticate"]


def test_two_oauth_users_never_see_each_others_jobs(oauth):
    alice = {"Authorization": f"Bearer {oauth.server.mint('alice', oauth.url)}"}
    bob = {"Authorization": f"Bearer {oauth.server.mint('bob', oauth.url)}"}
    key = f"k-{uuid.uuid4().hex}"
    a = ok(call_tool(oauth.url, "submit_job", {"document": "a", "idempotency_key": key}, headers=alice))
    b = ok(call_tool(oauth.url, "submit_job", {"document": "b", "idempotency_key": key}, headers=bob))
    assert a["inference_id"] != b["inference_id"] and "idempotent_replay" not in b
    theirs = error_text(call_tool(oauth.url, "check_job_status", {"inference_id": a["inference_id"]}, headers=bob))
    unknown = error_text(call_tool(oauth.url, "check_job_status", {"inference_id": UNKNOWN_ID}, headers=bob))
    same_but_id(theirs, a["inference_id"], unknown, UNKNOWN_ID)
    assert ok(call_tool(oauth.url, "check_job_status", {"inference_id": a["inference_id"]},
                        headers=alice))["inference_id"] == a["inference_id"]


def test_an_issuer_on_this_machine_is_never_fetched_without_the_local_flag(servers):
    """Deployed, 127.0.0.1 is the Lambda Runtime API's. Without OAUTH_ALLOW_LOCAL_ISSUER an issuer
    named `https://localhost:<port>` passes the cold start (a name is judged by its addresses when
    connecting) but is never connected to: localhost resolves to loopback only. A token that issuer
    signed is refused as any unverifiable token is, and the log says why."""
    server = AuthorizationServer().start()
    connections = []
    verify = server._httpd.verify_request

    def counted(request, address):
        connections.append(address)
        return verify(request, address)

    server._httpd.verify_request = counted
    issuer = f"https://localhost:{server.port}"
    port = free_port()
    url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    try:
        proc = start_watch(port, {"AUTH_MODE": "oauth", "OAUTH_ISSUER": issuer, "OAUTH_AUDIENCE": url},
                           "watch-oauth-local")
    except WatchError as e:
        server.stop()
        pytest.exit(str(e), 2)
    try:
        token = server.mint("alice", url, iss=issuer)
        status, answer_headers, body = http_request(
            None, "POST", {**JSON_HEADERS, "Authorization": f"Bearer {token}"}, LIST_TOOLS, url=url)
        assert status == 401, body[:300]
        assert 'error="invalid_token"' in answer_headers["www-authenticate"]
        assert connections == [], "the issuer was connected to"
        time.sleep(0.3)
        log = (Path(__file__).resolve().parents[2] / ".local" / "watch-oauth-local.log").read_text()
        why = [line for line in log.splitlines() if "could not fetch the issuer's signing keys" in line]
        assert why and "localhost resolves to" in why[0] and "a loopback address" in why[0], why
        assert "OAUTH_ALLOW_LOCAL_ISSUER=true" in why[0]
        assert token not in log and token.split(".")[2] not in log
        # The counter counts: the issuer itself answers whoever does connect.
        with urllib.request.urlopen(f"{server.url}/.well-known/openid-configuration", timeout=10) as resp:
            assert resp.status == 200
        assert len(connections) == 1
    finally:
        stop(proc)
        server.stop()


# ------------------------------------------------------------------ named bearer tokens

def test_named_tokens_are_separate_callers(named, aws):
    key = f"k-{uuid.uuid4().hex}"
    a = ok(call_tool(named, "submit_job", {"document": "a", "idempotency_key": key}, headers=bearer("agent-a")))
    b = ok(call_tool(named, "submit_job", {"document": "b", "idempotency_key": key}, headers=bearer("agent-b")))
    assert a["inference_id"] != b["inference_id"], "one key, two callers, two jobs"
    for job in (a, b):
        owner = aws["ddb"].get_item(TableName=aws["table"], Key={"inference_id": {"S": job["inference_id"]}},
                                    ConsistentRead=True)["Item"]["owner"]["S"]
        assert len(owner) == 32 and "agent" not in owner
    theirs = error_text(call_tool(named, "check_job_status", {"inference_id": a["inference_id"]},
                                  headers=bearer("agent-b")))
    unknown = error_text(call_tool(named, "check_job_status", {"inference_id": UNKNOWN_ID}, headers=bearer("agent-b")))
    same_but_id(theirs, a["inference_id"], unknown, UNKNOWN_ID)

    session = f"s-{uuid.uuid4().hex[:10]}"
    run = ok(call_tool(named, "trigger_training", {"input_data_uri": "s3://mcp-sagemaker-async-io/train/",
                                                    "session_id": session}, headers=bearer("agent-a")))
    assert ok(call_tool(named, "check_training_result", {"session_id": session},
                        headers=bearer("agent-b")))["runs"] == []
    mine = ok(call_tool(named, "check_training_result", {"session_id": session}, headers=bearer("agent-a")))
    assert [r["execution_arn"] for r in mine["runs"]] == [run["execution_arn"]]
    # SageMaker holds the owner's tag, never the token's name.
    sagemaker = boto3.client("sagemaker", endpoint_url=need("AWS_ENDPOINT_URL_SAGEMAKER"),
                             region_name=os.environ["AWS_REGION"])
    description = sagemaker.describe_pipeline_execution(
        PipelineExecutionArn=run["execution_arn"])["PipelineExecutionDescription"]
    assert f"session_id={session}; mcp_owner=" in description and "agent" not in description
    theirs = error_text(call_tool(named, "check_training_status", {"execution_arn": run["execution_arn"]},
                                  headers=bearer("agent-b")))
    assert theirs.startswith("no training run ")


# ------------------------------------------------------------------ IAM (Function URL events)

def url_event(body: dict, user_arn=None) -> dict:
    """A Function URL event as Lambda delivers it to an AWS_IAM URL (payload format 2.0)."""
    context = {
        "accountId": "123456789012", "apiId": "abcdefghij", "domainName": "abcdefghij.lambda-url.us-east-1.on.aws",
        "domainPrefix": "abcdefghij", "requestId": str(uuid.uuid4()), "routeKey": "$default", "stage": "$default",
        "time": "20/Nov/2026:10:00:00 +0000", "timeEpoch": int(time.time() * 1000),
        "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7",
                 "userAgent": "test"},
    }
    if user_arn:
        context["authorizer"] = {"iam": {"accessKey": "ASIAEXAMPLE", "accountId": "123456789012",
                                         "callerId": "AROAEXAMPLE:session", "userArn": user_arn,
                                         "userId": "AROAEXAMPLE:session"}}
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
        "headers": {"content-type": "application/json", "accept": "application/json, text/event-stream",
                    "host": "abcdefghij.lambda-url.us-east-1.on.aws", "mcp-protocol-version": "2025-11-25"},
        "requestContext": context, "body": json.dumps(body), "isBase64Encoded": False,
    }


def iam_call(port, name, args, user_arn):
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
    url = f"http://127.0.0.1:{port}/2015-03-31/functions/mcp-tools/invocations"
    data = json.dumps(url_event(request, user_arn)).encode()
    # mcp-tools streams its replies (RESPONSE_STREAM): cargo lambda watch hands back the HTTP
    # reply the function streamed, its status and body, as a Function URL would.
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method="POST"), timeout=600) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    if status != 200:
        return status, body.decode()
    return 200, json.loads(body)["result"]


def test_iam_callers_are_their_roles_and_a_request_without_identity_is_refused(iam):
    role_a1 = "arn:aws:sts::123456789012:assumed-role/AgentA/session-1"
    role_a2 = "arn:aws:sts::123456789012:assumed-role/AgentA/session-2"
    role_b = "arn:aws:sts::123456789012:assumed-role/AgentB/session-1"
    status, _ = iam_call(iam, "check_job_status", {"inference_id": UNKNOWN_ID}, None)
    assert status == 403
    key = f"k-{uuid.uuid4().hex}"
    status, a = iam_call(iam, "submit_job", {"document": "a", "idempotency_key": key}, role_a1)
    assert status == 200 and not a.get("isError"), a
    a = a["structuredContent"]
    # Another session of the same role is the same caller: its retry replays the job.
    status, again = iam_call(iam, "submit_job", {"document": "a", "idempotency_key": key}, role_a2)
    assert again["structuredContent"]["inference_id"] == a["inference_id"]
    assert again["structuredContent"]["idempotent_replay"] is True
    status, b = iam_call(iam, "submit_job", {"document": "b", "idempotency_key": key}, role_b)
    assert b["structuredContent"]["inference_id"] != a["inference_id"]
    status, theirs = iam_call(iam, "check_job_status", {"inference_id": a["inference_id"]}, role_b)
    status, unknown = iam_call(iam, "check_job_status", {"inference_id": UNKNOWN_ID}, role_b)
    assert theirs["isError"] is True
    same_but_id(theirs["content"][0]["text"], a["inference_id"], unknown["content"][0]["text"], UNKNOWN_ID)
    status, mine = iam_call(iam, "check_job_status", {"inference_id": a["inference_id"]}, role_a2)
    assert mine["structuredContent"]["inference_id"] == a["inference_id"]
