"""The floor: what the emulator alone takes for an event's AWS calls, replayed by a minimal client."""

from __future__ import annotations

import socket
import time
import urllib.parse

from emulator import Call
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
            body, target = call.body, call.target
            for old, new in subs.items():
                body, target = body.replace(old.encode(), new.encode()), target.replace(old, new)
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
