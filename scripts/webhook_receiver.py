"""A webhook receiver for MCP Events on this machine (the demo's and the tests'): each path
answers the signed verification challenge and records every event POSTed to it; a path can be
told to fail its next events with 500, and /redirect answers 307. `signed_by` is the receiver's
check, with hmac alone, as Standard Webhooks defines it."""

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcp import types


def new_secret() -> tuple:
    """A client's signing secret: its whsec_ form and the key it stands for."""
    key = secrets.token_bytes(32)
    return "whsec_" + base64.b64encode(key).decode(), key


def signed_by(key: bytes, headers, body: bytes, now: float) -> bool:
    """A receiver's check, as Standard Webhooks defines it: HMAC-SHA256 over
    `<webhook-id>.<webhook-timestamp>.<body>`, any `v1,` signature of the header, the
    timestamp within five minutes."""
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(now - int(timestamp)) > 300:
        return False
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest())
    return any(hmac.compare_digest(s.encode(), b"v1," + expected) for s in headers["webhook-signature"].split(" "))


class Receiver:
    """Webhook endpoints on 127.0.0.1: each path answers its challenge (echo) and records every
    event POSTed to it; a path can be told to fail its next N events with 500, or to redirect."""

    def __init__(self):
        self.received: dict = {}
        self.failing: dict = {}
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                path = self.path
                if path.startswith("/redirect"):
                    self.send_response(307)
                    self.send_header("location", f"http://127.0.0.1:{outer.port}/a")
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                message = json.loads(body)
                if message.get("type") == "verification":
                    answer = json.dumps({"challenge": message["challenge"]}).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                    return
                with outer.lock:
                    failing = outer.failing.get(path, 0)
                    outer.failing[path] = max(0, failing - 1)
                    outer.received.setdefault(path, []).append(
                        {"at": time.time(), "headers": {k.lower(): v for k, v in self.headers.items()},
                         "body": body, "event": message, "answered": 500 if failing else 204})
                self.send_response(500 if failing else 204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def events(self, path: str, delivered_only=True) -> list:
        with self.lock:
            got = list(self.received.get(path, []))
        return [r for r in got if r["answered"] == 204 or not delivered_only]

    def wait_for(self, path: str, count: int, timeout: float) -> list:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.events(path)) >= count:
                return self.events(path)
            time.sleep(0.05)
        return self.events(path)

    def stop(self):
        self.server.shutdown()


class EventsRequest(types.Request[dict[str, Any] | None, str]):
    """An Events extension request, sent by the MCP SDK's session as any request is."""
