"""A minimal Lambda Runtime API (2018-06-01) for benchmarking one function process.

Serves `next`, `response`, `error` and `init/error`, and times each invocation from the moment
its event is written to the moment its response has been read, which is how Lambda's own
Duration is bounded. Every socket has TCP_NODELAY and every answer is written with one
`sendall`: with Nagle's algorithm and delayed ACKs a split write costs up to 40 ms per exchange,
which would be the harness's time, not the function's.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http import HTTPStatus

PREFIX = "/2018-06-01/runtime"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:{name}"


@dataclass
class Invocation:
    event: bytes
    client_context: str | None = None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    sent_ns: int = 0
    done_ns: int = 0
    cpu_done_ns: int = 0  # the process's CPU time at its answer (with RuntimeApi.watch_cpu)
    response: bytes | None = None
    error: bytes | None = None
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def duration_ms(self) -> float:
        return (self.done_ns - self.sent_ns) / 1e6


class RuntimeApi:
    """One listening socket on 127.0.0.1; `address` goes into AWS_LAMBDA_RUNTIME_API."""

    def __init__(self, function_name: str = "bench", cpu_watched: bool = False):
        self.function_arn = FUNCTION_ARN.format(name=function_name)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.address = "127.0.0.1:%d" % self._listener.getsockname()[1]
        self._pending: queue.Queue[Invocation | None] = queue.Queue()
        self._inflight: dict[str, Invocation] = {}
        self._connections: list[socket.socket] = []
        self.first_next_ns: int | None = None
        self.first_next_cpu_ns: int | None = None  # the process's CPU time at its first `next`
        self._cpu = None
        # Set when no one will say how to read the process's CPU (watch_cpu).
        self._cpu_watched = threading.Event()
        if not cpu_watched:
            self._cpu_watched.set()
        self.init_error: bytes | None = None
        self.ready = threading.Event()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    # The caller's side.

    def submit(self, event: bytes, client_context: str | None = None) -> Invocation:
        inv = Invocation(event, client_context)
        self._pending.put(inv)
        return inv

    def invoke(self, event: bytes, client_context: str | None = None, timeout: float = 60) -> Invocation:
        inv = self.submit(event, client_context)
        if not inv.done.wait(timeout):
            raise TimeoutError(f"no response to invocation {inv.request_id} within {timeout} s")
        return inv

    def watch_cpu(self, read_cpu_ns) -> None:
        """Reads the process's CPU time (`read_cpu_ns()`) at its first `next` and at each answer,
        while it waits for the reply: what init and each invocation cost it, on every thread."""
        self._cpu = read_cpu_ns
        self._cpu_watched.set()

    def _read_cpu(self) -> int:
        return self._cpu() if self._cpu is not None else 0

    def close(self) -> None:
        self._closed = True
        self._pending.put(None)
        for conn in [self._listener, *self._connections]:
            try:
                conn.close()
            except OSError:
                pass

    # The function's side.

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while True:
                request = read_request(reader)
                if request is None:
                    return
                method, path, body = request
                if method == "GET" and path == f"{PREFIX}/invocation/next":
                    if self.first_next_ns is None:
                        self.first_next_ns = time.perf_counter_ns()
                        # A process asks within milliseconds of its spawn: give the caller
                        # that spawned it the moment it needs to say how to read its CPU.
                        self._cpu_watched.wait(1)
                        self.first_next_cpu_ns = self._read_cpu()
                        self.ready.set()
                    inv = self._pending.get()
                    if inv is None:
                        return
                    self._inflight[inv.request_id] = inv
                    headers = {
                        "Content-Type": "application/json",
                        "Lambda-Runtime-Aws-Request-Id": inv.request_id,
                        "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 300_000),
                        "Lambda-Runtime-Invoked-Function-Arn": self.function_arn,
                        "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000;Sampled=0",
                    }
                    if inv.client_context is not None:
                        headers["Lambda-Runtime-Client-Context"] = inv.client_context
                    inv.sent_ns = time.perf_counter_ns()
                    conn.sendall(http_response(200, headers, inv.event))
                elif method == "POST" and path.startswith(f"{PREFIX}/invocation/"):
                    done_ns = time.perf_counter_ns()
                    cpu_done_ns = self._read_cpu()
                    request_id, _, kind = path[len(f"{PREFIX}/invocation/"):].partition("/")
                    inv = self._inflight.pop(request_id, None)
                    if inv is None or kind not in ("response", "error"):
                        conn.sendall(http_response(400, {}, b'{"errorMessage":"unknown invocation"}'))
                        continue
                    conn.sendall(http_response(202, {}, b'{"status":"OK"}'))
                    inv.done_ns = done_ns
                    inv.cpu_done_ns = cpu_done_ns
                    if kind == "response":
                        inv.response = body
                    else:
                        inv.error = body
                    inv.done.set()
                elif method == "POST" and path == f"{PREFIX}/init/error":
                    self.init_error = body
                    self.ready.set()
                    conn.sendall(http_response(202, {}, b'{"status":"OK"}'))
                else:
                    conn.sendall(http_response(404, {}, b'{"errorMessage":"not found"}'))
        except (OSError, ValueError):
            return


def read_head(reader) -> tuple[str, dict] | None:
    """Reads an HTTP/1.1 message's start line and lower-cased headers; None at end of stream."""
    line = reader.readline()
    if not line:
        return None
    headers = {}
    while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return line.decode("latin-1").rstrip("\r\n"), headers


def read_body(reader, headers: dict) -> bytes:
    """The body after `read_head`: Content-Length or chunked."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while (size := int(reader.readline().split(b";")[0], 16)) != 0:
            chunks.append(reader.read(size))
            reader.readline()
        while reader.readline() not in (b"\r\n", b"\n", b""):
            pass
        return b"".join(chunks)
    return reader.read(int(headers.get("content-length") or 0))


def read_message(reader) -> tuple[str, dict, bytes] | None:
    """Reads one HTTP/1.1 message: start line, lower-cased headers, body. None at end of stream."""
    head = read_head(reader)
    if head is None:
        return None
    start, headers = head
    return start, headers, read_body(reader, headers)


def read_request(reader) -> tuple[str, str, bytes] | None:
    message = read_message(reader)
    if message is None:
        return None
    start, _, body = message
    method, path, _ = start.split(" ", 2)
    return method, path, body


def http_response(status: int, headers: dict, body: bytes) -> bytes:
    reason = HTTPStatus(status).phrase
    head = [f"HTTP/1.1 {status} {reason}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def decode_json(body: bytes | None):
    return json.loads(body) if body else None
