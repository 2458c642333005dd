"""A function that does nothing, as fast as Python can: the Runtime API exchange alone.

    python bench/null_function.py   (with AWS_LAMBDA_RUNTIME_API set, as Lambda sets it)

It asks for the next event and answers `{}`, over one kept-alive connection with TCP_NODELAY
and one write per request. What an invocation of it takes is the harness's share of every
invocation, which the floor includes so the overhead above it is the function's own.
"""

import os
import socket
import sys

from runtime_api import read_message

PREFIX = "/2018-06-01/runtime/invocation"


def main() -> int:
    host, _, port = os.environ["AWS_LAMBDA_RUNTIME_API"].partition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = sock.makefile("rb")
    next_request = f"GET {PREFIX}/next HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    while True:
        sock.sendall(next_request)
        message = read_message(reader)
        if message is None:
            return 0
        _, headers, _ = message
        request_id = headers["lambda-runtime-aws-request-id"]
        sock.sendall(f"POST {PREFIX}/{request_id}/response HTTP/1.1\r\nHost: {host}\r\n"
                     f"Content-Length: 2\r\n\r\n{{}}".encode())
        if read_message(reader) is None:
            return 0


if __name__ == "__main__":
    sys.exit(main())
