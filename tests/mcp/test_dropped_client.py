"""A client that goes away in the middle of a reply does not take mcp-tools down under `cargo lambda
watch`: the next request is served at once. mcp-tools answers in RESPONSE_STREAM mode; when its
client disconnects, the emulator drops the streamed response, and scripts/runtime_relay.py must
answer the function's post as Lambda's Runtime API does (the rest of the stream read, 202) instead
of leaving the function without an answer, which ended the process and left every later request
hanging.

Two ways of leaving: the conformance suite's `server-initialize` (a 2025-11-25 client: initialize,
notifications/initialized, then the SDK's GET for a server stream, aborted at once by close()),
and a client that stops reading a streamed progress reply after its first event."""

import asyncio
import json
import socket
import time
import urllib.parse
import uuid

import anyio
import pytest
from mcp import Client

from conftest import need, ok
from lambda_watch import WatchError, free_port, start_watch, stop

LEGACY = "2025-11-25"


@pytest.fixture
def url():
    """mcp-tools on a server of its own for each test: one that fails here must not take another
    test's server down."""
    need("AWS_ENDPOINT_URL")
    port = free_port()
    try:
        proc = start_watch(port, {"AUTH_MODE": "none"}, "watch-dropped")
    except WatchError as e:
        pytest.exit(str(e), 2)
    url = f"http://127.0.0.1:{port}/lambda-url/mcp-tools/mcp"
    # The first invocation builds and starts the function.
    tools = asyncio.run(listed(url, within=600))
    assert "check_job_status" in tools
    yield url
    stop(proc)


async def listed(url, within):
    """The tool names, through the Python SDK, failing if they take more than `within` seconds."""
    with anyio.fail_after(within):
        async with Client(url, mode="2026-07-28") as client:
            return [tool.name for tool in (await client.list_tools()).tools]


def served_soon(url, within):
    started = time.monotonic()
    try:
        tools = asyncio.run(listed(url, within))
    except TimeoutError:
        pytest.fail(f"mcp-tools did not answer tools/list within {within} s after the client went away")
    assert "check_job_status" in tools, tools
    return time.monotonic() - started


def connect(url):
    parts = urllib.parse.urlparse(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=60), parts


def request(method, path, host, headers, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def exchange(url, body, headers=None):
    """One POST on a connection of its own, answered in full: (status, body)."""
    sock, parts = connect(url)
    with sock:
        sock.sendall(request("POST", parts.path, parts.netloc, {
            "Accept": "application/json, text/event-stream", "Connection": "close", **(headers or {})}, body))
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, rest = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


def test_the_conformance_suites_initialize_then_an_aborted_stream_request(url):
    # As @modelcontextprotocol/conformance 0.1.16's server-initialize does with the TypeScript
    # SDK's client: connect (initialize, then notifications/initialized; on its 202 the transport
    # opens the optional GET stream without waiting for it), then close(), which aborts that GET.
    status, body = exchange(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "conformance-test-client", "version": "1.0.0"}}})
    assert status == 200, body
    status, _ = exchange(url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                         {"MCP-Protocol-Version": LEGACY})
    assert status == 202
    # The abort lands while the function answers (405, no server stream) in nine runs of ten,
    # and before the emulator took the request in the tenth: three of them, as three clients would.
    for _ in range(3):
        sock, parts = connect(url)
        sock.sendall(request("GET", parts.path, parts.netloc, {
            "Accept": "text/event-stream", "MCP-Protocol-Version": LEGACY}))
        time.sleep(0.005)
        sock.close()
    took = served_soon(url, within=10)
    print(f"tools/list after the aborted GET: {took:.2f} s")


def test_a_client_that_stops_reading_a_streamed_reply(url):
    async def submit():
        with anyio.fail_after(60):
            async with Client(url, mode="2026-07-28") as client:
                return ok(await client.call_tool("submit_job", {"document": f"dropped {uuid.uuid4()}"}))
    inference_id = asyncio.run(submit())["inference_id"]
    wait_secs = 3
    sock, parts = connect(url)
    sock.sendall(request("POST", parts.path, parts.netloc, {
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LEGACY},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "check_job_status", "arguments": {"inference_id": inference_id, "wait_secs": wait_secs},
            "_meta": {"progressToken": "p-1"}}}))
    # The headers and the first progress notification arrive; then the client hangs up while the
    # function is still waiting and streaming.
    received = b""
    while b"notifications/progress" not in received:
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    assert b"text/event-stream" in received.split(b"\r\n\r\n")[0], received
    sock.close()
    # The function finishes its wait (it runs on, as on Lambda), then serves the next request.
    took = served_soon(url, within=wait_secs + 10)
    print(f"tools/list after the dropped stream: {took:.2f} s")
    # And again: the relay keeps serving after a second drop.
    test_the_conformance_suites_initialize_then_an_aborted_stream_request(url)
