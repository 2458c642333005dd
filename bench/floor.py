"""The floors: what the emulator alone takes for an event's AWS calls, replayed by a minimal
client; and the same calls made again through the Rust SDK alone, in a process of its own."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

from emulator import Call
from processes import lambda_environment
from runtime_api import read_message


class Floor:
    """The emulator's own time for a list of calls: a minimal client (a socket, the request
    bytes prepared beforehand, one kept-alive connection) replays them, with the event's unique
    ids swapped so writes stay fresh."""

    def __init__(self, endpoint: str):
        url = urllib.parse.urlparse(endpoint)
        self.sock = socket.create_connection((url.hostname, url.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.host = url.netloc

    def replay(self, calls: list[Call], subs: dict[str, str]) -> float:
        prepared = []
        for call in calls:
            body, target = swapped(call, subs)
            head = [f"{call.method} {target} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(body)}"]
            head += [f"{k}: {v}" for k, v in call.headers
                     if k.lower() not in ("host", "content-length", "transfer-encoding", "connection", "expect")]
            prepared.append(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        started = time.perf_counter()
        for request in prepared:
            self.sock.sendall(request)
            if read_message(self.reader) is None:
                raise SystemExit("the emulator closed the floor client's connection")
        return (time.perf_counter() - started) * 1000


def swapped(call: Call, subs: dict[str, str]) -> tuple[bytes, str]:
    """The call's body and target with the event's unique ids swapped (`subs`: old to new)."""
    body, target = call.body, call.target
    for old, new in subs.items():
        body, target = body.replace(old.encode(), new.encode()), target.replace(old, new)
    return body, target


class SdkFloor:
    """The same calls through the Rust SDK alone (shared/adapters/examples/sdk_replay.rs): clients built as
    the functions build them, each call through its own operation with the recorded request in
    place of a placeholder's, in a process of its own that waits between events as a function
    does. What a function takes above it is its own code's time; this floor less the raw one is
    the SDK's."""

    def __init__(self, binary: Path, endpoint: str, home: Path):
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: `make bench` builds it "
                             "(cargo build --release -p adapters --features s3,sqs,sagemaker-runtime --example sdk_replay)")
        self.last: dict = {}  # the replay's last answer, whole
        self.proc = subprocess.Popen([str(binary)], env=lambda_environment("sdk-replay", home, endpoint),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=home, text=True)

    def replay(self, calls: list[Call], subs: dict[str, str]) -> tuple[float, float]:
        """The calls' wall time in the replaying process, and its CPU time for them (ms)."""
        event = []
        for call in calls:
            body, target = swapped(call, subs)
            event.append({"operation": call.operation, "target": target, "headers": call.headers,
                          "body": base64.b64encode(body).decode()})
        self.proc.stdin.write(json.dumps(event) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline() or '{"error": "the SDK replay ended"}')
        self.last = answer
        if "error" in answer:
            raise SystemExit(f"the SDK floor: {answer['error']}")
        return answer["wall_ms"], answer["cpu_ms"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)
