"""A canned DynamoDB answerer in Python for shared/adapters/examples/sdk_call_cpu.rs (SDK_CALL_SERVER): every
GetItem gets the example's answer after the interpreter has done work of its own, JSON in and out
as an emulator's would, so the SDK's call meets caches that Python used.

    python3 bench/python_answerer.py PORT [WORK]    # WORK: 300 is about 1.3 ms a call here
"""

from __future__ import annotations

import json
import socket
import sys
import threading

from runtime_api import http_response, read_request

ANSWER = b'{"Item":{"inference_id":{"S":"job-1"},"status":{"S":"pending"},"attempt":{"N":"1"}}}'


def work(rounds: int) -> int:
    done = {}
    for i in range(rounds):
        done[f"k{i}"] = json.loads(json.dumps({"a": i, "b": [i, str(i)], "c": {"S": "x" * (i % 50)}}))
    return len(done)


def serve(conn: socket.socket, rounds: int) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    requests = conn.makefile("rb")
    while read_request(requests) is not None:
        work(rounds)
        conn.sendall(http_response(200, {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "r"},
                                   ANSWER))


def main() -> None:
    port, rounds = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0
    listener = socket.create_server(("127.0.0.1", port))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, rounds), daemon=True).start()


if __name__ == "__main__":
    main()
