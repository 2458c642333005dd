"""mcp-tools when the Lambda Runtime API breaks off the post of a streamed reply (its client left
mid-stream): that reply ends, the function does not. The binary runs against a Runtime API of
this test's own, with no emulator or relay in between: the first reply's post is cut off before
any answer, and the next invocation must still be served."""

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import need
from lambda_watch import FUNCTION_ENV, target_dir

ROOT = Path(__file__).resolve().parents[2]
BINARY = target_dir() / "debug" / "mcp-tools"
HOST = "abc.lambda-url.us-east-1.on.aws"


def function_url_event(request_id: int) -> dict:
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
        "headers": {"host": HOST, "content-type": "application/json", "mcp-protocol-version": "2025-11-25",
                    "accept": "application/json, text/event-stream"},
        "isBase64Encoded": False, "body": json.dumps(body),
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc", "domainName": HOST, "domainPrefix": "abc",
            "requestId": f"r-{request_id}", "routeKey": "$default", "stage": "$default",
            "time": "20/Nov/2026:10:00:00 +0000", "timeEpoch": 1_795_000_000_000,
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "1.2.3.4",
                     "userAgent": "t"},
        },
    }


class RuntimeApi:
    """Hands out invocations 1 and 2, cuts off the post of invocation 1's reply, and keeps
    invocation 2's."""

    def __init__(self):
        self.pending = [1, 2]
        self.replies = {}
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                with api.lock:
                    invocation = api.pending.pop(0) if api.pending else None
                if invocation is None:
                    time.sleep(30)  # no more work: the long poll of an idle environment
                    self.send_error(500)
                    return
                payload = json.dumps(function_url_event(invocation)).encode()
                self.send_response(200)
                self.send_header("Lambda-Runtime-Aws-Request-Id", f"inv-{invocation}")
                self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 60_000))
                self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                                 "arn:aws:lambda:us-east-1:123456789012:function:mcp-tools")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self):
                request_id = self.path.split("/")[-2]
                if request_id == "inv-1":
                    # Gone mid-stream: the connection closes with no answer.
                    self.close_connection = True
                    return
                body = b""
                if "chunked" in self.headers.get("Transfer-Encoding", ""):
                    while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)):
                        body += self.rfile.read(size)
                        self.rfile.readline()
                    while self.rfile.readline().strip():
                        pass
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with api.lock:
                    api.replies[request_id] = body
                self.send_response(202)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"


def test_a_reply_whose_post_is_cut_off_ends_that_reply_and_the_next_is_served():
    need("AWS_ENDPOINT_URL")
    assert BINARY.exists(), f"{BINARY} is built by make test's compile lane"
    api = RuntimeApi()
    env = {**os.environ, **FUNCTION_ENV, "AUTH_MODE": "none", "AWS_LAMBDA_RUNTIME_API": api.address,
           "AWS_LAMBDA_FUNCTION_NAME": "mcp-tools", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
           "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_LAMBDA_LOG_FORMAT": "json"}
    proc = subprocess.Popen([str(BINARY)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 20
        while "inv-2" not in api.replies and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        exited = proc.poll()
    finally:
        proc.kill()
        output = proc.communicate()[0]
        api.server.shutdown()
    assert exited is None, f"the function exited ({exited}) after the cut-off post:\n{output[-2000:]}"
    assert "inv-2" in api.replies, f"the next invocation was not served:\n{output[-2000:]}"
    reply = api.replies["inv-2"]
    # A streamed reply: the prelude (status, headers), eight NUL bytes, then the body.
    body = reply.split(b"\0" * 8, 1)[1]
    listed = json.loads(body)["result"]["tools"]
    assert "submit_job" in {tool["name"] for tool in listed}, body[:300]
    assert "the runtime stopped; serving the next invocation" in output
