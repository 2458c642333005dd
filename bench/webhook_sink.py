"""A webhook receiver for the bench: on 127.0.0.1, HTTP/1.1 with keep-alive (as a receiver behind
any web server answers), TCP_NODELAY and one write per answer. It echoes MCP Events' signed
verification challenge, answers every other POST 204, and notes when each 2xx went out
(time.perf_counter_ns(), the clock the bench's Runtime API times invocations with).

Its own answer time, the floor of a delivery's POST, is `answer_time`: the same POST made from
this process over a kept-alive connection, to a path whose arrivals are not counted as events.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FLOOR_PATH = "/floor"


@dataclass
class Arrival:
    path: str
    headers: dict  # lower-cased names
    body: bytes
    answered_ns: int  # perf_counter_ns once the 2xx was written


class WebhookSink:
    """Records every POST but the challenge's and the floor's, by path, in arrival order."""

    def __init__(self):
        self.arrivals: list[Arrival] = []
        self.challenges = 0
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                answer, status = b"", 204
                message = json.loads(body or b"{}")
                if isinstance(message, dict) and message.get("type") == "verification":
                    answer, status = json.dumps({"challenge": message["challenge"]}).encode(), 200
                head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'No Content'}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(answer)}\r\n\r\n")
                self.wfile.write(head.encode() + answer)
                self.wfile.flush()
                answered = time.perf_counter_ns()
                with sink.arrived:
                    if status == 200:
                        sink.challenges += 1
                    elif self.path != FLOOR_PATH:
                        sink.arrivals.append(Arrival(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                     body, answered))
                    sink.arrived.notify_all()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self._floor: http.client.HTTPConnection | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)

    def wait_for(self, count: int, timeout: float) -> list[Arrival]:
        """The arrivals once there are `count` of them (or when `timeout` s have passed)."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.arrivals) >= count, timeout)
            return list(self.arrivals)

    def answer_time(self, arrival: Arrival) -> float:
        """Milliseconds for the same POST (its headers and body) sent from here over a kept-alive
        connection and answered: the receiver's own share of a delivery."""
        if self._floor is None:
            self._floor = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            self._floor.connect()
            self._floor.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        headers = {k: v for k, v in arrival.headers.items() if k not in ("host", "content-length", "connection")}
        started = time.perf_counter_ns()
        self._floor.request("POST", FLOOR_PATH, body=arrival.body, headers=headers)
        response = self._floor.getresponse()
        response.read()
        return (time.perf_counter_ns() - started) / 1e6

    def stop(self) -> None:
        if self._floor is not None:
            self._floor.close()
        self.server.shutdown()
        self.server.server_close()
