"""Runs a function under `cargo lambda watch` as Lambda would, where the emulator differs in
one respect: Lambda hands the runtime the invocation's client context as JSON in the
`Lambda-Runtime-Client-Context` header, and cargo lambda watch hands it base64-encoded, which
lambda_runtime cannot parse (the function process exits). An AgentCore Gateway target reads its
tool name from the client context, so lambda_watch.py sets this script as cargo's runner for the
watched functions: it relays the Runtime API for the one function it starts, decoding that header,
and passes everything else through unchanged. A streamed response (mcp-tools answers in
RESPONSE_STREAM mode) is passed on chunk by chunk as the function writes it, so a client sees
its progress notifications when they happen. Trailers (a streamed response's mid-stream error)
are not relayed: http.client cannot send them.

A client that goes away mid-reply (a Function URL caller that hangs up, or aborts a request it
no longer wants) makes the emulator drop the streamed response and its connection to this relay.
Lambda's Runtime API does not fail the function for that: the function writes its stream to the
end and the post is accepted. The relay does the same: it reads the rest of the function's body,
answers the post 202 as the Runtime API does, and opens a new upstream connection for the next
call. Any other call it cannot pass on gets an error status (502), not a dropped connection, so
the runtime is never left without an answer.

Usage (by cargo): runtime_relay.py BINARY [ARGS...]
"""

import base64
import binascii
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLIENT_CONTEXT = "lambda-runtime-client-context"
HOP_BY_HOP = {"connection", "transfer-encoding", "keep-alive", "content-length"}


def decoded(value: str) -> str:
    """The client context as Lambda passes it: JSON. A value that is not base64 passes as is."""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return value


def relay(upstream: str) -> ThreadingHTTPServer:
    host, _, port = upstream.partition(":")
    # One connection, as the runtime keeps: the emulator tells function instances apart by their
    # connection. The runtime makes one call at a time, so one connection serves them all.
    upstream_lock = threading.Lock()
    upstream_conn = [None]

    def exchange(method, path, body, headers, chunked):
        with upstream_lock:
            # A streamed body is read as it is sent: it cannot be sent a second time.
            for attempt in (1,) if chunked else (1, 2):
                if upstream_conn[0] is None:
                    # The `next` call long-polls: no timeout.
                    upstream_conn[0] = http.client.HTTPConnection(host, int(port or 80), timeout=None)
                try:
                    upstream_conn[0].request(method, path, body=body, headers=headers, encode_chunked=chunked)
                    resp = upstream_conn[0].getresponse()
                    return resp.status, resp.reason, resp.getheaders(), resp.read()
                except (http.client.HTTPException, OSError):
                    # The connection is in an unknown state: the next call opens a new one.
                    upstream_conn[0].close()
                    upstream_conn[0] = None
                    if chunked or attempt == 2:
                        raise

    class Relay(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def chunks(self):
            """A chunked body's chunks, each as soon as it arrives."""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, then the blank line
                        pass
                    return
                chunk = self.rfile.read(size)
                self.rfile.readline()
                yield chunk

        def forward(self):
            chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
            if chunked:
                body = self.chunks()
            else:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            try:
                status, reason, response_headers, payload = exchange(self.command, self.path, body, headers, chunked)
            except (http.client.HTTPException, OSError) as e:
                if chunked:
                    # The emulator dropped a streamed response (its client went away): as Lambda
                    # does, take the rest of the stream and accept it.
                    for _ in body:
                        pass
                    print(f"runtime_relay: {self.command} {self.path}: the emulator dropped the streamed "
                          f"response ({e!r}); the rest was read and the post accepted", file=sys.stderr)
                    self.answer(202, "Accepted", b'{"status":"OK"}')
                else:
                    print(f"runtime_relay: {self.command} {self.path}: {e!r}", file=sys.stderr)
                    self.answer(502, "Bad Gateway", json.dumps(
                        {"errorMessage": f"runtime_relay: {e!r}", "errorType": "Runtime.RelayError"}).encode())
                return
            except Exception:
                traceback.print_exc()
                self.answer(500, "Internal Server Error", json.dumps(
                    {"errorMessage": "runtime_relay failed", "errorType": "Runtime.RelayError"}).encode())
                return
            self.send_response(status, reason)
            for name, value in response_headers:
                if name.lower() == CLIENT_CONTEXT:
                    value = decoded(value)
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def answer(self, status, reason, payload):
            self.send_response(status, reason)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = forward

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: runtime_relay.py BINARY [ARGS...]", file=sys.stderr)
        return 2
    env = dict(os.environ)
    api = env.get("AWS_LAMBDA_RUNTIME_API")
    if api:
        # host:port as Lambda sets it, or a URL with a path as cargo lambda watch does: only the
        # address changes.
        scheme, sep, rest = api.rpartition("://")
        hostport, slash, path = rest.partition("/")
        server = relay(hostport)
        env["AWS_LAMBDA_RUNTIME_API"] = f"{scheme}{sep}127.0.0.1:{server.server_address[1]}{slash}{path}"
    child = subprocess.Popen(sys.argv[1:], env=env)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
