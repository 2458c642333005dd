"""A Lambda Function URL in front of a RuntimeApi: each HTTP request becomes one payload-2.0
event, the function's answer becomes the HTTP response. Enough for an MCP client over
Streamable HTTP with JSON responses (what mcp-tools answers); not a general emulator."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from runtime_api import Invocation, RuntimeApi, http_response

URL_ID = "benchurlid0000000000000000000000"
DOMAIN = f"{URL_ID}.lambda-url.us-east-1.on.aws"


def function_url_event(method: str, path: str, query: str, headers: dict, body: bytes) -> bytes:
    now = time.time()
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    return json.dumps({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {**headers, "host": DOMAIN, "x-forwarded-proto": "https", "x-forwarded-port": "443"},
        "requestContext": {
            "accountId": "anonymous",
            "apiId": URL_ID,
            "domainName": DOMAIN,
            "domainPrefix": URL_ID,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1",
                     "userAgent": headers.get("user-agent", "")},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text,
        "isBase64Encoded": encoded,
    }).encode()


class FunctionUrl:
    """Serves http://127.0.0.1:<port>/; `invocations` lists what each request cost the function."""

    def __init__(self, runtime: RuntimeApi):
        self.runtime = runtime
        self.invocations: list[Invocation] = []
        self.first_request = threading.Event()
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args):
                pass

            def _relay(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                headers = {k.lower(): v for k, v in self.headers.items()}
                front.first_request.set()
                inv = front.runtime.invoke(function_url_event(self.command, path, query, headers, body))
                front.invocations.append(inv)
                if inv.response is None:
                    self.wfile.write(http_response(502, {}, inv.error or b""))
                    return
                # A streamed reply (RESPONSE_STREAM) is its JSON prelude, eight NULs, then the body.
                prelude, streamed, body_bytes = inv.response.partition(b"\0" * 8)
                answer = json.loads(prelude)
                if streamed:
                    out = body_bytes
                else:
                    out = answer.get("body") or ""
                    out = base64.b64decode(out) if answer.get("isBase64Encoded") else out.encode()
                out_headers = {k: v for k, v in (answer.get("headers") or {}).items() if k.lower() != "content-length"}
                self.wfile.write(http_response(answer.get("statusCode", 200), out_headers, out))

            do_GET = do_POST = do_DELETE = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
