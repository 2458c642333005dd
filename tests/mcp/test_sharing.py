"""Sharing one deployment safely, through the official Python MCP SDK on the local stack: two
callers (named bearer tokens) of one server with small quotas. One's model provenance is
unknown to the other; refused training inputs and instance types start nothing; each quota,
once reached, refuses with the seconds to wait, starts nothing, and leaves the other caller
alone; SageMaker's AccessDenied reads as an unknown run; a long argument is cut; Hosts that are
no DNS names get 400; the server runs at TRACE and its log holds no token and no document."""

import hashlib
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import error_text, mcp_in_front_of, mcp_under_watch, need, ok, standin_invocations
from lambda_watch import LOCAL
from test_identity import call_tool
from test_mcp_tools import JSON_HEADERS, LIST_TOOLS, http_request

TOKENS = {"alice": f"alice-token-{uuid.uuid4().hex}", "bob": f"bob-token-{uuid.uuid4().hex}"}
BUCKET_TRAIN = "s3://mcp-sagemaker-async-io/train/"
QUOTAS = {"CALLER_SUBMITS_PER_MINUTE": "3", "CALLER_RUNS_PER_HOUR": "2", "CALLER_WAITS_MAX": "1"}
# Written once into a submitted document: it must never reach the log.
DOCUMENT_MARKER = f"confidential-{uuid.uuid4().hex}"


def owner_tag(token_name: str) -> str:
    """The owner tag mcp-tools stores for a named bearer token (domain::caller::Owner)."""
    return hashlib.sha256(f"mcp-tools owner v1\0bearer\0{token_name}".encode()).hexdigest()[:32]


def as_(name: str) -> dict:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


@pytest.fixture(scope="module")
def shared(servers):
    """mcp-tools for two named callers with small quotas, the stand-in's async runtime (which
    records every invoke), at AWS_LAMBDA_LOG_LEVEL=TRACE; three invocations at once, so that
    waits overlap."""
    standin = need("AWS_ENDPOINT_URL_SAGEMAKER")
    tokens = ",".join(f"{n}:{hashlib.sha256(t.encode()).hexdigest()}" for n, t in TOKENS.items())
    yield from mcp_under_watch({"AUTH_MODE": "bearer", "MCP_BEARER_TOKENS": tokens, **QUOTAS,
                               "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": standin, "AWS_LAMBDA_LOG_LEVEL": "TRACE"},
                               "watch-sharing", concurrency=3)


def stored_for(aws, owner: str) -> tuple:
    """(job items of this owner, input objects in S3): what a submit leaves behind."""
    items = aws["ddb"].scan(TableName=aws["table"], ConsistentRead=True,
                            FilterExpression="#o = :o", ExpressionAttributeNames={"#o": "owner"},
                            ExpressionAttributeValues={":o": {"S": owner}})["Items"]
    objects = aws["s3"].list_objects_v2(Bucket=aws["bucket"], Prefix="inputs/").get("KeyCount", 0)
    return len(items), objects


def runs_of(aws, name: str, session: str) -> int:
    return aws["ddb"].query(TableName=aws["runs_table"], ConsistentRead=True,
                            KeyConditionExpression="session_id = :s",
                            ExpressionAttributeValues={":s": {"S": f"{owner_tag(name)}#{session}"}})["Count"]


def finished(url, name, execution_arn) -> dict:
    deadline = time.time() + 60
    while time.time() < deadline:
        status = ok(call_tool(url, "check_training_status", {"execution_arn": execution_arn}, headers=as_(name)))
        if status["status"] != "Executing":
            return status
        time.sleep(0.3)
    raise AssertionError(f"run {execution_arn} did not finish")


def test_one_callers_model_provenance_is_unknown_to_another(shared):
    session = f"s-{uuid.uuid4().hex[:8]}"
    run = ok(call_tool(shared, "trigger_training", {"input_data_uri": f"{BUCKET_TRAIN}{session}/",
                                                    "session_id": session}, headers=as_("alice")))
    status = finished(shared, "alice", run["execution_arn"])
    package = status["model_package_arn"]
    mine = ok(call_tool(shared, "get_model_provenance", {"model_package_arn": package, "max_depth": 3},
                        headers=as_("alice")))
    assert any(n.get("source_uri", "").startswith(BUCKET_TRAIN) for n in mine["nodes"]), mine
    unknown = package.rsplit("/", 1)[0] + "/999999"
    theirs = error_text(call_tool(shared, "get_model_provenance", {"model_package_arn": package},
                                  headers=as_("bob")))
    never = error_text(call_tool(shared, "get_model_provenance", {"model_package_arn": unknown},
                                 headers=as_("bob")))
    assert theirs.replace(package, unknown) == never, (theirs, never)
    assert BUCKET_TRAIN not in theirs and "Succeeded" not in theirs


@pytest.mark.parametrize("args, says", [
    ({"input_data_uri": "s3://mcp-sagemaker-async-io/inputs/"}, "is not under a prefix this deployment allows"),
    ({"input_data_uri": f"{BUCKET_TRAIN}../inputs/"}, "has a `.`, `..` or empty path segment"),
    ({"input_data_uri": f"{BUCKET_TRAIN}%2E%2E/inputs/"}, "has a `.`, `..` or empty path segment"),
    ({"input_data_uri": "s3://some-other-bucket/data/"}, "is not under a prefix this deployment allows"),
    ({"input_data_uri": BUCKET_TRAIN, "training_instance_type": "ml.p4d.24xlarge"},
     "is not one this deployment allows; use one of: ml.m5.xlarge"),
])
def test_refused_training_inputs_and_instance_types_start_nothing(shared, aws, args, says):
    session = f"s-{uuid.uuid4().hex[:8]}"
    text = error_text(call_tool(shared, "trigger_training", {**args, "session_id": session}, headers=as_("alice")))
    assert says in text, text
    if "input_data_uri" in text:
        assert f"training may read only under: {BUCKET_TRAIN}" in text, text
    assert runs_of(aws, "alice", session) == 0


def test_submits_over_the_quota_start_nothing_and_leave_the_other_caller_alone(shared, aws):
    # At most 3 a minute: within two windows a fourth call is refused at the latest on the seventh.
    for _ in range(7):
        before = (stored_for(aws, owner_tag("alice")), len(standin_invocations()))
        result = call_tool(shared, "submit_job", {"document": "a small job"}, headers=as_("alice"))
        if result.is_error:
            break
    else:
        raise AssertionError("the submit quota never refused")
    text = error_text(result)
    assert text.startswith("Quota reached: each caller may submit 3 jobs per minute. Nothing was submitted; "
                           "try again in "), text
    wait = int(text.rsplit("try again in ", 1)[1].split(" ")[0])
    assert 1 <= wait <= 60
    assert (stored_for(aws, owner_tag("alice")), len(standin_invocations())) == before, "no item, no object, no invoke"
    ok(call_tool(shared, "submit_job", {"document": "bob's own"}, headers=as_("bob")))


def test_runs_over_the_quota_start_nothing(shared, aws):
    session = f"s-{uuid.uuid4().hex[:8]}"
    for n in range(5):
        result = call_tool(shared, "trigger_training", {"input_data_uri": BUCKET_TRAIN, "session_id": session},
                           headers=as_("bob"))
        if result.is_error:
            break
    else:
        raise AssertionError("the run quota never refused")
    assert n <= 2, "two runs an hour"
    assert error_text(result).startswith("Quota reached: each caller may start 2 training runs per hour."), result
    assert runs_of(aws, "bob", session) == n, "the refused call recorded no run"


def test_a_second_wait_at_once_is_refused_and_the_other_caller_may_wait(shared, aws):
    # A job of alice's that stays pending: invoked, no outcome yet, nothing to look for in S3.
    pending = str(uuid.uuid4())
    now = int(time.time())
    aws["ddb"].put_item(TableName=aws["table"], Item={
        "inference_id": {"S": pending}, "owner": {"S": owner_tag("alice")}, "status": {"S": "pending"},
        "stage": {"S": "invoked"}, "attempt": {"N": "1"},
        "submitted_at": {"S": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now))},
        "ttl": {"N": str(now + 3600)}})
    first = {}
    waiting = threading.Thread(target=lambda: first.update(r=call_tool(
        shared, "check_job_status", {"inference_id": pending, "wait_secs": 8}, headers=as_("alice"))))
    waiting.start()
    time.sleep(2.5)
    text = error_text(call_tool(shared, "check_job_status", {"inference_id": pending, "wait_secs": 5},
                                headers=as_("alice")))
    assert text.startswith("Quota reached: each caller may hold 1 waits at once."), text
    assert ok(call_tool(shared, "check_job_status", {"inference_id": pending}, headers=as_("alice")))["status"] \
        == "pending", "without a wait the status is read as always"
    waiting.join(timeout=60)
    assert ok(first["r"])["status"] == "pending"
    # The wait ended and freed its place.
    assert ok(call_tool(shared, "check_job_status", {"inference_id": pending, "wait_secs": 1},
                        headers=as_("alice")))["status"] == "pending"


def test_a_long_argument_is_cut_in_the_answer_and_the_log(shared):
    long = "x" * 100_000
    for tool, args in [("trigger_training", {"input_data_uri": long, "session_id": "s"}),
                       ("check_training_status", {"execution_arn": long}),
                       ("submit_job", {"document": "a", long: 1})]:
        text = error_text(call_tool(shared, tool, args, headers=as_("alice")))
        assert len(text) < 1000 and "x" * 201 not in text, (tool, len(text))
        assert "… (100000 characters)" in text, text
    assert "x" * 201 not in (LOCAL / "watch-sharing.log").read_text()


class AccessDenied:
    """SageMaker's control plane refusing every call, as it does for a role without the
    permission: the refusal names the role and the account."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.dumps({"__type": "AccessDeniedException", "message":
                                   "User: arn:aws:sts::123456789012:assumed-role/McpToolsRole/mcp-tools is not "
                                   "authorized to perform: sagemaker:DescribePipelineExecution"}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("x-amzn-ErrorType", "AccessDeniedException")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_access_denied_from_sagemaker_is_answered_as_unknown(servers):
    denied = AccessDenied()
    with mcp_in_front_of(denied, {"AUTH_MODE": "none", "AWS_ENDPOINT_URL_SAGEMAKER": denied.url},
                         "watch-denied") as url:
        arn = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/mcp-intent-classifier-pipeline/execution/abc123"
        text = error_text(call_tool(url, "check_training_status", {"execution_arn": arn}))
        assert text == f'no training run "{arn}" was found: check the execution_arn that trigger_training returned'
        package = "arn:aws:sagemaker:us-east-1:123456789012:model-package/models/1"
        text = error_text(call_tool(url, "get_model_provenance", {"model_package_arn": package}))
        assert text.startswith(f'no model package "{package}" was found'), text
        assert "McpToolsRole" not in text and "assumed-role" not in text
    # The log keeps what AWS said.
    assert "AccessDeniedException" in (LOCAL / "watch-denied.log").read_text()


# (A Host with a space or a port past 65535 never reaches the function here: lambda_http fails
# building the request's URL from it; http_guard's unit tests cover both.)
@pytest.mark.parametrize("host", [
    "evil.example@abcdefghij.lambda-url.us-east-1.on.aws", "abc.on.aws/x", "[::1]:80", "-a.on.aws",
])
def test_a_host_that_is_no_dns_name_gets_400_before_anything(servers, host):
    status, _, body = http_request(servers, "POST", {**JSON_HEADERS, "Host": host}, LIST_TOOLS)
    assert status == 400 and b"Host header must be a DNS name" in body, (status, body)


def test_a_trace_level_log_holds_no_token_and_no_document(shared):
    ok(call_tool(shared, "submit_job", {"document": f"contract text {DOCUMENT_MARKER}"}, headers=as_("bob")))
    # A failed call too: its arguments are never logged either.
    call_tool(shared, "submit_job", {"document": DOCUMENT_MARKER, "unknown": 1}, headers=as_("bob"))
    log = (LOCAL / "watch-sharing.log").read_text()
    assert "tool call" in log, "the function logged at all"
    for token in TOKENS.values():
        assert token not in log
    assert DOCUMENT_MARKER not in log
    assert "Bearer " not in log and "authorization" not in log.lower()
