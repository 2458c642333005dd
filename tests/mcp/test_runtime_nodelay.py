"""A streamed reply does not stall on its way to the Runtime API. mcp-tools streams every reply
(several small writes); with Nagle's algorithm on the function's connection, the last write
waited for the Runtime API's delayed ACK, and every call took 40 ms more (tools/list: 43 ms
from the event out to the reply's last byte, 0.6 ms with the Runtime API quick-ACKing). The
binary runs under the bench's Runtime API (bench/runtime_api.py), which reads the reply as
Lambda's does and ACKs as Linux does by default. The figures themselves are the bench's."""

import json
import statistics

from test_hostile_input import BINARY, hostile


def test_a_streamed_reply_reaches_the_runtime_api_without_waiting_for_an_ack(tmp_path):
    assert BINARY.exists(), f"{BINARY} is built by make test's compile lane"
    fn = hostile.McpTools(BINARY, tmp_path / "mcp-tools.log")
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        replies = [fn.call(body) for _ in range(9)]
    finally:
        fn.close()
    assert all(r.status == 200 and b'"tools"' in r.body for r in replies)
    # A stall is 40 ms on every call; a debug build answers tools/list in a few ms. The median
    # of nine keeps one slow call (a busy machine) from deciding.
    median_ms = statistics.median(r.ms for r in replies)
    assert median_ms < 20, f"tools/list took {median_ms:.1f} ms (median of 9): the reply's last write waited"
