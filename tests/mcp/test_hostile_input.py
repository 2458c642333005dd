"""Hostile input costs nothing: mcp-tools (the debug build) in its own process under a Runtime API
of this test's own, bearer mode, serving the example catalog, as bench/hostile.py runs it. An
unauthenticated body is refused for its token without being parsed (its peak memory is that of a
same-size body that is not JSON), a body past its bounds is refused before rmcp builds it, and
long values come back, and go to the log, quoted short. The figures themselves are the bench's
(BENCHMARKS.md, "Hostile input")."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from lambda_watch import target_dir

ROOT = Path(__file__).resolve().parents[2]
BINARY = target_dir() / "debug" / "mcp-tools"


def bench_module(name: str):
    """A module of bench/, loaded by path (tests/ and scripts/ have modules of their own names)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench_module("runtime_api")
hostile = bench_module("hostile")


@pytest.fixture(scope="module")
def function(tmp_path_factory):
    assert BINARY.exists(), f"{BINARY} is built by make test's compile lane"
    log = tmp_path_factory.mktemp("hostile") / "mcp-tools.log"
    fn = hostile.McpTools(BINARY, log)
    fn.call(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}).encode())
    yield fn
    fn.close()


def error_of(reply) -> dict:
    return json.loads(reply.body)["error"]


def test_an_unauthenticated_body_is_refused_for_its_token_at_the_cost_of_its_bytes(function):
    wide = hostile.zeros(5 * hostile.MB - 4096).encode()
    cheap = function.call(b"x" * len(wide), token=None)
    refused = function.call(wide, token=None)
    assert (cheap.status, refused.status) == (401, 401)
    assert refused.body == b"Unauthorized: a valid bearer token is required"
    # Parsed into a tree, 2.6 million zeros took 216 MB; read as bytes, what 5 MB of x takes.
    assert refused.peak_mb < cheap.peak_mb + 16, (refused.peak_mb, cheap.peak_mb)


def test_a_body_past_its_bounds_is_refused_before_it_is_built(function):
    big = hostile.tools_call("submit_job", '{"payload":' + hostile.zeros(5 * hostile.MB - 4096) + "}")
    refused = function.call(big)
    assert refused.status == 413
    assert b"JSON values" in refused.body
    assert refused.peak_mb < 32, refused.peak_mb
    over = function.call(b"x" * (5 * hostile.MB + 1))
    assert over.status == 413
    assert over.body == b"Payload Too Large: a request body may be at most 5242880 bytes (MCP_MAX_BODY_BYTES)"


def test_an_oversize_array_is_refused_by_its_schema_without_walking_it(function):
    customers = hostile.empty_objects(200_000)
    reply = function.call(hostile.tools_call("score_churn_risk", '{"customers":' + customers + "}"))
    assert reply.status == 200
    result = json.loads(reply.body)["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "customers" in text and "500" in text, text
    assert len(reply.body) < 2_000


def test_long_methods_versions_and_progress_tokens_come_back_short(function):
    reply = function.call(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m" * 300_000}).encode())
    assert reply.status == 404
    assert error_of(reply)["code"] == -32601
    assert len(reply.body) < 500 and "(300000 bytes)" in error_of(reply)["message"]

    token = {"progressToken": "t" * 100_000}
    reply = function.call(hostile.tools_call("check_job_status", {"inference_id": "x", "wait_secs": 12}, token))
    assert reply.status == 400
    assert error_of(reply)["code"] == -32602
    assert len(reply.body) < 500

    reply = function.call(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                          headers={"mcp-protocol-version": "2" * 5_000})
    assert reply.status == 400 and len(reply.body) < 300, reply.body[:300]

    init = {"jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"protocolVersion": "9" * 100_000, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    reply = function.call(json.dumps(init).encode())
    assert reply.status == 400 and len(reply.body) < 500, reply.body[:300]

    # Nothing long reached the log either.
    lines = Path(function.log.name).read_text().splitlines()
    assert lines, "the function logged nothing"
    longest = max(len(line) for line in lines)
    assert longest <= 8192, longest
    assert not any("m" * 1_000 in line or "t" * 1_000 in line or "9" * 1_000 in line for line in lines)
